# Sourced by bench/run.sh, bench/batch.sh and bench/server-cpu.sh (bash): starting and installing Redis.
#
# start_redis DIR: starts redis-server on a free loopback port (random ports are tried until one
# binds), with persistence off and its files in DIR, in the background. It sets port and
# redis_pid, or returns 1 when no port could be used; the caller stops the server (kill
# "$redis_pid").
start_redis() {
  local dir=$1 candidate
  port="" redis_pid=""
  for _ in $(seq 1 20); do
    candidate=$((20000 + RANDOM % 30000))
    redis-server --bind 127.0.0.1 --port "$candidate" --save "" --appendonly no \
      --dir "$dir" --logfile "$dir/redis.log" --daemonize no &
    redis_pid=$!
    for _ in $(seq 1 50); do
      if redis-cli -h 127.0.0.1 -p "$candidate" ping 2>/dev/null | grep -q PONG; then
        port=$candidate
        return 0
      fi
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
  done
  return 1
}

# install_redis ROOT: installs Redis when missing (ROOT/.ci/install-redis.sh) and redis-tools,
# for redis-benchmark.
install_redis() {
  "$1/.ci/install-redis.sh" >&2
  if ! command -v redis-benchmark >/dev/null 2>&1; then
    apt_get() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    apt_get env DEBIAN_FRONTEND=noninteractive apt-get update >&2
    apt_get env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-tools >&2
  fi
}

# batch_setup ROOT NAME: what bench/batch.sh and bench/server-cpu.sh (NAME, for messages) need
# before their rounds: a work directory (work) removed on exit with the server stopped, Redis
# installed and started (port, redis_pid), the benchmarks built ($work/bench.test), and the
# redis-benchmark keys written: the same count and value size as the Go benchmarks' (4,096 keys
# of 64 bytes, every GET a hit). It exits the script when the server cannot start.
batch_setup() {
  local root=$1 name=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/respire-$name.XXXXXX")
  redis_pid=""
  trap batch_cleanup EXIT
  trap 'exit 130' INT TERM
  install_redis "$root"
  start_redis "$work" || true
  [ -n "$port" ] || { echo "$name: could not start redis-server" >&2; exit 1; }
  (cd "$root/bench" && go test -c -o "$work/bench.test" .)
  redis-benchmark -h 127.0.0.1 -p "$port" -c 8 -P 100 -n 400000 -t set -d 64 -r 4096 -q >/dev/null 2>&1
}

# batch_cleanup stops the server batch_setup started and removes its work directory.
batch_cleanup() {
  if [ -n "$redis_pid" ] && kill -0 "$redis_pid" 2>/dev/null; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}

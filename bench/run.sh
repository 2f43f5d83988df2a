#!/usr/bin/env bash
# Reproduces every figure of docs/performance.md in one run and prints the table.
#
#   bench/run.sh             # the full run: 4 rounds (about 10 minutes on a 2-core machine)
#   bench/run.sh --quick     # one short round of everything (about 2 minutes)
#   bench/run.sh --rounds N  # N rounds of the client benchmarks and of the ceiling
#   bench/run.sh --out DIR   # keep the raw outputs in DIR (default: a temporary directory)
#
# It installs Redis when missing (.ci/install-redis.sh, plus redis-tools for redis-benchmark),
# starts its own redis-server on a free loopback port with persistence off, and stops it on exit.
# It also starts a Redis Cluster of three primaries (no replicas) on free loopback ports.
# Against that one server and that Cluster it runs, in rounds so that slow drifts of a shared
# machine hit every client alike:
#   - the client benchmarks of bench/ (respire, rueidis and go-redis side by side, -benchmem);
#   - the Cluster client benchmarks (GET and SET at 1, 64 and 256 callers over three shards);
#   - redis-benchmark -P 16 -c 64 -t get,set, the pipelined ceiling;
# then the simulator's benchmarks (sim/) and the state machines' (fsm/), and finally benchstat
# (golang.org/x/perf/cmd/benchstat, installed into a temporary GOBIN) and bench/cmd/perftable,
# which prints every figure with its target and MET or NOT MET.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/redis-server.sh
. "$root/bench/redis-server.sh"
quick=0
out=""
rounds_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
  --quick) quick=1 ;;
  --out) out=$2; shift ;;
  --rounds) rounds_arg=$2; shift ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$quick" = 1 ]; then
  rounds=1 client_time=300ms sim_count=1 fsm_time=100ms ceiling_requests=300000
else
  rounds=4 client_time=700ms sim_count=5 fsm_time=300ms ceiling_requests=2000000
fi
if [ -n "$rounds_arg" ]; then
  rounds=$rounds_arg
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/respire-bench.XXXXXX")
[ -n "$out" ] || out="$work/out"
mkdir -p "$out"
redis_pid=""
cluster_pids=""
cleanup() {
  if [ -n "$redis_pid" ] && kill -0 "$redis_pid" 2>/dev/null; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  for pid in $cluster_pids; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work/bin" "$work/redis"
  [ "$out" = "$work/out" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n==> %s\n' "$*" >&2; }

step "Redis"
install_redis "$root"

# Start redis-server on a free loopback port: try random ports until one binds.
mkdir -p "$work/redis"
start_redis "$work/redis" || true
[ -n "$port" ] || { echo "run.sh: could not start redis-server" >&2; exit 1; }
addr="127.0.0.1:$port"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $addr (pid $redis_pid)" >&2

# Start three cluster-enabled servers (each with an explicit bus port, so that no port+10000
# collides) and join them into one Cluster of three primaries.
cluster_addrs=""
for node in 1 2 3; do
  started=""
  for _ in $(seq 1 20); do
    cport=$((20000 + RANDOM % 30000))
    bport=$((20000 + RANDOM % 30000))
    [ "$cport" != "$bport" ] || continue
    mkdir -p "$work/redis/cluster$node"
    redis-server --bind 127.0.0.1 --port "$cport" --cluster-enabled yes --cluster-port "$bport" \
      --cluster-config-file "$work/redis/cluster$node/nodes.conf" --save "" --appendonly no \
      --dir "$work/redis/cluster$node" --logfile "$work/redis/cluster$node/redis.log" --daemonize no &
    pid=$!
    for _ in $(seq 1 50); do
      if redis-cli -h 127.0.0.1 -p "$cport" ping 2>/dev/null | grep -q PONG; then
        started=$cport
        break
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if [ -n "$started" ]; then
      cluster_pids="$cluster_pids $pid"
      break
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [ -n "$started" ] || { echo "run.sh: could not start a cluster node" >&2; exit 1; }
  cluster_addrs="$cluster_addrs${cluster_addrs:+,}127.0.0.1:$started"
done
redis-cli --cluster create $(echo "$cluster_addrs" | tr ',' ' ') --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 1 100); do
  redis-cli -h 127.0.0.1 -p "${cluster_addrs##*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
  sleep 0.1
done
echo "Redis Cluster of three primaries at $cluster_addrs" >&2

load() { cut -d' ' -f1-3 /proc/loadavg; }
{
  echo "- nproc: $(nproc)"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "- Go: $(go version | cut -d' ' -f3-)"
  echo "- Redis: $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
  echo "- Kernel: $(uname -sr)"
  echo "- Mode: $([ "$quick" = 1 ] && echo quick || echo full), $rounds round(s) of $client_time per client benchmark"
} > "$out/machine.md"
echo "start $(load)" > "$out/load.txt"

step "building the benchmark binaries"
mkdir -p "$work/bin"
(cd "$root/bench" && go test -c -o "$work/bin/bench.test" .)
(cd "$root" && go test -c -o "$work/bin/sim.test" ./sim/)
(cd "$root" && go test -c -o "$work/bin/fsm.test" ./fsm/)
(cd "$root/bench" && go build -o "$work/bin/perftable" ./cmd/perftable)
if ! GOBIN="$work/bin" go install golang.org/x/perf/cmd/benchstat@latest >&2; then
  echo "run.sh: benchstat unavailable; the table below does not need it" >&2
fi

: > "$out/clients.txt"
: > "$out/cluster.txt"
: > "$out/ceiling.csv"
for round in $(seq 1 "$rounds"); do
  step "round $round of $rounds: redis-benchmark ceiling (load $(load))"
  redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -c 64 -t get,set -d 64 -r 4096 \
    -n "$ceiling_requests" --csv >> "$out/ceiling.csv"
  step "round $round of $rounds: clients (load $(load))"
  RESPIRE_BENCH_ADDR=$addr "$work/bin/bench.test" -test.run '^$' -test.bench '^BenchmarkClients$' \
    -test.benchmem -test.benchtime "$client_time" | tee -a "$out/clients.txt" | grep -E '^Benchmark' >&2
  step "round $round of $rounds: Cluster clients (load $(load))"
  RESPIRE_BENCH_CLUSTER=$cluster_addrs "$work/bin/bench.test" -test.run '^$' -test.bench '^BenchmarkClusterClients$' \
    -test.benchmem -test.benchtime "$client_time" | tee -a "$out/cluster.txt" | grep -E '^Benchmark' >&2
  echo "round $round $(load)" >> "$out/load.txt"
done

step "simulator (load $(load))"
(cd "$root/sim" && "$work/bin/sim.test" -test.run '^$' \
  -test.bench '^(BenchmarkRunWorkload|BenchmarkRunRecovery|BenchmarkRunIncident19h|BenchmarkScenarioSetWithChecking)$' \
  -test.benchmem -test.count "$sim_count" | tee "$out/sim.txt" | grep -E '^Benchmark' >&2)
echo "sim $(load)" >> "$out/load.txt"

step "state machines (load $(load))"
(cd "$root/fsm" && "$work/bin/fsm.test" -test.run '^$' -test.bench . -test.benchmem \
  -test.benchtime "$fsm_time" -test.count "$sim_count" | tee "$out/fsm.txt" | grep -E '^Benchmark' >&2)
echo "end $(load)" >> "$out/load.txt"

{
  echo "- Load average (1, 5, 15 min) during the run:"
  sed 's/^/  - /' "$out/load.txt"
} >> "$out/machine.md"

if [ -x "$work/bin/benchstat" ]; then
  step "benchstat"
  {
    echo '```'
    echo "# clients: one column per client, deltas against respire"
    "$work/bin/benchstat" -col /client "$out/clients.txt" || true
    echo
    echo "# Cluster clients: one column per client, deltas against respire"
    "$work/bin/benchstat" -col /client "$out/cluster.txt" || true
    echo
    echo "# simulator"
    "$work/bin/benchstat" "$out/sim.txt" || true
    echo
    echo "# state machines"
    "$work/bin/benchstat" "$out/fsm.txt" || true
    echo '```'
  } > "$out/benchstat.md"
fi

"$work/bin/perftable" -machine "$out/machine.md" -ceiling "$out/ceiling.csv" -clients "$out/clients.txt" \
  -cluster "$out/cluster.txt" -sim "$out/sim.txt" -fsm "$out/fsm.txt" > "$out/table.md"

echo
cat "$out/table.md"
if [ -f "$out/benchstat.md" ]; then
  echo
  echo "### benchstat"
  echo
  cat "$out/benchstat.md"
fi
echo
echo "raw outputs: $out" >&2

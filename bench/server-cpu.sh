#!/usr/bin/env bash
# Measures what a batch row costs the server, beside what it costs the client: for each client,
# redis-server's CPU time per batch (user and system, from /proc/<pid>/stat, in clock ticks of
# 10 ms: run enough batches) and, when perf is installed and allowed, the server's system calls
# per batch. docs/performance.md ("What limits the 64-caller rows") reports its figures.
#
#   bench/server-cpu.sh                          # 100 GETs and 100 SETs at 64 callers, 40,000 batches
#   bench/server-cpu.sh --row BATCHSET100/callers=1 --batches 10000
#
# Columns: the client, µs per batch (the benchmark's ns/op), the client's CPU-µs per batch, the
# server's CPU-µs per batch, then (with perf) the server's read, write and epoll_wait calls per
# batch. A server whose CPU per batch equals the batch's time is saturated: the client cannot
# go faster than the server's core allows. Single runs drift with the machine's speed; compare
# clients within one run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/redis-server.sh
. "$root/bench/redis-server.sh"
rows="BATCHGET100/callers=64 BATCHSET100/callers=64"
batches=40000
while [ $# -gt 0 ]; do
  case "$1" in
  --row) rows=$2; shift ;;
  --batches) batches=$2; shift ;;
  -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "server-cpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case $batches in "" | *[!0-9]*) batches=0 ;; esac
[ "$batches" -ge 4 ] || { echo "server-cpu.sh: --batches takes a number of at least 4" >&2; exit 2; }

batch_setup "$root" server-cpu

use_perf=false
if command -v perf >/dev/null 2>&1 &&
  perf stat -x, -e 'syscalls:sys_enter_read' -p "$redis_pid" -o /dev/null -- sleep 0.1 >/dev/null 2>&1; then
  use_perf=true
fi
ticks() { awk '{ print $14 + $15 }' "/proc/$redis_pid/stat"; }
hz=$(getconf CLK_TCK)

# measure CLIENT ROW N: runs N batches and prints "µs-per-batch client-cpu-µs server-ticks
# reads writes(+writev) epoll_waits" (the server's counts over the whole run, setup included).
measure() {
  local client=$1 row=$2 n=$3 bench perf_pid="" before after line
  bench="Clients/$row/client=$client\$"
  [ "$client" = floor ] && bench="BatchFloor/$row/client=floor\$"
  if $use_perf; then
    perf stat -x, -p "$redis_pid" -o "$work/perf" \
      -e 'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait' &
    perf_pid=$!
    sleep 0.3
  fi
  before=$(ticks)
  line=$(cd "$root/bench" && RESPIRE_BENCH_ADDR="127.0.0.1:$port" "$work/bench.test" -test.run '^$' \
    -test.bench "$bench" -test.benchtime "${n}x" 2>&1 | grep '^Benchmark' || true)
  after=$(ticks)
  local calls="0 0 0"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    calls=$(awk -F, '/^[0-9]/ { v[++k] = $1 } END { print v[1] + 0, v[2] + v[3], v[4] + 0 }' "$work/perf")
  fi
  [ -n "$line" ] || return 1
  echo "$line" | awk -v t="$((after - before))" -v calls="$calls" '{
    for (i = 1; i <= NF; i++) if ($i == "cpu-µs/op") cpu = $(i-1)
    print $3 / 1000, cpu, t, calls }'
}

# Each client runs twice, with a quarter of the batches and with all of them; the server's
# figures per batch are the difference between the two runs over the difference in batches, so
# that the benchmark's set-up (connecting, seeding keys) drops out.
small=$((batches / 4))
for row in $rows; do
  echo "== $row, $small and $batches batches"
  for client in respire rueidis goredis floor; do
    a=$(measure "$client" "$row" "$small") && b=$(measure "$client" "$row" "$batches") ||
      { echo "$client: the benchmark printed no result" >&2; continue; }
    echo "$a $b" | awk -v c="$client" -v hz="$hz" -v n="$((batches - small))" -v perf="$use_perf" '{
      printf "%-8s %7.1f µs/batch  client %6.1f cpu-µs  server %6.1f cpu-µs", c, $7, $8, ($9 - $3) * 1e6 / hz / n
      if (perf == "true") printf "  server calls per batch: read %.2f write %.2f epoll_wait %.2f", ($10 - $4) / n, ($11 - $5) / n, ($12 - $6) / n
      printf "\n" }'
  done
done

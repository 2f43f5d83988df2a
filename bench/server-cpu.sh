#!/usr/bin/env bash
# Measures what a batch row costs the server, beside what it costs the client: for each client,
# redis-server's CPU time per batch (user and system, from /proc/<pid>/stat, in clock ticks of
# 10 ms: run enough batches) and, when perf is installed and allowed, the server's system calls
# per batch. docs/performance.md ("What limits the 64-caller rows") reports its figures.
#
#   bench/server-cpu.sh                          # 100 GETs and 100 SETs at 64 callers, 40,000 batches
#   bench/server-cpu.sh --row BATCHSET100/callers=1 --batches 10000
#
# Columns: the client, µs per batch (the benchmark's ns/op), the client's CPU-µs per batch, then
# how the server spent each batch's time, from its /proc/<pid>/schedstat (nanoseconds): on a
# core (its CPU time, user and system), waiting for a core (runnable but not running: the
# machine's cores were busy, with the client's threads among others), and idle (the rest of the
# batch's time: the server slept, waiting for input); then (with perf) the server's read, write
# and epoll_wait calls per batch. A server on a core for the whole batch is saturated: no client
# can go faster than its core allows; time waiting for a core is what the client's own CPU costs
# it on a machine with as few cores as this one. Single runs drift with the machine's speed;
# compare clients within one run.
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
# sched prints the server's time on a core and waiting for one, in ns, since it started.
sched() { awk '{ print $1, $2 }' "/proc/$redis_pid/schedstat"; }

# measure CLIENT ROW N: runs N batches and prints "µs-per-batch client-cpu-µs server-on-core-ns
# server-waiting-ns reads writes(+writev) epoll_waits" (the server's figures over the whole run,
# setup included).
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
  before=$(sched)
  line=$(cd "$root/bench" && RESPIRE_BENCH_ADDR="127.0.0.1:$port" "$work/bench.test" -test.run '^$' \
    -test.bench "$bench" -test.benchtime "${n}x" 2>&1 | grep '^Benchmark' || true)
  after=$(sched)
  local calls="0 0 0"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    calls=$(awk -F, '/^[0-9]/ { v[++k] = $1 } END { print v[1] + 0, v[2] + v[3], v[4] + 0 }' "$work/perf")
  fi
  [ -n "$line" ] || return 1
  echo "$line" | awk -v before="$before" -v after="$after" -v calls="$calls" '{
    for (i = 1; i <= NF; i++) if ($i == "cpu-µs/op") cpu = $(i-1)
    split(before, b, " "); split(after, a, " ")
    print $3 / 1000, cpu, a[1] - b[1], a[2] - b[2], calls }'
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
    echo "$a $b" | awk -v c="$client" -v n1="$small" -v n2="$batches" -v perf="$use_perf" '{
      n = n2 - n1
      on = ($10 - $3) / 1000 / n; wait = ($11 - $4) / 1000 / n
      idle = ($8 * n2 - $1 * n1) / n - on - wait
      printf "%-8s %7.1f µs/batch  client %6.1f cpu-µs  server: on a core %6.1f µs, waiting for one %5.1f, idle %5.1f", c, $8, $9, on, wait, idle
      if (perf == "true") printf "  server calls per batch: read %.2f write %.2f epoll_wait %.2f", ($12 - $5) / n, ($13 - $6) / n, ($14 - $7) / n
      printf "\n" }'
  done
done

#!/usr/bin/env bash
# Measures the batch rows of the commands issue (a batch of 100 GETs and of 100 SETs, at one
# caller and at 64) the way docs/performance.md reports them, and next to them two floors: a
# bare Go pipelining loop (BenchmarkBatchFloor) and redis-benchmark, a C client with almost no
# work of its own per command, on the same server with pipelines of 100 (-P 100) over one
# connection and over 64.
#
#   bench/batch.sh              # 8 interleaved rounds
#   bench/batch.sh --rounds N   # N rounds
#
# Every round runs each row for respire, rueidis and go-redis one after the other, then
# redis-benchmark, so that a drift of a shared machine hits them all alike; the table gives the
# median of the rounds. Single rounds are not comparable on their own: on a two-core virtual
# machine the same binary moves between two speeds from one minute to the next.
#
# Columns: µs per batch (the benchmark's ns/op) and the client process's CPU time per batch
# (cpu-µs, user and system); ratio is the better peer's µs over respire's (the issue's target is
# 1.2 or more). Two floors follow, each with the better peer's µs over it, the most a client
# could reach on this machine and server: the Go floor is BenchmarkBatchFloor
# (floor_bench_test.go), a Go pipelining loop that does nothing but write the frames and pair the
# replies (no timeouts, recovery or typed results); the C floor is redis-benchmark's µs per 100
# commands (-P 100, over one connection or 64), which does next to nothing per command besides
# the system calls.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/redis-server.sh
. "$root/bench/redis-server.sh"
rounds=8
while [ $# -gt 0 ]; do
  case "$1" in
  --rounds) rounds=$2; shift ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "batch.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

batch_setup "$root" batch

raw="$work/raw.txt"
: > "$raw"
rows="BATCHGET100/callers=1:4000x BATCHGET100/callers=64:20000x BATCHSET100/callers=1:4000x BATCHSET100/callers=64:20000x"
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds (load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'))" >&2
  for row in $rows; do
    name=${row%%:*} times=${row##*:}
    for client in respire rueidis goredis; do
      (cd "$root/bench" && RESPIRE_BENCH_ADDR="127.0.0.1:$port" "$work/bench.test" -test.run '^$' \
        -test.bench "Clients/$name/client=$client\$" -test.benchtime "$times" 2>&1) |
        awk -v row="$name" -v c="$client" '/^Benchmark/ {
          for (i = 1; i <= NF; i++) if ($i == "cpu-µs/op") cpu = $(i-1)
          print row, c, $3 / 1000, cpu }' >> "$raw"
    done
    (cd "$root/bench" && RESPIRE_BENCH_ADDR="127.0.0.1:$port" "$work/bench.test" -test.run '^$' \
      -test.bench "BatchFloor/$name/client=floor\$" -test.benchtime "$times" 2>&1) |
      awk -v row="$name" '/^Benchmark/ {
        for (i = 1; i <= NF; i++) if ($i == "cpu-µs/op") cpu = $(i-1)
        print row, "gofloor", $3 / 1000, cpu }' >> "$raw"
    callers=${name##*=}
    case $name in BATCHGET100*) test=get ;; *) test=set ;; esac
    requests=$((callers == 1 ? 200000 : 1000000))
    redis-benchmark -h 127.0.0.1 -p "$port" -c "$callers" -P 100 -n "$requests" -t "$test" -d 64 \
      -r 4096 --csv 2>/dev/null | tail -1 |
      awk -F, -v row="$name" '{ gsub(/"/, "", $2); if ($2 > 0) print row, "floor", 100e6 / $2, 0 }' >> "$raw"
  done
done

echo
echo "| batch | callers | respire µs | cpu-µs | rueidis µs | cpu-µs | go-redis µs | cpu-µs | ratio | Go floor µs | cpu-µs | Go floor ratio | C floor µs | C floor ratio |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for row in $rows; do
  name=${row%%:*}
  med() { awk -v row="$name" -v c="$1" -v f="$2" '$1 == row && $2 == c { print $f }' "$raw" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }
  r=$(med respire 3) rc=$(med respire 4) u=$(med rueidis 3) uc=$(med rueidis 4)
  g=$(med goredis 3) gc=$(med goredis 4) f=$(med floor 3) o=$(med gofloor 3) oc=$(med gofloor 4)
  awk -v n="$name" -v r="$r" -v rc="$rc" -v u="$u" -v uc="$uc" -v g="$g" -v gc="$gc" -v f="$f" -v o="$o" -v oc="$oc" 'BEGIN {
    split(n, p, "/"); split(p[2], q, "="); kind = (p[1] == "BATCHGET100") ? "100 GETs" : "100 SETs"
    best = (u < g) ? u : g
    printf "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f× | %.0f | %.0f | %.2f× | %.0f | %.2f× |\n",
      kind, q[2], r, rc, u, uc, g, gc, best / r, o, oc, best / o, f, best / f }'
done
echo
echo "rounds: $rounds; load at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

#!/usr/bin/env bash
# Measures the simulator's memory (peak RSS, from /usr/bin/time) against the targets of issue 15
# and prints the table of docs/performance.md#simulator-memory.
#
#   bench/simmem.sh            # every shipped scenario, the 2-hour run, sweeps of 1,000 and 10,000 seeds
#   bench/simmem.sh --quick    # the sweeps at 100 and 1,000 seeds
#
# Targets: every shipped scenario and the 2-hour run under 100 MB RSS; a sweep flat in memory:
# the RSS of the last tenth of a 10,000-seed sweep within 10% of a 1,000-seed sweep's peak
# (docs/performance.md#simulator-memory says why the peaks alone are not the criterion).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
small=1000 large=10000
if [ "${1:-}" = "--quick" ]; then small=100 large=1000; fi
[ -x /usr/bin/time ] || { echo "simmem.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/respire-simmem.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/respire-sim" ./cmd/respire-sim)

# rss FILE... prints the peak RSS in MB of one run of the command on FILE...
rss() {
  /usr/bin/time -f '%M' -o "$work/rss" "$work/respire-sim" run --jobs 1 --max-reports 0 --quiet "$@" >/dev/null 2>&1 || true
  awk '{printf "%.1f", $1/1024}' "$work/rss"
}
# rss_tail FILE... runs the command like rss, sampling the process's RSS every 200 ms
# (/proc, Linux), and prints its peak RSS and the largest sample of the last tenth of the run,
# in MB. A sweep whose memory grew with its seeds would end higher than it started; the peak
# alone also grows with the length of a run that does not grow, since it is the largest of
# more samples of the runtime's own variation.
rss_tail() {
  /usr/bin/time -f '%M' -o "$work/rss" "$work/respire-sim" run --jobs 1 --max-reports 0 --quiet "$@" >/dev/null 2>&1 &
  local tpid=$! child="" samples="$work/samples"
  : >"$samples"
  while kill -0 "$tpid" 2>/dev/null; do
    [ -n "$child" ] || child=$(pgrep -P "$tpid" | head -1 || true)
    if [ -n "$child" ] && [ -r "/proc/$child/status" ]; then
      awk '/^VmRSS:/ {print $2}' "/proc/$child/status" >>"$samples" 2>/dev/null || true
    fi
    sleep 0.2
  done
  wait "$tpid" || true
  awk -v peak="$(cat "$work/rss")" '{v[NR]=$1} END {m=0; for (i=int(NR*0.9)+1; i<=NR; i++) if (v[i]>m) m=v[i]; printf "%.1f %.1f", peak/1024, m/1024}' "$samples"
}
verdict() { awk -v v="$1" -v max="$2" 'BEGIN { print (v+0 <= max+0) ? "MET" : "NOT MET" }'; }

echo "| run | peak RSS (MB) | target | verdict |"
echo "|---|--:|---|---|"
worst=0 worst_name=""
for f in "$root"/scenarios/*.yaml; do
  m=$(rss "$f")
  if awk -v a="$m" -v b="$worst" 'BEGIN { exit !(a > b) }'; then worst=$m worst_name=$(basename "$f" .yaml); fi
done
echo "| largest shipped scenario ($worst_name) | $worst | ≤ 100 MB | $(verdict "$worst" 100) |"
m=$(rss "$root/bench/scenarios/soak-2h-flapping.yaml")
echo "| soak-2h-flapping (2 h virtual, ~580,000 operations) | $m | ≤ 100 MB | $(verdict "$m" 100) |"
fine="$root/cmd/respire-sim/testdata/fine.yaml"
s=$(rss --seeds "1..$small" "$fine")
read -r l ltail <<<"$(rss_tail --seeds "1..$large" "$fine")"
echo "| sweep of $small seeds | $s | | |"
echo "| sweep of $large seeds | $l | (peak: see below) | |"
echo "| sweep of $large seeds, last tenth of the run | $ltail | within 10% of $small seeds | $(verdict "$ltail" "$(awk -v s="$s" 'BEGIN { print s*1.1 }')") |"

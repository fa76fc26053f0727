#!/bin/bash
# Per-invocation cost in instructions (docs/performance.md "Fourth round"): callgrind on the bench-calls binaries
# that scripts/truth-bench.sh leaves in its work directory (`plain`, `files`), `threads 1 N` (one recording thread,
# so threads are: 1 main, 2 the recording thread, 3 the writer). Prints, for the default settings and for
# CALLTIME_EXACT=1 (every probe keeps recording: 10-node trees), the recording thread's instructions per invocation
# beyond the plain build's, the writer's per tree written, and the trees written. Load does not move these counts.
#
# usage: scripts/invocation-cost.sh TRUTH_BENCH_WORK_DIR [N=20000]
set -euo pipefail
work=${1:?usage: scripts/invocation-cost.sh TRUTH_BENCH_WORK_DIR [N]}
n=${2:-20000}
command -v valgrind >/dev/null || { echo "invocation-cost: valgrind is needed; install it" >&2; exit 1; }
[ -x "$work/plain" ] && [ -x "$work/files" ] || { echo "invocation-cost: no plain/files binaries in $work; run scripts/truth-bench.sh $work first" >&2; exit 1; }
out=$(mktemp -d /tmp/invocation-cost.XXXXXX)
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'; }
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/plain" "$work/plain" threads 1 "$n" > /dev/null 2>&1
plain=$(total "$out/plain-02")
for mode in default exact; do
  env=(); [ $mode = exact ] && env=(CALLTIME_EXACT=1)
  env "${env[@]}" CALLTIME_OUT="$out/$mode.trace" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$out/$mode" "$work/files" threads 1 "$n" > /dev/null 2>&1
  kept=$(grep -a '^stats ' "$out/$mode.trace" | tail -1 | cut -d' ' -f3)
  recording=$(total "$out/$mode-02")
  writer=$(total "$out/$mode-03")
  awk -v m=$mode -v r="$recording" -v p="$plain" -v w="$writer" -v k="$kept" -v n="$n" 'BEGIN {
    printf "%-7s recording thread %5.0f instructions per invocation beyond plain; writer %5.0f per tree written (%d of %d written); all-in %5.0f\n",
      m, (r - p) / n, w / k, k, n, (r - p) / n + w / k }'
done
echo "callgrind files in $out"

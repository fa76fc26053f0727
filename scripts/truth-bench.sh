#!/bin/bash
# The instrument for issue 11: overhead and truth of cargo-calltime's default plan (no flags, first run) on
# test-crates/bench-calls, against the plain build. A measurement, not a test: it exits non-zero only when it
# cannot set up (a build fails, a tool is missing), whatever the figures are. See docs/truth-bench.md.
#
# usage: scripts/truth-bench.sh [WORK_DIR]     (default: a new directory under /tmp; RUNS=N scales the run counts;
#        CALLTIME_CC=PATH measures that cargo-calltime binary instead of this checkout's)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
crate=$repo/test-crates/bench-calls
work=${1:-$(mktemp -d /tmp/truth-bench.XXXXXX)}
runs=${RUNS:-20}
# Processes of each build for the tree means: the plain build's own `tokenize` mean moves by up to 1.3x between
# processes of one binary on this VM (address layout and load; docs/truth-bench.md, "After the seventh round"), so
# a median of three is not enough to tell 15%. TRUTH_RUNS=N changes it.
truth_runs=${TRUTH_RUNS:-7}
fail() { echo "truth-bench: $*" >&2; exit 1; }
mkdir -p "$work" || fail "cannot create the work directory $work"
command -v python3 >/dev/null || fail "python3 is needed for the run loop and the tables; install it"

echo "== setup (work dir $work)"
. "$repo/scripts/bench-tool.sh"   # sets CC: CALLTIME_CC, or this checkout's tool
# Fresh target dirs: nothing from an earlier run (fast-functions.txt, a previous plan) applies.
rm -rf "$work/target-plain" "$work/target-tokenizer" "$work/target-files"
CARGO_TARGET_DIR=$work/target-plain cargo build --release -q --manifest-path "$crate/Cargo.toml" \
  || fail "cannot build the plain bench-calls"
cp "$work/target-plain/release/bench-calls" "$work/plain"
instrument() { # ROOT OUTPUT: the default plan, no other flag
  local built
  built=$(cd "$crate" && CARGO_TARGET_DIR=$work/target-$2 "$CC" calltime build -q --release --root "$1" --depth 5 | tail -1) \
    || fail "cannot build bench-calls instrumented from $1"
  cp "$built" "$work/$2" || fail "the instrumented build did not leave a binary at $built"
}
instrument tokenize_doc tokenizer
instrument search_file files
export CALLTIME_OUT=$work/scratch.trace

echo "== output check (plain vs instrumented stdout)"
for args in "tokenizer" "many-roots" "threads 4"; do
  bin=$work/files; [ "$args" = tokenizer ] && bin=$work/tokenizer
  if cmp -s <("$work/plain" $args) <("$bin" $args); then echo "$args: identical"; else echo "$args: DIFFERENT"; fi
done

echo "== tokenizer: tree means vs the plain build's own (bench-calls truth; $truth_runs of each, interleaved, medians)"
for i in $(seq 1 "$truth_runs"); do
  "$work/plain" truth 100 > "$work/truth.$i"
  CALLTIME_OUT=$work/tokenizer.$i.trace "$work/tokenizer" tokenizer > /dev/null
  "$CC" calltime report "$work/tokenizer.$i.trace" --format json -o "$work/tokenizer.$i.json" 2> "$work/report.stderr" \
    || fail "cargo calltime report failed on $work/tokenizer.$i.trace: $(cat "$work/report.stderr")"
done
grep tokens_per_invocation "$work/truth.1"
python3 "$repo/scripts/truth-compare.py" "$work"/tokenizer.[0-9]*.json "$work"/truth.[0-9]*
# busy has no probe and touches no memory: a run where tokenize moves and busy does not was slowed by the machine.
python3 "$repo/scripts/per-invocation.py" "$work"/tokenizer.[0-9]*.json

echo "== side by side, alternating ($runs runs of the tokenizer, $((runs / 2)) of the others; medians)"
alt=$repo/scripts/alternate-runs.py
python3 "$alt" --runs "$runs" --warmup 2 plain="$work/plain tokenizer" instrumented="$work/tokenizer tokenizer" \
  | tee "$work/runs.tokenizer"
python3 "$alt" --runs $((runs / 2)) --warmup 1 plain="$work/plain many-roots" instrumented="$work/files many-roots" \
  plain-t1="$work/plain threads 1" instrumented-t1="$work/files threads 1" \
  plain-t4="$work/plain threads 4" instrumented-t4="$work/files threads 4" | tee "$work/runs.files"
# 4 threads against 1 with its spread: at 200,000 roots the ratio above moves by 0.2 between runs.
echo "== threads: 4 against 1 ($((runs * 3)) shuffled rounds of 1,000,000 roots; medians, 90% interval over rounds)"
python3 "$repo/scripts/thread-scaling.py" --runs $((runs * 3)) plain="$work/plain" instrumented="$work/files" \
  | tee "$work/runs.threads"
for args in "many-roots" "threads 4"; do
  CALLTIME_OUT=$work/files.trace "$work/files" $args > /dev/null
  echo "$args trace: $(grep -a '^stats ' "$work/files.trace" | tail -1) (seen kept sampled_out dropped truncated)"
done

echo "== summary"
awk -v tok="$work/runs.tokenizer" -v files="$work/runs.files" -v n=200000 '
  FILENAME == tok { t[$1] = $2; tc[$1] = $3 } FILENAME == files { w[$1] = $2; c[$1] = $3 }
  function per(a, b, m) { return (m[a] - m[b]) * 1e6 / n }
  END {
    printf "tokenizer ratio instrumented/plain: wall %.2fx, cpu %.2fx\n", t["instrumented"] / t["plain"],
      tc["instrumented"] / tc["plain"]
    printf "many-roots ratio: wall %.2fx, cpu %.2fx; per invocation: %.0f ns wall, %.0f ns cpu (all threads)\n",
      w["instrumented"] / w["plain"], c["instrumented"] / c["plain"], per("instrumented", "plain", w), per("instrumented", "plain", c)
    printf "threads 1: %.0f ns cpu per invocation (%.0f ns wall); threads 4: %.0f ns cpu (%.0f ns wall); 4/1 cpu: %.2fx\n",
      per("instrumented-t1", "plain-t1", c), per("instrumented-t1", "plain-t1", w),
      per("instrumented-t4", "plain-t4", c), per("instrumented-t4", "plain-t4", w),
      per("instrumented-t4", "plain-t4", c) / per("instrumented-t1", "plain-t1", c)
  }' "$work/runs.tokenizer" "$work/runs.files"
grep '^instrumented:' "$work/runs.threads" | sed 's/^instrumented: /threads, 1,000,000 roots: /'
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"

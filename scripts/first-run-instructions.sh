#!/bin/bash
# docs/performance.md's "First run", in instructions (steady on a loaded machine, where wall and CPU seconds are
# not): every process of a plain cold `cargo build` (dev profile) of a copy of the workspace, then every process
# of the first `cargo calltime build` after it with an empty runtime cache (scripts/first-run-bench.sh's
# *first ever*), counted by callgrind. Prints the totals and their ratio, then each process's count.
#
# usage: CC=target/release/cargo-calltime scripts/first-run-instructions.sh NAME SRC_DIR ROOT [cargo flags...]
#        (works in /tmp/first-run-instructions/NAME; needs valgrind; a few minutes: rustc runs under callgrind)
set -euo pipefail
CC=${CC:?set CC to the cargo-calltime binary}
name=$1 src=$(cd "$2" && pwd) root=$3; shift 3
w=/tmp/first-run-instructions/$name
out=$w.out
rm -rf "$w" "$out" "$w.cache"; mkdir -p "$out"
cp -r "$src" "$w"; rm -rf "$w/target"; cd "$w"
unset CARGO_TARGET_DIR RUSTFLAGS
export CALLTIME_CACHE_DIR=$w.cache
cg() { local label=$1; shift; valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null \
  --log-file="$out/$label.%p" "$@" > /dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }; }
cg plain cargo build --offline "$@"
cg calltime "$CC" calltime build -q --offline --root "$root" "$@"
# One line per process: label, instructions, command line (cut).
for f in "$out"/*; do
  n=$(sed -n 's/.*Collected : //p' "$f")
  cmd=$(sed -n 's/.*Command: //p' "$f" | head -1 | cut -c1-120)
  echo "$(basename "${f%.*}") ${n:-0} $cmd"
done | sort -k1,1 -k2,2nr > "$out/processes.txt"
awk '{ s[$1] += $2 } END { printf "%s: plain %.1f M, first ever %.1f M instructions: %.3fx\n", name, s["plain"] / 1e6,
  s["calltime"] / 1e6, s["calltime"] / s["plain"] }' name="$name" "$out/processes.txt"
awk '{ printf "  %-8s %9.1f M  %s\n", $1, $2 / 1e6, substr($0, length($1) + length($2) + 3) }' "$out/processes.txt"
rm -rf "$w" "$w.cache"

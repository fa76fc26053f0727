#!/bin/bash
# docs/performance.md's "First run": the first `cargo calltime build` of a workspace (dev profile) against a cold
# plain `cargo build`, after the user's own build (its dependencies reused) and fully cold, then a second run with
# nothing changed. Each figure is wall seconds and CPU seconds (user + system, of every process the command ran):
# on a loaded machine the CPU seconds are the steadier ratio.
#
# usage: CC=target/release/cargo-calltime scripts/first-run-bench.sh NAME SRC_DIR ROOT [cargo flags...]
#        (works on copies in /tmp/first-run-bench/NAME; needs bc and GNU time)
set -euo pipefail
CC=${CC:?set CC to the cargo-calltime binary}
name=$1 src=$2 root=$3; shift 3
mkdir -p /tmp/first-run-bench
w=/tmp/first-run-bench/$name
times=/tmp/first-run-bench/$name.time
# t COMMAND...: runs it quietly and prints "WALL CPU" in seconds (on failure, its last lines, and exits).
t() {
  /usr/bin/time -f '%e %U %S' -o "$times" "$@" > /dev/null 2>&1 || { echo "FAILED: $*" >&2; "$@" 2>&1 | tail -5 >&2; exit 1; }
  awk '{ printf "%.1f %.1f\n", $1, $2 + $3 }' "$times"
}
fresh() { rm -rf "$w"; cp -r "$src" "$w"; rm -rf "$w/target"; }
# ratio "WALL CPU" "WALL CPU": "wall-ratio/cpu-ratio"
ratio() { echo "$1 $2" | awk '{ printf "%.2fx/%.2fx", $1 / $3, $2 / $4 }'; }
unset CARGO_TARGET_DIR RUSTFLAGS
fresh; cd "$w"
plain=$(t cargo build --offline "$@")
seeded=$(t "$CC" calltime build -q --offline --root "$root" "$@")
rebuild=$(t "$CC" calltime build -q --offline --root "$root" "$@")
fresh; cd "$w"
cold=$(t "$CC" calltime build -q --offline --root "$root" "$@")
rm -rf "$w"
echo "$name (wall s, cpu s; ratios wall/cpu): plain-cold=[$plain] calltime-after-plain=[$seeded] $(ratio "$seeded" "$plain")" \
  "calltime-cold=[$cold] $(ratio "$cold" "$plain") rebuild=[$rebuild]"

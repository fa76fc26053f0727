#!/bin/bash
# docs/performance.md's "First run": the first `cargo calltime build` of a workspace (dev profile) against a cold
# plain `cargo build`:
#   first-ever   after the user's build, with an empty runtime cache (the first run on a machine): the runtime
#                compiled with the tool is linked when the user's rustc is the one that built the tool;
#   first-compiled  the same with CALLTIME_PREBUILT_RUNTIME=0: the runtime compiled on the first run (another
#                toolchain than the tool's, or the tool before prebuilt runtimes);
#   after-plain  after the user's build, the runtime cache filled by another workspace (every later new workspace);
#   cold         nothing built at all, runtime cache filled;
#   rebuild      a second run with nothing changed.
# Each figure is wall seconds and CPU seconds (user + system, of every process the command ran): on a loaded
# machine the CPU seconds are the steadier ratio.
#
# usage: CC=target/release/cargo-calltime scripts/first-run-bench.sh NAME SRC_DIR ROOT [cargo flags...]
#        (works on copies in /tmp/first-run-bench/NAME; needs GNU time and awk)
set -euo pipefail
CC=${CC:?set CC to the cargo-calltime binary}
name=$1 src=$(cd "$2" && pwd) root=$3; shift 3
bench=/tmp/first-run-bench
w=$bench/$name
times=$bench/$name.time
cache=$bench/$name.cache
mkdir -p "$bench"
# t COMMAND...: runs it quietly and prints "WALL CPU" in seconds (on failure, its last lines, and exits).
t() {
  /usr/bin/time -f '%e %U %S' -o "$times" "$@" > /dev/null 2>&1 || { echo "FAILED: $*" >&2; "$@" 2>&1 | tail -5 >&2; exit 1; }
  awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$times"
}
fresh() { rm -rf "$w"; cp -r "$src" "$w"; rm -rf "$w/target"; }
# ratio "WALL CPU" "WALL CPU": "wall-ratio/cpu-ratio"
ratio() { echo "$1 $2" | awk '{ printf "%.2fx/%.2fx", $1 / $3, $2 / $4 }'; }
unset CARGO_TARGET_DIR RUSTFLAGS
rm -rf "$cache"
export CALLTIME_CACHE_DIR=$cache
fresh; cd "$w"
plain=$(t cargo build --offline "$@")
first=$(t "$CC" calltime build -q --offline --root "$root" "$@")
rebuild=$(t "$CC" calltime build -q --offline --root "$root" "$@")
fresh; cd "$w"; rm -rf "$cache"
cargo build -q --offline "$@" > /dev/null 2>&1
compiled=$(CALLTIME_PREBUILT_RUNTIME=0 t "$CC" calltime build -q --offline --root "$root" "$@")
fresh; cd "$w"
cargo build -q --offline "$@" > /dev/null 2>&1
seeded=$(t "$CC" calltime build -q --offline --root "$root" "$@")
fresh; cd "$w"
cold=$(t "$CC" calltime build -q --offline --root "$root" "$@")
cd "$bench"; rm -rf "$w" "$cache"
echo "$name (wall s, cpu s; ratios wall/cpu): plain-cold=[$plain] first-ever=[$first] $(ratio "$first" "$plain")" \
  "first-compiled=[$compiled] $(ratio "$compiled" "$plain")" \
  "after-plain=[$seeded] $(ratio "$seeded" "$plain") cold=[$cold] $(ratio "$cold" "$plain") rebuild=[$rebuild]"

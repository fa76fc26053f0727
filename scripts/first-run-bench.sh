#!/bin/bash
# docs/performance.md's "First run": the first `cargo calltime build` of a workspace (dev profile) against a cold
# plain `cargo build`, after the user's own build (its dependencies reused) and fully cold, then a second run with
# nothing changed, then the first run with the remap flag in RUSTFLAGS as before (no dependency reusable).
#
# usage: CC=target/release/cargo-calltime scripts/first-run-bench.sh NAME SRC_DIR ROOT [cargo flags...]
#        (works on copies in /tmp/first-run-bench/NAME; needs bc)
set -euo pipefail
CC=${CC:?set CC to the cargo-calltime binary}
name=$1 src=$2 root=$3; shift 3
mkdir -p /tmp/first-run-bench
w=/tmp/first-run-bench/$name
# t COMMAND...: runs it quietly and prints its wall time in seconds (on failure, its last lines, and exits).
t() {
  local start
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "FAILED: $*" >&2; "$@" 2>&1 | tail -5 >&2; exit 1; }
  echo "$(date +%s.%N) - $start" | bc
}
fresh() { rm -rf "$w"; cp -r "$src" "$w"; rm -rf "$w/target"; }
unset CARGO_TARGET_DIR RUSTFLAGS
fresh; cd "$w"
plain=$(t cargo build --offline "$@")
seeded=$(t "$CC" calltime build -q --offline --root "$root" "$@")
rebuild=$(t "$CC" calltime build -q --offline --root "$root" "$@")
fresh; cd "$w"
cold=$(t "$CC" calltime build -q --offline --root "$root" "$@")
# The flags of before this change: the remap in RUSTFLAGS (forced by a workspace wrapper of the user's own,
# `env`, which runs rustc unchanged), so no dependency matches the user's build.
fresh; cd "$w"
cargo build -q --offline "$@" > /dev/null 2>&1
old=$(RUSTC_WORKSPACE_WRAPPER=/usr/bin/env t "$CC" calltime build -q --offline --root "$root" "$@")
printf '%s plain-cold=%.1f calltime-after-plain=%.1f (%.2fx) calltime-cold=%.1f (%.2fx) rebuild=%.1f remap-in-rustflags-after-plain=%.1f (%.2fx)\n' \
  "$name" "$plain" "$seeded" "$(echo "$seeded/$plain" | bc -l)" "$cold" "$(echo "$cold/$plain" | bc -l)" "$rebuild" "$old" "$(echo "$old/$plain" | bc -l)"

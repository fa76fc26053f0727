#!/bin/bash
# What counting allocations costs per allocation, in instructions under callgrind (stable on a loaded machine).
# One small program (written below) built three ways against this checkout's calltime-rt, release profile:
#   system      no #[global_allocator] (std's default: __rust_alloc -> __rdl_alloc -> malloc)
#   exe-system  `#[global_allocator] static _: System` declared in the program's own crate
#   counting    `#[global_allocator] static _: CountingAlloc<System>` declared in the program's own crate: what the
#               copy declares in the crate root of the executable it builds (and what a wrapped allocator becomes)
# Each allocates and frees 1,000,000 `Box<usize>`, outside any invocation or inside one (a root and a child), from
# the program's own crate (`local`: the allocator's code is inlined into the loop) and from a dependency crate
# (`dep`: the allocation calls the program's `__rust_alloc`, as std's and other crates' non-generic code does).
# The figure is the main thread's total (callgrind --separate-threads, file -01); the differences per allocation
# against `system` are what docs/performance.md ("Allocations") quotes.
#
# usage: scripts/alloc-cost-bench.sh [WORK_DIR]   (default: a new directory under /tmp; delete it afterwards)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/alloc-cost-bench.XXXXXX)}
fail() { echo "alloc-cost-bench: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is needed (callgrind); install it"
command -v callgrind_annotate >/dev/null || fail "callgrind_annotate is needed (valgrind's tools)"
command -v bc >/dev/null || fail "bc is needed"

mkdir -p "$work/alloc_loop/src"
cat > "$work/alloc_loop/Cargo.toml" <<'TOML'
[package]
name = "alloc_loop"
version = "0.1.0"
edition = "2021"
publish = false
TOML
cat > "$work/alloc_loop/src/lib.rs" <<'RUST'
/// Allocates and frees `count` boxes in this crate's code: each allocation calls the program's `__rust_alloc`.
#[inline(never)]
pub fn allocate(count: usize) {
    for i in 0..count {
        std::hint::black_box(Box::new(i));
    }
}
RUST
program='use calltime_rt::__private::{enter, enter_root, PlanInfo};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "alloc-cost", table: "", functions: 2 };
const ALLOCATIONS: usize = 1_000_000;

fn allocate_here() {
    for i in 0..ALLOCATIONS {
        black_box(Box::new(i));
    }
}

fn main() {
    // The runtime is set up (as by a first root) in every mode, so they differ only in where the loop runs.
    drop(enter_root(0, &PLAN));
    let mode = std::env::args().nth(1).unwrap_or_default();
    let allocate = || if mode.ends_with("-dep") { alloc_loop::allocate(ALLOCATIONS) } else { allocate_here() };
    if mode.starts_with("inside") {
        let _root = enter_root(0, &PLAN);
        let _child = enter(1);
        allocate();
    } else {
        allocate();
    }
}'
modes="outside-local inside-local outside-dep inside-dep"
declare -A totals
for variant in system exe-system counting; do
  dir="$work/$variant"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "alloc_cost"
version = "0.1.0"
edition = "2021"
publish = false
[dependencies]
calltime-rt = { path = "$repo/calltime-rt" }
alloc_loop = { path = "$work/alloc_loop" }
[profile.release]
debug = 1
[workspace]
TOML
  {
    echo "$program"
    case $variant in
      exe-system) echo '#[global_allocator] static OWN: std::alloc::System = std::alloc::System;' ;;
      counting) echo '#[global_allocator] static __CALLTIME_ALLOC: ::calltime_rt::__private::CountingAlloc<::std::alloc::System> = ::calltime_rt::__private::CountingAlloc(::std::alloc::System);' ;;
    esac
  } > "$dir/src/main.rs"
  (cd "$dir" && CARGO_TARGET_DIR="$work/target-$variant" cargo build --release -q) || fail "cannot build $variant"
  for mode in $modes; do
    rm -f "$work/cg.$variant.$mode".*
    CALLTIME_OUT="$work/$variant.$mode.trace" valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$work/cg.$variant.$mode.%p" "$work/target-$variant/release/alloc_cost" "$mode" 2>/dev/null
    totals[$variant.$mode]=$(callgrind_annotate "$work"/cg.$variant.$mode.*-01 |
      awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  done
done
printf '%-11s' variant
for mode in $modes; do printf ' %15s' "$mode"; done
echo
for variant in system exe-system counting; do
  printf '%-11s' "$variant"
  for mode in $modes; do printf ' %15s' "${totals[$variant.$mode]}"; done
  echo
done
echo "per allocation, against system:"
for variant in exe-system counting; do
  printf '%-11s' "$variant"
  for mode in $modes; do
    printf ' %+15.2f' "$(echo "(${totals[$variant.$mode]} - ${totals[system.$mode]}) / 1000000" | bc -l)"
  done
  echo
done
echo "(1,000,000 allocations; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "work directory: $work (delete it when done)"

#!/bin/bash
# What counting allocations costs an allocation made outside any invocation, in instructions under callgrind (stable
# on a loaded machine): calltime-rt's examples/alloc_cost.rs (1,000,000 `Box<usize>` allocated and freed) built as
# four small programs against this checkout's calltime-rt, release profile:
#   system      no #[global_allocator] (std's default: __rust_alloc -> __rdl_alloc -> malloc)
#   runtime     the runtime's counting allocator (`count-allocs`: the static is declared inside calltime-rt)
#   exe-system  `#[global_allocator] static _: System` declared in the program's own crate
#   exe-counting  `#[global_allocator] static _: CountingAlloc<System>` declared in the program's own crate (as the
#               copy does when it wraps a binary's own #[global_allocator])
# The figure is the main thread's total (callgrind --separate-threads, file -01); the differences per allocation
# are what docs/performance.md ("Allocations") quotes.
#
# usage: scripts/alloc-cost-bench.sh [WORK_DIR]   (default: a new directory under /tmp; delete it afterwards)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/alloc-cost-bench.XXXXXX)}
fail() { echo "alloc-cost-bench: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is needed (callgrind); install it"
command -v callgrind_annotate >/dev/null || fail "callgrind_annotate is needed (valgrind's tools)"

example=$(grep -v '^//!' "$repo/calltime-rt/examples/alloc_cost.rs")
for variant in system runtime exe-system exe-counting; do
  dir="$work/$variant"
  mkdir -p "$dir/src"
  features=""
  [ "$variant" = runtime ] && features=', features = ["count-allocs"]'
  cat > "$dir/Cargo.toml" <<EOF
[package]
name = "alloc_cost"
version = "0.1.0"
edition = "2021"
publish = false
[dependencies]
calltime-rt = { path = "$repo/calltime-rt"$features }
[profile.release]
debug = 1
[workspace]
EOF
  {
    echo "$example"
    case $variant in
      exe-system) echo '#[global_allocator] static OWN: std::alloc::System = std::alloc::System;' ;;
      exe-counting) echo '#[global_allocator] static OWN: calltime_rt::__private::CountingAlloc<std::alloc::System> = calltime_rt::__private::CountingAlloc(std::alloc::System);' ;;
    esac
  } > "$dir/src/main.rs"
  (cd "$dir" && CARGO_TARGET_DIR="$work/target-$variant" cargo build --release -q) || fail "cannot build $variant"
  rm -f "$work/cg.$variant".*
  CALLTIME_OUT="$work/$variant.trace" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$work/cg.$variant.%p" "$work/target-$variant/release/alloc_cost" outside 2>/dev/null
  total=$(callgrind_annotate "$work"/cg.$variant.*-01 | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  printf '%-13s %12s instructions (main thread)\n' "$variant" "$total"
done
echo "work directory: $work (delete it when done)"

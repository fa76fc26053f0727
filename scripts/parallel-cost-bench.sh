#!/bin/bash
# The cost per item of a rayon parallel iterator's closure adopted by the rewrite (issue 13 item 1), in instructions
# under callgrind (stable on a loaded machine). A small program against calltime-rt runs a million items through
# `ParContext::run`, as the rewrite wraps a closure written in a chain (`|i| __calltime_par.run(|| body)`), against
# the same closures unwrapped: with the context made outside any invocation; made inside one, the items run on
# another thread (a worker: its part entered at the first item, then made current per item); and made inside one,
# the items run on the spawning thread itself (inline). No rayon: the pool's own scheduling (spinning workers)
# would swamp the counts; a scoped thread stands for a worker. Release build. Prints instructions per item.
#
# usage: scripts/parallel-cost-bench.sh [WORK_DIR]   (default: a new directory under /tmp; delete it afterwards)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/parallel-cost-bench.XXXXXX)}
fail() { echo "parallel-cost-bench: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is needed (callgrind); install it"
. "$repo/scripts/rt-bench-crate.sh"
rt_bench_crate parallel-cost "$work" "$repo"
cat > "$work/src/main.rs" <<'RS'
use calltime_rt::__private::{enter_root, par_context, PlanInfo};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "cost", table: "", functions: 2 };
const N: u64 = 1_000_000;

/// Runs `N` items on another thread (a pool's worker) with `item`, the way a chain's consumer calls its closures.
#[inline(never)]
fn on_worker(item: &(dyn Fn(u64) -> u64 + Sync)) -> u64 {
    std::thread::scope(|s| s.spawn(|| (0..N).map(item).sum()).join().unwrap())
}

#[inline(never)]
fn on_caller(item: &dyn Fn(u64) -> u64) -> u64 {
    (0..N).map(item).sum()
}

fn main() {
    let case = std::env::args().nth(1).unwrap_or_default();
    let r = match case.as_str() {
        "plain_worker" => {
            let _g = enter_root(0, &PLAN);
            on_worker(&|i| black_box(i))
        }
        "outside" => {
            let par = &par_context();
            on_worker(&|i| par.run(|| black_box(i)))
        }
        "worker" => {
            let _g = enter_root(0, &PLAN);
            let par = &par_context();
            on_worker(&|i| par.run(|| black_box(i)))
        }
        "plain_caller" => {
            let _g = enter_root(0, &PLAN);
            on_caller(&|i| black_box(i))
        }
        _ => {
            let _g = enter_root(0, &PLAN);
            let par = &par_context();
            on_caller(&|i| par.run(|| black_box(i)))
        }
    };
    println!("{r}");
}
RS
(cd "$work" && cargo build --release -q) || fail "cannot build the benchmark in $work"
total() { valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" "$work/target/release/parallel-cost" "$1" 2>&1 \
  | sed -n 's/.*Collected : //p'; }
plain_worker=$(total plain_worker) outside=$(total outside) worker=$(total worker)
plain_caller=$(total plain_caller) caller=$(total caller)
per() { echo "$(( ($1 - $2) / 1000000 ))"; }
echo "outside an invocation: $(per "$outside" "$plain_worker") instructions per item ($outside against $plain_worker)"
echo "inside one, on a worker: $(per "$worker" "$plain_worker") instructions per item ($worker against $plain_worker)"
echo "inside one, on the spawning thread: $(per "$caller" "$plain_caller") instructions per item" \
  "($caller against $plain_caller)"

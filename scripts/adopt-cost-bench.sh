#!/bin/bash
# The cost of a spawn wrapped by the rewrite (issue 13 item 1), in instructions under callgrind (stable on a loaded
# machine): a small program against calltime-rt takes a million tickets outside any invocation
# (`{ let t = ticket(); move || t.run(|| black_box(i)) }()`, as the rewrite wraps a closure written at a spawn)
# against the same closures unwrapped, and ten thousand inside one invocation, run where they were spawned (a rayon
# job nobody stole), each against the same closures unwrapped. Release build. Prints instructions per spawn.
#
# usage: scripts/adopt-cost-bench.sh [WORK_DIR]   (default: a new directory under /tmp; delete it afterwards)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/adopt-cost-bench.XXXXXX)}
fail() { echo "adopt-cost-bench: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is needed (callgrind); install it"
. "$repo/scripts/rt-bench-crate.sh"
rt_bench_crate adopt-cost "$work" "$repo"
cat > "$work/src/main.rs" <<'RS'
use calltime_rt::__private::{enter_root, ticket, PlanInfo};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "cost", table: "", functions: 2 };
const N: u64 = 1_000_000;

#[inline(never)]
fn plain() -> u64 {
    (0..N).map(|i| (|| black_box(i))()).sum()
}

#[inline(never)]
fn wrapped() -> u64 {
    (0..N).map(|i| { let t = ticket(); move || t.run(|| black_box(i)) }()).sum()
}

#[inline(never)]
fn inside_plain() -> u64 {
    let _g = enter_root(0, &PLAN);
    (0..N / 100).map(|i| (|| black_box(i))()).sum()
}

#[inline(never)]
fn inside() -> u64 {
    let _g = enter_root(0, &PLAN);
    (0..N / 100).map(|i| { let t = ticket(); move || t.run(|| black_box(i)) }()).sum()
}

fn main() {
    let r = match std::env::args().nth(1).unwrap_or_default().as_str() {
        "plain" => plain(),
        "wrapped" => wrapped(),
        "inside_plain" => inside_plain(),
        _ => inside(),
    };
    println!("{r}");
}
RS
(cd "$work" && cargo build --release -q) || fail "cannot build the benchmark in $work"
total() { valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" "$work/target/release/adopt-cost" "$1" 2>&1 \
  | sed -n 's/.*Collected : //p'; }
plain=$(total plain) wrapped=$(total wrapped) inside_plain=$(total inside_plain) inside=$(total inside)
echo "outside an invocation: $(( (wrapped - plain) / 1000000 )) instructions per spawn ($wrapped against $plain)"
echo "inside an invocation, run inline: $(( (inside - inside_plain) / 10000 )) instructions per spawn" \
  "($inside against $inside_plain)"

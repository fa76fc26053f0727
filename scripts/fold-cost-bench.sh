#!/bin/bash
# The whole-run aggregate's fold at a root's exit (calltime-rt/src/aggregate.rs `fold`), in instructions under
# callgrind: a small program against calltime-rt runs 100,000 invocations of a root with 10 children (11 nodes,
# one per call; CALLTIME_EXACT=1, so no probe retires) and the instructions spent in `fold` (inclusive, its lock
# included) are divided by the nodes folded.
# With a second calltime-rt directory (e.g. an older commit's, from `git archive`), prints both.
#
# usage: scripts/fold-cost-bench.sh [OTHER_CALLTIME_RT_DIR]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "fold-cost-bench: valgrind is needed (callgrind); install it" >&2; exit 1; }
measure() {
  local rt=$1 work
  work=$(mktemp -d /tmp/fold-cost-bench.XXXXXX)
  mkdir -p "$work/src"
  printf '[package]\nname = "fold-cost"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n\n[dependencies]\ncalltime-rt = { path = "%s" }\n\n[profile.release]\ndebug = 1\n' "$rt" > "$work/Cargo.toml"
  cat > "$work/src/main.rs" <<'RS'
use calltime_rt::__private::{enter, enter_root, PlanInfo};

static PLAN: PlanInfo = PlanInfo { id: "fold", table: "", functions: 2 };

#[inline(never)]
fn child() {
    let _g = enter(1);
    std::hint::black_box(());
}

fn main() {
    for _ in 0..100_000 {
        let _g = enter_root(0, &PLAN);
        for _ in 0..10 {
            child();
        }
    }
}
RS
  (cd "$work" && cargo build --release -q) || { echo "fold-cost-bench: cannot build in $work" >&2; exit 1; }
  CALLTIME_EXACT=1 CALLTIME_OUT="$work/out.trace" valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$work/target/release/fold-cost" > /dev/null 2>&1
  local fold
  fold=$(callgrind_annotate --inclusive=yes "$work/cg" 2>/dev/null | awk '!done && /calltime_rt::aggregate::fold \[/ { gsub(",", "", $1); print $1; done = 1 }')
  rm -rf "$work"
  echo "$rt: fold $fold instructions for 1,100,000 nodes: $(( fold / 1100000 )).$(( fold % 1100000 * 10 / 1100000 )) per node"
}
measure "$repo/calltime-rt"
[ -n "${1:-}" ] && measure "$1"
exit 0

//! What the counting allocator costs per allocation: 1,000,000 `Box<usize>` allocated and freed, outside any
//! invocation (`alloc_cost outside`) or inside one (`alloc_cost inside`). Build it without and with the
//! `count-allocs` feature and compare instruction counts (docs/performance.md, "Allocations"):
//! `valgrind --tool=callgrind --separate-threads=yes target/release/examples/alloc_cost inside`.

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "alloc-cost", table: "", functions: 2 };
const ALLOCATIONS: usize = 1_000_000;

fn allocate() {
    for i in 0..ALLOCATIONS {
        black_box(Box::new(i));
    }
}

fn main() {
    // The runtime is set up (as by a first root) in both cases, so the two differ only in where the loop runs.
    drop(enter_root(0, &PLAN));
    if std::env::args().nth(1).as_deref() == Some("inside") {
        let _root = enter_root(0, &PLAN);
        let _child = enter(1);
        allocate();
    } else {
        allocate();
    }
}

//! A counting global allocator shows that, in steady state, probed calls allocate nothing: neither the calls inside
//! an invocation nor the hand-off of the finished tree to the writer.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts (per thread, so the writer thread is not counted).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

static PLAN: PlanInfo = PlanInfo { id: "plan-alloc", table: "", functions: 4 };
const CALLS: u64 = 5000;

fn outer(i: u64) {
    let __calltime_guard = enter(1);
    if i % 2 == 0 {
        inner();
    }
}

fn inner() {
    let __calltime_guard = enter(2);
    std::hint::black_box(());
}

/// Runs one invocation; returns (allocations during its calls, allocations during the whole invocation).
fn invocation() -> (u64, u64) {
    let before_root = allocations();
    let hot;
    {
        let __calltime_guard = enter_root(0, &PLAN);
        let before_calls = allocations();
        for i in 0..CALLS {
            outer(i);
        }
        hot = allocations() - before_calls;
    }
    (hot, allocations() - before_root)
}

#[test]
fn steady_state_probes_do_not_allocate() {
    if common::is_child("steady_state_probes_do_not_allocate") {
        // Warm-up: the first root entry sets up the runtime, this thread's buffer and a spare one; buffers start
        // small and grow to what an invocation needs, so both buffers in circulation are grown once.
        let (_, first) = invocation();
        assert!(first > 0, "the counter sees the set-up allocations of the first invocation");
        calltime_rt::flush();
        invocation();
        calltime_rt::flush();
        let (hot, whole) = invocation();
        let outside_before = allocations();
        for i in 0..CALLS {
            outer(i);
        }
        let outside = allocations() - outside_before;
        println!("allocations: hot part {hot}, whole invocation {whole}, probes outside any root {outside}");
        assert_eq!(hot, 0, "allocations during {} probed calls", CALLS + CALLS / 2);
        assert_eq!(whole, 0, "allocations during a whole invocation, hand-off included");
        assert_eq!(outside, 0);
        return;
    }
    // One node per call (folding off): every invocation was recorded in full, so the probes really ran.
    let exact = ("CALLTIME_EXACT", "1");
    let trace = common::run_ok("steady_state_probes_do_not_allocate", &[("CALLTIME_FOLD_AFTER", "0"), exact]);
    assert_eq!(trace.invocations.len(), 3);
    for inv in &trace.invocations {
        assert_eq!(inv.node_count, 1 + CALLS + CALLS / 2);
        assert_eq!(inv.truncated, 0);
    }
    // Folded (the default past 4096 calls): the same, counted per call path.
    let trace = common::run_ok("steady_state_probes_do_not_allocate", &[exact]);
    assert_eq!(trace.shapes(), ["0*1[1*5000[2*2500]]"; 3]);
    // With retirement (the default): `inner` retires at the first fold, then `outer` once it calls no probed
    // function; their later calls are counted, still without allocating (the child checks), and every call is in a
    // tree or an `r` line (`CALLTIME_QUIET_AFTER=0`: counted to the end, never estimated; an invocation of 5,000
    // calls of `outer` would otherwise make it go quiet as it ends).
    let trace = common::run_ok("steady_state_probes_do_not_allocate", &[("CALLTIME_QUIET_AFTER", "0")]);
    assert_eq!(trace.retirements.iter().map(|r| r.index).collect::<Vec<_>>(), [2, 1]);
    for (index, calls) in [(1, 3 * CALLS), (2, 3 * CALLS / 2)] {
        let nodes = trace.invocations.iter().flat_map(|inv| &inv.nodes).filter(|n| n.index == index);
        let in_trees: u64 = nodes.map(|n| n.folded.map_or(1, |f| f.calls)).sum();
        let lines = trace.invocations.iter().flat_map(|inv| &inv.retired).filter(|r| r.0 == index);
        let retired: u64 = lines.map(|r| r.1).sum();
        assert_eq!(in_trees + retired, calls, "function {index}: {in_trees} in trees, {retired} retired");
    }
}

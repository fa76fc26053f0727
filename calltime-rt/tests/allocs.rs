//! Allocations per node: with the counting allocator installed, a function that makes exactly N allocations of
//! known sizes gets exactly those self counts, its callers get them in their totals, and nothing is counted outside
//! an invocation. Both storage modes: one node per call, and call paths once an invocation folds.

mod common;

use calltime_rt::__private::{enter, enter_root, CountingAlloc, PlanInfo};
use cargo_calltime::trace::{parse, Node};
use common::{is_child, run_child};
use std::alloc::System;
use std::hint::black_box;

#[global_allocator]
static ALLOCATOR: CountingAlloc<System> = CountingAlloc(System);

static PLAN: PlanInfo = PlanInfo { id: "plan-allocs", table: "", functions: 4 };

// Function indices: 0 root, 1 allocating, 2 quiet.
fn root(rounds: usize) {
    let __calltime_guard = enter_root(0, &PLAN);
    // One allocation of the root itself: 24 bytes.
    let own = black_box(vec![0u64; 3]);
    for _ in 0..rounds {
        allocating();
        quiet();
    }
    drop(own);
}

/// Exactly 3 allocations: 16, 100 and 1000 bytes (a boxed pair, a Vec and a String with those capacities).
fn allocating() {
    let __calltime_guard = enter(1);
    let pair = black_box(Box::new([1u64, 2]));
    let bytes: Vec<u8> = black_box(Vec::with_capacity(100));
    let text = black_box(String::with_capacity(1000));
    drop((pair, bytes, text));
}

fn quiet() {
    let __calltime_guard = enter(2);
    black_box(());
}

fn run(name: &str, rounds: usize, env: &[(&str, &str)]) -> cargo_calltime::trace::Trace {
    if is_child(name) {
        let _outside = black_box(vec![1u8; 64]); // outside any root: not counted anywhere
        root(rounds);
        calltime_rt::flush();
        std::process::exit(0);
    }
    let (output, text) = run_child(name, env);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    parse(&text).unwrap_or_else(|e| panic!("not a trace: {e:#}\n{text}"))
}

/// (self allocs, self bytes) summed over the nodes of `func`.
fn self_allocs_of(node: &Node, func: u32) -> (u64, u64) {
    let mine = if node.func == func { (node.self_allocs, node.self_alloc_bytes) } else { (0, 0) };
    let below = node.children.iter().map(|c| self_allocs_of(c, func));
    below.fold(mine, |(n, b), (cn, cb)| (n + cn, b + cb))
}

fn check(trace: &cargo_calltime::trace::Trace, rounds: u64) {
    assert!(trace.counts_allocs());
    assert_eq!(trace.invocations.len(), 1);
    let root = &trace.invocations[0].root;
    assert_eq!(self_allocs_of(root, 1), (3 * rounds, 1116 * rounds));
    assert_eq!(self_allocs_of(root, 2), (0, 0));
    assert_eq!((root.self_allocs, root.self_alloc_bytes), (1, 24));
    assert_eq!(root.total_allocs(), (1 + 3 * rounds, 24 + 1116 * rounds));
}

#[test]
fn exact_counts_per_call() {
    let trace = run("exact_counts_per_call", 5, &[]);
    assert!(!trace.invocations[0].folded);
    check(&trace, 5);
    let calls = &trace.invocations[0].root.children;
    assert!(calls.iter().filter(|c| c.func == 1).all(|c| (c.self_allocs, c.self_alloc_bytes) == (3, 1116)));
}

#[test]
fn exact_counts_in_a_folded_invocation() {
    // Folds after 6 calls: the calls before the fold and those counted on call paths after it add up exactly, and
    // the runtime's own allocations at the fold are not charged to the call open then.
    let env = [("CALLTIME_FOLD_AFTER", "6"), ("CALLTIME_EXACT", "1")];
    let trace = run("exact_counts_in_a_folded_invocation", 2000, &env);
    assert!(trace.invocations[0].folded);
    check(&trace, 2000);
}

#[test]
fn retired_calls_charge_their_caller() {
    // A retired function has no node: its allocations are its caller's, and the root's total stays exact.
    // Every call of a folded path timed: a path is checked every 32 timed samples, so both functions reach their
    // check whatever the random sampling would have drawn (with the default, `allocating` sometimes had fewer).
    let env = [
        ("CALLTIME_FOLD_AFTER", "6"),
        ("CALLTIME_RETIRE_FACTOR", "1000000"),
        ("CALLTIME_RETIRE_MIN_CALLS", "10"),
        ("CALLTIME_TIME_SAMPLE", "1"),
    ];
    let trace = run("retired_calls_charge_their_caller", 2000, &env);
    let root = &trace.invocations[0].root;
    assert!(trace.retirements.iter().any(|r| r.func == 1), "allocating retires: {:?}", trace.retirements);
    assert_eq!(root.total_allocs(), (1 + 3 * 2000, 24 + 1116 * 2000));
    assert!(root.self_allocs > 1, "{root:?}");
}

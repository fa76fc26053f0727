//! Big invocations fold: past `CALLTIME_FOLD_AFTER` calls, an invocation keeps one node per call path with exact
//! call counts, and times a sample of the calls of busy paths. Each scenario runs in its own child process.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_ok, Inv};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "plan-folded", table: "", functions: 16 };

// Function indices: 0 root, 1 a, 2 b, 3 c, 6 boom, 9 x.
fn a() {
    let __calltime_guard = enter(1);
    b();
}

fn b() {
    let __calltime_guard = enter(2);
    black_box(());
}

fn c() {
    let __calltime_guard = enter(3);
    black_box(());
}

fn boom() {
    let __calltime_guard = enter(6);
    b();
    panic!("boom");
}

/// Loops inside a call that is open when the invocation folds.
fn x(n: u32) {
    let __calltime_guard = enter(9);
    for i in 0..n {
        a();
        if i % 3 == 0 {
            c();
        }
    }
}

fn loop_root(n: u32) {
    let __calltime_guard = enter_root(0, &PLAN);
    for i in 0..n {
        a();
        if i % 3 == 0 {
            c();
        }
    }
}

/// (calls, timed) of each node in preorder.
fn counts(inv: &Inv) -> Vec<(u64, u64)> {
    inv.nodes.iter().map(|n| n.folded.map_or((1, 1), |f| (f.calls, f.timed))).collect()
}

#[test]
fn big_invocation_folds_with_exact_counts_and_sampled_times() {
    if is_child("big_invocation_folds_with_exact_counts_and_sampled_times") {
        loop_root(30); // small: one node per call
        loop_root(20_000);
        return;
    }
    // A timed call that the scheduler preempts stands for 64 calls in the estimate: under a loaded machine (the
    // suite's other tests) one such call can push an estimate past the bound below, so a run whose estimates do
    // not fit is taken again, at most twice; the structure and counts are checked on every run.
    for attempt in 1..=3 {
        if big_invocation_run_fits(attempt == 3) {
            return;
        }
    }
}

/// One run of `big_invocation_folds_with_exact_counts_and_sampled_times`: exact structure and counts asserted,
/// estimates within three times the root's time returned (asserted when `last`).
fn big_invocation_run_fits(last: bool) -> bool {
    let trace = run_ok(
        "big_invocation_folds_with_exact_counts_and_sampled_times",
        &[("CALLTIME_FOLD_AFTER", "100"), ("CALLTIME_EXACT", "1")],
    );
    assert!(
        trace.header.iter().any(|h| h.starts_with("settings ") && h.contains(" fold_after=100 ")),
        "{:?}",
        trace.header
    );
    assert_eq!(trace.invocations.len(), 2);
    assert!(trace.invocations[0].nodes.iter().all(|n| n.folded.is_none()), "a small invocation is not folded");
    assert_eq!(trace.invocations[0].nodes.len(), 1 + 30 * 2 + 10);
    trace.invocations[0].check_nesting();

    let big = &trace.invocations[1];
    assert_eq!(big.shape(), "0*1[1*20000[2*20000] 3*6667]");
    assert_eq!((big.node_count, big.truncated), (4, 0));
    let counts = counts(big);
    assert_eq!(counts[0], (1, 1), "the root is timed");
    assert!(big.nodes[0].duration.abs_diff(big.duration) <= 1, "the root path's time is the invocation's (rounding)");
    // The calls recorded before the fold (about 100 / 2.3 of each) are all timed; then about 1 in 64.
    for &(calls, timed) in &counts[1..] {
        let expected = calls / 64;
        assert!(timed >= expected / 2 && timed <= expected * 2 + 120, "calls {calls} timed {timed}");
    }
    // Estimated totals stay within the root's time (the sample is unbiased; 3x leaves room for noise).
    for node in &big.nodes[1..] {
        let f = node.folded.unwrap();
        let estimate = node.duration as u128 * f.calls as u128 / f.timed as u128;
        if estimate >= 3 * big.duration as u128 {
            assert!(!last, "{node:?} vs root {}", big.duration);
            return false;
        }
    }
    true
}

#[test]
fn time_sample_1_times_every_call() {
    if is_child("time_sample_1_times_every_call") {
        loop_root(5_000);
        return;
    }
    let trace = run_ok(
        "time_sample_1_times_every_call",
        &[("CALLTIME_FOLD_AFTER", "10"), ("CALLTIME_TIME_SAMPLE", "1"), ("CALLTIME_EXACT", "1")],
    );
    let inv = &trace.invocations[0];
    assert_eq!(inv.shape(), "0*1[1*5000[2*5000] 3*1667]");
    assert!(counts(inv).iter().all(|(calls, timed)| calls == timed), "{:?}", counts(inv));
}

#[test]
fn fold_after_0_keeps_one_node_per_call() {
    if is_child("fold_after_0_keeps_one_node_per_call") {
        loop_root(3_000);
        return;
    }
    let trace = run_ok("fold_after_0_keeps_one_node_per_call", &[("CALLTIME_FOLD_AFTER", "0")]);
    let inv = &trace.invocations[0];
    assert_eq!(inv.nodes.len(), 1 + 3_000 * 2 + 1_000);
    assert!(inv.nodes.iter().all(|n| n.folded.is_none()));
}

#[test]
fn calls_open_at_the_fold_are_timed_whole() {
    if is_child("calls_open_at_the_fold_are_timed_whole") {
        let __calltime_guard = enter_root(0, &PLAN);
        x(1_000);
        c();
        return;
    }
    let trace = run_ok("calls_open_at_the_fold_are_timed_whole", &[("CALLTIME_FOLD_AFTER", "10")]);
    let inv = &trace.invocations[0];
    assert_eq!(inv.shape(), "0*1[9*1[1*1000[2*1000] 3*334] 3*1]");
    let x_node = &inv.nodes[1];
    assert_eq!(x_node.folded.unwrap().timed, 1, "x was entered before the fold and left after it");
    assert!(x_node.duration > 0 && x_node.duration <= inv.duration);
    assert!(x_node.start >= inv.start);
}

#[test]
fn panics_in_a_folded_invocation_are_flagged() {
    if is_child("panics_in_a_folded_invocation_are_flagged") {
        let __calltime_guard = enter_root(0, &PLAN);
        for _ in 0..50 {
            a();
        }
        for _ in 0..3 {
            assert!(std::panic::catch_unwind(boom).is_err());
        }
        c();
        return;
    }
    let trace = run_ok("panics_in_a_folded_invocation_are_flagged", &[("CALLTIME_FOLD_AFTER", "10")]);
    assert_eq!(trace.shapes(), ["0*1[1*50[2*50] 6*3![2*3] 3*1]"]);
}

#[test]
fn path_cap_counts_the_rest_as_truncated() {
    if is_child("path_cap_counts_the_rest_as_truncated") {
        let __calltime_guard = enter_root(0, &PLAN);
        for _ in 0..10 {
            a();
        }
        for _ in 0..5 {
            x(2); // a new path past the cap: x, and the 2 a, 2 b and 1 c under it, are counted as truncated
        }
        b();
        return;
    }
    let trace = run_ok("path_cap_counts_the_rest_as_truncated", &[("CALLTIME_NODE_CAP", "3")]);
    let inv = &trace.invocations[0];
    // The cap (3) is reached first: the invocation folds there, and new paths past it are not created.
    assert_eq!(inv.shape(), "0*1[1*10[2*10]]");
    assert_eq!(inv.truncated, 5 * 6 + 1);
    assert_eq!(trace.stats.unwrap()[4], 1, "counted as a truncated invocation");
}

// Function indices 10 to 14: a fast caller and its tiny callee, a fast function that also calls a slower one on
// another path (under 13), and that slower one.
fn fast_caller(i: u32) -> u32 {
    let __calltime_guard = enter(10);
    tiny_callee(i) ^ 1
}

fn tiny_callee(i: u32) -> u32 {
    let __calltime_guard = enter(11);
    black_box(i).wrapping_mul(3)
}

fn two_faced(i: u32, call_holder: bool) -> u32 {
    let __calltime_guard = enter(12);
    if call_holder {
        holder();
    }
    tiny_callee(i)
}

fn wrap(i: u32) -> u32 {
    let __calltime_guard = enter(13);
    two_faced(i, true)
}

/// Called too rarely to retire.
fn holder() {
    let __calltime_guard = enter(14);
    black_box(());
}

const CALLER_CALLS: u32 = 300_000;
const WRAP_EVERY: u32 = 1000;

#[test]
fn a_fast_caller_retires_once_its_callees_did() {
    if is_child("a_fast_caller_retires_once_its_callees_did") {
        let __calltime_guard = enter_root(0, &PLAN);
        for i in 0..CALLER_CALLS {
            black_box(fast_caller(i));
            black_box(two_faced(i, false));
            if i % WRAP_EVERY == 0 {
                black_box(wrap(i));
            }
        }
        return;
    }
    // Counted to the end (the callee would otherwise go quiet within this long invocation): the counts are checked.
    let trace = run_ok("a_fast_caller_retires_once_its_callees_did", &[("CALLTIME_QUIET_AFTER", "0")]);
    // The callee retires at the fold (a leaf); the caller, whose path has the callee's as a child, retires on a
    // later sampled exit, once every child path is of a retired function. `two_faced` calls only the retired
    // callee on its busy path, but `holder` under `wrap`: it stays probed, so `holder` stays under it.
    let retired: Vec<u32> = trace.retirements.iter().map(|r| r.index).collect();
    assert_eq!(retired, [11, 10]);
    let inv = &trace.invocations[0];
    let in_tree = |index: u32| -> u64 {
        inv.nodes.iter().filter(|n| n.index == index).map(|n| n.folded.map_or(1, |f| f.calls)).sum()
    };
    let after = |index: u32| inv.retired.iter().filter(|r| r.0 == index).map(|r| r.1).sum::<u64>();
    // Counts stay exact, and no callee hangs where it was not called.
    for (index, calls) in [(10, CALLER_CALLS), (11, 2 * CALLER_CALLS + CALLER_CALLS / WRAP_EVERY)] {
        assert_eq!(in_tree(index) + after(index), u64::from(calls), "function {index}");
    }
    assert!(after(10) > u64::from(CALLER_CALLS) / 2, "the caller retired early: {} calls after", after(10));
    let (wraps, busy) = (CALLER_CALLS / WRAP_EVERY, CALLER_CALLS);
    assert_eq!(in_tree(12), u64::from(busy + wraps));
    assert_eq!(in_tree(14), u64::from(wraps));
    let shape = inv.shape();
    assert!(shape.contains(&format!("13*{wraps}[12*{wraps}[14*{wraps}")), "{shape}");
}

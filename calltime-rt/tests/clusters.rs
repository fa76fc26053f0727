//! Recursive clusters (calltime-rt/src/retire/cluster.rs): mutually recursive functions whose calls are too fast
//! to be worth their probes retire together with the functions under them, the root's nested calls too; their
//! calls are counted exactly until an invocation ends having counted enough of them, and then the whole cycle goes
//! quiet at once (never within an invocation). Each scenario runs in its own child process.

mod common;

use calltime_rt::__private::{call_once, enter, enter_root, root_is_nested_quiet, PlanInfo, States};
use common::{is_child, run_ok, Trace};
use std::hint::black_box;
use std::time::{Duration, Instant};

static PLAN: PlanInfo = PlanInfo { id: "plan-clusters", table: "", functions: 8 };

// Function indices, in the shape of a recursive-descent parser (serde_json's `Value::deserialize`):
// 0 `parse` (the root, also called nested), 1 `any`, 2 `map`, 3 `value`, 4 `leaf`, 5 `slow` (called by the root's
// outermost call only).
const DEPTH: u32 = 2;
const INVOCATIONS: u64 = 3000;

/// The crate's table of state bytes, as the shadow copy declares it in each crate root, for the root in the
/// closure form below.
static STATES: States<8> = States::new();

#[inline(never)]
fn parse(depth: u32) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    any::<false>(depth)
}

/// `parse` as the rewrite writes a root whose `Err`s are counted in an optimised build (`rewrite::root_closure_wrap`;
/// nothing to note here): a nested call settled without recording runs the body at once.
#[inline(never)]
fn parse_in_closure(depth: u32) -> u64 {
    let __calltime_body = move || any::<true>(depth);
    if root_is_nested_quiet(&STATES, 0) {
        call_once(__calltime_body)
    } else {
        STATES.run_root_noted_at::<0, _, _, _>(&PLAN, __calltime_body, |_| {})
    }
}

/// `CLOSURE`: the recursion goes back to `parse_in_closure` rather than `parse`.
#[inline(never)]
fn any<const CLOSURE: bool>(depth: u32) -> u64 {
    let __calltime_guard = enter(1);
    map::<CLOSURE>(depth)
}

#[inline(never)]
fn map<const CLOSURE: bool>(depth: u32) -> u64 {
    let __calltime_guard = enter(2);
    value::<CLOSURE>(depth) + value::<CLOSURE>(depth)
}

#[inline(never)]
fn value<const CLOSURE: bool>(depth: u32) -> u64 {
    let __calltime_guard = enter(3);
    if depth == 0 {
        leaf(u64::from(depth))
    } else if CLOSURE {
        parse_in_closure(depth - 1)
    } else {
        parse(depth - 1)
    }
}

#[inline(never)]
fn leaf(i: u64) -> u64 {
    let __calltime_guard = enter(4);
    black_box(i) + 1
}

/// Busy for about 3 us: never fast enough to retire.
#[inline(never)]
fn slow() {
    let __calltime_guard = enter(5);
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(3) {
        black_box(());
    }
}

/// One invocation: the root's outermost call does slow work besides the recursion.
#[inline(never)]
fn document() -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    slow();
    any::<false>(DEPTH)
}

/// `document` in the closure form of `parse_in_closure`.
#[inline(never)]
fn document_in_closure() -> u64 {
    let __calltime_body = move || {
        slow();
        any::<true>(DEPTH)
    };
    if root_is_nested_quiet(&STATES, 0) {
        call_once(__calltime_body)
    } else {
        STATES.run_root_noted_at::<0, _, _, _>(&PLAN, __calltime_body, |_| {})
    }
}

/// Calls of each function per invocation: `parse` 1 + 2 + 4 (the first is the invocation's root), `any` and
/// `map` as many, `value` twice as many, `leaf` 2 per innermost `parse`, `slow` 1.
const PER_INVOCATION: [(u32, u64); 6] = [(0, 7), (1, 7), (2, 7), (3, 14), (4, 8), (5, 1)];

fn calls_in(trace: &Trace, inv: usize, index: u32) -> (u64, u64) {
    let inv = &trace.invocations[inv];
    let nodes = inv.nodes.iter().filter(|n| n.index == index).map(|n| n.folded.map_or(1, |f| f.calls)).sum();
    (nodes, inv.retired.iter().filter(|r| r.0 == index).map(|r| r.1).sum())
}

#[test]
fn a_recursive_cluster_retires_together_and_goes_quiet_together_after_its_counted_invocations() {
    if is_child("a_recursive_cluster_retires_together_and_goes_quiet_together_after_its_counted_invocations") {
        for _ in 0..INVOCATIONS {
            black_box(document());
        }
        return;
    }
    // Every invocation recorded: the count of trees after the retirement below is about the retirement, not about
    // sampling for cost (which would keep a fraction of these cheap ones; tests/sampled.rs).
    let name = "a_recursive_cluster_retires_together_and_goes_quiet_together_after_its_counted_invocations";
    check_cluster_retired_and_quiet(&run_ok(name, &[("CALLTIME_COST_BUDGET", "0")]));
}

/// The same with the root in the closure form an optimised build's rewrite gives it: the same trees, counts and
/// retirements (its nested calls take the inline path once the cycle is quiet, and the out-of-line one before).
#[test]
fn a_recursive_root_in_the_closure_form_retires_and_goes_quiet_as_the_guard_form_does() {
    let name = "a_recursive_root_in_the_closure_form_retires_and_goes_quiet_as_the_guard_form_does";
    if is_child(name) {
        for _ in 0..INVOCATIONS {
            black_box(document_in_closure());
        }
        return;
    }
    check_cluster_retired_and_quiet(&run_ok(name, &[("CALLTIME_COST_BUDGET", "0")]));
}

fn check_cluster_retired_and_quiet(trace: &Trace) {
    let mut retired: Vec<u32> = trace.retirements.iter().map(|r| r.index).collect();
    retired.sort_unstable();
    assert_eq!(retired, [0, 1, 2, 3, 4], "the cluster (0: its nested calls) and the leaf under it; not `slow`");
    // The members share the cycle's figures; the leaf, retired with them, has its own: its share of the unit's 42
    // calls a tree (8), not the unit's count, so its time is not the cycle's per-call mean either.
    let record = |index: u32| trace.retirements.iter().find(|r| r.index == index).unwrap();
    let unit_calls = record(3).calls;
    assert!((0..4).all(|m| record(m).calls == unit_calls && record(m).mean_ns == record(3).mean_ns));
    assert_eq!(record(4).calls, (8.0 * unit_calls as f64 / 42.0).round() as u64, "{:?}", trace.retirements);
    // The cycle goes quiet too, every member at once, as the invocation that counted its calls a third time
    // (`CALLTIME_QUIET_AFTER`'s default) ends; the leaf under it as other retired functions do.
    let mut quiet: Vec<u32> = trace.quiet.iter().map(|q| q.0).collect();
    quiet.sort_unstable();
    assert_eq!(quiet, [0, 1, 2, 3, 4]);
    let cycle_quiet: Vec<u64> = trace.quiet.iter().filter(|q| q.0 != 4).map(|q| q.1).collect();
    let (first_quiet, last_quiet) = (*cycle_quiet.iter().min().unwrap(), *cycle_quiet.iter().max().unwrap());
    let quiet_at = |index: u32| trace.quiet.iter().find(|q| q.0 == index).unwrap().1;
    let last_retired = trace.retirements.iter().map(|r| r.at_ns).max().unwrap();
    let (mut after, mut counted_invocations, mut quiet_invocations) = (0, 0, 0);
    for (i, inv) in trace.invocations.iter().enumerate() {
        assert_eq!(inv.nodes[0].index, 0, "the root's outermost call is always recorded");
        let ended = inv.start + inv.duration;
        assert!(ended < first_quiet || inv.start > last_quiet, "invocation {i} ran while the cycle went quiet");
        for (index, calls) in PER_INVOCATION {
            let (nodes, counted) = calls_in(trace, i, index);
            if index == 5 || ended < quiet_at(index) {
                assert_eq!(nodes + counted, calls, "function {index} in invocation {i}: {inv:?}");
            } else {
                assert_eq!(counted, 0, "function {index} in invocation {i}, after it went quiet: {inv:?}");
            }
        }
        if inv.start > last_retired && ended < first_quiet && inv.retired.iter().any(|r| r.0 < 4) {
            counted_invocations += 1;
        }
        quiet_invocations += usize::from(inv.start > last_quiet);
        if inv.start > last_retired {
            after += 1;
            assert_eq!(inv.shape(), "0[5]", "only the root and the slow call are recorded");
            assert!(inv.nodes[0].duration >= inv.nodes[1].duration);
        }
    }
    assert!(after > INVOCATIONS / 2, "the cluster retired late: {after} invocations after it");
    // Counted in the invocation it retired in (if it ended later) and the next ones, three in all.
    assert!((2..=3).contains(&counted_invocations), "{counted_invocations} invocations counted the cycle");
    assert!(quiet_invocations as u64 > INVOCATIONS / 2, "the cycle went quiet late: {quiet_invocations} after it");
}

#[test]
fn exact_mode_retires_no_cluster() {
    if is_child("exact_mode_retires_no_cluster") {
        for _ in 0..INVOCATIONS / 4 {
            black_box(document());
            black_box(document_in_closure());
        }
        return;
    }
    let trace = run_ok("exact_mode_retires_no_cluster", &[("CALLTIME_EXACT", "1")]);
    assert!(trace.retirements.is_empty(), "{:?}", trace.retirements);
    for i in 0..trace.invocations.len() {
        for (index, calls) in PER_INVOCATION {
            assert_eq!(calls_in(&trace, i, index), (calls, 0), "function {index} in invocation {i}");
        }
    }
}

/// Busy for about 20 us.
#[inline(never)]
fn slower(i: u64) -> u64 {
    let __calltime_guard = enter(6);
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(20) {
        black_box(());
    }
    i
}

#[inline(never)]
fn parse_slow(depth: u32) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    let __calltime_guard1 = enter(1);
    let __calltime_guard2 = enter(2);
    (0..2).map(|_| value_slow(depth)).sum()
}

#[inline(never)]
fn value_slow(depth: u32) -> u64 {
    let __calltime_guard = enter(3);
    if depth == 0 {
        slower(u64::from(depth))
    } else {
        parse_slow(depth - 1)
    }
}

/// The same recursion with slow work under it: its probes cost a small share of the time they measure, so
/// nothing retires and every call stays recorded.
#[test]
fn a_cluster_over_slow_work_stays_recorded() {
    if is_child("a_cluster_over_slow_work_stays_recorded") {
        for _ in 0..INVOCATIONS / 2 {
            black_box(parse_slow(DEPTH));
        }
        return;
    }
    let trace = run_ok("a_cluster_over_slow_work_stays_recorded", &[]);
    assert!(trace.retirements.is_empty(), "{:?}", trace.retirements);
    for i in 0..trace.invocations.len() {
        // `parse_slow` enters 0, 1 and 2 in one call: 7 calls each, as in `PER_INVOCATION`; 14 of 3, 8 of 6.
        for (index, calls) in [(0, 7), (1, 7), (2, 7), (3, 14), (6, 8)] {
            assert_eq!(calls_in(&trace, i, index), (calls, 0), "function {index} in invocation {i}");
        }
    }
}

/// Depth of the big invocations: `parse` 4,095 times (2^12 - 1), about 24,600 calls in all, past the fold at
/// 4,096 calls (`CALLTIME_FOLD_AFTER`'s default).
const DEEP: u32 = 11;
const BIG_INVOCATIONS: usize = 12;

/// Calls per big invocation, as `PER_INVOCATION` counts them for `DEEP`.
fn per_big_invocation() -> [(u32, u64); 6] {
    let parses = (1u64 << (DEEP + 1)) - 1;
    [(0, parses), (1, parses), (2, parses), (3, 2 * parses), (4, 1 << (DEEP + 1)), (5, 1)]
}

#[inline(never)]
fn big_document() -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    slow();
    any::<false>(DEEP)
}

/// Invocations that fold (thousands of recursive calls each): the cluster retires at the first one's fold, whose
/// calls on the stack are still open, and the rest of that invocation counts the members' calls instead of
/// recording them on folded paths: its counts stay exact (folded paths plus counted calls), never quiet within it.
/// It counted more than `QUIET_AT_END_CALLS` of them: the cycle goes quiet as it ends, and later invocations are
/// the root's node and `slow`'s, with nothing counted.
#[test]
fn a_recursive_cluster_retires_inside_a_folded_invocation() {
    if is_child("a_recursive_cluster_retires_inside_a_folded_invocation") {
        for _ in 0..BIG_INVOCATIONS {
            black_box(big_document());
        }
        return;
    }
    let trace = run_ok("a_recursive_cluster_retires_inside_a_folded_invocation", &[]);
    let mut retired: Vec<u32> = trace.retirements.iter().map(|r| r.index).collect();
    retired.sort_unstable();
    assert_eq!(retired, [0, 1, 2, 3, 4], "the cluster (0: its nested calls) and the leaf under it; not `slow`");
    assert_eq!(trace.invocations.len(), BIG_INVOCATIONS);
    let first = &trace.invocations[0];
    assert!(first.nodes.iter().any(|n| n.folded.is_some()), "the first invocation folded: {}", first.shape());
    let mut quiet: Vec<u32> = trace.quiet.iter().map(|q| q.0).collect();
    quiet.sort_unstable();
    assert_eq!(quiet, [0, 1, 2, 3, 4], "the cycle and the leaf went quiet");
    let quiet_at = |index: u32| trace.quiet.iter().find(|q| q.0 == index).unwrap().1;
    let second = &trace.invocations[1];
    for member in 0..4 {
        assert!(first.start + first.duration < quiet_at(member), "{member}: not within the first invocation");
        assert!(quiet_at(member) < second.start, "{member}: quiet as the first invocation ended");
    }
    for (i, inv) in trace.invocations.iter().enumerate() {
        assert_eq!(inv.nodes[0].index, 0, "the root's outermost call is always recorded");
        for (index, calls) in per_big_invocation() {
            let (nodes, counted) = calls_in(&trace, i, index);
            if index == 5 || inv.start + inv.duration < quiet_at(index) {
                assert_eq!(nodes + counted, calls, "function {index} in invocation {i}: {}", inv.shape());
            } else {
                assert_eq!(counted, 0, "function {index} in invocation {i}, quiet: {}", inv.shape());
            }
        }
        if i > 0 {
            assert_eq!(inv.shape(), "0[5]", "invocation {i}: only the root and the slow call are recorded");
        }
    }
}

/// Depth of the middling invocations: `parse` 1,023 times, about 6,100 calls in all (past the fold), under 4,096 of
/// any one function, more than that of the unit's functions together.
const MIDDLING: u32 = 9;

#[inline(never)]
fn middling_document() -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    slow();
    any::<false>(MIDDLING)
}

/// A cycle whose functions make fewer than `QUIET_AT_END_CALLS` calls each per invocation, but more together (a
/// parser of many small functions: winnow's arithmetic parser counts 180 to 3,200 of each of 20): the unit (the
/// cycle and the leaf under it) goes quiet at the end of the first invocation that counted that many of its calls
/// together, not after `CALLTIME_QUIET_AFTER` (3) invocations, and the leaf with the cycle. Counts stay exact
/// until then.
#[test]
fn a_cycle_goes_quiet_once_one_invocation_counted_enough_calls_of_its_unit_together() {
    let name = "a_cycle_goes_quiet_once_one_invocation_counted_enough_calls_of_its_unit_together";
    if is_child(name) {
        for _ in 0..6 {
            black_box(middling_document());
        }
        return;
    }
    let trace = run_ok(name, &[]);
    let mut retired: Vec<u32> = trace.retirements.iter().map(|r| r.index).collect();
    retired.sort_unstable();
    assert_eq!(retired, [0, 1, 2, 3, 4], "the cluster (0: its nested calls) and the leaf under it; not `slow`");
    let first = &trace.invocations[0];
    assert!(first.nodes.iter().any(|n| n.folded.is_some()), "the first invocation folded: {}", first.shape());
    let mut quiet: Vec<u32> = trace.quiet.iter().map(|q| q.0).collect();
    quiet.sort_unstable();
    assert_eq!(quiet, [0, 1, 2, 3, 4], "the cycle and the leaf went quiet");
    let quiet_at = |index: u32| trace.quiet.iter().find(|q| q.0 == index).unwrap().1;
    let parses = (1u64 << (MIDDLING + 1)) - 1;
    let per_invocation = [(0, parses), (1, parses), (2, parses), (3, 2 * parses), (4, 1 << (MIDDLING + 1)), (5, 1)];
    let third = &trace.invocations[2];
    for index in 0..5 {
        assert!(quiet_at(index) < third.start, "{index}: quiet after the third invocation began");
        assert!(trace
            .invocations
            .iter()
            .all(|inv| inv.start > quiet_at(index) || inv.start + inv.duration < quiet_at(index)));
    }
    for (i, inv) in trace.invocations.iter().enumerate() {
        for (index, calls) in per_invocation {
            let (nodes, counted) = calls_in(&trace, i, index);
            if index == 5 || inv.start + inv.duration < quiet_at(index) {
                assert_eq!(nodes + counted, calls, "function {index} in invocation {i}: {}", inv.shape());
            } else {
                assert_eq!(counted, 0, "function {index} in invocation {i}, quiet: {}", inv.shape());
            }
        }
    }
}

/// The same folded recursion over 20 us of work per leaf: its probes cost a small share of what they measure, so
/// nothing retires, at the fold or later, and every folded path keeps its exact count.
#[test]
fn a_folded_cluster_over_slow_work_stays_probed() {
    if is_child("a_folded_cluster_over_slow_work_stays_probed") {
        for _ in 0..3 {
            black_box(parse_slowish(DEEP - 1));
        }
        return;
    }
    let trace = run_ok("a_folded_cluster_over_slow_work_stays_probed", &[]);
    assert!(trace.retirements.is_empty(), "{:?}", trace.retirements);
    let parses = (1u64 << DEEP) - 1;
    for (i, inv) in trace.invocations.iter().enumerate() {
        assert!(inv.nodes.iter().any(|n| n.folded.is_some()), "invocation {i} folded: {}", inv.shape());
        for (index, calls) in [(0, parses), (1, parses), (2, parses), (3, 2 * parses), (7, parses + 1)] {
            assert_eq!(calls_in(&trace, i, index), (calls, 0), "function {index} in invocation {i}");
        }
    }
}

/// Busy for about 20 us.
#[inline(never)]
fn slowish(i: u64) -> u64 {
    let __calltime_guard = enter(7);
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(20) {
        black_box(());
    }
    i
}

#[inline(never)]
fn parse_slowish(depth: u32) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    let __calltime_guard1 = enter(1);
    let __calltime_guard2 = enter(2);
    (0..2).map(|_| value_slowish(depth)).sum()
}

#[inline(never)]
fn value_slowish(depth: u32) -> u64 {
    let __calltime_guard = enter(3);
    if depth == 0 {
        slowish(u64::from(depth))
    } else {
        parse_slowish(depth - 1)
    }
}

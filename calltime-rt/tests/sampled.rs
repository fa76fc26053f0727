//! Invocations sampled for cost (`sampler.rs`, issue 11): a root called often whose recorded invocations would spend
//! far more than the budget of their time in probes records only a random minority of them; the others run
//! unrecorded, counted (`sampled_for_cost`, neither dropped nor sampled out) and timed, so the root's count stays
//! exact and its mean can be taken over all of them.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_ok, Trace};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "plan-sampled", table: "", functions: 4 };

const ROOTS: u64 = 200_000;
/// Nodes per invocation: the root, 29 calls.
const NODES: u64 = 30;

/// Function indices: 0 the root, 1 a step called 14 times, 2 the leaf under each step, 3 a last call.
fn root(seed: u64) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    let mut sum = seed;
    for i in 0..14 {
        sum = step(sum ^ i);
    }
    last(sum)
}

fn step(x: u64) -> u64 {
    let __calltime_guard = enter(1);
    leaf(x).wrapping_mul(31)
}

fn leaf(x: u64) -> u64 {
    let __calltime_guard = enter(2);
    black_box(x.rotate_left(7) ^ 0x5bd1e995)
}

fn last(x: u64) -> u64 {
    let __calltime_guard = enter(3);
    black_box(x)
}

/// (kept, dropped, sampled for cost) of the last `stats` line (its 16th field: docs/trace-format.md).
fn counts(trace: &Trace) -> (u64, u64, u64) {
    let f = &trace.stats_fields;
    assert_eq!(f.len(), 16, "the stats line of a sampled run has 16 fields: {f:?}");
    (f[1], f[3], f[15])
}

#[test]
fn a_busy_root_records_a_minority_within_the_budget() {
    if is_child("a_busy_root_records_a_minority_within_the_budget") {
        let mut sum = 0;
        for i in 0..ROOTS {
            sum ^= root(i);
        }
        black_box(sum);
        return;
    }
    // Retirement would take the tiny calls out of the trees (retire.rs tests that): kept off its minimum, so every
    // recorded invocation has its 30 nodes; the trees are kept whatever their number (no limit).
    let trace = run_ok(
        "a_busy_root_records_a_minority_within_the_budget",
        &[
            ("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"),
            ("CALLTIME_MAX_INVOCATIONS", "1000000"),
            ("CALLTIME_ROTATE_BYTES", "0"),
        ],
    );
    let [seen, _, sampled_out, _, _] = trace.stats.expect("a stats line at exit");
    let (kept, dropped, for_cost) = counts(&trace);
    assert_eq!((seen, sampled_out), (ROOTS, 0));
    assert_eq!(kept + dropped + for_cost, seen, "every root is recorded or sampled for cost");
    assert!(for_cost > ROOTS / 2, "a minority is recorded: {for_cost} of {ROOTS} skipped");
    assert!(trace.header.iter().any(|l| l.contains(" cost_budget_pct=5")), "{:?}", trace.header);
    // The root's count is exact: the skipped ones are in its `sampled` record, every one timed.
    let [[func, skipped, timed, timed_ns]] = trace.sampled[..] else { panic!("one sampled root: {:?}", trace.sampled) };
    assert_eq!((func, skipped, timed), (0, for_cost, for_cost));
    assert_eq!(trace.invocations.len() as u64, kept);
    assert!(trace.invocations.iter().all(|inv| inv.node_count == NODES), "recorded invocations are whole");
    // The first ones are always recorded (a short run keeps every tree).
    let first: Vec<u64> = trace.invocations.iter().take(100).map(|inv| inv.seq).collect();
    assert_eq!(first, (0..100).collect::<Vec<_>>());
    // What recording cost, measured: the recorded invocations' time beyond a skipped one's mean, against the time
    // of all the roots. Under the budget (5%), with room for a loaded machine's noise.
    let recorded_ns: u64 = trace.invocations.iter().map(|inv| inv.duration).sum();
    let skipped_mean = timed_ns as f64 / timed as f64;
    let extra = recorded_ns as f64 - kept as f64 * skipped_mean;
    let share = extra / (recorded_ns + timed_ns) as f64;
    assert!(share < 0.075, "recording took {:.1}% of the roots' time", share * 100.0);
}

#[test]
fn exact_records_every_invocation() {
    if is_child("exact_records_every_invocation") {
        for i in 0..20_000 {
            black_box(root(i));
        }
        return;
    }
    let trace = run_ok("exact_records_every_invocation", &[("CALLTIME_EXACT", "1")]);
    let [seen, kept, _, dropped, _] = trace.stats.expect("a stats line at exit");
    assert_eq!(seen, 20_000);
    assert_eq!(kept + dropped, seen, "none sampled for cost");
    assert!(trace.sampled.is_empty());
    assert!(trace.header.iter().any(|l| l.contains(" cost_budget_pct=0")), "{:?}", trace.header);
}

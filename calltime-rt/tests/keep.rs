//! Choosing which trees to keep (issue 14 item 2): `CALLTIME_SLOWER_THAN_NS`, `CALLTIME_KEEP_SLOWEST` and
//! `CALLTIME_KEEP_SAMPLE`, decided at the root's exit; what is left out is counted under its cause, and the stats
//! line gives the span of root starts the trees were chosen from.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_ok, Inv, Trace};
use std::hint::black_box;
use std::time::Duration;

static PLAN: PlanInfo = PlanInfo { id: "plan-keep", table: "", functions: 3 };

/// Function indices: 0 the root, 1 a quick step, 2 the step of a slow invocation (it sleeps).
fn root(slow: Option<Duration>) {
    let __calltime_guard = enter_root(0, &PLAN);
    match slow {
        Some(pause) => slow_step(pause),
        None => quick_step(),
    }
}

fn quick_step() {
    let __calltime_guard = enter(1);
    black_box(());
}

fn slow_step(pause: Duration) {
    let __calltime_guard = enter(2);
    std::thread::sleep(pause);
}

/// Stats fields past the five of version 2 (docs/trace-format.md): dropped_limit, dropped_queue_full,
/// dropped_no_buffer, retired_functions, left_out_fast, left_out_unselected, first_root_ns, last_root_ns,
/// dropped_cap (0 here: these runs stay far under the hourly byte cap).
fn chosen(trace: &Trace) -> [u64; 4] {
    let f = &trace.stats_fields;
    assert_eq!(f.len(), 14, "the stats line has 14 fields: {f:?}");
    assert_eq!(f[13], 0, "no tree dropped by the byte cap: {f:?}");
    [f[9], f[10], f[11], f[12]]
}

fn is_slow(inv: &Inv) -> bool {
    inv.nodes.iter().any(|n| n.index == 2)
}

const ROOTS: u64 = 2_000;
/// Every 50th root sleeps: 40 slow invocations.
fn slow_at(i: u64) -> bool {
    i % 50 == 7
}

#[test]
fn slower_than_keeps_exactly_the_slow_invocations() {
    if is_child("slower_than_keeps_exactly_the_slow_invocations") {
        for i in 0..ROOTS {
            root(slow_at(i).then_some(Duration::from_millis(3)));
        }
        return;
    }
    let threshold_ns = 2_000_000;
    let trace = run_ok("slower_than_keeps_exactly_the_slow_invocations", &[("CALLTIME_SLOWER_THAN_NS", "2000000")]);
    let [seen, kept, ..] = trace.stats.expect("a stats line at exit");
    let [fast, unselected, first, last] = chosen(&trace);
    assert_eq!(seen, ROOTS);
    // Every sleeping invocation is kept; a quick one only if the machine stalled it past the threshold.
    let slow = trace.invocations.iter().filter(|inv| is_slow(inv)).count() as u64;
    assert_eq!(slow, ROOTS / 50, "every slow invocation is kept");
    assert!(trace.invocations.iter().all(|inv| inv.duration > threshold_ns), "only slower ones are kept");
    assert_eq!(trace.invocations.len() as u64, kept);
    assert_eq!((kept + fast, unselected), (seen, 0), "the rest are counted as not slower");
    assert!(first < last, "the span of root starts: {first} to {last}");
    assert!(trace.header.iter().any(|l| l.contains(" slower_than_ns=2000000 keep_slowest=0 keep_sample=0")));
}

#[test]
fn keep_slowest_keeps_the_k_slowest_of_the_whole_run() {
    if is_child("keep_slowest_keeps_the_k_slowest_of_the_whole_run") {
        // The slow ones come late in the run, longest last: a "first N" policy would keep none of them.
        for i in 0..ROOTS {
            let pause = (i >= ROOTS - 8).then(|| Duration::from_millis(20 + (i - (ROOTS - 8)) * 15));
            root(pause);
        }
        return;
    }
    let trace = run_ok("keep_slowest_keeps_the_k_slowest_of_the_whole_run", &[("CALLTIME_KEEP_SLOWEST", "5")]);
    let [seen, kept, _, dropped, _] = trace.stats.expect("a stats line at exit");
    let [fast, unselected, ..] = chosen(&trace);
    assert_eq!((seen, kept, dropped, fast), (ROOTS, 5, 0, 0));
    assert_eq!(unselected, ROOTS - 5);
    assert_eq!(trace.invocations.len(), 5);
    assert!(trace.invocations.iter().all(is_slow), "the five kept are slow ones");
    // Written in completion order. Five roots sleep 65 ms or more, so the five slowest all took that long; which
    // five they are is the machine's to say (under load a 50 ms sleep can overrun a 65 ms one).
    let seqs: Vec<u64> = trace.invocations.iter().map(|inv| inv.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let durations: Vec<u64> = trace.invocations.iter().map(|inv| inv.duration).collect();
    assert!(durations.iter().all(|&d| d >= 65_000_000), "{durations:?}");
}

#[test]
fn keep_sample_spreads_over_the_whole_run() {
    if is_child("keep_sample_spreads_over_the_whole_run") {
        // More roots than the default --max-invocations would ever admit: a sample takes no "first N".
        for _ in 0..120_000 {
            root(None);
        }
        return;
    }
    let trace = run_ok("keep_sample_spreads_over_the_whole_run", &[("CALLTIME_KEEP_SAMPLE", "100")]);
    let [seen, kept, _, dropped, _] = trace.stats.expect("a stats line at exit");
    let [fast, unselected, first, last] = chosen(&trace);
    assert_eq!((seen, kept, dropped, fast, unselected), (120_000, 100, 0, 0, 119_900));
    assert_eq!(trace.invocations.len(), 100);
    // 100 uniform picks all missing the first (or last) fifth of the run: 0.8^100, about 2e-10.
    let fifth = (last - first) / 5;
    assert!(trace.invocations.iter().any(|inv| inv.start < first + fifth), "none from the first fifth");
    assert!(trace.invocations.iter().any(|inv| inv.start > last - fifth), "none from the last fifth");
    let seqs: Vec<u64> = trace.invocations.iter().map(|inv| inv.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "written in completion order: {seqs:?}");
}

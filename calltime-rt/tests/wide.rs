//! Retirement past the 126 slots the state byte used to hold, and a rule that one slow call cannot hold back. Each
//! scenario runs in its own child process.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_ok, Trace};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Function 0 is the root; 1..=TINIES the tiny functions; then `pausing`.
const TINIES: u32 = 200;
const PAUSING: u32 = TINIES + 1;
static PLAN: PlanInfo = PlanInfo { id: "plan-wide", table: "", functions: TINIES + 2 };

/// One of the tiny functions, by its index (a runtime value here; the rewrite passes a constant).
#[inline(never)]
fn tiny(index: u32, i: u64) -> u64 {
    let __calltime_guard = enter(index);
    black_box(i) ^ u64::from(index)
}

/// A tiny function whose one call `pause` spins for 5 ms (a preemption, as under load).
#[inline(never)]
fn pausing(pause: bool) -> u64 {
    let __calltime_guard = enter(PAUSING);
    if pause {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(5) {
            black_box(());
        }
    }
    black_box(1)
}

/// Calls of function `index` in the trees (a node or a path's count) and in `r` lines.
fn calls_of(trace: &Trace, index: u32) -> (u64, u64) {
    let nodes = trace.invocations.iter().flat_map(|inv| &inv.nodes).filter(|n| n.index == index);
    let in_trees = nodes.map(|n| n.folded.map_or(1, |f| f.calls)).sum();
    let lines = trace.invocations.iter().flat_map(|inv| &inv.retired).filter(|r| r.0 == index);
    (in_trees, lines.map(|r| r.1).sum())
}

const WIDE_ROUNDS: u64 = 40;
const WIDE_CALLS_EACH: u64 = 10;

#[test]
fn more_than_126_functions_retire_and_their_calls_stay_exact() {
    let name = "more_than_126_functions_retire_and_their_calls_stay_exact";
    if is_child(name) {
        for _ in 0..WIDE_ROUNDS {
            {
                let __calltime_guard = enter_root(0, &PLAN);
                for i in 0..WIDE_CALLS_EACH {
                    for index in 1..=TINIES {
                        tiny(index, i);
                    }
                }
            }
            calltime_rt::flush();
        }
        return;
    }
    // Counted in every invocation (never quiet), so every count is exact.
    let env = [("CALLTIME_RETIRE_MIN_CALLS", "50"), ("CALLTIME_QUIET_AFTER", "0")];
    let trace = run_ok(name, &env);
    let mut retired: Vec<u32> = trace.retirements.iter().map(|r| r.index).collect();
    retired.sort_unstable();
    assert_eq!(retired, (1..=TINIES).collect::<Vec<_>>(), "every tiny function retires (126 did before)");
    for index in 1..=TINIES {
        let (in_trees, after) = calls_of(&trace, index);
        assert_eq!(in_trees + after, WIDE_ROUNDS * WIDE_CALLS_EACH, "function {index}: {in_trees} + {after}");
        assert!(after > 0, "function {index} was counted after it retired");
    }
    let last = trace.invocations.last().unwrap();
    assert_eq!(last.shape(), "0", "the last invocation records only its root");
    assert_eq!(last.retired.len(), TINIES as usize, "and counts every tiny function: {:?}", last.retired);
}

const PAUSE_ROUNDS: u64 = 10;
const PAUSE_CALLS_EACH: u64 = 500;

#[test]
fn one_paused_call_does_not_keep_a_fast_function_probed() {
    let name = "one_paused_call_does_not_keep_a_fast_function_probed";
    if is_child(name) {
        for round in 0..PAUSE_ROUNDS {
            {
                let __calltime_guard = enter_root(0, &PLAN);
                for i in 0..PAUSE_CALLS_EACH {
                    // Past the calls left out as warm-up: the pause is among the calls the rule reads.
                    pausing(round == 0 && i == 300);
                }
            }
            calltime_rt::flush();
        }
        return;
    }
    let trace = run_ok(name, &[("CALLTIME_QUIET_AFTER", "0")]);
    // With a mean, 5 ms over 5,000 calls is 1 us a call, far above the bar: it never retired here.
    let [r] = trace.retirements[..] else { panic!("one retirement: {:?}", trace.retirements) };
    assert_eq!(r.index, PAUSING);
    assert!(r.calls < 2 * 1000, "retired soon after min_calls (1000): {r:?}");
    assert!(r.mean_ns < 1_000, "its estimate leaves the pause out: {r:?}");
    let (in_trees, after) = calls_of(&trace, PAUSING);
    assert_eq!(in_trees + after, PAUSE_ROUNDS * PAUSE_CALLS_EACH);
}

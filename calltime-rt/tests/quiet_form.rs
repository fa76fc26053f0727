//! The closure form the rewrite gives bodies under `IN_PLACE_BODY` bytes of source (`run_quiet_in`): the body in
//! place for quiet calls, one out-of-line call (`run_unquiet_in`) for recorded and counted ones. Each kind of call
//! runs the body once and returns its value (a result too big for registers, which comes back through the
//! out-of-line call's own slot, and a borrow of a capture), counts stay exact, and a panic in a recorded call
//! unwinds through the out-of-line call and closes the node as panicked. Each scenario runs in its own child process.

mod common;

use calltime_rt::__private::{enter_root, quiet_now, retire_now, run_quiet_in, PlanInfo, States};
use common::{is_child, run_ok};
use std::cell::Cell;

static PLAN: PlanInfo = PlanInfo { id: "plan-quiet-form", table: "", functions: 4 };
/// The table the rewrite declares in each crate root (`__CALLTIME_STATE`).
static STATES: States<4> = States::new();

const CALLS: u64 = 10;

// Function indices: 0 root, 1 triple, 2 first, 3 may_panic.
#[inline(never)]
fn triple(runs: &Cell<u64>, x: u64) -> (u64, u64, u8) {
    run_quiet_in(&STATES, 1, move || {
        runs.set(runs.get() + 1);
        (x, x * 2, 7)
    })
}

#[inline(never)]
fn first(words: &[String]) -> &str {
    run_quiet_in(&STATES, 2, move || words[0].as_str())
}

#[inline(never)]
fn may_panic(fail: bool) -> u32 {
    run_quiet_in(&STATES, 3, move || {
        if fail {
            panic!("a panic inside the probed body");
        }
        1
    })
}

/// Three invocations: `triple` and `first` recorded, then retired (counted), then quiet; then a panic.
fn recorded_counted_quiet_then_a_panic() {
    let runs = Cell::new(0);
    let words = vec!["w".to_string()];
    for phase in 0..3 {
        if phase == 1 {
            retire_now(1);
            retire_now(2);
        }
        if phase == 2 {
            quiet_now(1);
            quiet_now(2);
        }
        let _root = enter_root(0, &PLAN);
        for x in 0..CALLS {
            assert_eq!(triple(&runs, x), (x, x * 2, 7));
            assert_eq!(first(&words), "w");
        }
    }
    assert_eq!(runs.get(), 3 * CALLS, "the body runs once per call, whatever the kind");
    let caught = std::panic::catch_unwind(|| {
        let _root = enter_root(0, &PLAN);
        may_panic(true)
    });
    assert!(caught.is_err());
    let _root = enter_root(0, &PLAN);
    assert_eq!(may_panic(false), 1);
}

#[test]
fn recorded_counted_and_quiet_calls_run_the_body_once_and_panics_close_the_node() {
    let name = "recorded_counted_and_quiet_calls_run_the_body_once_and_panics_close_the_node";
    if is_child(name) {
        recorded_counted_quiet_then_a_panic();
        return;
    }
    let trace = run_ok(name, &[]);
    let recorded = format!("0[{}]", vec!["1 2"; CALLS as usize].join(" "));
    assert_eq!(trace.shapes(), [recorded.as_str(), "0", "0", "0![3!]", "0[3]"]);
    assert_eq!(trace.invocations[1].retired, [(1, CALLS), (2, CALLS)], "counted while retired");
    assert!(trace.invocations[2].retired.is_empty(), "quiet: neither recorded nor counted");
    let quiet: Vec<u32> = trace.quiet.iter().map(|q| q.0).collect();
    assert_eq!(quiet, [1, 2]);
}

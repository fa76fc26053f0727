//! The bodies the rewrite writes twice (`quiet_in!`, `quiet_guard_in!`) called in a loop, on two threads: whatever
//! the thread, every call runs the body once and returns its value, recorded calls are nodes, counted calls are
//! counts, and quiet ones are neither, a thread's first call after the function went quiet included (a quiet test
//! kept per thread learns it there: branch quietloop, docs/truth-bench.md "Twelfth round"). Each scenario runs in
//! its own child process.

mod common;

use calltime_rt::__private::{enter_root, quiet_guard_in, quiet_in, quiet_now, retire_now, PlanInfo, States};
use common::{is_child, run_ok};
use std::cell::Cell;

static PLAN: PlanInfo = PlanInfo { id: "plan-quiet-loop", table: "", functions: 3 };
/// The table the rewrite declares in each crate root (`__CALLTIME_STATE`).
static STATES: States<3> = States::new();

/// Bytes scanned per root.
const BYTES: u64 = 6;

thread_local! {
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

// Function indices: 0 root (`scan`), 1 class_of, 2 owned_len.
#[inline(always)]
fn class_of(byte: u8) -> u8 {
    quiet_in!(&STATES, 1, {
        RUNS.with(|r| r.set(r.get() + 1));
        byte % 3
    })
}

#[inline(never)]
fn owned_len(text: String) -> usize {
    quiet_guard_in!(&STATES, 2, {
        RUNS.with(|r| r.set(r.get() + 1));
        text.len()
    })
}

/// A lexer's loop calling both functions once per byte.
fn scan(text: &[u8]) -> u64 {
    let _root = enter_root(0, &PLAN);
    let mut sum = 0u64;
    for &byte in text {
        sum += u64::from(class_of(byte)) + owned_len(String::from("ab")) as u64;
    }
    sum
}

fn check_scan() {
    let text = [0u8, 1, 2, 3, 4, 5];
    let before = RUNS.with(Cell::get);
    assert_eq!(scan(&text), 6 + 2 * BYTES, "every kind of call returns the body's value");
    assert_eq!(RUNS.with(Cell::get) - before, 2 * BYTES, "the bodies run once per call, whatever the kind");
}

/// Recorded, then counted, then quiet on this thread; then quiet on a new thread, whose first call of each function
/// goes out of line once to learn it, and on this one again.
fn recorded_counted_quiet_then_another_thread() {
    check_scan();
    retire_now(1);
    retire_now(2);
    check_scan();
    quiet_now(1);
    quiet_now(2);
    check_scan();
    // The trees so far in order, before the other thread's.
    calltime_rt::flush();
    std::thread::spawn(|| {
        check_scan();
        check_scan();
    })
    .join()
    .unwrap();
    check_scan();
}

#[test]
fn bodies_written_twice_are_quiet_on_every_thread_once_their_function_went_quiet() {
    let name = "bodies_written_twice_are_quiet_on_every_thread_once_their_function_went_quiet";
    if is_child(name) {
        recorded_counted_quiet_then_another_thread();
        return;
    }
    let trace = run_ok(name, &[]);
    let recorded = format!("0[{}]", vec!["1 2"; BYTES as usize].join(" "));
    assert_eq!(trace.shapes(), [recorded.as_str(), "0", "0", "0", "0", "0"]);
    assert_eq!(trace.invocations[1].retired, [(1, BYTES), (2, BYTES)], "counted while retired");
    for (i, invocation) in trace.invocations.iter().enumerate().skip(2) {
        assert!(invocation.retired.is_empty(), "invocation {i}: quiet, neither recorded nor counted");
    }
    let quiet: Vec<u32> = trace.quiet.iter().map(|q| q.0).collect();
    assert_eq!(quiet, [1, 2]);
}

//! Recording started off (`CALLTIME_START_OFF=1`, `cargo calltime --start-off`): nothing records, so nothing
//! retires, and a body written twice would run its out-of-line copy on every call. Its function goes quiet in its
//! crate's table at its first call outside any invocation instead, and is probed again once `ctl on` switches
//! recording on: the invocations after the switch record its calls. Each scenario runs in its own child process.

mod common;

use calltime_rt::__private::{enter_root, is_quiet_in, quiet_in, run_quiet_in, PlanInfo, States};
use common::{is_child, run_ok};
use std::cell::Cell;

static PLAN: PlanInfo = PlanInfo { id: "plan-start-off", table: "", functions: 4 };
/// The table the rewrite declares in each crate root (`__CALLTIME_STATE`).
static STATES: States<4> = States::new();

/// Calls of `double` per root.
const CALLS: u64 = 5;
/// Roots run after recording is switched on.
const ROOTS_ON: usize = 3;

// Function indices: 0 root, 1 double, 2 never_called, 3 triple (written twice, as the rewrite writes small bodies).
#[inline(never)]
fn double(runs: &Cell<u64>, x: u64) -> u64 {
    run_quiet_in(&STATES, 1, move || {
        runs.set(runs.get() + 1);
        x * 2
    })
}

#[inline(never)]
fn triple(runs: &Cell<u64>, x: u64) -> u64 {
    quiet_in!(&STATES, 3, {
        runs.set(runs.get() + 1);
        x * 3
    })
}

fn root(runs: &Cell<u64>) -> u64 {
    let _root = enter_root(0, &PLAN);
    (0..CALLS).map(|x| double(runs, x) + triple(runs, x)).sum()
}

/// Writes `<seq> on` to the control file as `ctl` does, and waits for the status file to say it applied.
fn switch_on() {
    let dir = std::path::PathBuf::from(std::env::var_os("CALLTIME_CONTROL_DIR").unwrap());
    let pid = std::process::id();
    let tmp = dir.join(format!("{pid}.cmd.tmp"));
    std::fs::write(&tmp, "1 on\n").unwrap();
    std::fs::rename(&tmp, dir.join(format!("{pid}.cmd"))).unwrap();
    let status = dir.join(format!("{pid}.status"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&status).is_ok_and(|s| s.lines().any(|l| l == "applied=1")) {
        assert!(std::time::Instant::now() < deadline, "the runtime did not apply the command");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn functions_called_while_started_off_go_quiet_until_recording_is_switched_on() {
    let name = "functions_called_while_started_off_go_quiet_until_recording_is_switched_on";
    if is_child(name) {
        let runs = Cell::new(0);
        assert!(!is_quiet_in(&STATES, 1), "probed before the runtime starts");
        // The first root starts the runtime, off: it records nothing, and `double` goes quiet at its first call.
        assert_eq!(root(&runs), 50);
        assert!(is_quiet_in(&STATES, 1) && is_quiet_in(&STATES, 3), "quiet while off");
        assert!(!is_quiet_in(&STATES, 2), "a function never called stays as it was");
        assert_eq!(double(&runs, 21), 42, "a quiet call outside any root runs the body as well");
        switch_on();
        assert!(!is_quiet_in(&STATES, 1) && !is_quiet_in(&STATES, 3), "probed again once recording is on");
        for _ in 0..ROOTS_ON {
            assert_eq!(root(&runs), 50);
        }
        assert_eq!(runs.get(), (1 + ROOTS_ON as u64) * CALLS * 2 + 1, "the body runs once per call, whatever the kind");
        return;
    }
    let dir = std::env::temp_dir().join(format!("calltime-start-off-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = run_ok(name, &[("CALLTIME_START_OFF", "1"), ("CALLTIME_CONTROL_DIR", dir.to_str().unwrap())]);
    let _ = std::fs::remove_dir_all(&dir);
    // Only the roots after the switch are recorded, each with every call of `double` and `triple` in it (a body
    // written twice, whose quiet test must not keep the quiet while off).
    let recorded = format!("0[{}]", vec!["1 3"; CALLS as usize].join(" "));
    assert_eq!(trace.shapes(), vec![recorded; ROOTS_ON]);
    assert!(trace.quiet.is_empty(), "going quiet while off is not a retirement: {:?}", trace.quiet);
}

/// Threads spawned while recording is off, alive across the switch.
const THREADS: usize = 3;

/// Several threads learn the quiet-while-off state at their calls while off, stay alive across `ctl on`, then run
/// roots: every one of their calls of `triple` (written twice) must be recorded. A quiet test that keeps a copy of
/// the state per thread (branch quietloop2's reverted form, docs/truth-bench.md "Thirteenth round") must clear each
/// thread's copy, which `ctl on` on another thread cannot reach; with it taken out, this test failed.
#[test]
fn each_thread_forgets_the_quiet_while_off_state_when_recording_is_switched_on() {
    let name = "each_thread_forgets_the_quiet_while_off_state_when_recording_is_switched_on";
    if is_child(name) {
        let runs = Cell::new(0);
        // Starts the runtime, off.
        assert_eq!(root(&runs), 50);
        let (off, on) = (std::sync::Barrier::new(THREADS + 1), std::sync::Barrier::new(THREADS + 1));
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    let runs = Cell::new(0);
                    // Calls while off, inside a root that records nothing and outside any: the thread's copy learns
                    // the quiet state at its first call that finds it in the table.
                    assert_eq!(root(&runs) + root(&runs), 100);
                    assert_eq!(triple(&runs, 7), 21);
                    off.wait();
                    on.wait();
                    for _ in 0..ROOTS_ON {
                        assert_eq!(root(&runs), 50);
                    }
                    assert_eq!(runs.get(), (2 + ROOTS_ON as u64) * CALLS * 2 + 1);
                });
            }
            off.wait();
            switch_on();
            on.wait();
        });
        return;
    }
    let dir = std::env::temp_dir().join(format!("calltime-start-off-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = run_ok(name, &[("CALLTIME_START_OFF", "1"), ("CALLTIME_CONTROL_DIR", dir.to_str().unwrap())]);
    let _ = std::fs::remove_dir_all(&dir);
    let recorded = format!("0[{}]", vec!["1 3"; CALLS as usize].join(" "));
    assert_eq!(trace.shapes(), vec![recorded; THREADS * ROOTS_ON], "every call of the threads' roots recorded");
    assert!(trace.quiet.is_empty(), "going quiet while off is not a retirement: {:?}", trace.quiet);
}

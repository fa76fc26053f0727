//! A process that forks without exec (unix): the child has no writer thread and shares the parent's trace file
//! descriptor, so it records nothing and writes nothing, even from its exit handler, and does not hang there; the
//! parent's trace holds exactly the parent's invocations, whole. (docs/trace-format.md, "Files of a run".)
#![cfg(unix)]

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_ok};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "plan-fork", table: "", functions: 2 };

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
}

/// `waitpid`'s WNOHANG, and SIGKILL: the same on Linux and macOS.
const WNOHANG: i32 = 1;
const SIGKILL: i32 = 9;

/// The child's wait status, or `None` (the child killed) when it has not exited within 20 s: before the fix, its
/// exit handler waited forever for a lock the parent's writer thread held when it forked.
fn wait_for(pid: i32) -> Option<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut status = 0;
    while std::time::Instant::now() < deadline {
        // SAFETY: `pid` is our child; `status` is a valid out pointer.
        if unsafe { waitpid(pid, &mut status, WNOHANG) } == pid {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: our own child, which has not been reaped.
    unsafe {
        kill(pid, SIGKILL);
        waitpid(pid, &mut status, 0);
    }
    None
}

fn root(step: u64) {
    let __calltime_guard = enter_root(0, &PLAN);
    leaf(step);
}

fn leaf(step: u64) {
    let __calltime_guard = enter(1);
    black_box(step);
}

/// Roots before the fork, in the parent after it, and in the child (which would add its own to the parent's file
/// if it wrote from its copy of the runtime).
const BEFORE: u64 = 30;
const PARENT_AFTER: u64 = 20;
const CHILD: u64 = 50;

#[test]
fn a_child_forked_without_exec_records_nothing_and_the_parent_everything() {
    if is_child("a_child_forked_without_exec_records_nothing_and_the_parent_everything") {
        for step in 0..BEFORE {
            root(step);
        }
        // SAFETY: fork has no preconditions; the child below only runs roots and exits.
        let pid = unsafe { fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            for step in 0..CHILD {
                root(step);
            }
            // Runs the C library's exit handlers, the runtime's included: the child must neither write nor hang.
            calltime_rt::flush();
            std::process::exit(7);
        }
        let status = wait_for(pid).expect("the child hung in its exit handler");
        // WIFEXITED and WEXITSTATUS, as both Linux and macOS encode them.
        assert_eq!((status & 0x7f, (status >> 8) & 0xff), (0, 7), "the child exited on its own, status {status:#x}");
        for step in 0..PARENT_AFTER {
            root(step);
        }
        return;
    }
    let trace = run_ok("a_child_forked_without_exec_records_nothing_and_the_parent_everything", &[]);
    assert_eq!(trace.invocations.len() as u64, BEFORE + PARENT_AFTER, "only the parent's roots");
    let seqs: Vec<u64> = trace.invocations.iter().map(|inv| inv.seq).collect();
    assert_eq!(seqs, (0..BEFORE + PARENT_AFTER).collect::<Vec<_>>(), "one writer, one sequence");
    assert!(trace.invocations.iter().all(|inv| inv.nodes.len() == 2), "whole trees");
    assert_eq!(trace.stats_fields[..2], [BEFORE + PARENT_AFTER, BEFORE + PARENT_AFTER], "seen and kept: the parent's");
}

//! A process that forks without exec (unix), as a prefork server does: the child records its own roots in its own
//! file (`<CALLTIME_OUT>.p<pid>`, as a spawned copy of the program does), from its exit handler without hanging on a
//! lock the parent's writer held at the fork; the parent's file holds exactly the parent's invocations, whole; and
//! the tool's reader merges the two. (docs/trace-format.md, "Files of a run".)
#![cfg(unix)]

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, out_path, parse, read_trace, run_child};
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

/// Runs test `name` as a child process (which forks), with the files of earlier runs' forked children removed (they
/// would be merged into this run's); checks it succeeded. Returns the trace path, the prefix of forked children's
/// files (`<out>.p`), the trace's text and the pids it printed (`forked child pid=N`).
fn run_forking(name: &str) -> (std::path::PathBuf, String, String, Vec<u32>) {
    let out = out_path(name);
    let stale = format!("{}.p", out.file_name().unwrap().to_string_lossy());
    for entry in std::fs::read_dir(out.parent().unwrap()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&stale) {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let (output, text) = run_child(name, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the forking process failed: {}\n{stdout}", output.status);
    let pids: Vec<u32> = stdout
        .lines()
        // The harness prints the test's name on the same line.
        .filter_map(|line| line.split_once("forked child pid=").and_then(|(_, pid)| pid.trim().parse().ok()))
        .collect();
    assert!(!pids.is_empty(), "no child pid in:\n{stdout}");
    (out, stale, text, pids)
}

/// Forks a child that runs `CHILD` roots and exits with 7, prints its pid for the parent test, and checks that it
/// exited so within 20 s (`hung`: what a child that did not means).
fn fork_a_child_running_roots(hung: &str) {
    // SAFETY: fork has no preconditions; the child below only runs roots and exits.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        for step in 0..CHILD {
            root(step);
        }
        std::process::exit(7);
    }
    println!("forked child pid={pid}");
    let status = wait_for(pid).expect(hung);
    // WIFEXITED and WEXITSTATUS, as both Linux and macOS encode them.
    assert_eq!((status & 0x7f, (status >> 8) & 0xff), (0, 7), "status {status:#x}");
}

fn root(step: u64) {
    let __calltime_guard = enter_root(0, &PLAN);
    leaf(step);
}

fn leaf(step: u64) {
    let __calltime_guard = enter(1);
    black_box(step);
}

/// Whole invocation records in a trace text being written (each ends with an `end` line).
fn whole_records(text: &str) -> u64 {
    text.lines().filter(|line| *line == "end" || line.starts_with("end ")).count() as u64
}

/// Roots before the fork, in the parent after it, and in the child.
const BEFORE: u64 = 30;
const PARENT_AFTER: u64 = 20;
const CHILD: u64 = 50;
const NAME: &str = "a_forked_child_records_its_own_roots_in_its_own_file";

#[test]
fn a_forked_child_records_its_own_roots_in_its_own_file() {
    if is_child(NAME) {
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
            // Its own writer thread writes them while it runs, before any exit drain (within 10 s, under load).
            let own = format!("{}.p{}", out_path(NAME).display(), std::process::id());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while whole_records(&read_trace(&own)) < CHILD && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let written_while_running = whole_records(&read_trace(&own));
            // Runs the C library's exit handlers, the runtime's included: the child drains the rest and exits.
            std::process::exit(if written_while_running == CHILD { 7 } else { 8 });
        }
        println!("forked child pid={pid}");
        let status = wait_for(pid).expect("the child hung in its exit handler");
        // WIFEXITED and WEXITSTATUS, as both Linux and macOS encode them.
        assert_eq!((status & 0x7f, (status >> 8) & 0xff), (0, 7), "the child exited on its own, status {status:#x}");
        for step in 0..PARENT_AFTER {
            root(step);
        }
        return;
    }
    let (out, stale, text, pids) = run_forking(NAME);
    assert_eq!(pids.len(), 1);
    let pid = pids[0];

    let parent = parse(&text);
    assert_eq!(parent.invocations.len() as u64, BEFORE + PARENT_AFTER, "only the parent's roots");
    let seqs: Vec<u64> = parent.invocations.iter().map(|inv| inv.seq).collect();
    assert_eq!(seqs, (0..BEFORE + PARENT_AFTER).collect::<Vec<_>>(), "one writer, one sequence");
    assert!(parent.invocations.iter().all(|inv| inv.nodes.len() == 2), "whole trees");
    assert_eq!(parent.stats_fields[..2], [BEFORE + PARENT_AFTER, BEFORE + PARENT_AFTER], "seen and kept: the parent's");

    let child_file = out.with_file_name(format!("{}{pid}", stale));
    let child = parse(&read_trace(&child_file));
    assert!(child.header.iter().any(|line| line.starts_with(&format!("process {pid} "))), "{:?}", child.header);
    assert_eq!(child.invocations.len() as u64, CHILD, "the child's roots, in its own file");
    let seqs: Vec<u64> = child.invocations.iter().map(|inv| inv.seq).collect();
    assert_eq!(seqs, (0..CHILD).collect::<Vec<_>>(), "the child's writer numbers its own");
    assert!(child.invocations.iter().all(|inv| inv.nodes.len() == 2), "whole trees");
    assert_eq!(child.stats_fields[..2], [CHILD, CHILD], "seen and kept: the child's alone");

    let merged = cargo_calltime::trace::Trace::load(&out, None).expect("the run's files load");
    assert_eq!(merged.invocations.len() as u64, BEFORE + PARENT_AFTER + CHILD, "`report` merges both processes");
    assert_eq!(merged.stats.seen, BEFORE + PARENT_AFTER + CHILD);
}

const BUSY_NAME: &str = "forks_while_another_thread_records_leave_each_child_only_its_own_roots";
const FORKS: usize = 4;

/// Forks while another thread runs roots and the writer drains them, so the fork often falls while a lock is held:
/// every child still exits (no lock left held by a thread it lacks) and its file holds exactly its own roots (none
/// of the parent's queued or outboxed ones).
#[test]
fn forks_while_another_thread_records_leave_each_child_only_its_own_roots() {
    if is_child(BUSY_NAME) {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut step = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    root(step);
                    step += 1;
                }
            })
        };
        for _ in 0..FORKS {
            std::thread::sleep(std::time::Duration::from_millis(5));
            fork_a_child_running_roots("the child hung");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        return;
    }
    let (out, stale, text, pids) = run_forking(BUSY_NAME);
    assert_eq!(pids.len(), FORKS, "{pids:?}");
    let parent = parse(&text);
    let parent_roots = parent.stats_fields[0];
    // Its trees' shapes are not checked: `leaf`, called this often, retires (its calls then counted, not noded).
    assert!(parent_roots > 0, "the parent's busy thread recorded");
    for pid in pids {
        let child = parse(&read_trace(out.with_file_name(format!("{stale}{pid}"))));
        assert_eq!(child.invocations.len() as u64, CHILD, "child {pid}: its own roots only");
        assert_eq!(child.stats_fields[..2], [CHILD, CHILD], "child {pid}: seen and kept");
    }
    let merged = cargo_calltime::trace::Trace::load(&out, None).expect("the run's files load");
    assert_eq!(merged.stats.seen, parent_roots + FORKS as u64 * CHILD, "`report` sums the processes");
}

const STARTING_NAME: &str = "a_fork_while_another_thread_sets_the_runtime_up_leaves_a_child_that_records";

/// Forks right as another thread's first root sets the runtime up (calibration takes about a millisecond): before
/// the fix the child inherited a set-up that never ended, and its first root waited for it forever.
#[test]
fn a_fork_while_another_thread_sets_the_runtime_up_leaves_a_child_that_records() {
    if is_child(STARTING_NAME) {
        let started = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let first = {
            let started = started.clone();
            std::thread::spawn(move || {
                started.store(true, std::sync::atomic::Ordering::Release);
                root(0);
            })
        };
        while !started.load(std::sync::atomic::Ordering::Acquire) {
            std::hint::spin_loop();
        }
        fork_a_child_running_roots("the child hung: it was forked while another thread set the runtime up");
        first.join().unwrap();
        return;
    }
    let (out, _, text, pids) = run_forking(STARTING_NAME);
    assert_eq!(pids.len(), 1);
    // Forked once the set-up began, the child writes `<out>.p<pid>`; forked before it (the other thread not yet in
    // its first root), the two processes set up a runtime each, as spawned copies do, and the first to open the
    // trace keeps its name. Either way the run's files hold both processes' roots, whole.
    let roots = parse(&text).stats_fields[0];
    assert!(roots == 1 || roots == CHILD, "the trace holds one process's roots: {roots}");
    let merged = cargo_calltime::trace::Trace::load(&out, None).expect("the run's files load");
    assert_eq!(merged.stats.seen, 1 + CHILD, "both processes' roots");
    assert_eq!(merged.invocations.len() as u64, 1 + CHILD);
}

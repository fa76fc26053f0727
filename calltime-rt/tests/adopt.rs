//! Work spawned inside an invocation (adopt.rs), with the probes and wrappers written as cargo-calltime's rewrite
//! inserts them: threads joined inside the root, work that runs inline, a future polled on another thread, a
//! thread that ends after its root but before the invocation is written (attached), one that ends after it was
//! written (outlived), adopted work that enters the root function again (a call, not a new invocation), and a
//! parallel iterator's items (one part per worker).

mod common;

use std::future::Future;
use std::sync::mpsc;
use std::task::{Context, Poll};

use calltime_rt::__private::{adopt_future, enter, enter_root, hold_writer, par_context, ticket, ParContext, PlanInfo};
use cargo_calltime::trace::{parse, Invocation, Node, ThreadKind, Trace};
use common::{is_child, out_path, run_child};

static PLAN: PlanInfo = PlanInfo { id: "plan-adopt", table: "", functions: 8 };

// Function indices: 0 root, 1 spawner, 2 work, 3 stealing.
fn root(scenario: &str) {
    let __calltime_guard = enter_root(0, &PLAN);
    spawner(scenario);
}

fn work() {
    let __calltime_guard = enter(2);
    std::hint::black_box(());
}

fn spawner(scenario: &str) {
    let __calltime_guard = enter(1);
    match scenario {
        "joined" => {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    std::thread::spawn({
                        let __calltime_ticket = ticket();
                        move || {
                            __calltime_ticket.run(|| {
                                work();
                                work();
                            })
                        }
                    })
                })
                .collect();
            handles.into_iter().for_each(|h| h.join().unwrap());
            // Run where it was spawned (a rayon job nobody stole): an ordinary call of this frame.
            let t = ticket();
            t.run(work);
        }
        "inline" => {
            // Spawns that nobody stole: both run where they were spawned.
            for _ in 0..2 {
                let t = ticket();
                t.run(work);
            }
        }
        "future" => {
            let fut = adopt_future(async { work() });
            std::thread::spawn(move || {
                let mut fut = std::pin::pin!(fut);
                let waker = std::task::Waker::from(std::sync::Arc::new(NoWake));
                let mut cx = Context::from_waker(&waker);
                assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(()));
            })
            .join()
            .unwrap();
        }
        "parallel" => {
            // A rayon chain's context and closure as the rewrite makes them; scoped threads stand for the pool's
            // workers: two run 3 items each, the spawning thread runs 2 (inline), and a third runs an item that
            // calls a probed function, inside which it runs another item (work stealing).
            let __calltime_par = &par_context();
            let item = |_: u32| __calltime_par.run(work);
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| (0..3).for_each(item));
                }
            });
            (0..2).for_each(item);
            std::thread::scope(|s| {
                s.spawn(|| __calltime_par.run(|| stealing(__calltime_par)));
            });
        }
        "reentered" => {
            let t = ticket();
            std::thread::spawn(move || t.run(|| root("none"))).join().unwrap();
        }
        _ => {}
    }
}

fn stealing(par: &ParContext) {
    let __calltime_guard = enter(3);
    par.run(work);
}

/// A waker for a future that is ready at its first poll.
struct NoWake;

impl std::task::Wake for NoWake {
    fn wake(self: std::sync::Arc<Self>) {}
}

/// A root that leaves a thread behind, released by `go`.
fn root_leaving(go: mpsc::Receiver<()>) -> std::thread::JoinHandle<()> {
    let __calltime_guard = enter_root(0, &PLAN);
    let __calltime_guard = enter(1);
    let t = ticket();
    std::thread::spawn(move || {
        t.run(|| {
            go.recv().unwrap();
            work();
        })
    })
}

/// A root that hands back a future it spawned, first polled by the caller (after the invocation was written).
fn root_handing_back_a_future() -> impl Future<Output = ()> {
    let __calltime_guard = enter_root(0, &PLAN);
    let __calltime_guard = enter(1);
    adopt_future(async { work() })
}

fn only_invocation(trace: &Trace) -> &Invocation {
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    assert_eq!(trace.invocations.len(), 1, "adopted work never starts an invocation of its own");
    &trace.invocations[0]
}

fn spawner_of(inv: &Invocation) -> &Node {
    assert_eq!(inv.root.children.len(), 1);
    &inv.root.children[0]
}

fn child_trace(name: &str) -> Trace {
    let (output, text) = run_child(name, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    parse(&text).unwrap()
}

#[test]
fn threads_joined_in_the_root_hang_under_their_spawner() {
    if is_child("threads_joined_in_the_root_hang_under_their_spawner") {
        return root("joined");
    }
    let trace = child_trace("threads_joined_in_the_root_hang_under_their_spawner");
    let inv = only_invocation(&trace);
    let spawner = spawner_of(inv);
    let lanes: Vec<_> = spawner.children.iter().map(|c| c.lane.as_ref().map(|l| l.kind)).collect();
    assert_eq!(lanes.iter().filter(|l| **l == Some(ThreadKind::Thread)).count(), 6, "{lanes:?}");
    assert_eq!(lanes.iter().filter(|l| l.is_none()).count(), 1, "the inline run is an ordinary call");
    assert!(spawner.children.iter().all(|c| c.func == 2));
    assert_eq!(inv.spawned.len(), 3);
    assert!(inv.spawned.iter().all(|s| !s.outlived && s.thread.id != inv.thread.id));
    assert!(spawner.self_ns() <= spawner.duration_ns);
}

/// A parallel iterator's items: one part per worker thread (not per item), entered at its first item; the items
/// run on the spawning thread are ordinary calls; an item that lands while its worker's part has a probed call open
/// takes a part of its own. Calls are exact.
#[test]
fn parallel_items_record_into_one_part_per_worker() {
    if is_child("parallel_items_record_into_one_part_per_worker") {
        return root("parallel");
    }
    let trace = child_trace("parallel_items_record_into_one_part_per_worker");
    let inv = only_invocation(&trace);
    let spawner = spawner_of(inv);
    let calls = |func: u32, on_lane: bool| -> u64 {
        spawner.children.iter().filter(|c| c.lane.is_some() == on_lane && c.func == func).map(|c| c.calls).sum()
    };
    assert_eq!((calls(2, true), calls(3, true), calls(2, false)), (7, 1, 2), "{:#?}", spawner.children);
    let mut threads: Vec<u64> = inv.spawned.iter().map(|s| s.thread.id).collect();
    assert_eq!(threads.len(), 4, "2 workers, and the stealing thread twice: {:?}", inv.spawned);
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads.len(), 3);
    assert!(inv
        .spawned
        .iter()
        .all(|s| !s.outlived && s.thread.id != inv.thread.id && s.thread.kind == ThreadKind::Thread));
}

/// Spawns that all ran inline (rayon jobs nobody stole, as in tokei's `LanguageType::parse`) leave nothing to write:
/// the invocation goes out as a binary record, as one that spawned nothing does (the writer's cheap path), with its
/// calls as ordinary nodes.
#[test]
fn spawns_that_all_ran_inline_leave_a_binary_record() {
    let name = "spawns_that_all_ran_inline_leave_a_binary_record";
    if is_child(name) {
        return root("inline");
    }
    let trace = child_trace(name);
    let inv = only_invocation(&trace);
    let spawner = spawner_of(inv);
    assert_eq!(spawner.children.iter().map(|c| (c.func, c.lane.is_none())).collect::<Vec<_>>(), [(2, true); 2]);
    assert!(inv.spawned.is_empty(), "{:?}", inv.spawned);
    let raw = std::fs::read(out_path(name)).unwrap();
    assert!(!raw.windows(4).any(|w| w == b"\ninv"), "a binary record, not an `inv` text line");
}

/// Folded after one call: the spawner is a call path, each part folds on its own; the calls stay exact.
#[test]
fn spawns_from_folded_invocations_hang_under_their_call_path() {
    if is_child("spawns_from_folded_invocations_hang_under_their_call_path") {
        return root("joined");
    }
    let (output, text) =
        run_child("spawns_from_folded_invocations_hang_under_their_call_path", &[("CALLTIME_FOLD_AFTER", "1")]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let trace = parse(&text).unwrap();
    let inv = only_invocation(&trace);
    assert!(inv.folded);
    let spawner = spawner_of(inv);
    let calls = |on_lane: bool| -> u64 {
        spawner.children.iter().filter(|c| c.lane.is_some() == on_lane && c.func == 2).map(|c| c.calls).sum()
    };
    assert_eq!((calls(true), calls(false)), (6, 1), "{:#?}", spawner.children);
    assert_eq!(inv.spawned.len(), 3);
}

#[test]
fn a_future_polled_elsewhere_is_a_task_part() {
    if is_child("a_future_polled_elsewhere_is_a_task_part") {
        return root("future");
    }
    let trace = child_trace("a_future_polled_elsewhere_is_a_task_part");
    let spawner = spawner_of(only_invocation(&trace));
    assert_eq!(spawner.children.len(), 1);
    assert_eq!(spawner.children[0].lane.as_ref().map(|l| l.kind), Some(ThreadKind::Task));
}

#[test]
fn adopted_work_entering_the_root_is_a_call_not_an_invocation() {
    if is_child("adopted_work_entering_the_root_is_a_call_not_an_invocation") {
        return root("reentered");
    }
    let trace = child_trace("adopted_work_entering_the_root_is_a_call_not_an_invocation");
    let spawner = spawner_of(only_invocation(&trace));
    let nested = &spawner.children[0];
    assert_eq!((nested.func, nested.lane.is_some(), nested.children.len()), (0, true, 1));
}

#[test]
fn work_ending_after_its_root_is_attached_until_the_invocation_is_written() {
    if is_child("work_ending_after_its_root_is_attached_until_the_invocation_is_written") {
        hold_writer(true);
        let (go, wait) = mpsc::channel();
        let left = root_leaving(wait);
        go.send(()).unwrap();
        left.join().unwrap();
        hold_writer(false);
        return calltime_rt::flush();
    }
    let trace = child_trace("work_ending_after_its_root_is_attached_until_the_invocation_is_written");
    let inv = only_invocation(&trace);
    let spawner = spawner_of(inv);
    assert_eq!((spawner.outlived, spawner.children.len()), (0, 1));
    assert!(!inv.spawned[0].outlived);
}

#[test]
fn work_ending_after_the_invocation_is_written_is_outlived() {
    if is_child("work_ending_after_the_invocation_is_written_is_outlived") {
        let (go, wait) = mpsc::channel();
        let left = root_leaving(wait);
        calltime_rt::flush();
        go.send(()).unwrap();
        left.join().unwrap();
        return calltime_rt::flush();
    }
    let trace = child_trace("work_ending_after_the_invocation_is_written_is_outlived");
    let inv = only_invocation(&trace);
    let spawner = spawner_of(inv);
    assert_eq!((spawner.outlived, spawner.children.len()), (1, 0), "never lost silently, never put elsewhere");
    assert!(inv.spawned[0].outlived);
}

/// A task first polled after its invocation was written is outlived in the tree, and still counts under its
/// spawning call in the whole-run aggregate (`g` paths: root, spawner, the task marker, then `work`).
#[test]
fn work_starting_after_the_invocation_is_written_counts_in_the_whole_run() {
    if is_child("work_starting_after_the_invocation_is_written_counts_in_the_whole_run") {
        let fut = root_handing_back_a_future();
        calltime_rt::flush();
        let mut fut = std::pin::pin!(fut);
        let waker = std::task::Waker::from(std::sync::Arc::new(NoWake));
        assert_eq!(fut.as_mut().poll(&mut Context::from_waker(&waker)), Poll::Ready(()));
        return calltime_rt::flush();
    }
    let (output, text) = run_child("work_starting_after_the_invocation_is_written_counts_in_the_whole_run", &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let trace = parse(&text).unwrap();
    assert!(spawner_of(only_invocation(&trace)).outlived == 1, "{text}");
    let last_aggregate = text.rsplit("\naggregate ").next().unwrap_or_default();
    let paths: Vec<(&str, &str, &str)> = last_aggregate
        .lines()
        .filter_map(|l| l.strip_prefix("g "))
        .map(|l| {
            let mut f = l.split(' ');
            (f.next().unwrap_or(""), f.next().unwrap_or(""), f.next().unwrap_or(""))
        })
        .collect();
    assert!(paths.contains(&("2", "536870910", "1")), "the task's marker under the spawner: {text}");
    assert!(paths.contains(&("3", "2", "1")), "the task's call of work: {text}");
}

//! Exact trees recorded from async probes, driven by a tiny hand-written executor (no runtime dependency). The
//! probes are written as cargo-calltime's rewrite inserts them into async fn bodies.

mod common;

use calltime_rt::__private::{enter, enter_root, instrument, instrument_root, PlanInfo};
use common::{is_child, poll_once, run_ok, Task};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

static PLAN: PlanInfo = PlanInfo { id: "plan-async", table: "", functions: 16 };

// Function indices: 0 sync root, 10 task root, 11 child, 12 leaf, 13 failing child.
async fn task_root() {
    ::calltime_rt::__private::instrument_root(10, &PLAN, async move {
        leaf();
        child().await;
        leaf();
    })
    .await
}

async fn child() {
    ::calltime_rt::__private::instrument(11, async move {
        leaf();
        YieldOnce(false).await;
        leaf();
    })
    .await
}

async fn failing_root() {
    instrument_root(10, &PLAN, async move {
        leaf();
        failing_child().await;
    })
    .await
}

async fn failing_child() {
    instrument(13, async move {
        YieldOnce(false).await;
        leaf();
        panic!("failing child");
    })
    .await
}

fn leaf() {
    let __calltime_guard = enter(12);
    std::hint::black_box(());
}

/// Pending once, then ready: forces a second poll.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls every task in turn until all are done: their polls interleave on this thread.
fn run_interleaved(mut tasks: Vec<Task>) {
    while !tasks.is_empty() {
        tasks.retain_mut(|t| !poll_once(t));
    }
}

const TASK_SHAPE: &str = "10[12 11[12 12] 12]";

#[test]
fn tasks_interleaved_on_one_thread() {
    if is_child("tasks_interleaved_on_one_thread") {
        run_interleaved(vec![Box::pin(task_root()), Box::pin(task_root())]);
        return;
    }
    let trace = run_ok("tasks_interleaved_on_one_thread", &[]);
    assert_eq!(trace.shapes(), [TASK_SHAPE, TASK_SHAPE]);
    let (x, y) = (&trace.invocations[0], &trace.invocations[1]);
    assert_eq!((x.kind.as_str(), y.kind.as_str()), ("task", "task"));
    assert_ne!(x.id, y.id, "one id per task");
    // They really interleaved: each started before the other finished.
    assert!(x.start < y.start + y.duration && y.start < x.start + x.duration);
    x.check_nesting();
    y.check_nesting();
}

#[test]
fn task_moved_across_threads() {
    if is_child("task_moved_across_threads") {
        let mut task: Task = Box::pin(task_root());
        let mut task = std::thread::spawn(move || {
            assert!(!poll_once(&mut task));
            // This thread's own invocations are unaffected by the task that left it.
            let __calltime_guard = enter_root(0, &PLAN);
            leaf();
            task
        })
        .join()
        .unwrap();
        std::thread::spawn(move || assert!(poll_once(&mut task))).join().unwrap();
        return;
    }
    let trace = run_ok("task_moved_across_threads", &[]);
    // The two invocations end on different threads, whose outboxes the writer drains in either order.
    let mut shapes = trace.shapes();
    shapes.sort();
    assert_eq!(shapes, ["0[12]", TASK_SHAPE]);
    let tasks: Vec<_> = trace.invocations.iter().filter(|i| i.kind == "task").collect();
    assert_eq!(tasks.len(), 1, "one task invocation");
    tasks[0].check_nesting();
}

#[test]
fn tasks_inside_a_sync_root_are_its_children() {
    if is_child("tasks_inside_a_sync_root_are_its_children") {
        let __calltime_guard = enter_root(0, &PLAN);
        run_interleaved(vec![Box::pin(task_root()), Box::pin(task_root())]);
        return;
    }
    let trace = run_ok("tasks_inside_a_sync_root_are_its_children", &[]);
    // Interleaved polls in one thread context: each task keeps its own children.
    assert_eq!(trace.shapes(), [format!("0[{TASK_SHAPE} {TASK_SHAPE}]")]);
    assert_eq!(trace.invocations[0].kind, "thread");
    trace.invocations[0].check_nesting();
}

/// A task dropped after its first poll, then one whose child panics in its second poll.
fn drop_one_task_and_fail_another() {
    let mut task: Task = Box::pin(task_root());
    assert!(!poll_once(&mut task));
    drop(task);
    let mut task: Task = Box::pin(failing_root());
    assert!(!poll_once(&mut task));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(&mut task)));
    assert!(caught.is_err());
    drop(task);
}

#[test]
fn dropped_task_is_cancelled_and_panicking_task_is_marked() {
    if is_child("dropped_task_is_cancelled_and_panicking_task_is_marked") {
        drop_one_task_and_fail_another();
        return;
    }
    let trace = run_ok("dropped_task_is_cancelled_and_panicking_task_is_marked", &[]);
    assert_eq!(trace.shapes(), ["10~[12 11~[12]]", "10![12 13![12]]"]);
    for inv in &trace.invocations {
        inv.check_nesting();
    }
}

/// `<T as AmbiguousIfSend<_>>::some_item` compiles only when `T` is not `Send` (for a `Send` type both impls apply
/// and the `_` is ambiguous): the usual compile-time "does not implement" check.
trait AmbiguousIfSend<A> {
    fn some_item() {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
struct IsSend;
impl<T: ?Sized + Send> AmbiguousIfSend<IsSend> for T {}

#[test]
fn instrumented_is_send_iff_the_future_is() {
    fn assert_send<T: Send>(_: &T) {}
    let fut = instrument(1, async {});
    assert_send(&fut);
    let fut = instrument_root(1, &PLAN, task_root());
    assert_send(&fut);
    type NotSendFuture = std::future::Ready<std::rc::Rc<u8>>;
    <calltime_rt::Instrumented<NotSendFuture> as AmbiguousIfSend<_>>::some_item();
    <calltime_rt::Guard as AmbiguousIfSend<_>>::some_item();
}

#[test]
fn tasks_fold_across_polls() {
    if is_child("tasks_fold_across_polls") {
        // Folding after 2 calls: each task folds inside its first poll, before `child` is first polled.
        run_interleaved(vec![Box::pin(task_root()), Box::pin(task_root())]);
        drop_one_task_and_fail_another();
        return;
    }
    let trace = run_ok("tasks_fold_across_polls", &[("CALLTIME_FOLD_AFTER", "2")]);
    let folded = "10*1[12*2 11*1[12*2]]";
    assert_eq!(trace.shapes(), [folded, folded, "10*1~[12*1 11*1~[12*1]]", "10*1![12*1 13*1![12*1]]"]);
    for inv in &trace.invocations {
        for node in &inv.nodes {
            let f = node.folded.unwrap();
            // Async calls are always timed; the sync child (12) only at random gaps once its task folded.
            if node.index != 12 {
                assert_eq!(f.timed, f.calls, "async calls are timed: {node:?}");
                assert_eq!(f.exact_calls, f.timed, "calls timed unconditionally are exact: {node:?}");
            }
        }
        assert!(inv.nodes[0].duration.abs_diff(inv.duration) <= 1, "the root path's time is the invocation's");
    }
}

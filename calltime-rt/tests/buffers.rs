//! Recording buffers under load: an executor may start thousands of root tasks before the first ends, each holding a
//! recorder while it is in progress (issue 11 item 3: async-executor's 2,000 jobs dropped 828 invocations for lack
//! of a free recorder). No invocation may be dropped for that at this load, and every one is written.

mod common;

use calltime_rt::__private::{enter, instrument_root, PlanInfo};
use common::{is_child, poll_once, run_ok, Task};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

static PLAN: PlanInfo = PlanInfo { id: "plan-buffers", table: "", functions: 4 };

/// Root tasks in progress at once: more than the queue's length and its spare recorders (1,024 + 65).
const TASKS: u64 = 4_000;
/// Tasks finished between two flushes, so the writer's queue (1,024) never fills: this test is about buffers.
const BATCH: usize = 250;

// Function indices: 0 the task root, 1 a leaf.
async fn job() {
    instrument_root(0, &PLAN, async move {
        leaf();
        YieldOnce(false).await;
        leaf();
    })
    .await
}

fn leaf() {
    let __calltime_guard = enter(1);
    std::hint::black_box(());
}

/// Pending once, then ready: every task is in progress after its first poll.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[test]
fn thousands_of_root_tasks_in_progress_get_a_recorder_each() {
    if is_child("thousands_of_root_tasks_in_progress_get_a_recorder_each") {
        let mut tasks: Vec<Task> = (0..TASKS).map(|_| Box::pin(job()) as Task).collect();
        for task in &mut tasks {
            assert!(!poll_once(task), "pending after the first poll");
        }
        // Finished half on another thread: a task's recorder goes with it.
        let second: Vec<Task> = tasks.split_off(tasks.len() / 2);
        let other = std::thread::spawn(move || finish(second));
        finish(tasks);
        other.join().expect("the other thread");
        calltime_rt::flush();
        let s = calltime_rt::stats();
        assert_eq!((s.seen, s.kept, s.dropped_no_buffer, s.dropped), (TASKS, TASKS, 0, 0), "{s:?}");
        return;
    }
    let trace = run_ok("thousands_of_root_tasks_in_progress_get_a_recorder_each", &[("CALLTIME_EXACT", "1")]);
    assert_eq!(trace.invocations.len(), TASKS as usize, "every task's tree written");
    assert!(trace.shapes().iter().all(|shape| shape == "0[1 1]"), "{:?}", &trace.shapes()[..3]);
}

fn finish(tasks: Vec<Task>) {
    let mut tasks = tasks;
    while !tasks.is_empty() {
        let rest = tasks.split_off(tasks.len().min(BATCH));
        for mut task in tasks {
            assert!(poll_once(&mut task), "ready after the second poll");
        }
        calltime_rt::flush();
        tasks = rest;
    }
}

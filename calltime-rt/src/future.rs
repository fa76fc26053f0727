//! The async wrapper: [`Instrumented`] enters its function's node on every poll and leaves it when the poll
//! returns; a root task records into its own recorder, which travels with the future.

use std::future::Future;
use std::mem::{self, ManuallyDrop};
use std::pin::Pin;
use std::ptr;
use std::task::{Context, Poll};

use crate::__private::PlanInfo;
use crate::clock::now;
use crate::invocation::{begin_task_invocation, current, finish_task, set_current, OwnedRecorder, SKIP};
use crate::recorder::{Recorder, FLAG_CANCELLED, FLAG_PANICKED, NO_SLOT};
use crate::sampler::{task_skip_ended, Entry};

/// A future wrapper that records an async function: it enters the function's node on every poll and leaves it when
/// the poll returns. Created only by the hidden probes. `Send` when the wrapped future is.
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<F> {
    fut: ManuallyDrop<F>,
    index: u32,
    plan: Option<&'static PlanInfo>,
    state: TaskState,
}

enum TaskState {
    Unpolled,
    /// Outside any invocation (or past a cap): polls pass through.
    Inert,
    /// A root whose invocation is not recorded (sampled out or dropped): its polls run with `CURRENT = SKIP`.
    Skipped,
    /// A root task skipped for cost whose root is timed: from its first poll (`start`) to its end
    /// (`sampler::task_skip_ended`).
    SkippedTimed {
        entry: &'static Entry,
        start: u64,
    },
    /// A root task recording into its own context.
    Root(OwnedRecorder),
    /// A node in the context of invocation `invocation`, current at the first poll.
    Nested {
        invocation: u64,
        slot: u32,
    },
    /// A call first polled after its invocation folded: counted on `path`, always timed from `start`.
    NestedPath {
        invocation: u64,
        path: u32,
        start: u64,
        /// Key of the frame entered by the first poll.
        key: u32,
    },
    Done,
}

impl<F> Instrumented<F> {
    pub(crate) fn new(index: u32, plan: Option<&'static PlanInfo>, fut: F) -> Instrumented<F> {
        Instrumented { fut: ManuallyDrop::new(fut), index, plan, state: TaskState::Unpolled }
    }
}

/// Decides at the first poll what this future records; the returned state has its frame entered already.
fn begin_task_node(index: u32, plan: Option<&'static PlanInfo>) -> TaskState {
    let cur = current();
    if cur.is_null() {
        return match plan {
            Some(plan) => start_task_invocation(index, plan),
            None => TaskState::Inert,
        };
    }
    if cur == SKIP {
        return TaskState::Inert;
    }
    // Async functions never retire: the watchers must not pick one from its nodes.
    crate::retire::pin(index);
    // SAFETY: a real CURRENT is live for the duration of this poll.
    let r = unsafe { &mut *cur };
    if r.past_fold() {
        return match r.enter_async_path(index) {
            Some((path, start, key)) => TaskState::NestedPath { invocation: r.invocation(), path, start, key },
            None => TaskState::Inert,
        };
    }
    r.may_overlap = true;
    let slot = r.push(index, now());
    if slot == NO_SLOT {
        TaskState::Inert
    } else {
        TaskState::Nested { invocation: r.invocation(), slot }
    }
}

#[cold]
#[inline(never)]
fn start_task_invocation(index: u32, plan: &'static PlanInfo) -> TaskState {
    let mut rec = match begin_task_invocation(index, plan) {
        Ok(rec) => rec,
        Err(None) => return TaskState::Skipped,
        Err(Some(entry)) => return TaskState::SkippedTimed { entry, start: now() },
    };
    let start = now();
    rec.push(index, start);
    TaskState::Root(OwnedRecorder::new(rec))
}

/// Leaves the frame entered for one poll, also when the poll unwinds; closes the node when the future finished.
struct PollScope<'a> {
    state: &'a mut TaskState,
    /// The context the frame was entered in (null: none).
    rec: *mut Recorder,
    slot: u32,
    pushed: bool,
    /// `CURRENT` to restore (roots and skipped roots swap their own context in).
    restore: Option<*mut Recorder>,
    /// A call entered after its invocation folded: its path and start.
    path_call: Option<(u32, u64)>,
    returned: bool,
    ready: bool,
}

impl Drop for PollScope<'_> {
    fn drop(&mut self) {
        let finished = self.ready || !self.returned;
        let end = if finished && !self.rec.is_null() { now() } else { 0 };
        if !self.rec.is_null() {
            // SAFETY: rec is the context current for this poll (ours, or the enclosing one, still live).
            let r = unsafe { &mut *self.rec };
            if self.pushed {
                r.pop(self.slot, end);
            }
            if finished {
                let flags = if self.returned { 0 } else { FLAG_PANICKED };
                match self.path_call {
                    Some((path, start)) => r.close_path(path, start, end, flags),
                    None => r.close(self.slot, end, flags),
                }
            }
        }
        if let Some(prev) = self.restore {
            set_current(prev);
        }
        if finished {
            match mem::replace(self.state, TaskState::Done) {
                TaskState::Root(owned) => finish_task(owned),
                TaskState::SkippedTimed { entry, start } => task_skip_ended(entry, now().wrapping_sub(start)),
                _ => {}
            }
        }
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is structurally pinned: it is never moved out (Drop drops it in place); the other fields
        // are plain data that is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above: `fut` is never moved while `this` is pinned.
        let fut = unsafe { Pin::new_unchecked(&mut *this.fut) };
        let Some(mut scope) = enter_poll(&mut this.state, this.index, this.plan) else { return fut.poll(cx) };
        let out = fut.poll(cx);
        scope.returned = true;
        scope.ready = out.is_ready();
        drop(scope);
        out
    }
}

/// The frame one poll enters, `None` when the poll records nothing. Not generic, so the code shared by every
/// async function is compiled once; out of line in the dev profile's runtime, where inlined it would be rustc's
/// work again in every `Instrumented<F>` of an unoptimised build.
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
fn enter_poll<'a>(state: &'a mut TaskState, index: u32, plan: Option<&'static PlanInfo>) -> Option<PollScope<'a>> {
    let mut first = false;
    if let TaskState::Unpolled = state {
        *state = begin_task_node(index, plan);
        first = true;
    }
    let mut path_call = None;
    let (rec, slot, pushed, restore) = match &*state {
        TaskState::Unpolled | TaskState::Inert | TaskState::Done => return None,
        TaskState::Skipped | TaskState::SkippedTimed { .. } => {
            (ptr::null_mut(), NO_SLOT, false, Some(set_current(SKIP)))
        }
        TaskState::NestedPath { invocation, path, start, key } => {
            let cur = current();
            // SAFETY: a real CURRENT is live for the duration of this poll.
            if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == *invocation {
                path_call = Some((*path, *start));
                // SAFETY: as above.
                let key = if first { Some(*key) } else { unsafe { (*cur).push_path_frame(*path) } };
                match key {
                    Some(key) => (cur, key, true, None),
                    None => (cur, NO_SLOT, false, None),
                }
            } else {
                (ptr::null_mut(), NO_SLOT, false, None)
            }
        }
        TaskState::Root(owned) => {
            let rec = owned.ptr();
            let prev = set_current(rec);
            // SAFETY: our own recorder; between polls its stack is empty.
            let pushed = first || unsafe { (*rec).push_frame(0) };
            (rec, 0, pushed, Some(prev))
        }
        TaskState::Nested { invocation, slot } => {
            let cur = current();
            // SAFETY: a real CURRENT is live for the duration of this poll.
            if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == *invocation {
                // SAFETY: as above.
                let pushed = first || unsafe { (*cur).push_frame(*slot) };
                (cur, *slot, pushed, None)
            } else {
                // Polled outside the invocation it started in: record nothing more.
                (ptr::null_mut(), NO_SLOT, false, None)
            }
        }
    };
    Some(PollScope { state, rec, slot, pushed, restore, path_call, returned: false, ready: false })
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        let cancel = begin_cancel(mem::replace(&mut self.state, TaskState::Done));
        // SAFETY: dropped in place exactly once; never used again.
        unsafe { ManuallyDrop::drop(&mut self.fut) };
        finish_cancel(cancel);
    }
}

/// Restores `CURRENT` even if the inner future's destructor panics.
struct Restore(*mut Recorder);

impl Drop for Restore {
    fn drop(&mut self) {
        set_current(self.0);
    }
}

/// What a dropped `Instrumented` does around dropping its inner future (cancelled, or done).
enum Cancel {
    Nothing,
    /// Descendants close their nodes in the root's context while the inner future is dropped. `restore` comes
    /// first: fields drop in order, and an unwinding inner drop must restore `CURRENT` before the recorder goes.
    Root {
        restore: Restore,
        owned: OwnedRecorder,
    },
    Nested {
        invocation: u64,
        slot: u32,
    },
    NestedPath {
        invocation: u64,
        path: u32,
        start: u64,
    },
    Skipped(#[allow(dead_code)] Restore),
}

/// Before the inner future is dropped (not generic, and out of line in the dev profile's runtime: see
/// [`enter_poll`]).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
fn begin_cancel(state: TaskState) -> Cancel {
    match state {
        TaskState::Root(owned) => Cancel::Root { restore: Restore(set_current(owned.ptr())), owned },
        TaskState::Nested { invocation, slot } => Cancel::Nested { invocation, slot },
        TaskState::NestedPath { invocation, path, start, .. } => Cancel::NestedPath { invocation, path, start },
        TaskState::Skipped => Cancel::Skipped(Restore(set_current(SKIP))),
        // A cancelled root is timed to its drop, as a recorded one is.
        TaskState::SkippedTimed { entry, start } => {
            task_skip_ended(entry, now().wrapping_sub(start));
            Cancel::Skipped(Restore(set_current(SKIP)))
        }
        TaskState::Unpolled | TaskState::Inert | TaskState::Done => Cancel::Nothing,
    }
}

/// After the inner future is dropped: closes the cancelled node.
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
fn finish_cancel(cancel: Cancel) {
    match cancel {
        Cancel::Root { restore, owned } => {
            // SAFETY: our own recorder, live until `owned` is dropped or sent.
            unsafe { (*owned.ptr()).close(0, now(), FLAG_CANCELLED) };
            drop(restore);
            finish_task(owned);
        }
        Cancel::Nested { invocation, slot } => {
            let cur = current();
            // SAFETY: a real CURRENT is live on this thread.
            if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == invocation {
                // SAFETY: as above.
                unsafe { (*cur).close(slot, now(), FLAG_CANCELLED) };
            }
        }
        Cancel::NestedPath { invocation, path, start } => {
            let cur = current();
            // SAFETY: a real CURRENT is live on this thread.
            if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == invocation {
                // SAFETY: as above.
                unsafe { (*cur).close_path(path, start, now(), FLAG_CANCELLED) };
            }
        }
        Cancel::Skipped(_) | Cancel::Nothing => {}
    }
}

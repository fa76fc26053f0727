//! The sync probes: what `enter`/`enter_root` do on entry and what `Guard::drop` does on exit. The per-call case is
//! inlined into every probed function; everything else is one out-of-line call.

use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr;

use crate::__private::PlanInfo;
use crate::clock::now;
use crate::invocation::{
    complete_thread_invocation, current, end_skipped_invocation, replace_current, start_thread_invocation, SKIP,
};
use crate::recorder::{Recorder, FLAG_PANICKED, FOLD_KEY, NO_SLOT};
use crate::retire::{count_retired_call, retired_state, States};

/// The slot of `Guard::SKIPPED_TIMED`.
const TIMED_SKIP_SLOT: u32 = NO_SLOT - 1;

/// The guard returned by a sync function's probe: records the function's exit when dropped. Inert (and free to
/// drop) outside any invocation. Not `Send`: it refers to the current thread's recording context.
#[must_use = "the guard records the exit when it is dropped"]
pub struct Guard {
    rec: *mut Recorder,
    slot: u32,
}

impl Guard {
    /// Records nothing (the guard of a quiet call in `__private::quiet_guard_in!`).
    #[doc(hidden)]
    pub const INERT: Guard = Guard { rec: ptr::null_mut(), slot: NO_SLOT };
    /// The root guard of an invocation that is not recorded: its drop ends the skipped invocation (clears
    /// `CURRENT`).
    pub(crate) const SKIPPED: Guard = Guard { rec: SKIP, slot: NO_SLOT };
    /// The same, for an invocation skipped for cost whose root is timed: its drop also reads the clock
    /// (`end_skipped_invocation`). Its slot has `FOLD_KEY` set, as `NO_SLOT` has.
    pub(crate) const SKIPPED_TIMED: Guard = Guard { rec: SKIP, slot: TIMED_SKIP_SLOT };

    /// Whether this guard records its call (so its result's `Err` is noted): false for a quiet, counted or skipped
    /// call, and outside any invocation.
    #[doc(hidden)]
    #[inline(always)]
    pub fn records(&self) -> bool {
        self.rec as usize > SKIP as usize
    }
}

/// The entry probe of a non-root function. A retired function is settled by the global state byte alone: a quiet
/// one by its sign bit (one load, one branch, no thread-local access), a counted one with the counter's increment;
/// everything that records is one out-of-line call, so the probed function saves no registers for it and a tiny
/// probed function stays small enough to be inlined.
#[inline(always)]
pub(crate) fn enter(index: u32) -> Guard {
    let state = retired_state(index);
    if (state as i8) < 0 {
        return Guard::INERT;
    }
    if state != 0 {
        count_retired_call(index);
        return Guard::INERT;
    }
    enter_unretired(index)
}

/// The entry probe of a function that has not retired: records when an invocation is in progress on this thread.
#[inline(always)]
fn enter_unretired(index: u32) -> Guard {
    let rec = current();
    if rec as usize <= SKIP as usize {
        return Guard::INERT;
    }
    // SAFETY: a non-null, non-SKIP CURRENT points to a live recorder owned by this thread or by the task being
    // polled on it.
    unsafe { record_enter_call(rec, index) }
}

/// The probe of a body wrapped in a closure (`run(7, move || { body })`): a retired function's call is the state
/// byte's test and the body (and, until it goes quiet, an out-of-line count), with no guard and nothing to test at
/// the exit, so a quiet call of a tiny function inlined into a loop costs the byte's load and one branch. Every
/// other call goes through `run_probed`, out of line: the guard and its unwind cleanup stay out of the probed
/// function. Measured alternatives (docs/truth-bench.md, "Fourth round"): sending counted calls to `run_probed`
/// (or to a `run_counted` taking the closure) makes the quiet path one branch shorter but costs pulldown-cmark 4-8%
/// more instructions: its busiest retired functions (`CowStr::deref`, `HtmlWriter::write`) are called from a loop
/// that runs once for the whole document, so they stay counted even now that functions go quiet within an
/// invocation (docs/truth-bench.md, "Fifth round").
#[inline(always)]
pub(crate) fn run<R, F: FnOnce() -> R>(index: u32, body: F) -> R {
    let state = retired_state(index);
    if (state as i8) < 0 {
        return body();
    }
    if state != 0 {
        count_retired_call_here(index);
        return body();
    }
    run_probed(index, body)
}

/// Counts one call of a retired function whose calls are still counted, out of line: a call that saves no
/// registers, instead of the thread-local access inlined next to each copy of the body.
#[inline(never)]
fn count_retired_call_here(index: u32) {
    count_retired_call(index);
}

/// `enter` reading the state byte from the probed function's own crate table (`States`): a fixed address, one
/// RIP-relative load, where `enter` loads the runtime array's address from the GOT first.
#[inline(always)]
pub(crate) fn enter_in<const N: usize>(states: &'static States<N>, index: u32) -> Guard {
    let state = states.state(index);
    if (state as i8) < 0 {
        return Guard::INERT;
    }
    if state != 0 {
        count_retired_call(index);
        return Guard::INERT;
    }
    states.register_once();
    enter_unretired(index)
}

/// `run` reading the state byte from the probed function's own crate table (see `enter_in`). The tool takes it for
/// big bodies only (`rewrite::IN_PLACE_BODY` bytes and more), whose closure is a call anyway; smaller ones take
/// `run_quiet_in`.
#[inline(always)]
pub(crate) fn run_in<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
    let state = states.state(index);
    if (state as i8) < 0 {
        return body();
    }
    if state != 0 {
        count_retired_call_here(index);
        return body();
    }
    unlikely();
    run_probed_in(states, index, body)
}

/// The probe of a small or medium wrapped body (the tool decides from its source: `rewrite::IN_PLACE_BODY`): a
/// quiet call is the state byte's load, a test and a branch (`States::is_quiet`), falling through into the body in
/// place; every other call (counted or recorded) is one out-of-line call,
/// `run_unquiet_in`, which holds the body's other copy. So the probed function keeps nothing else on its quiet path:
/// the closure reaches the cold call by reference (`ManuallyDrop`, no drop glue, no landing pad) and the result
/// comes back through a slot of its own (`Unquiet`), so that neither the captures nor the result live in memory on
/// the quiet path (docs/truth-bench.md, "Seventh round"). The closure still has two call sites (here and in
/// `run_unquiet_in`): the optimiser inlines it only while it is small enough for both.
#[inline(always)]
pub(crate) fn run_quiet_in<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
    if states.is_quiet(index) {
        return body();
    }
    run_unquiet(states, index, body)
}

/// `run_quiet_in`'s calls that are not quiet, as one out-of-line call.
#[inline(always)]
pub(crate) fn run_unquiet<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
    unlikely();
    let mut body = ManuallyDrop::new(body);
    let mut out = Unquiet { result: MaybeUninit::uninit(), _one_more_byte: MaybeUninit::uninit() };
    run_unquiet_in(states, index, &mut body, &mut out.result);
    // SAFETY: `run_unquiet_in` returns only once it wrote `out.result` (a panic unwinds past this read).
    unsafe { out.result.assume_init() }
}

/// Where `run_unquiet_in` writes its result. One byte bigger than the result: the optimiser then cannot make the
/// out-of-line call write straight into the caller's result (LLVM's call-slot optimisation), which would put the
/// result in memory on the quiet path too (serde_json: about 3.5% more instructions).
struct Unquiet<R> {
    result: MaybeUninit<R>,
    _one_more_byte: MaybeUninit<u8>,
}

/// Marks the path it is called on as the unlikely one, so that the optimiser lays the quiet path out straight (in
/// a loop, no jump out to the body and back).
#[cold]
#[inline(always)]
fn unlikely() {}

/// `run_quiet_in`'s calls that are not quiet: counted, or recorded. One copy of the body, under an inert guard when
/// the call is only counted: with two, the optimiser calls the body's closure out of line from both.
#[inline(never)]
fn run_unquiet_in<R, F: FnOnce() -> R, const N: usize>(
    states: &'static States<N>,
    index: u32,
    body: &mut ManuallyDrop<F>,
    out: &mut MaybeUninit<R>,
) {
    // SAFETY: `run_quiet_in` hands over a body it never touches again (and never drops: `ManuallyDrop`).
    let body = unsafe { ManuallyDrop::take(body) };
    let _guard = enter_unquiet(states, index);
    out.write(body());
}

/// The entry of a call that is not quiet (`run_unquiet_in`, `run_unquiet_at`): counted when the function retired
/// (an inert guard), else the crate's table registered (once) and the call recorded. Outside any invocation while
/// recording started off, the function goes quiet in its crate's table until recording is switched on, so that
/// its later calls take the quiet copy in place (`retire::quiet_while_off`).
#[inline(always)]
fn enter_unquiet<const N: usize>(states: &'static States<N>, index: u32) -> Guard {
    if states.state(index) != 0 {
        count_retired_call(index);
        Guard::INERT
    } else {
        states.register_once();
        if current().is_null() && crate::retire::quiet_while_off_now() {
            states.quiet_while_off(index);
            return Guard::INERT;
        }
        enter_unretired(index)
    }
}

impl<const N: usize> States<N> {
    /// The cold copy of `__private::quiet_in!`'s body (a call that is not quiet: counted or recorded), as
    /// `run_unquiet_in` with fewer arguments to set up at each call site: the index as a constant, the closure by
    /// value (in registers when it captures one or two words, such as `&mut self`; it is built in the cold branch
    /// only) and the result returned. The quiet copy's inlining into its callers is decided by what the whole
    /// function costs, this call's set-up included (docs/performance.md, "Eighth round").
    #[doc(hidden)]
    #[cold]
    #[inline(never)]
    pub fn run_unquiet_at<const INDEX: u32, R, F: FnOnce() -> R>(&'static self, body: F) -> R {
        let _guard = enter_unquiet(self, INDEX);
        body()
    }

    /// The guard of `__private::quiet_guard_in!`'s second copy (a call that is not quiet: counted or recorded),
    /// entered out of line and cold, so that the copy stays off the function's straight path.
    #[doc(hidden)]
    #[cold]
    #[inline(never)]
    pub fn enter_unquiet_at<const INDEX: u32>(&'static self) -> Guard {
        enter_unquiet(self, INDEX)
    }
}

/// `run_in`'s probed case: registers the crate's table (once), then as `run_probed`.
#[inline(never)]
fn run_probed_in<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
    states.register_once();
    let _guard = enter_unretired(index);
    body()
}

/// `run`'s probed case: the entry probe, the body, the exit probe.
#[inline(never)]
fn run_probed<R, F: FnOnce() -> R>(index: u32, body: F) -> R {
    // `run` has read the state byte: not retired.
    let _guard = enter_unretired(index);
    body()
}

/// The recording entry, out of line (see `enter`). Its common cases save no registers: a folded invocation's
/// call (`enter_folded`), and a call that gets its own node when the TSC is the clock. Everything else (the
/// `Instant` clock, a full buffer, the fold) is one jump to `record_enter_node`.
///
/// # Safety
/// `rec` is the live recorder current on this thread.
#[inline(never)]
unsafe fn record_enter_call(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller's contract.
    unsafe {
        if (*rec).folded {
            return enter_folded(rec, index);
        }
        let r = &mut *rec;
        let (slot, depth) = (r.nodes.len(), r.depth);
        if slot < r.limit && depth < r.max_depth {
            if let Some(start) = crate::clock::tsc() {
                // slot == nodes.len() < limit and depth < max_depth, checked just above.
                r.push_node(slot, depth, index, start);
                return Guard { rec, slot: slot as u32 };
            }
        }
        record_enter_node(rec, index)
    }
}

/// The recording entry's other cases (see `record_enter_call`).
///
/// # Safety
/// `rec` is the live recorder current on this thread.
#[inline(never)]
unsafe fn record_enter_node(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller's contract.
    unsafe { record_enter(rec, index) }
}

/// Whether a call of root `index` is settled without any probe work: nested in an invocation that is not
/// recorded (`SKIP`), or in a recorded one once the root went quiet (a recursive root retired with its cluster).
/// `enter_root` decides the same for these calls (an inert guard); this test lets the rewritten root run its body
/// with nothing around it, so a recursive root's nested calls cost a thread-local load and a branch or two, and
/// everything else is one call of `States::run_root_noted_at` (docs/performance.md, "Thirteenth round").
#[inline(always)]
pub(crate) fn root_is_nested_quiet<const N: usize>(states: &'static States<N>, index: u32) -> bool {
    let rec = current();
    rec == SKIP || (!rec.is_null() && states.is_quiet(index))
}

impl<const N: usize> States<N> {
    /// A root's call that `root_is_nested_quiet` did not settle (an outermost call, a recorded or counted nested
    /// one): the crate's table registered (once, so the root's quiet byte reaches it), then `enter_root`'s guard
    /// around the body; `note` (the `Err` note) sees the result only when the call records, as `Guard::records`
    /// decides for the guard form. Out of line and not cold: a root that does not recurse takes it at every call.
    #[doc(hidden)]
    #[inline(never)]
    pub fn run_root_noted_at<const INDEX: u32, R, F: FnOnce() -> R, Note: FnOnce(&R)>(
        &'static self,
        plan: &'static PlanInfo,
        body: F,
        note: Note,
    ) -> R {
        self.register_once();
        let guard = enter_root(INDEX, plan);
        let result = body();
        if guard.records() {
            note(&result);
        }
        result
    }
}

#[inline(always)]
pub(crate) fn enter_root(index: u32, plan: &'static PlanInfo) -> Guard {
    let rec = current();
    if rec.is_null() {
        // Switched off (`cargo calltime ctl off`): as cheap as a probe outside any invocation, plus this check.
        if crate::control::is_off() {
            return Guard::INERT;
        }
        return start_thread_invocation(index, plan);
    }
    if rec == SKIP {
        return Guard::INERT;
    }
    // A nested call of a root that retired with a recursive cluster (retire/cluster.rs) is counted, until the
    // cluster goes quiet; the outermost call, above, is always recorded.
    let state = retired_state(index);
    if state != 0 {
        if (state as i8) >= 0 {
            count_retired_call(index);
        }
        return Guard::INERT;
    }
    // SAFETY: as in `enter`.
    unsafe { record_enter(rec, index) }
}

/// The recording entry's per-call case (inlined into `record_enter_call` and the root probe): everything else
/// (folding, growing the buffer, the caps) is one more out-of-line call. It reads the recorder's fields directly:
/// getters would each add stack slots to an unoptimised (dev profile) build.
#[inline(always)]
pub(crate) unsafe fn record_enter(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    let slot = r.nodes.len();
    let depth = r.depth;
    if slot >= r.limit || depth >= r.max_depth {
        // SAFETY: as above.
        return unsafe { enter_past_limit(rec, index) };
    }
    let start = now();
    // SAFETY: slot == nodes.len() < limit and depth < max_depth, checked above.
    unsafe { r.push_node(slot, depth, index, start) };
    Guard { rec, slot: slot as u32 }
}

impl Drop for Guard {
    /// Small enough to be inlined into every probed function: one test of the pointer (null for an inert guard,
    /// which the optimizer often sees from `enter`); the rest, the end of a skipped invocation included, is one
    /// direct call. Out of line in the dev profile's runtime, as `__private::enter` is.
    #[cfg_attr(debug_assertions, inline(never))]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn drop(&mut self) {
        let rec = self.rec;
        if !rec.is_null() {
            // SAFETY: guards are dropped in reverse order of creation on their own thread (they are !Send locals
            // of the probed functions), so the recorder they point to is still the live context of their
            // invocation (or SKIP).
            unsafe { leave(rec, self.slot) }
        }
    }
}

/// A call past the node buffer's current bound: a folded invocation, one that folds now, a buffer to grow, or a
/// call counted as truncated (folding off and the cap reached).
#[inline(never)]
unsafe fn enter_past_limit(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    if r.folded {
        // SAFETY: as above.
        return unsafe { enter_folded(rec, index) };
    }
    if r.past_fold() && r.depth < r.max_depth {
        // SAFETY: as above.
        return unsafe { enter_folded_slow(rec, index) };
    }
    let slot = r.push(index, now());
    if slot == NO_SLOT {
        Guard::INERT
    } else {
        Guard { rec, slot }
    }
}

/// A call of a folded invocation. The common case (the path is in its parent's child cache and this call is not
/// timed) is kept free of anything else, so it compiles to a few loads, a counter and a frame without saving
/// registers; everything else is one jump to `enter_folded_slow`.
///
/// # Safety
/// `rec` is the live recorder current on this thread, and its invocation has folded.
#[inline(always)]
unsafe fn enter_folded(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller's contract.
    if let Some(key) = unsafe { (*rec).enter_cached_path(index) } {
        return Guard { rec, slot: key };
    }
    // SAFETY: as above.
    unsafe { enter_folded_slow(rec, index) }
}

#[cold]
#[inline(never)]
unsafe fn enter_folded_slow(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    if !r.folded {
        r.fold();
    }
    match r.enter_path(index) {
        Some(key) => Guard { rec, slot: key },
        None => Guard::INERT,
    }
}

/// The exit probe. The common case, a call below the root with its own node left in order, is done here and saves
/// no registers: the clock read, the frame's check and pop, the node's end (then a jump to the check for
/// unwinding, as in `leave_folded_call`). Everything else is one jump: a call entered after its invocation folded
/// (its key has `FOLD_KEY` set) to `leave_folded_call`, the root guard of an invocation that is not recorded
/// (`SKIP`, whose slot is `NO_SLOT` or `TIMED_SKIP_SLOT`, so `FOLD_KEY` is set too) to clear `CURRENT` or, when its
/// root is timed, to `end_skipped_invocation`, and the rest (the root,
/// unwinding, a frame out of order, the `Instant` clock) to `leave_node_call`.
#[inline(never)]
unsafe fn leave(rec: *mut Recorder, slot: u32) {
    if slot & FOLD_KEY != 0 {
        if rec == SKIP {
            if slot == NO_SLOT {
                // Settles nothing, as its start did not (`invocation::start_thread_invocation`).
                replace_current(ptr::null_mut());
                return;
            }
            return end_skipped_invocation();
        }
        // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
        return unsafe { leave_folded_call(rec, slot) };
    }
    let end = crate::clock::tsc();
    if let Some(end) = end {
        // SAFETY: as above.
        if unsafe { (*rec).leave_inner(slot, end) } {
            // A jump: `std::thread::panicking()` inlined here would be a call with a continuation, for which every
            // exit would save registers.
            // SAFETY: as above.
            return unsafe { note_unwinding_node(rec) };
        }
    }
    // SAFETY: as above. The same after a fold: the frame stack keeps this call's slot as its key, and the writer
    // adds the node's time to its call path.
    unsafe { leave_node_call(rec, slot, end) }
}

/// After `Recorder::leave_inner`: when the call was left by unwinding, flags its node as `leave_node` would have.
///
/// # Safety
/// `rec` is the live recorder whose top frame `leave_inner` just left.
#[inline(never)]
unsafe fn note_unwinding_node(rec: *mut Recorder) {
    if std::thread::panicking() {
        // SAFETY: the caller's contract.
        unsafe { (*rec).flag_left_by_unwinding() }
    }
}

/// The exit of a call that has its own node, out of line (see `leave`), at `end` when the TSC was read already.
///
/// # Safety
/// `rec` is the live recorder the guard of `slot` was created in.
#[inline(never)]
unsafe fn leave_node_call(rec: *mut Recorder, slot: u32, end: Option<u64>) {
    // SAFETY: the caller's contract.
    unsafe { leave_node_at(rec, slot, end.unwrap_or_else(now)) }
}

/// The exit of a call that has its own node: closes it, and completes the invocation when it was a thread's root.
///
/// # Safety
/// `rec` is the live recorder the guard of `slot` was created in.
#[inline(always)]
unsafe fn leave_node(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller's contract.
    unsafe { leave_node_at(rec, slot, now()) }
}

/// `leave_node` at `end`.
///
/// # Safety
/// As for `leave_node`.
#[inline(always)]
unsafe fn leave_node_at(rec: *mut Recorder, slot: u32, end: u64) {
    // SAFETY: the caller's contract.
    let r = unsafe { &mut *rec };
    if r.pop(slot, end) {
        let flags = if std::thread::panicking() { FLAG_PANICKED } else { 0 };
        r.close(slot, end, flags);
        if r.thread_root_left() {
            complete_thread_invocation(rec);
        }
    }
}

/// The exit probe of a call entered after its invocation folded. As in `enter_folded`, the common case (an untimed
/// call, not the root) is kept apart from the rest, and saves no registers: the check for unwinding (a call into
/// std when some thread panics) is a jump to `note_unwinding_call`.
#[inline(never)]
unsafe fn leave_folded_call(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
    if unsafe { (*rec).leave_untimed(slot) } {
        // SAFETY: as above.
        return unsafe { note_unwinding_call(rec) };
    }
    // SAFETY: as above.
    unsafe { leave_slow(rec, slot) }
}

/// Flags the call path of the frame just left when it was left by unwinding (see `leave_folded_call`).
///
/// # Safety
/// `rec` is the live recorder whose top frame `leave_untimed` just left.
#[inline(never)]
unsafe fn note_unwinding_call(rec: *mut Recorder) {
    // SAFETY: the caller's contract.
    unsafe { (*rec).note_unwinding() }
}

#[inline(never)]
unsafe fn leave_slow(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
    let r = unsafe { &mut *rec };
    if r.folded {
        if r.leave_folded(slot) && r.thread_root_left() {
            complete_thread_invocation(rec);
        }
        return;
    }
    // SAFETY: as above.
    unsafe { leave_node(rec, slot) }
}

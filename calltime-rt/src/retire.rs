//! Probes that retire themselves: a function that has shown, over enough calls, that it is too fast to be worth its
//! probe stops being recorded for the rest of the process; its later calls inside invocations are only counted.
//!
//! The state is one byte per function index in a static array (zero, in .bss): 0 while the function is probed,
//! `COUNTED` once it retired and its calls are counted, `PINNED` for an async function (it never retires: its wrapper
//! does not check the byte), or `QUIET` (the high bit) once it went quiet. The probe reads the byte (a relaxed load)
//! first, before any thread-local access. A retired function first counts its calls exactly: that load, a branch and
//! a per-thread counter indexed by its function index (`RETIRED_CALLS`: a thread-local pointer to the thread's
//! counters, sized from the plan when the thread first records), settled into the current recorder whenever
//! `CURRENT` changes. Each retirement also gets a slot, its number in order of retirement (1, 2, ...): recorders,
//! outboxes and the aggregate keep counted calls by slot, and a settle visits the slots still counted. No slot count
//! bounds how many functions retire (there were 126 when the slot lived in the state byte). Once `quiet_after`
//! invocations have counted its calls (or one invocation ended having counted `QUIET_AT_END_CALLS` of them, or one
//! long invocation has counted `QUIET_WITHIN_CALLS`, or `QUIET_WITHIN_OPEN_CALLS` under a caller's open call:
//! `Recorder::consider_quiet_within`), it goes quiet: its probe is
//! then the load and one branch on the sign bit, nothing else, and the tool estimates its later calls from the
//! counted ones (a `quiet` record; docs/trace-format.md). Decisions are never taken per call: at an invocation's fold
//! (`observe_nodes`, once per big invocation), on the timed exit of a folded call every `CHECK_EVERY` random samples
//! (`consider_path`), and on the writer thread for per-call invocations (`Watch`). The rule reads a robust estimate
//! of a function's time per call (`Spread`: the mean without the slowest calls), so that one preempted call cannot
//! keep a fast function probed.

use std::cell::Cell;
use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release,
};
use std::sync::{Mutex, OnceLock};

use crate::calibrate::Calibration;
use crate::invocation::{lock, SKIP};
use crate::recorder::{Node, Recorder, OPEN, PARENT_MASK};

mod cluster;
mod spread;

pub(crate) use spread::Spread;

/// Function indices that can retire; higher ones stay probed (and so do indices past the plan's functions).
pub(crate) const RETIRE_INDICES: usize = 1 << 16;
/// The state of a retired function whose calls are counted.
pub(crate) const COUNTED: u8 = 1;
/// The state of a function that never retires (an async function).
const PINNED: u8 = 127;
/// The state of a retired function whose calls are no longer counted: the sign bit, so that the probe's quiet path
/// is one test of it.
pub(crate) const QUIET: u8 = 0x80;
/// A folded path is checked after every this many random samples.
pub(crate) const CHECK_EVERY: u64 = 32;

/// Per function index: 0 while probed, `COUNTED`, `QUIET` or `PINNED`.
static STATE: [AtomicU8; RETIRE_INDICES] = [const { AtomicU8::new(0) }; RETIRE_INDICES];
/// Per function index: its retirement slot (0: not retired).
static SLOT_OF: [AtomicU32; RETIRE_INDICES] = [const { AtomicU32::new(0) }; RETIRE_INDICES];
/// Per retirement slot (1, 2, ... in order of retirement): the function index it belongs to.
static SLOT_INDEX: [AtomicU32; RETIRE_INDICES + 1] = [const { AtomicU32::new(u32::MAX) }; RETIRE_INDICES + 1];
/// Per retirement slot: invocations that counted calls of its function (a relaxed load and store, not a
/// read-modify-write: two threads ending invocations at once may count one; it then goes quiet one later).
static COUNTED_IN: [AtomicU32; RETIRE_INDICES + 1] = [const { AtomicU32::new(0) }; RETIRE_INDICES + 1];
/// Per retirement slot: the cycle of a recursive cluster its function retired in (see `cluster`), numbered by the
/// slot of the cycle's first member to retire; 0 for none. A cycle's members go quiet together, and only when an
/// invocation ends (`note_invocation`): the tool estimates their later calls per call of the cycle's nearest caller
/// outside it (or per invocation when the root is a member), from invocations that counted them all, never from
/// estimates within the cycle.
static CYCLE_OF: [AtomicU32; RETIRE_INDICES + 1] = [const { AtomicU32::new(0) }; RETIRE_INDICES + 1];
/// Per retirement slot: the cycle whose unit its function retired in (its members, and the functions under them that
/// retired with them: `cluster`), numbered as `CYCLE_OF`; 0 for none. The unit goes quiet with its cycle: the
/// functions under the members are estimated per call of their callers, the members, whose estimates come first.
static UNIT_OF: [AtomicU32; RETIRE_INDICES + 1] = [const { AtomicU32::new(0) }; RETIRE_INDICES + 1];
/// Slots handed out so far (the highest slot in use); readers scan counters `1..=SLOTS_USED`.
static SLOTS_USED: AtomicU32 = AtomicU32::new(0);
/// The slots whose functions are counted now (not quiet), ascending (in order of retirement):
/// `COUNTING[..COUNTING_LEN]`. A settle visits these alone while no function went quiet since its thread's last
/// settle (`QUIET_SEQ`), so that it stays cheap when most retired functions are quiet; a folded invocation's
/// quiet-within check walks them in order (`counted_slot_after`): its decisions, each of which may depend on those
/// before it (a caller or sibling gone quiet), are made in order of retirement.
static COUNTING: [AtomicU32; RETIRE_INDICES + 1] = [const { AtomicU32::new(0) }; RETIRE_INDICES + 1];
static COUNTING_LEN: AtomicU32 = AtomicU32::new(0);
/// Goes up by two each time a function goes quiet, odd while `COUNTING` is being changed (a sequence lock: a settle
/// that sees it change visits every slot instead, and so settles the calls counted before a function went quiet).
static QUIET_SEQ: AtomicU32 = AtomicU32::new(0);
/// Function indices below this may retire: the plan's functions, fixed when the runtime starts (0 until then).
static LIMIT: AtomicUsize = AtomicUsize::new(0);
/// Retirements not yet written by the writer, and the count ever made (under one lock: retirements are rare).
static PENDING: AtomicBool = AtomicBool::new(false);
static RECORDS: Mutex<Records> = Mutex::new(Records {
    pending: Vec::new(),
    total: 0,
    made: Vec::new(),
    tables: [NO_TABLE; MAX_TABLES],
    tables_used: 0,
    above_highest: 0,
});

/// Crates whose state tables (`States`) the runtime keeps in step with `STATE`; a crate past this many keeps its
/// functions probed (its table is never written).
const MAX_TABLES: usize = 1024;
const NO_TABLE: &[AtomicU8] = &[];

/// A crate's copy of the state bytes of the functions it defines, indexed by the plan's dense function index. The
/// shadow copy declares one in each crate root of an instrumented package, so that a probe reads its byte at a fixed
/// address of its own crate (one RIP-relative load, no GOT load of the runtime's array: docs/truth-bench.md, "Sixth
/// round"). The runtime's own array stays the truth; a table is registered at its crate's first probed call that
/// reaches the recording path (before any of its functions can retire: retirement follows recorded calls), and from
/// then on every retirement and every function going quiet is written to it as well.
pub struct States<const N: usize> {
    bytes: [AtomicU8; N],
    registered: AtomicBool,
}

impl<const N: usize> States<N> {
    /// Every function probed (all zero), not registered yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        States { bytes: [const { AtomicU8::new(0) }; N], registered: AtomicBool::new(false) }
    }

    /// The state byte of function `index` in this crate's table (0 past its end).
    #[inline(always)]
    pub(crate) fn state(&self, index: u32) -> u8 {
        match self.bytes.get(index as usize) {
            Some(state) => state.load(Relaxed),
            None => 0,
        }
    }

    /// True once function `index` went quiet (its byte's sign bit). An atomic load, which LLVM's x86 backend keeps
    /// as a separate `movzbl` and `test` rather than folding it into `cmpb $0, state(%rip)`: one instruction more
    /// per quiet call. A volatile read would fold, but racing the retirement's atomic stores it is a data race in
    /// Rust's memory model, and no wall-time gain was measured for it (docs/truth-bench.md, "Seventh round").
    #[inline(always)]
    pub(crate) fn is_quiet(&self, index: u32) -> bool {
        (self.state(index) as i8) < 0
    }

    /// Sets function `index`'s byte in this table alone: the calibration's private table, never registered.
    pub(crate) fn set_for_calibration(&self, index: u32, state: u8) {
        if let Some(byte) = self.bytes.get(index as usize) {
            byte.store(state, Relaxed);
        }
    }

    /// Makes function `index` quiet in this table while recording is off (see `quiet_while_off`).
    pub(crate) fn quiet_while_off(&'static self, index: u32) {
        quiet_while_off(&self.bytes, index);
    }

    /// Registers the table at its first call that may record (a load and a branch after that).
    #[inline(always)]
    pub(crate) fn register_once(&'static self) {
        if !self.registered.load(Relaxed) {
            register_states(&self.bytes, &self.registered);
        }
    }
}

/// Adds a crate's table to those kept in step, with every retirement made so far copied in. Cold: once per crate.
#[cold]
#[inline(never)]
fn register_states(bytes: &'static [AtomicU8], registered: &'static AtomicBool) {
    let mut records = lock(&RECORDS);
    if registered.load(Relaxed) {
        return;
    }
    if records.tables_used < MAX_TABLES {
        for (state, mirror) in STATE.iter().zip(bytes) {
            let value = state.load(Relaxed);
            if value != 0 && value != PINNED {
                mirror.store(value, Release);
            }
        }
        let used = records.tables_used;
        records.tables[used] = bytes;
        records.tables_used += 1;
    }
    registered.store(true, Relaxed);
}

/// Recording started off (`CALLTIME_START_OFF`) and has not been switched on yet: a probe's call that is not quiet
/// (the out-of-line copy of a body written twice) outside any invocation makes its function quiet in its crate's
/// table (`quiet_while_off`), so that until `ctl on` its calls cost what a quiet call costs. Without it nothing
/// retires while off, and every such call took the cold copy out of line (tokei: 1.71x the plain build's
/// instructions started off, against 1.12x recording everything; docs/performance.md, "Eleventh round").
static QUIET_WHILE_OFF: AtomicBool = AtomicBool::new(false);

/// At the runtime's start with recording off.
pub(crate) fn start_quiet_while_off() {
    QUIET_WHILE_OFF.store(true, Relaxed);
}

/// Whether calls outside any invocation may make their function quiet (see `QUIET_WHILE_OFF`): a relaxed load,
/// on the cold path only.
#[inline(always)]
pub(crate) fn quiet_while_off_now() -> bool {
    QUIET_WHILE_OFF.load(Relaxed)
}

/// Makes function `index` quiet in the crate table `bytes` while recording is off, unless it was switched on
/// meanwhile, the function retired (the table then holds its state) or the table is not kept in step (it would
/// never be set back). Cold: once per function and crate.
#[cold]
#[inline(never)]
pub(crate) fn quiet_while_off(bytes: &'static [AtomicU8], index: u32) {
    let records = lock(&RECORDS);
    let probed = !STATE.get(index as usize).is_some_and(|state| state.load(Relaxed) != 0);
    let kept = records.tables[..records.tables_used].iter().any(|table| std::ptr::eq(*table, bytes));
    if QUIET_WHILE_OFF.load(Relaxed) && probed && kept {
        if let Some(byte) = bytes.get(index as usize) {
            byte.store(QUIET, Relaxed);
        }
    }
}

/// Recording switched on (`ctl on`): every crate table set back from `STATE`, the truth, before any root can
/// record, so the functions made quiet while off are probed again.
pub(crate) fn end_quiet_while_off() {
    let records = lock(&RECORDS);
    if !QUIET_WHILE_OFF.swap(false, Relaxed) {
        return;
    }
    for table in &records.tables[..records.tables_used] {
        for (state, mirror) in STATE.iter().zip(table.iter()) {
            let value = state.load(Relaxed);
            mirror.store(if value == PINNED { 0 } else { value }, Release);
        }
    }
}

/// The retirements, locked (last: nothing is locked under it) by the fork handler (see `control::watch_forks`).
pub(crate) fn lock_for_fork() -> std::sync::MutexGuard<'static, Records> {
    lock(&RECORDS)
}

pub(crate) struct Records {
    pending: Vec<Retirement>,
    total: u64,
    /// Every retirement made, written or not: a forked child writes them all again (see `forget_parent`).
    made: Vec<Retirement>,
    /// The crates' state tables kept in step with `STATE` (see `States`).
    tables: [&'static [AtomicU8]; MAX_TABLES],
    tables_used: usize,
    /// One past the highest function index retired so far.
    above_highest: usize,
}

impl Records {
    /// Writes function `index`'s new state byte to every registered crate table (after `STATE`, under the lock).
    fn mirror(&self, index: u32, value: u8) {
        for table in &self.tables[..self.tables_used] {
            if let Some(state) = table.get(index as usize) {
                state.store(value, Release);
            }
        }
    }
}

impl Records {
    /// In a child forked without exec: its functions stay retired (and quiet), so its own file must say so from the
    /// start: every retirement made so far is written again, in order (no allocation: `pending` keeps room for all
    /// of `made`, reserved as they are made).
    pub(crate) fn forget_parent(&mut self) {
        self.pending.clear();
        let Records { pending, made, .. } = self;
        pending.extend_from_slice(made);
        PENDING.store(!pending.is_empty(), Relaxed);
    }
}

/// One `retire` record of the trace, or (`quiet`) a `quiet` record: then `calls` and `mean_ns` are the function's
/// calls and its callers' calls in the invocation it went quiet in, so far (both 0 when it went quiet as an
/// invocation ended), or, when `by` names a function, that function's calls instead of its callers'.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retirement {
    pub(crate) index: u32,
    pub(crate) at_ns: u64,
    pub(crate) calls: u64,
    pub(crate) mean_ns: u64,
    pub(crate) quiet: bool,
    /// The function whose calls `mean_ns` counts, when not the callers' (`NO_BY`): a sibling of the quiet function
    /// under a caller that stays open (see `Recorder::calls_so_far`).
    pub(crate) by: u32,
}

/// `Retirement::by` when the denominator is the callers' calls.
pub(crate) const NO_BY: u32 = u32::MAX;

/// The retirement settings (`CALLTIME_EXACT`, `CALLTIME_RETIRE_FACTOR`, `CALLTIME_RETIRE_MIN_CALLS`,
/// `CALLTIME_QUIET_AFTER`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(crate) enabled: bool,
    pub(crate) factor: u64,
    pub(crate) min_calls: u64,
    /// Invocations with counted calls of a retired function before it goes quiet; 0: never.
    pub(crate) quiet_after: u64,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Reads the settings from the environment (once; the first root entry calls it before any invocation records).
pub(crate) fn settings() -> Settings {
    *SETTINGS.get_or_init(|| {
        let number = |name: &str, default: u64| match std::env::var(name) {
            Err(_) => default,
            Ok(text) => text.trim().parse::<u64>().unwrap_or_else(|_| {
                eprintln!("calltime: {name}={text:?} is not a number; using {default}");
                default
            }),
        };
        let exact = std::env::var("CALLTIME_EXACT").is_ok_and(|v| !matches!(v.trim(), "" | "0"));
        let mut records = lock(&RECORDS);
        records.pending.reserve(256);
        records.made.reserve(256);
        drop(records);
        Settings {
            enabled: !exact,
            factor: number("CALLTIME_RETIRE_FACTOR", 20),
            min_calls: number("CALLTIME_RETIRE_MIN_CALLS", 1000).max(1),
            quiet_after: number("CALLTIME_QUIET_AFTER", 3),
        }
    })
}

/// The state byte of function `index`: 0 while probed, `COUNTED` while its calls are counted, `QUIET` and up once
/// they are not. Inlined into every probe: one relaxed byte load (the bound check folds away, the index being a
/// constant of the probed function).
#[inline(always)]
pub(crate) fn retired_state(index: u32) -> u8 {
    match STATE.get(index as usize) {
        Some(state) => state.load(Relaxed),
        None => 0,
    }
}

/// True once function `index` retired (its calls counted or quiet; not pinned).
pub(crate) fn is_retired(index: u32) -> bool {
    let state = retired_state(index);
    state == COUNTED || state >= QUIET
}

/// Where a thread counts calls of retired functions it makes outside any recording thread (before its first
/// invocation, or after its counters were freed at its exit): never read. Atomics, so that threads sharing it do
/// not race (their counts there are discarded anyway).
static SINK: [AtomicU64; RETIRE_INDICES] = [const { AtomicU64::new(0) }; RETIRE_INDICES];

thread_local! {
    /// This thread's counters of calls of retired functions since `CURRENT` last changed, by function index: `SINK`
    /// until the thread first settles with the runtime running, then its own array of `retire_limit()` counters
    /// (`own_counters`). The probe increments its function's counter without looking at `CURRENT` (a thread-local
    /// without destructor: one load of the pointer and one increment in memory, a relaxed load and store that the
    /// optimiser turns into `incq`); `settle_retired_calls` moves them into the context being left, so each
    /// recorder gets exactly the calls made while it was current, and calls made outside any invocation are
    /// discarded.
    static RETIRED_CALLS: Cell<*const AtomicU64> = const { Cell::new(SINK.as_ptr()) };
    /// `QUIET_SEQ` at this thread's last settle that visited every slot (odd: none yet).
    static SETTLED_SEQ: Cell<u32> = const { Cell::new(1) };
    /// Frees the thread's own counters at its exit (first reached when they are allocated).
    static OWN_COUNTERS: OwnCounters = const { OwnCounters(AtomicPtr::new(std::ptr::null_mut())) };
}

/// The thread's own counters, freed at its exit after its pointer is set back to `SINK` (a probe run by a later
/// thread-local destructor counts there).
struct OwnCounters(AtomicPtr<AtomicU64>);

impl Drop for OwnCounters {
    fn drop(&mut self) {
        let own = self.0.swap(std::ptr::null_mut(), Relaxed);
        if own.is_null() {
            return;
        }
        let _ = RETIRED_CALLS.try_with(|counts| counts.set(SINK.as_ptr()));
        // SAFETY: allocated by `own_counters` with this layout, and no longer reachable from `RETIRED_CALLS`.
        unsafe { std::alloc::GlobalAlloc::dealloc(&std::alloc::System, own.cast(), counters_layout()) };
    }
}

/// The layout of a thread's counters: `retire_limit()` of them.
fn counters_layout() -> std::alloc::Layout {
    std::alloc::Layout::array::<AtomicU64>(LIMIT.load(Relaxed).max(1)).unwrap_or(std::alloc::Layout::new::<u64>())
}

/// Function indices below the returned bound may retire: the plan's functions, fixed at the first call once the
/// runtime runs (and never below an index retired before: `retire_now` may come first). Before the runtime runs
/// (the runtime's own unit tests), every index of `SINK`, not fixed. Under the lock: `records` is its guard.
fn retire_limit(records: &Records) -> usize {
    let limit = LIMIT.load(Relaxed);
    if limit != 0 {
        return limit;
    }
    let Some(rt) = crate::invocation::RUNTIME.get() else { return RETIRE_INDICES };
    let limit = (rt.plan.functions as usize).max(records.above_highest).clamp(1, RETIRE_INDICES);
    LIMIT.store(limit, Relaxed);
    limit
}

/// Gives this thread its own counters, once the runtime runs (cold: once per thread). Allocated from the system
/// allocator, so that the counting allocator does not count the runtime's own allocation in a recorded call.
#[cold]
#[inline(never)]
fn own_counters() {
    let limit = retire_limit(&lock(&RECORDS));
    if limit == RETIRE_INDICES && LIMIT.load(Relaxed) == 0 {
        return; // no runtime yet: counts stay in `SINK`
    }
    let _ = OWN_COUNTERS.try_with(|own| {
        if !own.0.load(Relaxed).is_null() {
            return;
        }
        // SAFETY: a non-zero size (`counters_layout` holds at least one counter).
        let counters = unsafe { std::alloc::GlobalAlloc::alloc_zeroed(&std::alloc::System, counters_layout()) };
        if counters.is_null() {
            return; // out of memory: this thread's counted calls are lost, its program goes on
        }
        own.0.store(counters.cast(), Relaxed);
        RETIRED_CALLS.with(|counts| counts.set(counters.cast()));
    });
}

/// This thread's counter of function `index`'s calls (`SINK`'s, before it has its own).
#[inline(always)]
fn counter(counts: &Cell<*const AtomicU64>, index: u32) -> &AtomicU64 {
    // SAFETY: `index` is a retired function's (or the calibration's, 0): below `retire_limit()`, the length of a
    // thread's own counters, and below `RETIRE_INDICES`, `SINK`'s.
    unsafe { &*counts.get().add(index as usize) }
}

/// Counts one call of retired function `index`. Inlined into every probe of an optimised build; one call in
/// unoptimised ones, so that the probed functions' stack frames do not grow with it (deep recursion in a debug
/// build would overflow sooner).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn count_retired_call(index: u32) {
    RETIRED_CALLS.with(|counts| {
        let counter = counter(counts, index);
        counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
    });
}

/// Moves this thread's counts of retired calls into `left`, the recording context `CURRENT` is leaving (nothing
/// when it is null or `SKIP`), and starts counting afresh. Called at every change of `CURRENT`: once or twice per
/// invocation or poll, a loop over the slots in use.
pub(crate) fn settle_retired_calls(left: *mut Recorder) {
    // Pairs with the release of `retire`'s state byte, read by the probes before: every function this thread
    // counted is within `slots_used()` read below.
    fence(Acquire);
    let _ = RETIRED_CALLS.try_with(|counts| {
        if counts.get() == SINK.as_ptr() {
            // Counts made here went to `SINK`: outside any recording context (or the calibration's, discarded).
            own_counters();
            return;
        }
        let settle = |slot: usize| {
            let index = slot_index(slot);
            if index as usize >= RETIRE_INDICES {
                return;
            }
            let counter = counter(counts, index);
            let calls = counter.load(Relaxed);
            if calls != 0 {
                counter.store(0, Relaxed);
                if left as usize > SKIP as usize {
                    // SAFETY: the context being left is still live (its owner makes it current and withdraws it).
                    unsafe { (*left).add_retired_calls(slot, calls) };
                }
            }
        };
        let seq = QUIET_SEQ.load(Acquire);
        let settled = SETTLED_SEQ.try_with(Cell::get).unwrap_or(1);
        if seq == settled && seq & 1 == 0 {
            // No function went quiet since this thread last visited every slot: its counts are in counted slots.
            let counting = COUNTING_LEN.load(Relaxed) as usize;
            COUNTING[..counting].iter().for_each(|slot| settle(slot.load(Relaxed) as usize));
            fence(Acquire);
            if QUIET_SEQ.load(Relaxed) == seq {
                return;
            }
        }
        (1..=slots_used()).for_each(settle);
        if seq & 1 == 0 {
            let _ = SETTLED_SEQ.try_with(|settled| settled.set(seq));
        }
    });
}

/// Discards this thread's counts of retired calls of every function (the calibration counts into its own index,
/// which no plan function retires with before it).
pub(crate) fn discard_retired_calls() {
    let _ = RETIRED_CALLS.try_with(|counts| {
        if counts.get() != SINK.as_ptr() {
            (0..LIMIT.load(Relaxed) as u32).for_each(|index| counter(counts, index).store(0, Relaxed));
        }
    });
}

/// Function `index` may retire: below the plan's functions (see `retire_limit`).
pub(crate) fn may_retire(index: u32) -> bool {
    let limit = LIMIT.load(Relaxed);
    limit == 0 || (index as usize) < limit
}

/// Slots in use: the per-recorder counters `1..=slots_used()` may be non-zero.
#[inline]
pub(crate) fn slots_used() -> usize {
    SLOTS_USED.load(Relaxed) as usize
}

/// The function index of retirement slot `slot` (`u32::MAX` for none).
pub(crate) fn slot_index(slot: usize) -> u32 {
    SLOT_INDEX.get(slot).map_or(u32::MAX, |s| s.load(Relaxed))
}

/// The retirement slot of function `index` (0: not retired).
pub(crate) fn slot_of(index: u32) -> usize {
    SLOT_OF.get(index as usize).map_or(0, |s| s.load(Relaxed) as usize)
}

/// Functions retired so far in this process.
pub(crate) fn retired_functions() -> u64 {
    lock(&RECORDS).total
}

/// True when some retirements are not written yet (a relaxed load: the writer checks it per invocation).
#[inline]
pub(crate) fn has_pending() -> bool {
    PENDING.load(Relaxed)
}

/// Takes the retirements not yet written.
pub(crate) fn take_pending(into: &mut Vec<Retirement>) {
    let mut records = lock(&RECORDS);
    into.extend_from_slice(&records.pending);
    records.pending.clear();
    PENDING.store(false, Relaxed);
}

/// Marks function `index` as one that never retires (an async function). A load, and a store the first time.
#[inline]
pub(crate) fn pin(index: u32) {
    if let Some(state) = STATE.get(index as usize) {
        if state.load(Relaxed) == 0 {
            let _ = state.compare_exchange(0, PINNED, Relaxed, Relaxed);
        }
    }
}

/// Gives function `index` a state byte for calibration only (before any invocation records; 0 restores it).
pub(crate) fn set_state_for_calibration(index: u32, state: u8) {
    STATE[index as usize].store(state, Relaxed);
}

/// Retires function `index` after `calls` observed calls of compensated mean `mean_ns`. Cold.
#[cold]
#[inline(never)]
pub(crate) fn retire(index: u32, calls: u64, mean_ns: u64) {
    retire_with(index, calls, mean_ns, 0, false);
}

/// Retires function `index` as part of a recursive cluster's unit whose `calls` calls had a compensated mean of
/// `mean_ns` (its outermost calls' time per call). Every function of the unit passes `cycle`, the same for all: the
/// slot of the first member retired, or `NEW_CYCLE` for that first member (see `CYCLE_OF`); `member` tells the
/// cycle's members from the rest of the unit (`UNIT_OF`), which goes quiet with them or, alone, as any retired
/// function. Returns the slot the function got (0 when it did not retire). The root's state byte too: its nested
/// calls then retire (`probe::enter_root`).
#[cold]
#[inline(never)]
fn retire_cluster_member(index: u32, calls: u64, mean_ns: u64, cycle: u32, member: bool) -> u32 {
    retire_with(index, calls, mean_ns, cycle, member)
}

/// `retire_cluster_member`'s `cycle` for the first member of a cycle: its own slot numbers the cycle.
const NEW_CYCLE: u32 = u32::MAX;

fn retire_with(index: u32, calls: u64, mean_ns: u64, cycle: u32, member: bool) -> u32 {
    let Some(state) = STATE.get(index as usize) else { return 0 };
    let mut records = lock(&RECORDS);
    let slot = SLOTS_USED.load(Relaxed) as usize + 1;
    if state.load(Relaxed) != 0 || index as usize >= retire_limit(&records) || slot > RETIRE_INDICES {
        return 0;
    }
    // The slot is published before the state byte that makes probes count: a settle that sees the byte's effect
    // (a count) scans the slot.
    SLOT_INDEX[slot].store(index, Relaxed);
    SLOT_OF[index as usize].store(slot as u32, Relaxed);
    let cycle = if cycle == NEW_CYCLE { slot as u32 } else { cycle };
    CYCLE_OF[slot].store(if member { cycle } else { 0 }, Relaxed);
    UNIT_OF[slot].store(cycle, Relaxed);
    SLOTS_USED.store(slot as u32, Relaxed);
    let counting = COUNTING_LEN.load(Relaxed);
    COUNTING[counting as usize].store(slot as u32, Relaxed);
    COUNTING_LEN.store(counting + 1, Relaxed);
    if state.compare_exchange(0, COUNTED, Release, Relaxed).is_err() {
        // Pinned meanwhile (we hold the lock: nobody took the slot).
        COUNTING_LEN.store(counting, Relaxed);
        SLOT_OF[index as usize].store(0, Relaxed);
        SLOT_INDEX[slot].store(u32::MAX, Relaxed);
        SLOTS_USED.store(slot as u32 - 1, Relaxed);
        return 0;
    }
    records.above_highest = records.above_highest.max(index as usize + 1);
    records.mirror(index, COUNTED);
    let at_ns = crate::clock::clock().elapsed_ns();
    let retirement = Retirement { index, at_ns, calls, mean_ns, quiet: false, by: NO_BY };
    records.push(retirement);
    records.total += 1;
    slot as u32
}

impl Records {
    /// Adds a `retire` or `quiet` record to write, keeping room in `pending` for every record made (a forked child
    /// copies them all there without allocating: `forget_parent`).
    fn push(&mut self, record: Retirement) {
        self.made.push(record);
        let room = self.made.len().saturating_sub(self.pending.len());
        self.pending.reserve(room);
        self.pending.push(record);
        PENDING.store(true, Relaxed);
    }
}

/// An invocation ended (a thread's root returned, or a root task finished): each retired function it counted calls
/// of is a step nearer going quiet, and one it counted `QUIET_AT_END_CALLS` calls of goes quiet now. A loop over the
/// slots in use, as when settling. `may_be_left_out`: the invocation may not be written (`--slower-than`,
/// `--keep-*` decide later), so it cannot be the one the tool measures a rate from.
pub(crate) fn note_invocation(rec: &Recorder, may_be_left_out: bool) {
    // Only a written invocation: the tool measures the rate from it.
    let may_go_quiet = !rec.aggregate_only && !may_be_left_out && quiet_within_enabled();
    for (slot, calls) in rec.retired_pairs() {
        let slot = slot as usize;
        let unit = UNIT_OF.get(slot).map_or(0, |u| u.load(Relaxed));
        if may_go_quiet && unit != 0 && slot_is_counted(slot) && unit_calls(rec, unit) >= QUIET_AT_END_CALLS {
            go_quiet_unit(unit);
        } else if calls >= QUIET_AT_END_CALLS && may_go_quiet && slot_is_counted(slot) {
            go_quiet(slot_index(slot));
        } else if calls != 0 {
            note_counted(slot);
        }
    }
}

/// The calls `rec` counted of the functions of recursive cluster unit `unit` (`UNIT_OF`). A cycle goes quiet as a
/// whole and the tool estimates its members, and the functions under them, from the same invocations: so it is the
/// unit's calls that tell whether one invocation gave enough. winnow's arithmetic parser counts 180 to 3,200 calls
/// of each of its unit's 20 functions per invocation, and so counted three invocations where one does
/// (docs/truth-bench.md, "Eleventh round"). A loop over the invocation's counted slots for each slot of a unit still
/// counted: only until the unit goes quiet (a few invocations), over tens of slots.
fn unit_calls(rec: &Recorder, unit: u32) -> u64 {
    let in_unit = |&(slot, _): &(u32, u64)| UNIT_OF.get(slot as usize).is_some_and(|u| u.load(Relaxed) == unit);
    rec.retired_pairs().filter(in_unit).map(|(_, calls)| calls).sum()
}

/// Counted calls of a retired function in one finished invocation past which it goes quiet at that invocation's end
/// rather than after `quiet_after` invocations: the invocation's calls of it, all counted, give the tool its rate per
/// call of its callers (docs/trace-format.md, `quiet` records). The tokenizer's `token`, 19,906 calls an invocation,
/// went quiet after the third invocation; now after the first (docs/truth-bench.md, "Seventh round").
pub(crate) const QUIET_AT_END_CALLS: u64 = 4096;

/// An invocation counted calls of retirement slot `slot`'s function: after `quiet_after` of them the function goes
/// quiet (its probe stops counting; a `quiet` record says from when).
fn note_counted(slot: usize) {
    let Some(counted) = COUNTED_IN.get(slot) else { return };
    let quiet_after = SETTINGS.get().map_or(0, |s| s.quiet_after);
    let seen = counted.load(Relaxed) + 1;
    counted.store(seen, Relaxed);
    if quiet_after != 0 && u64::from(seen) == quiet_after {
        go_quiet(slot_index(slot));
    }
}

/// Stops counting the calls of retired function `index` (cold; once per function). Calls already counted stay in
/// the per-thread counters and are settled as before; the slot is not reused. A member of a recursive cluster's
/// cycle goes quiet with every other function of its unit (the cycle's members and the functions under them that
/// retired with them), in order of retirement (see `CYCLE_OF`, `UNIT_OF`): the tool then estimates them all from the
/// same invocations, none from another's estimate but the members' callees from the members'.
#[cold]
#[inline(never)]
pub(crate) fn go_quiet(index: u32) {
    let Some(state) = STATE.get(index as usize) else { return };
    let cycle = CYCLE_OF.get(slot_of(index)).map_or(0, |c| c.load(Relaxed));
    if cycle != 0 {
        return go_quiet_unit(cycle);
    }
    lock(&RECORDS).quiet_locked(state, index, 0, 0, NO_BY);
}

/// Makes every function of recursive cluster unit `unit` that is still counted quiet, at once (under the lock).
#[cold]
#[inline(never)]
fn go_quiet_unit(unit: u32) {
    let mut records = lock(&RECORDS);
    for (slot, of) in UNIT_OF.iter().enumerate().take(slots_used() + 1).skip(1) {
        let function = slot_index(slot);
        if of.load(Relaxed) == unit {
            if let Some(state) = STATE.get(function as usize) {
                records.quiet_locked(state, function, 0, 0, NO_BY);
            }
        }
    }
}

/// `go_quiet` within a long invocation: `calls` of the function and `per` calls made in it so far, of its callers
/// (with no call of a caller open, `by` = `NO_BY`) or of function `by` (a sibling under a caller that stays open),
/// so that their ratio is its calls per such call (the tool's estimate of the rest; docs/trace-format.md, `quiet`
/// records). Never a cycle's member: its callers within the cycle would be estimates (it goes quiet at an
/// invocation's end instead, with its cycle).
#[cold]
#[inline(never)]
pub(crate) fn go_quiet_within(index: u32, calls: u64, per: u64, by: u32) {
    let Some(state) = STATE.get(index as usize) else { return };
    let mut records = lock(&RECORDS);
    if is_cycle_member(slot_of(index)) {
        return;
    }
    records.quiet_locked(state, index, calls, per, by);
}

/// Retirement slot `slot`'s function is a member of a recursive cluster's cycle.
fn is_cycle_member(slot: usize) -> bool {
    CYCLE_OF.get(slot).is_some_and(|cycle| cycle.load(Relaxed) != 0)
}

impl Records {
    /// Makes function `index` (state byte `state`) quiet if it is counted now, with its `quiet` record.
    fn quiet_locked(&mut self, state: &AtomicU8, index: u32, calls: u64, caller_calls: u64, by: u32) {
        let slot = slot_of(index);
        if state.load(Relaxed) != COUNTED {
            return;
        }
        // Read before the store: an invocation that ended before `at_ns` counted every call it made.
        let at_ns = crate::clock::clock().elapsed_ns();
        // Out of the counted slots, under the sequence lock (see `settle_retired_calls`).
        let seq = QUIET_SEQ.load(Relaxed);
        QUIET_SEQ.store(seq | 1, Relaxed);
        fence(Release);
        // Shifted down rather than swapped with the last, so that the rest stay ascending.
        let counting = COUNTING_LEN.load(Relaxed) as usize;
        if let Some(at) = COUNTING[..counting].iter().position(|s| s.load(Relaxed) as usize == slot) {
            for i in at..counting - 1 {
                COUNTING[i].store(COUNTING[i + 1].load(Relaxed), Relaxed);
            }
            COUNTING_LEN.store(counting as u32 - 1, Relaxed);
        }
        state.store(QUIET, Relaxed);
        QUIET_SEQ.store((seq | 1).wrapping_add(1), Release);
        self.mirror(index, QUIET);
        self.push(Retirement { index, at_ns, calls, mean_ns: caller_calls, quiet: true, by });
    }
}

/// Counted calls of a retired function in one invocation past which it goes quiet within that invocation (when
/// `quiet_after` is not 0), with no call of its callers open: a program whose root runs once for a long time would
/// otherwise count its retired calls to the end. Enough calls that the ratio to its callers' calls is known.
pub(crate) const QUIET_WITHIN_CALLS: u64 = 1 << 16;

/// The same while a call of one of its callers is open, its ratio then taken to a busy sibling's calls: as many as
/// an invocation that ends gives (`QUIET_AT_END_CALLS`). 65,536 left the tokenizer's first invocation counting
/// `class_of`'s calls to its end (88,000 of them after it retired, about 30 instructions each) under `tokenize`,
/// open throughout (docs/truth-bench.md, "Eighth round").
pub(crate) const QUIET_WITHIN_OPEN_CALLS: u64 = QUIET_AT_END_CALLS;

/// Whether retired functions may go quiet within an invocation (retirement on, `quiet_after` not 0).
#[inline]
pub(crate) fn quiet_within_enabled() -> bool {
    SETTINGS.get().is_some_and(|s| s.enabled && s.quiet_after != 0)
}

/// This thread's calls of retirement slot `slot`'s function not yet settled into a recorder.
pub(crate) fn unsettled_calls(slot: usize) -> u64 {
    let index = slot_index(slot);
    if index as usize >= RETIRE_INDICES {
        return 0;
    }
    let unsettled = |counts: &Cell<*const AtomicU64>| match counts.get() == SINK.as_ptr() {
        true => 0, // no counters of its own: nothing it counted is kept
        false => counter(counts, index).load(Relaxed),
    };
    RETIRED_CALLS.try_with(unsettled).unwrap_or(0)
}

/// The lowest slot above `after` whose function is counted now (not quiet), from `COUNTING`: a binary search, so a
/// caller that makes a function go quiet between two calls (which shifts the slots above it) still gets the next.
/// Without the lock: while another thread makes a function go quiet, a slot may be missed, which its caller's next
/// check makes up for.
pub(crate) fn counted_slot_after(after: usize) -> Option<usize> {
    let counting = &COUNTING[..(COUNTING_LEN.load(Relaxed) as usize).min(RETIRE_INDICES + 1)];
    let at = counting.partition_point(|s| s.load(Relaxed) as usize <= after);
    counting.get(at).map(|s| s.load(Relaxed) as usize).filter(|&slot| slot > after)
}

/// Retirement slot `slot`'s function is counted and may go quiet within an invocation: not a member of a recursive
/// cluster's cycle, which goes quiet at an invocation's end (`go_quiet_within` passes it over).
pub(crate) fn slot_may_go_quiet(slot: usize) -> bool {
    slot_is_counted(slot) && !is_cycle_member(slot)
}

/// Retirement slot `slot`'s function is being counted (not quiet).
pub(crate) fn slot_is_counted(slot: usize) -> bool {
    let index = slot_index(slot);
    index != u32::MAX && retired_state(index) == COUNTED
}

/// The rule: enough calls, and a compensated time per call (ticks; a robust estimate, `Spread`) under `factor x
/// recorded_outer`.
fn should_retire(index: u32, calls: u64, mean_ticks: f64, root: u32) -> Option<&'static Calibration> {
    let settings = *SETTINGS.get()?;
    let cal = crate::calibrate::get()?;
    let eligible = settings.enabled && index != root && (index as usize) < RETIRE_INDICES;
    let fast = mean_ticks < settings.factor as f64 * cal.recorded_outer_ticks;
    (eligible && calls >= settings.min_calls && fast && retired_state(index) == 0).then_some(cal)
}

/// Retires `index` if the rule holds for `calls` calls of compensated mean `mean_ticks`.
fn retire_if_fast(index: u32, calls: u64, mean_ticks: f64, root: u32) {
    if let Some(cal) = should_retire(index, calls, mean_ticks, root) {
        retire(index, calls, (mean_ticks * cal.ns_per_tick).round() as u64);
    }
}

/// A folded call path's check, on a timed exit every `CHECK_EVERY` random samples: `samples` random samples of
/// `sample_ticks` in all, `calls` calls on the path.
#[cold]
#[inline(never)]
pub(crate) fn consider_path(index: u32, root: u32, calls: u64, samples: u64, sample_ticks: u64) {
    // Only leaves retire (see `Watch::observe_nodes`): the caller passes 0 samples for a path with child paths.
    let Some(cal) = crate::calibrate::get() else { return };
    if samples == 0 {
        return;
    }
    let mean = (sample_ticks as f64 / samples as f64 - cal.timed_inner_ticks).max(0.0);
    retire_if_fast(index, calls, mean, root);
}

/// Per-function calls and compensated time observed so far, and scratch space: one per observer (each folding
/// thread, and the writer), so observers never share a counter.
pub(crate) struct Watch {
    descendants: Vec<u32>,
    seen: Vec<Seen>,
    /// The functions the current observation added calls of, each once.
    observed: Vec<u32>,
    /// Numbers the observations, to mark the functions that called probed functions in the current one.
    observation: u64,
    /// Trees still to pass over before the next observation (see `MATURE_EVERY`).
    skip: u32,
    /// Whether mature trees are sampled (the writer's watch); the fold's watch sees every big invocation.
    sample_mature: bool,
    /// Recursive clusters seen in the observed trees (see `cluster`).
    clusters: cluster::Clusters,
}

/// The first `min_calls / WARM_UP_ONE_IN` observed calls of a function are left out of its estimate: the first
/// calls a process makes run with cold caches and predictors (the tokenizer's `token`: up to 1.9x its plain mean,
/// docs/truth-bench.md, "Seventh round"), and the estimate is the mean its `retire` record gives.
const WARM_UP_ONE_IN: u64 = 8;

/// Once at most one node in this many of an observed tree is of a function short of `min_calls` observed calls (the
/// busy functions, those worth retiring, have reached it), only one tree in this many is observed: a decision then
/// rests on a running mean that a sample of trees (taken whatever their times) leaves unbiased, and the watch's
/// per-node work on a program of many alike invocations falls by as much. Rare functions reach `min_calls` later.
const MATURE_EVERY: u32 = 8;

#[derive(Clone, Copy, Default)]
struct Seen {
    calls: u64,
    /// The compensated times of its calls past the first `min_calls / WARM_UP_ONE_IN` (see `Spread`).
    spread: Spread,
    /// The last observation in which a call of the function had probed callees.
    caller_in: u64,
    /// The last observation that added calls of the function (it is then in `Watch::observed`, once).
    checked_in: u64,
}

impl Watch {
    pub(crate) const fn new() -> Watch {
        Watch {
            descendants: Vec::new(),
            seen: Vec::new(),
            observed: Vec::new(),
            observation: 0,
            skip: 0,
            sample_mature: false,
            clusters: cluster::Clusters::new(),
        }
    }

    /// A watch that observes one tree in `MATURE_EVERY` once their functions are mature (the writer's).
    pub(crate) const fn sampling() -> Watch {
        let mut watch = Watch::new();
        watch.sample_mature = true;
        watch
    }

    /// Adds the finished nodes of a per-call tree (parents before children, slot 0 the root) and retires the
    /// functions that meet the rule, on the robust estimate of their time per call (`Spread`, past their first
    /// calls: `WARM_UP_ONE_IN`). Compensated time of a node: raw - recorded_inner - recorded_outer x its
    /// descendant nodes, clamped at 0. Only leaves retire (functions none of whose calls here had probed callees):
    /// the callees of a retired function would hang under its caller, a tree that never happened. A caller may
    /// retire later, once its callees did.
    pub(crate) fn observe_nodes(&mut self, nodes: &[Node]) {
        let (Some(settings), Some(cal)) = (SETTINGS.get(), crate::calibrate::get()) else { return };
        if !settings.enabled || nodes.is_empty() {
            return;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.descendants.clear();
        self.descendants.resize(nodes.len(), 0);
        let descendants = &mut self.descendants[..nodes.len()];
        for slot in (1..nodes.len()).rev() {
            let parent = (nodes[slot].link & PARENT_MASK) as usize;
            if parent < slot {
                descendants[parent] += descendants[slot] + 1;
            }
        }
        self.observation += 1;
        let (observation, root) = (self.observation, nodes[0].index);
        // Nodes of functions still short of `min_calls`: while they are few, the tree counts as mature.
        let mut young = 0;
        self.observed.clear();
        // Locals, not `self.` fields, in this loop over thousands of nodes: no reloads through `self`.
        let (seen_by_index, observed) = (&mut self.seen, &mut self.observed);
        for (node, &descendants) in nodes[1..].iter().zip(&self.descendants[1..nodes.len()]) {
            let index = node.index as usize;
            // A function that retired (or is pinned) meanwhile has nothing left to decide.
            if node.end == OPEN || index >= RETIRE_INDICES || node.index == root || retired_state(node.index) != 0 {
                continue;
            }
            if seen_by_index.len() <= index {
                seen_by_index.resize(index + 1, Seen::default());
            }
            // Through i64 (durations are far below 2^63): one conversion instruction, where u64 to f64 takes a
            // branch and several.
            let raw = node.end.saturating_sub(node.start) as i64 as f64;
            let compensated = raw - cal.recorded_inner_ticks - cal.recorded_outer_ticks * f64::from(descendants);
            let seen = &mut seen_by_index[index];
            young += usize::from(seen.calls < settings.min_calls);
            seen.calls += 1;
            if seen.calls > settings.min_calls / WARM_UP_ONE_IN {
                seen.spread.add(compensated);
            }
            if descendants > 0 {
                seen.caller_in = observation;
            }
            if seen.checked_in != observation {
                seen.checked_in = observation;
                observed.push(node.index);
            }
        }
        // The rule, once per function with a closed call in the tree (not once per node), in order of first call.
        for &index in &self.observed {
            let seen = &self.seen[index as usize];
            if seen.calls < settings.min_calls || seen.caller_in == self.observation {
                continue;
            }
            let (calls, mean) = (seen.calls, seen.spread.trimmed_mean());
            retire_if_fast(index, calls, mean, root);
        }
        self.clusters.observe(nodes, &self.descendants, settings, cal);
        if young * MATURE_EVERY as usize <= nodes.len() && self.sample_mature {
            self.skip = MATURE_EVERY - 1;
        }
    }
}

thread_local! {
    /// The folding thread's observations (folds are cold: once per big invocation).
    static FOLD_WATCH: std::cell::RefCell<Watch> = const { std::cell::RefCell::new(Watch::new()) };
}

/// At an invocation's fold: observes its per-call nodes (cold).
pub(crate) fn observe_at_fold(nodes: &[Node]) {
    let _ = FOLD_WATCH.try_with(|watch| {
        if let Ok(mut watch) = watch.try_borrow_mut() {
            watch.observe_nodes(nodes);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crates_state_table_follows_retirements_made_before_and_after_it_registers() {
        static EARLY: States<62_010> = States::new();
        static LATE: States<62_010> = States::new();
        // Function indices no other test uses.
        let (before, after) = (62_000u32, 62_001u32);
        EARLY.register_once();
        retire(before, 0, 0);
        assert_eq!(EARLY.state(before), retired_state(before), "written on retirement");
        assert_ne!(EARLY.state(before), 0);
        LATE.register_once();
        assert_eq!(LATE.state(before), retired_state(before), "copied when it registers");
        retire(after, 0, 0);
        go_quiet(after);
        assert_eq!((EARLY.state(after), LATE.state(after)), (QUIET, QUIET), "written when it goes quiet");
        assert_eq!(EARLY.state(62_002), 0);
        assert_eq!(EARLY.state(70_000), 0, "past the table's end");
    }

    #[test]
    fn the_counted_slots_stay_ascending_and_are_walked_in_order_when_some_go_quiet() {
        // Function indices no other test uses; other tests may retire theirs meanwhile, so only the order and these
        // four are checked.
        let indices = [62_100u32, 62_101, 62_102, 62_103];
        indices.iter().for_each(|&index| retire(index, 0, 0));
        let slots = indices.map(slot_of);
        assert!(slots.windows(2).all(|w| w[0] < w[1]), "slots in order of retirement: {slots:?}");
        go_quiet(indices[1]); // swapped with the last, it would leave [.., a, d, c]
        let walked = {
            let _no_retirement_meanwhile = lock(&RECORDS);
            let counting: Vec<usize> =
                COUNTING[..COUNTING_LEN.load(Relaxed) as usize].iter().map(|s| s.load(Relaxed) as usize).collect();
            assert!(counting.windows(2).all(|w| w[0] < w[1]), "counted slots ascending: {counting:?}");
            let mut walked = Vec::new();
            let mut after = 0;
            while let Some(slot) = counted_slot_after(after) {
                walked.push(slot);
                after = slot;
            }
            assert_eq!(walked, counting, "the walk visits every counted slot, in order");
            walked
        };
        assert!(walked.contains(&slots[0]) && walked.contains(&slots[2]) && walked.contains(&slots[3]));
        assert!(!walked.contains(&slots[1]), "a quiet slot is not visited");
        // Going quiet during a walk (as `consider_quiet_within` does) shifts the slots above: the walk goes on.
        let (mut after, mut visited) = (0, Vec::new());
        while let Some(slot) = counted_slot_after(after) {
            if slot == slots[2] {
                go_quiet(indices[2]);
            }
            visited.push(slot);
            after = slot;
        }
        assert!(visited.contains(&slots[2]) && visited.contains(&slots[3]), "{visited:?} {slots:?}");
    }

    #[test]
    fn the_writers_watch_samples_trees_once_their_functions_are_mature() {
        settings();
        crate::calibrate::at_start_up();
        // Function indices no other test uses, and calls far too slow to retire.
        let (root, leaf, slow) = (60_000u32, 60_001u32, 1u64 << 40);
        let node = |index, link, end| Node { start: 0, end, index, link, allocs: 0, alloc_bytes: 0 };
        let mut nodes = vec![node(root, PARENT_MASK, slow * 4000)];
        nodes.extend((0..2000).map(|_| node(leaf, 0, slow)));
        let calls = |watch: &Watch| watch.seen[leaf as usize].calls;
        let mut watch = Watch::sampling();
        watch.observe_nodes(&nodes); // half of the leaf's nodes are under min_calls (1000): observed in full
        watch.observe_nodes(&nodes); // none: mature
        assert_eq!(calls(&watch), 4000);
        for _ in 1..MATURE_EVERY {
            watch.observe_nodes(&nodes);
        }
        assert_eq!(calls(&watch), 4000, "the next {} trees are passed over", MATURE_EVERY - 1);
        watch.observe_nodes(&nodes);
        assert_eq!(calls(&watch), 6000, "then one is observed");
        // The fold's watch (one per big invocation) observes every tree.
        let mut every = Watch::new();
        for _ in 0..4 {
            every.observe_nodes(&nodes);
        }
        assert_eq!(calls(&every), 8000);
    }
}

//! Probes that retire themselves: a function that has shown, over enough calls, that it is too fast to be worth its
//! probe stops being recorded for the rest of the process; its later calls inside invocations are only counted.
//!
//! The state is one byte per function index in a static array (zero, in .bss): 0 while the function is probed, else its
//! retirement slot (1..=126), which indexes the per-recorder counters of retired calls, `PINNED` for an async function
//! (it never retires: its wrapper does not check the byte), or `QUIET` (the high bit) once it went quiet. The probe
//! reads the byte (a relaxed load) first, before any thread-local access. A retired function first counts its calls
//! exactly: that load, a branch and a per-thread counter (`RETIRED_CALLS`), settled into the current recorder whenever
//! `CURRENT` changes. Once `quiet_after` invocations have counted its calls (or one invocation ended having counted
//! `QUIET_AT_END_CALLS` of them, or one long invocation has counted `QUIET_WITHIN_CALLS`:
//! `Recorder::consider_quiet_within`), it goes quiet: its probe is then the load and one branch on the sign bit,
//! nothing else, and the tool estimates its later calls from the counted ones (a `quiet` record; docs/trace-format.md).
//! Decisions are never taken per call: at an invocation's fold (`observe_nodes`, once per big invocation), on the timed
//! exit of a folded call every `CHECK_EVERY` random samples (`consider_path`), and on the writer thread for per-call
//! invocations (`Watch`).

use std::cell::Cell;
use std::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU8, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Mutex, OnceLock};

use crate::calibrate::Calibration;
use crate::invocation::{lock, SKIP};
use crate::recorder::{Node, Recorder, OPEN, PARENT_MASK, RETIRED_COUNTERS};

mod cluster;

/// Function indices that can retire; higher ones stay probed.
pub(crate) const RETIRE_INDICES: usize = 1 << 16;
/// Retirement slots per process (the state byte's values 1..=126); once they are used up no function retires.
pub(crate) const RETIRE_SLOTS: usize = 126;
/// The state of a function that never retires (an async function).
const PINNED: u8 = 127;
/// The state of a retired function whose calls are no longer counted: the sign bit, so that the probe's quiet path
/// is one test of it.
pub(crate) const QUIET: u8 = 0x80;
/// A folded path is checked after every this many random samples.
pub(crate) const CHECK_EVERY: u64 = 32;

/// Per function index: 0 while probed, else its retirement slot.
static STATE: [AtomicU8; RETIRE_INDICES] = [const { AtomicU8::new(0) }; RETIRE_INDICES];
/// Per retirement slot (1..=126): the function index it belongs to.
static SLOT_INDEX: [AtomicU32; RETIRE_SLOTS + 2] = [const { AtomicU32::new(0) }; RETIRE_SLOTS + 2];
/// Per retirement slot: invocations that counted calls of its function (a relaxed load and store, not a
/// read-modify-write: two threads ending invocations at once may count one; it then goes quiet one later).
static COUNTED_IN: [AtomicU32; RETIRE_SLOTS + 2] = [const { AtomicU32::new(0) }; RETIRE_SLOTS + 2];
/// Per retirement slot: its function retired with a recursive cluster and its calls stay counted (never quiet:
/// see `cluster`).
static KEEPS_COUNTING: [AtomicBool; RETIRE_SLOTS + 2] = [const { AtomicBool::new(false) }; RETIRE_SLOTS + 2];
/// Slots handed out so far (the highest slot in use); readers scan counters `1..=SLOTS_USED`.
static SLOTS_USED: AtomicU32 = AtomicU32::new(0);
/// Retirements not yet written by the writer, and the count ever made (under one lock: retirements are rare).
static PENDING: AtomicBool = AtomicBool::new(false);
static RECORDS: Mutex<Records> = Mutex::new(Records {
    pending: Vec::new(),
    total: 0,
    made: Vec::new(),
    tables: [NO_TABLE; MAX_TABLES],
    tables_used: 0,
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
    /// start: every retirement made so far is written again, in order (no allocation: both hold at most
    /// `2 * RETIRE_SLOTS`, reserved).
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
        records.pending.reserve(2 * RETIRE_SLOTS);
        records.made.reserve(2 * RETIRE_SLOTS);
        drop(records);
        Settings {
            enabled: !exact,
            factor: number("CALLTIME_RETIRE_FACTOR", 20),
            min_calls: number("CALLTIME_RETIRE_MIN_CALLS", 1000).max(1),
            quiet_after: number("CALLTIME_QUIET_AFTER", 3),
        }
    })
}

/// The state byte of function `index`: 0 while probed, its retirement slot while its calls are counted, `QUIET`
/// and up once they are not. Inlined into every probe: one relaxed byte load (the bound check folds away, the index
/// being a constant of the probed function).
#[inline(always)]
pub(crate) fn retired_state(index: u32) -> u8 {
    match STATE.get(index as usize) {
        Some(state) => state.load(Relaxed),
        None => 0,
    }
}

thread_local! {
    /// Calls of retired functions made on this thread since `CURRENT` last changed, by retirement slot. The probe
    /// increments them without looking at `CURRENT` (a thread-local without destructor: one instruction);
    /// `settle_retired_calls` moves them into the context being left, so each recorder gets exactly the calls made
    /// while it was current, and calls made outside any invocation are discarded.
    static RETIRED_CALLS: [Cell<u64>; RETIRED_COUNTERS] = const { [const { Cell::new(0) }; RETIRED_COUNTERS] };
}

/// Counts one call of the retired function of slot `slot`. Inlined into every probe of an optimised build; one
/// call in unoptimised ones, so that the probed functions' stack frames do not grow with it (deep recursion in a
/// debug build would overflow sooner).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn count_retired_call(slot: u8) {
    RETIRED_CALLS.with(|counts| {
        let counter = &counts[slot as usize];
        counter.set(counter.get().wrapping_add(1));
    });
}

/// Moves this thread's counts of retired calls into `left`, the recording context `CURRENT` is leaving (nothing
/// when it is null or `SKIP`), and starts counting afresh. Called at every change of `CURRENT`: once or twice per
/// invocation or poll, a loop over the slots in use.
pub(crate) fn settle_retired_calls(left: *mut Recorder) {
    // Pairs with the release of `retire`'s state byte, read by the probes before: every slot this thread counted
    // into is within `slots_used()` read below.
    fence(Acquire);
    let used = slots_used().min(RETIRED_COUNTERS - 1);
    if used == 0 {
        return;
    }
    let _ = RETIRED_CALLS.try_with(|counts| {
        let counts = &counts[1..=used];
        // Once the retired functions went quiet nothing is counted: one pass of vector ORs (no stores) says so, where
        // the loop below took about 100 instructions for 18 slots, twice an invocation (httparse, docs/performance.md
        // "Eighth round").
        if counts.iter().fold(0, |any, counter| any | counter.get()) == 0 {
            return;
        }
        // A slice, not `enumerate().skip(1)`: that compiled to an out-of-line `nth` call per settle.
        for (slot, counter) in (1..).zip(counts) {
            let calls = counter.replace(0);
            if calls != 0 && left as usize > SKIP as usize {
                // SAFETY: the context being left is still live (its owner makes it current and withdraws it).
                unsafe { (*left).retired_calls[slot] += calls };
            }
        }
    });
}

/// Discards this thread's counts of retired calls in every slot (the calibration counts into a slot not handed out).
pub(crate) fn discard_retired_calls() {
    let _ = RETIRED_CALLS.try_with(|counts| counts.iter().for_each(|counter| counter.set(0)));
}

/// Slots in use: the per-recorder counters `1..=slots_used()` may be non-zero.
#[inline]
pub(crate) fn slots_used() -> usize {
    SLOTS_USED.load(Relaxed) as usize
}

/// The function index of retirement slot `slot`.
pub(crate) fn slot_index(slot: usize) -> u32 {
    SLOT_INDEX.get(slot).map_or(u32::MAX, |s| s.load(Relaxed))
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
    retire_with(index, calls, mean_ns, false);
}

/// Retires function `index` as part of a recursive cluster's unit whose `calls` calls had a compensated mean of
/// `mean_ns` (its outermost calls' time per call); a member of the cycle (`in_cycle`) stays counted for the rest
/// of the process (see `cluster`). The root's state byte too: its nested calls then retire (`probe::enter_root`).
#[cold]
#[inline(never)]
fn retire_cluster_member(index: u32, calls: u64, mean_ns: u64, in_cycle: bool) {
    retire_with(index, calls, mean_ns, in_cycle);
}

fn retire_with(index: u32, calls: u64, mean_ns: u64, keeps_counting: bool) {
    let Some(state) = STATE.get(index as usize) else { return };
    let mut records = lock(&RECORDS);
    let slot = SLOTS_USED.load(Relaxed) as usize + 1;
    if state.load(Relaxed) != 0 || slot > RETIRE_SLOTS {
        return;
    }
    // The slot is published before the state byte that makes probes count into it.
    SLOT_INDEX[slot].store(index, Relaxed);
    KEEPS_COUNTING[slot].store(keeps_counting, Relaxed);
    SLOTS_USED.store(slot as u32, Relaxed);
    if state.compare_exchange(0, slot as u8, Release, Relaxed).is_err() {
        SLOTS_USED.store(slot as u32 - 1, Relaxed); // pinned meanwhile (we hold the lock: nobody took the slot)
        return;
    }
    records.mirror(index, slot as u8);
    let at_ns = crate::clock::clock().elapsed_ns();
    let retirement = Retirement { index, at_ns, calls, mean_ns, quiet: false, by: NO_BY };
    records.pending.push(retirement);
    records.made.push(retirement);
    records.total += 1;
    PENDING.store(true, Relaxed);
}

/// An invocation ended (a thread's root returned, or a root task finished): each retired function it counted calls
/// of is a step nearer going quiet, and one it counted `QUIET_AT_END_CALLS` calls of goes quiet now. A loop over the
/// slots in use, as when settling. `may_be_left_out`: the invocation may not be written (`--slower-than`,
/// `--keep-*` decide later), so it cannot be the one the tool measures a rate from.
pub(crate) fn note_invocation(rec: &Recorder, may_be_left_out: bool) {
    let used = slots_used().min(RETIRED_COUNTERS - 1);
    // Only a written invocation: the tool measures the rate from it.
    let may_go_quiet = !rec.aggregate_only && !may_be_left_out && quiet_within_enabled();
    for (slot, &calls) in (1..).zip(&rec.retired_calls()[1..=used]) {
        if calls >= QUIET_AT_END_CALLS && may_go_quiet && slot_is_counted(slot) {
            go_quiet(slot_index(slot));
        } else if calls != 0 {
            note_counted(slot);
        }
    }
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
/// the per-thread counters and are settled as before; the slot is not reused.
#[cold]
#[inline(never)]
pub(crate) fn go_quiet(index: u32) {
    go_quiet_with(index, 0, 0, NO_BY);
}

/// `go_quiet` within a long invocation: `calls` of the function and `per` calls made in it so far, of its callers
/// (with no call of a caller open, `by` = `NO_BY`) or of function `by` (a sibling under a caller that stays open),
/// so that their ratio is its calls per such call (the tool's estimate of the rest; docs/trace-format.md, `quiet`
/// records).
#[cold]
#[inline(never)]
pub(crate) fn go_quiet_within(index: u32, calls: u64, per: u64, by: u32) {
    go_quiet_with(index, calls, per, by);
}

fn go_quiet_with(index: u32, calls: u64, caller_calls: u64, by: u32) {
    let Some(state) = STATE.get(index as usize) else { return };
    let mut records = lock(&RECORDS);
    let slot = state.load(Relaxed);
    if slot == 0 || slot >= PINNED || KEEPS_COUNTING[slot as usize].load(Relaxed) {
        return;
    }
    // Read before the store: an invocation that ended before `at_ns` counted every call it made.
    let at_ns = crate::clock::clock().elapsed_ns();
    state.store(QUIET, Relaxed);
    records.mirror(index, QUIET);
    let quiet = Retirement { index, at_ns, calls, mean_ns: caller_calls, quiet: true, by };
    records.pending.push(quiet);
    records.made.push(quiet);
    PENDING.store(true, Relaxed);
}

/// Counted calls of a retired function in one invocation past which it goes quiet within that invocation (when
/// `quiet_after` is not 0): a program whose root runs once for a long time would otherwise count its retired calls
/// to the end. Enough calls that the ratio to its callers' calls is known.
pub(crate) const QUIET_WITHIN_CALLS: u64 = 1 << 16;

/// Whether retired functions may go quiet within an invocation (retirement on, `quiet_after` not 0).
#[inline]
pub(crate) fn quiet_within_enabled() -> bool {
    SETTINGS.get().is_some_and(|s| s.enabled && s.quiet_after != 0)
}

/// This thread's calls of retirement slot `slot`'s function not yet settled into a recorder.
pub(crate) fn unsettled_calls(slot: usize) -> u64 {
    RETIRED_CALLS.try_with(|counts| counts.get(slot).map_or(0, Cell::get)).unwrap_or(0)
}

/// The state byte of retirement slot `slot`'s function still names the slot: its calls are being counted.
pub(crate) fn slot_is_counted(slot: usize) -> bool {
    let index = slot_index(slot);
    usize::from(retired_state(index)) == slot && index != u32::MAX
}

/// The rule: enough calls, and a compensated mean (ticks) under `factor x recorded_outer`.
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
    /// Numbers the observations, to mark the functions that called probed functions in the current one.
    observation: u64,
    /// Trees still to pass over before the next observation (see `MATURE_EVERY`).
    skip: u32,
    /// Whether mature trees are sampled (the writer's watch); the fold's watch sees every big invocation.
    sample_mature: bool,
    /// Recursive clusters seen in the observed trees (see `cluster`).
    clusters: cluster::Clusters,
}

/// Once at most one node in this many of an observed tree is of a function short of `min_calls` observed calls (the
/// busy functions, those worth retiring, have reached it), only one tree in this many is observed: a decision then
/// rests on a running mean that a sample of trees (taken whatever their times) leaves unbiased, and the watch's
/// per-node work on a program of many alike invocations falls by as much. Rare functions reach `min_calls` later.
const MATURE_EVERY: u32 = 8;

#[derive(Clone, Copy, Default)]
struct Seen {
    calls: u64,
    compensated_ticks: f64,
    /// The last observation in which a call of the function had probed callees.
    caller_in: u64,
    /// The last observation in which the rule was checked for the function (once per tree, not once per node).
    checked_in: u64,
}

impl Watch {
    pub(crate) const fn new() -> Watch {
        Watch {
            descendants: Vec::new(),
            seen: Vec::new(),
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
    /// functions that meet the rule. Compensated time of a node: raw - recorded_inner - recorded_outer x its
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
        for slot in (1..nodes.len()).rev() {
            let parent = (nodes[slot].link & PARENT_MASK) as usize;
            if parent < slot {
                self.descendants[parent] += self.descendants[slot] + 1;
            }
        }
        self.observation += 1;
        let root = nodes[0].index;
        // Nodes of functions still short of `min_calls`: while they are few, the tree counts as mature.
        let mut young = 0;
        for (slot, node) in nodes.iter().enumerate().skip(1) {
            let index = node.index as usize;
            // A function that retired (or is pinned) meanwhile has nothing left to decide.
            if node.end == OPEN || index >= RETIRE_INDICES || node.index == root || retired_state(node.index) != 0 {
                continue;
            }
            if self.seen.len() <= index {
                self.seen.resize(index + 1, Seen::default());
            }
            let descendants = self.descendants[slot];
            let raw = node.end.saturating_sub(node.start) as f64;
            let compensated = raw - cal.recorded_inner_ticks - cal.recorded_outer_ticks * f64::from(descendants);
            let seen = &mut self.seen[index];
            young += usize::from(seen.calls < settings.min_calls);
            seen.calls += 1;
            seen.compensated_ticks += compensated.max(0.0);
            if descendants > 0 {
                seen.caller_in = self.observation;
            }
        }
        for node in &nodes[1..] {
            let Some(seen) = self.seen.get_mut(node.index as usize) else { continue };
            if seen.checked_in == self.observation {
                continue;
            }
            seen.checked_in = self.observation;
            if seen.calls < settings.min_calls || seen.caller_in == self.observation {
                continue;
            }
            let (calls, mean) = (seen.calls, seen.compensated_ticks / seen.calls as f64);
            retire_if_fast(node.index, calls, mean, root);
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

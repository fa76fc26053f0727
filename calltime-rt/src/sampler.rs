//! Invocations sampled for cost: a root whose recorded invocations spend more than a budget of their time in the
//! probes (`CALLTIME_COST_BUDGET`, 5% by default; off with `CALLTIME_EXACT=1`) records only a fraction of its next
//! ones, so that what the recorded ones cost stays within the budget of the whole run's time.
//!
//! - The cost of a recorded invocation is measured where it can be: the runtime's work after its root was left
//!   (the retirement note, the whole-run aggregate's fold, the hand-off) is timed with one more clock read at the
//!   end of each recorded invocation of a sampled root; its probes inside the root's span are its recorded nodes
//!   (and counts of retired calls) times the calibrated cost of a recorded call (`calibrate.rs`); the writer's work,
//!   on its own thread, is its thread's CPU time per unit written (`writer_measured`: its drains, with the
//!   encoding, the retirement watch and the `write`s; not the aggregate's snapshots) when that is more than the
//!   model's (as much again per node as the probes plus `WRITER_TREE_NS` a tree); its entry as what a skipped
//!   invocation costs.
//! - A skipped invocation costs something too (the sampler's checks and counters, the root probe's out-of-line
//!   calls): measured at start-up on this path's own functions (`measure_skip`), it is what every invocation pays
//!   whatever is decided, so the budget is over what a recorded one costs beyond it (see `recorded`).
//! - The decision is made at the root's entry by a per-thread countdown reset to a random gap (mean: the period),
//!   never from the invocation's content or duration, so the recorded ones are a uniform sample.
//! - The first `RECORD_FIRST` invocations of each root on a thread are always recorded (a short run keeps every
//!   tree); a thread that starts on a root after another learned its cost starts from that thread's period and
//!   means and records only its first `RECORD_FIRST_INHERITED` (`Learned`); the period follows the recent recorded
//!   invocations (it goes back to 1 when they get cheaper).
//! - A skipped invocation runs with `CURRENT = SKIP` (every probe inside takes its cheapest path, the root's
//!   re-entry does not start an invocation, nothing spawned is adopted, nothing goes to the whole-run aggregate).
//!   Every one is counted, so the root's count stays exact; a random 1 in `TIME_EVERY` of them has its root timed
//!   (two clock reads, about 19 ns on the project's VM: 12% of a 150 ns root), so the root's mean over the whole
//!   run is an unbiased estimate from them, which the views mark as sampled. The others take `skip_untimed`: the
//!   thread's last skipped root's entry, its counters, no clock read and no other thread-local.
//! - A `--slower-than` threshold, set at the start or switched on while running (`ctl slower-than`), records every
//!   invocation: a slow one skipped for cost could not be kept.
//!
//! Each thread keeps its counters in a table of its own (written by it alone with plain stores, summed by the
//! writer for the trace's `sampled` records and `stats`): no shared read-modify-write per invocation.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Mutex, MutexGuard};

use crate::invocation::lock;

/// The default budget: the recorded invocations' probes may take this share of the run's time, in percent.
pub(crate) const DEFAULT_BUDGET_PCT: u64 = 5;
/// Invocations of each root a thread always records before sampling may start.
pub(crate) const RECORD_FIRST: u64 = 100;
/// Of them, the ones a thread records when another thread already learned the root's cost (`Learned`): its own
/// means start from that thread's, so its first invocations are not all recorded again (4 threads recorded 400 where
/// 1 thread recorded 100, at about 400 ns each beyond a skipped one; docs/performance.md, "Twelfth round").
const RECORD_FIRST_INHERITED: u64 = 4;
/// At least 1 in this many invocations is recorded.
const MAX_PERIOD: u64 = 4096;
/// Roots a thread samples (more are always recorded).
const ROOTS: usize = 8;
/// The writer's work per tree written, beyond its nodes (on its own thread; docs/performance.md, "Ninth round: CPU
/// off the program's threads": about 560 instructions a 1-3 node tree).
const WRITER_TREE_NS: f64 = 150.0;
/// A recorded node costs its probe pair on the thread, plus about as much again on the writer (the records'
/// encoding); so does each retired function's count of calls (an `r` line) the tree carries.
const NODE_FACTOR: f64 = 2.0;
/// Weight of the newest invocation in the running means (1/8).
const NEWEST: f64 = 0.125;
/// A skipped invocation has its root timed 1 in this many times on average, at random gaps (see the module docs):
/// the clock reads of the others are saved, and a busy root's mean still rests on thousands of timed invocations
/// (semver: 12,000 of 200,000).
pub(crate) const TIME_EVERY: u64 = 16;

/// The budget in percent (0: every invocation recorded).
static BUDGET_PCT: AtomicU64 = AtomicU64::new(0);
/// Cost of a recorded node, of the writer's work per tree and of a skipped invocation, in ticks (f64 bits), set at
/// the runtime's start.
static NODE_TICKS: AtomicU64 = AtomicU64::new(0);
static WRITER_TICKS: AtomicU64 = AtomicU64::new(0);
static SKIP_TICKS: AtomicU64 = AtomicU64::new(0);
/// The writer thread's CPU time per unit it wrote (a node or a count of retired calls, and one per tree), in ticks
/// (f64 bits; 0 until measured): set by the writer at each wake (`writer_measured`), read once per recorded
/// invocation of a sampled root. Once set, the writer's share is the larger of it and the model's (`recorded`).
static WRITER_UNIT_TICKS: AtomicU64 = AtomicU64::new(0);
/// Units the writer must have written before its measure replaces the model (its start-up, the trace's header and
/// the first `write`, would otherwise weigh on too few).
const WRITER_MIN_UNITS: u64 = 256;

/// Sets the budget up (at the runtime's start, after the calibration).
pub(crate) fn start(budget_pct: u64) {
    let (node, writer) = match crate::calibrate::get() {
        Some(c) => {
            ((c.recorded_inner_ticks + c.recorded_outer_ticks) * NODE_FACTOR, WRITER_TREE_NS / c.ns_per_tick.max(1e-6))
        }
        None => (0.0, 0.0),
    };
    let skip = if node > 0.0 && budget_pct > 0 { measure_skip() } else { 0.0 };
    NODE_TICKS.store(node.to_bits(), Relaxed);
    WRITER_TICKS.store(writer.to_bits(), Relaxed);
    SKIP_TICKS.store(skip.to_bits(), Relaxed);
    BUDGET_PCT.store(if node > 0.0 { budget_pct.min(100) } else { 0 }, Relaxed);
}

/// What a skipped invocation costs its thread, in ticks: the low quantile of batches of this path's own work (the
/// checks and counters of an untimed skip, `CURRENT` set and cleared: the path of all but 1 in `TIME_EVERY`) on a
/// scratch entry, as `calibrate.rs` measures the probes. About 30 us once, at start-up.
fn measure_skip() -> f64 {
    const BATCH: u64 = 32;
    const BATCHES: usize = 24;
    // Leaked (once, about 120 bytes): the thread refers to it while a skip is in progress, as to a table's entries.
    let scratch: &'static Entry = Box::leak(Box::new(Entry::free()));
    let mut batches = [0.0; BATCHES];
    for batch in &mut batches {
        // Past the first ones and sampled, so each decision skips untimed (the countdowns are never reached).
        scratch.seen.store(RECORD_FIRST, Relaxed);
        scratch.period.store(MAX_PERIOD, Relaxed);
        scratch.countdown.store(u64::MAX, Relaxed);
        scratch.time_countdown.store(u64::MAX, Relaxed);
        let start = crate::clock::now();
        for _ in 0..BATCH {
            skip_once(scratch);
        }
        *batch = crate::clock::now().wrapping_sub(start) as f64 / BATCH as f64;
    }
    batches.sort_by(f64::total_cmp);
    batches[2]
}

/// One untimed skipped invocation's own work, as `invocation::start_thread_invocation` and `probe::leave` do it
/// around an empty root.
#[inline(never)]
fn skip_once(scratch: &'static Entry) {
    // The checks `skip_untimed` makes (false here: the budget is not set yet), then its counters.
    std::hint::black_box(sampling_unswitched());
    if skip_untimed_at(scratch) {
        let left = crate::invocation::replace_current(crate::invocation::SKIP);
        std::hint::black_box(());
        crate::invocation::replace_current(left);
    }
}

/// The writer thread's CPU time in its drains that wrote trees (ns, since it started) and the units they wrote (see
/// `WRITER_UNIT_TICKS`): what writing a recorded invocation costs off the program's threads, for the budget.
pub(crate) fn writer_measured(cpu_ns: u64, units: u64) {
    if units < WRITER_MIN_UNITS {
        return;
    }
    let Some(c) = crate::calibrate::get() else { return };
    let ticks = cpu_ns as f64 / units as f64 / c.ns_per_tick.max(1e-6);
    WRITER_UNIT_TICKS.store(ticks.to_bits(), Relaxed);
}

/// The budget in percent (0: off).
pub(crate) fn budget_pct() -> u64 {
    BUDGET_PCT.load(Relaxed)
}

/// One root's sampling state on one thread. The decision fields are the owner's alone (relaxed loads and stores);
/// the counters are read by the writer.
pub(crate) struct Entry {
    /// Root index + 1; 0 while free.
    root: AtomicU32,
    seen: AtomicU64,
    countdown: AtomicU64,
    /// Record 1 in `period` on average.
    period: AtomicU64,
    /// Running means (f64 bits; 0 before the first): a recorded invocation's estimated probe cost, and a skipped
    /// invocation's duration, in ticks.
    cost: AtomicU64,
    skipped_span: AtomicU64,
    /// A recorded invocation's duration (ticks; running mean).
    recorded_span: AtomicU64,
    /// Skipped invocations left before the next one whose root is timed (see `TIME_EVERY`).
    time_countdown: AtomicU64,
    /// This entry's means were published for other threads (`Learned`); kept when the table changes threads.
    published: AtomicBool,
    /// Invocations skipped; of them, the ones whose root was timed, and their time in ticks; and the root tasks
    /// among them (never timed: their polls may run on several threads).
    skipped: AtomicU64,
    timed: AtomicU64,
    timed_ticks: AtomicU64,
    tasks: AtomicU64,
}

impl Entry {
    fn free() -> Entry {
        Entry {
            root: AtomicU32::new(0),
            seen: AtomicU64::new(0),
            countdown: AtomicU64::new(0),
            period: AtomicU64::new(1),
            cost: AtomicU64::new(0),
            skipped_span: AtomicU64::new(0),
            recorded_span: AtomicU64::new(0),
            time_countdown: AtomicU64::new(0),
            published: AtomicBool::new(false),
            skipped: AtomicU64::new(0),
            timed: AtomicU64::new(0),
            timed_ticks: AtomicU64::new(0),
            tasks: AtomicU64::new(0),
        }
    }

    /// The decision fields as `free` has them, for a new thread: its counters stay (they are the run's totals).
    fn restart(&self) {
        self.seen.store(0, Relaxed);
        self.countdown.store(0, Relaxed);
        self.period.store(1, Relaxed);
        self.time_countdown.store(0, Relaxed);
        for mean in [&self.cost, &self.skipped_span, &self.recorded_span] {
            mean.store(0, Relaxed);
        }
    }
}

/// A thread's entries. Never freed: an ended thread's table is reused by a later thread (its counters kept).
pub(crate) struct Table {
    entries: [Entry; ROOTS],
    in_use: AtomicBool,
}

/// Every thread's table (see `Table`).
pub(crate) type Tables = Vec<&'static Table>;

static TABLES: Mutex<Tables> = Mutex::new(Vec::new());

struct Mine {
    table: Cell<Option<&'static Table>>,
    rng: Cell<u64>,
    /// The entry and start (ticks) of the skipped invocation in progress on this thread.
    skipping: Cell<*const Entry>,
    skip_start: Cell<u64>,
}

impl Drop for Mine {
    fn drop(&mut self) {
        if let Some(table) = self.table.get() {
            // The table may go to another thread now: this one no longer skips on its entries.
            LAST.with(|last| last.set((0, ptr::null())));
            table.in_use.store(false, Relaxed);
        }
    }
}

thread_local! {
    static MINE: Mine = const {
        Mine { table: Cell::new(None), rng: Cell::new(0), skipping: Cell::new(ptr::null()), skip_start: Cell::new(0) }
    };
    /// The thread's root last decided by `decide_on_thread` (index + 1, 0 for none) and its entry: what
    /// `skip_untimed` reads. Without a destructor, so reading it is one thread-local load, never a state check.
    static LAST: Cell<(u32, *const Entry)> = const { Cell::new((0, ptr::null())) };
}

#[cold]
#[inline(never)]
fn claim() -> &'static Table {
    let mut all = lock(&TABLES);
    let table = match all.iter().find(|t| !t.in_use.load(Relaxed)) {
        Some(&t) => t,
        None => {
            let t: &'static Table = Box::leak(Box::new(Table {
                entries: std::array::from_fn(|_| Entry::free()),
                in_use: AtomicBool::new(false),
            }));
            all.push(t);
            t
        }
    };
    table.in_use.store(true, Relaxed);
    // A new thread starts its roots afresh (always recording its first ones); the counters stay for the totals.
    for e in &table.entries {
        e.restart();
    }
    table
}

/// This thread's entry for root `index` (taken when free); `None` past `ROOTS` roots, or in thread teardown.
fn entry(index: u32) -> Option<&'static Entry> {
    let table = MINE
        .try_with(|mine| match mine.table.get() {
            Some(t) => t,
            None => {
                let t = claim();
                mine.table.set(Some(t));
                mine.rng.set(seed(t));
                t
            }
        })
        .ok()?;
    let key = index.wrapping_add(1);
    let mut free = None;
    for e in &table.entries {
        match e.root.load(Relaxed) {
            k if k == key => return Some(e),
            0 if free.is_none() => free = Some(e),
            _ => {}
        }
    }
    let e = free?;
    e.root.store(key, Relaxed);
    Some(e)
}

fn seed(table: &Table) -> u64 {
    let address = table as *const Table as u64;
    (address ^ crate::clock::now()).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// The next random gap between recorded invocations, uniform in `1..2 * period` (mean `period`).
fn gap(period: u64) -> u64 {
    let x = MINE
        .try_with(|mine| {
            // xorshift64
            let mut x = mine.rng.get().max(1);
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            mine.rng.set(x);
            x
        })
        .unwrap_or(1);
    1 + x % (2 * period - 1)
}

/// What the sampler says at a root's entry.
pub(crate) enum Decision {
    /// Recorded; the entry (when the root is sampled) learns its cost at the end (`recorded`).
    Record(Option<&'static Entry>),
    /// Skipped for cost (counted); `true` when its root is to be timed (1 in `TIME_EVERY`, at random).
    Skip(&'static Entry, bool),
}

/// At the entry of root `index` (an invocation otherwise admitted): whether it is recorded or skipped for cost. A
/// root task's skip is counted as one (`tasks`: counted as seen when admitted); one to be timed is timed by its
/// wrapper, which may end it on another thread (`task_skip_ended`).
#[inline]
pub(crate) fn decide_for_task(index: u32) -> Decision {
    let Some(e) = sampled_entry(index) else { return Decision::Record(None) };
    let decision = decide_entry(e);
    if let Decision::Skip(e, _) = decision {
        e.tasks.store(e.tasks.load(Relaxed) + 1, Relaxed);
    }
    decision
}

/// A root task skipped for cost and timed ended (finished, panicked or dropped) after `ticks`, maybe on another
/// thread than the one whose table holds `e`: added with read-modify-writes (1 in `TIME_EVERY` skipped tasks).
pub(crate) fn task_skip_ended(e: &Entry, ticks: u64) {
    e.timed.fetch_add(1, Relaxed);
    e.timed_ticks.fetch_add(ticks, Relaxed);
}

/// `decide_for_task` for a thread's root: the entry is remembered for this root's next entries (`skip_untimed`).
#[inline]
pub(crate) fn decide_on_thread(index: u32) -> Decision {
    let Some(e) = sampled_entry(index) else { return Decision::Record(None) };
    LAST.with(|last| last.set((index.wrapping_add(1), e)));
    decide_entry(e)
}

/// Root `index`'s sampler entry when sampling for cost applies to it (`sampling_unswitched_by_keep`).
#[inline(always)]
fn sampled_entry(index: u32) -> Option<&'static Entry> {
    if sampling_unswitched_by_keep() {
        entry(index)
    } else {
        None
    }
}

/// Whether sampling for cost applies: a budget, and no threshold switched on while running (`ctl slower-than`),
/// which records every invocation, as one set at the start does: a slow invocation skipped for cost could not be
/// kept, and the next one, recorded instead, is not it.
#[inline(always)]
fn sampling_unswitched_by_keep() -> bool {
    BUDGET_PCT.load(Relaxed) != 0 && crate::keep::slower_than_ns() == 0
}

/// `sampling_unswitched_by_keep`, and no 1-in-N sampling of roots (`CALLTIME_SAMPLE`, `ctl sample`), which counts
/// every root on the thread first (`invocation::admit_on_thread`).
#[inline(always)]
fn sampling_unswitched() -> bool {
    sampling_unswitched_by_keep() && crate::control::sample() <= 1
}

/// The fast path of a thread's root entry with no invocation in progress: when root `index` is the thread's last
/// decided root and this invocation is skipped for cost without being timed (most of a busy root's: `TIME_EVERY`),
/// counts it and returns true; else changes nothing (the caller then admits it the full way, which decides alike).
/// Three relaxed loads of settings, one thread-local, the entry's counters: no clock read, no other thread-local.
#[inline(always)]
pub(crate) fn skip_untimed(index: u32) -> bool {
    let (key, e) = LAST.with(Cell::get);
    // SAFETY: a non-zero key comes with an entry of a leaked table (never freed), this thread's own until its
    // `Mine` is dropped, which clears `LAST`.
    key == index.wrapping_add(1) && sampling_unswitched() && skip_untimed_at(unsafe { &*e })
}

/// `skip_untimed` on entry `e`: the decision `decide_entry` would make when it skips untimed, and its counters.
#[inline(always)]
fn skip_untimed_at(e: &Entry) -> bool {
    let seen = e.seen.load(Relaxed) + 1;
    let (countdown, time_countdown) = (e.countdown.load(Relaxed), e.time_countdown.load(Relaxed));
    if seen <= RECORD_FIRST || e.period.load(Relaxed) <= 1 || countdown <= 1 || time_countdown <= 1 {
        return false;
    }
    e.seen.store(seen, Relaxed);
    e.countdown.store(countdown - 1, Relaxed);
    e.time_countdown.store(time_countdown - 1, Relaxed);
    e.skipped.store(e.skipped.load(Relaxed) + 1, Relaxed);
    true
}

/// A decision once the root's entry is found.
#[inline(always)]
fn decide_entry(e: &'static Entry) -> Decision {
    // An untimed skip decides and counts as the fast path does (one definition of it).
    if skip_untimed_at(e) {
        return Decision::Skip(e, false);
    }
    // While the thread records its first ones: threads started together learn at once, the first to finish
    // publishes (a load of the table per recorded invocation, in the first `RECORD_FIRST` only).
    if e.seen.load(Relaxed) < RECORD_FIRST - RECORD_FIRST_INHERITED {
        inherit(e);
    }
    let seen = e.seen.load(Relaxed) + 1;
    e.seen.store(seen, Relaxed);
    let period = e.period.load(Relaxed);
    if seen <= RECORD_FIRST || period <= 1 {
        return Decision::Record(Some(e));
    }
    let countdown = e.countdown.load(Relaxed);
    if countdown > 1 {
        e.countdown.store(countdown - 1, Relaxed);
        e.skipped.store(e.skipped.load(Relaxed) + 1, Relaxed);
        // Skipped, and not untimed: its root's own countdown (random gaps, so the timed ones are a uniform sample
        // of the skipped ones, whatever their durations) has run out: timed.
        e.time_countdown.store(gap(TIME_EVERY), Relaxed);
        return Decision::Skip(e, true);
    }
    e.countdown.store(gap(period), Relaxed);
    Decision::Record(Some(e))
}

/// What the first thread to finish its first `RECORD_FIRST` invocations of a root learned of their cost: a thread
/// that starts on the root later begins from it (`inherit`). Written once per root, read once per thread and root:
/// nothing shared is touched per invocation.
struct Learned {
    /// Root index + 1; 0 while free.
    root: AtomicU32,
    /// The period (0 until the means below are stored: published last, with release) and the entry's running means
    /// (f64 bits, as in `Entry`).
    period: AtomicU64,
    cost: AtomicU64,
    skipped_span: AtomicU64,
    recorded_span: AtomicU64,
}

static LEARNED: [Learned; ROOTS] = [const {
    Learned {
        root: AtomicU32::new(0),
        period: AtomicU64::new(0),
        cost: AtomicU64::new(0),
        skipped_span: AtomicU64::new(0),
        recorded_span: AtomicU64::new(0),
    }
}; ROOTS];

/// A decision on entry `e` while its thread records its first invocations: when another thread learned the root's
/// cost, starts from its period and means and records only `RECORD_FIRST_INHERITED` more before sampling.
#[cold]
#[inline(never)]
fn inherit(e: &Entry) {
    let key = e.root.load(Relaxed);
    if key == 0 {
        return;
    }
    let Some(learned) = LEARNED.iter().find(|l| l.root.load(Acquire) == key) else { return };
    let period = learned.period.load(Acquire);
    if period == 0 {
        return;
    }
    e.cost.store(learned.cost.load(Relaxed), Relaxed);
    e.skipped_span.store(learned.skipped_span.load(Relaxed), Relaxed);
    e.recorded_span.store(learned.recorded_span.load(Relaxed), Relaxed);
    e.period.store(period, Relaxed);
    e.seen.store(RECORD_FIRST - RECORD_FIRST_INHERITED, Relaxed);
}

/// Publishes entry `e`'s means for the threads that start on its root later (once per root: the first thread to
/// finish its first invocations).
#[cold]
#[inline(never)]
fn publish(e: &Entry) {
    e.published.store(true, Relaxed);
    let key = e.root.load(Relaxed);
    for learned in &LEARNED {
        match learned.root.compare_exchange(0, key, AcqRel, Acquire) {
            Ok(_) => {
                learned.cost.store(e.cost.load(Relaxed), Relaxed);
                learned.skipped_span.store(e.skipped_span.load(Relaxed), Relaxed);
                learned.recorded_span.store(e.recorded_span.load(Relaxed), Relaxed);
                learned.period.store(e.period.load(Relaxed), Release);
                return;
            }
            Err(k) if k == key => return,
            Err(_) => {}
        }
    }
}

/// A skipped invocation of thread root `e` started at `start` (ticks): its root is timed at its end.
pub(crate) fn skip_started(e: &'static Entry, start: u64) {
    let _ = MINE.try_with(|mine| {
        mine.skipping.set(e);
        mine.skip_start.set(start);
    });
}

/// The end of a skipped invocation on this thread: its root's duration (ticks) when it was skipped for cost and
/// timed, `None` for the other skipped invocations (sampled out, past the limit).
pub(crate) fn skip_ended() -> Option<(&'static Entry, u64)> {
    let (e, start) = MINE.try_with(|mine| (mine.skipping.replace(ptr::null()), mine.skip_start.get())).ok()?;
    // SAFETY: entries live in leaked tables, never freed.
    let e = unsafe { e.as_ref() }?;
    let ticks = crate::clock::now().wrapping_sub(start);
    e.timed.store(e.timed.load(Relaxed) + 1, Relaxed);
    e.timed_ticks.store(e.timed_ticks.load(Relaxed) + ticks, Relaxed);
    store_mean(&e.skipped_span, ticks as f64);
    Some((e, ticks))
}

/// Records the next invocation of `e`'s root (a skipped one would have been kept by `--slower-than` or
/// `--keep-slowest`: the next may show why).
pub(crate) fn record_next(e: &Entry) {
    e.countdown.store(1, Relaxed);
}

/// Adds `value` to a running mean; a value over 4x the mean counts as 4x (a preempted invocation must not hold the
/// mean up for long).
fn store_mean(mean: &AtomicU64, value: f64) {
    let old = f64::from_bits(mean.load(Relaxed));
    let new = if old == 0.0 { value } else { old + (value.min(4.0 * old) - old) * NEWEST };
    mean.store(new.to_bits(), Relaxed);
}

/// A recorded invocation of `e`'s root ended: `nodes` recorded (nodes and counts of retired calls) over `span`
/// ticks, and the runtime's work after the root was left took `exit` ticks (measured). Sets the period from the
/// running means: every invocation pays a skipped one's `skip`, whatever is decided, and a recorded one `cost -
/// skip` more; the share recorded is `budget x plain time / (cost - skip)`, where the plain time is a skipped
/// invocation's mean duration, bounded by a recorded one's (which has the probes in it too). The skip is not
/// charged to the budget: recording fewer cannot lower it, and a root whose skips alone took the budget then
/// recorded 1 in `MAX_PERIOD`, too few for its fast functions to retire (semver: 3 retired of 7, and the others'
/// probes took their cold path in every skipped invocation: 559 M instructions against 532 M; docs/performance.md,
/// "Tenth round"). (A root task may end on another thread than the one that decided: the fields are atomics, and a lost
/// update only delays the period by an invocation.)
pub(crate) fn recorded(e: &Entry, nodes: usize, span: u64, exit: u64) {
    let budget = BUDGET_PCT.load(Relaxed);
    if budget == 0 {
        return;
    }
    let skip = f64::from_bits(SKIP_TICKS.load(Relaxed));
    let node = f64::from_bits(NODE_TICKS.load(Relaxed));
    let writer_unit = f64::from_bits(WRITER_UNIT_TICKS.load(Relaxed));
    // The model: the probes, as much again per node for the writer, and its work per tree. Once the writer's cost is
    // measured, the larger of the two: where the writer's drains cost less than the model says, the model's excess
    // stands for recording costs the calibration does not see (cache misses, page faults, the writer's wake-ups:
    // tokei's recording costs its threads about twice its calibrated probes), so the measure only ever adds to it
    // (with the measure alone, one run of tokei recorded 805 of its 817 invocations; docs/performance.md, "Twelfth
    // round").
    let modelled = nodes as f64 * node + f64::from_bits(WRITER_TICKS.load(Relaxed));
    let measured = nodes as f64 * node / NODE_FACTOR + (nodes + 1) as f64 * writer_unit;
    let cost = skip + modelled.max(measured) + exit as f64;
    store_mean(&e.cost, cost);
    let cost = f64::from_bits(e.cost.load(Relaxed));
    store_mean(&e.recorded_span, span as f64);
    let recorded_span = f64::from_bits(e.recorded_span.load(Relaxed));
    let skipped = f64::from_bits(e.skipped_span.load(Relaxed));
    let plain = if skipped > 0.0 { skipped.min(recorded_span) } else { recorded_span };
    let share = budget as f64 / 100.0 * plain / (cost - skip).max(1.0);
    let period = if share >= 1.0 { 1 } else { ((1.0 / share).ceil() as u64).clamp(1, MAX_PERIOD) };
    e.period.store(period, Relaxed);
    if e.countdown.load(Relaxed) > 2 * period {
        e.countdown.store(gap(period), Relaxed);
    }
    if !e.published.load(Relaxed) && e.seen.load(Relaxed) >= RECORD_FIRST {
        publish(e);
    }
}

/// Per root: invocations skipped for cost, how many of them were timed, their time in ticks, and 0 (the root tasks
/// among them that were never timed, in traces of earlier runtimes); in root order.
pub(crate) fn totals() -> Vec<(u32, [u64; 4])> {
    let mut out: Vec<(u32, [u64; 4])> = Vec::new();
    for table in lock(&TABLES).iter() {
        for e in &table.entries {
            let key = e.root.load(Relaxed);
            let skipped = e.skipped.load(Relaxed);
            if key == 0 || skipped == 0 {
                continue;
            }
            // The 4th figure is root tasks never timed, which earlier runtimes wrote (the tool then gives the mean
            // over the timed ones only): tasks are timed at random like threads' roots now.
            let counts = [skipped, e.timed.load(Relaxed), e.timed_ticks.load(Relaxed), 0];
            match out.iter_mut().find(|t| t.0 == key - 1) {
                Some(t) => {
                    for (sum, n) in t.1.iter_mut().zip(counts) {
                        *sum += n;
                    }
                }
                None => out.push((key - 1, counts)),
            }
        }
    }
    out.sort_unstable_by_key(|t| t.0);
    out
}

/// Invocations skipped for cost so far, over every thread, and of them root tasks' (counted as seen when admitted;
/// a thread's skipped invocations are counted as seen here only: `invocation::stats`).
pub(crate) fn total_skipped() -> (u64, u64) {
    let all = lock(&TABLES);
    let entries = || all.iter().flat_map(|t| t.entries.iter());
    (entries().map(|e| e.skipped.load(Relaxed)).sum(), entries().map(|e| e.tasks.load(Relaxed)).sum())
}

/// The sampler's tables, locked by the fork handler (see `control::watch_forks`): a thread taking its table
/// (`claim`) as another forks would otherwise leave the child a lock no thread of it releases, and its first root
/// would wait for it forever (`tests/fork.rs`, one run in 25 once the runtime's set-up grew by `measure_skip`).
pub(crate) fn lock_for_fork() -> MutexGuard<'static, Tables> {
    lock(&TABLES)
}

/// In a child forked without exec, under the fork handler's lock: the parent's counts are forgotten (the child's
/// `stats` count its own roots), and so is what its threads learned (`Learned`): the child is a run of its own,
/// whose first invocations are all recorded (a short one keeps every tree).
pub(crate) fn forget_parent(tables: &Tables) {
    for e in tables.iter().flat_map(|t| t.entries.iter()) {
        for counter in [&e.skipped, &e.timed, &e.timed_ticks, &e.tasks] {
            counter.store(0, Relaxed);
        }
        e.published.store(false, Relaxed);
    }
    for learned in &LEARNED {
        learned.period.store(0, Relaxed);
        learned.root.store(0, Relaxed);
    }
}

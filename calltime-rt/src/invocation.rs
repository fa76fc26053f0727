//! Invocations: the thread's current recording context (`CURRENT`), who owns which recorder, the settings, and
//! starting, admitting and handing off an invocation to the writer.

use std::cell::{Cell, RefCell};
use std::mem;
use std::path::PathBuf;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::__private::PlanInfo;
use crate::clock::{clock, now, ClockBase, Scale};
use crate::keep::{self, Keep, LeftOut};
use crate::outbox::{self, Counter, Outbox};
use crate::probe::{record_enter, Guard};
use crate::recorder::{Node, OwnerKind, Recorder, DEFAULT_MAX_DEPTH, PARENT_MASK};
use crate::sampler::{self, Decision, Entry};
use crate::writer::{install_flush_hooks, start_writer};

/// Recorders beyond one per thread and the queue's length: root tasks in progress and the one being written.
const SPARE_RECORDERS: usize = 65;
/// Small recorders (`Recorder::small`) that may be in use beyond those, for root tasks and parts in progress: an
/// executor may start thousands of tasks before the first ends (async-executor's bench polls 2,000 jobs, then
/// their 8,000 parts, before a job returns: with only the full-size ones, 828 of its 2,000 invocations were
/// dropped for lack of a recorder). About 2 KB resident each, 32 MB at the bound.
const SMALL_RECORDERS: usize = 1 << 14;

/// `CURRENT` while a sampled-out or dropped invocation runs: probes record nothing and roots do not start anew.
pub(crate) const SKIP: *mut Recorder = 1 as *mut Recorder;

thread_local! {
    /// The recording context of the invocation in progress on this thread: null outside any invocation, `SKIP` in
    /// one that is not recorded, else the thread's recorder or (during a poll) a root task's recorder.
    static CURRENT: Cell<*mut Recorder> = const { Cell::new(ptr::null_mut()) };
    /// This thread's own recorder and identity; touched only when an invocation starts or ends.
    static THREAD: RefCell<ThreadSlot> = const { RefCell::new(ThreadSlot::EMPTY) };
}

/// The recording context current on this thread (see `CURRENT`).
#[inline(always)]
pub(crate) fn current() -> *mut Recorder {
    CURRENT.with(Cell::get)
}

/// A recorder owned by a root task. Like a `Box`, it owns its recorder uniquely; the raw pointer is published in
/// `CURRENT` only during a poll of its owner, on the polling thread, and withdrawn before that poll returns, so
/// moving the owner to another thread between polls moves sole access with it.
pub(crate) struct OwnedRecorder(NonNull<Recorder>);

// SAFETY: see the type's documentation: access is unique, as with Box<Recorder>, and Recorder is Send.
unsafe impl Send for OwnedRecorder {}
// SAFETY: `&OwnedRecorder` gives no access to the recorder.
unsafe impl Sync for OwnedRecorder {}

impl OwnedRecorder {
    pub(crate) fn new(rec: Box<Recorder>) -> OwnedRecorder {
        OwnedRecorder(NonNull::from(Box::leak(rec)))
    }

    pub(crate) fn ptr(&self) -> *mut Recorder {
        self.0.as_ptr()
    }

    pub(crate) fn into_box(self) -> Box<Recorder> {
        let rec = self.0.as_ptr();
        mem::forget(self);
        // SAFETY: the pointer came from Box::leak and is owned by self, which is forgotten.
        unsafe { Box::from_raw(rec) }
    }
}

impl Drop for OwnedRecorder {
    fn drop(&mut self) {
        // SAFETY: the pointer came from Box::leak and is owned by self.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// What a thread keeps for its invocations; set up at its first root entry.
struct ThreadSlot {
    rec: *mut Recorder,
    id: u64,
    /// Where its small finished invocations go, and its counters.
    outbox: Option<&'static Outbox>,
    /// Roots entered on this thread (for 1-in-N sampling).
    seen: u64,
    /// Invocations this thread may still record under `CALLTIME_MAX_INVOCATIONS`, taken from `ADMITTED` in batches.
    tickets: u64,
    /// Tick at which the last invocation was pushed to the outbox (to wake the writer after a quiet spell).
    last_push: u64,
}

impl ThreadSlot {
    const EMPTY: ThreadSlot =
        ThreadSlot { rec: ptr::null_mut(), id: 0, outbox: None, seen: 0, tickets: 0, last_push: 0 };
}

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        // Unused tickets go back, so other threads may still record up to the limit.
        if self.tickets > 0 {
            ADMITTED.fetch_sub(self.tickets, Relaxed);
        }
        if let Some(outbox) = self.outbox.take() {
            outbox.release();
        }
        if self.rec.is_null() {
            return;
        }
        // An invocation still in progress during thread teardown keeps its recorder (leaked) rather than risk a
        // guard writing into freed memory.
        if CURRENT.with(Cell::get) == self.rec {
            return;
        }
        // SAFETY: the pointer came from Box::into_raw and is owned by this slot.
        let rec = unsafe { Box::from_raw(self.rec) };
        self.rec = ptr::null_mut();
        give_back(rec);
    }
}

/// Makes `rec` the thread's recording context and returns the previous one, settling nothing (for a moment in
/// which no probe runs: `crate::alloc::detect_counting`; and around a skipped invocation, whose counts of retired
/// calls the next recorded one's settle discards).
#[inline(always)]
pub(crate) fn replace_current(rec: *mut Recorder) -> *mut Recorder {
    CURRENT.with(|c| c.replace(rec))
}

/// Makes `rec` the thread's recording context and returns the previous one, whose retired calls are settled.
pub(crate) fn set_current(rec: *mut Recorder) -> *mut Recorder {
    let left = CURRENT.with(|c| c.replace(rec));
    crate::retire::settle_retired_calls(left);
    left
}
/// Ends an invocation that was not recorded and whose root was timed (its root guard, `Guard::SKIPPED_TIMED`,
/// was dropped); an untimed one's guard only clears `CURRENT` (`probe::leave`).
#[cold]
#[inline(never)]
pub(crate) fn end_skipped_invocation() {
    // Settles nothing, as its start did not (see `start_thread_invocation`).
    replace_current(ptr::null_mut());
    // Skipped for cost: its root's time is counted; one `--slower-than` or `--keep-slowest` would have kept asks
    // for the next invocation's tree.
    if let Some((entry, ticks)) = sampler::skip_ended() {
        if let Some(rt) = RUNTIME.get() {
            if rt.config.chooses() && keep::passes_time_bar(rt.config.keep, ticks) {
                sampler::record_next(entry);
            }
        }
    }
}

// Counters of `crate::Stats` outside the threads' outboxes: root tasks, invocations handed over in their recorder,
// failed writes (KEPT and TRUNCATED are counted by the writer, when a record reaches the file).
pub(crate) static SEEN: AtomicU64 = AtomicU64::new(0);
/// Tickets handed out under `CALLTIME_MAX_INVOCATIONS` (to threads in batches, to tasks one by one).
static ADMITTED: AtomicU64 = AtomicU64::new(0);
pub(crate) static SAMPLED_OUT: AtomicU64 = AtomicU64::new(0);
pub(crate) static DROPPED_LIMIT: AtomicU64 = AtomicU64::new(0);
pub(crate) static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
pub(crate) static DROPPED_NO_BUFFER: AtomicU64 = AtomicU64::new(0);
/// Failed writes and thread teardown.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);
pub(crate) static KEPT: AtomicU64 = AtomicU64::new(0);
/// Root tasks' invocations (and, counted by the writer, any invocation) not kept by `--slower-than` or `--keep-*`.
pub(crate) static LEFT_OUT_FAST: AtomicU64 = AtomicU64::new(0);
pub(crate) static LEFT_OUT_UNSELECTED: AtomicU64 = AtomicU64::new(0);
pub(crate) static TRUNCATED: AtomicU64 = AtomicU64::new(0);
pub(crate) static THREAD_IDS: AtomicU64 = AtomicU64::new(1);
pub(crate) static TASK_IDS: AtomicU64 = AtomicU64::new(1);
/// Recorders that may still be allocated beyond one per thread; a recorder freed because the pool is full gives its
/// place back, so this bounds the recorders in use.
static SPARE: AtomicUsize = AtomicUsize::new(0);
/// Small recorders that may still be made for root tasks and parts (`task_recorder`), likewise.
static SMALL_SPARE: AtomicUsize = AtomicUsize::new(SMALL_RECORDERS);
/// Recorders handed back by the writer, ready for reuse. Boxed: a recorder's address is published in `CURRENT` and
/// must not move when the pool's vector does.
#[allow(clippy::vec_box)]
static POOL: Mutex<Vec<Box<Recorder>>> = Mutex::new(Vec::new());

/// The settings, read from the environment once (see the crate docs).
pub(crate) struct Config {
    pub(crate) out: PathBuf,
    pub(crate) node_cap: usize,
    pub(crate) min_ns: u64,
    pub(crate) sample: u64,
    pub(crate) max_invocations: u64,
    /// `max_invocations` is the default for a run without a keep policy (`CALLTIME_MAX_INVOCATIONS` unset): lifted
    /// while `ctl slower-than` chooses the trees, as it is for a run started with `--slower-than`.
    pub(crate) max_invocations_default: bool,
    pub(crate) queue: usize,
    pub(crate) fold_after: usize,
    pub(crate) time_sample: u64,
    /// Frames deeper are counted as truncated calls (`CALLTIME_MAX_DEPTH`).
    pub(crate) max_depth: usize,
    /// Keep only invocations slower than this (`CALLTIME_SLOWER_THAN_NS`; 0: all).
    pub(crate) slower_than_ns: u64,
    /// Which of them the trace keeps (`CALLTIME_KEEP_SLOWEST`, `CALLTIME_KEEP_SAMPLE`).
    pub(crate) keep: Keep,
    /// Recording starts switched off (`CALLTIME_START_OFF=1`; `cargo calltime ctl on` switches it on).
    pub(crate) start_off: bool,
    /// Every invocation is folded into the whole-run aggregate (`CALLTIME_AGGREGATE`, default 1).
    pub(crate) aggregate: bool,
    /// How often the aggregate is written, in ms (`CALLTIME_AGGREGATE_MS`).
    pub(crate) aggregate_ms: u64,
    /// Trace files are rotated past this size (`CALLTIME_ROTATE_BYTES`; 0 never).
    pub(crate) rotate_bytes: u64,
    /// Bytes of trees written per hour at most (`CALLTIME_MAX_BYTES_PER_HOUR`; 0 no limit).
    pub(crate) bytes_per_hour: u64,
    /// The share of the run's time, in percent, the recorded invocations' probes may take before a root's
    /// invocations are sampled for cost (`CALLTIME_COST_BUDGET`, default 5; 0, or `CALLTIME_EXACT=1`: every one
    /// recorded; `sampler.rs`).
    pub(crate) cost_budget_pct: u64,
}

impl Config {
    fn from_env() -> Config {
        fn number(name: &str, default: u64, min: u64) -> u64 {
            match std::env::var(name) {
                Err(_) => default,
                Ok(text) => match text.trim().parse::<u64>() {
                    Ok(n) => n.max(min),
                    Err(_) => {
                        eprintln!("calltime: {name}={text:?} is not a number; using {default}");
                        default
                    }
                },
            }
        }
        let out = match std::env::var_os("CALLTIME_OUT") {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => PathBuf::from(format!("calltime-{}.trace", std::process::id())),
        };
        // Resolved now so a later change of directory does not move the file.
        let out = match std::env::current_dir() {
            Ok(dir) if out.is_relative() => dir.join(out),
            _ => out,
        };
        let slower_than_ns = number("CALLTIME_SLOWER_THAN_NS", 0, 0);
        let exact = std::env::var("CALLTIME_EXACT").is_ok_and(|v| !matches!(v.trim(), "" | "0"));
        let keep = Keep::from_counts(number("CALLTIME_KEEP_SLOWEST", 0, 0), number("CALLTIME_KEEP_SAMPLE", 0, 0));
        // Choosing which trees to keep looks at the whole run: no limit on the first ones unless one is asked for.
        let default_max = if keep == Keep::All && slower_than_ns == 0 { 100_000 } else { u64::MAX };
        Config {
            out,
            node_cap: number("CALLTIME_NODE_CAP", 100_000, 1).min(u64::from(PARENT_MASK - 1)) as usize,
            min_ns: number("CALLTIME_MIN_NS", 0, 0),
            sample: number("CALLTIME_SAMPLE", 1, 1),
            max_invocations: number("CALLTIME_MAX_INVOCATIONS", default_max, 0),
            max_invocations_default: std::env::var_os("CALLTIME_MAX_INVOCATIONS").is_none(),
            queue: number("CALLTIME_QUEUE", 1024, 1).min(1 << 20) as usize,
            fold_after: number("CALLTIME_FOLD_AFTER", 4096, 0).min(u64::from(PARENT_MASK - 1)) as usize,
            time_sample: number("CALLTIME_TIME_SAMPLE", 64, 1).min(1 << 30),
            max_depth: number("CALLTIME_MAX_DEPTH", DEFAULT_MAX_DEPTH as u64, 1).min(1 << 24) as usize,
            slower_than_ns,
            keep,
            start_off: number("CALLTIME_START_OFF", 0, 0) != 0,
            aggregate: number("CALLTIME_AGGREGATE", 1, 0) != 0,
            aggregate_ms: number("CALLTIME_AGGREGATE_MS", 1000, 10),
            rotate_bytes: number("CALLTIME_ROTATE_BYTES", 16_000_000, 0),
            bytes_per_hour: number("CALLTIME_MAX_BYTES_PER_HOUR", 50_000_000, 0),
            cost_budget_pct: if exact { 0 } else { number("CALLTIME_COST_BUDGET", sampler::DEFAULT_BUDGET_PCT, 0) },
        }
    }

    /// Whether finished invocations are chosen at their root's exit (`--slower-than`, `--keep-*`).
    pub(crate) fn chooses(&self) -> bool {
        keep::chooses(self.keep)
    }
}

/// The process's runtime, set up at the first root entry.
pub(crate) struct Runtime {
    pub(crate) config: Config,
    pub(crate) clock: &'static ClockBase,
    pub(crate) plan: &'static PlanInfo,
    sender: SyncSender<Box<Recorder>>,
    writer: Option<std::thread::Thread>,
    /// Slots of each thread's outbox (a power of two).
    outbox_slots: usize,
}

pub(crate) static RUNTIME: OnceLock<Runtime> = OnceLock::new();

fn runtime(plan: &'static PlanInfo) -> &'static Runtime {
    if let Some(rt) = RUNTIME.get() {
        return rt;
    }
    // Before the set-up starts: a fork from another thread during it then runs the handler, which waits for it
    // (`wait_for_runtime_start`); unregistered, the child would inherit a set-up that never ends and hang.
    crate::control::watch_forks();
    RUNTIME.get_or_init(|| {
        let config = Config::from_env();
        crate::control::start(config.sample, config.start_off);
        keep::set_slower_than(config.slower_than_ns);
        crate::aggregate::set_enabled(config.aggregate);
        let clock = clock();
        crate::calibrate::at_start_up();
        // A keep policy chooses its trees from every invocation (the slowest, those over a bar, a uniform sample of
        // the run), and leaves the rest out before the writer: no sampling for cost under it.
        let keeps = config.keep != Keep::All || config.slower_than_ns > 0;
        sampler::start(if keeps { 0 } else { config.cost_budget_pct });
        crate::alloc::detect_counting();
        let (sender, receiver) = sync_channel(config.queue);
        SPARE.store(config.queue + SPARE_RECORDERS, Relaxed);
        lock(&POOL).reserve(config.queue + SPARE_RECORDERS + 8);
        let writer = start_writer(receiver);
        install_flush_hooks();
        // 8 slots per invocation of the queue's length (a 10-node invocation takes 11), up to 640 KB a thread.
        let outbox_slots = (config.queue * 8).next_power_of_two().clamp(8, 1 << 14);
        Runtime { config, clock, plan, sender, writer, outbox_slots }
    })
}

/// In the fork handler's `prepare`: a fork while another thread sets the runtime up would leave the child a
/// `RUNTIME` whose set-up never ends (that thread is not in the child: its first root would wait forever), so the
/// fork waits for the set-up to finish, up to 2 s (it takes about a millisecond; the bound keeps a fork from waiting
/// on a set-up that is itself stuck).
pub(crate) fn wait_for_runtime_start() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while RUNTIME.get().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

enum Admission {
    /// Recorded; with the sampler's entry of its root when it has one.
    Record(Option<&'static Entry>),
    Skip,
    /// Skipped to keep the probes' cost within the budget (`sampler.rs`): not recorded at all; its root timed when
    /// the flag says so.
    SkipForCost(&'static Entry, bool),
    /// Not kept (sampled out, past the invocation limit), but recorded for the whole-run aggregate.
    AggregateOnly,
}

impl Admission {
    /// The sampler's entry a recorded invocation reports its cost to at its end (`sampler::recorded`).
    fn sampled_by(&self) -> Option<&'static Entry> {
        match *self {
            Admission::Record(entry) => entry,
            _ => None,
        }
    }
}

/// What happens to an invocation that is not kept: recorded for the aggregate when there is one.
fn not_kept() -> Admission {
    if crate::aggregate::enabled() {
        Admission::AggregateOnly
    } else {
        Admission::Skip
    }
}

/// Admits a root task's invocation of root `index` (threads admit with their own counters, in `admit_on_thread`).
fn admit(rt: &Runtime, index: u32) -> Admission {
    let seen = SEEN.fetch_add(1, Relaxed);
    if seen % crate::control::sample() != 0 {
        SAMPLED_OUT.fetch_add(1, Relaxed);
        return not_kept();
    }
    if ADMITTED.fetch_add(1, Relaxed) >= rt.config.max_invocations && !limit_lifted(rt) {
        DROPPED_LIMIT.fetch_add(1, Relaxed);
        return not_kept();
    }
    match sampler::decide_for_task(index) {
        Decision::Record(entry) => Admission::Record(entry),
        Decision::Skip(entry, timed) => Admission::SkipForCost(entry, timed),
    }
}

/// Whether the default `max_invocations` is lifted now: `ctl slower-than` set a threshold on a run started without
/// a keep policy (read only once the limit is reached).
fn limit_lifted(rt: &Runtime) -> bool {
    rt.config.max_invocations_default && keep::slower_than_ns() > 0
}

/// Takes a thread's next batch of tickets under `CALLTIME_MAX_INVOCATIONS`: up to 64 at a time, fewer as the limit
/// nears (so threads holding unused tickets keep few from the others); 0 past the limit, without writing the shared
/// counter.
fn take_tickets(max: u64) -> u64 {
    let admitted = ADMITTED.load(Relaxed);
    if admitted >= max {
        return 0;
    }
    let batch = ((max - admitted) / 64).clamp(1, 64);
    let before = ADMITTED.fetch_add(batch, Relaxed);
    batch.min(max.saturating_sub(before))
}

/// Admits (or skips, counted) a root invocation on this thread: its own sampling count and tickets, so threads
/// starting invocations at once share no counter.
fn admit_on_thread(slot: &mut ThreadSlot, outbox: &Outbox, rt: &Runtime, index: u32) -> Admission {
    let seen = slot.seen;
    slot.seen += 1;
    let sample = crate::control::sample();
    if sample > 1 && seen % sample != 0 {
        outbox.count(Counter::Seen);
        outbox.count(Counter::SampledOut);
        return not_kept();
    }
    // Before the tickets: an invocation skipped for cost takes none, so the trees kept span more of the run. It is
    // counted as seen by its sampler entry alone (`stats`), as the fast path (`sampler::skip_untimed`) counts it.
    let entry = match sampler::decide_on_thread(index) {
        Decision::Record(entry) => entry,
        Decision::Skip(entry, timed) => return Admission::SkipForCost(entry, timed),
    };
    outbox.count(Counter::Seen);
    if slot.tickets == 0 {
        let max = if limit_lifted(rt) { u64::MAX } else { rt.config.max_invocations };
        slot.tickets = take_tickets(max);
        if slot.tickets == 0 {
            outbox.count(Counter::DroppedLimit);
            return not_kept();
        }
    }
    slot.tickets -= 1;
    Admission::Record(entry)
}

/// A free recorder from the pool, or a new one while the spare budget lasts.
pub(crate) fn spare_recorder(rt: &Runtime) -> Option<Box<Recorder>> {
    if let Some(rec) = lock(&POOL).pop() {
        return Some(rec);
    }
    SPARE.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1)).ok()?;
    Some(Recorder::boxed(&rt.config))
}

/// A recorder for a root task or a part: a spare one, else a small one while their budget lasts. Not for a thread's
/// big invocations, which the writer may hold thousands of when it falls behind (each grown to thousands of nodes).
pub(crate) fn task_recorder(rt: &Runtime) -> Option<Box<Recorder>> {
    spare_recorder(rt).or_else(|| {
        SMALL_SPARE.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1)).ok()?;
        Some(Recorder::small(&rt.config))
    })
}

/// Puts a recorder back in the pool, or frees it when the pool is full (its place in the spare budget given back).
pub(crate) fn give_back(rec: Box<Recorder>) {
    let mut pool = lock(&POOL);
    if pool.len() < pool.capacity() {
        pool.push(rec);
        return;
    }
    drop(pool);
    let budget = if rec.small { &SMALL_SPARE } else { &SPARE };
    drop(rec);
    budget.fetch_add(1, Relaxed);
}

/// Wake the writer at most this often (ns) when invocations end in a burst: a wake is a futex call and a context
/// switch, which cost a program with thousands of short invocations more than its probes did.
const WAKE_EVERY_NS: u64 = 5_000_000;
/// An outbox push this many clock ticks (2 to 10 ms) after the thread's previous one wakes the writer right away,
/// so a program killed between requests loses nothing.
const QUIET_TICKS: u64 = 10_000_000;
static LAST_WAKE_NS: AtomicU64 = AtomicU64::new(0);
/// Invocations sent to the writer and not yet received by it.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

fn wake_writer(rt: &Runtime) {
    // A forked child's writer is its own, started at its first wake (the parent's thread is not in the child).
    let writer = if crate::control::forked() { crate::writer::child_writer() } else { rt.writer.as_ref() };
    if let Some(writer) = writer {
        writer.unpark();
    }
}

/// Wakes the writer when `now` or when it was last woken `WAKE_EVERY_NS` ago or more (after a quiet spell, so a
/// program killed between invocations loses nothing), not at every hand-off of a burst.
fn wake_writer_in_a_burst(rt: &Runtime, now: bool) {
    let now_ns = rt.clock.elapsed_ns();
    if now || now_ns.saturating_sub(LAST_WAKE_NS.load(Relaxed)) >= WAKE_EVERY_NS {
        LAST_WAKE_NS.store(now_ns, Relaxed);
        wake_writer(rt);
    }
}

/// The recorders' pool (boxed, as `POOL` says why).
#[allow(clippy::vec_box)]
pub(crate) type Pool = Vec<Box<Recorder>>;

/// The recorders' pool, locked by the fork handler (see `control::watch_forks`).
pub(crate) fn lock_pool_for_fork() -> MutexGuard<'static, Pool> {
    lock(&POOL)
}

/// In a child forked without exec (its only thread, the fork handler holding every lock): the parent's counters
/// are zeroed, so the child's `stats` count its own roots.
pub(crate) fn forget_parent_counters() {
    for counter in [
        &SEEN,
        &ADMITTED,
        &SAMPLED_OUT,
        &DROPPED_LIMIT,
        &DROPPED_QUEUE_FULL,
        &DROPPED_NO_BUFFER,
        &DROPPED,
        &KEPT,
        &LEFT_OUT_FAST,
        &LEFT_OUT_UNSELECTED,
        &TRUNCATED,
        &LAST_WAKE_NS,
        &LAST_TASK_START,
        &crate::writer::DROPPED_CAP,
    ] {
        counter.store(0, Relaxed);
    }
    FIRST_TASK_START.store(u64::MAX, Relaxed);
    QUEUED.store(0, Relaxed);
    // The forking thread's next outbox push counts as after a quiet spell, so it wakes (starts) the child's writer.
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            // `end - last_push` wraps to at least QUIET_TICKS for any `end`, however soon after the start.
            slot.last_push = u64::MAX - QUIET_TICKS;
        }
    });
}

/// Hands a completed invocation to the writer in its recorder; drops it (counted) when the queue is full.
fn send(rt: &Runtime, rec: Box<Recorder>) {
    // Counted before the send, so the writer's decrement (after its receive) can never come first and wrap the
    // counter; undone when the send fails.
    let queued = QUEUED.fetch_add(1, Relaxed).wrapping_add(1);
    match rt.sender.try_send(rec) {
        // Woken right away after a quiet spell (so a program killed between requests loses nothing), and before
        // the queue fills up in a burst.
        Ok(()) => wake_writer_in_a_burst(rt, queued >= rt.config.queue / 2),
        Err(TrySendError::Full(rec)) => {
            QUEUED.fetch_sub(1, Relaxed);
            DROPPED_QUEUE_FULL.fetch_add(1, Relaxed);
            give_back(rec);
        }
        Err(TrySendError::Disconnected(rec)) => {
            QUEUED.fetch_sub(1, Relaxed);
            DROPPED.fetch_add(1, Relaxed);
            give_back(rec);
        }
    }
}

/// The writer received one invocation from the queue.
pub(crate) fn dequeued() {
    // Never below zero: every receive follows its send's increment. Saturating all the same, so a miscount can
    // never wrap the counter and wake the writer on every send.
    let _ = QUEUED.fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
}

/// A thread's first root entry: its recorder, identity and outbox.
#[cold]
#[inline(never)]
fn set_up_thread(slot: &mut ThreadSlot, rt: &Runtime) {
    let rec = lock(&POOL).pop().unwrap_or_else(|| Recorder::boxed(&rt.config));
    slot.rec = Box::into_raw(rec);
    if slot.outbox.is_none() {
        // The same number as the parts this thread runs (`adopt::thread_number`).
        slot.id = crate::adopt::thread_number();
        let name = std::thread::current().name().map(|n| Arc::from(n.replace(['\n', '\r'], " ")));
        slot.outbox = Some(outbox::claim(rt.outbox_slots, slot.id, name));
    }
}

/// The root probe of a thread with no invocation in progress: admits (or skips) a new invocation and enters its
/// root in the thread's recorder. Most invocations of a root sampled for cost are skipped without timing their
/// root: they take `sampler::skip_untimed` (the sampler's counters and `CURRENT`, nothing else) and their guard's
/// drop clears `CURRENT` (`probe::leave`); the others are admitted the full way.
#[inline(never)]
pub(crate) fn start_thread_invocation(index: u32, plan: &'static PlanInfo) -> Guard {
    if sampler::skip_untimed(index) {
        // No settle of retired calls, as below for every skipped invocation.
        replace_current(SKIP);
        return Guard::SKIPPED;
    }
    admit_thread_invocation(index, plan)
}

/// `start_thread_invocation`'s full way: the runtime set up, the thread's recorder and admission.
#[cold]
#[inline(never)]
fn admit_thread_invocation(index: u32, plan: &'static PlanInfo) -> Guard {
    let rt = runtime(plan);
    // The runtime may have just started with recording off (`CALLTIME_START_OFF`).
    if crate::control::is_off() {
        return Guard::INERT;
    }
    let mut timed_skip = false;
    let rec = THREAD
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            let slot = &mut *slot;
            if slot.rec.is_null() {
                set_up_thread(slot, rt);
            }
            let outbox = slot.outbox?;
            let admission = admit_on_thread(slot, outbox, rt, index);
            match admission {
                Admission::Skip => {
                    outbox.note_root_start(now());
                    return Some(SKIP);
                }
                // Untimed: no clock read, so its start is not noted either (the run's last root start may be up
                // to a few dozen skipped invocations early).
                Admission::SkipForCost(_, false) => return Some(SKIP),
                Admission::SkipForCost(entry, true) => {
                    let start = now();
                    outbox.note_root_start(start);
                    sampler::skip_started(entry, start);
                    timed_skip = true;
                    return Some(SKIP);
                }
                _ => {}
            }
            // SAFETY: the slot owns the recorder and no invocation is in progress on this thread. The name is the
            // outbox's (the writer takes it from there).
            unsafe {
                (*slot.rec).begin(OwnerKind::Thread, slot.id, None);
                (*slot.rec).aggregate_only = matches!(admission, Admission::AggregateOnly);
                (*slot.rec).sampled_by = admission.sampled_by();
            }
            Some(slot.rec)
        })
        .ok()
        .flatten();
    let rec = match rec {
        Some(SKIP) => SKIP,
        Some(rec) => rec,
        None => {
            // Thread teardown: nothing can be recorded here.
            SEEN.fetch_add(1, Relaxed);
            DROPPED.fetch_add(1, Relaxed);
            SKIP
        }
    };
    if rec == SKIP {
        // No settle of retired calls (nor at the end, `end_skipped_invocation`): the thread's counts made outside
        // any invocation and in a skipped one are both discarded, by the settle at the next recorded invocation's
        // start (whose context left is null) as by these two. So a skipped invocation costs two thread-local stores
        // here, not two passes over the counted slots (about 120 instructions each on semver).
        replace_current(SKIP);
        return if timed_skip { Guard::SKIPPED_TIMED } else { Guard::SKIPPED };
    }
    set_current(rec);
    // SAFETY: rec is this thread's live recorder.
    unsafe { record_enter(rec, index) }
}

/// What a recorded invocation tells its root's sampler entry (when sampled) at the end of its root's exit: its
/// nodes and counts of retired calls, its root's span, and when the root was left (see `report_to_sampler`).
type SamplerReport = (&'static Entry, usize, u64, u64);

fn sampler_report(rec: &Recorder, root: &Node) -> Option<SamplerReport> {
    let nodes = rec.nodes().len() + rec.retired_pairs().len();
    rec.sampled_by.map(|entry| (entry, nodes, root.end.wrapping_sub(root.start), root.end))
}

/// Tells the sampler what a recorded invocation cost, the runtime's work after its root was left (the retirement
/// note, the aggregate's fold, the hand-off) measured with one more clock read: only recorded invocations of a
/// sampled root pay it.
fn report_to_sampler(report: Option<SamplerReport>) {
    if let Some((entry, nodes, span, root_end)) = report {
        sampler::recorded(entry, nodes, span, now().wrapping_sub(root_end));
    }
}

/// The root frame of a thread invocation was left: hand the tree to the writer, through the thread's outbox when
/// it is small (the recorder is reused at once), else in its recorder (the thread takes a fresh one).
#[cold]
#[inline(never)]
pub(crate) fn complete_thread_invocation(rec: *mut Recorder) {
    set_current(ptr::null_mut());
    let Some(rt) = RUNTIME.get() else { return };
    let mut report = None;
    let handed = THREAD.try_with(|slot| {
        let mut slot = slot.try_borrow_mut().ok()?;
        let slot = &mut *slot;
        let outbox = slot.outbox.filter(|_| slot.rec == rec)?;
        // SAFETY: the slot owns the recorder, whose invocation just ended on this thread.
        let r = unsafe { &*rec };
        crate::retire::note_invocation(r, rt.config.chooses());
        crate::aggregate::fold(r);
        crate::adopt::root_returned(r);
        let root = r.nodes().first()?;
        outbox.note_root_start(root.start);
        if r.aggregate_only {
            return Some(());
        }
        report = sampler_report(r, root);
        if rt.config.chooses() {
            let local_bar = keep::local_sample_bar(rt.config.keep, slot.seen);
            let (start, end) = (root.start, root.end);
            if let Err(why) = keep::verdict(rt.config.keep, start, end, OwnerKind::Thread, slot.id, local_bar) {
                outbox.count(left_out_counter(why));
                return Some(());
            }
        }
        // An invocation with spawned work goes in its recorder, which holds what it adopted.
        if !r.folded && r.adoption.is_none() && r.nodes().len() <= outbox.max_nodes() {
            push_to_outbox(slot, outbox, r, rt);
            return Some(());
        }
        match spare_recorder(rt) {
            Some(fresh) => {
                let filled = mem::replace(&mut slot.rec, Box::into_raw(fresh));
                // SAFETY: the pointer came from Box::into_raw and the slot no longer refers to it.
                match outbox.push_recorder(unsafe { Box::from_raw(filled) }) {
                    // Not at every big invocation: a wake is a futex call here and a context switch, a drain and a
                    // `write` on the writer, 50 of them in the tokenizer bench's 25 ms (docs/performance.md, "Ninth
                    // round"); the writer looks by itself every 20 ms at most.
                    Ok(_) => wake_writer_in_a_burst(rt, false),
                    Err(rec) => {
                        outbox.count(Counter::DroppedQueueFull);
                        give_back(rec);
                    }
                }
            }
            // No free recorder: the tree is dropped and the recorder reused for the next invocation.
            None => outbox.count(Counter::DroppedNoBuffer),
        }
        Some(())
    });
    if !matches!(handed, Ok(Some(()))) {
        DROPPED.fetch_add(1, Relaxed);
    }
    report_to_sampler(report);
}

fn left_out_counter(why: LeftOut) -> Counter {
    match why {
        LeftOut::Fast => Counter::LeftOutFast,
        LeftOut::Unselected => Counter::LeftOutUnselected,
    }
}

/// Copies a small finished invocation into the thread's outbox (dropped, counted, when it is full) and wakes the
/// writer when the outbox crosses half full or after a quiet spell.
fn push_to_outbox(slot: &mut ThreadSlot, outbox: &Outbox, rec: &Recorder, rt: &Runtime) {
    let nodes = rec.nodes();
    let Some((before, after)) = outbox.push(nodes, rec.retired_pairs(), rec.truncated()) else {
        outbox.count(Counter::DroppedQueueFull);
        return;
    };
    let end = nodes.first().map_or(0, |root| root.end);
    let quiet = end.wrapping_sub(slot.last_push) >= QUIET_TICKS;
    slot.last_push = end;
    let half = outbox.capacity() / 2;
    if quiet || (before < half && after >= half) {
        wake_writer(rt);
    }
}

/// Admits a new root task's invocation: a recorder begun for it, or `Err` when it is not recorded (sampled out,
/// past the invocation limit, or no free recorder; counted): `Err(Some(entry))` when it was skipped for cost and
/// its root is to be timed (a random 1 in `sampler::TIME_EVERY`, as a thread's root: from its first poll to its
/// end, on whichever threads it is polled; `sampler::task_skip_ended`).
pub(crate) fn begin_task_invocation(
    index: u32,
    plan: &'static PlanInfo,
) -> Result<Box<Recorder>, Option<&'static Entry>> {
    let rt = runtime(plan);
    if crate::control::is_off() {
        return Err(None);
    }
    let admission = admit(rt, index);
    match admission {
        Admission::Skip | Admission::SkipForCost(_, false) => {
            note_task_root_start(now());
            return Err(None);
        }
        Admission::SkipForCost(entry, true) => {
            note_task_root_start(now());
            return Err(Some(entry));
        }
        _ => {}
    }
    let Some(mut rec) = task_recorder(rt) else {
        DROPPED_NO_BUFFER.fetch_add(1, Relaxed);
        return Err(None);
    };
    rec.begin(OwnerKind::Task, TASK_IDS.fetch_add(1, Relaxed), None);
    rec.aggregate_only = matches!(admission, Admission::AggregateOnly);
    rec.sampled_by = admission.sampled_by();
    Ok(rec)
}

/// A root task's invocation ended: hand its tree to the writer.
pub(crate) fn finish_task(owned: OwnedRecorder) {
    let rec = owned.into_box();
    crate::retire::note_invocation(&rec, RUNTIME.get().map_or(true, |rt| rt.config.chooses()));
    crate::aggregate::fold(&rec);
    crate::adopt::root_returned(&rec);
    let Some(rt) = RUNTIME.get() else { return drop(rec) };
    let root = rec.nodes().first().copied();
    if let Some(root) = root {
        note_task_root_start(root.start);
    }
    if rec.aggregate_only {
        return give_back(rec);
    }
    let report = root.as_ref().and_then(|root| sampler_report(&rec, root));
    if let Some(root) = root.filter(|_| rt.config.chooses()) {
        if let Err(why) = keep::verdict(rt.config.keep, root.start, root.end, OwnerKind::Task, rec.owner(), 0) {
            match why {
                LeftOut::Fast => LEFT_OUT_FAST.fetch_add(1, Relaxed),
                LeftOut::Unselected => LEFT_OUT_UNSELECTED.fetch_add(1, Relaxed),
            };
            report_to_sampler(report);
            return give_back(rec);
        }
    }
    send(rt, rec);
    report_to_sampler(report);
}

/// First and last root start (ticks) of root tasks; threads keep theirs in their outboxes.
static FIRST_TASK_START: AtomicU64 = AtomicU64::new(u64::MAX);
static LAST_TASK_START: AtomicU64 = AtomicU64::new(0);

/// Tasks share these words, so they are written only when they move (the first start once, the last start as
/// time goes on: a load, and a read-modify-write only when it is later).
fn note_task_root_start(start: u64) {
    if FIRST_TASK_START.load(Relaxed) > start {
        FIRST_TASK_START.fetch_min(start, Relaxed);
    }
    if LAST_TASK_START.load(Relaxed) < start {
        LAST_TASK_START.fetch_max(start, Relaxed);
    }
}

/// The first and last root start so far, in ticks (`(u64::MAX, 0)` before any).
pub(crate) fn root_span_ticks() -> (u64, u64) {
    let (first, last) = outbox::root_span();
    (first.min(FIRST_TASK_START.load(Relaxed)), last.max(LAST_TASK_START.load(Relaxed)))
}

/// The counters of `crate::Stats` so far: the shared ones plus every thread's outbox.
pub(crate) fn stats() -> crate::Stats {
    let dropped_limit = DROPPED_LIMIT.load(Relaxed) + outbox::total(Counter::DroppedLimit);
    let dropped_queue_full = DROPPED_QUEUE_FULL.load(Relaxed) + outbox::total(Counter::DroppedQueueFull);
    let dropped_no_buffer = DROPPED_NO_BUFFER.load(Relaxed) + outbox::total(Counter::DroppedNoBuffer);
    let (first, last) = root_span_ticks();
    // A thread's invocation skipped for cost is counted as seen by the sampler alone (`admit_on_thread`).
    let (sampled_for_cost, skipped_tasks) = sampler::total_skipped();
    let (first_root_ns, last_root_ns) = match RUNTIME.get() {
        Some(rt) if first <= last => {
            let scale = Scale::current(rt.clock);
            (scale.ns(first), scale.ns(last))
        }
        _ => (0, 0),
    };
    crate::Stats {
        left_out_fast: LEFT_OUT_FAST.load(Relaxed) + outbox::total(Counter::LeftOutFast),
        left_out_unselected: LEFT_OUT_UNSELECTED.load(Relaxed) + outbox::total(Counter::LeftOutUnselected),
        first_root_ns,
        last_root_ns,
        seen: SEEN.load(Relaxed) + outbox::total(Counter::Seen) + (sampled_for_cost - skipped_tasks),
        kept: KEPT.load(Relaxed),
        sampled_out: SAMPLED_OUT.load(Relaxed) + outbox::total(Counter::SampledOut),
        sampled_for_cost,
        dropped: DROPPED.load(Relaxed) + dropped_limit + dropped_queue_full + dropped_no_buffer,
        truncated: TRUNCATED.load(Relaxed),
        dropped_limit,
        dropped_queue_full,
        dropped_no_buffer,
        retired_functions: crate::retire::retired_functions(),
        dropped_cap: crate::writer::DROPPED_CAP.load(Relaxed),
    }
}

//! The writer: a thread that takes completed invocations out of the threads' outboxes and the root tasks' queue and
//! appends them to the trace file; the panic hook, the exit handler and `flush` drain them too. Per-call
//! invocations are copied as binary records (`block`: the tool's reader converts them); folded invocations and
//! those held until exit are formatted as text lines (ticks to nanoseconds, preorder).

mod block;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use std::{mem, ptr};

use crate::adopt::{PartKind, PartState};
use crate::clock::Scale;
use crate::invocation::{
    dequeued, give_back, lock, root_span_ticks, Runtime, DROPPED, KEPT, LEFT_OUT_FAST, LEFT_OUT_UNSELECTED, RUNTIME,
    TRUNCATED,
};
use crate::keep::{self, Held, Holder};
use crate::outbox::{self, Entry};
use crate::output::Output;
use crate::recorder::{
    Node, OwnerKind, PathNode, Recorder, FLAG_CANCELLED, FLAG_ERR, NO_SLOT, OPEN, PARENT_BITS, PARENT_MASK, PATH_KEY,
    UNTIMED,
};
use crate::retire::{self, Retirement, Watch};
use crate::Stats;

/// The trace format version this runtime writes (`calltime-trace 5`: version 3 plus binary blocks, whose records may
/// be narrow).
const TRACE_VERSION: u32 = 5;
/// Records gathered before the writer writes them out, even in the middle of a drain.
const FLUSH_BYTES: usize = 1 << 18;
/// How often the writer thread looks at the queue by itself, at most (and how often it polls the control file).
const WRITER_PERIOD: Duration = Duration::from_millis(20);
/// How often at least, while its looks find the outboxes filling: a thread's outbox fills in about a millisecond in
/// a program of short invocations, faster than a wake at half full gets the writer scheduled on a busy machine, and
/// a record that finds the outbox full is dropped.
const BUSY_PERIOD: Duration = Duration::from_millis(1);
/// Set by tests (`__private::hold_writer`) to keep the writer thread from draining.
static HOLD_WRITER: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread holds the sink, so a panic inside it never waits for itself.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Holds (true) or releases the writer thread (see `__private::hold_writer`).
pub(crate) fn hold_writer(hold: bool) {
    HOLD_WRITER.store(hold, std::sync::atomic::Ordering::SeqCst);
}

/// Gives the sink the queue's receiving end and starts the writer thread; its handle, to wake it, unless the thread
/// could not be spawned (the panic hook, the exit handler and `flush` still write).
pub(crate) fn start_writer(receiver: Receiver<Box<Recorder>>) -> Option<std::thread::Thread> {
    lock(&SINK).receiver = Some(receiver);
    spawn_writer()
}

/// A forked child's writer thread, started at its first wake (see `control::watch_forks`).
pub(crate) fn child_writer() -> Option<&'static std::thread::Thread> {
    static CHILD_WRITER: std::sync::OnceLock<Option<std::thread::Thread>> = std::sync::OnceLock::new();
    CHILD_WRITER.get_or_init(spawn_writer).as_ref()
}

/// The sink, locked by the fork handler (see `control::watch_forks`), with this process's file open: the forking
/// process keeps `CALLTIME_OUT` (or the name it had) and the child always writes its own `.p<pid>` sibling, whoever
/// writes first.
pub(crate) fn lock_sink_for_fork() -> MutexGuard<'static, Sink> {
    let mut sink = lock(&SINK);
    if let Some(rt) = RUNTIME.get() {
        sink.open(rt);
    }
    sink
}

/// In a child forked without exec, with the sink and the pool held: the parent's file, queued and held trees are
/// forgotten (the queued recorders go back to the pool); the child opens its own file (`<out>.p<pid>`, see
/// `output`) at its first write.
pub(crate) fn forget_parent_sink(sink: &mut Sink, pool: &mut crate::invocation::Pool) {
    while let Some(rec) = sink.receiver.as_ref().and_then(|r| r.try_recv().ok()) {
        if pool.len() < pool.capacity() {
            pool.push(rec);
        }
    }
    // Dropped without flushing: the parent's descriptor stays the parent's to write.
    sink.output = Output::new();
    sink.opened = false;
    sink.seq = 0;
    sink.last_stats = None;
    sink.last_span = (0, 0);
    sink.last_periodic = false;
    sink.pending.clear();
    sink.block = None;
    sink.pending_records = 0;
    sink.pending_truncated = 0;
    sink.holder = Holder::new();
}

fn spawn_writer() -> Option<std::thread::Thread> {
    std::thread::Builder::new()
        .name("calltime-writer".into())
        .spawn(|| {
            let mut last_aggregate = std::time::Instant::now();
            let mut last_poll = None;
            let mut period = WRITER_PERIOD;
            // CPU time (ns) of this thread's drains that wrote trees, and the units they wrote.
            let mut writer_cost = (0u64, 0u64);
            loop {
                std::thread::park_timeout(period);
                if !HOLD_WRITER.load(Relaxed) {
                    let (cpu_before, units_before) = (thread_cpu_ns(), WRITTEN_UNITS.load(Relaxed));
                    let fill = drain_then(false, false).fill;
                    period = next_period(period, fill);
                    // What writing the trees cost this thread (their encoding, the retirement watch, the `write`s):
                    // the sampler's budget counts it for each recorded invocation (`sampler::writer_measured`). Two
                    // system calls a wake that wrote something; the aggregate's snapshots and the control polls
                    // below are left out: they cost the same however few invocations are recorded.
                    let units = WRITTEN_UNITS.load(Relaxed) - units_before;
                    if let (Some(before), Some(after), true) = (cpu_before, thread_cpu_ns(), units > 0) {
                        writer_cost.0 += after.saturating_sub(before);
                        writer_cost.1 += units;
                        crate::sampler::writer_measured(writer_cost.0, writer_cost.1);
                    }
                    write_aggregate_when_due(&mut last_aggregate);
                }
                // Every `WRITER_PERIOD`, not at every wake: a look at the control file is a system call.
                if last_poll.map_or(true, |at: std::time::Instant| at.elapsed() >= WRITER_PERIOD) {
                    last_poll = Some(std::time::Instant::now());
                    poll_control();
                }
            }
        })
        .ok()
        .map(|handle| handle.thread().clone())
}

/// What the writer wrote, in the units the sampler charges it by: each tree's nodes and counts of retired
/// functions, plus one for the tree (`sampler::writer_measured`).
static WRITTEN_UNITS: AtomicU64 = AtomicU64::new(0);

/// This thread's CPU time (user and system) in ns; `None` where it cannot be read.
fn thread_cpu_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // C's `struct timespec` on Linux: two `long`s (time_t is a `long` there), so this holds on 32-bit too.
        #[repr(C)]
        struct Timespec {
            tv_sec: std::os::raw::c_long,
            tv_nsec: std::os::raw::c_long,
        }
        extern "C" {
            fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut time = Timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: the C library's clock_gettime writes one timespec into `time`, which has its layout.
        let ok = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) } == 0;
        return ok.then(|| (time.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(time.tv_nsec as u64));
    }
    #[allow(unreachable_code)]
    None
}

/// Counts one tree written (see `WRITTEN_UNITS`); only the sink's holder calls it.
fn count_written(records: usize) {
    WRITTEN_UNITS.store(WRITTEN_UNITS.load(Relaxed) + records as u64 + 1, Relaxed);
    let slow = SLOW_WRITER_NS.load(Relaxed);
    if slow > 0 {
        spin_cpu(slow);
    }
}

/// CPU time (ns) spent more per tree written, for tests (`__private::slow_writer`).
static SLOW_WRITER_NS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn slow_writer(ns: u64) {
    SLOW_WRITER_NS.store(ns, Relaxed);
}

/// Busy until this thread has spent `ns` more of CPU time (not wall time, which a loaded machine stretches).
#[cold]
fn spin_cpu(ns: u64) {
    let Some(start) = thread_cpu_ns() else { return };
    while thread_cpu_ns().is_some_and(|now| now.saturating_sub(start) < ns) {
        std::hint::spin_loop();
    }
}

/// The trace file and the receiving end of the queue; whoever holds the lock writes.
pub(crate) struct Sink {
    receiver: Option<Receiver<Box<Recorder>>>,
    output: Output,
    opened: bool,
    seq: u64,
    last_stats: Option<Stats>,
    /// The root span (ticks) of `last_stats`.
    last_span: (u64, u64),
    /// Whether `last_stats` was a periodic line (written while the program runs).
    last_periodic: bool,
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
    walk: Vec<(u32, u32, u64)>,
    children: Vec<u32>,
    /// The node lines of the text record being written.
    body: Vec<u8>,
    /// Complete records not yet written (see `flush_pending`): text lines and binary blocks.
    pending: Vec<u8>,
    /// The binary block open at the end of `pending`: where it starts, its scale, its records so far.
    block: Option<(usize, (u64, u128), u64)>,
    /// The aggregate's text, reused.
    aggregate_text: String,
    /// The `(function index, calls)` of the binary record being written.
    retired_pairs: Vec<(u32, u64)>,
    /// The calls of retired functions the parts of the text record being written counted, by retirement slot: its
    /// `r` lines add them to its own thread's (rayon's workers call them too).
    part_retired: Vec<u64>,
    /// Whether the last binary record had allocation counts (see `block::push_record`).
    allocs_hint: bool,
    pending_records: u64,
    pending_truncated: u64,
    /// A folded invocation's call paths with the times of its pre-fold calls added.
    paths: Vec<PathNode>,
    /// The open ancestors (slot, end in ns, left out by `CALLTIME_MIN_NS`) of the node being written.
    open: Vec<(u32, u64, bool)>,
    /// The nodes (then the retired calls) of the outbox record being written.
    scratch: Vec<Node>,
    /// The writer's observations of per-call invocations, for retiring functions.
    watch: Watch,
    retirements: Vec<Retirement>,
    /// Records held until exit (`--keep-slowest`, `--keep-sample`).
    holder: Holder,
    /// While a recorder with spawned work is written: the line each node slot (or call path) went to, counted
    /// from its record's or part's first line (`NO_SLOT` when left out); empty otherwise.
    positions: Vec<u32>,
}

/// What a record's `inv` line and `r` lines say besides its nodes, times and counts.
struct Owner<'a> {
    kind: OwnerKind,
    id: u64,
    truncated: u64,
    name: Option<&'a str>,
    retired: Retired<'a>,
    /// The recorder, when it holds work spawned on other threads or tasks (written as `p` records).
    spawner: Option<&'a Recorder>,
}

/// Calls of retired functions in an invocation.
enum Retired<'a> {
    /// A recorder's counters, by retirement slot.
    BySlot(&'a [u64]),
    /// An outbox record's entries: `index` the retirement slot, `start` the calls.
    Entries(&'a [Node]),
}

impl<'a> Retired<'a> {
    /// How many retired functions were called.
    fn len(&self) -> usize {
        match self {
            Retired::Entries(entries) => entries.len(),
            Retired::BySlot(_) => self.slots().count(),
        }
    }

    /// `(function index, calls)` of each retired function called (retirement slots in use only).
    fn pairs(&self) -> impl Iterator<Item = (u32, u64)> + 'a {
        self.slots().map(|(slot, calls)| (retire::slot_index(slot), calls))
    }

    /// `(retirement slot, calls)` of each retired function called (slots in use only).
    fn slots(&self) -> impl Iterator<Item = (usize, u64)> + 'a {
        let (by_slot, entries): (&[u64], &[Node]) = match *self {
            Retired::BySlot(counts) => (counts, &[]),
            Retired::Entries(entries) => (&[], entries),
        };
        let slots_used = retire::slots_used();
        let by_slot = by_slot.iter().enumerate().map(|(slot, &calls)| (slot, calls));
        let entries = entries.iter().map(|e| (e.index as usize, e.start));
        by_slot.chain(entries).filter(move |&(slot, calls)| calls > 0 && (1..=slots_used).contains(&slot))
    }
}

/// Adds `(retirement slot, calls)` pairs to counts by slot (the writer's thread: may allocate).
fn add_by_slot(sums: &mut Vec<u64>, pairs: impl Iterator<Item = (usize, u64)>) {
    for (slot, calls) in pairs {
        if sums.len() <= slot {
            sums.resize(slot + 1, 0);
        }
        sums[slot] += calls;
    }
}

impl<'a> Owner<'a> {
    /// `thread_name`: a thread's recorder does not carry its thread's name (an atomic reference count per
    /// invocation); its outbox does.
    fn of(rec: &'a Recorder, thread_name: Option<&'a str>) -> Owner<'a> {
        let retired = Retired::BySlot(rec.retired_calls());
        let name = rec.name().or(thread_name);
        let spawner = rec.adoption.is_some().then_some(rec);
        Owner { kind: rec.kind(), id: rec.owner(), truncated: rec.truncated(), name, retired, spawner }
    }
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    receiver: None,
    output: Output::new(),
    opened: false,
    seq: 0,
    last_stats: None,
    last_span: (0, 0),
    last_periodic: false,
    first_child: Vec::new(),
    next_sibling: Vec::new(),
    walk: Vec::new(),
    children: Vec::new(),
    body: Vec::new(),
    pending: Vec::new(),
    block: None,
    aggregate_text: String::new(),
    retired_pairs: Vec::new(),
    part_retired: Vec::new(),
    allocs_hint: false,
    pending_records: 0,
    pending_truncated: 0,
    paths: Vec::new(),
    open: Vec::new(),
    scratch: Vec::new(),
    watch: Watch::sampling(),
    retirements: Vec::new(),
    holder: Holder::new(),
    positions: Vec::new(),
});

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
                            5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// Digits of `value` in decimal: from its bit length, corrected by one comparison.
#[inline(always)]
fn decimal_len(value: u64) -> usize {
    const POWERS: [u64; 20] = {
        let mut powers = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            powers[i] = powers[i - 1] * 10;
            i += 1;
        }
        powers
    };
    let bits = 64 - (value | 1).leading_zeros() as usize;
    let guess = (bits * 1233) >> 12;
    (guess + usize::from(value >= POWERS[guess])).max(1)
}

/// Writes `value` in decimal at `dst`, four digits per division and two per table lookup; returns the end.
///
/// # Safety
/// `dst` is valid for 20 bytes of writes.
#[inline(always)]
unsafe fn write_decimal(dst: *mut u8, value: u64) -> *mut u8 {
    // Depths, flags and small indices: most fields of a node line.
    if value < 10 {
        // SAFETY: one byte of the caller's 20.
        unsafe {
            *dst = b'0' + value as u8;
            return dst.add(1);
        }
    }
    let pair = |at: *mut u8, two: u32| {
        // SAFETY: `two` < 100 indexes a pair of the table; `at` is within the caller's 20 bytes (see below).
        unsafe { ptr::copy_nonoverlapping(PAIRS.as_ptr().add(two as usize * 2), at, 2) }
    };
    let len = decimal_len(value);
    // SAFETY: the digits fill dst..dst+len from the end, len <= 20 (the caller's contract).
    unsafe {
        let end = dst.add(len);
        let mut at = end;
        let mut value = value;
        while value >= 10_000 {
            let four = (value % 10_000) as u32;
            value /= 10_000;
            at = at.sub(4);
            pair(at, four / 100);
            pair(at.add(2), four % 100);
        }
        let mut value = value as u32;
        if value >= 100 {
            at = at.sub(2);
            pair(at, value % 100);
            value /= 100;
        }
        if value >= 10 {
            pair(at.sub(2), value);
        } else {
            *at.sub(1) = b'0' + value as u8;
        }
        end
    }
}

/// Appends `value` in decimal (the tests' view of `write_decimal`).
#[cfg(test)]
fn push_decimal(out: &mut Vec<u8>, value: u64) {
    out.reserve(20);
    // SAFETY: 20 bytes are reserved past the length; `write_decimal` writes the digits there and returns their end.
    unsafe {
        let start = out.as_mut_ptr().add(out.len());
        let end = write_decimal(start, value);
        out.set_len(out.len() + end.offset_from(start) as usize);
    }
}

/// Appends a line: `kind` (ASCII, a fixed size so that copying it is a move, not a `memcpy` call), then the
/// fields in decimal, with one capacity check (the writer spends most of its time here: `writeln!` through
/// core::fmt took about half of it on large trees).
#[inline(always)]
fn push_fields<const K: usize>(out: &mut Vec<u8>, kind: &[u8; K], fields: &[u64]) {
    out.reserve(K + fields.len() * 21 + 1);
    // SAFETY: the bytes written (kind, then per field a space and at most 20 digits, then a newline) fit in what
    // was just reserved past the length, and all of them are written before `set_len`.
    unsafe {
        let start = out.as_mut_ptr().add(out.len());
        ptr::copy_nonoverlapping(kind.as_ptr(), start, K);
        let mut at = start.add(K);
        for &value in fields {
            *at = b' ';
            at = write_decimal(at.add(1), value);
        }
        *at = b'\n';
        out.set_len(out.len() + at.offset_from(start) as usize + 1);
    }
}

/// `push_fields` for a kind known only at run time, into text (the aggregate's lines).
fn push_named_fields(out: &mut String, kind: &str, fields: &[u64]) {
    out.push_str(kind);
    // SAFETY: only ASCII (spaces, digits, a newline) is appended, so the string stays UTF-8.
    push_fields(unsafe { out.as_mut_vec() }, b"", fields);
}

/// Writes every queued invocation (and a `stats` line if asked). Safe from any thread; never waits for itself.
pub(crate) fn drain(stats_line: bool) {
    drain_then(stats_line, false);
}

/// `drain(true)` at exit, with the records held until then (`--keep-slowest`, `--keep-sample`) written before the
/// `stats` line.
fn drain_at_exit() {
    drain_then(true, true);
}

/// What a drain found.
#[derive(Clone, Copy, Default)]
struct Drained {
    /// How full the fullest outbox (or the queue of recorders) was, in 1/`FILL_SCALE`ths of its capacity.
    fill: u64,
}

/// The unit of `Drained::fill`.
const FILL_SCALE: u64 = 64;

/// The writer's next period after a look that found the outboxes `fill` full (see `Drained`): half as long when one
/// was a quarter full, twice as long when all were under 1/16 (a wake is a futex call, a context switch, a `write`
/// and, on a program using every core, a thread of the program preempted; a look every millisecond cost the
/// tokenizer bench 5-8% of its CPU, docs/performance.md "Ninth round").
fn next_period(period: Duration, fill: u64) -> Duration {
    if fill >= FILL_SCALE / 4 {
        (period / 2).max(BUSY_PERIOD)
    } else if fill < FILL_SCALE / 16 {
        (period * 2).min(WRITER_PERIOD)
    } else {
        period
    }
}

/// Takes what the queue and the outboxes hold (written or left out).
fn drain_then(stats_line: bool, held: bool) -> Drained {
    let Some(rt) = RUNTIME.get() else { return Drained::default() };
    if DRAINING.try_with(Cell::get).unwrap_or(true) {
        return Drained::default();
    }
    let _ = DRAINING.try_with(|d| d.set(true));
    let taken;
    {
        let mut sink = lock(&SINK);
        taken = sink.write_queued(rt);
        if held {
            sink.write_held(rt, true);
        }
        if stats_line {
            sink.write_aggregate(rt);
            sink.write_stats(rt, false);
        }
    }
    let _ = DRAINING.try_with(|d| d.set(false));
    taken
}

/// The clock's conversion as of now; `--slower-than` is published in ticks with it for the threads' hand-off.
fn current_scale(rt: &Runtime) -> Scale {
    let scale = Scale::current(rt.clock);
    keep::publish_slower_than(scale.span(1 << 32));
    scale
}

/// Trees dropped because the hourly byte budget was spent (`CALLTIME_MAX_BYTES_PER_HOUR`); also in `dropped`.
pub(crate) static DROPPED_CAP: AtomicU64 = AtomicU64::new(0);

/// The writer thread writes the whole-run aggregate every `CALLTIME_AGGREGATE_MS`, with a periodic `stats` line so
/// that a running process's trace has counters.
fn write_aggregate_when_due(last: &mut std::time::Instant) {
    let Some(rt) = RUNTIME.get() else { return };
    if last.elapsed() < Duration::from_millis(rt.config.aggregate_ms) {
        return;
    }
    *last = std::time::Instant::now();
    let mut sink = lock(&SINK);
    sink.write_held(rt, false);
    sink.write_aggregate(rt);
    sink.write_stats(rt, true);
}

/// The writer thread applies `cargo calltime ctl` commands (see `control`).
fn poll_control() {
    let Some(rt) = RUNTIME.get() else { return };
    let current = lock(&SINK).output.current_path();
    let change = crate::control::poll(current.as_deref().unwrap_or(&rt.config.out));
    // A threshold set by `ctl slower-than` reaches the threads in ticks within this period.
    current_scale(rt);
    if let Some((setting, value, applied)) = change {
        // `control <at_ns> <setting>=<value>` (rare, on the writer thread): the report says what was switched, when.
        let at_ns = rt.clock.elapsed_ns().saturating_sub(applied.elapsed().as_nanos() as u64);
        let line = format!("control {at_ns} {setting}={value}\n");
        let mut sink = lock(&SINK);
        if sink.open(rt) {
            sink.output.write_always(line.as_bytes());
        }
    }
}

/// At exit (after the last drain): the process can no longer be controlled.
pub(crate) fn at_exit() {
    crate::control::remove_files();
}

impl Sink {
    /// Writes a batch of records within the hourly budget; over it, they are dropped and counted.
    fn write_trees(&mut self, bytes: &[u8]) -> bool {
        if self.output.admit_trees(bytes.len()) {
            return self.output.write(bytes);
        }
        DROPPED_CAP.fetch_add(self.pending_records, Relaxed);
        false
    }

    /// Appends an `aggregate` record of every invocation so far (docs/trace-format.md), unless nothing was folded.
    fn write_aggregate(&mut self, rt: &Runtime) {
        if !crate::aggregate::enabled() {
            return;
        }
        let scale = Scale::current(rt.clock);
        let mut text = mem::take(&mut self.aggregate_text);
        text.clear();
        let at_ns = rt.clock.elapsed_ns();
        crate::aggregate::write_snapshot(&mut text, scale, at_ns, DROPPED_CAP.load(Relaxed), push_named_fields);
        if !text.is_empty() && self.open(rt) {
            self.output.write_always(text.as_bytes());
        }
        text.clear();
        self.aggregate_text = text;
    }
}

impl Sink {
    /// Opens this process's trace file (see `output`) at the first write; false when it cannot be written.
    fn open(&mut self, rt: &Runtime) -> bool {
        if !self.opened {
            self.opened = true;
            let c = &rt.config;
            self.output.open(&c.out, header(rt), c.rotate_bytes, c.bytes_per_hour);
        }
        self.output.is_open()
    }

    /// Writes what the queue and the outboxes hold; how full they were.
    fn write_queued(&mut self, rt: &Runtime) -> Drained {
        self.holder.set_keep(rt.config.keep);
        let mut scale = None;
        let mut taken = 0u64;
        while let Some(rec) = self.receiver.as_ref().and_then(|r| r.try_recv().ok()) {
            dequeued();
            taken += 1;
            self.push_retirements();
            let scale = *scale.get_or_insert_with(|| current_scale(rt));
            self.write_invocation(rt, &rec, None, scale);
            give_back(rec);
            if self.pending.len() >= FLUSH_BYTES {
                self.flush_pending(rt);
            }
        }
        let queue_fill = taken * FILL_SCALE / rt.config.queue.max(1) as u64;
        let outbox_fill = self.write_outboxes(rt, &mut scale);
        self.push_retirements();
        self.flush_pending(rt);
        Drained { fill: queue_fill.max(outbox_fill) }
    }

    /// Writes the small invocations waiting in the threads' outboxes; how full the fullest was (see `Drained`).
    fn write_outboxes(&mut self, rt: &Runtime, scale: &mut Option<Scale>) -> u64 {
        let mut scratch = mem::take(&mut self.scratch);
        let mut fill = 0;
        let mut at = 0;
        while let Some(outbox) = outbox::nth(at) {
            at += 1;
            fill = fill.max(outbox.used() as u64 * FILL_SCALE / outbox.capacity() as u64);
            outbox.drain(&mut scratch, |thread, name, entry| {
                let scale = *scale.get_or_insert_with(|| current_scale(rt));
                self.push_retirements();
                match entry {
                    Entry::Nodes { nodes, retired, truncated } => {
                        let retired = Retired::Entries(retired);
                        let owner =
                            Owner { kind: OwnerKind::Thread, id: thread, truncated, name, retired, spawner: None };
                        self.write_nodes(rt, nodes, &owner, scale);
                    }
                    Entry::Recorder(rec) => {
                        self.write_invocation(rt, &rec, name, scale);
                        give_back(rec);
                    }
                }
                if self.pending.len() >= FLUSH_BYTES {
                    self.flush_pending(rt);
                }
            });
        }
        self.scratch = scratch;
        fill
    }

    /// Appends the `retire` records not yet written (between invocations: a retirement always precedes the records
    /// that count its function's retired calls).
    fn push_retirements(&mut self) {
        if !retire::has_pending() {
            return;
        }
        let mut taken = mem::take(&mut self.retirements);
        taken.clear();
        retire::take_pending(&mut taken);
        self.close_block();
        for r in &taken {
            if r.quiet && r.mean_ns != 0 && r.by != crate::retire::NO_BY {
                // Went quiet within an invocation under a caller that stays open: its calls and a sibling's.
                let fields = [u64::from(r.index), r.at_ns, r.calls, r.mean_ns, u64::from(r.by)];
                push_fields(&mut self.pending, b"quiet", &fields);
            } else if r.quiet && r.mean_ns != 0 {
                // Went quiet within an invocation: its calls and its callers' calls in it so far.
                push_fields(&mut self.pending, b"quiet", &[u64::from(r.index), r.at_ns, r.calls, r.mean_ns]);
            } else if r.quiet {
                push_fields(&mut self.pending, b"quiet", &[u64::from(r.index), r.at_ns]);
            } else {
                push_fields(&mut self.pending, b"retire", &[u64::from(r.index), r.at_ns, r.calls, r.mean_ns]);
            }
        }
        self.retirements = taken;
    }

    /// Writes the records gathered since the last flush with one `write` call: one call per invocation made the
    /// writer fall behind programs with tens of thousands of short invocations (a syscall costs more than
    /// formatting a small tree).
    fn flush_pending(&mut self, rt: &Runtime) {
        if self.pending_records == 0 && self.pending.is_empty() {
            return;
        }
        self.close_block();
        let pending = mem::take(&mut self.pending);
        let written_ok = self.open(rt) && self.write_trees(&pending);
        self.pending = pending;
        self.pending.clear();
        if written_ok {
            KEPT.fetch_add(self.pending_records, Relaxed);
            TRUNCATED.fetch_add(self.pending_truncated, Relaxed);
        } else {
            DROPPED.fetch_add(self.pending_records, Relaxed);
        }
        self.pending_records = 0;
        self.pending_truncated = 0;
    }

    /// Appends a `stats` line unless the last one says the same (a program that catches many panics would
    /// otherwise add one per panic). `periodic`: written while the program runs, marked so (a final 1) that a reader
    /// tells it from the line written at exit.
    fn write_stats(&mut self, rt: &Runtime, periodic: bool) {
        let span = root_span_ticks();
        let now = crate::stats();
        // The span in ns moves with each calibration of the clock even when no root started: compared in ticks.
        let same_span =
            |last: &Stats| Stats { first_root_ns: last.first_root_ns, last_root_ns: last.last_root_ns, ..now };
        let unchanged = |last: Stats| same_span(&last) == last && self.last_span == span;
        if self.last_periodic == periodic && self.last_stats.is_some_and(unchanged) {
            return;
        }
        let mut line = Vec::new();
        let fields = [now.seen, now.kept, now.sampled_out, now.dropped, now.truncated, now.dropped_limit];
        push_fields(&mut line, b"stats", &fields);
        line.pop();
        let causes = [now.dropped_queue_full, now.dropped_no_buffer, now.retired_functions];
        push_fields(&mut line, b"", &causes);
        line.pop();
        let chosen = [now.left_out_fast, now.left_out_unselected, now.first_root_ns, now.last_root_ns, now.dropped_cap];
        push_fields(&mut line, b"", &chosen);
        if periodic || now.sampled_for_cost > 0 {
            line.pop();
            push_fields(&mut line, b"", &[u64::from(periodic)]);
        }
        if now.sampled_for_cost > 0 {
            line.pop();
            push_fields(&mut line, b"", &[now.sampled_for_cost]);
            // Before the line, so a reader that keeps the last `stats` has the `sampled` records of the same moment.
            let mut sampled = Vec::new();
            let scale = Scale::current(rt.clock);
            for (root, [skipped, timed, ticks, tasks]) in crate::sampler::totals() {
                push_fields(&mut sampled, b"sampled", &[u64::from(root), skipped, timed, scale.span(ticks), tasks]);
            }
            sampled.extend_from_slice(&line);
            line = sampled;
        }
        if self.open(rt) && self.output.write_always(&line) {
            self.last_stats = Some(now);
            self.last_span = span;
            self.last_periodic = periodic;
        }
    }

    /// Writes one invocation handed over in its recorder.
    fn write_invocation(&mut self, rt: &Runtime, rec: &Recorder, thread_name: Option<&str>, scale: Scale) {
        if rec.nodes().is_empty() {
            return;
        }
        if rec.folded {
            count_written(rec.nodes().len() + rec.retired_pairs().len());
            self.write_folded(rt, rec, thread_name, scale);
            return;
        }
        self.write_nodes(rt, rec.nodes(), &Owner::of(rec, thread_name), scale);
    }

    /// Writes one per-call invocation: converts ticks, applies the minimum duration, writes the nodes in preorder.
    fn write_nodes(&mut self, rt: &Runtime, nodes: &[Node], owner: &Owner, scale: Scale) {
        let Some(root) = nodes.first() else { return };
        count_written(nodes.len() + owner.retired.len());
        self.watch.observe_nodes(nodes);
        // Most trees: nothing to choose, no spawned work, so a block, whose ticks are the reader's to convert.
        let chooses = rt.config.chooses() || keep::slower_than_ns() != 0;
        if !chooses && owner.spawner.is_none() && nodes.len() * block::NODE_BYTES < block::MAX_PAYLOAD / 2 {
            self.push_binary(rt, nodes, owner, scale);
            return;
        }
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        let Some(score) = self.choose(rt, root, root_end - root_start, owner) else { return };
        // Held records are kept as text (they are moved out of `pending` by themselves), and so are invocations
        // that adopted spawned work (their `p` records follow the node lines), unless no spawn has a part to write.
        let adopted = owner.spawner.and_then(|s| s.adoption.as_ref()).is_some_and(|a| !a.taken_if_nothing_to_write());
        if score.is_none() && !adopted && nodes.len() * block::NODE_BYTES < block::MAX_PAYLOAD / 2 {
            self.push_binary(rt, nodes, owner, scale);
            return;
        }
        let mark = self.pending.len();
        self.body.clear();
        self.track_positions(owner.spawner.map_or(0, |_| nodes.len()));
        let (written, filtered) = self.walk_nodes(rt, nodes, scale, root_end);
        if let Some(spawner) = owner.spawner {
            self.write_parts(rt, spawner, scale, written);
        }
        self.finish_record(owner, root_start, root_end - root_start, written, filtered);
        self.hold(score, mark, owner.truncated > 0);
    }

    /// The node lines of a per-call tree, in preorder.
    fn walk_nodes(&mut self, rt: &Runtime, nodes: &[Node], scale: Scale, root_end: u64) -> (u64, u64) {
        match self.walk_in_entry_order(rt, nodes, scale, root_end) {
            Some(counts) => counts,
            None => self.walk_by_links(rt, nodes, scale, root_end),
        }
    }

    /// Starts noting where each of `count` slots (or paths) goes; 0 notes nothing.
    fn track_positions(&mut self, count: usize) {
        self.positions.clear();
        self.positions.resize(count, NO_SLOT);
    }

    fn note_position(&mut self, id: usize, written: u64) {
        if let Some(p) = self.positions.get_mut(id) {
            *p = written as u32;
        }
    }

    /// The line (from its record's or part's first) that spawn key `key` of `rec` went to, just after `rec` was
    /// walked: its node's or path's, or its nearest written ancestor's.
    fn key_position(&self, rec: &Recorder, key: u32) -> u32 {
        let (mut id, by_path) = if key & PATH_KEY != 0 {
            ((key & !PATH_KEY) as usize, true)
        } else if rec.folded {
            (rec.slot_path().get(key as usize).map_or(0, |&p| p as usize), true)
        } else {
            (key as usize, false)
        };
        for _ in 0..self.positions.len() {
            match self.positions.get(id) {
                Some(&p) if p != NO_SLOT => return p,
                Some(_) => {}
                None => return 0,
            }
            let parent =
                if by_path { rec.paths()[id].parent as usize } else { (rec.nodes()[id].link & PARENT_MASK) as usize };
            if parent >= id {
                return 0;
            }
            id = parent;
        }
        0
    }

    /// Appends the `p` records of the work `spawner` adopted (and of what that work adopted in turn) after its
    /// record's `written` node lines; marks each adoption written, so a part still running is outlived.
    fn write_parts(&mut self, rt: &Runtime, spawner: &Recorder, scale: Scale, written: u64) {
        let mut queue = Vec::new();
        self.collect_parts(spawner, 0, &mut queue);
        let mut next = written;
        while let Some((part, parent, kind, id)) = queue.pop() {
            let Some(root) = part.nodes().first().copied() else { continue };
            let start = scale.ns(root.start);
            let end = if root.end == OPEN { start } else { scale.ns(root.end).max(start) };
            let mark = self.body.len();
            let (lines, filtered) = if part.folded {
                self.track_positions(part.paths().len());
                self.walk_paths(rt, &part, scale, start)
            } else {
                self.track_positions(part.nodes().len());
                self.walk_nodes(rt, part.nodes(), scale, end)
            };
            let mut header = Vec::new();
            push_part_line(&mut header, [parent, kind, id, start, end - start, lines, part.truncated(), filtered, 0]);
            self.body.splice(mark..mark, header);
            if part.adoption.is_some() {
                self.collect_parts(&part, next, &mut queue);
            }
            add_by_slot(&mut self.part_retired, Retired::BySlot(part.retired_calls()).slots());
            next += lines;
            give_back(part);
        }
        self.positions.clear();
    }

    /// Takes `rec`'s adopted work: finished parts go to `queue` (with their parent's line, from `base`); a part
    /// still running is written now as outlived, one that could not be recorded as such.
    #[allow(clippy::type_complexity)]
    fn collect_parts(&mut self, rec: &Recorder, base: u64, queue: &mut Vec<(Box<Recorder>, u64, u64, u64)>) {
        let Some(adoption) = &rec.adoption else { return };
        let (entries, unrecorded) = adoption.take_for_writing();
        for entry in entries {
            let parent = base + u64::from(self.key_position(rec, entry.key));
            let kind = u64::from(entry.kind == PartKind::Task);
            match entry.state {
                PartState::Done(part) => queue.push((part, parent, kind, entry.id)),
                PartState::Pending => push_part_line(&mut self.body, [parent, kind, 0, 0, 0, 0, 0, 0, PART_OUTLIVED]),
                PartState::Unrecorded => {
                    push_part_line(&mut self.body, [parent, kind, 0, 0, 0, 0, 0, 0, PART_UNRECORDED])
                }
                PartState::Inline | PartState::Abandoned => {}
            }
        }
        if unrecorded > 0 {
            push_fields(&mut self.body, b"pu", &[base, unrecorded]);
        }
    }

    /// Whether to write an invocation whose root took `duration_ns`: `None` when it is left out (counted), else
    /// the score it is held by until exit, if trees are held.
    fn choose(&mut self, rt: &Runtime, root: &Node, duration_ns: u64, owner: &Owner) -> Option<Option<u64>> {
        if !rt.config.chooses() && keep::slower_than_ns() == 0 {
            return Some(None);
        }
        let slower_than_ns = keep::slower_than_ns();
        if slower_than_ns > 0 && duration_ns <= slower_than_ns {
            LEFT_OUT_FAST.fetch_add(1, Relaxed);
            return None;
        }
        let end = if root.end == OPEN { root.start } else { root.end };
        let score = self.holder.score(root.start, end, owner.kind, owner.id);
        if score.is_some_and(|score| !self.holder.wants(score)) {
            LEFT_OUT_UNSELECTED.fetch_add(1, Relaxed);
            return None;
        }
        Some(score)
    }

    /// Moves the record just written (from `mark` in `pending`) to the held ones when it has a score; the one it
    /// displaces is counted as left out.
    fn hold(&mut self, score: Option<u64>, mark: usize, truncated: bool) {
        let Some(score) = score else { return };
        let text = self.pending.split_off(mark);
        // Text records only (never binary), so always UTF-8.
        let text = String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        self.pending_records -= 1;
        self.pending_truncated -= u64::from(truncated);
        let held = Held { score, seq: self.seq - 1, text, truncated, written: false };
        if let Some(displaced) = self.holder.hold(held) {
            LEFT_OUT_UNSELECTED.fetch_add(1, Relaxed);
            if displaced.written {
                // In the trace already: the checkpoint's `unheld` record takes it back out.
                KEPT.fetch_sub(1, Relaxed);
                TRUNCATED.fetch_sub(u64::from(displaced.truncated), Relaxed);
            }
        }
    }

    /// Writes the held records not in the trace yet (in the order they completed), after an `unheld` record naming
    /// the written ones displaced since: about every second, so a process killed by a signal keeps them, and at exit.
    /// Trees over the hourly budget stay held for the next try, and at exit are dropped and counted.
    fn write_held(&mut self, rt: &Runtime, at_exit: bool) {
        let (mut unheld, mut trees) = (String::new(), String::new());
        let done = self.holder.checkpoint(&mut unheld, &mut trees);
        if !self.open(rt) {
            if at_exit {
                DROPPED.fetch_add(done.records, Relaxed);
            }
            return;
        }
        if !unheld.is_empty() {
            self.output.write_always(unheld.as_bytes());
        }
        if done.records == 0 {
            return;
        }
        let admitted = self.output.admit_trees(trees.len());
        if admitted && self.output.write(trees.as_bytes()) {
            KEPT.fetch_add(done.records, Relaxed);
            TRUNCATED.fetch_add(done.truncated, Relaxed);
            self.holder.mark_written(&done.seqs);
        } else if at_exit {
            DROPPED.fetch_add(done.records, Relaxed);
            if !admitted {
                DROPPED_CAP.fetch_add(done.records, Relaxed);
            }
        }
    }

    /// Appends the node line of `node` (at `depth`, under a parent that ended at `parent_end`) unless it is shorter
    /// than the minimum duration; its end in ns, and whether it was written.
    fn push_node(
        &mut self,
        rt: &Runtime,
        node: &Node,
        is_root: bool,
        depth: u32,
        parent_end: u64,
        scale: Scale,
    ) -> (u64, bool) {
        let mut flags = node.link >> PARENT_BITS;
        let start = scale.ns(node.start);
        let end = if node.end == OPEN {
            flags |= FLAG_CANCELLED;
            parent_end
        } else {
            scale.ns(node.end)
        }
        .max(start);
        let duration = end - start;
        if !is_root && duration < rt.config.min_ns {
            return (end, false);
        }
        let fields =
            [u64::from(depth), u64::from(node.index), start, duration, u64::from(flags), node.allocs, node.alloc_bytes];
        self.push_line(b"n", &fields);
        (end, true)
    }

    /// Sync invocations record their nodes in preorder: written in one pass, with the open ancestors on a stack.
    /// `None` (and nothing written) when a node's parent is not an open ancestor, as when async children interleave.
    fn walk_in_entry_order(&mut self, rt: &Runtime, nodes: &[Node], scale: Scale, root_end: u64) -> Option<(u64, u64)> {
        self.open.clear();
        let (mut written, mut filtered) = (0u64, 0u64);
        for (slot, node) in nodes.iter().enumerate() {
            let mut parent_end = root_end;
            if slot > 0 {
                let parent = node.link & PARENT_MASK;
                while self.open.last().is_some_and(|&(open, ..)| open != parent) {
                    self.open.pop();
                }
                let Some(&(_, end, left_out)) = self.open.last() else {
                    self.body.clear();
                    return None;
                };
                if left_out {
                    filtered += 1;
                    self.open.push((slot as u32, end, true));
                    continue;
                }
                parent_end = end;
            }
            let depth = self.open.len() as u32;
            let (end, kept) = self.push_node(rt, node, slot == 0, depth, parent_end, scale);
            if kept {
                self.note_position(slot, written);
                written += 1;
            } else {
                filtered += 1;
            }
            self.open.push((slot as u32, end, !kept));
        }
        Some((written, filtered))
    }

    /// Rebuilds preorder from parent links (children in entry order) and writes the nodes.
    fn walk_by_links(&mut self, rt: &Runtime, nodes: &[Node], scale: Scale, root_end: u64) -> (u64, u64) {
        self.link_children(nodes.len(), |slot| (nodes[slot].link & PARENT_MASK) as usize);
        self.walk.clear();
        self.walk.push((0, 0, root_end));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((slot, depth, parent_end)) = self.walk.pop() {
            let (end, kept) = self.push_node(rt, &nodes[slot as usize], slot == 0, depth, parent_end, scale);
            if !kept {
                filtered += self.subtree_size(slot);
                continue;
            }
            self.note_position(slot as usize, written);
            written += 1;
            self.walk_children(slot, depth, end);
        }
        (written, filtered)
    }

    /// Writes a folded invocation: one `a` line per call path, in preorder, children in order of first entry.
    fn write_folded(&mut self, rt: &Runtime, rec: &Recorder, thread_name: Option<&str>, scale: Scale) {
        let count = rec.paths().len();
        if count == 0 {
            return;
        }
        let root = rec.nodes()[0];
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        let owner = Owner::of(rec, thread_name);
        let Some(score) = self.choose(rt, &root, root_end - root_start, &owner) else { return };
        let mark = self.pending.len();
        self.body.clear();
        self.track_positions(owner.spawner.map_or(0, |_| count));
        let (written, filtered) = self.walk_paths(rt, rec, scale, root_start);
        if let Some(spawner) = owner.spawner {
            self.write_parts(rt, spawner, scale, written);
        }
        self.finish_record(&owner, root_start, root_end - root_start, written, filtered);
        self.hold(score, mark, owner.truncated > 0);
    }

    /// The `a` lines of a folded tree, in preorder.
    fn walk_paths(&mut self, rt: &Runtime, rec: &Recorder, scale: Scale, root_start: u64) -> (u64, u64) {
        let count = rec.paths().len();
        // The calls entered before the fold add their times and flags to their paths now; those that never ended
        // (cancelled futures, calls open at the root's end) are marked cancelled.
        let mut paths = mem::take(&mut self.paths);
        paths.clear();
        paths.extend_from_slice(rec.paths());
        for (slot, node) in rec.nodes().iter().enumerate() {
            let Some(p) = rec.slot_path().get(slot).and_then(|&path| paths.get_mut(path as usize)) else { continue };
            if node.end == OPEN {
                if slot > 0 {
                    p.flags |= FLAG_CANCELLED;
                }
            } else {
                p.add_exact(node.end.saturating_sub(node.start));
                let flags = node.link >> PARENT_BITS;
                p.flags |= flags & !FLAG_ERR;
                p.errs = p.errs.saturating_add(u32::from(flags & FLAG_ERR != 0));
            }
            p.allocs += node.allocs;
            p.alloc_bytes += node.alloc_bytes;
        }
        self.link_children(count, |id| paths[id].parent as usize);
        self.walk.clear();
        self.walk.push((0, 0, 0));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((id, depth, _)) = self.walk.pop() {
            let p = paths[id as usize];
            let timed_ns = scale.span(p.ticks);
            let exact_ns = scale.span(p.exact_ticks);
            let estimated = unbiased_total(p.calls, p.timed, timed_ns, p.exact_calls, exact_ns);
            if id != 0 && estimated < rt.config.min_ns {
                filtered += self.subtree_size(id);
                continue;
            }
            written += 1;
            let (min, max) = if p.timed == 0 { (0, 0) } else { (scale.span(p.min), scale.span(p.max)) };
            let first_start = if p.first_start == UNTIMED { root_start } else { scale.ns(p.first_start) };
            let flags = u64::from(p.flags | if p.errs > 0 { FLAG_ERR } else { 0 });
            let (calls, timed, exact_calls) = (p.calls, p.timed, p.exact_calls);
            let fields = [
                depth.into(),
                p.index.into(),
                calls,
                timed,
                first_start,
                timed_ns,
                min,
                max,
                flags,
                exact_calls,
                exact_ns,
                p.allocs,
                p.alloc_bytes,
                p.errs.into(),
            ];
            self.note_position(id as usize, written - 1);
            // The `Err` count is appended only when there is one, so traces of programs without any stay as before.
            self.push_line(b"a", if p.errs > 0 { &fields } else { &fields[..fields.len() - 1] });
            self.walk_children(id, depth, 0);
        }
        self.paths = paths;
        (written, filtered)
    }

    /// Builds `first_child`/`next_sibling` for `count` nodes from each one's parent (children in index order);
    /// anything without a valid earlier parent hangs under the root.
    fn link_children(&mut self, count: usize, parent_of: impl Fn(usize) -> usize) {
        self.first_child.clear();
        self.first_child.resize(count, NO_SLOT);
        self.next_sibling.clear();
        self.next_sibling.resize(count, NO_SLOT);
        for id in (1..count).rev() {
            let parent = parent_of(id);
            let parent = if parent < id { parent } else { 0 };
            self.next_sibling[id] = self.first_child[parent];
            self.first_child[parent] = id as u32;
        }
    }

    /// Queues the children of `id` for the preorder walk, first child on top.
    fn walk_children(&mut self, id: u32, depth: u32, end: u64) {
        self.children.clear();
        let mut child = self.first_child[id as usize];
        while child != NO_SLOT {
            self.children.push(child);
            child = self.next_sibling[child as usize];
        }
        for &child in self.children.iter().rev() {
            self.walk.push((child, depth + 1, end));
        }
    }

    /// Appends a node line: its kind, then the fields. By hand: `writeln!` through core::fmt took about half of the
    /// writer's time on large trees.
    fn push_line<const K: usize>(&mut self, kind: &[u8; K], fields: &[u64]) {
        push_fields(&mut self.body, kind, fields);
    }

    /// Wraps the node lines in `body` into an `inv` ... `end` record.
    fn finish_record(&mut self, owner: &Owner, start: u64, duration: u64, written: u64, filtered: u64) {
        self.close_block();
        let seq = self.seq;
        let out = &mut self.pending;
        let fields = [owner.id, start, duration, written, owner.truncated, filtered];
        push_fields(out, b"inv", &[seq]);
        out.pop();
        match owner.kind {
            OwnerKind::Thread => push_fields(out, b" thread", &fields),
            OwnerKind::Task => push_fields(out, b" task", &fields),
        }
        out.pop();
        out.push(b' ');
        out.extend_from_slice(owner.name.unwrap_or("").as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.body);
        if self.part_retired.is_empty() {
            for (index, calls) in owner.retired.pairs() {
                push_fields(out, b"r", &[u64::from(index), calls]);
            }
        } else {
            // One `r` line per function, in order of retirement: the invocation's own thread's calls and its parts'.
            let mut merged = mem::take(&mut self.part_retired);
            add_by_slot(&mut merged, owner.retired.slots());
            for (index, calls) in Retired::BySlot(&merged).pairs() {
                push_fields(out, b"r", &[u64::from(index), calls]);
            }
            merged.clear();
            self.part_retired = merged;
        }
        push_fields(out, b"end", &[seq]);
        self.seq += 1;
        self.pending_records += 1;
        if owner.truncated > 0 {
            self.pending_truncated += 1;
        }
    }

    /// Appends a per-call invocation as a binary record (see `block`), in the block open at the end of `pending`
    /// or a new one.
    fn push_binary(&mut self, rt: &Runtime, nodes: &[Node], owner: &Owner, scale: Scale) {
        match self.block {
            Some((_, parts, _)) if parts == scale.parts() => {}
            _ => {
                self.close_block();
                let at = block::open(&mut self.pending, scale, rt.config.min_ns);
                self.block = Some((at, scale.parts(), 0));
            }
        }
        let task = matches!(owner.kind, OwnerKind::Task);
        let name = owner.name.unwrap_or("");
        let head = block::RecordHead { seq: self.seq, task, id: owner.id, truncated: owner.truncated, name };
        let mut retired = mem::take(&mut self.retired_pairs);
        retired.clear();
        // Most outbox records count no retired call: no walk of the filter.
        if !matches!(owner.retired, Retired::Entries([])) {
            retired.extend(owner.retired.pairs());
        }
        block::push_record(&mut self.pending, &head, nodes, &retired, &mut self.allocs_hint);
        self.retired_pairs = retired;
        if let Some((_, _, records)) = self.block.as_mut() {
            *records += 1;
        }
        self.seq += 1;
        self.pending_records += 1;
        self.pending_truncated += u64::from(owner.truncated > 0);
    }

    /// Ends the binary block open at the end of `pending`, if any (before text is appended, and before a write).
    fn close_block(&mut self) {
        if let Some((at, _, records)) = self.block.take() {
            block::close(&mut self.pending, at, records);
        }
    }

    fn subtree_size(&self, slot: u32) -> u64 {
        let mut size = 0;
        let mut pending = vec![slot];
        while let Some(s) = pending.pop() {
            size += 1;
            let mut child = self.first_child[s as usize];
            while child != NO_SLOT {
                pending.push(child);
                child = self.next_sibling[child as usize];
            }
        }
        size
    }
}

/// `p` flags: the part was still running when its invocation was written (no node lines follow).
const PART_OUTLIVED: u64 = 1;
/// `p` flags: the work ran unrecorded (no free recorder when it started).
const PART_UNRECORDED: u64 = 2;

/// A `p` line: `[parent line, 0 thread | 1 task, id, start, duration, node lines, truncated, filtered, flags]`.
fn push_part_line(out: &mut Vec<u8>, f: [u64; 9]) {
    push_fields(out, b"p", &[f[0]]);
    out.pop();
    let rest = [f[2], f[3], f[4], f[5], f[6], f[7], f[8]];
    if f[1] == 1 {
        push_fields(out, b" task", &rest);
    } else {
        push_fields(out, b" thread", &rest);
    }
}

/// The estimated total time of a folded call path (trace-format.md): its exact part, plus its later calls at the
/// mean of the calls timed at random gaps.
fn unbiased_total(calls: u64, timed: u64, timed_ns: u64, exact_calls: u64, exact_ns: u64) -> u64 {
    if timed > exact_calls {
        let sampled_ns = u128::from(timed_ns.saturating_sub(exact_ns));
        let later = u128::from(calls.saturating_sub(exact_calls));
        exact_ns + (later * sampled_ns / u128::from(timed - exact_calls)) as u64
    } else if exact_calls > 0 {
        (u128::from(exact_ns) * u128::from(calls) / u128::from(exact_calls)) as u64
    } else {
        0
    }
}

/// The header lines every trace file (and rotated segment) starts with.
fn header(rt: &Runtime) -> String {
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let c = &rt.config;
    let r = retire::settings();
    format!(
        "calltime-trace {TRACE_VERSION}\nprocess {} {} {}\nplan {} {}\nsettings node_cap={} \
         fold_after={} time_sample={} min_ns={} sample={} max_invocations={} max_depth={} \
         retire={} retire_factor={} retire_min_calls={} aggregate={} aggregate_ms={} rotate_bytes={} \
         max_bytes_per_hour={} start_off={} slower_than_ns={} keep_slowest={} keep_sample={} allocs={} quiet_after={} \
         cost_budget_pct={}\n{}{}",
        std::process::id(),
        rt.clock.epoch_unix_ns(),
        exe.replace(['\n', '\r'], " "),
        rt.plan.id,
        rt.plan.table.replace(['\n', '\r'], " "),
        c.node_cap,
        c.fold_after,
        c.time_sample,
        c.min_ns,
        c.sample,
        c.max_invocations,
        c.max_depth,
        u8::from(r.enabled),
        r.factor,
        r.min_calls,
        u8::from(c.aggregate),
        c.aggregate_ms,
        c.rotate_bytes,
        c.bytes_per_hour,
        u8::from(c.start_off),
        c.slower_than_ns,
        c.keep.counts().0,
        c.keep.counts().1,
        u8::from(crate::alloc::counting()),
        r.quiet_after,
        crate::sampler::budget_pct(),
        calibration_line(),
        clock_line(rt),
    )
}

/// The header's `clock` line (trace-format.md): the tick source and, for the TSC, the span its rate was measured
/// over when the file was created and a bound of that rate's error; later records are converted with rates measured
/// over longer spans.
fn clock_line(rt: &Runtime) -> String {
    if !rt.clock.is_tsc() {
        return "clock instant\n".to_owned();
    }
    let (span_ns, error_ppm) = Scale::current(rt.clock).precision();
    format!("clock tsc span_ns={span_ns} error_ppm={error_ppm}\n")
}

/// The header's `calibration` line (trace-format.md), empty when the probes were not calibrated.
fn calibration_line() -> String {
    let Some(c) = crate::calibrate::get() else { return String::new() };
    format!(
        "calibration recorded_inner={} recorded_outer={} folded_outer={} timed_inner={} timed_outer={} \
         retired_outer={} quiet_outer={} quiet_inline={}\n",
        c.recorded_inner_ps,
        c.recorded_outer_ps,
        c.folded_outer_ps,
        c.timed_inner_ps,
        c.timed_outer_ps,
        c.retired_outer_ps,
        c.quiet_outer_ps,
        c.quiet_inline_ps
    )
}

pub(crate) fn install_flush_hooks() {
    // Replacing the hook while panicking would itself panic (and abort).
    if !std::thread::panicking() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            drain(true);
            previous(info);
        }));
    }
    #[cfg(any(unix, windows))]
    {
        extern "C" {
            fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
        }
        extern "C" fn flush_at_exit() {
            // Unwinding out of an extern "C" function aborts; nothing here should panic, but be sure.
            let _ = std::panic::catch_unwind(|| {
                drain_at_exit();
                at_exit();
            });
        }
        // SAFETY: atexit is the C library's; the callback is a plain extern "C" fn with no captured state.
        unsafe {
            atexit(flush_at_exit);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn push_decimal_writes_every_width() {
        let mut values = vec![0, 7, 42, 65_536, 1_234_567_890, u64::MAX, u64::MAX - 1];
        // Both sides of every power of ten and of every power of two (where the digit count is guessed from).
        for shift in 0..64 {
            values.extend([(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1]);
        }
        for power in 1..20 {
            let p = 10u64.pow(power);
            values.extend([p - 1, p, p + 1]);
        }
        for value in values {
            let mut out = b"x".to_vec();
            super::push_decimal(&mut out, value);
            assert_eq!(out, format!("x{value}").into_bytes());
        }
    }

    #[test]
    fn push_fields_writes_a_line() {
        let mut out = b"head\n".to_vec();
        super::push_fields(&mut out, b"n", &[0, 12, u64::MAX, 10_000, 9]);
        super::push_fields(&mut out, b"end", &[3]);
        assert_eq!(out, format!("head\nn 0 12 {} 10000 9\nend 3\n", u64::MAX).into_bytes());
    }
}

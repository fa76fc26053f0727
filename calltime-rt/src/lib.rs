//! Runtime of [cargo-calltime](https://crates.io/crates/cargo-calltime): records one call tree per invocation of a
//! root function, at the cost of two clock reads per instrumented call.
//!
//! You normally never write code against this crate: `cargo calltime` rewrites a shadow copy of your workspace so that
//! every picked function starts with a probe (`::calltime_rt::__private::enter(7)`, an index assigned by the tool's
//! plan), adds this crate as a path dependency, builds and runs the program, then reads the trace file this crate
//! writes. The file format is documented in `docs/trace-format.md` of the cargo-calltime repository.
//!
//! # What is recorded
//! An *invocation* begins when a root function is entered on a thread (or an async task) that has no invocation in
//! progress, and ends when that root returns. Every instrumented call made under it becomes a node of its tree
//! (function index, start, duration, panicked/cancelled flags). When the root returns, the tree is handed to a writer
//! thread that appends it to the trace file and flushes it. Probes entered outside any invocation record nothing and
//! cost a thread-local load and a branch.
//!
//! A big invocation *folds*: past `CALLTIME_FOLD_AFTER` calls, its nodes are merged into one node per call path
//! (every call of a function under the same chain of ancestors) and each later call adds one to its path's count.
//! Counts stay exact; a path's first 16 calls are timed, then 1 in `CALLTIME_TIME_SAMPLE` at random gaps, so the
//! common call costs a counter and a frame instead of two clock reads, and a tree of millions of calls stays
//! complete in a bounded buffer.
//!
//! Async functions are wrapped in [`Instrumented`]: it enters on every poll and leaves when the poll returns, so the
//! node of an async function spans its first poll to its completion, its children are what it called during its
//! polls, other tasks polled on the same thread never become its children, and a task moving between threads keeps
//! one tree (a root task records into its own context, which travels with the future).
//!
//! # Public API
//! - [`flush`]: write every completed invocation still queued, then a `stats` line, before returning.
//! - [`stats`]: this process's counters ([`Stats`]).
//! - [`trace_path`]: where this process writes its trace (known once a root was entered).
//! - [`Guard`] and [`Instrumented`]: what the probes return. They are created only by the hidden `__private`
//!   functions that the rewritten code calls.
//!
//! # Settings (environment variables, read once, at the first root entry)
//! | variable | default | meaning |
//! |---|---|---|
//! | `CALLTIME_OUT` | `calltime-<pid>.trace` in the current directory | trace file path (created or truncated) |
//! | `CALLTIME_NODE_CAP` | 100000 | nodes stored per invocation (calls, or call paths once folded); later calls are counted in `truncated_calls` |
//! | `CALLTIME_FOLD_AFTER` | 4096 | calls recorded one node each before an invocation folds into call paths; 0 never folds |
//! | `CALLTIME_TIME_SAMPLE` | 64 | in a folded invocation, time 1 in N calls of a path past its first 16; 1 times every call |
//! | `CALLTIME_MIN_NS` | 0 | nodes shorter than this are left out with their subtrees and counted in `filtered` |
//! | `CALLTIME_SAMPLE` | 1 | record 1 in N root invocations (the others are counted as `sampled_out`) |
//! | `CALLTIME_MAX_INVOCATIONS` | 100000 | invocations recorded at most; later ones are counted as `dropped` |
//! | `CALLTIME_QUEUE` | 1024 | length of the bounded queue to the writer; when full, invocations are dropped and counted |
//! | `CALLTIME_CLOCK` | `auto` | `instant` forces `std::time::Instant` instead of the invariant TSC |
//!
//! # Costs and bounds
//! Per call: one thread-local access, one clock read on entry and one on exit, a write into a preallocated
//! per-thread buffer; in a folded invocation, a lookup in the parent path's child cache, a counter and a frame, and
//! the clock reads only for the sampled calls. No allocation, lock, atomic read-modify-write, hashing or formatting per call; ticks are
//! converted to nanoseconds and trees are formatted on the writer thread. Each thread allocates one node buffer
//! (24 bytes a node; 256 nodes, doubled on a cold path up to the fold or `CALLTIME_NODE_CAP` when an invocation needs more, and
//! kept at that size when recycled) at its first root entry; at most `CALLTIME_QUEUE + 65` more buffers
//! exist (queued, being written, or owned by root tasks in progress). When none is free the invocation is dropped
//! and counted, never waited for.
//!
//! # Durability
//! Finished trees are written by the writer thread within about 20 ms of their root's return, many per `write`
//! call. A chained panic hook writes
//! the queued trees before the previous hook runs (so `panic = "abort"` keeps them), and an `atexit` handler writes
//! them and a final `stats` line (so `std::process::exit` and returning from `main` keep them).
//!
//! # Building
//! This file is the whole library: no dependencies, no build script; Rust 1.80 or newer, editions 2015 to 2021
//! (edition 2024 would need `unsafe extern`, which needs Rust 1.82). `cargo calltime` embeds it and builds it in the
//! shadow workspace. The TSC clock is used on x86_64 only; other targets time with `Instant`.
//!
//! # Limits
//! - A sync function's node is marked panicked when its guard drops while the thread is panicking, which includes
//!   a probed function that returns normally from inside a destructor run during unwinding.
//! - Work handed to other threads (`std::thread::spawn`, rayon, a task spawned on an executor) is not a child of the
//!   code that spawned it; a spawned async root starts its own invocation.
//! - A panic hook installed by the program after the first root entry replaces ours.
#![deny(missing_docs)]

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::fs::File;
use std::future::Future;
use std::io::Write as _;
use std::mem::{self, ManuallyDrop};
use std::path::PathBuf;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The trace format version this runtime writes (`calltime-trace 2`).
const TRACE_VERSION: u32 = 2;
/// Frames deeper than this are counted as truncated calls, not stored.
const MAX_DEPTH: usize = 4096;
/// Node slots a new recorder starts with (6 KiB); it grows by doubling up to the fold or the node cap. Small, because
/// programs with many short invocations take a fresh recorder for each one queued to the writer.
const INITIAL_NODES: usize = 256;
/// Slot of a guard that records nothing.
const NO_SLOT: u32 = u32::MAX;
/// `Node::end` of a node that has not been left yet.
const OPEN: u64 = u64::MAX;
/// `Node::link` holds the parent slot in its low 30 bits and the flags above them.
const PARENT_BITS: u32 = 30;
const PARENT_MASK: u32 = (1 << PARENT_BITS) - 1;
const NO_PARENT: u32 = PARENT_MASK;
/// Flag bit 0: the call was left by unwinding.
const FLAG_PANICKED: u32 = 1;
/// Flag bit 1: the call never finished (an async function dropped before completion, or still running when its
/// invocation ended).
const FLAG_CANCELLED: u32 = 2;
/// Recorders beyond one per thread and the queue's length: root tasks in progress and the one being written.
const SPARE_RECORDERS: usize = 65;
/// Frame keys of a folded invocation have this bit set (node slots never do): `FOLD_KEY | depth`.
const FOLD_KEY: u32 = 1 << 31;
/// A frame of a folded invocation that belongs to no call path (past the path cap): its calls are only counted.
const NO_PATH: u32 = u32::MAX;
/// `frame_start` of a frame whose call is not timed.
const UNTIMED: u64 = u64::MAX;
/// Entries of a call path's child cache (a power of two).
const HOT_CHILDREN: usize = 8;
/// After an invocation folds, the first calls of each call path are timed; later ones 1 in `time_sample`.
const ALWAYS_TIMED: u64 = 16;

/// `CURRENT` while a sampled-out or dropped invocation runs: probes record nothing and roots do not start anew.
const SKIP: *mut Recorder = 1 as *mut Recorder;

thread_local! {
    /// The recording context of the invocation in progress on this thread: null outside any invocation, `SKIP` in
    /// one that is not recorded, else the thread's recorder or (during a poll) a root task's recorder.
    static CURRENT: Cell<*mut Recorder> = const { Cell::new(ptr::null_mut()) };
    /// This thread's own recorder and identity; touched only when an invocation starts or ends.
    static THREAD: RefCell<ThreadSlot> = const { RefCell::new(ThreadSlot { rec: ptr::null_mut(), id: 0, name: None }) };
    /// Set while this thread holds the sink, so a panic inside it never waits for itself.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

// ---------------------------------------------------------------------------------------------------------------
// Clock

static USE_TSC: AtomicBool = AtomicBool::new(false);
static CLOCK: OnceLock<ClockBase> = OnceLock::new();

/// The trace epoch: a (ticks, Instant, wall clock) triple taken together at the first use.
struct ClockBase {
    tsc: bool,
    ticks0: u64,
    instant0: Instant,
    epoch_unix_ns: u64,
}

/// Ticks of the runtime clock: TSC cycles where the TSC is invariant, else nanoseconds since the trace epoch.
#[inline(always)]
fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Relaxed) {
            // SAFETY: rdtsc has no preconditions on x86_64.
            #[allow(unused_unsafe)]
            return unsafe { std::arch::x86_64::_rdtsc() };
        }
    }
    instant_ticks()
}

#[inline(never)]
fn instant_ticks() -> u64 {
    match CLOCK.get() {
        Some(base) => base.instant0.elapsed().as_nanos() as u64,
        None => 0,
    }
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: cpuid exists on every x86_64 CPU; leaf 0x80000000 reports the highest extended leaf.
    #[allow(unused_unsafe)]
    unsafe {
        let max_extended = __cpuid(0x8000_0000).eax;
        max_extended >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

fn clock() -> &'static ClockBase {
    CLOCK.get_or_init(|| {
        let forced_instant = std::env::var("CALLTIME_CLOCK").map(|v| v.trim() == "instant").unwrap_or(false);
        let tsc = !forced_instant && invariant_tsc();
        let instant0 = Instant::now();
        let epoch_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let ticks0 = if tsc { tsc_now() } else { 0 };
        USE_TSC.store(tsc, Relaxed);
        ClockBase { tsc, ticks0, instant0, epoch_unix_ns }
    })
}

fn tsc_now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Ticks to nanoseconds since the trace epoch, as a 32.32 fixed-point factor.
#[derive(Clone, Copy)]
struct Scale {
    ticks0: u64,
    ns_per_tick_q32: u128,
}

impl Scale {
    /// Calibrates the TSC against `Instant` over everything since the epoch (at least 10 ms: the caller, always off
    /// the hot path, waits for the rest), so the factor gets more precise as the program runs.
    fn current(base: &ClockBase) -> Scale {
        if !base.tsc {
            return Scale { ticks0: 0, ns_per_tick_q32: 1 << 32 };
        }
        let min = Duration::from_millis(10);
        let elapsed = base.instant0.elapsed();
        if elapsed < min {
            std::thread::sleep(min - elapsed);
        }
        let before = tsc_now();
        let instant = Instant::now();
        let after = tsc_now();
        let ticks = (before / 2 + after / 2).saturating_sub(base.ticks0).max(1);
        let ns = instant.duration_since(base.instant0).as_nanos();
        Scale { ticks0: base.ticks0, ns_per_tick_q32: (ns << 32) / ticks as u128 }
    }

    fn ns(&self, ticks: u64) -> u64 {
        self.span(ticks.saturating_sub(self.ticks0))
    }

    /// A duration in ticks, in nanoseconds.
    fn span(&self, ticks: u64) -> u64 {
        ((ticks as u128 * self.ns_per_tick_q32) >> 32) as u64
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Recording contexts

/// One call: written at entry, its `end` patched at exit. Preorder is rebuilt from `link` by the writer, because
/// interleaved async children are not contiguous in entry order.
#[derive(Clone, Copy)]
struct Node {
    start: u64,
    end: u64,
    index: u32,
    link: u32,
}

/// A per-depth array of `MAX_DEPTH` slots, left uninitialised: a slot is always set when its frame is entered and
/// read only while the frame is on the stack, so only the depths a program reaches are ever touched. (Zero-filling
/// the 16-64 KB of each recorder's arrays up front showed up as page faults in programs with many short
/// invocations, which take a fresh recorder each.)
struct DepthArray<T: Copy> {
    /// Length 0, capacity `MAX_DEPTH` (or 0 before `new`): the slots live in the spare capacity.
    buf: Vec<T>,
}

impl<T: Copy> DepthArray<T> {
    fn new() -> DepthArray<T> {
        DepthArray { buf: Vec::with_capacity(MAX_DEPTH) }
    }

    fn unallocated() -> DepthArray<T> {
        DepthArray { buf: Vec::new() }
    }

    fn is_allocated(&self) -> bool {
        self.buf.capacity() >= MAX_DEPTH
    }

    /// # Safety
    /// `i < MAX_DEPTH` and the array is allocated.
    #[inline(always)]
    unsafe fn set(&mut self, i: usize, value: T) {
        // SAFETY: the allocation holds MAX_DEPTH slots (caller's contract).
        unsafe { self.buf.as_mut_ptr().add(i).write(value) }
    }

    /// # Safety
    /// `i < MAX_DEPTH` and slot `i` was set.
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> T {
        // SAFETY: in bounds and initialised (caller's contract).
        unsafe { self.buf.as_ptr().add(i).read() }
    }

    /// # Safety
    /// Slots `0..n` were set.
    unsafe fn prefix(&self, n: usize) -> &[T] {
        // SAFETY: initialised and in bounds (caller's contract).
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), n) }
    }
}

/// One call path of a folded invocation: every call of `index` under the same chain of ancestors.
#[derive(Clone, Copy)]
struct PathNode {
    calls: u64,
    /// Calls left until the next timed one (1: the next call is timed).
    countdown: u64,
    timed: u64,
    ticks: u64,
    min: u64,
    max: u64,
    /// Start of the path's first call (`UNTIMED` until known).
    first_start: u64,
    index: u32,
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    /// Child paths by the low bits of their function index: a loop body calls a few children over and over, and
    /// this finds each without walking the sibling list.
    hot: [u32; HOT_CHILDREN],
    flags: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnerKind {
    Thread,
    Task,
}

/// A recording context: the node buffer and frame stack of one invocation. Allocated once and recycled.
struct Recorder {
    /// Starts at `INITIAL_NODES` (or `cap` if smaller) and doubles on a cold path up to `cap`; a recycled recorder
    /// keeps what it grew to, so steady state allocates nothing while idle recorders in the pool stay small.
    nodes: Vec<Node>,
    /// Slots of the frames currently entered; `MAX_DEPTH` long.
    stack: DepthArray<u32>,
    depth: usize,
    /// The node cap (`CALLTIME_NODE_CAP`); also caps the call paths of a folded invocation.
    cap: usize,
    /// `min(cap, nodes.capacity(), fold_at)`: the one bound the hot path checks; past it, a cold path grows the
    /// buffer, folds the invocation or counts the call as truncated.
    limit: usize,
    /// Calls recorded one node each before the invocation folds (`CALLTIME_FOLD_AFTER`, capped by `cap`); 0 once
    /// folded, so the hot path tests one bound in both modes.
    fold_at: usize,
    fold_after: usize,
    folded: bool,
    /// Call paths of the folded invocation, in order of first entry (parents before children).
    paths: Vec<PathNode>,
    /// The call path each node of `nodes` was folded into.
    slot_path: Vec<u32>,
    /// Per frame of a folded invocation: its call path and its start (`UNTIMED` when the call is not timed).
    /// Allocated at the first fold of this recorder.
    frame_path: DepthArray<u32>,
    frame_start: DepthArray<u64>,
    /// Mean gap between timed calls of a busy path (`CALLTIME_TIME_SAMPLE`).
    time_sample: u64,
    /// xorshift state for the gaps, so periodic call patterns do not bias the sample.
    rng: u64,
    truncated: u64,
    /// Process-unique id of the invocation being recorded, so a future can tell whether its context is current.
    invocation: u64,
    kind: OwnerKind,
    owner: u64,
    name: Option<Arc<str>>,
}

impl Recorder {
    fn boxed(config: &Config) -> Box<Recorder> {
        let cap = config.node_cap;
        Box::new(Recorder {
            nodes: Vec::with_capacity(cap.min(INITIAL_NODES)),
            stack: DepthArray::new(),
            depth: 0,
            cap,
            limit: cap.min(INITIAL_NODES),
            fold_after: if config.fold_after == 0 { usize::MAX } else { config.fold_after.min(cap) },
            fold_at: usize::MAX,
            folded: false,
            paths: Vec::new(),
            slot_path: Vec::new(),
            frame_path: DepthArray::unallocated(),
            frame_start: DepthArray::unallocated(),
            time_sample: config.time_sample,
            rng: 0x9E37_79B9_7F4A_7C15,
            truncated: 0,
            invocation: 0,
            kind: OwnerKind::Thread,
            owner: 0,
            name: None,
        })
    }

    fn begin(&mut self, kind: OwnerKind, owner: u64, name: Option<Arc<str>>) {
        static INVOCATIONS: AtomicU64 = AtomicU64::new(1);
        self.nodes.clear();
        self.depth = 0;
        self.fold_at = self.fold_after;
        self.limit = self.cap.min(self.nodes.capacity()).min(self.fold_at);
        self.folded = false;
        self.paths.clear();
        self.slot_path.clear();
        self.truncated = 0;
        self.invocation = INVOCATIONS.fetch_add(1, Relaxed);
        self.rng ^= self.invocation.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
        self.kind = kind;
        self.owner = owner;
        self.name = name;
    }

    /// Stores a node and enters its frame; `NO_SLOT` (and the call counted as truncated) past the caps.
    #[inline(always)]
    fn push(&mut self, index: u32, start: u64) -> u32 {
        let slot = self.nodes.len();
        let depth = self.depth;
        if depth >= MAX_DEPTH || (slot >= self.limit && !self.grow()) {
            self.truncated += 1;
            return NO_SLOT;
        }
        // SAFETY: checked just above.
        unsafe { self.push_node(slot, depth, index, start) };
        slot as u32
    }

    /// Stores node `slot` and enters its frame at `depth`.
    ///
    /// # Safety
    /// `slot == nodes.len() < limit <= nodes.capacity()` and `depth == self.depth < MAX_DEPTH`.
    #[inline(always)]
    unsafe fn push_node(&mut self, slot: usize, depth: usize, index: u32, start: u64) {
        // SAFETY: the caller's contract; frame depth - 1 was set when it was entered.
        unsafe {
            let parent = if depth == 0 { NO_PARENT } else { self.stack.get(depth - 1) };
            self.nodes.as_mut_ptr().add(slot).write(Node { start, end: OPEN, index, link: parent });
            self.nodes.set_len(slot + 1);
            self.stack.set(depth, slot as u32);
        }
        self.depth = depth + 1;
    }

    /// Doubles the node buffer, up to the cap; false at the cap. Cold: it runs a few times per recorder, ever.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> bool {
        let bound = self.cap.min(self.fold_at);
        if self.limit >= bound {
            return false;
        }
        let wanted = (self.nodes.capacity() * 2).max(INITIAL_NODES).min(bound);
        self.nodes.reserve_exact(wanted.saturating_sub(self.nodes.len()));
        self.limit = self.cap.min(self.nodes.capacity()).min(self.fold_at);
        self.nodes.len() < self.limit
    }

    /// Re-enters the frame of an existing node (an async function polled again).
    fn push_frame(&mut self, slot: u32) -> bool {
        if self.depth >= MAX_DEPTH {
            return false;
        }
        if self.folded {
            let path = self.slot_path.get(slot as usize).copied().unwrap_or(NO_PATH);
            self.push_keyed_frame(slot, path);
            return true;
        }
        // SAFETY: depth < MAX_DEPTH (checked above).
        unsafe { self.stack.set(self.depth, slot) };
        self.depth += 1;
        true
    }

    /// Leaves the frame of `slot`; false when it is not on the stack.
    #[inline(always)]
    fn pop(&mut self, slot: u32, end: u64) -> bool {
        let depth = self.depth;
        // SAFETY: frames 0..depth (depth <= MAX_DEPTH) were set when entered.
        if depth > 0 && unsafe { self.stack.get(depth - 1) } == slot {
            self.depth = depth - 1;
            true
        } else {
            self.pop_out_of_order(slot, end)
        }
    }

    /// Repairs the stack when frames are left out of order (a guard moved or forgotten): frames above `slot` are
    /// closed at `end`.
    #[cold]
    #[inline(never)]
    fn pop_out_of_order(&mut self, slot: u32, end: u64) -> bool {
        // SAFETY: frames 0..depth were set when they were entered.
        let Some(at) = unsafe { self.stack.prefix(self.depth) }.iter().rposition(|&s| s == slot) else { return false };
        for i in at + 1..self.depth {
            // SAFETY: as above (i < depth).
            let above = unsafe { self.stack.get(i) };
            if let Some(node) = self.nodes.get_mut(above as usize) {
                if node.end == OPEN {
                    node.end = end;
                }
            }
        }
        self.depth = at;
        true
    }

    #[inline(always)]
    fn close(&mut self, slot: u32, end: u64, flags: u32) {
        if let Some(node) = self.nodes.get_mut(slot as usize) {
            node.end = end;
            node.link |= flags << PARENT_BITS;
        }
    }

    // Folded invocations. Past `fold_at` calls an invocation stops storing one node per call: what it has is
    // merged into call paths (`fold`), and each later call adds one to its path's count and is timed only now and
    // then (`enter_folded`), so a big invocation costs a counter per call instead of two clock reads and a node.
    // Frames keep a key: a node slot for the calls entered before the fold (their guards hold it), `FOLD_KEY |
    // depth` for the later ones.

    /// Merges the per-call nodes into call paths. Cold: once per big invocation.
    #[cold]
    #[inline(never)]
    fn fold(&mut self) {
        if !self.frame_path.is_allocated() {
            self.frame_path = DepthArray::new();
            self.frame_start = DepthArray::new();
        }
        self.paths.clear();
        self.paths.reserve(self.nodes.len().min(self.cap).max(64));
        self.slot_path.clear();
        self.slot_path.reserve(self.nodes.len());
        for slot in 0..self.nodes.len() {
            let node = self.nodes[slot];
            let path = if slot == 0 {
                self.new_path(NO_PATH, node.index)
            } else {
                let parent = (node.link & PARENT_MASK) as usize;
                let parent_path = if parent < slot { self.slot_path[parent] } else { 0 };
                if parent_path == NO_PATH {
                    NO_PATH
                } else {
                    self.find_child(parent_path, node.index)
                }
            };
            self.slot_path.push(path);
            // Times and flags of these calls are added when the invocation is written: calls still open now end
            // later, through their own guards, exactly as before the fold.
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.calls += 1;
                if p.first_start == UNTIMED {
                    p.first_start = node.start;
                }
            }
        }
        for i in 0..self.depth {
            // SAFETY: i < depth <= MAX_DEPTH, and frame i was set when it was entered.
            unsafe {
                let path = self.slot_path.get(self.stack.get(i) as usize).copied().unwrap_or(NO_PATH);
                self.frame_path.set(i, path);
                self.frame_start.set(i, UNTIMED);
            }
        }
        self.folded = true;
        self.fold_at = 0;
        self.limit = 0;
    }

    /// A new call path under `parent` (`NO_PATH` for the root's), or `NO_PATH` past the cap.
    fn new_path(&mut self, parent: u32, index: u32) -> u32 {
        let id = self.paths.len();
        if id >= self.cap || id >= NO_PATH as usize {
            return NO_PATH;
        }
        let next_sibling = match self.paths.get_mut(parent as usize) {
            Some(p) => mem::replace(&mut p.first_child, id as u32),
            None => NO_PATH,
        };
        self.paths.push(PathNode {
            calls: 0,
            countdown: 1,
            timed: 0,
            ticks: 0,
            min: u64::MAX,
            max: 0,
            first_start: UNTIMED,
            index,
            parent,
            first_child: NO_PATH,
            next_sibling,
            hot: [NO_PATH; HOT_CHILDREN],
            flags: 0,
        });
        id as u32
    }

    /// The child path of `parent` for function `index`, created if needed; `NO_PATH` past the cap.
    #[inline(never)]
    fn find_child(&mut self, parent: u32, index: u32) -> u32 {
        let mut child = self.paths[parent as usize].first_child;
        while child != NO_PATH {
            let p = &self.paths[child as usize];
            if p.index == index {
                break;
            }
            child = p.next_sibling;
        }
        if child == NO_PATH {
            child = self.new_path(parent, index);
        }
        if child != NO_PATH {
            self.paths[parent as usize].hot[index as usize % HOT_CHILDREN] = child;
        }
        child
    }

    /// Counts a call of `index` on its call path under the top frame and enters its frame, timed when the path's
    /// countdown runs out; returns the frame's key, `None` past the depth limit (counted as truncated). A call
    /// past the path cap gets a frame with no path, so its callees are not counted on the wrong path.
    #[inline(always)]
    fn enter_path(&mut self, index: u32) -> Option<u32> {
        let depth = self.depth;
        if depth == 0 || depth >= MAX_DEPTH {
            self.truncated += 1;
            return None;
        }
        // SAFETY: 0 < depth < MAX_DEPTH; frame depth - 1 was set (on entry or by the fold).
        let parent = unsafe { self.frame_path.get(depth - 1) };
        let mut path = NO_PATH;
        let mut start = UNTIMED;
        if let Some(p) = self.paths.get(parent as usize) {
            let hot = p.hot[index as usize % HOT_CHILDREN];
            path = match self.paths.get(hot as usize) {
                Some(h) if h.index == index => hot,
                _ => self.find_child(parent, index),
            };
        }
        match self.paths.get_mut(path as usize) {
            Some(p) => {
                p.calls += 1;
                p.countdown -= 1;
                if p.countdown == 0 {
                    start = self.timed_start(path);
                }
            }
            None => self.truncated += 1,
        }
        let key = FOLD_KEY | depth as u32;
        // SAFETY: depth < MAX_DEPTH, checked above.
        unsafe { self.push_frame_at(depth, key, path, start) };
        Some(key)
    }

    /// Enters the frame at `depth` (== `self.depth`) of a folded invocation.
    ///
    /// # Safety
    /// `depth < MAX_DEPTH` and the invocation has folded (the arrays are allocated).
    #[inline(always)]
    unsafe fn push_frame_at(&mut self, depth: usize, key: u32, path: u32, start: u64) {
        // SAFETY: the caller's contract.
        unsafe {
            self.stack.set(depth, key);
            self.frame_path.set(depth, path);
            self.frame_start.set(depth, start);
        }
        self.depth = depth + 1;
    }

    /// Starts a timed call of `path`: sets its next countdown and reads the clock.
    #[inline(never)]
    fn timed_start(&mut self, path: u32) -> u64 {
        let calls = self.paths[path as usize].calls;
        let gap = self.next_gap(calls);
        let start = now();
        let p = &mut self.paths[path as usize];
        p.countdown = gap;
        if p.first_start == UNTIMED {
            p.first_start = start;
        }
        start
    }

    /// Enters a frame of a folded invocation for `path`, untimed; returns its key.
    fn push_path_frame(&mut self, path: u32) -> Option<u32> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        let key = FOLD_KEY | self.depth as u32;
        self.push_keyed_frame(key, path);
        Some(key)
    }

    /// Enters an untimed frame of a folded invocation; the caller checked the depth.
    fn push_keyed_frame(&mut self, key: u32, path: u32) {
        // SAFETY: the caller checked depth < MAX_DEPTH; only folded invocations get here.
        unsafe { self.push_frame_at(self.depth, key, path, UNTIMED) };
    }

    /// The gap to the next timed call of a path that has had `calls` calls: 1 while it is young, then uniform in
    /// 1..2N-1 (mean N).
    #[inline(never)]
    fn next_gap(&mut self, calls: u64) -> u64 {
        if calls < ALWAYS_TIMED || self.time_sample <= 1 {
            return 1;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        1 + x % (2 * self.time_sample - 1)
    }

    /// Leaves the top frame of a folded invocation when its key is `slot`, timing it if it was timed.
    #[inline(always)]
    fn leave_folded(&mut self, slot: u32) -> bool {
        let depth = self.depth;
        // SAFETY: frames 0..depth (depth <= MAX_DEPTH) were set when entered.
        let flags = if std::thread::panicking() { FLAG_PANICKED } else { 0 };
        if depth == 0 || unsafe { self.stack.get(depth - 1) } != slot {
            return self.pop(slot, now());
        }
        self.depth = depth - 1;
        // SAFETY: frame depth - 1 (< MAX_DEPTH) was set when it was entered or by the fold.
        let (path, start) = unsafe { (self.frame_path.get(depth - 1), self.frame_start.get(depth - 1)) };
        if start != UNTIMED {
            let end = now();
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.add_time(end.saturating_sub(start));
            }
        }
        if flags != 0 {
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.flags |= flags;
            }
        }
        true
    }

    /// Ends a call entered after the fold whose start is known (async functions are always timed).
    fn close_path(&mut self, path: u32, start: u64, end: u64, flags: u32) {
        if let Some(p) = self.paths.get_mut(path as usize) {
            p.add_time(end.saturating_sub(start));
            p.flags |= flags;
        }
    }
}

impl PathNode {
    #[inline(always)]
    fn add_time(&mut self, ticks: u64) {
        self.ticks += ticks;
        self.timed += 1;
        self.min = self.min.min(ticks);
        self.max = self.max.max(ticks);
    }
}

/// A recorder owned by a root task. Like a `Box`, it owns its recorder uniquely; the raw pointer is published in
/// `CURRENT` only during a poll of its owner, on the polling thread, and withdrawn before that poll returns, so
/// moving the owner to another thread between polls moves sole access with it.
struct OwnedRecorder(NonNull<Recorder>);

// SAFETY: see the type's documentation: access is unique, as with Box<Recorder>, and Recorder is Send.
unsafe impl Send for OwnedRecorder {}
// SAFETY: `&OwnedRecorder` gives no access to the recorder.
unsafe impl Sync for OwnedRecorder {}

impl OwnedRecorder {
    fn new(rec: Box<Recorder>) -> OwnedRecorder {
        OwnedRecorder(NonNull::from(Box::leak(rec)))
    }

    fn ptr(&self) -> *mut Recorder {
        self.0.as_ptr()
    }

    fn into_box(self) -> Box<Recorder> {
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

struct ThreadSlot {
    rec: *mut Recorder,
    id: u64,
    name: Option<Arc<str>>,
}

impl Drop for ThreadSlot {
    fn drop(&mut self) {
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

fn set_current(rec: *mut Recorder) -> *mut Recorder {
    CURRENT.with(|c| c.replace(rec))
}

// ---------------------------------------------------------------------------------------------------------------
// Hidden API (Contract 1)

/// What the code rewritten by `cargo calltime` calls. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::{Guard, Instrumented};
    use std::future::Future;

    /// Identifies the plan the probes were inserted by; passed by every root probe.
    #[derive(Debug)]
    pub struct PlanInfo {
        /// The plan's id, written to the trace's `plan` line.
        pub id: &'static str,
        /// Absolute path of the function table the tool wrote for this plan (may be empty).
        pub table: &'static str,
        /// Number of functions (indices) in the plan.
        pub functions: u32,
    }

    /// Probe of a non-root sync function; the guard records the exit when dropped.
    #[inline(always)]
    pub fn enter(index: u32) -> Guard {
        crate::enter(index)
    }

    /// Probe of a root sync function: starts an invocation when none is in progress on this thread.
    #[inline(always)]
    pub fn enter_root(index: u32, plan: &'static PlanInfo) -> Guard {
        crate::enter_root(index, plan)
    }

    /// Wraps the body of a non-root async function.
    pub fn instrument<F: Future>(index: u32, fut: F) -> Instrumented<F> {
        Instrumented::new(index, None, fut)
    }

    /// Wraps the body of a root async function: a task with no invocation in progress starts one.
    pub fn instrument_root<F: Future>(index: u32, plan: &'static PlanInfo, fut: F) -> Instrumented<F> {
        Instrumented::new(index, Some(plan), fut)
    }

    /// One read of the runtime clock (raw ticks), for benchmarks.
    #[inline(always)]
    pub fn now() -> u64 {
        crate::now()
    }

    /// Sets up the clock as the first root entry would, so [`now`] reads the clock probes use.
    pub fn init_clock() {
        crate::clock();
    }

    /// Holds (true) or releases the writer thread, so tests can show that the panic hook and the exit handler write
    /// what is still queued. Explicit flushes, the panic hook and the exit handler ignore it.
    pub fn hold_writer(hold: bool) {
        crate::HOLD_WRITER.store(hold, std::sync::atomic::Ordering::SeqCst);
    }
}

use __private::PlanInfo;

/// The guard returned by a sync function's probe: records the function's exit when dropped. Inert (and free to
/// drop) outside any invocation. Not `Send`: it refers to the current thread's recording context.
#[must_use = "the guard records the exit when it is dropped"]
pub struct Guard {
    rec: *mut Recorder,
    slot: u32,
}

impl Guard {
    const INERT: Guard = Guard { rec: ptr::null_mut(), slot: NO_SLOT };
}

#[inline(always)]
fn enter(index: u32) -> Guard {
    let rec = CURRENT.with(Cell::get);
    if rec as usize <= SKIP as usize {
        return Guard::INERT;
    }
    // SAFETY: a non-null, non-SKIP CURRENT points to a live recorder owned by this thread or by the task being
    // polled on it.
    unsafe { record_enter(rec, index) }
}

#[inline(always)]
fn enter_root(index: u32, plan: &'static PlanInfo) -> Guard {
    let rec = CURRENT.with(Cell::get);
    if rec.is_null() {
        return start_thread_invocation(index, plan);
    }
    if rec == SKIP {
        return Guard::INERT;
    }
    // SAFETY: as in `enter`.
    unsafe { record_enter(rec, index) }
}

/// Inlined into every probed function, and kept to the per-call case: everything else (folding, growing the
/// buffer, the caps) is one out-of-line call, so the probed function saves no registers for it and an inert probe
/// stays a thread-local load and a branch.
#[inline(always)]
unsafe fn record_enter(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    let slot = r.nodes.len();
    let depth = r.depth;
    if slot >= r.limit || depth >= MAX_DEPTH {
        // SAFETY: as above.
        return unsafe {
            if r.folded {
                enter_folded(rec, index)
            } else {
                enter_past_limit(rec, index)
            }
        };
    }
    let start = now();
    // SAFETY: slot == nodes.len() < limit and depth < MAX_DEPTH, checked above.
    unsafe { r.push_node(slot, depth, index, start) };
    Guard { rec, slot: slot as u32 }
}

impl Drop for Guard {
    /// Small enough to be inlined into every probed function, so an inert guard (whose null pointer the optimizer
    /// sees from `enter`) costs nothing; the recording exit is one direct call.
    #[inline(always)]
    fn drop(&mut self) {
        let rec = self.rec;
        if rec as usize > SKIP as usize {
            // SAFETY: guards are dropped in reverse order of creation on their own thread (they are !Send locals
            // of the probed functions), so the recorder they point to is still the live context of their
            // invocation.
            unsafe { leave(rec, self.slot) }
        } else if rec == SKIP {
            end_skipped_invocation();
        }
    }
}

/// A call past the node buffer's current bound: a folded invocation, one that folds now, a buffer to grow, or a
/// call counted as truncated (folding off and the cap reached).
#[inline(never)]
unsafe fn enter_past_limit(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    if r.folded || (r.nodes.len() >= r.fold_at && r.depth < MAX_DEPTH) {
        // SAFETY: as above.
        return unsafe { enter_folded(rec, index) };
    }
    let slot = r.push(index, now());
    if slot == NO_SLOT {
        Guard::INERT
    } else {
        Guard { rec, slot }
    }
}

/// A call of a big invocation. The common case (the path is in its parent's child cache and this call is not
/// timed) is kept free of anything else, so it compiles to a few loads, a counter and a frame without saving
/// registers; everything else is in `enter_folded_slow`.
#[inline(never)]
unsafe fn enter_folded(rec: *mut Recorder, index: u32) -> Guard {
    // SAFETY: the caller passes the live recorder current on this thread.
    let r = unsafe { &mut *rec };
    let depth = r.depth;
    if r.folded && depth > 0 && depth < MAX_DEPTH {
        // SAFETY: 0 < depth < MAX_DEPTH, the depth arrays are allocated once folded and frame depth - 1 was set; path
        // ids are checked against paths.len() before use.
        unsafe {
            let parent = r.frame_path.get(depth - 1) as usize;
            let count = r.paths.len();
            if parent < count {
                let paths = r.paths.as_mut_ptr();
                let hot = (*paths.add(parent)).hot[index as usize % HOT_CHILDREN];
                if (hot as usize) < count {
                    let p = &mut *paths.add(hot as usize);
                    if p.index == index && p.countdown > 1 {
                        p.calls += 1;
                        p.countdown -= 1;
                        let key = FOLD_KEY | depth as u32;
                        r.push_frame_at(depth, key, hot, UNTIMED);
                        return Guard { rec, slot: key };
                    }
                }
            }
        }
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

/// The exit probe. A call entered after its invocation folded has a key with `FOLD_KEY` set and goes to
/// `leave_folded_call`; the others have their own node (entered before the fold, if there was one).
#[inline(never)]
unsafe fn leave(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
    if slot & FOLD_KEY != 0 {
        // SAFETY: as above.
        return unsafe { leave_folded_call(rec, slot) };
    }
    let r = unsafe { &mut *rec };
    // The same after a fold: the frame stack keeps this call's slot as its key, and the writer adds the node's
    // time to its call path.
    let end = now();
    if r.pop(slot, end) {
        let flags = if std::thread::panicking() { FLAG_PANICKED } else { 0 };
        r.close(slot, end, flags);
        if r.depth == 0 && r.kind == OwnerKind::Thread {
            complete_thread_invocation(rec);
        }
    }
}

/// The exit probe of a call entered after its invocation folded. As in `enter_folded`, the common case (an untimed
/// call, not the root, no panic) is kept apart from the rest.
#[inline(never)]
unsafe fn leave_folded_call(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
    let r = unsafe { &mut *rec };
    let depth = r.depth;
    // SAFETY: 1 < depth <= MAX_DEPTH; frame depth - 1 was set when entered.
    if r.folded
        && depth > 1
        && unsafe { r.stack.get(depth - 1) == slot && r.frame_start.get(depth - 1) == UNTIMED }
        && !std::thread::panicking()
    {
        r.depth = depth - 1;
        return;
    }
    // SAFETY: as above.
    unsafe { leave_slow(rec, slot) }
}

#[inline(never)]
unsafe fn leave_slow(rec: *mut Recorder, slot: u32) {
    // SAFETY: the caller passes the recorder its guard was created in, still live (see `Guard::drop`).
    let r = unsafe { &mut *rec };
    if r.folded {
        if r.leave_folded(slot) && r.depth == 0 && r.kind == OwnerKind::Thread {
            complete_thread_invocation(rec);
        }
        return;
    }
    let end = now();
    if r.pop(slot, end) {
        let flags = if std::thread::panicking() { FLAG_PANICKED } else { 0 };
        r.close(slot, end, flags);
        if r.depth == 0 && r.kind == OwnerKind::Thread {
            complete_thread_invocation(rec);
        }
    }
}

#[cold]
#[inline(never)]
fn end_skipped_invocation() {
    CURRENT.with(|c| c.set(ptr::null_mut()));
}

// ---------------------------------------------------------------------------------------------------------------
// Invocations: start, admission, completion

static SEEN: AtomicU64 = AtomicU64::new(0);
static ADMITTED: AtomicU64 = AtomicU64::new(0);
static SAMPLED_OUT: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static KEPT: AtomicU64 = AtomicU64::new(0);
static TRUNCATED: AtomicU64 = AtomicU64::new(0);
static THREAD_IDS: AtomicU64 = AtomicU64::new(1);
static TASK_IDS: AtomicU64 = AtomicU64::new(1);
static HOLD_WRITER: AtomicBool = AtomicBool::new(false);
/// Recorders that may still be allocated beyond one per thread.
static SPARE: AtomicUsize = AtomicUsize::new(0);
/// Recorders handed back by the writer, ready for reuse. Boxed: a recorder's address is published in `CURRENT` and
/// must not move when the pool's vector does.
#[allow(clippy::vec_box)]
static POOL: Mutex<Vec<Box<Recorder>>> = Mutex::new(Vec::new());

struct Config {
    out: PathBuf,
    node_cap: usize,
    min_ns: u64,
    sample: u64,
    max_invocations: u64,
    queue: usize,
    fold_after: usize,
    time_sample: u64,
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
        Config {
            out,
            node_cap: number("CALLTIME_NODE_CAP", 100_000, 1).min(u64::from(PARENT_MASK - 1)) as usize,
            min_ns: number("CALLTIME_MIN_NS", 0, 0),
            sample: number("CALLTIME_SAMPLE", 1, 1),
            max_invocations: number("CALLTIME_MAX_INVOCATIONS", 100_000, 0),
            queue: number("CALLTIME_QUEUE", 1024, 1).min(1 << 20) as usize,
            fold_after: number("CALLTIME_FOLD_AFTER", 4096, 0).min(u64::from(PARENT_MASK - 1)) as usize,
            time_sample: number("CALLTIME_TIME_SAMPLE", 64, 1).min(1 << 30),
        }
    }
}

struct Runtime {
    config: Config,
    clock: &'static ClockBase,
    plan: &'static PlanInfo,
    sender: SyncSender<Box<Recorder>>,
    writer: Option<std::thread::Thread>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

fn runtime(plan: &'static PlanInfo) -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        let config = Config::from_env();
        let clock = clock();
        let (sender, receiver) = sync_channel(config.queue);
        SPARE.store(config.queue + SPARE_RECORDERS, Relaxed);
        lock(&POOL).reserve(config.queue + SPARE_RECORDERS + 8);
        lock(&SINK).receiver = Some(receiver);
        let writer = std::thread::Builder::new()
            .name("calltime-writer".into())
            .spawn(|| loop {
                std::thread::park_timeout(WRITER_PERIOD);
                if !HOLD_WRITER.load(Relaxed) {
                    drain(false);
                }
            })
            .ok()
            .map(|handle| handle.thread().clone());
        install_flush_hooks();
        Runtime { config, clock, plan, sender, writer }
    })
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

enum Admission {
    Record,
    Skip,
}

fn admit(rt: &Runtime) -> Admission {
    let seen = SEEN.fetch_add(1, Relaxed);
    if seen % rt.config.sample != 0 {
        SAMPLED_OUT.fetch_add(1, Relaxed);
        return Admission::Skip;
    }
    if ADMITTED.fetch_add(1, Relaxed) >= rt.config.max_invocations {
        DROPPED.fetch_add(1, Relaxed);
        return Admission::Skip;
    }
    Admission::Record
}

/// A free recorder from the pool, or a new one while the spare budget lasts.
fn spare_recorder(rt: &Runtime) -> Option<Box<Recorder>> {
    if let Some(rec) = lock(&POOL).pop() {
        return Some(rec);
    }
    SPARE.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1)).ok()?;
    Some(Recorder::boxed(&rt.config))
}

fn give_back(rec: Box<Recorder>) {
    let mut pool = lock(&POOL);
    if pool.len() < pool.capacity() {
        pool.push(rec);
    }
}

/// Records gathered before the writer writes them out, even in the middle of a drain.
const FLUSH_BYTES: usize = 1 << 18;
/// How often the writer thread looks at the queue by itself.
const WRITER_PERIOD: Duration = Duration::from_millis(20);
/// Wake the writer at most this often (ns) when invocations end in a burst: a wake is a futex call and a context
/// switch, which cost a program with thousands of short invocations more than its probes did.
const WAKE_EVERY_NS: u64 = 5_000_000;
static LAST_WAKE_NS: AtomicU64 = AtomicU64::new(0);
static QUEUED: AtomicUsize = AtomicUsize::new(0);

fn send(rt: &Runtime, rec: Box<Recorder>) {
    match rt.sender.try_send(rec) {
        Ok(()) => {
            let queued = QUEUED.fetch_add(1, Relaxed) + 1;
            let now_ns = rt.clock.instant0.elapsed().as_nanos() as u64;
            let last = LAST_WAKE_NS.load(Relaxed);
            // Woken right away after a quiet spell (so a program killed between requests loses nothing), and
            // before the queue fills up in a burst.
            if now_ns.saturating_sub(last) >= WAKE_EVERY_NS || queued >= rt.config.queue / 2 {
                LAST_WAKE_NS.store(now_ns, Relaxed);
                if let Some(writer) = &rt.writer {
                    writer.unpark();
                }
            }
        }
        Err(TrySendError::Full(rec)) | Err(TrySendError::Disconnected(rec)) => {
            DROPPED.fetch_add(1, Relaxed);
            give_back(rec);
        }
    }
}

#[cold]
#[inline(never)]
fn start_thread_invocation(index: u32, plan: &'static PlanInfo) -> Guard {
    let rt = runtime(plan);
    if let Admission::Skip = admit(rt) {
        CURRENT.with(|c| c.set(SKIP));
        return Guard { rec: SKIP, slot: NO_SLOT };
    }
    let rec = THREAD
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            if slot.rec.is_null() {
                let rec = lock(&POOL).pop().unwrap_or_else(|| Recorder::boxed(&rt.config));
                slot.rec = Box::into_raw(rec);
                slot.id = THREAD_IDS.fetch_add(1, Relaxed);
                slot.name = std::thread::current().name().map(|n| Arc::from(n.replace(['\n', '\r'], " ")));
            }
            // SAFETY: the slot owns the recorder and no invocation is in progress on this thread.
            unsafe { (*slot.rec).begin(OwnerKind::Thread, slot.id, slot.name.clone()) };
            Some(slot.rec)
        })
        .ok()
        .flatten();
    let Some(rec) = rec else {
        // Thread teardown: nothing can be recorded here.
        DROPPED.fetch_add(1, Relaxed);
        CURRENT.with(|c| c.set(SKIP));
        return Guard { rec: SKIP, slot: NO_SLOT };
    };
    CURRENT.with(|c| c.set(rec));
    // SAFETY: rec is this thread's live recorder.
    unsafe { record_enter(rec, index) }
}

/// The root frame of a thread invocation was left: hand the tree to the writer and take a fresh recorder.
#[cold]
#[inline(never)]
fn complete_thread_invocation(rec: *mut Recorder) {
    CURRENT.with(|c| c.set(ptr::null_mut()));
    let Some(rt) = RUNTIME.get() else { return };
    let filled = THREAD
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            if slot.rec != rec {
                return None;
            }
            let fresh = spare_recorder(rt)?;
            Some(mem::replace(&mut slot.rec, Box::into_raw(fresh)))
        })
        .ok()
        .flatten();
    match filled {
        // SAFETY: the pointer came from Box::into_raw and the slot no longer refers to it.
        Some(filled) => send(rt, unsafe { Box::from_raw(filled) }),
        // No free recorder: the tree is dropped and the recorder reused for the next invocation.
        None => {
            DROPPED.fetch_add(1, Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Async

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
    fn new(index: u32, plan: Option<&'static PlanInfo>, fut: F) -> Instrumented<F> {
        Instrumented { fut: ManuallyDrop::new(fut), index, plan, state: TaskState::Unpolled }
    }
}

/// Decides at the first poll what this future records; the returned state has its frame entered already.
fn begin_task_node(index: u32, plan: Option<&'static PlanInfo>) -> TaskState {
    let cur = CURRENT.with(Cell::get);
    if cur.is_null() {
        return match plan {
            Some(plan) => start_task_invocation(index, plan),
            None => TaskState::Inert,
        };
    }
    if cur == SKIP {
        return TaskState::Inert;
    }
    // SAFETY: a real CURRENT is live for the duration of this poll.
    let r = unsafe { &mut *cur };
    if r.nodes.len() >= r.fold_at {
        if !r.folded {
            r.fold();
        }
        let Some(key) = r.enter_path(index) else { return TaskState::Inert };
        let top = r.depth - 1;
        // The frame covers this poll only; the call's own time runs from here to its completion.
        // SAFETY: enter_path entered frame `top` (< MAX_DEPTH) just now.
        let path = unsafe {
            r.frame_start.set(top, UNTIMED);
            r.frame_path.get(top)
        };
        let start = now();
        if let Some(p) = r.paths.get_mut(path as usize) {
            if p.first_start == UNTIMED {
                p.first_start = start;
            }
        }
        return TaskState::NestedPath { invocation: r.invocation, path, start, key };
    }
    let slot = r.push(index, now());
    if slot == NO_SLOT {
        TaskState::Inert
    } else {
        TaskState::Nested { invocation: r.invocation, slot }
    }
}

#[cold]
#[inline(never)]
fn start_task_invocation(index: u32, plan: &'static PlanInfo) -> TaskState {
    let rt = runtime(plan);
    if let Admission::Skip = admit(rt) {
        return TaskState::Skipped;
    }
    let Some(mut rec) = spare_recorder(rt) else {
        DROPPED.fetch_add(1, Relaxed);
        return TaskState::Skipped;
    };
    rec.begin(OwnerKind::Task, TASK_IDS.fetch_add(1, Relaxed), None);
    let start = now();
    rec.push(index, start);
    TaskState::Root(OwnedRecorder::new(rec))
}

fn finish_task(owned: OwnedRecorder) {
    match RUNTIME.get() {
        Some(rt) => send(rt, owned.into_box()),
        None => drop(owned),
    }
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
            if let TaskState::Root(owned) = mem::replace(self.state, TaskState::Done) {
                finish_task(owned);
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
        let fut = unsafe { Pin::new_unchecked(&mut *this.fut) };
        let mut first = false;
        if let TaskState::Unpolled = this.state {
            this.state = begin_task_node(this.index, this.plan);
            first = true;
        }
        let mut path_call = None;
        let (rec, slot, pushed, restore) = match &this.state {
            TaskState::Unpolled | TaskState::Inert | TaskState::Done => return fut.poll(cx),
            TaskState::Skipped => (ptr::null_mut(), NO_SLOT, false, Some(set_current(SKIP))),
            TaskState::NestedPath { invocation, path, start, key } => {
                let cur = CURRENT.with(Cell::get);
                // SAFETY: a real CURRENT is live for the duration of this poll.
                if cur as usize > SKIP as usize && unsafe { (*cur).invocation } == *invocation {
                    path_call = Some((*path, *start));
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
                let cur = CURRENT.with(Cell::get);
                // SAFETY: a real CURRENT is live for the duration of this poll.
                if cur as usize > SKIP as usize && unsafe { (*cur).invocation } == *invocation {
                    let pushed = first || unsafe { (*cur).push_frame(*slot) };
                    (cur, *slot, pushed, None)
                } else {
                    // Polled outside the invocation it started in: record nothing more.
                    (ptr::null_mut(), NO_SLOT, false, None)
                }
            }
        };
        let mut scope =
            PollScope { state: &mut this.state, rec, slot, pushed, restore, path_call, returned: false, ready: false };
        let out = fut.poll(cx);
        scope.returned = true;
        scope.ready = out.is_ready();
        drop(scope);
        out
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        /// Restores `CURRENT` even if the inner future's destructor panics.
        struct Restore(Option<*mut Recorder>);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Some(prev) = self.0 {
                    set_current(prev);
                }
            }
        }
        match mem::replace(&mut self.state, TaskState::Done) {
            TaskState::Root(owned) => {
                // Cancelled: descendants close their nodes in our context while the inner future is dropped.
                let rec = owned.ptr();
                let restore = Restore(Some(set_current(rec)));
                // SAFETY: dropped in place exactly once; never used again.
                unsafe { ManuallyDrop::drop(&mut self.fut) };
                // SAFETY: our own recorder, live until `owned` is dropped or sent.
                unsafe { (*rec).close(0, now(), FLAG_CANCELLED) };
                drop(restore);
                finish_task(owned);
            }
            TaskState::Nested { invocation, slot } => {
                // SAFETY: dropped in place exactly once; never used again.
                unsafe { ManuallyDrop::drop(&mut self.fut) };
                let cur = CURRENT.with(Cell::get);
                // SAFETY: a real CURRENT is live on this thread.
                if cur as usize > SKIP as usize && unsafe { (*cur).invocation } == invocation {
                    unsafe { (*cur).close(slot, now(), FLAG_CANCELLED) };
                }
            }
            TaskState::NestedPath { invocation, path, start, .. } => {
                // SAFETY: dropped in place exactly once; never used again.
                unsafe { ManuallyDrop::drop(&mut self.fut) };
                let cur = CURRENT.with(Cell::get);
                // SAFETY: a real CURRENT is live on this thread.
                if cur as usize > SKIP as usize && unsafe { (*cur).invocation } == invocation {
                    unsafe { (*cur).close_path(path, start, now(), FLAG_CANCELLED) };
                }
            }
            TaskState::Skipped => {
                let _restore = Restore(Some(set_current(SKIP)));
                // SAFETY: dropped in place exactly once; never used again.
                unsafe { ManuallyDrop::drop(&mut self.fut) };
            }
            TaskState::Unpolled | TaskState::Inert | TaskState::Done => {
                // SAFETY: dropped in place exactly once; never used again.
                unsafe { ManuallyDrop::drop(&mut self.fut) };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Writer

/// The trace file and the receiving end of the queue; whoever holds the lock writes.
struct Sink {
    receiver: Option<Receiver<Box<Recorder>>>,
    file: Option<File>,
    opened: bool,
    seq: u64,
    last_stats: Option<Stats>,
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
    walk: Vec<(u32, u32, u64)>,
    children: Vec<u32>,
    body: String,
    /// Complete records not yet written (see `flush_pending`).
    pending: String,
    pending_records: u64,
    pending_truncated: u64,
    /// A folded invocation's call paths with the times of its pre-fold calls added.
    paths: Vec<PathNode>,
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    receiver: None,
    file: None,
    opened: false,
    seq: 0,
    last_stats: None,
    first_child: Vec::new(),
    next_sibling: Vec::new(),
    walk: Vec::new(),
    children: Vec::new(),
    body: String::new(),
    pending: String::new(),
    pending_records: 0,
    pending_truncated: 0,
    paths: Vec::new(),
});

/// Appends `value` in decimal, two digits per division (the writer spends much of its time here).
fn push_decimal(out: &mut String, mut value: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
                                5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + value as u8;
    }
    // SAFETY: ASCII digits are valid UTF-8.
    unsafe { out.as_mut_vec() }.extend_from_slice(&digits[at..]);
}

/// Writes every queued invocation (and a `stats` line if asked). Safe from any thread; never waits for itself.
fn drain(stats_line: bool) {
    let Some(rt) = RUNTIME.get() else { return };
    if DRAINING.try_with(Cell::get).unwrap_or(true) {
        return;
    }
    let _ = DRAINING.try_with(|d| d.set(true));
    {
        let mut sink = lock(&SINK);
        sink.write_queued(rt);
        if stats_line {
            sink.write_stats(rt);
        }
    }
    let _ = DRAINING.try_with(|d| d.set(false));
}

impl Sink {
    fn file(&mut self, rt: &Runtime) -> Option<&mut File> {
        if !self.opened {
            self.opened = true;
            match File::create(&rt.config.out) {
                Ok(mut file) => {
                    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
                    let c = &rt.config;
                    let header = format!(
                        "calltime-trace {TRACE_VERSION}\nprocess {} {} {}\nplan {} {}\nsettings node_cap={} \
                         fold_after={} time_sample={} min_ns={} sample={} max_invocations={}\n",
                        std::process::id(),
                        rt.clock.epoch_unix_ns,
                        exe.replace(['\n', '\r'], " "),
                        rt.plan.id,
                        rt.plan.table.replace(['\n', '\r'], " "),
                        c.node_cap,
                        c.fold_after,
                        c.time_sample,
                        c.min_ns,
                        c.sample,
                        c.max_invocations,
                    );
                    if file.write_all(header.as_bytes()).is_ok() {
                        self.file = Some(file);
                    }
                }
                Err(e) => eprintln!(
                    "calltime: cannot create trace file {}: {e}; nothing will be recorded",
                    rt.config.out.display()
                ),
            }
        }
        self.file.as_mut()
    }

    fn write_queued(&mut self, rt: &Runtime) {
        let mut scale = None;
        while let Some(rec) = self.receiver.as_ref().and_then(|r| r.try_recv().ok()) {
            QUEUED.fetch_sub(1, Relaxed);
            let scale = *scale.get_or_insert_with(|| Scale::current(rt.clock));
            self.write_invocation(rt, &rec, scale);
            give_back(rec);
            if self.pending.len() >= FLUSH_BYTES {
                self.flush_pending(rt);
            }
        }
        self.flush_pending(rt);
    }

    /// Writes the records gathered since the last flush with one `write` call: one call per invocation made the
    /// writer fall behind programs with tens of thousands of short invocations (a syscall costs more than
    /// formatting a small tree).
    fn flush_pending(&mut self, rt: &Runtime) {
        if self.pending_records == 0 {
            return;
        }
        let pending = mem::take(&mut self.pending);
        let written_ok = match self.file(rt) {
            Some(file) => file.write_all(pending.as_bytes()).is_ok(),
            None => false,
        };
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
    /// otherwise add one per panic).
    fn write_stats(&mut self, rt: &Runtime) {
        let now = stats();
        if self.last_stats == Some(now) {
            return;
        }
        let line = format!("stats {} {} {} {} {}\n", now.seen, now.kept, now.sampled_out, now.dropped, now.truncated);
        if let Some(file) = self.file(rt) {
            if file.write_all(line.as_bytes()).is_ok() {
                self.last_stats = Some(now);
            }
        }
    }

    /// Rebuilds preorder from parent links, converts ticks, applies the minimum duration, writes one record.
    fn write_invocation(&mut self, rt: &Runtime, rec: &Recorder, scale: Scale) {
        let nodes = &rec.nodes;
        let count = nodes.len();
        if count == 0 {
            return;
        }
        if rec.folded {
            self.write_folded(rt, rec, scale);
            return;
        }
        self.link_children(count, |slot| (nodes[slot].link & PARENT_MASK) as usize);
        let root = nodes[0];
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        self.body.clear();
        self.walk.clear();
        self.walk.push((0, 0, root_end));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((slot, depth, parent_end)) = self.walk.pop() {
            let node = nodes[slot as usize];
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
            if slot != 0 && duration < rt.config.min_ns {
                filtered += self.subtree_size(slot);
                continue;
            }
            written += 1;
            self.push_line("n", &[u64::from(depth), u64::from(node.index), start, duration, u64::from(flags)]);
            self.walk_children(slot, depth, end);
        }
        self.finish_record(rec, root_start, root_end - root_start, written, filtered);
    }

    /// Writes a folded invocation: one `a` line per call path, in preorder, children in order of first entry.
    fn write_folded(&mut self, rt: &Runtime, rec: &Recorder, scale: Scale) {
        let count = rec.paths.len();
        if count == 0 {
            return;
        }
        // The calls entered before the fold add their times and flags to their paths now; those that never ended
        // (cancelled futures, calls open at the root's end) are marked cancelled.
        let mut paths = mem::take(&mut self.paths);
        paths.clear();
        paths.extend_from_slice(&rec.paths);
        for (slot, node) in rec.nodes.iter().enumerate() {
            let Some(p) = rec.slot_path.get(slot).and_then(|&path| paths.get_mut(path as usize)) else { continue };
            if node.end == OPEN {
                if slot > 0 {
                    p.flags |= FLAG_CANCELLED;
                }
            } else {
                p.add_time(node.end.saturating_sub(node.start));
                p.flags |= node.link >> PARENT_BITS;
            }
        }
        self.link_children(count, |id| paths[id].parent as usize);
        let root = rec.nodes[0];
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        self.body.clear();
        self.walk.clear();
        self.walk.push((0, 0, 0));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((id, depth, _)) = self.walk.pop() {
            let p = paths[id as usize];
            let timed_ns = scale.span(p.ticks);
            let estimated = if p.timed == 0 {
                0
            } else {
                (u128::from(timed_ns) * u128::from(p.calls) / u128::from(p.timed)) as u64
            };
            if id != 0 && estimated < rt.config.min_ns {
                filtered += self.subtree_size(id);
                continue;
            }
            written += 1;
            let (min, max) = if p.timed == 0 { (0, 0) } else { (scale.span(p.min), scale.span(p.max)) };
            let first_start = if p.first_start == UNTIMED { root_start } else { scale.ns(p.first_start) };
            let flags = u64::from(p.flags);
            self.push_line(
                "a",
                &[u64::from(depth), u64::from(p.index), p.calls, p.timed, first_start, timed_ns, min, max, flags],
            );
            self.walk_children(id, depth, 0);
        }
        self.paths = paths;
        self.finish_record(rec, root_start, root_end - root_start, written, filtered);
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
    fn push_line(&mut self, kind: &str, fields: &[u64]) {
        self.body.push_str(kind);
        for &value in fields {
            self.body.push(' ');
            push_decimal(&mut self.body, value);
        }
        self.body.push('\n');
    }

    /// Wraps the node lines in `body` into an `inv` ... `end` record and writes it with one call.
    fn finish_record(&mut self, rec: &Recorder, start: u64, duration: u64, written: u64, filtered: u64) {
        let seq = self.seq;
        let kind = match rec.kind {
            OwnerKind::Thread => "thread",
            OwnerKind::Task => "task",
        };
        let _ = writeln!(
            self.pending,
            "inv {seq} {kind} {} {start} {duration} {written} {} {filtered} {}",
            rec.owner,
            rec.truncated,
            rec.name.as_deref().unwrap_or("")
        );
        self.pending.push_str(&self.body);
        let _ = writeln!(self.pending, "end {seq}");
        self.seq += 1;
        self.pending_records += 1;
        if rec.truncated > 0 {
            self.pending_truncated += 1;
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

fn install_flush_hooks() {
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
            let _ = std::panic::catch_unwind(|| drain(true));
        }
        // SAFETY: atexit is the C library's; the callback is a plain extern "C" fn with no captured state.
        unsafe {
            atexit(flush_at_exit);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Public API

/// Counters of this process, cumulative since the first root entry (the same as the trace's `stats` line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Root invocations started (recorded or not).
    pub seen: u64,
    /// Invocations written to the trace file.
    pub kept: u64,
    /// Invocations not recorded because of 1-in-N sampling (`CALLTIME_SAMPLE`).
    pub sampled_out: u64,
    /// Invocations lost: past `CALLTIME_MAX_INVOCATIONS`, writer queue full, no free buffer, or write failure.
    pub dropped: u64,
    /// Written invocations whose tree hit the node cap or the depth limit (calls counted, not stored).
    pub truncated: u64,
}

/// This process's counters so far.
pub fn stats() -> Stats {
    Stats {
        seen: SEEN.load(Relaxed),
        kept: KEPT.load(Relaxed),
        sampled_out: SAMPLED_OUT.load(Relaxed),
        dropped: DROPPED.load(Relaxed),
        truncated: TRUNCATED.load(Relaxed),
    }
}

/// Writes every completed invocation that is still queued, then a `stats` line, before returning. Invocations in
/// progress are not affected. Does nothing before the first root entry.
pub fn flush() {
    drain(true);
}

/// The trace file of this process, once a root was entered (`CALLTIME_OUT`, or `calltime-<pid>.trace` in the
/// directory current at the first root entry).
pub fn trace_path() -> Option<PathBuf> {
    RUNTIME.get().map(|rt| rt.config.out.clone())
}

#[cfg(test)]
mod tests {
    #[test]
    fn push_decimal_writes_every_width() {
        for value in [0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 65_536, 1_234_567_890, u64::MAX] {
            let mut out = String::from("x");
            super::push_decimal(&mut out, value);
            assert_eq!(out, format!("x{value}"));
        }
    }
}

//! A recording context: the node buffer and frame stack of one invocation, allocated once and recycled. Its fields
//! are private to this module and `fold`; the probes go through the small `#[inline(always)]` methods below.

mod allocs;
mod fold;
mod outcome;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub(crate) use fold::PathNode;

use crate::clock::now;
use crate::invocation::Config;

/// Frames deeper than `CALLTIME_max_depth` (default) are counted as truncated calls, not stored.
pub(crate) const DEFAULT_MAX_DEPTH: usize = 4096;
/// Node slots a new recorder starts with (6 KiB); it grows by doubling up to the fold or the node cap. Small, because
/// programs with many short invocations take a fresh recorder for each one queued to the writer.
const INITIAL_NODES: usize = 256;
/// Node slots of a small recorder (`Recorder::small`, 640 bytes): one made for a root task or a part when the
/// full-size ones are all in use, as an executor may start thousands of tasks before any ends.
const SMALL_NODES: usize = 16;
/// Slot of a guard that records nothing.
pub(crate) const NO_SLOT: u32 = u32::MAX;
/// `Node::end` of a node that has not been left yet.
pub(crate) const OPEN: u64 = u64::MAX;
/// `Node::link` holds the parent slot in its low 29 bits and the flags above them.
pub(crate) const PARENT_BITS: u32 = 29;
pub(crate) const PARENT_MASK: u32 = (1 << PARENT_BITS) - 1;
const NO_PARENT: u32 = PARENT_MASK;
/// Flag bit 0: the call was left by unwinding.
pub(crate) const FLAG_PANICKED: u32 = 1;
/// Flag bit 1: the call never finished (an async function dropped before completion, or still running when its
/// invocation ended).
pub(crate) const FLAG_CANCELLED: u32 = 2;
/// Flag bit 2: the call returned an `Err` (set by `outcome`).
pub(crate) const FLAG_ERR: u32 = 4;
/// Frame keys of a folded invocation have this bit set (node slots never do): `FOLD_KEY | depth`, with
/// `TIMED_KEY` for a call that is timed.
pub(crate) const FOLD_KEY: u32 = 1 << 31;
/// Set in the frame key of a folded call that is timed (its start is in `frame_start`): the exit of an untimed call
/// tells it from the key it holds, without reading the frame. Node slots stay below it (`PARENT_BITS`), and depths
/// too (`CALLTIME_MAX_DEPTH` is capped at 2^24).
pub(crate) const TIMED_KEY: u32 = 1 << 30;
/// A spawn key naming a call path rather than a node slot (see `spawn_key`).
pub(crate) const PATH_KEY: u32 = 1 << 31;
/// A frame of a folded invocation that belongs to no call path (past the path cap): its calls are only counted.
pub(crate) const NO_PATH: u32 = u32::MAX;
/// `PathNode::first_start` of a path whose first start is not known yet.
pub(crate) const UNTIMED: u64 = u64::MAX;
/// Entries of a call path's child cache (a power of two).
pub(crate) const HOT_CHILDREN: usize = 8;
/// Counters of retired calls a recorder starts with (by retirement slot, `retire.rs`); more are added when a settle
/// brings a slot past them (rare: slots are handed out as functions retire).
const INITIAL_RETIRED_COUNTERS: usize = 64;
/// Low bits of an invocation id that count a recorder's invocations (see `Recorder::invocation`).
const INVOCATION_BITS: u32 = 40;

/// A serial number per recorder (recorders are created on cold paths), from 1 so no id is 0.
fn next_recorder_serial() -> u64 {
    static RECORDERS: AtomicU64 = AtomicU64::new(1);
    RECORDERS.fetch_add(1, Relaxed)
}

/// One call: written at entry, its `end` patched at exit. Preorder is rebuilt from `link` by the writer, because
/// interleaved async children are not contiguous in entry order.
#[derive(Clone, Copy)]
pub(crate) struct Node {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) index: u32,
    pub(crate) link: u32,
    /// Allocations made while this call was the innermost open one (its self allocations), and their bytes:
    /// bumped by the counting allocator (`alloc.rs`), never by the probes.
    pub(crate) allocs: u64,
    pub(crate) alloc_bytes: u64,
}

/// A per-depth array of `max_depth` slots, left uninitialised: a slot is always set when its frame is entered and
/// read only while the frame is on the stack, so only the depths a program reaches are ever touched. (Zero-filling
/// the 16-64 KB of each recorder's arrays up front showed up as page faults in programs with many short
/// invocations, which take a fresh recorder each.)
struct DepthArray<T: Copy> {
    /// Length 0, capacity `max_depth` (or 0 before `new`): the slots live in the spare capacity.
    buf: Vec<T>,
}

impl<T: Copy> DepthArray<T> {
    fn new(len: usize) -> DepthArray<T> {
        DepthArray { buf: Vec::with_capacity(len) }
    }

    fn unallocated() -> DepthArray<T> {
        DepthArray { buf: Vec::new() }
    }

    fn is_allocated(&self, len: usize) -> bool {
        self.buf.capacity() >= len
    }

    /// # Safety
    /// `i < max_depth` and the array is allocated.
    #[inline(always)]
    unsafe fn set(&mut self, i: usize, value: T) {
        // SAFETY: the allocation holds max_depth slots (caller's contract).
        unsafe { self.buf.as_mut_ptr().add(i).write(value) }
    }

    /// # Safety
    /// `i < max_depth` and slot `i` was set.
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

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnerKind {
    Thread,
    Task,
}

/// A recording context: the node buffer and frame stack of one invocation. Allocated once and recycled.
///
/// Fields are private to this module and `fold`, except the four the inlined entry probe (`probe::record_enter`)
/// reads: there a getter would add stack slots to every probed function of an unoptimised build. Only the
/// recorder's own methods write them.
pub(crate) struct Recorder {
    /// Starts at `INITIAL_NODES` (or `cap` if smaller) and doubles on a cold path up to `cap`; a recycled recorder
    /// keeps what it grew to, so steady state allocates nothing while idle recorders in the pool stay small.
    pub(crate) nodes: Vec<Node>,
    /// Slots of the frames currently entered; `max_depth` long.
    stack: DepthArray<u32>,
    pub(crate) depth: usize,
    /// Frames deeper are counted as truncated, not stored (`CALLTIME_max_depth`); the depth arrays' length.
    pub(crate) max_depth: usize,
    /// The node cap (`CALLTIME_NODE_CAP`); also caps the call paths of a folded invocation.
    cap: usize,
    /// `min(cap, nodes.capacity(), fold_at)`: the one bound the hot path checks; past it, a cold path grows the
    /// buffer, folds the invocation or counts the call as truncated.
    pub(crate) limit: usize,
    /// Calls recorded one node each before the invocation folds (`CALLTIME_FOLD_AFTER`, capped by `cap`); 0 once
    /// folded, so the hot path tests one bound in both modes.
    fold_at: usize,
    fold_after: usize,
    pub(crate) folded: bool,
    /// The folded invocation's quiet-within checks (see `consider_quiet_within`): triggers so far, the trigger at
    /// which the next one runs, and the gap after it, doubled by each check that scanned paths and decided nothing.
    pub(super) quiet_checks: u32,
    pub(super) quiet_check_next: u32,
    pub(super) quiet_check_gap: u32,
    /// Call paths of the folded invocation, in order of first entry (parents before children).
    paths: Vec<PathNode>,
    /// The call path each node of `nodes` was folded into.
    slot_path: Vec<u32>,
    /// Per frame of a folded invocation: its call path, and its start when its key has `TIMED_KEY` (else not
    /// written). Allocated at the first fold of this recorder.
    frame_path: DepthArray<u32>,
    frame_start: DepthArray<u64>,
    /// Mean gap between timed calls of a busy path (`CALLTIME_TIME_SAMPLE`).
    time_sample: u64,
    /// xorshift state for the gaps, so periodic call patterns do not bias the sample.
    rng: u64,
    truncated: u64,
    /// Process-unique id of the invocation being recorded, so a future can tell whether its context is current:
    /// this recorder's serial in the high bits and its own count of invocations in the low ones (no counter shared
    /// between threads on the per-invocation path).
    invocation: u64,
    kind: OwnerKind,
    owner: u64,
    name: Option<Arc<str>>,
    /// Calls of retired functions in this invocation, by retirement slot, settled from the thread's counters
    /// (`retire::settle_retired_calls`); and the slots with calls, ascending (in order of retirement), so that what
    /// reads them and `begin` visit only those.
    retired_calls: Vec<u64>,
    retired_slots: Vec<u32>,
    /// Recorded only for the whole-run aggregate (sampled out or past the invocation limit): folded into it at
    /// the root's exit, never written as a tree.
    pub(crate) aggregate_only: bool,
    /// The sampler's entry of this invocation's root (`sampler.rs`), told its cost at the root's exit.
    pub(crate) sampled_by: Option<&'static crate::sampler::Entry>,
    /// Work spawned from this invocation on other threads or tasks (`adopt.rs`): created at its first spawn.
    pub(crate) adoption: Option<Arc<crate::adopt::Adoption>>,
    /// For a part: the whole-run aggregate's call path its first node hangs under (function indices from the
    /// root, spawned frames as their markers, `adopt::PART_THREAD_PATH`), and its own first node's marker.
    pub(crate) adopted_path: Vec<u32>,
    pub(crate) part_marker: u32,
    /// A nested future was entered (`future.rs`, at its first poll): sibling futures polled together may overlap,
    /// so the aggregate takes the union of the children's intervals; without one, calls on one thread nest, and a
    /// call's children cover its time by their sum.
    pub(crate) may_overlap: bool,
    /// Made by `Recorder::small`: counted in the small recorders' budget (`invocation::task_recorder`).
    pub(crate) small: bool,
}

/// Writes one byte in each page of the buffer's spare capacity. The first write to a fresh page faults (a few
/// microseconds in a VM): taken later, each fault would land in the time of the call whose node crosses the page,
/// and a first invocation's recorded calls measured 15 ns more each than a recycled buffer's (docs/truth-bench.md,
/// "Seventh round"). Done while growing, which the calls' times leave out.
fn fault_in_spare(nodes: &mut Vec<Node>) {
    const PAGE: usize = 4096;
    let spare = nodes.spare_capacity_mut();
    let bytes = std::mem::size_of_val(spare);
    let base = spare.as_mut_ptr().cast::<u8>();
    for offset in (0..bytes).step_by(PAGE) {
        // SAFETY: within the spare capacity, which may be written (it stays uninitialised as far as `Vec` knows).
        unsafe { base.add(offset).write_volatile(0) };
    }
}

impl Recorder {
    // Read by the probes and the writer.

    /// True when the root frame of a thread's invocation was just left: the invocation is complete.
    #[inline(always)]
    pub(crate) fn thread_root_left(&self) -> bool {
        self.depth == 0 && self.kind == OwnerKind::Thread
    }

    /// Process-unique id of the invocation being recorded.
    pub(crate) fn invocation(&self) -> u64 {
        self.invocation
    }

    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub(crate) fn kind(&self) -> OwnerKind {
        self.kind
    }

    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Calls counted but not stored (caps and the depth limit).
    pub(crate) fn truncated(&self) -> u64 {
        self.truncated
    }

    pub(crate) fn boxed(config: &Config) -> Box<Recorder> {
        Recorder::with_limits(config.node_cap, config.fold_after, config.time_sample, config.max_depth, INITIAL_NODES)
    }

    /// A recorder whose node buffer starts at `SMALL_NODES` (it grows like any other): about 2 KB resident.
    pub(crate) fn small(config: &Config) -> Box<Recorder> {
        let mut rec = Recorder::with_limits(
            config.node_cap,
            config.fold_after,
            config.time_sample,
            config.max_depth,
            SMALL_NODES,
        );
        rec.small = true;
        rec
    }

    /// The start-up calibration's recorder: never folds by itself (the calibration folds it when it wants to).
    pub(crate) fn for_calibration() -> Box<Recorder> {
        Recorder::with_limits(INITIAL_NODES, 0, 1, DEFAULT_MAX_DEPTH, INITIAL_NODES)
    }

    fn with_limits(cap: usize, fold_after: usize, time_sample: u64, max_depth: usize, initial: usize) -> Box<Recorder> {
        let mut nodes = Vec::with_capacity(cap.min(initial));
        fault_in_spare(&mut nodes);
        Box::new(Recorder {
            nodes,
            stack: DepthArray::new(max_depth),
            depth: 0,
            max_depth,
            cap,
            limit: cap.min(initial),
            fold_after: if fold_after == 0 { usize::MAX } else { fold_after.min(cap) },
            fold_at: usize::MAX,
            folded: false,
            quiet_checks: 0,
            quiet_check_next: 0,
            quiet_check_gap: 1,
            paths: Vec::new(),
            slot_path: Vec::new(),
            frame_path: DepthArray::unallocated(),
            frame_start: DepthArray::unallocated(),
            time_sample,
            rng: 0x9E37_79B9_7F4A_7C15,
            truncated: 0,
            invocation: next_recorder_serial() << INVOCATION_BITS,
            kind: OwnerKind::Thread,
            owner: 0,
            name: None,
            retired_calls: vec![0; INITIAL_RETIRED_COUNTERS],
            retired_slots: Vec::with_capacity(INITIAL_RETIRED_COUNTERS),
            aggregate_only: false,
            sampled_by: None,
            adoption: None,
            adopted_path: Vec::new(),
            part_marker: 0,
            may_overlap: false,
            small: false,
        })
    }

    pub(crate) fn begin(&mut self, kind: OwnerKind, owner: u64, name: Option<Arc<str>>) {
        self.nodes.clear();
        self.depth = 0;
        self.fold_at = self.fold_after;
        self.limit = self.cap.min(self.nodes.capacity()).min(self.fold_at);
        self.folded = false;
        (self.quiet_checks, self.quiet_check_next, self.quiet_check_gap) = (0, 0, 1);
        self.paths.clear();
        self.slot_path.clear();
        self.truncated = 0;
        // Wraps within the recorder's own range: 2^40 invocations of one recorder before an id repeats.
        let count = (self.invocation + 1) & ((1 << INVOCATION_BITS) - 1);
        self.invocation = (self.invocation & !((1 << INVOCATION_BITS) - 1)) | count.max(1);
        self.rng ^= self.invocation.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
        self.kind = kind;
        self.owner = owner;
        self.name = name;
        self.aggregate_only = false;
        self.sampled_by = None;
        self.adoption = None;
        self.adopted_path.clear();
        self.part_marker = 0;
        self.may_overlap = false;
        // Only the slots with calls (a recorder dropped unwritten keeps its counts).
        for &slot in &self.retired_slots {
            self.retired_calls[slot as usize] = 0;
        }
        self.retired_slots.clear();
    }

    /// Calls of retired functions counted in this invocation, by retirement slot (zero past its end).
    pub(crate) fn retired_calls(&self) -> &[u64] {
        &self.retired_calls
    }

    /// Calls of retirement slot `slot`'s function counted in this invocation.
    pub(crate) fn retired_calls_of(&self, slot: usize) -> u64 {
        self.retired_calls.get(slot).copied().unwrap_or(0)
    }

    /// `(slot, calls)` of each retired function with calls counted in this invocation.
    pub(crate) fn retired_pairs(&self) -> impl ExactSizeIterator<Item = (u32, u64)> + Clone + '_ {
        self.retired_slots.iter().map(|&slot| (slot, self.retired_calls[slot as usize]))
    }

    /// Adds `calls` settled calls of retirement slot `slot`'s function (at a change of `CURRENT`). Grows the
    /// counters when a slot is past them, with the thread's context set aside meanwhile, so that the counting
    /// allocator does not count the runtime's allocation in a recorded call.
    pub(crate) fn add_retired_calls(&mut self, slot: usize, calls: u64) {
        if slot >= self.retired_calls.len() || self.retired_slots.len() == self.retired_slots.capacity() {
            let current = crate::invocation::replace_current(std::ptr::null_mut());
            let wanted = (slot + 1).next_power_of_two().max(self.retired_calls.len());
            self.retired_calls.resize(wanted, 0);
            self.retired_slots.reserve(wanted.saturating_sub(self.retired_slots.len()));
            crate::invocation::replace_current(current);
        }
        if self.retired_calls[slot] == 0 {
            // In order of retirement, as the `r` lines always were (a settle visits the counted slots in no order).
            let at = self.retired_slots.partition_point(|&s| (s as usize) < slot);
            self.retired_slots.insert(at, slot as u32);
        }
        self.retired_calls[slot] += calls;
    }

    /// For the calibration: the mean gap between timed calls of a folded invocation.
    pub(crate) fn set_time_sample(&mut self, time_sample: u64) {
        self.time_sample = time_sample.max(1);
    }

    /// For the calibration: (timed calls, their ticks) recorded so far below the root, by node or by call path.
    pub(crate) fn calibration_totals(&self) -> (u64, u64) {
        if self.folded {
            let paths = self.paths.iter().skip(1);
            return paths.fold((0, 0), |(n, t), p| (n + p.timed, t + p.ticks));
        }
        let closed = self.nodes.iter().skip(1).filter(|n| n.end != OPEN);
        closed.fold((0, 0), |(n, t), node| (n + 1, t + node.end.wrapping_sub(node.start)))
    }

    /// Stores a node and enters its frame; `NO_SLOT` (and the call counted as truncated) past the caps.
    #[inline(always)]
    pub(crate) fn push(&mut self, index: u32, mut start: u64) -> u32 {
        let slot = self.nodes.len();
        let depth = self.depth;
        if depth >= self.max_depth || (slot >= self.limit && !self.grow_excluding_pause(&mut start)) {
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
    /// `slot == nodes.len() < limit <= nodes.capacity()` and `depth == self.depth < max_depth`.
    #[inline(always)]
    pub(crate) unsafe fn push_node(&mut self, slot: usize, depth: usize, index: u32, start: u64) {
        // SAFETY: the caller's contract; frame depth - 1 was set when it was entered.
        unsafe {
            let parent = if depth == 0 { NO_PARENT } else { self.stack.get(depth - 1) };
            self.nodes.as_mut_ptr().add(slot).write(Node {
                start,
                end: OPEN,
                index,
                link: parent,
                allocs: 0,
                alloc_bytes: 0,
            });
            self.nodes.set_len(slot + 1);
            self.stack.set(depth, slot as u32);
        }
        self.depth = depth + 1;
    }

    /// [`grow`](Self::grow), whose time (a reallocation: copying and faulting in up to megabytes) is the runtime's,
    /// not the program's: the call being entered (`start`) and every open call start that much later, so no
    /// node's time includes it.
    #[cold]
    #[inline(never)]
    fn grow_excluding_pause(&mut self, start: &mut u64) -> bool {
        let before = now();
        let grown = self.grow();
        let pause = now().saturating_sub(before);
        *start = start.saturating_add(pause);
        self.shift_open_starts(pause);
        grown
    }

    /// Moves the start of every open call recorded as a node, below the first (the root, whose start is the
    /// invocation's), `pause` ticks later: runtime work done while they were open (growing the node buffer,
    /// folding) is left out of their times. The root keeps it, as it keeps the rest of the runtime's cost.
    pub(crate) fn shift_open_starts(&mut self, pause: u64) {
        for depth in 1..self.depth {
            // SAFETY: frames 0..depth were set when they were entered.
            let slot = unsafe { self.stack.get(depth) } as usize;
            if let Some(node) = self.nodes.get_mut(slot) {
                if node.end == OPEN {
                    node.start = node.start.saturating_add(pause);
                }
            }
        }
    }

    /// Doubles the node buffer, up to the cap; false at the cap. Cold: it runs a few times per recorder, ever.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> bool {
        let _paused = crate::alloc::Paused::new();
        let bound = self.cap.min(self.fold_at);
        if self.limit >= bound {
            return false;
        }
        let wanted = (self.nodes.capacity() * 2).max(INITIAL_NODES).min(bound);
        self.nodes.reserve_exact(wanted.saturating_sub(self.nodes.len()));
        fault_in_spare(&mut self.nodes);
        self.limit = self.cap.min(self.nodes.capacity()).min(self.fold_at);
        self.nodes.len() < self.limit
    }

    /// What a spawn made now hangs under: the top frame's node slot, or `PATH_KEY | path` once folded (0, the
    /// root, when no frame is open).
    pub(crate) fn spawn_key(&self) -> u32 {
        if self.depth == 0 {
            return 0;
        }
        // SAFETY: frames 0..depth were set when they were entered.
        let key = unsafe { self.stack.get(self.depth - 1) };
        if !self.folded {
            return key;
        }
        // SAFETY: a folded recorder sets frame_path for every frame it enters (and for every frame at the fold).
        let path = unsafe { self.frame_path.get(self.depth - 1) };
        if path == NO_PATH {
            0
        } else {
            PATH_KEY | path
        }
    }

    /// Appends to `out` the aggregate's call path of the frame `key` names ([`Recorder::spawn_key`]): this
    /// recorder's own `adopted_path`, then the function indices from its first node down to that frame (a part's
    /// first node as its marker). Into a buffer the caller reuses, so that a spawn allocates nothing once it grew.
    pub(crate) fn append_aggregate_path(&self, key: u32, out: &mut Vec<u32>) {
        // The parent of entry `at` (node slot or call path), None at the first one; parents come earlier.
        let by_path = key & PATH_KEY != 0;
        let parent_of = |at: usize| -> Option<usize> {
            let parent = if by_path {
                self.paths.get(at)?.parent as usize
            } else {
                (self.nodes.get(at)?.link & PARENT_MASK) as usize
            };
            (at != 0 && parent < at).then_some(parent)
        };
        let index_of =
            |at: usize| if by_path { self.paths.get(at).map(|p| p.index) } else { self.nodes.get(at).map(|n| n.index) };
        out.extend_from_slice(&self.adopted_path);
        let own_end = out.len();
        let mut at = Some((key & !PATH_KEY) as usize);
        while let Some(index) = at.and_then(index_of) {
            out.push(index);
            at = at.and_then(parent_of);
        }
        out[own_end..].reverse();
        if let (Some(first), true) = (out.get_mut(own_end), self.part_marker != 0) {
            *first = self.part_marker;
        }
    }

    /// Re-enters the frame of an existing node (an async function polled again).
    pub(crate) fn push_frame(&mut self, slot: u32) -> bool {
        if self.depth >= self.max_depth {
            return false;
        }
        if self.folded {
            let path = self.slot_path.get(slot as usize).copied().unwrap_or(NO_PATH);
            self.push_keyed_frame(slot, path);
            return true;
        }
        // SAFETY: depth < max_depth (checked above).
        unsafe { self.stack.set(self.depth, slot) };
        self.depth += 1;
        true
    }

    /// Leaves the frame of `slot`; false when it is not on the stack.
    #[inline(always)]
    pub(crate) fn pop(&mut self, slot: u32, end: u64) -> bool {
        let depth = self.depth;
        // SAFETY: frames 0..depth (depth <= max_depth) were set when entered.
        if depth > 0 && unsafe { self.stack.get(depth - 1) } == slot {
            self.depth = depth - 1;
            true
        } else {
            self.pop_out_of_order(slot, end)
        }
    }

    /// The exit of a call below the root that has its own node, left in order: pops its frame and closes its node
    /// at `end`, true (the caller then flags the node when the thread is unwinding: `note_unwinding_node`).
    /// Otherwise it does nothing and returns false, and the caller takes the general exit (`pop`, `close`, the
    /// root's completion), whose checks are the same.
    #[inline(always)]
    pub(crate) fn leave_inner(&mut self, slot: u32, end: u64) -> bool {
        let depth = self.depth;
        // SAFETY: frames 0..depth (depth <= max_depth) were set when entered. Depth 1 is the root's frame.
        if depth > 1 && unsafe { self.stack.get(depth - 1) } == slot {
            if let Some(node) = self.nodes.get_mut(slot as usize) {
                node.end = end;
                self.depth = depth - 1;
                return true;
            }
        }
        false
    }

    /// After `leave_inner`: flags the node of the frame just left as left by unwinding.
    pub(crate) fn flag_left_by_unwinding(&mut self) {
        // SAFETY: frame `depth` was just left (depth < max_depth) and was set when it was entered.
        let slot = unsafe { self.stack.get(self.depth) };
        if let Some(node) = self.nodes.get_mut(slot as usize) {
            node.link |= FLAG_PANICKED << PARENT_BITS;
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
    pub(crate) fn close(&mut self, slot: u32, end: u64, flags: u32) {
        if let Some(node) = self.nodes.get_mut(slot as usize) {
            node.end = end;
            node.link |= flags << PARENT_BITS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Growing the node buffer is the runtime's work: the call being entered and the open calls below the root
    /// start that much later (the root keeps it); calls already left keep theirs.
    #[test]
    fn growing_the_node_buffer_is_left_out_of_open_calls() {
        crate::clock::clock(); // starts the clock `now` reads
        let mut rec = Recorder::with_limits(1 << 20, 0, 1, DEFAULT_MAX_DEPTH, INITIAL_NODES);
        rec.begin(OwnerKind::Thread, 0, None);
        let root = rec.push(0, 1_000);
        let open = rec.push(1, 2_000);
        let closed = rec.push(2, 3_000);
        assert!(rec.pop(closed, 4_000));
        for start in 5_000..5_000 + (INITIAL_NODES as u64 - 3) {
            let slot = rec.push(3, start);
            assert!(rec.pop(slot, start));
        }
        assert_eq!(rec.nodes.len(), rec.limit, "the next push grows the buffer");
        let grown = rec.push(4, 9_000);
        assert!(rec.limit > INITIAL_NODES);
        let pause = rec.nodes[grown as usize].start - 9_000;
        assert!(pause > 0, "a reallocation takes at least a tick");
        assert_eq!(rec.nodes[root as usize].start, 1_000);
        assert_eq!(rec.nodes[open as usize].start, 2_000 + pause);
        assert_eq!(rec.nodes[closed as usize].start, 3_000);
    }
}

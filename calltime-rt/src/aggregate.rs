//! The whole-run aggregate: every invocation that ran while recording was on (kept, dropped or sampled out) folded
//! into per-call-path statistics, so a service's summary covers the whole run even when most trees are not kept.
//!
//! Folding happens once per invocation, at the root's exit, on the thread that ran it: the invocation's nodes (or
//! call paths, when it folded) are walked once and added to the thread's own path trie (function index children
//! found by a linear scan of siblings; no hashing). The trie sits behind a mutex only the writer also takes, once
//! per snapshot, so the per-invocation lock is uncontended; nothing is done per call. Times go into a log-linear
//! histogram (8 buckets per power of two) for p50 and p99. The writer merges the threads' tries and writes an
//! `aggregate` record every `CALLTIME_AGGREGATE_MS` (1 s) and at exit (docs/trace-format.md).

use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::clock::Scale;
use crate::invocation::lock;
use crate::recorder::{Node, Recorder, OPEN, PARENT_MASK};

/// Sub-buckets per power of two (a bucket is at most 1/8 of its values wide).
const SUB_BUCKETS: u64 = 8;
const SUB_BITS: u32 = 3;
/// Buckets covering every u64: values under 8 have one bucket each, then 8 per power of two.
pub(crate) const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB_BUCKETS as usize;
/// Call paths a thread's trie holds at most; calls on further paths are counted in `untracked_calls` only.
const MAX_PATHS: usize = 1024;
/// The trie's virtual top node: its children are the root functions.
const TOP: u32 = 0;
const NONE: u32 = u32::MAX;

/// Whether invocations are folded into the aggregate (`CALLTIME_AGGREGATE=0` turns it off).
static ENABLED: AtomicBool = AtomicBool::new(true);

pub(crate) fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
}

pub(crate) fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// The log-linear bucket of `value`.
#[inline(always)]
pub(crate) fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    let mantissa = (value >> (exponent - SUB_BITS)) & (SUB_BUCKETS - 1);
    ((exponent - SUB_BITS + 1) as u64 * SUB_BUCKETS + mantissa) as usize
}

/// The smallest value of bucket `bucket` (the inverse of `bucket_of` on bucket bounds).
pub(crate) fn bucket_low(bucket: usize) -> u64 {
    let bucket = bucket as u64;
    if bucket < SUB_BUCKETS {
        return bucket;
    }
    let exponent = bucket / SUB_BUCKETS + u64::from(SUB_BITS) - 1;
    let mantissa = bucket % SUB_BUCKETS;
    (SUB_BUCKETS + mantissa) << (exponent - u64::from(SUB_BITS))
}

/// One call path: every call of function `index` under the same chain of ancestors.
#[derive(Clone)]
struct PathStats {
    index: u32,
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    /// The child `child` found or made last (`NONE` before): tried before the siblings' scan, which took 100-150
    /// instructions under a path of 20-30 children (httparse's `parse_headers_iter_uninit`).
    last_child: u32,
    calls: u64,
    /// Calls whose own duration is in the histogram (a folded invocation's untimed calls are not).
    timed: u64,
    /// Total time: the timed calls' sum plus the estimated time of a folded invocation's other calls.
    total: u64,
    /// What these calls covered of their parents' time: per call, the part of its interval (cut to its parent's)
    /// that its earlier siblings had not covered yet. A path's children's `covers` add up to the union of their
    /// intervals per call of the path, so its self time is `total - covered - children's covers`, as in the trees
    /// (children on other threads, and futures polled together, overlap). Added to the call's own path, which the
    /// fold has at hand, rather than to its parent's.
    covers: u64,
    /// What children cover of this path's time beyond their `covers`: spawned work that ended before its root
    /// returned (the union taken again with the parts' calls), and a folded invocation's children (no single
    /// interval: their summed totals, at most the path's own total in that invocation).
    covered: u64,
    min: u64,
    max: u64,
    histogram: Box<[u32; BUCKETS]>,
}

impl PathStats {
    fn new(index: u32, parent: u32) -> PathStats {
        PathStats {
            index,
            parent,
            first_child: NONE,
            next_sibling: NONE,
            last_child: NONE,
            calls: 0,
            timed: 0,
            total: 0,
            covers: 0,
            covered: 0,
            min: u64::MAX,
            max: 0,
            histogram: Box::new([0; BUCKETS]),
        }
    }

    #[inline(always)]
    fn add_timed(&mut self, duration: u64) {
        self.timed += 1;
        // Wrapping: 2^64 ticks are centuries of calls; a saturating add cost more than the rest of the counters.
        self.total = self.total.wrapping_add(duration);
        self.min = self.min.min(duration);
        self.max = self.max.max(duration);
        // `bucket_of` is below `BUCKETS` for every u64 (tested); the `min` lets the compiler drop the bound check.
        let bucket = &mut self.histogram[bucket_of(duration).min(BUCKETS - 1)];
        *bucket = bucket.saturating_add(1);
    }
}

/// A call-path trie; node 0 is the virtual top.
struct Trie {
    paths: Vec<PathStats>,
    /// Calls on paths past `MAX_PATHS`.
    untracked_calls: u64,
    /// Root invocations folded in.
    invocations: u64,
    /// Calls of retired functions after they retired, by retirement slot: they belong to no path.
    retired: Vec<u64>,
}

impl Trie {
    const fn new() -> Trie {
        Trie { paths: Vec::new(), untracked_calls: 0, invocations: 0, retired: Vec::new() }
    }

    fn clear(&mut self) {
        self.paths.clear();
        self.untracked_calls = 0;
        self.invocations = 0;
        self.retired.clear();
    }

    fn add_retired(&mut self, by_slot: &[u64]) {
        if self.retired.len() < by_slot.len() {
            self.retired.resize(by_slot.len(), 0);
        }
        self.retired.iter_mut().zip(by_slot).for_each(|(sum, &calls)| *sum += calls);
    }

    /// Adds `calls` of retirement slot `slot`'s function (growing by powers of two: slots are handed out as
    /// functions retire, so this rarely allocates).
    fn add_retired_slot(&mut self, slot: usize, calls: u64) {
        if self.retired.len() <= slot {
            self.retired.resize((slot + 1).next_power_of_two(), 0);
        }
        self.retired[slot] += calls;
    }

    /// The child path of `parent` for function `index`, made when new; `NONE` past the path cap (or under `NONE`).
    fn child(&mut self, parent: u32, index: u32) -> u32 {
        if self.paths.is_empty() {
            self.paths.push(PathStats::new(u32::MAX, NONE));
        }
        let Some(parent_stats) = self.paths.get(parent as usize) else { return NONE };
        // Only a child of `parent` is ever its hint, and a path's function names it among its siblings.
        let hint = parent_stats.last_child;
        if self.paths.get(hint as usize).is_some_and(|stats| stats.index == index) {
            return hint;
        }
        let mut child = parent_stats.first_child;
        let mut last = NONE;
        while child != NONE {
            let stats = &self.paths[child as usize];
            if stats.index == index {
                self.paths[parent as usize].last_child = child;
                return child;
            }
            last = child;
            child = stats.next_sibling;
        }
        if self.paths.len() >= MAX_PATHS {
            return NONE;
        }
        let id = self.paths.len() as u32;
        self.paths.push(PathStats::new(index, parent));
        // Appended last, so siblings stay in order of first entry.
        match last {
            NONE => self.paths[parent as usize].first_child = id,
            last => self.paths[last as usize].next_sibling = id,
        }
        self.paths[parent as usize].last_child = id;
        id
    }

    fn stats(&mut self, id: u32) -> Option<&mut PathStats> {
        self.paths.get_mut(id as usize)
    }

    /// Adds `other` (whose ids are in creation order, parents first) into this trie, with times through `convert`
    /// (given a path's buckets from `first` on).
    fn merge(&mut self, other: &Trie, map: &mut Vec<u32>, convert: impl Fn(&[u32], usize, &mut [u32; BUCKETS])) {
        self.untracked_calls += other.untracked_calls;
        self.invocations += other.invocations;
        self.add_retired(&other.retired);
        map.clear();
        map.push(TOP);
        for from in other.paths.iter().skip(1) {
            let parent = map.get(from.parent as usize).copied().unwrap_or(NONE);
            let id = self.child(parent, from.index);
            map.push(id);
            let Some(to) = self.stats(id) else {
                self.untracked_calls += from.calls;
                continue;
            };
            to.calls += from.calls;
            to.timed += from.timed;
            to.total = to.total.saturating_add(from.total);
            to.covers = to.covers.saturating_add(from.covers);
            to.covered = to.covered.saturating_add(from.covered);
            to.min = to.min.min(from.min);
            to.max = to.max.max(from.max);
            // Only the buckets between the path's extremes can be non-empty: a snapshot converts a few dozen buckets
            // a path instead of all of them (it ran every second for every path of every thread).
            if from.timed > 0 {
                let first = bucket_of(from.min).min(BUCKETS - 1);
                let last = bucket_of(from.max).clamp(first, BUCKETS - 1);
                convert(&from.histogram[first..=last], first, &mut to.histogram);
            }
        }
    }
}

/// One thread's trie and the scratch its folds reuse. Aligned so that no two threads' aggregates (whose mutex words
/// their threads write at every fold) share a cache line (128 bytes: adjacent-line prefetching pairs lines).
#[repr(align(128))]
struct ThreadAggregate {
    trie: Trie,
    /// The trie path of each node (or call path) of the invocation being folded.
    path_of: Vec<u32>,
    /// Per call path of a folded invocation: its calls recorded one node each before the fold.
    before_fold: Vec<u64>,
    /// Per node of the last per-call invocation: its shape and path (see `fold_nodes`).
    shape: Vec<ShapeSlot>,
    /// Per node of the invocation being folded: how far its children's intervals cover it so far (see
    /// `fold_nodes`); per call path of a folded one: its time in that invocation.
    covered_until: Vec<u64>,
    /// The intervals of a spawning call's children, its parts' calls included (see `cover_parts`).
    intervals: Vec<(u64, u64)>,
}

/// One slot of the per-call invocations folded on a thread: the function and parent path it last had, in one word
/// (a slot of the same shape matches with one comparison), and its trie path; and the shape it had before that,
/// different (a request parser's slot that holds one of two functions by request, httparse's `parse_token` or
/// `Bytes::peek_ahead`, matches one of the two). A trie path is the one child of its parent path for its function,
/// and a thread's trie loses no path (it is emptied only in a forked child, with the slots), so a match gives the
/// right path whatever the other slots did.
#[derive(Clone, Copy)]
struct ShapeSlot {
    key: u64,
    /// The path of this slot's node in the invocation being folded once the fold has passed it (its children
    /// read it as their parent's).
    path: u32,
    earlier_path: u32,
    earlier_key: u64,
}

impl ShapeSlot {
    /// A slot no node has had yet (no function has index `u32::MAX`).
    const EMPTY: ShapeSlot = ShapeSlot { key: u64::MAX, path: NONE, earlier_path: NONE, earlier_key: u64::MAX };

    #[inline(always)]
    fn key(index: u32, parent_path: u32) -> u64 {
        u64::from(index) << 32 | u64::from(parent_path)
    }
}

type Shared = Arc<Mutex<ThreadAggregate>>;

/// Every thread's aggregate; a thread registers at its first fold (allocation there only) and stays, so the counts
/// of ended threads are kept.
static THREADS: Mutex<Vec<Shared>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: OnceCell<Shared> = const { OnceCell::new() };
}

/// What the fork handler holds (see `control::watch_forks`): the merged trie, the threads' list and every thread's
/// aggregate, locked in the writer's order.
pub(crate) struct ForkLocks {
    _merged: MutexGuard<'static, (Trie, Vec<u32>)>,
    _threads: MutexGuard<'static, Vec<Shared>>,
    each: Vec<MutexGuard<'static, ThreadAggregate>>,
}

pub(crate) fn lock_for_fork() -> ForkLocks {
    let merged = lock(&MERGED);
    let threads = lock(&THREADS);
    // The `Arc`s live in THREADS for good (never removed), so their mutexes outlive the guards.
    let each = threads
        .iter()
        .map(|shared| {
            // SAFETY: see above: the aggregate is never freed, as THREADS keeps it.
            let mutex: &'static Mutex<ThreadAggregate> = unsafe { &*Arc::as_ptr(shared) };
            lock(mutex)
        })
        .collect();
    ForkLocks { _merged: merged, _threads: threads, each }
}

impl ForkLocks {
    /// In the child: every thread's aggregate emptied, so the child's counts are its own.
    pub(crate) fn forget_parent(&mut self) {
        for agg in &mut self.each {
            let retired = agg.trie.retired.len();
            agg.trie.clear();
            agg.trie.retired.resize(retired, 0);
            agg.path_of.clear();
            agg.before_fold.clear();
            agg.shape.clear();
            agg.covered_until.clear();
            agg.intervals.clear();
        }
    }
}

/// This thread's aggregate, registered at its first fold.
fn register() -> Shared {
    // Counters for the first retirement slots now; later ones rarely allocate at a root's exit (`add_retired_slot`).
    let trie = Trie { retired: vec![0; 256], ..Trie::new() };
    let shared = Arc::new(Mutex::new(ThreadAggregate {
        trie,
        // As a recorder's first buffer: a thread whose invocations stay this small never grows them.
        path_of: Vec::with_capacity(256),
        before_fold: Vec::with_capacity(256),
        shape: Vec::with_capacity(256),
        covered_until: Vec::with_capacity(256),
        intervals: Vec::new(),
    }));
    lock(&THREADS).push(shared.clone());
    shared
}

/// Folds a finished invocation into this thread's aggregate (the root's exit, before the tree is kept or dropped).
pub(crate) fn fold(rec: &Recorder) {
    if !enabled() || rec.nodes().is_empty() {
        return;
    }
    // Thread teardown: the invocation is not folded (as it is not written).
    let _ = MINE.try_with(|mine| fold_into(&mut lock(mine.get_or_init(register)), rec));
}

fn fold_into(agg: &mut ThreadAggregate, rec: &Recorder) {
    agg.trie.invocations += 1;
    fold_under(agg, rec, TOP, None);
    if let (Some(adoption), false) = (&rec.adoption, rec.folded) {
        cover_parts(agg, rec, adoption);
    }
}

/// The spawning calls of a per-call invocation whose parts ended before its root returned: their children's union
/// (counted by `fold_nodes` from the calls on the invocation's own thread) taken again with the parts' calls,
/// which ran on other threads and may overlap each other and the spawning call's own children, as the trees
/// count them. Parts that end later (outlived, or attached as the invocation is written) are not in it. Cold: only
/// invocations that spawned, once per spawning call.
#[cold]
#[inline(never)]
fn cover_parts(agg: &mut ThreadAggregate, rec: &Recorder, adoption: &crate::adopt::Adoption) {
    let nodes = rec.nodes();
    let state = lock(&adoption.state);
    let mut spawners: Vec<u32> = state
        .entries
        .iter()
        .filter(|entry| matches!(entry.state, crate::adopt::PartState::Done(_)))
        .map(|entry| entry.key)
        .filter(|&key| (key as usize) < nodes.len())
        .collect();
    spawners.sort_unstable();
    spawners.dedup();
    for spawner in spawners {
        let Some(parent) = nodes.get(spawner as usize).filter(|n| n.end != OPEN) else { continue };
        let (start, end) = (parent.start, parent.end);
        let intervals = &mut agg.intervals;
        intervals.clear();
        let own = nodes.iter().enumerate().skip(spawner as usize + 1);
        intervals.extend(
            own.filter(|(_, n)| n.link & PARENT_MASK == spawner && n.end != OPEN).map(|(_, n)| (n.start, n.end)),
        );
        let inline = union_within(intervals, start, end);
        for entry in state.entries.iter().filter(|entry| entry.key == spawner) {
            if let crate::adopt::PartState::Done(part) = &entry.state {
                part_calls(part, intervals, 0);
            }
        }
        let all = union_within(intervals, start, end);
        let path = agg.shape.get(spawner as usize).map_or(NONE, |slot| slot.path);
        if let Some(stats) = agg.trie.stats(path) {
            stats.covered = stats.covered.saturating_add(all.saturating_sub(inline));
        }
    }
}

/// The intervals of a part's calls (the children of its first node, the closure or future itself), and of the
/// parts it spawned from that first node in turn, which hang under the same call in the trees.
fn part_calls(part: &Recorder, intervals: &mut Vec<(u64, u64)>, nesting: u32) {
    let calls = part.nodes().iter().skip(1).filter(|n| n.link & PARENT_MASK == 0 && n.end != OPEN);
    intervals.extend(calls.map(|n| (n.start, n.end)));
    let Some(adoption) = part.adoption.as_ref().filter(|_| nesting < 8 && !part.folded) else { return };
    let state = lock(&adoption.state);
    for entry in state.entries.iter().filter(|entry| entry.key == 0) {
        if let crate::adopt::PartState::Done(inner) = &entry.state {
            part_calls(inner, intervals, nesting + 1);
        }
    }
}

/// The length of the union of `intervals` cut to `start..end` (sorts them).
fn union_within(intervals: &mut [(u64, u64)], start: u64, end: u64) -> u64 {
    intervals.sort_unstable();
    let (mut covered, mut until) = (0, start);
    for &(from, to) in intervals.iter() {
        let (from, to) = (from.max(until), to.min(end));
        if to > from {
            covered += to - from;
            until = to;
        }
    }
    covered
}

/// Folds a finished part of spawned work (`adopt.rs`) into this thread's aggregate, under the call path of the
/// call that spawned it: its first node on the path of its marker (`adopt::PART_THREAD_PATH`, `PART_TASK_PATH`),
/// its calls below. Where the part ends, once; not counted as an invocation.
pub(crate) fn fold_part(rec: &Recorder) {
    if !enabled() || rec.nodes().is_empty() || rec.adopted_path.is_empty() {
        return;
    }
    // The trie's allocations are the runtime's, not the context's this thread returns to.
    let _paused = crate::alloc::Paused::new();
    let _ = MINE.try_with(|mine| {
        let mut agg = lock(mine.get_or_init(register));
        let mut top = TOP;
        for &index in &rec.adopted_path {
            top = agg.trie.child(top, index);
        }
        // The shape cache keys each slot by its parent's path, so it holds under `top` too.
        fold_under(&mut agg, rec, top, Some(rec.part_marker));
    });
}

/// Folds `rec`'s nodes (or call paths) under trie path `top`, its first node's function as `first` when given.
fn fold_under(agg: &mut ThreadAggregate, rec: &Recorder, top: u32, first: Option<u32>) {
    for (slot, calls) in rec.retired_pairs() {
        agg.trie.add_retired_slot(slot as usize, calls);
    }
    if rec.folded {
        fold_paths(agg, rec, top, first);
    } else {
        let until = rec.may_overlap.then_some(&mut agg.covered_until);
        fold_nodes(&mut agg.trie, &mut agg.shape, until, rec.nodes(), top, first);
    }
}

/// A per-call invocation: each node is one call, its parent an earlier node. `shape` holds, per slot, the function
/// and parent path the slot last had and its path: a request handler's invocations mostly have the same shape, so
/// most nodes find their path with one comparison, and the per-node work is the path's counters and histogram (about
/// 30 instructions; docs/performance.md "Fourth round"). Keyed by the parent's path, not its slot, a slot that
/// differs does not make the later ones miss: invocations that differ in one place (tokei's, a loop of one more
/// or one less call per file) still match after it. Nodes fold under trie path `top`, the first one as function
/// `first` when given (a part of spawned work).
///
/// Each node also adds what it covers of its parent (`PathStats::covers`): nodes come in order of entry, so a
/// parent's children come in order of start, and `covered_until` (per slot) is how far the children so far reach:
/// the union of intervals in one pass (scripts/fold-cost-bench.sh). Without `covered_until` (no nested future, so
/// calls on the one thread nest: a child lies within its parent, after its earlier siblings) a node covers its
/// duration.
fn fold_nodes(
    trie: &mut Trie,
    shape: &mut Vec<ShapeSlot>,
    covered_until: Option<&mut Vec<u64>>,
    nodes: &[Node],
    top: u32,
    first: Option<u32>,
) {
    if shape.len() < nodes.len() {
        shape.resize(nodes.len(), ShapeSlot::EMPTY);
    }
    match covered_until {
        Some(until) => {
            until.clear();
            until.extend(nodes.iter().map(|node| node.start));
            fold_nodes_as::<true>(trie, shape, until, nodes, top, first);
        }
        None => fold_nodes_as::<false>(trie, shape, &mut [], nodes, top, first),
    }
}

/// `fold_nodes`, with `covered_until` (`OVERLAP`) or without: a loop of each kind, testing neither per node. The
/// first node (under `top`, as `first` when given; it covers nothing of a parent in this invocation) before the
/// loop, so the loop does not test for it either.
#[inline(always)]
fn fold_nodes_as<const OVERLAP: bool>(
    trie: &mut Trie,
    shape: &mut [ShapeSlot],
    covered_until: &mut [u64],
    nodes: &[Node],
    top: u32,
    first: Option<u32>,
) {
    let Some(root) = nodes.first() else { return };
    let index = first.unwrap_or(root.index);
    let path = shape_path(trie, &mut shape[0], index, top);
    let mut run = Run::on(path);
    run.add_node(trie, root, 0);
    for (slot, node) in nodes.iter().enumerate().skip(1) {
        let parent = (node.link & PARENT_MASK) as usize;
        // Parents come before their children: the parent's slot already has this invocation's path.
        let parent_path = match shape.get(parent) {
            Some(p) if parent < slot => p.path,
            _ => NONE,
        };
        let path = shape_path(trie, &mut shape[slot], node.index, parent_path);
        if path != run.path {
            run.add_to(trie);
            run = Run::on(path);
        }
        let covers = match OVERLAP {
            false => node.end.saturating_sub(node.start),
            true if node.end == OPEN => 0,
            true => cover_parent(covered_until, nodes, parent, node),
        };
        run.add_node(trie, node, covers);
    }
    run.add_to(trie);
}

/// The trie path of a slot whose node is function `index` under `parent_path`: the slot's last one when it had
/// that shape (one comparison), else found (`new_shape_slot`).
#[inline(always)]
fn shape_path(trie: &mut Trie, slot: &mut ShapeSlot, index: u32, parent_path: u32) -> u32 {
    let key = ShapeSlot::key(index, parent_path);
    if slot.key == key {
        slot.path
    } else {
        new_shape_slot(trie, slot, key, index, parent_path)
    }
}

/// The counters of consecutive nodes on one trie path (a loop's calls under one parent), added to the path at once
/// when the path changes: a path's counters in memory are otherwise a chain of loads and stores, node after node
/// (the recording bench's 4,000 nodes of one path folded at about 4 ns a node; docs/performance.md, "Tenth
/// round"). The histogram is counted in place.
struct Run {
    path: u32,
    calls: u64,
    /// Calls still open (not timed): the timed ones are the others.
    open: u64,
    total: u64,
    min: u64,
    max: u64,
    covers: u64,
}

impl Run {
    #[inline(always)]
    fn on(path: u32) -> Run {
        Run { path, calls: 0, open: 0, total: 0, min: u64::MAX, max: 0, covers: 0 }
    }

    /// One node of the run's path, which covers `covers` of its parent.
    #[inline(always)]
    fn add_node(&mut self, trie: &mut Trie, node: &Node, covers: u64) {
        self.calls += 1;
        if node.end == OPEN {
            self.open += 1;
            return;
        }
        let duration = node.end.saturating_sub(node.start);
        // Wrapping, as `PathStats::add_timed`.
        self.total = self.total.wrapping_add(duration);
        self.min = self.min.min(duration);
        self.max = self.max.max(duration);
        self.covers += covers;
        if let Some(stats) = trie.paths.get_mut(self.path as usize) {
            // `bucket_of` is below `BUCKETS` for every u64 (tested); the `min` drops the bound check.
            let count = &mut stats.histogram[bucket_of(duration).min(BUCKETS - 1)];
            *count = count.saturating_add(1);
        }
    }

    /// Adds the run to its path (to the untracked calls past the path cap).
    #[inline(always)]
    fn add_to(&self, trie: &mut Trie) {
        let Some(stats) = trie.paths.get_mut(self.path as usize) else {
            trie.untracked_calls += self.calls;
            return;
        };
        stats.calls += self.calls;
        stats.timed += self.calls - self.open;
        stats.total = stats.total.wrapping_add(self.total);
        stats.min = stats.min.min(self.min);
        stats.max = stats.max.max(self.max);
        stats.covers += self.covers;
    }
}

/// The part of `node`'s interval its parent (slot `parent`; none for the first node) has not covered yet, cut to
/// the parent's end; the parent's reach moves to its end.
#[inline(always)]
fn cover_parent(until: &mut [u64], nodes: &[Node], parent: usize, node: &Node) -> u64 {
    let (Some(reached), Some(parent_node)) = (until.get_mut(parent), nodes.get(parent)) else { return 0 };
    let to = node.end.min(parent_node.end);
    let from = node.start.max(*reached);
    if to <= from {
        return 0;
    }
    *reached = to;
    to - from
}

/// A slot that differs from the last invocation's: its earlier shape, or the path found (or made) for it; the
/// last invocation's becomes the earlier one.
#[cold]
#[inline(never)]
fn new_shape_slot(trie: &mut Trie, known: &mut ShapeSlot, key: u64, index: u32, parent_path: u32) -> u32 {
    let path = if known.earlier_key == key {
        known.earlier_path
    } else if parent_path == NONE {
        NONE
    } else {
        trie.child(parent_path, index)
    };
    *known = ShapeSlot { key, path, earlier_path: known.path, earlier_key: known.key };
    path
}

/// A folded invocation: exact counts per call path; the calls recorded one node each before the fold go into the
/// histogram with their own durations, the later ones into the total only, as the trace's unbiased estimate.
fn fold_paths(agg: &mut ThreadAggregate, rec: &Recorder, top: u32, first: Option<u32>) {
    let (trie, path_of, before_fold) = (&mut agg.trie, &mut agg.path_of, &mut agg.before_fold);
    // Each path's time in this invocation, for what its children cover of it.
    let own_total = &mut agg.covered_until;
    own_total.clear();
    own_total.resize(rec.paths().len(), 0);
    path_of.clear();
    for path in rec.paths() {
        let (parent, index) = match path_of.is_empty() {
            true => (top, first.unwrap_or(path.index)),
            false => (path_of.get(path.parent as usize).copied().unwrap_or(NONE), path.index),
        };
        path_of.push(if parent == NONE { NONE } else { trie.child(parent, index) });
    }
    before_fold.clear();
    before_fold.resize(rec.paths().len(), 0);
    for (slot, node) in rec.nodes().iter().enumerate() {
        let Some(&path) = rec.slot_path().get(slot) else { continue };
        if let Some(count) = before_fold.get_mut(path as usize) {
            *count += 1;
        }
        let id = path_of.get(path as usize).copied().unwrap_or(NONE);
        if let (Some(stats), false) = (trie.stats(id), node.end == OPEN) {
            let duration = node.end.saturating_sub(node.start);
            stats.add_timed(duration);
            own_total[path as usize] += duration;
        }
    }
    for (at, path) in rec.paths().iter().enumerate() {
        let Some(stats) = trie.stats(path_of[at]) else {
            trie.untracked_calls += path.calls;
            continue;
        };
        stats.calls += path.calls;
        let after_fold = path.calls.saturating_sub(before_fold[at]);
        let sampled = path.timed.saturating_sub(path.exact_calls);
        let estimated = if sampled > 0 {
            let later = u128::from(after_fold.saturating_sub(path.exact_calls));
            let sampled_ticks = u128::from(path.ticks.saturating_sub(path.exact_ticks));
            path.exact_ticks + (later * sampled_ticks / u128::from(sampled)) as u64
        } else if path.exact_calls > 0 {
            (u128::from(path.exact_ticks) * u128::from(after_fold) / u128::from(path.exact_calls)) as u64
        } else {
            0
        };
        stats.total = stats.total.saturating_add(estimated);
        own_total[at] = own_total[at].saturating_add(estimated);
    }
    // Children's summed totals per path, at most the path's own.
    before_fold.fill(0);
    for (at, path) in rec.paths().iter().enumerate().skip(1) {
        if let Some(sum) = before_fold.get_mut(path.parent as usize).filter(|_| (path.parent as usize) < at) {
            *sum = sum.saturating_add(own_total[at]);
        }
    }
    for (at, &children) in before_fold.iter().enumerate() {
        if let Some(stats) = trie.stats(path_of[at]) {
            stats.covered = stats.covered.saturating_add(children.min(own_total[at]));
        }
    }
}

/// The writer's merged trie (rebuilt at each snapshot) and its id map.
static MERGED: Mutex<(Trie, Vec<u32>)> = Mutex::new((Trie::new(), Vec::new()));

/// Appends an `aggregate` record (docs/trace-format.md) of every thread's trie so far, times in ns through `scale`;
/// nothing when no invocation was folded.
/// `dropped_cap`: trees the hourly byte budget dropped so far (carried on the record's first line).
pub(crate) fn write_snapshot(
    out: &mut String,
    scale: Scale,
    at_ns: u64,
    dropped_cap: u64,
    push: impl Fn(&mut String, &str, &[u64]),
) {
    let mut merged = lock(&MERGED);
    let (trie, map) = &mut *merged;
    trie.clear();
    let threads: Vec<Shared> = lock(&THREADS).clone();
    let to_ns = |from: &[u32], first: usize, to: &mut [u32; BUCKETS]| {
        for (bucket, &count) in (first..).zip(from) {
            if count > 0 {
                // The bucket's middle, in ns, names its ns bucket: at most one bucket width off.
                let low = bucket_low(bucket);
                let middle = low + (bucket_low(bucket + 1).saturating_sub(low)) / 2;
                let target = &mut to[bucket_of(scale.span(middle))];
                *target = target.saturating_add(count);
            }
        }
    };
    for thread in &threads {
        trie.merge(&lock(thread).trie, map, to_ns);
    }
    if trie.invocations == 0 {
        return;
    }
    let count = trie.paths.len().saturating_sub(1) as u64;
    let retired = trie.retired.iter().enumerate().skip(1).filter(|&(_, &calls)| calls > 0);
    let retired_lines = retired.clone().count() as u64;
    push(out, "aggregate", &[at_ns, trie.invocations, count, trie.untracked_calls, dropped_cap, retired_lines]);
    // Preorder, children in order of first entry.
    let mut walk: Vec<(u32, u64)> = Vec::new();
    let mut child = trie.paths.first().map_or(NONE, |top| top.first_child);
    push_siblings(&trie.paths, &mut walk, child, 0);
    while let Some((id, depth)) = walk.pop() {
        let p = &trie.paths[id as usize];
        let (min, max) = if p.timed == 0 { (0, 0) } else { (scale.span(p.min), scale.span(p.max)) };
        // Self time by the union of the children's intervals, before its path's `g` line (older readers skip it).
        let mut covered = p.covered;
        let mut kid = p.first_child;
        while kid != NONE {
            let c = &trie.paths[kid as usize];
            covered = covered.saturating_add(c.covers);
            kid = c.next_sibling;
        }
        push(out, "gs", &[scale.span(p.total.saturating_sub(covered))]);
        push(out, "g", &[depth, u64::from(p.index), p.calls, p.timed, scale.span(p.total), min, max]);
        // The histogram's non-empty buckets as `bucket:count`, on the same line.
        out.pop();
        for (bucket, &n) in p.histogram.iter().enumerate().filter(|(_, &n)| n > 0) {
            out.push(' ');
            push_decimal(out, bucket as u64);
            out.push(':');
            push_decimal(out, u64::from(n));
        }
        out.push('\n');
        child = p.first_child;
        push_siblings(&trie.paths, &mut walk, child, depth + 1);
    }
    for (slot, &calls) in retired {
        push(out, "gr", &[u64::from(crate::retire::slot_index(slot)), calls]);
    }
}

/// Appends `value` in decimal without allocating (`to_string` per bucket was most of a snapshot's cost).
fn push_decimal(out: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    digits[at..].iter().for_each(|&d| out.push(char::from(d)));
}

/// Pushes `first` and its next siblings for a preorder walk, first on top.
fn push_siblings(paths: &[PathStats], walk: &mut Vec<(u32, u64)>, first: u32, depth: u64) {
    let at = walk.len();
    let mut child = first;
    while child != NONE {
        walk.push((child, depth));
        child = paths[child as usize].next_sibling;
    }
    walk[at..].reverse();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_log_linear_and_invert() {
        for value in [0u64, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 123_456_789, u64::MAX] {
            let bucket = bucket_of(value);
            assert!(bucket < BUCKETS, "{value}");
            assert!(bucket_low(bucket) <= value, "{value}");
            if bucket + 1 < BUCKETS {
                assert!(bucket_low(bucket + 1) > value, "{value}");
            }
        }
        // A bucket is at most an eighth of its values wide.
        for bucket in 8..BUCKETS - 1 {
            let (low, high) = (bucket_low(bucket), bucket_low(bucket + 1));
            assert!(high > low && (high - low) * 8 <= low, "{bucket}");
        }
    }

    /// A per-call node: function `index` under slot `parent`, `duration` ticks long (`OPEN`: never left).
    fn node(index: u32, parent: u32, duration: u64) -> Node {
        let end = if duration == OPEN { OPEN } else { 100 + duration };
        Node { start: 100, end, index, link: parent, allocs: 0, alloc_bytes: 0 }
    }

    /// (path of function indices, calls, timed, total) for every path, in creation order.
    fn paths_of(trie: &Trie) -> Vec<(Vec<u32>, u64, u64, u64)> {
        let path = |mut id: u32| {
            let mut indices = Vec::new();
            while id != TOP && id != NONE {
                indices.push(trie.paths[id as usize].index);
                id = trie.paths[id as usize].parent;
            }
            indices.reverse();
            indices
        };
        (1..trie.paths.len() as u32)
            .map(|id| {
                let p = &trie.paths[id as usize];
                (path(id), p.calls, p.timed, p.total)
            })
            .collect()
    }

    #[test]
    fn invocations_of_changing_shapes_fold_into_their_own_paths() {
        // Same shape twice, then a different child at slot 2, then a longer and a shorter invocation, then one
        // that differs early and matches later: the shape cache must never put a node on another node's path.
        let invocations = [
            vec![node(0, PARENT_MASK, 50), node(1, 0, 10), node(2, 0, 20)],
            vec![node(0, PARENT_MASK, 60), node(1, 0, 11), node(2, 0, 21)],
            vec![node(0, PARENT_MASK, 70), node(1, 0, 12), node(3, 1, 5), node(2, 0, OPEN)],
            vec![node(0, PARENT_MASK, 80), node(1, 0, 13), node(3, 1, 6), node(2, 0, 22), node(1, 3, 1)],
            vec![node(0, PARENT_MASK, 90)],
            vec![node(0, PARENT_MASK, 40), node(2, 0, 23)],
            // A slot that differs (3 at slot 1, where 1 was), then slots that match the earlier invocations again.
            vec![node(0, PARENT_MASK, 30), node(3, 0, 7), node(1, 0, 14), node(2, 0, 24), node(1, 3, 2)],
        ];
        let mut trie = Trie::new();
        let mut shape = Vec::new();
        let mut covered_until = Vec::new();
        for nodes in &invocations {
            fold_nodes(&mut trie, &mut shape, Some(&mut covered_until), nodes, TOP, None);
        }
        let expected: Vec<(Vec<u32>, u64, u64, u64)> = vec![
            (vec![0], 7, 7, 50 + 60 + 70 + 80 + 90 + 40 + 30),
            (vec![0, 1], 5, 5, 10 + 11 + 12 + 13 + 14),
            (vec![0, 2], 6, 5, 20 + 21 + 22 + 23 + 24),
            (vec![0, 1, 3], 2, 2, 5 + 6),
            (vec![0, 2, 1], 2, 2, 1 + 2),
            (vec![0, 3], 1, 1, 7),
        ];
        assert_eq!(paths_of(&trie), expected);
        assert_eq!(trie.untracked_calls, 0);
    }

    /// What a path should hold after a fold, computed the plain way: each node's path by its ancestors' functions
    /// (no trie, no shape cache).
    #[derive(Debug, Default, PartialEq)]
    struct Expected {
        calls: u64,
        timed: u64,
        total: u64,
        covers: u64,
        min: u64,
        max: u64,
        histogram: std::collections::BTreeMap<usize, u32>,
    }

    fn expected_fold(expected: &mut std::collections::BTreeMap<Vec<u32>, Expected>, nodes: &[Node], overlap: bool) {
        let mut paths: Vec<Vec<u32>> = Vec::new();
        let mut reached: Vec<u64> = nodes.iter().map(|n| n.start).collect();
        for (slot, node) in nodes.iter().enumerate() {
            let parent = (node.link & PARENT_MASK) as usize;
            let mut path = if slot == 0 { Vec::new() } else { paths[parent].clone() };
            path.push(node.index);
            paths.push(path.clone());
            let e = expected.entry(path).or_insert_with(|| Expected { min: u64::MAX, ..Expected::default() });
            e.calls += 1;
            if node.end == OPEN {
                continue;
            }
            let duration = node.end - node.start;
            e.timed += 1;
            e.total += duration;
            e.min = e.min.min(duration);
            e.max = e.max.max(duration);
            *e.histogram.entry(bucket_of(duration)).or_default() += 1;
            if slot == 0 {
                continue;
            }
            if !overlap {
                e.covers += duration;
                continue;
            }
            let (to, from) = (node.end.min(nodes[parent].end), node.start.max(reached[parent]));
            if to > from {
                e.covers += to - from;
                reached[parent] = to;
            }
        }
    }

    /// A generated mix of per-call invocations (shapes that repeat, alternate, grow, shrink and differ anywhere;
    /// open calls; overlapping children) folds into exactly the aggregate that each node's path, found the plain
    /// way, gives: the shape cache, its earlier shapes and the trie's child hints never move a call to another path.
    #[test]
    fn a_generated_mix_of_invocations_folds_as_the_plain_way_does() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut random = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        // A few base shapes (parent slot, function) that invocations mostly follow, as a request parser's do.
        let bases: Vec<Vec<(u32, u32)>> = (0..6)
            .map(|_| {
                let len = 1 + random(24) as usize;
                (0..len)
                    .map(|slot| (if slot == 0 { 0 } else { random(slot as u64) as u32 }, random(5) as u32))
                    .collect()
            })
            .collect();
        for overlap in [false, true] {
            let (mut trie, mut shape, mut until) = (Trie::new(), Vec::new(), Vec::new());
            let mut expected = std::collections::BTreeMap::new();
            for _ in 0..3000 {
                let mut links = bases[random(bases.len() as u64) as usize].clone();
                match random(6) {
                    0 => links.truncate(1 + random(links.len() as u64) as usize),
                    1 => {
                        let slot = random(links.len() as u64) as usize;
                        links[slot].1 = random(5) as u32;
                    }
                    2 => links.push((random(links.len() as u64) as u32, random(5) as u32)),
                    _ => {}
                }
                // Times: each node within its parent, children after one another (or overlapping, as futures polled
                // together may), some never left.
                let mut nodes: Vec<Node> = Vec::new();
                let mut next_start = vec![0u64; links.len()];
                for (slot, &(parent, index)) in links.iter().enumerate() {
                    let (start, end) = if slot == 0 {
                        (1000, 1000 + 5000 + random(100_000))
                    } else {
                        let p = parent as usize;
                        let start = next_start[p].max(nodes[p].start) + random(50);
                        let start = if overlap && random(3) == 0 { start.saturating_sub(random(200)) } else { start };
                        let long = random(4) == 0;
                        (start, start + 1 + random(if long { 1 << 20 } else { 300 }))
                    };
                    let link = if slot == 0 { PARENT_MASK } else { parent };
                    let end = if random(40) == 0 { OPEN } else { end };
                    nodes.push(Node { start, end, index, link, allocs: 0, alloc_bytes: 0 });
                    if slot > 0 {
                        let p = parent as usize;
                        next_start[p] = next_start[p].max(if end == OPEN { start } else { end });
                    }
                    next_start[slot] = start;
                }
                fold_nodes(&mut trie, &mut shape, overlap.then_some(&mut until), &nodes, TOP, None);
                expected_fold(&mut expected, &nodes, overlap);
            }
            assert_eq!(trie.untracked_calls, 0, "the mix stays under the path cap");
            let path = |mut id: u32| {
                let mut indices = Vec::new();
                while id != TOP {
                    indices.push(trie.paths[id as usize].index);
                    id = trie.paths[id as usize].parent;
                }
                indices.reverse();
                indices
            };
            let folded: std::collections::BTreeMap<Vec<u32>, Expected> = (1..trie.paths.len() as u32)
                .map(|id| {
                    let p = &trie.paths[id as usize];
                    let histogram = p.histogram.iter().enumerate().filter(|(_, &n)| n > 0).map(|(b, &n)| (b, n));
                    let stats = Expected {
                        calls: p.calls,
                        timed: p.timed,
                        total: p.total,
                        covers: p.covers,
                        min: p.min,
                        max: p.max,
                        histogram: histogram.collect(),
                    };
                    (path(id), stats)
                })
                .collect();
            assert!(folded.len() > 50, "the mix makes many paths ({})", folded.len());
            assert_eq!(folded, expected, "overlap {overlap}");
        }
    }

    #[test]
    fn children_cover_their_parent_by_the_union_of_their_intervals() {
        // Two children that overlap (futures polled together), one after them, one that outlasts its parent, and a
        // grandchild: self time is the parent's interval less the union of its children's, cut to it.
        let at = |index, parent, start, end| Node { start, end, index, link: parent, allocs: 0, alloc_bytes: 0 };
        let nodes = [
            at(0, PARENT_MASK, 0, 100),
            at(1, 0, 10, 40),
            at(3, 1, 15, 20),
            at(2, 0, 30, 60),
            at(4, 0, 70, 80),
            at(5, 0, 90, 130),
        ];
        let (mut trie, mut shape, mut until) = (Trie::new(), Vec::new(), Vec::new());
        fold_nodes(&mut trie, &mut shape, Some(&mut until), &nodes, TOP, None);
        // What a path's children cover of it: their `covers` (and its own `covered`, 0 here).
        let covered = |trie: &Trie, id: usize| -> u64 {
            let children = trie.paths.iter().filter(|c| c.parent as usize == id);
            trie.paths[id].covered + children.map(|c| c.covers).sum::<u64>()
        };
        let all: Vec<(u32, u64, u64)> =
            (1..trie.paths.len()).map(|id| (trie.paths[id].index, trie.paths[id].total, covered(&trie, id))).collect();
        assert_eq!(all, [(0, 100, 50 + 10 + 10), (1, 30, 5), (3, 5, 0), (2, 30, 0), (4, 10, 0), (5, 40, 0)]);
        // Summed over invocations: the same one again doubles it.
        fold_nodes(&mut trie, &mut shape, Some(&mut until), &nodes, TOP, None);
        assert_eq!(covered(&trie, 1), 140);
        let mut intervals = [(30, 60), (10, 40), (70, 80), (90, 130)];
        assert_eq!(union_within(&mut intervals, 0, 100), 70);
    }

    #[test]
    fn decimals_are_written_without_allocating() {
        let mut out = String::new();
        for value in [0, 7, 10, 495, u64::MAX] {
            push_decimal(&mut out, value);
            out.push(' ');
        }
        assert_eq!(out, "0 7 10 495 18446744073709551615 ");
    }

    #[test]
    fn tries_merge_by_path() {
        let mut a = Trie::new();
        let root = a.child(TOP, 5);
        let leaf = a.child(root, 7);
        a.stats(root).unwrap().add_timed(100);
        a.stats(leaf).unwrap().calls += 2;
        a.invocations = 1;
        let mut b = Trie::new();
        let b_root = b.child(TOP, 5);
        let other_leaf = b.child(b_root, 9);
        let same_root = b.child(TOP, 5);
        b.stats(other_leaf).unwrap().calls = 1;
        b.stats(same_root).unwrap().add_timed(300);
        let mut merged = Trie::new();
        let mut map = Vec::new();
        let copy = |from: &[u32], first: usize, to: &mut [u32; BUCKETS]| {
            to[first..].iter_mut().zip(from).for_each(|(t, f)| *t += f)
        };
        merged.merge(&a, &mut map, copy);
        merged.merge(&b, &mut map, copy);
        let root = merged.child(TOP, 5);
        let stats = &merged.paths[root as usize];
        assert_eq!((stats.timed, stats.total, stats.min, stats.max), (2, 400, 100, 300));
        let children: Vec<u32> = [merged.child(root, 7), merged.child(root, 9)].into();
        assert_eq!(children, [2, 3], "no path was added twice");
        assert_eq!(merged.paths.len(), 4);
    }
}

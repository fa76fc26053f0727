//! Per-thread outboxes: how a thread hands small finished invocations to the writer without touching anything
//! shared with other threads. Each thread that enters a root claims an outbox: a single-producer ring of nodes
//! (the thread copies a finished invocation's nodes in and publishes them with one release store; whoever holds the
//! writer's sink reads them out and advances the tail) and the thread's counters (written by the thread alone, with
//! plain stores, summed by `crate::stats`). Outboxes are registered once (a cold path, the thread's first root) and
//! never freed: an ended thread's outbox is drained by the writer, the panic hook or the exit handler like any other,
//! then reused by a later thread.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::{Arc, Mutex};

use crate::invocation::lock;
use crate::recorder::{Node, Recorder};

/// Counters of one outbox (see `crate::Stats`): written by the owning thread only, read by anyone.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    Seen,
    SampledOut,
    DroppedLimit,
    DroppedQueueFull,
    DroppedNoBuffer,
    LeftOutFast,
    LeftOutUnselected,
}
const COUNTERS: usize = 7;

/// Who recorded the invocations in an outbox: set by the claiming thread while the ring is empty.
struct Owner {
    thread: u64,
    name: Option<Arc<str>>,
}

/// Aligned so that no two threads' outboxes share a cache line (the owner writes its counters and head on every
/// invocation).
#[repr(align(128))]
pub(crate) struct Outbox {
    /// A power-of-two ring of records: a header (see `header`) followed by the invocation's nodes.
    slots: Box<[UnsafeCell<Node>]>,
    mask: usize,
    /// Slots published by the owner (only the owner stores it).
    head: AtomicUsize,
    /// The position that maps to the ring's first slot (slot of position p: `(p - base) & mask`). Only the owner
    /// stores it, when it finds the ring empty (the consumer reads no slot then), before publishing the record that
    /// starts there: so while the writer keeps up, records start again at the first slot and a thread touches only
    /// the ring's first pages, where a ring walked round faulted in all of its 80 (320 KB), once per thread
    /// (docs/performance.md, "Thirteenth round").
    base: AtomicUsize,
    /// Slots consumed by the sink's holder (only it stores it, under the sink's lock): on a line of its own, so the
    /// writer's stores do not take the owner's counters and head away from it.
    tail: Padded<AtomicUsize>,
    in_use: AtomicBool,
    owner: UnsafeCell<Owner>,
    counters: [AtomicU64; COUNTERS],
    /// The earliest and latest root start (ticks) of the invocations of this outbox's threads.
    first_start: AtomicU64,
    last_start: AtomicU64,
}

/// A value alone on its cache lines (128 bytes: adjacent-line prefetching pairs lines).
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

// SAFETY: the ring's slots between tail and head are written only before their release by the owner's head store
// and read only after the consumer's acquire load of it; slots past head are written only by the owner, and read
// by nobody until published. `owner` is written only while the outbox is claimed and empty (no reader).
unsafe impl Sync for Outbox {}

/// Every outbox ever claimed; locked only to claim one (a thread's first root), to walk them (a drain) and to sum
/// the counters (`crate::stats`).
static OUTBOXES: Mutex<Vec<&'static Outbox>> = Mutex::new(Vec::new());

/// The outboxes' list, locked by the fork handler (see `control::watch_forks`).
pub(crate) fn lock_for_fork() -> std::sync::MutexGuard<'static, Vec<&'static Outbox>> {
    lock(&OUTBOXES)
}

/// A header slot: `index` holds the node count, `link` the count of retired-call entries that follow the nodes
/// (`index` the retirement slot, `start` the calls) and `start` the truncated calls of the invocation; or, for an
/// invocation too big to copy, `end` holds its recorder (`Box::into_raw`) and nothing follows.
fn header(nodes: usize, retired: usize, truncated: u64, recorder: *mut Recorder) -> Node {
    Node {
        start: truncated,
        end: recorder as usize as u64,
        index: nodes as u32,
        link: retired as u32,
        allocs: 0,
        alloc_bytes: 0,
    }
}

/// One finished invocation read out of an outbox.
pub(crate) enum Entry<'a> {
    /// A small invocation: its nodes, its calls of retired functions (see `header`) and its truncated calls.
    Nodes { nodes: &'a [Node], retired: &'a [Node], truncated: u64 },
    /// A big invocation, handed over in its recorder (to be given back once written).
    Recorder(Box<Recorder>),
}

/// `capacity` (non-zero) empty slots, from zeroed memory: a ring of thousands of nodes (320 KB by default) is then
/// fresh pages from the system, faulted in as records reach them, where filling it wrote every page on the thread's
/// first root entry (0.33 M instructions and 80 page faults in a one-invocation run; docs/truth-bench.md, "Eighth
/// round").
fn zeroed_slots(capacity: usize) -> Box<[UnsafeCell<Node>]> {
    let layout = std::alloc::Layout::array::<UnsafeCell<Node>>(capacity).expect("an outbox of a few MB at most");
    // SAFETY: the layout is non-zero in size (capacity >= 8); a node of zeros is a valid (empty) node, as every
    // field is an integer; the pointer came from the global allocator with this layout, as `Box` frees it.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<UnsafeCell<Node>>();
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, capacity))
    }
}

impl Outbox {
    fn new(capacity: usize) -> Outbox {
        Outbox {
            slots: zeroed_slots(capacity),
            mask: capacity - 1,
            head: AtomicUsize::new(0),
            base: AtomicUsize::new(0),
            tail: Padded(AtomicUsize::new(0)),
            in_use: AtomicBool::new(true),
            owner: UnsafeCell::new(Owner { thread: 0, name: None }),
            counters: Default::default(),
            first_start: AtomicU64::new(u64::MAX),
            last_start: AtomicU64::new(0),
        }
    }

    /// In a child forked without exec, under the sink's lock: forgets the records the parent had not written (they
    /// are the parent's; a big one's recorder is leaked) and its counters, so the child counts only its own.
    pub(crate) fn forget_parent(&self) {
        self.tail.store(self.head.load(Relaxed), Relaxed);
        self.counters.iter().for_each(|c| c.store(0, Relaxed));
        self.first_start.store(u64::MAX, Relaxed);
        self.last_start.store(0, Relaxed);
    }

    /// Largest invocation (in nodes) that goes through the outbox; bigger ones are handed over in their recorder.
    pub(crate) fn max_nodes(&self) -> usize {
        self.slots.len() / 4
    }

    /// Counts one event; only the owning thread calls it (a load and a store, no read-modify-write).
    #[inline(always)]
    pub(crate) fn count(&self, counter: Counter) {
        let c = &self.counters[counter as usize];
        c.store(c.load(Relaxed) + 1, Relaxed);
    }

    /// Notes a root's start for the run's time span; only the owning thread calls it (plain stores).
    #[inline(always)]
    pub(crate) fn note_root_start(&self, start: u64) {
        if start < self.first_start.load(Relaxed) {
            self.first_start.store(start, Relaxed);
        }
        if start > self.last_start.load(Relaxed) {
            self.last_start.store(start, Relaxed);
        }
    }

    /// Copies a finished invocation in; `None` (nothing published) when the ring has no room, else the slots in
    /// use before and after, for the caller's wake-up decision. Only the owning thread calls it.
    /// `retired_calls`: `(retirement slot, calls)` of the retired functions the invocation counted calls of.
    pub(crate) fn push(
        &self,
        nodes: &[Node],
        retired_calls: impl ExactSizeIterator<Item = (u32, u64)>,
        truncated: u64,
    ) -> Option<(usize, usize)> {
        self.publish(nodes, retired_calls, truncated, std::ptr::null_mut())
    }

    /// Hands over a big invocation in its recorder, in order with the small ones; the recorder back when the
    /// ring has no room. Only the owning thread calls it.
    pub(crate) fn push_recorder(&self, rec: Box<Recorder>) -> Result<(usize, usize), Box<Recorder>> {
        let rec = Box::into_raw(rec);
        self.publish(&[], std::iter::empty(), 0, rec).ok_or_else(|| {
            // SAFETY: the pointer came from Box::into_raw just above and was not published.
            unsafe { Box::from_raw(rec) }
        })
    }

    /// Writes the nodes and retired-call entries past the head, then their header, and publishes them; the slots
    /// in use before and after, or `None` (and nothing published) when they may not fit.
    fn publish(
        &self,
        nodes: &[Node],
        retired_calls: impl ExactSizeIterator<Item = (u32, u64)>,
        truncated: u64,
        rec: *mut Recorder,
    ) -> Option<(usize, usize)> {
        let head = self.head.load(Relaxed);
        let used = head.wrapping_sub(self.tail.load(Acquire));
        if used + 1 + nodes.len() + retired_calls.len() > self.slots.len() {
            return None;
        }
        // Empty: the consumer has read every slot and reads none until the head store below, which publishes the
        // new base with it (see `base`).
        let mut base = self.base.load(Relaxed);
        if used == 0 && base != head {
            base = head;
            self.base.store(base, Relaxed);
        }
        // SAFETY: the slots from head + 1 on are within the bound checked above, past the published head: nobody
        // reads them until the store below publishes them.
        unsafe { self.copy_in(self.slot(head.wrapping_add(1), base), nodes) };
        let mut at = head.wrapping_add(1 + nodes.len());
        let mut put = |node: Node| {
            // SAFETY: as for the nodes.
            unsafe { *self.slots[self.slot(at, base)].get() = node };
            at = at.wrapping_add(1);
        };
        let mut retired = 0;
        for (slot, calls) in retired_calls {
            if calls > 0 {
                put(Node { start: calls, end: 0, index: slot, link: 0, allocs: 0, alloc_bytes: 0 });
                retired += 1;
            }
        }
        // SAFETY: as above.
        unsafe { *self.slots[self.slot(head, base)].get() = header(nodes.len(), retired, truncated, rec) };
        self.head.store(at, Release);
        Some((used, used + at.wrapping_sub(head)))
    }

    /// The slot of ring position `at` while the base is `base`.
    #[inline(always)]
    fn slot(&self, at: usize, base: usize) -> usize {
        at.wrapping_sub(base) & self.mask
    }

    /// Copies `nodes` into the ring from slot `start`, in at most two pieces (where the ring wraps).
    ///
    /// # Safety
    /// The owner's only: the slots from `start` on (wrapping) are unpublished and fit in the ring.
    unsafe fn copy_in(&self, start: usize, nodes: &[Node]) {
        let first = nodes.len().min(self.slots.len() - start);
        // `UnsafeCell<Node>` has the layout of `Node`, and writing through it is what it is for.
        let base = self.slots.as_ptr().cast::<Node>().cast_mut();
        // SAFETY: `start + first` and `nodes.len() - first` are within the ring (the caller's contract); the
        // source is the recorder's buffer, never the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(nodes.as_ptr(), base.add(start), first);
            std::ptr::copy_nonoverlapping(nodes.as_ptr().add(first), base, nodes.len() - first);
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Slots published and not yet drained (for the writer's pace).
    pub(crate) fn used(&self) -> usize {
        self.head.load(Acquire).wrapping_sub(self.tail.load(Relaxed))
    }

    /// The thread ended: a later thread may claim the outbox once it is drained.
    pub(crate) fn release(&self) {
        self.in_use.store(false, Release);
    }

    /// Reads out every published invocation, in order: `each(thread, name, entry)`. Only the holder of the
    /// writer's sink calls it (one consumer at a time).
    pub(crate) fn drain(&self, scratch: &mut Vec<Node>, mut each: impl FnMut(u64, Option<&str>, Entry)) {
        let mut tail = self.tail.load(Relaxed);
        let head = self.head.load(Acquire);
        // Set before the head store acquired above, and not again until this loop has read every slot up to it
        // (the owner moves it only when it finds the ring empty).
        let base = self.base.load(Relaxed);
        while tail != head {
            // SAFETY: slots tail..head were published by the owner's release store of head, acquired above, and
            // the owner does not write them again before the tail store below gives them back.
            let h = unsafe { *self.slots[self.slot(tail, base)].get() };
            let (count, retired) = (h.index as usize, h.link as usize);
            let entry = if h.end != 0 {
                // SAFETY: a non-zero `end` in a header is a recorder the owner gave up with Box::into_raw; it is
                // read out exactly once, here, before the tail moves past it.
                Entry::Recorder(unsafe { Box::from_raw(h.end as usize as *mut Recorder) })
            } else {
                let (first, len) = (self.slot(tail.wrapping_add(1), base), count + retired);
                let records: &[Node] = if first + len <= self.slots.len() {
                    // Not wrapped: read in place, no copy. SAFETY: as for the header; `UnsafeCell<Node>` has the
                    // layout of `Node`, and the slots stay unwritten until the tail store below.
                    unsafe { std::slice::from_raw_parts(self.slots.as_ptr().add(first).cast::<Node>(), len) }
                } else {
                    scratch.clear();
                    // SAFETY: as for the header.
                    scratch.extend((1..=len).map(|i| unsafe { *self.slots[self.slot(tail + i, base)].get() }));
                    scratch
                };
                let (nodes, retired) = records.split_at(count);
                Entry::Nodes { nodes, retired, truncated: h.start }
            };
            // SAFETY: the owner wrote `owner` before publishing any record of this claim; it is rewritten only by a
            // later claim, which waits for the ring to be empty (after the tail store below).
            let owner = unsafe { &*self.owner.get() };
            each(owner.thread, owner.name.as_deref(), entry);
            tail = tail.wrapping_add(1 + count + retired);
            self.tail.store(tail, Release);
        }
    }
}

/// Claims a free, drained outbox for the calling thread, or registers a new one of `capacity` slots (a power of
/// two).
pub(crate) fn claim(capacity: usize, thread: u64, name: Option<Arc<str>>) -> &'static Outbox {
    let mut all = lock(&OUTBOXES);
    let free = all.iter().copied().find(|ob| {
        !ob.in_use.load(Acquire)
            && ob.tail.load(Acquire) == ob.head.load(Relaxed)
            && ob.in_use.compare_exchange(false, true, Acquire, Relaxed).is_ok()
    });
    let ob = match free {
        Some(ob) => ob,
        None => {
            let ob: &'static Outbox = Box::leak(Box::new(Outbox::new(capacity)));
            all.push(ob);
            ob
        }
    };
    // SAFETY: the outbox is claimed by this thread and empty: no consumer reads its owner until this thread
    // publishes a record.
    unsafe { *ob.owner.get() = Owner { thread, name } };
    ob
}

/// The outbox registered `at` in order, for the drains.
pub(crate) fn nth(at: usize) -> Option<&'static Outbox> {
    lock(&OUTBOXES).get(at).copied()
}

/// The sum of one counter over every outbox.
pub(crate) fn total(counter: Counter) -> u64 {
    lock(&OUTBOXES).iter().map(|ob| ob.counters[counter as usize].load(Relaxed)).sum()
}

/// The earliest and latest root start (ticks) over every outbox; `(u64::MAX, 0)` before any.
pub(crate) fn root_span() -> (u64, u64) {
    let all = lock(&OUTBOXES);
    let first = all.iter().map(|ob| ob.first_start.load(Relaxed)).min().unwrap_or(u64::MAX);
    let last = all.iter().map(|ob| ob.last_start.load(Relaxed)).max().unwrap_or(0);
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(start: u64) -> Node {
        Node { start, end: start + 1, index: 1, link: 0, allocs: 0, alloc_bytes: 0 }
    }

    /// Slots ever written: the zeroed ring's non-zero slots.
    fn touched(ob: &Outbox) -> usize {
        // SAFETY: the test is the owner and the consumer, on one thread.
        (0..ob.capacity()).filter(|&i| unsafe { (*ob.slots[i].get()).index } != 0).count()
    }

    #[test]
    fn a_ring_the_writer_keeps_up_with_stays_in_its_first_slots() {
        let ob = Outbox::new(1024);
        let mut scratch = Vec::new();
        let mut read = Vec::new();
        for round in 0..500u64 {
            let nodes = [node(round), node(round + 10), node(round + 20)];
            assert!(ob.push(&nodes, std::iter::empty(), 0).is_some());
            ob.drain(&mut scratch, |_, _, entry| match entry {
                Entry::Nodes { nodes, .. } => read.push(nodes.iter().map(|n| n.start).collect::<Vec<_>>()),
                Entry::Recorder(_) => panic!("no recorder was pushed"),
            });
        }
        // Each record was read back whole, and all went in the first 4 slots (a header and 3 nodes), where walking
        // the ring round would have written all 1,024.
        assert_eq!(read.len(), 500);
        assert!(read
            .iter()
            .enumerate()
            .all(|(round, starts)| *starts == [round as u64, round as u64 + 10, round as u64 + 20]));
        assert_eq!(touched(&ob), 4);
    }

    #[test]
    fn a_full_ring_refuses_a_record_and_an_emptied_one_starts_again() {
        let ob = Outbox::new(16);
        let mut scratch = Vec::new();
        let mut read = Vec::new();
        let mut drain = |ob: &Outbox, read: &mut Vec<u64>| {
            ob.drain(&mut scratch, |_, _, entry| {
                if let Entry::Nodes { nodes, .. } = entry {
                    read.extend(nodes.iter().map(|n| n.start));
                }
            })
        };
        // Three records of 5 slots wait; a fourth does not fit; once read, records start again at the first slot.
        for round in 0..2 {
            ob.push(
                &[node(100 + round), node(200 + round), node(300 + round), node(400 + round)],
                std::iter::empty(),
                0,
            );
        }
        assert!(ob.push(&[node(9); 4], std::iter::empty(), 0).is_some());
        assert!(ob.push(&[node(8); 4], std::iter::empty(), 0).is_none(), "16 slots hold three records of 5");
        drain(&ob, &mut read);
        assert_eq!(read, [100, 200, 300, 400, 101, 201, 301, 401, 9, 9, 9, 9]);
        read.clear();
        ob.push(&[node(1), node(2)], std::iter::empty(), 0);
        ob.push(&[node(3); 10], std::iter::empty(), 0);
        drain(&ob, &mut read);
        assert_eq!(read, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    }
}

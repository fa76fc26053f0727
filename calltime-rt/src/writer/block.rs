//! Binary invocation records (trace format version 4, docs/trace-format.md "Binary blocks"): the writer copies an
//! invocation's nodes as they were recorded (ticks, parent links) instead of formatting lines, and the tool's reader
//! converts them (ticks to ns, preorder, `CALLTIME_MIN_NS`). Formatting decimal lines was most of the writer's cost
//! per tree; this is a few stores per node.
//!
//! A block is a text line `b <payload bytes> <records>` (each number 10 zero-padded digits, patched when the block
//! closes), then the payload: the clock's scale and the minimum duration, then records back to back. Every integer
//! is little-endian.
//!
//! Since version 5 a record whose nodes all fit takes the narrow form (half the bytes: offsets from the root's start
//! and durations in 32 bits, index and link in 16): the writer's cost on a program of many-node invocations was
//! mostly the kernel's, writing the bytes (tokei: 3.9 MB a run; docs/performance.md, "Ninth round").

use crate::clock::Scale;
use crate::recorder::{Node, OPEN, PARENT_BITS, PARENT_MASK};

/// `b 0000000000 0000000000\n`: the marker line a block starts with.
const MARKER: &[u8; 24] = b"b 0000000000 0000000000\n";
/// Bytes of one encoded node: start, end, index, link, then allocs and alloc bytes when the record has them.
pub(crate) const NODE_BYTES: usize = 40;
const NODE_BYTES_NO_ALLOCS: usize = 24;
/// Bytes of a narrow node: its start's offset from the root's start and its duration (`NARROW_OPEN` while open),
/// in 32 bits each; its index and link (parent slot in the low `NARROW_PARENT_BITS`, flags above) in 16; then, when
/// the record has them, its allocation count and bytes in 32 bits each.
const NARROW_NODE_BYTES: usize = 20;
const NARROW_NODE_BYTES_NO_ALLOCS: usize = 12;
const NARROW_OPEN: u32 = u32::MAX;
const NARROW_PARENT_BITS: u32 = 13;
/// Bits of a record's kind word: a root task's (else a thread's); its nodes carry allocation counts; its nodes are
/// narrow (and the root's start follows the head).
const KIND_TASK: u32 = 1;
const KIND_ALLOCS: u32 = 2;
const KIND_NARROW: u32 = 4;
/// A block's payload stays under what its marker's 10 digits can say; bigger records are written as text.
pub(crate) const MAX_PAYLOAD: usize = 4_000_000_000;

/// Who an encoded invocation belongs to: what its `inv` line says besides its times and counts.
pub(crate) struct RecordHead<'a> {
    pub(crate) seq: u64,
    /// 0: a thread, 1: a root task.
    pub(crate) task: bool,
    pub(crate) id: u64,
    pub(crate) truncated: u64,
    pub(crate) name: &'a str,
}

/// Starts a block at the end of `out`: its marker (counts left zero) and header; returns where it starts.
pub(crate) fn open(out: &mut Vec<u8>, scale: Scale, min_ns: u64) -> usize {
    let at = out.len();
    let (ticks0, ns_per_tick_q32) = scale.parts();
    out.extend_from_slice(MARKER);
    for word in [ticks0, ns_per_tick_q32 as u64, (ns_per_tick_q32 >> 64) as u64, min_ns] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    at
}

/// Ends the block that starts at `at` (the rest of `out` is its payload) by filling in its marker's counts.
pub(crate) fn close(out: &mut [u8], at: usize, records: u64) {
    let payload = (out.len() - at - MARKER.len()) as u64;
    write_padded(&mut out[at + 2..at + 12], payload);
    write_padded(&mut out[at + 13..at + 23], records);
}

/// `value` in decimal, right-aligned and zero-padded to the slice's width (the writer keeps it in range).
fn write_padded(digits: &mut [u8], mut value: u64) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Appends one invocation: its head, its nodes as recorded (slot order; the root first), then its calls of retired
/// functions as `(function index, calls)`. The one encoder of a record, for every caller that hands over nodes.
pub(crate) fn push_record(out: &mut Vec<u8>, head: &RecordHead, nodes: &[Node], retired: &[(u32, u64)]) {
    let name = &head.name.as_bytes()[..head.name.len().min(u16::MAX as usize)];
    let padded = (name.len() + 7) & !7;
    let Some(root) = nodes.first() else { return };
    let shape = Shape::of(nodes, root.start);
    // Nodes without allocations (most, and all without the counting allocator) leave the two counts out.
    let allocs = shape.allocs != 0;
    let narrow = shape.fits_narrow();
    let node_bytes = match (narrow, allocs) {
        (true, true) => NARROW_NODE_BYTES,
        (true, false) => NARROW_NODE_BYTES_NO_ALLOCS,
        (false, true) => NODE_BYTES,
        (false, false) => NODE_BYTES_NO_ALLOCS,
    };
    let kind = if head.task { KIND_TASK } else { 0 }
        | if allocs { KIND_ALLOCS } else { 0 }
        | if narrow { KIND_NARROW } else { 0 };
    let base_bytes = if narrow { 8 } else { 0 };
    let size = 40 + base_bytes + padded + nodes.len() * node_bytes + retired.len() * 16;
    out.reserve(size);
    // Written field by field into the reserved bytes, then published with one length update: `extend_from_slice`
    // per field (a capacity check and a length store each), or a bounds check per field, cost several times the
    // stores themselves.
    // SAFETY: `size` bytes are reserved past the length, and the writes below cover exactly them (head 40, name
    // padded, nodes, retired entries: the sum `size` is made of) before the length is set.
    unsafe {
        let mut at = out.as_mut_ptr().add(out.len());
        put(&mut at, head.seq.to_le_bytes());
        put(&mut at, head.id.to_le_bytes());
        put(&mut at, head.truncated.to_le_bytes());
        put(&mut at, (nodes.len() as u32).to_le_bytes());
        put(&mut at, (retired.len() as u32).to_le_bytes());
        put(&mut at, (name.len() as u32).to_le_bytes());
        put(&mut at, kind.to_le_bytes());
        if narrow {
            put(&mut at, root.start.to_le_bytes());
        }
        std::ptr::copy_nonoverlapping(name.as_ptr(), at, name.len());
        std::ptr::write_bytes(at.add(name.len()), 0, padded - name.len());
        at = at.add(padded);
        if narrow {
            // The checks of `Shape` make every conversion below exact (the root's parent bits aside, which no
            // reader uses: the root has no parent).
            for node in nodes {
                put(&mut at, (node.start.wrapping_sub(root.start) as u32).to_le_bytes());
                let duration = if node.end == OPEN { NARROW_OPEN } else { node.end.wrapping_sub(node.start) as u32 };
                put(&mut at, duration.to_le_bytes());
                put(&mut at, (node.index as u16).to_le_bytes());
                let flags = node.link >> PARENT_BITS;
                let parent = node.link & ((1 << NARROW_PARENT_BITS) - 1);
                put(&mut at, ((parent | flags << NARROW_PARENT_BITS) as u16).to_le_bytes());
                if allocs {
                    put(&mut at, (node.allocs as u32).to_le_bytes());
                    put(&mut at, (node.alloc_bytes as u32).to_le_bytes());
                }
            }
        } else {
            for node in nodes {
                put(&mut at, node.start.to_le_bytes());
                put(&mut at, node.end.to_le_bytes());
                put(&mut at, node.index.to_le_bytes());
                put(&mut at, node.link.to_le_bytes());
                if allocs {
                    put(&mut at, node.allocs.to_le_bytes());
                    put(&mut at, node.alloc_bytes.to_le_bytes());
                }
            }
        }
        for &(index, calls) in retired {
            put(&mut at, u64::from(index).to_le_bytes());
            put(&mut at, calls.to_le_bytes());
        }
        let len = out.len();
        debug_assert_eq!(at.offset_from(out.as_ptr()) as usize, len + size);
        out.set_len(len + size);
    }
}

/// What one pass over a record's nodes says: whether they have allocation counts, and the bits that must be zero
/// for the narrow form.
struct Shape {
    allocs: u64,
    /// Bits past 32 of start offsets, durations and allocation counts; past 16 of indices; past
    /// `NARROW_PARENT_BITS` of the parents (the root's aside); and a duration equal to `NARROW_OPEN`.
    too_wide: u64,
}

impl Shape {
    fn of(nodes: &[Node], root_start: u64) -> Shape {
        let (mut allocs, mut too_wide) = (0u64, 0u64);
        for (slot, node) in nodes.iter().enumerate() {
            allocs |= node.allocs | node.alloc_bytes;
            // An open node's end is written as `NARROW_OPEN` whatever its start; a closed one's duration must be
            // below it, and so must every start's offset (a start before the root's wraps to a big offset).
            let duration = if node.end == OPEN { 0 } else { node.end.wrapping_sub(node.start) };
            too_wide |= (node.start.wrapping_sub(root_start) | duration) >> 32;
            too_wide |= u64::from(duration == u64::from(NARROW_OPEN));
            too_wide |= u64::from(node.index >> 16);
            let parent = node.link & PARENT_MASK;
            too_wide |= u64::from(slot > 0) * u64::from(parent >> NARROW_PARENT_BITS);
        }
        too_wide |= allocs >> 32;
        Shape { allocs, too_wide }
    }

    fn fits_narrow(&self) -> bool {
        self.too_wide == 0
    }
}

/// Writes `bytes` at `at` and moves it past them.
///
/// # Safety
/// `at` is valid for `N` bytes of writes.
#[inline(always)]
unsafe fn put<const N: usize>(at: &mut *mut u8, bytes: [u8; N]) {
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), *at, N);
        *at = at.add(N);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_says_its_size_and_record_count() {
        let mut out = b"text\n".to_vec();
        let at = open(&mut out, Scale::identity(), 7);
        let node = Node { start: 5, end: 9, index: 3, link: 0, allocs: 1, alloc_bytes: 2 };
        let head = RecordHead { seq: 4, task: false, id: 1, truncated: 0, name: "main" };
        push_record(&mut out, &head, &[node], &[(2, 11)]);
        close(&mut out, at, 1);
        // Narrow, with allocation counts: the head, the root's start, the name, a 20-byte node, a retired entry.
        let payload = 32 + 40 + 8 + 8 + NARROW_NODE_BYTES + 16;
        assert_eq!(&out[..at + 24], format!("text\nb {payload:010} 0000000001\n").as_bytes());
        assert_eq!(out.len(), at + 24 + payload);
        assert_eq!((out[at + 24 + 32 + 28], out[at + 24 + 32 + 36]), (1, (KIND_ALLOCS | KIND_NARROW) as u8));
        // Without allocations a narrow node takes 12 bytes.
        let bare = Node { allocs: 0, alloc_bytes: 0, ..node };
        let child = Node { start: 6, end: 8, index: 4, link: 0, ..bare };
        let before = out.len();
        push_record(&mut out, &head, &[bare, child], &[]);
        assert_eq!((out.len() - before, out[before + 36]), (40 + 8 + 8 + 2 * NARROW_NODE_BYTES_NO_ALLOCS, 4));
    }

    #[test]
    fn nodes_that_do_not_fit_take_the_wide_form() {
        let root =
            Node { start: 1 << 40, end: (1 << 40) + 100, index: 0, link: PARENT_MASK, allocs: 0, alloc_bytes: 0 };
        let child = Node { start: root.start + 10, end: root.start + 20, link: 0, index: 1, ..root };
        let wide = [
            // A start before the root's, a duration of 2^32 ticks or of exactly `NARROW_OPEN`, an index past 16
            // bits, a parent past 13 bits, an allocation count past 32 bits.
            Node { start: root.start - 1, ..child },
            Node { end: child.start + (1 << 32), ..child },
            Node { end: child.start + u64::from(NARROW_OPEN), ..child },
            Node { index: 1 << 16, ..child },
            Node { link: 1 << NARROW_PARENT_BITS, ..child },
            Node { allocs: 1 << 32, ..child },
        ];
        for (case, node) in wide.into_iter().enumerate() {
            assert!(!Shape::of(&[root, node], root.start).fits_narrow(), "wide case {case}");
        }
        let narrow = [
            child,
            Node { end: OPEN, ..child },
            Node { end: child.start + u64::from(NARROW_OPEN) - 1, ..child },
            Node { index: u32::from(u16::MAX), link: 7 << PARENT_BITS | ((1 << NARROW_PARENT_BITS) - 1), ..child },
            Node { allocs: u64::from(u32::MAX), alloc_bytes: u64::from(u32::MAX), ..child },
        ];
        for (case, node) in narrow.into_iter().enumerate() {
            assert!(Shape::of(&[root, node], root.start).fits_narrow(), "narrow case {case}");
        }
        // The root's own parent (none) does not count.
        assert!(Shape::of(&[root], root.start).fits_narrow());
    }
}

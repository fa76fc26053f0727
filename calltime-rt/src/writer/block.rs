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
use crate::recorder::{Node, PARENT_BITS, PARENT_MASK};

/// `b 0000000000 0000000000\n`: the marker line a block starts with.
const MARKER: &[u8; 24] = b"b 0000000000 0000000000\n";
/// Bytes of one encoded node: start, end, index, link, then allocs and alloc bytes when the record has them.
pub(crate) const NODE_BYTES: usize = 40;
#[cfg(test)]
const NODE_BYTES_NO_ALLOCS: usize = 24;
/// Bytes of a narrow node: its start's offset from the root's start and its duration in 32 bits each; its index and
/// link (parent slot in the low `NARROW_PARENT_BITS`, flags above) in 16; then, when the record has them, its
/// allocation count and bytes in 32 bits each. The root's start (64 bits) comes before the nodes.
const NARROW_NODE_BYTES: usize = 20;
#[cfg(test)]
const NARROW_NODE_BYTES_NO_ALLOCS: usize = 12;
const NARROW_PARENT_BITS: u32 = 13;
/// Bits of a record's kind word: a root task's (else a thread's); its nodes carry allocation counts; its nodes are
/// narrow.
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
/// `allocs_hint`: whether the last record had allocation counts (the narrow form is encoded in one pass when it
/// guesses right, as it mostly does: a program's records agree); updated.
pub(crate) fn push_record(
    out: &mut Vec<u8>,
    head: &RecordHead,
    nodes: &[Node],
    retired: &[(u32, u64)],
    allocs_hint: &mut bool,
) {
    if nodes.is_empty() {
        return;
    }
    let name = &head.name.as_bytes()[..head.name.len().min(u16::MAX as usize)];
    let padded = (name.len() + 7) & !7;
    // Room for the widest form: head, name, the nodes wide or narrow (with the root's start), retired entries.
    let node_room = (nodes.len() * NODE_BYTES).max(8 + nodes.len() * NARROW_NODE_BYTES);
    out.reserve(40 + padded + node_room + retired.len() * 16);
    // Written field by field into the reserved bytes, then published with one length update: `extend_from_slice`
    // per field (a capacity check and a length store each), or a bounds check per field, cost several times the
    // stores themselves.
    // SAFETY: the bytes reserved past the length hold any form written below (head 40, name padded, the narrow
    // form's root start and nodes or the wide form's nodes, retired entries); the length is set to the end of what
    // was written, all of it initialised.
    unsafe {
        let start = out.as_mut_ptr().add(out.len());
        let mut at = start;
        put(&mut at, head.seq.to_le_bytes());
        put(&mut at, head.id.to_le_bytes());
        put(&mut at, head.truncated.to_le_bytes());
        put(&mut at, (nodes.len() as u32).to_le_bytes());
        put(&mut at, (retired.len() as u32).to_le_bytes());
        put(&mut at, (name.len() as u32).to_le_bytes());
        let mut kind_at = at;
        at = at.add(4);
        // The padding by one word of zeros under the name's last bytes, rather than a `memset` call of 1-7 bytes.
        if padded > 0 {
            put(&mut at.add(padded - 8), [0u8; 8]);
        }
        std::ptr::copy_nonoverlapping(name.as_ptr(), at, name.len());
        at = at.add(padded);
        let nodes_at = at;
        // Nodes without allocations (most, and all without the counting allocator) leave the two counts out.
        let mut allocs = *allocs_hint;
        let mut narrow = false;
        for _ in 0..2 {
            let (end, seen, fits) = put_narrow(nodes_at, nodes, allocs);
            if fits && (seen != 0) == allocs {
                (at, narrow) = (end, true);
                break;
            }
            allocs = seen != 0;
            if !fits {
                break;
            }
        }
        if !narrow {
            at = put_wide(nodes_at, nodes, allocs);
        }
        *allocs_hint = allocs;
        let kind = if head.task { KIND_TASK } else { 0 }
            | if allocs { KIND_ALLOCS } else { 0 }
            | if narrow { KIND_NARROW } else { 0 };
        put(&mut kind_at, kind.to_le_bytes());
        for &(index, calls) in retired {
            put(&mut at, u64::from(index).to_le_bytes());
            put(&mut at, calls.to_le_bytes());
        }
        let len = out.len();
        out.set_len(len + at.offset_from(start) as usize);
    }
}

/// Writes `nodes` at `at` in the narrow form (the root's start, then 12 bytes a node, 20 `with_allocs`); returns
/// the end, the bits of every allocation count (or-ed), and whether every node fitted: start at or after the root's
/// and within 2^32 ticks of it, duration under 2^32 - 1 ticks (so never open), index under 2^16, parent slot under
/// 2^`NARROW_PARENT_BITS` (the root's aside: it has none), allocation counts under 2^32. When not, what was written
/// is to be written over.
///
/// # Safety
/// `at` is valid for `8 + nodes.len() * NARROW_NODE_BYTES` bytes of writes; `nodes` is not empty.
#[inline(always)]
unsafe fn put_narrow(mut at: *mut u8, nodes: &[Node], with_allocs: bool) -> (*mut u8, u64, bool) {
    let root_start = nodes[0].start;
    // One pass, no branch per node: the bits that must be zero are or-ed and looked at once at the end.
    let (mut past_32, mut past_16, mut allocs) = (0u64, 0u32, 0u64);
    // SAFETY: the caller's contract.
    unsafe {
        put(&mut at, root_start.to_le_bytes());
        for (slot, node) in nodes.iter().enumerate() {
            let offset = node.start.wrapping_sub(root_start);
            let duration = node.end.wrapping_sub(node.start);
            // `duration + 1` rules out a duration of 2^32 - 1 and (with `duration`) an open node's end.
            past_32 |= offset | duration | duration.wrapping_add(1);
            let parent = node.link & PARENT_MASK;
            // The root's parent (none, all ones) does not count.
            past_16 |= (node.index >> 16) | ((parent >> NARROW_PARENT_BITS) * u32::from(slot > 0));
            allocs |= node.allocs | node.alloc_bytes;
            put(&mut at, (offset as u32).to_le_bytes());
            put(&mut at, (duration as u32).to_le_bytes());
            put(&mut at, (node.index as u16).to_le_bytes());
            let flags = node.link >> PARENT_BITS;
            let link = (parent & ((1 << NARROW_PARENT_BITS) - 1)) | flags << NARROW_PARENT_BITS;
            put(&mut at, (link as u16).to_le_bytes());
            if with_allocs {
                put(&mut at, (node.allocs as u32).to_le_bytes());
                put(&mut at, (node.alloc_bytes as u32).to_le_bytes());
            }
        }
    }
    (at, allocs, (past_32 | allocs) >> 32 == 0 && past_16 == 0)
}

/// Writes `nodes` at `at` as recorded (24 bytes a node, 40 `with_allocs`); returns the end.
///
/// # Safety
/// `at` is valid for `nodes.len() * NODE_BYTES` bytes of writes.
#[inline(always)]
unsafe fn put_wide(mut at: *mut u8, nodes: &[Node], with_allocs: bool) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe {
        for node in nodes {
            put(&mut at, node.start.to_le_bytes());
            put(&mut at, node.end.to_le_bytes());
            put(&mut at, node.index.to_le_bytes());
            put(&mut at, node.link.to_le_bytes());
            if with_allocs {
                put(&mut at, node.allocs.to_le_bytes());
                put(&mut at, node.alloc_bytes.to_le_bytes());
            }
        }
    }
    at
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
    use crate::recorder::OPEN;

    const HEAD: RecordHead = RecordHead { seq: 4, task: false, id: 1, truncated: 0, name: "main" };

    #[test]
    fn a_block_says_its_size_and_record_count() {
        let mut out = b"text\n".to_vec();
        let at = open(&mut out, Scale::identity(), 7);
        let node = Node { start: 5, end: 9, index: 3, link: PARENT_MASK, allocs: 1, alloc_bytes: 2 };
        let mut allocs_hint = false;
        push_record(&mut out, &HEAD, &[node], &[(2, 11)], &mut allocs_hint);
        close(&mut out, at, 1);
        // Narrow, with allocation counts: the head, the name, the root's start, a 20-byte node, a retired entry.
        let payload = 32 + 40 + 8 + 8 + NARROW_NODE_BYTES + 16;
        assert_eq!(&out[..at + 24], format!("text\nb {payload:010} 0000000001\n").as_bytes());
        assert_eq!(out.len(), at + 24 + payload);
        assert_eq!((out[at + 24 + 32 + 28], out[at + 24 + 32 + 36]), (1, (KIND_ALLOCS | KIND_NARROW) as u8));
        assert!(allocs_hint);
        // Without allocations a narrow node takes 12 bytes (the hint said there would be some: encoded again).
        let bare = Node { allocs: 0, alloc_bytes: 0, ..node };
        let child = Node { start: 6, end: 8, index: 4, link: 0, ..bare };
        let before = out.len();
        push_record(&mut out, &HEAD, &[bare, child], &[], &mut allocs_hint);
        assert_eq!((out.len() - before, out[before + 36]), (40 + 8 + 8 + 2 * NARROW_NODE_BYTES_NO_ALLOCS, 4));
        assert!(!allocs_hint);
    }

    /// The kind word and size of `nodes` encoded alone.
    fn encoded(nodes: &[Node]) -> (u32, usize) {
        let mut out = Vec::new();
        push_record(&mut out, &HEAD, nodes, &[], &mut false);
        (u32::from(out[36]), out.len() - 48)
    }

    #[test]
    fn nodes_that_do_not_fit_take_the_wide_form() {
        let root =
            Node { start: 1 << 40, end: (1 << 40) + 100, index: 0, link: PARENT_MASK, allocs: 0, alloc_bytes: 0 };
        let child = Node { start: root.start + 10, end: root.start + 20, link: 0, index: 1, ..root };
        let wide = [
            // A start before the root's, a duration of 2^32 ticks or of exactly 2^32 - 1, an open call, an index
            // past 16 bits, a parent past 13 bits, an allocation count past 32 bits.
            Node { start: root.start - 1, ..child },
            Node { end: child.start + (1 << 32), ..child },
            Node { end: child.start + u64::from(u32::MAX), ..child },
            Node { end: OPEN, ..child },
            Node { index: 1 << 16, ..child },
            Node { link: 1 << NARROW_PARENT_BITS, ..child },
            Node { allocs: 1 << 32, ..child },
        ];
        for (case, node) in wide.into_iter().enumerate() {
            let allocs = if node.allocs > 0 { KIND_ALLOCS } else { 0 };
            let bytes = if node.allocs > 0 { NODE_BYTES } else { NODE_BYTES_NO_ALLOCS };
            assert_eq!(encoded(&[root, node]), (allocs, 2 * bytes), "wide case {case}");
        }
        let narrow = [
            child,
            Node { end: child.start + u64::from(u32::MAX) - 1, ..child },
            Node { index: u32::from(u16::MAX), link: 7 << PARENT_BITS | ((1 << NARROW_PARENT_BITS) - 1), ..child },
        ];
        for (case, node) in narrow.into_iter().enumerate() {
            assert_eq!(
                encoded(&[root, node]),
                (KIND_NARROW, 8 + 2 * NARROW_NODE_BYTES_NO_ALLOCS),
                "narrow case {case}"
            );
        }
        let counted = Node { allocs: u64::from(u32::MAX), alloc_bytes: u64::from(u32::MAX), ..child };
        assert_eq!(encoded(&[root, counted]), (KIND_NARROW | KIND_ALLOCS, 8 + 2 * NARROW_NODE_BYTES));
        // The root's own parent (none) does not count.
        assert_eq!(encoded(&[root]), (KIND_NARROW, 8 + NARROW_NODE_BYTES_NO_ALLOCS));
    }
}

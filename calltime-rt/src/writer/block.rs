//! Binary invocation records (trace format version 4, docs/trace-format.md "Binary blocks"): the writer copies an
//! invocation's nodes as they were recorded (ticks, parent links) instead of formatting lines, and the tool's reader
//! converts them (ticks to ns, preorder, `CALLTIME_MIN_NS`). Formatting decimal lines was most of the writer's cost
//! per tree; this is a few stores per node.
//!
//! A block is a text line `b <payload bytes> <records>` (each number 10 zero-padded digits, patched when the block
//! closes), then the payload: the clock's scale and the minimum duration, then records back to back. Every integer
//! is little-endian.

use crate::clock::Scale;
use crate::recorder::Node;

/// `b 0000000000 0000000000\n`: the marker line a block starts with.
const MARKER: &[u8; 24] = b"b 0000000000 0000000000\n";
/// Bytes of one encoded node: start, end, index, link, then allocs and alloc bytes when the record has them.
pub(crate) const NODE_BYTES: usize = 40;
const NODE_BYTES_NO_ALLOCS: usize = 24;
/// Bits of a record's kind word: a root task's (else a thread's); its nodes carry allocation counts.
const KIND_TASK: u32 = 1;
const KIND_ALLOCS: u32 = 2;
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
    // Nodes without allocations (most, and all without the counting allocator) leave the two counts out.
    let allocs = nodes.iter().any(|n| n.allocs | n.alloc_bytes != 0);
    let node_bytes = if allocs { NODE_BYTES } else { NODE_BYTES_NO_ALLOCS };
    let kind = if head.task { KIND_TASK } else { 0 } | if allocs { KIND_ALLOCS } else { 0 };
    let size = 40 + padded + nodes.len() * node_bytes + retired.len() * 16;
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
        std::ptr::copy_nonoverlapping(name.as_ptr(), at, name.len());
        std::ptr::write_bytes(at.add(name.len()), 0, padded - name.len());
        at = at.add(padded);
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
        for &(index, calls) in retired {
            put(&mut at, u64::from(index).to_le_bytes());
            put(&mut at, calls.to_le_bytes());
        }
        let len = out.len();
        debug_assert_eq!(at.offset_from(out.as_ptr()) as usize, len + size);
        out.set_len(len + size);
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
        let payload = 32 + 40 + 8 + NODE_BYTES + 16;
        // Allocation counts, so the node has them: 40 bytes; the kind word says so.
        assert_eq!(&out[..at + 24], format!("text\nb {payload:010} 0000000001\n").as_bytes());
        assert_eq!(out.len(), at + 24 + payload);
        assert_eq!((out[at + 24 + 32 + 28], out[at + 24 + 32 + 36]), (1, KIND_ALLOCS as u8));
        // Without allocations a node takes 24 bytes.
        let bare = Node { allocs: 0, alloc_bytes: 0, ..node };
        let before = out.len();
        push_record(&mut out, &head, &[bare, bare], &[]);
        assert_eq!((out.len() - before, out[before + 36]), (40 + 8 + 2 * NODE_BYTES_NO_ALLOCS, 0));
    }
}

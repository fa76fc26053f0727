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
/// Bytes of one encoded node: start, end, index, link, allocs, alloc bytes.
pub(crate) const NODE_BYTES: usize = 40;
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
pub(crate) fn push_record(
    out: &mut Vec<u8>,
    head: &RecordHead,
    nodes: &[Node],
    retired: impl Iterator<Item = (u32, u64)>,
) {
    let name = head.name.as_bytes();
    let name_len = name.len().min(u16::MAX as usize);
    let padded = (name_len + 7) & !7;
    out.reserve(40 + padded + nodes.len() * NODE_BYTES + 64);
    for word in [head.seq, head.id, head.truncated] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    let counts_at = out.len();
    for half in [nodes.len() as u32, 0, name_len as u32, u32::from(head.task)] {
        out.extend_from_slice(&half.to_le_bytes());
    }
    out.extend_from_slice(&name[..name_len]);
    out.resize(out.len() + padded - name_len, 0);
    for node in nodes {
        let mut bytes = [0u8; NODE_BYTES];
        bytes[0..8].copy_from_slice(&node.start.to_le_bytes());
        bytes[8..16].copy_from_slice(&node.end.to_le_bytes());
        bytes[16..20].copy_from_slice(&node.index.to_le_bytes());
        bytes[20..24].copy_from_slice(&node.link.to_le_bytes());
        bytes[24..32].copy_from_slice(&node.allocs.to_le_bytes());
        bytes[32..40].copy_from_slice(&node.alloc_bytes.to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    let mut count = 0u32;
    for (index, calls) in retired {
        out.extend_from_slice(&u64::from(index).to_le_bytes());
        out.extend_from_slice(&calls.to_le_bytes());
        count += 1;
    }
    out[counts_at + 4..counts_at + 8].copy_from_slice(&count.to_le_bytes());
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
        push_record(&mut out, &head, &[node], [(2, 11)].into_iter());
        close(&mut out, at, 1);
        let payload = 32 + 40 + 8 + NODE_BYTES + 16;
        assert_eq!(&out[..at + 24], format!("text\nb {payload:010} 0000000001\n").as_bytes());
        assert_eq!(out.len(), at + 24 + payload);
        // The retired-call count, patched after the entries.
        assert_eq!(out[at + 24 + 32 + 28], 1);
    }
}

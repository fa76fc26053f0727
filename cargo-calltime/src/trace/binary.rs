//! Binary blocks of versions 4 and 5 (docs/trace-format.md, "Binary blocks"): the runtime's writer copies per-call
//! invocations as recorded (clock ticks, parent links, slot order) instead of formatting them; this module turns
//! each block back into the `inv` ... `end` lines it stands for, exactly as a version 3 writer formatted them
//! (ticks to ns with the block's scale, preorder from the parent links, `CALLTIME_MIN_NS` applied), so the line
//! reader (`read`) and every view see one format. Version 5 adds narrow records (`KIND_NARROW`).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};

/// Bytes of one node: start and end ticks, index, link, then, when the record's kind word has `KIND_ALLOCS`, the
/// allocation count and bytes.
const NODE_BYTES: usize = 40;
const NODE_BYTES_NO_ALLOCS: usize = 24;
/// Bytes of one narrow node (version 5): its start's offset from the root's start and its duration in 32 bits
/// each, its index and link (parent in the low `NARROW_PARENT_BITS`, flags above) in 16 bits each, then, with
/// `KIND_ALLOCS`, the allocation count and bytes in 32 bits each.
const NARROW_NODE_BYTES: usize = 20;
const NARROW_NODE_BYTES_NO_ALLOCS: usize = 12;
const NARROW_PARENT_BITS: u32 = 13;
/// Bits of a record's kind word.
const KIND_TASK: u32 = 1;
const KIND_ALLOCS: u32 = 2;
/// Version 5: the record's nodes are narrow, after the root's start (ticks, 64 bits).
const KIND_NARROW: u32 = 4;
/// Bytes of a block's header: the clock's origin (ticks), its factor (32.32 fixed point, 128 bits), the minimum
/// duration in ns.
const BLOCK_HEADER: usize = 32;
/// Bytes of a record's head: seq, owner id, truncated calls, then node count, retired count, name length, kind.
const RECORD_HEAD: usize = 40;
/// A node's end while it is open (a cancelled call, or one still open when its invocation ended).
const OPEN: u64 = u64::MAX;
/// A node's link: its parent's slot in the low bits, its flags above.
const PARENT_BITS: u32 = 29;
const PARENT_MASK: u32 = (1 << PARENT_BITS) - 1;
const FLAG_CANCELLED: u32 = 2;
/// No slot (the end of a child list).
const NONE: u32 = u32::MAX;

/// A trace's text with its binary blocks written out as lines.
pub(super) struct Expanded {
    pub(super) text: String,
    /// Records of a block cut off at the end of the file (the writer was writing it, or was killed while it did).
    pub(super) cut_off: u64,
    /// Blocks that could not be read (their records are left out).
    pub(super) warnings: Vec<String>,
}

/// `b <payload bytes> <records>`: a block's marker line.
fn marker(line: &[u8]) -> Option<(usize, u64)> {
    let rest = line.strip_prefix(b"b ")?;
    let text = std::str::from_utf8(rest).ok()?;
    let (payload, records) = text.split_once(' ')?;
    Some((payload.parse().ok()?, records.parse().ok()?))
}

/// The trace as text: lines as they are, each complete binary block replaced by the lines of its records; a block
/// cut off at the end is left out and its records counted.
pub(super) fn expand(bytes: &[u8]) -> Expanded {
    let mut out = Expanded { text: String::with_capacity(bytes.len() * 2), cut_off: 0, warnings: Vec::new() };
    let mut at = 0;
    while at < bytes.len() {
        let newline = bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i);
        let line = &bytes[at..newline.unwrap_or(bytes.len())];
        if let (Some(newline), Some((payload, records))) = (newline, marker(line)) {
            let start = newline + 1;
            let Some(block) = bytes.get(start..start.saturating_add(payload)) else {
                out.cut_off += records.max(1);
                break;
            };
            if let Err(e) = write_block(&mut out.text, block, records) {
                out.warnings
                    .push(format!("a binary block at byte {at} is unreadable: {e:#}; its records are left out"));
            }
            at = start + payload;
            continue;
        }
        out.text.push_str(&String::from_utf8_lossy(line));
        match newline {
            Some(newline) => {
                out.text.push('\n');
                at = newline + 1;
            }
            None => break,
        }
    }
    out
}

/// Little-endian integers read in order.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(len).filter(|&end| end <= self.data.len()).context("the block ends early")?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        let mut word = [0u8; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }

    fn u32(&mut self) -> Result<u32> {
        let mut half = [0u8; 4];
        half.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(half))
    }

    fn u16(&mut self) -> Result<u16> {
        let mut quarter = [0u8; 2];
        quarter.copy_from_slice(self.take(2)?);
        Ok(u16::from_le_bytes(quarter))
    }
}

/// Ticks to ns as the runtime's clock converts them.
#[derive(Clone, Copy)]
struct Scale {
    ticks0: u64,
    ns_per_tick_q32: u128,
}

impl Scale {
    fn ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks.saturating_sub(self.ticks0)) * self.ns_per_tick_q32) >> 32) as u64
    }
}

/// One node as recorded.
#[derive(Clone, Copy)]
struct Raw {
    start: u64,
    end: u64,
    index: u32,
    link: u32,
    allocs: u64,
    alloc_bytes: u64,
}

fn write_block(out: &mut String, block: &[u8], records: u64) -> Result<()> {
    let mut b = Bytes { data: block, at: 0 };
    let ticks0 = b.u64()?;
    let ns_per_tick_q32 = u128::from(b.u64()?) | (u128::from(b.u64()?) << 64);
    let min_ns = b.u64()?;
    debug_assert_eq!(b.at, BLOCK_HEADER);
    let scale = Scale { ticks0, ns_per_tick_q32 };
    let mut tree = Tree::default();
    for record in 0..records {
        write_record(out, &mut b, scale, min_ns, &mut tree).with_context(|| format!("record {record}"))?;
    }
    if b.at != block.len() {
        bail!("{} bytes after its {records} records", block.len() - b.at);
    }
    Ok(())
}

/// Reused between records: the nodes and their child lists.
#[derive(Default)]
struct Tree {
    nodes: Vec<Raw>,
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
    body: String,
}

fn write_record(out: &mut String, b: &mut Bytes, scale: Scale, min_ns: u64, tree: &mut Tree) -> Result<()> {
    let head_at = b.at;
    let (seq, id, truncated) = (b.u64()?, b.u64()?, b.u64()?);
    let (node_count, retired, name_len, kind) = (b.u32()? as usize, b.u32()?, b.u32()? as usize, b.u32()?);
    debug_assert_eq!(b.at - head_at, RECORD_HEAD);
    let name = String::from_utf8_lossy(b.take(name_len)?).replace(['\n', '\r'], " ");
    b.take(name_len.next_multiple_of(8) - name_len)?;
    let narrow = kind & KIND_NARROW != 0;
    let root_start = if narrow { b.u64()? } else { 0 };
    if node_count == 0 {
        bail!("an invocation without nodes");
    }
    let allocs = kind & KIND_ALLOCS != 0;
    let node_bytes = match (narrow, allocs) {
        (true, true) => NARROW_NODE_BYTES,
        (true, false) => NARROW_NODE_BYTES_NO_ALLOCS,
        (false, true) => NODE_BYTES,
        (false, false) => NODE_BYTES_NO_ALLOCS,
    };
    if node_count.saturating_mul(node_bytes) > b.data.len() - b.at {
        bail!("{node_count} nodes announced, more than the block holds");
    }
    tree.nodes.clear();
    for _ in 0..node_count {
        let raw = if narrow {
            let (offset, duration, index, link) = (b.u32()?, b.u32()?, b.u16()?, u32::from(b.u16()?));
            let (allocs, alloc_bytes) = if allocs { (b.u32()?.into(), b.u32()?.into()) } else { (0, 0) };
            let start = root_start.wrapping_add(offset.into());
            let end = start.wrapping_add(duration.into());
            let parent = link & ((1 << NARROW_PARENT_BITS) - 1);
            let link = parent | (link >> NARROW_PARENT_BITS) << PARENT_BITS;
            Raw { start, end, index: index.into(), link, allocs, alloc_bytes }
        } else {
            let (start, end, index, link) = (b.u64()?, b.u64()?, b.u32()?, b.u32()?);
            let (allocs, alloc_bytes) = if allocs { (b.u64()?, b.u64()?) } else { (0, 0) };
            Raw { start, end, index, link, allocs, alloc_bytes }
        };
        tree.nodes.push(raw);
    }
    let root = tree.nodes[0];
    let root_start = scale.ns(root.start);
    let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
    let (written, filtered) = tree.write_nodes(scale, min_ns, root_end);
    let kind = if kind & KIND_TASK != 0 { "task" } else { "thread" };
    let duration = root_end - root_start;
    let mut retired_lines = String::new();
    for _ in 0..retired {
        let (index, calls) = (b.u64()?, b.u64()?);
        let _ = writeln!(retired_lines, "r {index} {calls}");
    }
    // Written only once the whole record was read, so an unreadable one leaves no partial record behind.
    let _ = writeln!(out, "inv {seq} {kind} {id} {root_start} {duration} {written} {truncated} {filtered} {name}");
    out.push_str(&tree.body);
    out.push_str(&retired_lines);
    let _ = writeln!(out, "end {seq}");
    Ok(())
}

impl Tree {
    /// Writes the node lines into `body` in preorder (children in slot order; a node whose parent is not an
    /// earlier slot hangs under the root), leaving out nodes shorter than `min_ns` with their subtrees; the
    /// nodes written and left out.
    fn write_nodes(&mut self, scale: Scale, min_ns: u64, root_end: u64) -> (u64, u64) {
        let count = self.nodes.len();
        self.first_child.clear();
        self.first_child.resize(count, NONE);
        self.next_sibling.clear();
        self.next_sibling.resize(count, NONE);
        for slot in (1..count).rev() {
            let parent = (self.nodes[slot].link & PARENT_MASK) as usize;
            let parent = if parent < slot { parent } else { 0 };
            self.next_sibling[slot] = self.first_child[parent];
            self.first_child[parent] = slot as u32;
        }
        self.body.clear();
        let (mut written, mut filtered) = (0, 0);
        // (slot, depth, parent's end in ns, left out with an ancestor)
        let mut stack = vec![(0u32, 0u32, root_end, false)];
        while let Some((slot, depth, parent_end, left_out)) = stack.pop() {
            let node = self.nodes[slot as usize];
            let mut flags = node.link >> PARENT_BITS;
            let start = scale.ns(node.start);
            let end = if node.end == OPEN {
                flags |= FLAG_CANCELLED;
                parent_end
            } else {
                scale.ns(node.end)
            }
            .max(start);
            let leave_out = left_out || (slot != 0 && end - start < min_ns);
            if leave_out {
                filtered += 1;
            } else {
                written += 1;
                let (index, duration) = (node.index, end - start);
                let (allocs, bytes) = (node.allocs, node.alloc_bytes);
                let _ = writeln!(self.body, "n {depth} {index} {start} {duration} {flags} {allocs} {bytes}");
            }
            let first = stack.len();
            let mut child = self.first_child[slot as usize];
            while child != NONE {
                stack.push((child, depth + 1, end, leave_out));
                child = self.next_sibling[child as usize];
            }
            stack[first..].reverse();
        }
        (written, filtered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn node(start: u64, end: u64, index: u32, parent: u32, flags: u32) -> Vec<u8> {
        let mut bytes = le(&[start, end]);
        bytes.extend(index.to_le_bytes());
        bytes.extend((parent | flags << PARENT_BITS).to_le_bytes());
        bytes.extend(le(&[0, 0]));
        bytes
    }

    /// A block of one invocation: root 0 (ticks 100-300) calls 1 (110-150, which calls 2 at 120-121) and 3
    /// (open), at 2 ns a tick from tick 100.
    fn block(min_ns: u64) -> Vec<u8> {
        let mut payload = le(&[100, 2 << 32, 0, min_ns]);
        payload.extend(le(&[7, 1, 0]));
        for half in [4u32, 1, 4, KIND_ALLOCS] {
            payload.extend(half.to_le_bytes());
        }
        payload.extend(b"main\0\0\0\0");
        payload.extend(node(100, 300, 0, PARENT_MASK, 0));
        payload.extend(node(110, 150, 1, 0, 1));
        payload.extend(node(120, 121, 2, 1, 0));
        payload.extend(node(160, OPEN, 3, 0, 0));
        payload.extend(le(&[9, 42]));
        let mut bytes = format!("calltime-trace 4\nb {:010} 0000000001\n", payload.len()).into_bytes();
        bytes.extend(payload);
        bytes.extend(b"stats 1 1 0 0 0\n");
        bytes
    }

    #[test]
    fn blocks_become_the_lines_they_stand_for() {
        let expanded = expand(&block(0));
        assert!(expanded.warnings.is_empty(), "{:?}", expanded.warnings);
        assert_eq!(
            expanded.text,
            "calltime-trace 4\ninv 7 thread 1 0 400 4 0 0 main\nn 0 0 0 400 0 0 0\nn 1 1 20 80 1 0 0\n\
             n 2 2 40 2 0 0 0\nn 1 3 120 280 2 0 0\nr 9 42\nend 7\nstats 1 1 0 0 0\n"
        );
        // Nodes under the minimum duration are left out with their subtrees, and counted.
        let expanded = expand(&block(3));
        assert!(expanded.text.contains("inv 7 thread 1 0 400 3 0 1 main\n"), "{}", expanded.text);
    }

    #[test]
    fn nodes_without_allocation_counts_take_24_bytes() {
        let mut payload = le(&[0, 1 << 32, 0, 0]);
        payload.extend(le(&[0, 2, 0]));
        for half in [2u32, 0, 0, KIND_TASK] {
            payload.extend(half.to_le_bytes());
        }
        for (start, end, index, parent) in [(10u64, 20u64, 0u32, PARENT_MASK), (11, 12, 1, 0)] {
            payload.extend(le(&[start, end]));
            payload.extend(index.to_le_bytes());
            payload.extend(parent.to_le_bytes());
        }
        let mut bytes = format!("calltime-trace 4\nb {:010} 0000000001\n", payload.len()).into_bytes();
        bytes.extend(payload);
        let expanded = expand(&bytes);
        assert!(expanded.warnings.is_empty(), "{:?}", expanded.warnings);
        assert_eq!(
            expanded.text,
            "calltime-trace 4\ninv 0 task 2 10 10 2 0 0 \nn 0 0 10 10 0 0 0\nn 1 1 11 1 0 0 0\nend 0\n"
        );
    }

    /// `block(0)`'s invocation with its open node closed, in the narrow form of version 5 and as version 4 wrote
    /// it: the same lines.
    #[test]
    fn narrow_records_become_the_same_lines() {
        let mut payload = le(&[100, 2 << 32, 0, 0]);
        payload.extend(le(&[7, 1, 0]));
        for half in [4u32, 1, 4, KIND_ALLOCS | KIND_NARROW] {
            payload.extend(half.to_le_bytes());
        }
        payload.extend(b"main\0\0\0\0");
        payload.extend(le(&[100]));
        let narrow = |offset: u32, duration: u32, index: u16, parent: u16, flags: u16| {
            let mut bytes = offset.to_le_bytes().to_vec();
            bytes.extend(duration.to_le_bytes());
            bytes.extend(index.to_le_bytes());
            bytes.extend((parent | flags << NARROW_PARENT_BITS).to_le_bytes());
            bytes.extend([0u8; 8]);
            bytes
        };
        payload.extend(narrow(0, 200, 0, (1 << NARROW_PARENT_BITS) - 1, 0));
        payload.extend(narrow(10, 40, 1, 0, 1));
        payload.extend(narrow(20, 1, 2, 1, 0));
        payload.extend(narrow(60, 90, 3, 0, 0));
        payload.extend(le(&[9, 42]));
        let mut bytes = format!("calltime-trace 5\nb {:010} 0000000001\n", payload.len()).into_bytes();
        bytes.extend(payload);
        bytes.extend(b"stats 1 1 0 0 0\n");
        let expanded = expand(&bytes);
        assert!(expanded.warnings.is_empty(), "{:?}", expanded.warnings);
        let mut wide = block(0);
        let open_end = OPEN.to_le_bytes();
        let at = wide.windows(8).position(|w| w == open_end).unwrap();
        wide[at..at + 8].copy_from_slice(&250u64.to_le_bytes());
        let wide = expand(&wide).text.replace("calltime-trace 4", "calltime-trace 5");
        assert!(wide.contains("n 1 3 120 180 0 0 0\n"), "{wide}");
        assert_eq!(expanded.text, wide);
    }

    #[test]
    fn a_block_cut_off_counts_its_records() {
        let bytes = block(0);
        let cut = &bytes[..bytes.len() - 30];
        let expanded = expand(cut);
        assert_eq!((expanded.text.as_str(), expanded.cut_off), ("calltime-trace 4\n", 1));
        let mut bad = bytes.clone();
        // One node fewer than announced: the block is unreadable, the lines after it are kept.
        let marker_end = bad.iter().position(|&b| b == b'\n').unwrap() + 1;
        bad[marker_end + 24 + BLOCK_HEADER + 24] = 5;
        let expanded = expand(&bad);
        assert_eq!(expanded.warnings.len(), 1, "{}", expanded.text);
        assert!(expanded.text.ends_with("calltime-trace 4\nstats 1 1 0 0 0\n"), "{}", expanded.text);
    }
}

//! The one writer of the trace format outside the runtime: model values back to the text the runtime writes
//! (docs/trace-format.md, versions 1 and 2), byte for byte. Tests build their traces with it instead of formatting
//! lines by hand.

use super::records;
use super::{Invocation, Node, Stats, Trace};

/// Writes a trace: the header from a [`Trace`]'s header fields, then invocation records and `stats` lines in the
/// order they are added.
///
/// ```
/// use cargo_calltime::trace::{Invocation, Node, Stats, ThreadKind, ThreadRef, Trace, TraceBuilder};
/// let header = Trace { version: 1, pid: 7, exe: "/bin/app".into(), plan_id: Some("p".into()), ..Trace::default() };
/// let root = Node::call(0, 100, 50, false, vec![Node::call(1, 110, 20, false, vec![])]);
/// let thread = ThreadRef { kind: ThreadKind::Thread, id: 1, name: "main".into() };
/// let inv = Invocation::new(0, thread, root);
/// let mut builder = TraceBuilder::new(&header);
/// builder.invocation(&inv).stats(&Stats { seen: 1, kept: 1, ..Stats::default() });
/// assert_eq!(
///     builder.text(),
///     "calltime-trace 1\nprocess 7 0 /bin/app\nplan p \ninv 0 thread 1 100 50 2 0 0 main\n\
///      n 0 0 100 50 0\nn 1 1 110 20 0\nend 0\nstats 1 1 0 0 0\n"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    text: String,
}

impl TraceBuilder {
    /// Starts a trace with the header lines of `header`: `calltime-trace`, `process`, `plan` (when `plan_id` is set,
    /// as the runtime always does), and from version 2 `settings` (the runtime's settings in its order, then others
    /// by name). Invocations, statistics and warnings of `header` are not written.
    pub fn new(header: &Trace) -> TraceBuilder {
        let mut text = String::new();
        records::write_magic(&mut text, header.version);
        records::write_process(&mut text, header);
        if header.plan_id.is_some() {
            records::write_plan(&mut text, header);
        }
        if header.version >= 2 {
            records::write_settings(&mut text, header);
        }
        TraceBuilder { text }
    }

    /// Appends one invocation record: its `inv` line, its nodes in preorder (`a` lines when `inv.folded`, `n` lines
    /// otherwise) and `end`.
    pub fn invocation(&mut self, inv: &Invocation) -> &mut TraceBuilder {
        records::write_inv(&mut self.text, inv, inv.root.count());
        let write_node = if inv.folded { records::write_path } else { records::write_call };
        preorder(&inv.root, 0, &mut |depth, node| write_node(&mut self.text, depth, node));
        records::write_end(&mut self.text, inv.seq);
        self
    }

    /// Appends a `stats` line (`incomplete` is the reader's count and is not written).
    pub fn stats(&mut self, stats: &Stats) -> &mut TraceBuilder {
        records::write_stats(&mut self.text, stats);
        self
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// The whole of `trace` as the runtime would have written it: header, invocations, and its `stats` line when it
    /// had one.
    pub fn write(trace: &Trace) -> String {
        let mut builder = TraceBuilder::new(trace);
        for inv in &trace.invocations {
            builder.invocation(inv);
        }
        if trace.stats_records > 0 {
            builder.stats(&trace.stats);
        }
        builder.into_text()
    }
}

fn preorder(node: &Node, depth: u32, visit: &mut impl FnMut(u32, &Node)) {
    visit(depth, node);
    for child in &node.children {
        preorder(child, depth + 1, visit);
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    /// Every format feature (both node kinds, flags, settings of a later runtime, names with spaces, empty names)
    /// reads back to the same model, and the model writes back to the same bytes.
    #[test]
    fn written_traces_read_back_and_write_back_byte_for_byte() {
        let text = "calltime-trace 2\nprocess 4242 1795382232762346307 /work/my app/app\n\
            plan 3fa2c1d0 /work/app/target/calltime/3fa2c1d0.functions.json\n\
            settings node_cap=100000 fold_after=4096 time_sample=64 min_ns=0 sample=1 max_invocations=100000 later=7\n\
            inv 0 thread 1 1000 136000000 4 0 0 main thread\n\
            a 0 0 1 1 1000 136000000 136000000 136000000 0\n\
            a 1 3 441070 6892 1200 1089000 13 280000 2\n\
            a 2 5 337452 5273 1300 221000 11 247000 0\n\
            a 1 4 3 3 2000 900 200 400 1\n\
            end 0\n\
            inv 1 task 7 200000000 50 3 12 4 \n\
            n 0 10 200000000 50 2\n\
            n 1 3 200000010 20 1\n\
            n 1 3 200000035 10 3\n\
            end 1\n\
            stats 2 2 0 0 1\n";
        let trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(TraceBuilder::write(&trace), text);
        let task = &trace.invocations[1].root;
        assert!(task.cancelled && !task.panicked);
        assert!(task.children[1].cancelled && task.children[1].panicked);
        assert_eq!(trace.invocations[0].root.children[0].timed_ns, 1_089_000);
    }

    #[test]
    fn version_1_has_no_settings_line() {
        let text = "calltime-trace 1\nprocess 1 0 \nplan p \ninv 0 thread 1 5 1 1 0 0 \nn 0 2 5 1 0\nend 0\n";
        let trace = parse(text).unwrap();
        assert_eq!(TraceBuilder::write(&trace), text);
    }
}

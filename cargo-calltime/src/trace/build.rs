//! The one writer of the trace format outside the runtime: model values back to the text the runtime writes
//! (docs/trace-format.md, versions 1 and 2), byte for byte. Tests build their traces with it instead of formatting
//! lines by hand.

use super::records;
use super::{AggregatePath, Invocation, Node, Quiet, Retirement, RunAggregate, Stats, Trace};

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
    /// The header's version: which fields `a` and `stats` lines carry.
    version: u32,
    /// Node lines carry allocation counts (the header's settings name `allocs`, as the runtime writes them).
    allocs: bool,
}

impl TraceBuilder {
    /// Starts a trace with the header lines of `header`: `calltime-trace`, `process`, `plan` (when `plan_id` is set,
    /// as the runtime always does), and from version 2 `settings` (the runtime's settings in its order, then others
    /// by name), and from version 3 `calibration` when `header.calibration` is set. Invocations, retirements,
    /// statistics and warnings of `header` are not written.
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
        if let (3.., Some(calibration)) = (header.version, &header.calibration) {
            records::write_calibration(&mut text, calibration);
        }
        TraceBuilder { text, version: header.version, allocs: header.settings.contains_key("allocs") }
    }

    /// Appends one invocation record: its `inv` line, its nodes in preorder (`a` lines when `inv.folded`, `n` lines
    /// otherwise), its `r` lines (version 3) and `end`.
    pub fn invocation(&mut self, inv: &Invocation) -> &mut TraceBuilder {
        records::write_inv(&mut self.text, inv, inv.root.count());
        let (version, allocs) = (self.version, self.allocs);
        let text = &mut self.text;
        preorder(&inv.root, 0, &mut |depth, node| match inv.folded {
            true => records::write_path(text, depth, node, version, allocs),
            false => records::write_call(text, depth, node, allocs),
        });
        for retired in &inv.retired {
            records::write_retired_calls(&mut self.text, retired);
        }
        records::write_end(&mut self.text, inv.seq);
        self
    }

    /// Appends a `retire` record (version 3; between invocations).
    pub fn retire(&mut self, retirement: &Retirement) -> &mut TraceBuilder {
        records::write_retire(&mut self.text, retirement);
        self
    }

    /// Appends a `quiet` record (between invocations): the function's calls are no longer counted from here on.
    pub fn quiet(&mut self, quiet: &Quiet) -> &mut TraceBuilder {
        records::write_quiet(&mut self.text, quiet);
        self
    }

    /// Appends an `aggregate` record: its first line, then one `g` line per call path in preorder.
    pub fn aggregate(&mut self, aggregate: &RunAggregate) -> &mut TraceBuilder {
        fn count(path: &AggregatePath) -> usize {
            1 + path.children.iter().map(count).sum::<usize>()
        }
        fn paths(out: &mut String, depth: u32, path: &AggregatePath) {
            records::write_aggregate_path(out, depth, path);
            path.children.iter().for_each(|child| paths(out, depth + 1, child));
        }
        records::write_aggregate(&mut self.text, aggregate, aggregate.roots.iter().map(count).sum());
        aggregate.roots.iter().for_each(|root| paths(&mut self.text, 0, root));
        aggregate.retired.iter().for_each(|r| records::write_aggregate_retired(&mut self.text, r));
        self
    }

    /// Appends a `control` record (a setting `ctl` switched; between invocations).
    pub fn control(&mut self, change: &super::ControlChange) -> &mut TraceBuilder {
        super::service::write_control(&mut self.text, change);
        self
    }

    /// Appends a `sampled` record (a root's invocations sampled for cost).
    pub fn sampled(&mut self, sampled: &super::SampledRoot) -> &mut TraceBuilder {
        records::write_sampled(&mut self.text, sampled);
        self
    }

    /// Appends a `stats` line (`incomplete` is the reader's count and is not written; the fields of version 3
    /// only from version 3 on).
    pub fn stats(&mut self, stats: &Stats) -> &mut TraceBuilder {
        records::write_stats(&mut self.text, stats, self.version);
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
    /// had one. Each retirement is written before the first invocation that ends after it (or counts calls of its
    /// function as retired), as the runtime's writer does; the rest after the last invocation.
    pub fn write(trace: &Trace) -> String {
        let mut builder = TraceBuilder::new(trace);
        let mut retirements = trace.retirements.iter().peekable();
        let mut quiet = trace.quiet.iter().peekable();
        for inv in &trace.invocations {
            let ends_ns = inv.start_ns.saturating_add(inv.duration_ns);
            while let Some(r) =
                retirements.next_if(|r| r.at_ns < ends_ns || inv.retired.iter().any(|c| c.func == r.func))
            {
                builder.retire(r);
            }
            while let Some(q) = quiet.next_if(|q| q.at_ns < ends_ns) {
                builder.quiet(q);
            }
            builder.invocation(inv);
        }
        for r in retirements {
            builder.retire(r);
        }
        for q in quiet {
            builder.quiet(q);
        }
        // Where they stood among the trees does not matter: each has its time.
        for change in &trace.controls {
            builder.control(change);
        }
        // The runtime writes its last aggregate right before its last `stats` line.
        if let Some(aggregate) = &trace.aggregate {
            builder.aggregate(aggregate);
        }
        if trace.stats_records > 0 {
            for sampled in &trace.sampled {
                builder.sampled(sampled);
            }
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

    /// `Err` returns: flag bit 2 on an `n` line, and on an `a` line with the count appended after the allocation
    /// fields (a path flagged without a count had at least one); concurrent children's self time is the duration less their union.
    #[test]
    fn err_counts_and_concurrent_children_read_back() {
        let text = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4096\n\
            inv 0 task 1 1000 100 3 0 0 \n\
            n 0 0 1000 100 4\n\
            n 1 1 1010 60 0\n\
            n 1 2 1020 70 6\n\
            end 0\n\
            inv 1 thread 1 2000 500 3 0 0 main\n\
            a 0 0 1 1 2000 500 500 500 0 1 500\n\
            a 1 3 10 10 2010 300 20 40 4 10 300 0 0 7\n\
            a 1 4 2 2 2400 90 40 50 4 2 90\n\
            end 1\n\
            stats 2 2 0 0 0 0 0 0 0\n";
        let trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        // The flagged path without a count is written back with its count: 1.
        assert_eq!(TraceBuilder::write(&trace), text.replace(" 4 2 90\n", " 4 2 90 0 0 1\n"));
        let root = &trace.invocations[0].root;
        assert_eq!((root.errs, root.children[0].errs, root.children[1].errs), (1, 0, 1));
        assert!(root.children[1].cancelled);
        // Children cover 1010..1090: 80 ns of the root's 100, though they add up to 130.
        assert_eq!((root.children_busy_ns(), root.children_overlap_ns(), root.self_ns()), (80, 50, 20));
        let folded = &trace.invocations[1].root;
        assert_eq!((folded.children[0].errs, folded.children[1].errs), (7, 1));
        // Call paths have no intervals: their sum counts.
        assert_eq!((folded.children_busy_ns(), folded.self_ns()), (390, 110));
    }

    /// Version 3: the calibration line, the retire settings, `retire` records between invocations, `r` lines after
    /// an invocation's nodes, the exact part of `a` lines and the drop causes of `stats`.
    #[test]
    fn version_3_records_read_back_and_write_back_byte_for_byte() {
        let text = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\n\
            settings node_cap=100000 fold_after=4096 time_sample=64 min_ns=0 sample=1 max_invocations=100000 \
            retire=1 retire_factor=20 retire_min_calls=1000\n\
            calibration recorded_inner=7000 recorded_outer=12500 folded_outer=2000 timed_inner=9000 timed_outer=15000 \
            retired_outer=1500\n\
            inv 0 thread 1 1000 500000 3 0 0 main\n\
            a 0 0 1 1 1000 500000 500000 500000 0 1 500000\n\
            a 1 3 10000 4200 1200 90000 5 900 0 4096 80000\n\
            a 1 4 3 3 2000 900 200 400 1 3 900\n\
            end 0\n\
            retire 3 501000 10000 4\n\
            inv 1 thread 1 600000 5000 1 0 0 main\n\
            n 0 0 600000 5000 0\n\
            r 3 2500\n\
            end 1\n\
            stats 2 2 0 7 0 1 5 1 1\n";
        let trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(TraceBuilder::write(&trace), text);
        let c = trace.calibration.unwrap();
        assert_eq!((c.recorded_inner, c.recorded_outer, c.retired_outer), (7000, 12500, 1500));
        assert_eq!(trace.settings["retire_factor"], 20);
        assert_eq!(trace.retirements, [Retirement { func: 3, at_ns: 501_000, calls: 10_000, mean_ns: 4 }]);
        assert_eq!(trace.invocations[1].retired, [crate::trace::RetiredCalls::counted(3, 2500)]);
        let busy = &trace.invocations[0].root.children[0];
        assert_eq!((busy.exact_calls, busy.exact_ns), (4096, 80_000));
        // 80_000 exact + 5904 later calls at the mean of 104 samples (10_000 ns): 80_000 + 567_692.
        assert_eq!(busy.duration_ns, 80_000 + 567_692);
        let stats = trace.stats;
        let causes = (stats.dropped_limit, stats.dropped_queue_full, stats.dropped_no_buffer, stats.retired_functions);
        assert_eq!((stats.dropped, causes), (7, (1, 5, 1, 1)));
    }

    #[test]
    fn version_3_keys_are_optional_and_unknown_ones_ignored() {
        let text = "calltime-trace 3\ncalibration recorded_outer=9000 future=3\nstats 1 1 0 0 0\n";
        let trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let c = trace.calibration.unwrap();
        assert_eq!((c.recorded_outer, c.recorded_inner), (9000, 0));
        assert_eq!((trace.stats.seen, trace.stats.dropped_queue_full), (1, 0));
        let bad = parse("calltime-trace 3\ninv 0 thread 1 0 10 1 0 0 \nr 3 2\nn 0 0 0 10 0\nend 0\n").unwrap();
        assert!(bad.invocations.is_empty() && bad.warnings[0].contains("after `r` lines"), "{:?}", bad.warnings);
        let bad = parse("calltime-trace 3\ninv 0 thread 1 0 10 1 0 0 \na 0 0 1 1 0 10 10 10 0\nend 0\n").unwrap();
        assert!(bad.warnings[0].contains("too few fields"), "{:?}", bad.warnings);
    }

    /// A periodic `stats` line (a final 1) marks the counters as written while the program ran; the last line wins,
    /// so the one written at exit clears it; a periodic line writes back with every field.
    #[test]
    fn periodic_stats_lines_read_back_and_write_back() {
        let head = "calltime-trace 3\nprocess 1 0 /app\nplan p \nsettings sample=1\n";
        let periodic = "stats 5 5 0 0 0 0 0 0 0 0 0 0 0 0 1\n";
        let trace = parse(&format!("{head}{periodic}")).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert!(trace.stats.periodic && trace.stats.seen == 5);
        assert_eq!(TraceBuilder::write(&trace), format!("{head}{periodic}"));
        let exited = parse(&format!("{head}{periodic}stats 6 6 0 0 0 0 0 0 0 0 0 0 0 0\n")).unwrap();
        assert!(!exited.stats.periodic && exited.stats.seen == 6);
    }

    /// The whole-run aggregate (`aggregate`, `g` and `gr` lines): the last complete record wins, and the builder
    /// writes it back before the last `stats` line, as the runtime does at exit.
    #[test]
    fn aggregate_records_read_back_and_write_back() {
        let head = "calltime-trace 3\nprocess 1 0 /app\nplan p \nsettings sample=1\n";
        let first = "aggregate 500 1 1 0 0 0\ng 0 0 1 1 900 900 900 93:1\n";
        // The root's `gs` line: self time by the union of its children's intervals, not 3000 - 400.
        let last =
            "aggregate 900 3 3 2 7 1\ngs 2800\ng 0 0 3 3 3000 900 1200 93:2 95:1\ng 1 4 5 2 400 100 300 55:1 61:1\n\
                    g 0 9 1 0 70 0 0\ngr 6 40\n";
        let text = format!("{head}{first}{last}stats 3 3 0 0 0 0 0 0 1\n");
        let trace = parse(&text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let aggregate = trace.aggregate.as_ref().unwrap();
        assert_eq!((aggregate.at_ns, aggregate.invocations, aggregate.untracked_calls), (900, 3, 2));
        assert_eq!((aggregate.dropped_cap, aggregate.processes, aggregate.roots.len()), (7, 1, 2));
        let root = &aggregate.roots[0];
        assert_eq!((root.calls, root.histogram.clone()), (3, vec![(93, 2), (95, 1)]));
        assert_eq!((root.children[0].func, root.children[0].timed), (4, 2));
        assert_eq!((root.self_ns, root.children[0].self_ns, aggregate.roots[1].self_ns), (Some(2800), None, None));
        assert_eq!(aggregate.retired, [crate::trace::RetiredCalls::counted(6, 40)]);
        assert_eq!(TraceBuilder::write(&trace), format!("{head}{last}stats 3 3 0 0 0 0 0 0 1\n"));
        // A record cut off by a crash leaves the previous one.
        let cut = parse(&format!("{head}{first}aggregate 900 3 3 0 0 0\ng 0 0 3 3 3000 900 1200\n")).unwrap();
        assert_eq!(cut.aggregate.unwrap().at_ns, 500);
        let bad = parse(&format!("{head}aggregate 1 1 1 0 0 0\ng 0 0 1 1 9 9 9 5:1 4:1\n")).unwrap();
        assert!(bad.warnings[0].contains("out of order"), "{:?}", bad.warnings);
    }

    #[test]
    fn version_1_has_no_settings_line() {
        let text = "calltime-trace 1\nprocess 1 0 \nplan p \ninv 0 thread 1 5 1 1 0 0 \nn 0 2 5 1 0\nend 0\n";
        let trace = parse(text).unwrap();
        assert_eq!(TraceBuilder::write(&trace), text);
    }
}

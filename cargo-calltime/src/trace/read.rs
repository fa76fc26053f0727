//! The one reader of the trace format: lines (see `records`) assembled into a [`Trace`]. What a crash leaves (a
//! record without `end`, a torn last line) is counted and left out; any other bad line drops its record with a
//! warning and the load goes on.

use anyhow::{bail, Context, Result};

use super::service;
use super::{binary, records};
use super::{not_a_trace, AggregatePath, Invocation, Node, RunAggregate, Trace, TRACE_VERSION, TRACE_VERSIONS};

/// Parses trace text. Records cut off at the end (no `end` line) are counted in `stats.incomplete`.
pub fn parse(text: &str) -> Result<Trace> {
    parse_text(text, 0)
}

/// Parses a trace file's bytes: text, or from version 4 on text with binary blocks (`binary`). Records cut off
/// at the end (a record without `end`, a block shorter than it says) are counted in `stats.incomplete`.
pub fn parse_bytes(bytes: &[u8]) -> Result<Trace> {
    if !has_blocks(bytes) {
        return parse(&String::from_utf8_lossy(bytes));
    }
    let expanded = binary::expand(bytes);
    let mut trace = parse_text(&expanded.text, expanded.cut_off)?;
    trace.warnings.extend(expanded.warnings);
    Ok(trace)
}

/// A trace file's bytes as text lines only (version 4's binary blocks written out as the lines they stand for),
/// for tests and tools that read traces line by line.
pub fn text_of(bytes: &[u8]) -> String {
    if has_blocks(bytes) {
        binary::expand(bytes).text
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Whether the file's version may hold binary blocks (4 and later).
fn has_blocks(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    std::str::from_utf8(first).ok().and_then(|line| records::read_magic(line.trim_end())).is_some_and(|v| v >= 4)
}

/// `cut_off`: records already known to be cut off (binary blocks at the end of the file).
fn parse_text(text: &str, cut_off: u64) -> Result<Trace> {
    if text.is_empty() {
        return Err(not_a_trace("the file is empty"));
    }
    let (first, body) = text.split_once('\n').unwrap_or((text, ""));
    let version = read_version(first.trim_end_matches('\r'))?;
    let mut trace = Trace { version, processes: 1, files: 1, ..Trace::default() };
    trace.stats.incomplete = cut_off;
    let mut reader = Reader { trace, open: None, aggregate: None };
    for (index, line) in body.split_inclusive('\n').enumerate() {
        let lineno = index + 2;
        match line.strip_suffix('\n') {
            Some(line) => reader.line(lineno, line.strip_suffix('\r').unwrap_or(line)),
            None => reader.torn(lineno),
        }
    }
    Ok(reader.finish())
}

/// The version of the first line, if this reader knows it.
fn read_version(first: &str) -> Result<u32> {
    let magic = records::MAGIC;
    let Some(version) = records::read_magic(first) else {
        return Err(not_a_trace(format!("the first line is not `{magic} <version>`")));
    };
    if !TRACE_VERSIONS.contains(&version) {
        return Err(not_a_trace(format!(
            "trace format version {version} is not supported (this cargo-calltime reads versions 1 to {TRACE_VERSION})"
        )));
    }
    Ok(version)
}

/// An invocation being read: its `inv` line, the node count it announced, and its nodes in preorder with depths.
struct Open {
    inv: Invocation,
    node_count: u64,
    nodes: Vec<(u32, Node)>,
    /// Its `p` records so far, each with its nodes.
    parts: Vec<OpenPart>,
}

/// A `p` record being read: the line of its spawning node, the node count it announced, its nodes.
struct OpenPart {
    parent: u64,
    node_count: u64,
    nodes: Vec<(u32, Node)>,
}

/// An `aggregate` record being read: its first line, the path count it announced, its paths with depths.
struct OpenAggregate {
    aggregate: RunAggregate,
    count: u64,
    paths: Vec<(u32, AggregatePath)>,
    /// The self time a `gs` line gave the next path.
    next_self: Option<u64>,
}

struct Reader {
    trace: Trace,
    open: Option<Open>,
    aggregate: Option<OpenAggregate>,
}

impl Reader {
    fn line(&mut self, lineno: usize, line: &str) {
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        if let Err(e) = self.record(kind, rest) {
            // A bad line is reported but does not stop the load; the record it belongs to is left out.
            self.trace.warnings.push(format!("line {lineno}: {e:#}"));
            self.cut_off();
        }
    }

    /// The last line has no newline: the writer was stopped in the middle of it, so it may be any prefix of a line.
    fn torn(&mut self, lineno: usize) {
        if self.open.is_none() {
            self.trace.warnings.push(format!("line {lineno} is cut off (the program stopped while writing it)"));
        }
        self.cut_off();
    }

    /// The open record, if any, cannot be completed.
    fn cut_off(&mut self) {
        if self.open.take().is_some() {
            self.trace.stats.incomplete += 1;
        }
    }

    fn record(&mut self, kind: &str, rest: &str) -> Result<()> {
        let trace = &mut self.trace;
        match kind {
            "process" => records::read_process(rest, trace),
            "plan" => records::read_plan(rest, trace),
            "settings" => records::read_settings(rest, trace),
            "calibration" => records::read_calibration(rest, trace),
            "retire" => {
                trace.retirements.push(records::read_retire(rest)?);
                Ok(())
            }
            "quiet" => {
                trace.quiet.push(records::read_quiet(rest)?);
                Ok(())
            }
            "r" => {
                let retired = records::read_retired_calls(rest)?;
                let Some(open) = self.open.as_mut() else { bail!("an `r` line outside any invocation") };
                open.inv.retired.push(retired);
                Ok(())
            }
            "inv" => {
                self.cut_off();
                let (inv, node_count) = records::read_inv(rest)?;
                let nodes = Vec::with_capacity(node_count.min(1 << 20) as usize);
                self.open = Some(Open { inv, node_count, nodes, parts: Vec::new() });
                Ok(())
            }
            "p" => {
                let (parent, spawned, [node_count, truncated, filtered]) = records::read_part(rest)?;
                let Some(open) = self.open.as_mut() else { bail!("a `p` line outside any invocation") };
                open.inv.truncated_calls += truncated;
                open.inv.filtered_nodes += filtered;
                open.inv.spawned.push(spawned);
                open.parts.push(OpenPart { parent, node_count, nodes: Vec::new() });
                Ok(())
            }
            "pu" => {
                let count = records::read_unrecorded_parts(rest)?;
                let Some(open) = self.open.as_mut() else { bail!("a `pu` line outside any invocation") };
                open.inv.unrecorded_spawns += count;
                Ok(())
            }
            "n" => self.node(records::read_call(rest)?, false),
            "a" => {
                let version = trace.version;
                self.node(records::read_path(rest, version)?, true)
            }
            "end" => self.end(records::read_end(rest)?),
            "aggregate" => {
                let (aggregate, count) = records::read_aggregate(rest)?;
                self.aggregate = Some(OpenAggregate { aggregate, count, paths: Vec::new(), next_self: None });
                self.aggregate_path(None)
            }
            "gs" => {
                let self_ns = records::read_aggregate_self(rest)?;
                let Some(open) = self.aggregate.as_mut() else { bail!("a `gs` line outside any aggregate record") };
                open.next_self = Some(self_ns);
                Ok(())
            }
            "g" => {
                let (depth, mut path) = records::read_aggregate_path(rest)?;
                path.self_ns = self.aggregate.as_mut().and_then(|open| open.next_self.take());
                self.aggregate_path(Some((depth, path)))
            }
            "gr" => {
                let retired = records::read_aggregate_retired(rest)?;
                let Some(open) = self.aggregate.as_mut() else { bail!("a `gr` line outside any aggregate record") };
                open.aggregate.retired.push(retired);
                self.aggregate_path(None)
            }
            "sampled" => {
                // Cumulative: the last of each root stands.
                let sampled = records::read_sampled(rest)?;
                match trace.sampled.iter_mut().find(|s| s.func == sampled.func) {
                    Some(s) => *s = sampled,
                    None => {
                        trace.sampled.push(sampled);
                        trace.sampled.sort_by_key(|s| s.func);
                    }
                }
                Ok(())
            }
            "stats" => {
                trace.stats = records::read_stats(rest, trace.stats.incomplete)?;
                trace.stats_records += 1;
                Ok(())
            }
            "control" => {
                let change = service::read_control(rest, trace.pid)?;
                trace.controls.push(change);
                Ok(())
            }
            "unheld" => {
                trace.unheld.extend(service::read_unheld(rest)?);
                Ok(())
            }
            // Blank lines, comments and record kinds from newer writers of the same version are skipped.
            _ => Ok(()),
        }
    }

    /// Adds a path to the open aggregate record; a complete record replaces the trace's aggregate (the runtime writes
    /// cumulative ones, the last is the whole run).
    fn aggregate_path(&mut self, path: Option<(u32, AggregatePath)>) -> Result<()> {
        let Some(open) = self.aggregate.as_mut() else { bail!("a `g` line outside any aggregate record") };
        open.paths.extend(path);
        if (open.paths.len() + open.aggregate.retired.len()) as u64 >= open.count {
            let Some(OpenAggregate { mut aggregate, paths, .. }) = self.aggregate.take() else { return Ok(()) };
            aggregate.roots = aggregate_tree(paths).context("malformed aggregate depths")?;
            self.trace.aggregate = Some(aggregate);
        }
        Ok(())
    }

    fn node(&mut self, node: (u32, Node), folded: bool) -> Result<()> {
        let Some(open) = self.open.as_mut() else { bail!("a node outside any invocation") };
        if let Some(part) = open.parts.last_mut() {
            // A part may be folded or not whatever its invocation is.
            part.nodes.push(node);
            return Ok(());
        }
        if !open.inv.retired.is_empty() {
            bail!("a node line after `r` lines (retired calls come after an invocation's nodes)");
        }
        if open.inv.folded && !folded {
            bail!("an `n` line in a folded invocation (its nodes must all be `a` lines)");
        }
        if folded && !open.inv.folded && !open.nodes.is_empty() {
            bail!("an `a` line after `n` lines (an invocation's nodes are all `n` or all `a` lines)");
        }
        open.inv.folded |= folded;
        open.nodes.push(node);
        Ok(())
    }

    fn end(&mut self, seq: u64) -> Result<()> {
        let Some(Open { mut inv, node_count, nodes, parts }) = self.open.take() else { bail!("`end` without `inv`") };
        if seq != inv.seq {
            bail!("`end {seq}` closes invocation {}", inv.seq);
        }
        if nodes.len() as u64 != node_count {
            bail!("invocation {seq} has {} node lines but its `inv` line announces {node_count}", nodes.len());
        }
        inv.root = build_tree(nodes).context("malformed node depths")?;
        if !parts.is_empty() {
            super::parts::attach(&mut inv, node_count, parts.into_iter().map(|p| (p.parent, p.node_count, p.nodes)))?;
        }
        self.trace.invocations.push(inv);
        Ok(())
    }

    fn finish(mut self) -> Trace {
        self.cut_off();
        service::drop_unheld(&mut self.trace);
        let incomplete = self.trace.stats.incomplete;
        if incomplete > 0 {
            self.trace.warnings.push(format!(
                "{incomplete} invocation record(s) were cut off (the program probably crashed while writing) and are \
                 left out"
            ));
        }
        self.trace
    }
}

/// Rebuilds a tree from preorder nodes with depths (root at depth 0).
pub(super) fn build_tree(nodes: Vec<(u32, Node)>) -> Result<Node> {
    let mut stack: Vec<Node> = Vec::new();
    for (depth, node) in nodes {
        let depth = depth as usize;
        if depth == 0 && !stack.is_empty() {
            bail!("a second root in one invocation");
        }
        if depth > stack.len() {
            bail!("depth {depth} follows depth {}", stack.len().saturating_sub(1));
        }
        close_to(&mut stack, depth.max(1));
        stack.push(node);
    }
    close_to(&mut stack, 1);
    stack.pop().context("an invocation without nodes")
}

/// Rebuilds the aggregate's trees (one per root function) from preorder paths with depths.
fn aggregate_tree(paths: Vec<(u32, AggregatePath)>) -> Result<Vec<AggregatePath>> {
    let mut roots = Vec::new();
    let mut stack: Vec<AggregatePath> = Vec::new();
    let close_to = |stack: &mut Vec<AggregatePath>, roots: &mut Vec<AggregatePath>, len: usize| {
        while stack.len() > len {
            let Some(done) = stack.pop() else { return };
            match stack.last_mut() {
                Some(parent) => parent.children.push(done),
                None => roots.push(done),
            }
        }
    };
    for (depth, path) in paths {
        let depth = depth as usize;
        if depth > stack.len() {
            bail!("depth {depth} follows depth {}", stack.len() as i64 - 1);
        }
        close_to(&mut stack, &mut roots, depth);
        stack.push(path);
    }
    close_to(&mut stack, &mut roots, 0);
    Ok(roots)
}

/// Pops nodes into their parents until `len` are left (`len >= 1`).
fn close_to(stack: &mut Vec<Node>, len: usize) {
    while stack.len() > len {
        let Some(done) = stack.pop() else { return };
        if let Some(parent) = stack.last_mut() {
            parent.children.push(done);
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{estimated_total, PathStat};

    const SAMPLE: &str = "calltime-trace 1
process 42 1700000000000000000 /tmp/demo
plan abc123 /tmp/t.functions.json
inv 0 thread 1 100 50 3 0 0 main
n 0 0 100 50 0
n 1 1 110 20 0
n 1 1 135 10 1
end 0
inv 1 task 7 300 10 1 0 0
n 0 0 300 10 0
";

    #[test]
    fn parses_trees_and_drops_cut_off_records() {
        let trace = parse(SAMPLE).unwrap();
        assert_eq!(trace.invocations.len(), 1);
        let inv = &trace.invocations[0];
        assert_eq!(inv.root.children.len(), 2);
        assert!(inv.root.children[1].panicked);
        assert_eq!(inv.root.self_ns(), 20);
        assert_eq!(trace.stats.incomplete, 1);
        assert_eq!(trace.plan_id.as_deref(), Some("abc123"));
        let paths = inv.path_stats();
        assert_eq!(paths[&vec![0, 1]], PathStat { calls: 2, total_ns: 30, self_ns: 30, ..PathStat::default() });
    }

    #[test]
    fn rejects_other_files() {
        assert!(parse("hello").is_err());
        let err = format!("{:#}", parse("calltime-trace 9").unwrap_err());
        assert!(err.contains("version 9 is not supported") && err.contains("reads versions 1 to 5"), "{err}");
    }

    const FOLDED: &str = "calltime-trace 2
process 4242 1795382232762346307 /work/app/target/release/app
plan 3fa2c1d0 /work/app/target/calltime/3fa2c1d0.functions.json
settings node_cap=100000 fold_after=4096 time_sample=64 min_ns=0 sample=1 max_invocations=100000 future=x later=7
inv 0 thread 1 1000 136000000 4 0 0 main
a 0 0 1 1 1000 136000000 136000000 136000000 0
a 1 3 441070 6892 1200 1089000 13 280000 0
a 2 5 337452 5273 1300 221000 11 247000 0
a 1 4 3 3 2000 900 200 400 1
end 0
inv 1 thread 1 200000000 50 2 0 0 main
n 0 0 200000000 50 0
n 1 3 200000010 20 0
end 1
stats 2 2 0 0 0
";

    #[test]
    fn reads_folded_call_paths_and_settings() {
        let trace = parse(FOLDED).unwrap();
        assert_eq!(trace.version, 2);
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.settings["fold_after"], 4096);
        assert_eq!(trace.settings["time_sample"], 64);
        // Unknown settings are kept when they are numbers and skipped otherwise.
        assert_eq!(trace.settings.get("later"), Some(&7));
        assert!(!trace.settings.contains_key("future"));
        assert_eq!(trace.invocations.len(), 2);
        let folded = &trace.invocations[0];
        assert!(folded.folded && !trace.invocations[1].folded);
        let root = &folded.root;
        assert_eq!((root.calls, root.timed_calls, root.duration_ns, root.is_estimated()), (1, 1, 136_000_000, false));
        let busy = &root.children[0];
        assert_eq!((busy.func, busy.calls, busy.timed_calls, busy.start_ns), (3, 441_070, 6892, 1200));
        assert_eq!((busy.min_ns, busy.max_ns), (13, 280_000));
        // 1_089_000 ns over 6892 timed calls, scaled to 441_070 calls: 69_693_155.8 ns.
        assert_eq!(busy.duration_ns, 69_693_156);
        assert!(busy.is_estimated() && !busy.panicked);
        assert_eq!(busy.children[0].duration_ns, estimated_total(221_000, 5273, 337_452));
        // Every call timed: the total is exact; flag bit 0 is the panic.
        let exact = &root.children[1];
        assert_eq!((exact.duration_ns, exact.is_estimated(), exact.panicked), (900, false, true));
        assert_eq!(root.self_ns(), 136_000_000 - 69_693_156 - 900);
        let paths = folded.path_stats();
        assert_eq!(paths[&vec![0, 3]].calls, 441_070);
        assert_eq!(paths[&vec![0, 3, 5]].calls, 337_452);
        assert_eq!(paths[&vec![0, 4]], PathStat { calls: 3, total_ns: 900, self_ns: 900, ..PathStat::default() });
        // A version 1 style invocation in the same file is read per call, as before.
        assert_eq!(trace.invocations[1].root.children[0].calls, 1);
    }

    #[test]
    fn estimates_scale_timed_time_to_every_call() {
        assert_eq!(estimated_total(1000, 10, 10), 1000);
        assert_eq!(estimated_total(1000, 3, 10), 3333);
        assert_eq!(estimated_total(2000, 3, 10), 6667);
        assert_eq!(estimated_total(5, 0, 10), 0);
        assert_eq!(estimated_total(u64::MAX, 1, u64::MAX), u64::MAX);
    }

    #[test]
    fn malformed_call_paths_drop_their_invocation_with_a_warning() {
        let bad = |line: &str| {
            let text = format!(
                "calltime-trace 2\nprocess 1 0 /x\nplan p \ninv 0 thread 1 0 10 2 0 0 \n\
                 a 0 0 1 1 0 10 10 10 0\n{line}\nend 0\ninv 1 thread 1 20 5 1 0 0 \nn 0 0 20 5 0\nend 1\n"
            );
            let trace = parse(&text).unwrap();
            assert_eq!(trace.invocations.len(), 1, "{line}");
            assert_eq!(trace.invocations[0].seq, 1, "the next invocation is still read");
            trace.warnings[0].clone()
        };
        assert!(bad("a 1 2 3 4 0 10 1 5 0").contains("4 timed calls of 3"));
        assert!(bad("a 1 2 0 0 0 0 0 0 0").contains("0 calls"));
        assert!(bad("n 1 2 3 4 0").contains("an `n` line in a folded invocation"));
        assert!(bad("a 1 2 3").contains("too few fields"));
        let mixed = "calltime-trace 2\nplan p \ninv 0 thread 1 0 10 2 0 0 \nn 0 0 0 10 0\na 1 1 1 1 0 5 5 5 0\nend 0\n";
        let trace = parse(mixed).unwrap();
        assert!(trace.invocations.is_empty());
        assert!(trace.warnings[0].contains("an `a` line after `n` lines"), "{:?}", trace.warnings);
        let trace = parse("calltime-trace 2\nsettings fold_after=lots\n").unwrap();
        assert!(trace.warnings[0].contains("setting fold_after=`lots` is not a number"), "{:?}", trace.warnings);
    }
}

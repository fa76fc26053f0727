//! The default view: indented trees of the slowest invocations, the aggregate by call path, and a summary.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use super::aggregate::{aggregate, callers_of_retired, select, whole_run, Aggregate, Callers, Merged};
use super::times::{retired_text, retirement, settings_note, times_note};
use super::{plan_summary, Names, ViewOptions};
use crate::trace::{Invocation, RetiredCalls, ThreadKind, Trace};
use crate::units::thousands;
use crate::units::{format_bytes, format_calls, format_ns, plural_s};

pub fn render(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<String> {
    let view = TextView {
        trace,
        opts,
        names: Names::new(&trace.table),
        paint: Paint { on: opts.color },
        origin_ns: trace.invocations.iter().map(|i| i.start_ns).min().unwrap_or(0),
        callers: callers_of_retired(trace),
        runtime_aggregate: false,
    };
    let mut out = String::new();
    let selected = select(trace, opts.invocation)?;
    if opts.invocation.is_some() {
        // Just the one invocation: its header says everything a title would, after what its times are.
        view.times_lines(&mut out);
        for (k, inv) in selected {
            view.invocation(&mut out, k, inv);
        }
        return Ok(out);
    }
    let count = trace.invocations.len();
    let what = plan_summary(trace);
    if count == 0 {
        let _ = writeln!(out, "{}", view.paint.s(bold(), &format!("{what}: no complete invocation was recorded")));
    } else {
        let shown = if opts.top == 0 {
            String::new()
        } else if count > opts.top {
            format!(", the {} slowest shown in full", opts.top)
        } else if count > 1 {
            ", slowest first".to_owned()
        } else {
            String::new()
        };
        let title = format!("{what}: {count} invocation{} recorded{shown}", plural_s(count as u64));
        let _ = writeln!(out, "{}", view.paint.s(bold(), &title));
    }
    view.times_lines(&mut out);
    let mut slowest = selected;
    slowest.sort_by(|(ka, a), (kb, b)| b.duration_ns.cmp(&a.duration_ns).then(ka.cmp(kb)));
    for (k, inv) in slowest.into_iter().take(opts.top) {
        out.push('\n');
        view.invocation(&mut out, k, inv);
    }
    if count > 1 {
        for agg in aggregate(&trace.invocations) {
            out.push('\n');
            view.aggregate(&mut out, &agg);
        }
    }
    out.push('\n');
    view.summary(&mut out);
    Ok(out)
}

/// `--format aggregate`: the whole run by call path, from the runtime's aggregate when the trace has one (every
/// invocation, kept or not), else from the kept invocations; then the summary.
pub fn render_whole_run(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<String> {
    let view = TextView {
        trace,
        opts,
        names: Names::new(&trace.table),
        paint: Paint { on: opts.color },
        origin_ns: 0,
        callers: callers_of_retired(trace),
        runtime_aggregate: whole_run(trace).is_some() && trace.aggregate.is_some(),
    };
    let mut out = String::new();
    let what = plan_summary(trace);
    let kept = trace.invocations.len() as u64;
    let (aggregates, coverage) = match (whole_run(trace), &trace.aggregate) {
        (Some(aggregates), Some(run)) => {
            let processes = match run.processes {
                0 | 1 => String::new(),
                n => format!(" of {n} processes"),
            };
            let coverage = format!(
                "whole run{processes}: {} invocation{} folded in by the runtime (as of +{}), {kept} kept as trees",
                thousands(run.invocations),
                plural_s(run.invocations),
                format_ns(run.at_ns)
            );
            (aggregates, coverage)
        }
        _ => (
            aggregate(&trace.invocations),
            format!("the {kept} kept invocation{} only (the trace has no whole-run aggregate)", plural_s(kept)),
        ),
    };
    let _ = writeln!(out, "{}", view.paint.s(bold(), &format!("{what}: {coverage}")));
    if trace.aggregate.is_some() {
        let note = "times as recorded (probe cost included; estimates clamped to their caller); calls are exact";
        let _ = writeln!(out, "{}", view.paint.s(dim(), note));
        if let Some(run) = trace.aggregate.as_ref().filter(|r| r.untracked_calls > 0 || r.dropped_cap > 0) {
            // Only the causes that applied: a zero count beside the real one reads as a second problem.
            let mut parts = Vec::new();
            if run.untracked_calls > 0 {
                let calls = thousands(run.untracked_calls);
                parts.push(format!("{calls} calls on paths past the runtime's path cap (counted, not shown)"));
            }
            if run.dropped_cap > 0 {
                let trees = thousands(run.dropped_cap);
                parts.push(format!("{trees} trees dropped by the hourly byte cap (counted here, not kept as trees)"));
            }
            let _ = writeln!(out, "{}", view.paint.s(warn(), &format!("  {}", parts.join("; "))));
        }
    } else {
        view.times_lines(&mut out);
    }
    for agg in &aggregates {
        out.push('\n');
        view.aggregate(&mut out, agg);
    }
    out.push('\n');
    view.summary(&mut out);
    Ok(out)
}

/// Tree levels drawn with indentation; deeper levels are labelled with their depth.
const MAX_INDENT: usize = 40;

struct TextView<'a> {
    trace: &'a Trace,
    opts: &'a ViewOptions,
    names: Names,
    paint: Paint,
    /// Start of the first recorded invocation: start times print relative to it.
    origin_ns: u64,
    /// The callers of retired functions: where their later calls go in a tree that recorded none of theirs.
    callers: Callers,
    /// The aggregates shown are the runtime's whole-run aggregate, which counts no allocations: no alloc columns.
    runtime_aggregate: bool,
}

/// The runtime's frame-depth limit: the `max_depth` setting, or the fixed limit of runtimes that did not write it.
fn max_depth(trace: &Trace) -> u64 {
    trace.settings.get("max_depth").copied().unwrap_or(4096)
}

/// The limit, when this truncated invocation's tree is as deep as it (so deeper calls were cut, whatever the node
/// cap). Levels are counted without recursion: a tree cut by the limit is thousands of levels deep.
fn depth_limit_reached(trace: &Trace, inv: &Invocation) -> Option<u64> {
    if inv.truncated_calls == 0 {
        return None;
    }
    let limit = max_depth(trace);
    let mut deepest = 0u64;
    let mut stack = vec![(&inv.root, 1u64)];
    while let Some((node, level)) = stack.pop() {
        deepest = deepest.max(level);
        stack.extend(node.children.iter().map(|c| (c, level + 1)));
    }
    (deepest >= limit).then_some(limit)
}

/// The functions the plan left out because they only build a closure, an `impl Trait` value or a struct of their
/// arguments (parser combinators):
/// their work runs when the value is used, in their callers' self time. The first few by name.
fn builders_note(builders: &[String]) -> Option<String> {
    const NAMED: usize = 6;
    if builders.is_empty() {
        return None;
    }
    let mut names = builders.iter().take(NAMED).map(String::as_str).collect::<Vec<_>>().join(", ");
    if builders.len() > NAMED {
        names.push_str(&format!(" and {} more", builders.len() - NAMED));
    }
    Some(format!(
        "no probe in {} that only build a closure, an `impl Trait` value or a struct of their arguments (their work \
         runs where it is used, in the callers' self time): {names}",
        crate::units::plural(builders.len() as u64, "function")
    ))
}

impl TextView<'_> {
    /// The recording settings (version 3) and whether times are compensated, under the title.
    fn times_lines(&self, out: &mut String) {
        let builders = builders_note(&self.trace.table.builders);
        for line in settings_note(self.trace).into_iter().chain([times_note(self.trace)]).chain(builders) {
            let _ = writeln!(out, "{}", self.paint.s(dim(), &line));
        }
    }

    /// `retired: tok::helper 95,012 calls (not timed; ...)` lines after a tree, one per retired function; those in
    /// `unplaced` found no node of theirs or of a caller in the tree, and say so.
    fn retired_lines(
        &self,
        out: &mut String,
        tree: &Merged,
        retired: &[RetiredCalls],
        unplaced: &[RetiredCalls],
        per_invocation: Option<u64>,
    ) {
        for r in retired {
            let mark = if r.estimated { "~" } else { "" };
            let calls = match per_invocation {
                None => format!("{mark}{} call{}", thousands(r.calls), plural_s(r.calls)),
                Some(n) => format!("{mark}{} calls/inv", format_calls(r.calls as f64 / n.max(1) as f64)),
            };
            let dropped = self.trace.stats.dropped_cap > 0;
            let text =
                retired_text(&self.names.get(r.func), &calls, retirement(self.trace, r.func), r.estimated, dropped);
            let placed = if unplaced.iter().any(|u| u.func == r.func) {
                ", not in the tree: no call of it or of a caller recorded there".to_owned()
            } else {
                self.placed_under(tree, r.func)
            };
            let _ = writeln!(out, "{}", self.paint.s(dim(), &format!("retired: {text}{placed}")));
        }
    }

    /// Where a retired function's later calls went: under the callers it was recorded under before it retired. A
    /// caller that first called it afterwards is not in the trace, so its calls show under those (petgraph's
    /// `FixedBitSet::visit`, recorded under `dijkstra` only, took `Dfs::next`'s later calls there).
    fn placed_under(&self, tree: &Merged, func: u32) -> String {
        fn walk(node: &Merged, func: u32, out: &mut Vec<u32>) {
            for child in &node.children {
                if child.func == func && child.retired_calls > 0 && !out.contains(&node.func) {
                    out.push(node.func);
                }
                walk(child, func, out);
            }
        }
        let mut callers = Vec::new();
        walk(tree, func, &mut callers);
        if callers.is_empty() {
            return String::new();
        }
        let names: Vec<String> = callers.iter().take(3).map(|&f| self.names.get(f).to_string()).collect();
        let more = match callers.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        format!(
            "; later calls placed under {}{more} (where it was recorded before it retired: a caller that first called \
             it after that is not known)",
            names.join(", ")
        )
    }

    fn invocation(&self, out: &mut String, k: usize, inv: &Invocation) {
        let start = format_ns(inv.start_ns.saturating_sub(self.origin_ns));
        let header =
            format!("invocation #{k} · {} · started +{start} · took {}", inv.thread, format_ns(inv.duration_ns));
        let _ = writeln!(out, "{}", self.paint.s(bold(), &header));
        if let Some(note) = spawned_note(inv) {
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        if inv.truncated_calls > 0 {
            let limit = match depth_limit_reached(self.trace, inv) {
                Some(depth) => format!("reached the frame-depth limit (--max-depth {depth})"),
                None => "hit the node cap (--node-cap)".to_owned(),
            };
            let note = format!(
                "  truncated: the tree {limit}; {} more call{} were counted, not recorded{}",
                inv.truncated_calls,
                plural_s(inv.truncated_calls),
                if inv.folded { " (the cap counts call paths here)" } else { "" }
            );
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        if inv.filtered_nodes > 0 {
            let note = format!(
                "  {} call{} shorter than --min-node-time left out with their subtrees",
                inv.filtered_nodes,
                plural_s(inv.filtered_nodes)
            );
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        let mut tree = Merged::of_invocation(inv);
        let unplaced = tree.place_retired(&inv.retired, &self.callers);
        tree.estimate_retired_times(&self.trace.retirements);
        if inv.folded {
            let note = format!("  {}", self.folded_note(tree.has_estimates()));
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        let root_total = tree.total_ns;
        let allocs = self.trace.counts_allocs();
        let mut rows = Vec::new();
        let cells = |node: &Merged| {
            let mut cells = vec![
                approx(node.total_ns, node.is_estimated()),
                approx(node.self_ns, self_is_estimated(node)),
                percent(node.total_ns, root_total),
                calls_cell(node, None),
            ];
            if allocs {
                cells.extend([
                    node.allocs.to_string(),
                    node.self_allocs.to_string(),
                    format_bytes(node.alloc_bytes as f64),
                    format_bytes(node.self_alloc_bytes as f64),
                ]);
            }
            Row { cells: untimed_dashes(node, cells, 0..3), ..Row::default() }
        };
        self.rows(&tree, &mut rows, String::new(), 0, None, &Columns { spread: true, cells: &cells, invocations: 1 });
        // The "(N more)" line of `--min-time` shows the folded calls' total and share.
        let folded = |total: u64, calls: u64, estimated: bool| {
            let mut cells =
                vec![approx(total, estimated), String::new(), percent(total, root_total), calls.to_string()];
            cells.resize(if allocs { 8 } else { 4 }, String::new());
            cells
        };
        let mut header = vec!["total", "self", "%root", "calls"];
        if allocs {
            header.extend(ALLOC_COLUMNS);
        }
        self.table(out, &header, 0, rows, &folded);
        if tree.has_retired_calls() {
            let _ = writeln!(out, "{}", self.paint.s(dim(), RETIRED_IN_TREE_NOTE));
        }
        self.retired_lines(out, &tree, &inv.retired, &unplaced, None);
    }

    /// The root's total over the whole run when its invocations were sampled for cost and none was a root task:
    /// the recorded ones' total plus the skipped ones' time, and whether that is an estimate (their roots timed at
    /// random, `SampledRoot::timing_sampled`).
    fn sampled_root_total(&self, agg: &Aggregate) -> Option<(u64, bool)> {
        let sampled = self.trace.sampled.iter().find(|s| s.func == agg.tree.func && s.skipped > 0)?;
        let skipped_ns = sampled.on_threads_ns().filter(|_| sampled.tasks() == 0)?;
        Some((agg.tree.total_ns + skipped_ns, sampled.timing_sampled()))
    }

    /// Under a root's aggregate header when its invocations were sampled for cost: how many were recorded, and
    /// the root's count and mean over all of them (estimated, and marked so, when a random sample of the skipped
    /// ones' roots was timed). Returns the factor that scales the runtime's whole-run totals (recorded invocations
    /// only) to the whole run, for `--format aggregate`; the kept trees' totals are what they are, sums over the
    /// trees.
    fn sampled_root_note(&self, out: &mut String, agg: &Aggregate) -> Option<f64> {
        let sampled = self.trace.sampled.iter().find(|s| s.func == agg.tree.func && s.skipped > 0)?;
        let recorded = agg.invocations.max(1);
        let all = recorded + sampled.skipped;
        // Root tasks are not timed: the mean is over the others, and says so.
        let (total, timed) = match sampled.on_threads_ns() {
            Some(ns) => (agg.tree.total_ns + ns, recorded + sampled.on_threads()),
            None => (agg.tree.total_ns, recorded),
        };
        let mean = approx((total as f64 / timed as f64).round() as u64, sampled.timing_sampled());
        let how = match sampled.timing_sampled() {
            true => format!(" (the skipped ones' from {} of them timed at random)", thousands(sampled.timed)),
            false => String::new(),
        };
        let root_mean = match sampled.tasks() {
            0 if sampled.timed == 0 => format!(
                "the root's mean over the {} recorded: {mean} (none of the {} skipped timed)",
                thousands(recorded),
                thousands(sampled.skipped)
            ),
            0 => format!("the root over all {}: mean {mean}{how}", thousands(all)),
            n => format!(
                "the root's mean over the {} {}: {mean}{how} ({} root tasks sampled for cost are not timed)",
                thousands(timed),
                if sampled.timing_sampled() { "run on threads" } else { "timed" },
                thousands(n)
            ),
        };
        let scaled = if self.runtime_aggregate { "; the other totals scaled to all of them (~)" } else { "" };
        let note = format!(
            "  {} of {} invocations recorded, the others sampled for cost: calls/inv and times per call over the \
             recorded ones; {root_mean}{scaled}",
            thousands(recorded),
            thousands(all),
        );
        let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        self.runtime_aggregate.then_some(all as f64 / recorded as f64)
    }

    fn aggregate(&self, out: &mut String, agg: &Aggregate) {
        let header = format!(
            "aggregate of {} invocation{} of {} by call path (per call: mean, p50, p99, max)",
            agg.invocations,
            plural_s(agg.invocations),
            self.names.get(agg.tree.func)
        );
        let _ = writeln!(out, "{}", self.paint.s(bold(), &header));
        let scale = self.sampled_root_note(out, agg);
        if let Some(note) = root_spread_note(agg) {
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        let mut tree = agg.tree.clone();
        let unplaced = tree.place_retired(&agg.retired, &self.callers);
        tree.estimate_retired_times(&self.trace.retirements);
        let note = match (has_folded_calls(&tree), tree.has_retired_calls()) {
            (true, false) => Some("recorded folded"),
            (false, true) => Some("made after their function retired"),
            (true, true) => Some("recorded folded or made after their function retired"),
            (false, false) => None,
        };
        if let Some(calls) = note {
            let note =
                format!("  p50 and p99 are left out (-) where calls were {calls}: they have no durations of their own");
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        let mut rows = Vec::new();
        // The runtime's whole-run aggregate has no allocation counts: columns of zeros would read as none made.
        let allocs = self.trace.counts_allocs() && !self.runtime_aggregate;
        let invocations = agg.invocations.max(1) as f64;
        let percentile = |node: &Merged, q: f64| node.percentile_ns(q).map_or_else(|| "-".to_owned(), format_ns);
        // Totals over the run, scaled from the recorded invocations to all of them when they were sampled for cost.
        // The root's own total is the recorded ones' plus the skipped ones' timed roots (scaled to all of them when
        // a random sample was timed).
        let root_total = self.sampled_root_total(agg);
        let total = |ns: u64, estimated: bool| match scale {
            Some(factor) => approx((ns as f64 * factor).round() as u64, true),
            None => approx(ns, estimated),
        };
        let tree_root: *const Merged = &tree;
        let cells = |node: &Merged| {
            let (node_total, node_self) = match (root_total.filter(|_| std::ptr::eq(node, tree_root)), scale) {
                // Its self time is what the scaled children leave of it.
                (Some((ns, estimated)), Some(factor)) => {
                    let children: u64 = node.children.iter().map(|c| c.total_ns).sum();
                    let children = (children as f64 * factor).round() as u64;
                    (approx(ns, estimated), approx(ns.saturating_sub(children), true))
                }
                _ => (total(node.total_ns, node.is_estimated()), total(node.self_ns, self_is_estimated(node))),
            };
            let mut cells = vec![
                calls_cell(node, Some(agg.invocations)),
                node_total,
                node_self,
                approx(node.mean_ns(), node.mean_is_estimated()),
                percentile(node, 0.5),
                percentile(node, 0.99),
                approx(node.max_ns, widened_by_later_calls(node, node.max_ns)),
            ];
            if allocs {
                // Per invocation, like calls: exact counts, so their mean is too.
                cells.extend([
                    format_calls(node.allocs as f64 / invocations),
                    format_calls(node.self_allocs as f64 / invocations),
                    format_bytes(node.alloc_bytes as f64 / invocations),
                    format_bytes(node.self_alloc_bytes as f64 / invocations),
                ]);
            }
            Row { cells: untimed_dashes(node, cells, 1..7), ..Row::default() }
        };
        self.rows(
            &tree,
            &mut rows,
            String::new(),
            0,
            None,
            &Columns { spread: false, cells: &cells, invocations: agg.invocations },
        );
        let folded = |total: u64, calls: u64, estimated: bool| {
            let mut cells = vec![format_calls(calls as f64 / invocations), approx(total, estimated)];
            cells.resize(if allocs { 11 } else { 7 }, String::new());
            cells
        };
        let mut header = vec!["calls/inv", "total", "self", "mean", "p50", "p99", "max"];
        if allocs {
            header.extend(ALLOC_COLUMNS_PER_INVOCATION);
        }
        self.table(out, &header, 1, rows, &folded);
        if tree.has_retired_calls() {
            let _ = writeln!(out, "{}", self.paint.s(dim(), RETIRED_IN_TREE_NOTE));
        }
        self.retired_lines(out, &tree, &agg.retired, &unplaced, Some(agg.invocations));
    }

    /// Appends the rows of `node` and its subtree; `last` is whether `node` is its parent's last child (None for
    /// the root), `indent` the tree drawing inherited from the ancestors, `depth` the root's distance.
    fn rows(
        &self,
        node: &Merged,
        rows: &mut Vec<Row>,
        indent: String,
        depth: usize,
        last: Option<bool>,
        columns: &Columns,
    ) {
        let mut row = (columns.cells)(node);
        // Past MAX_INDENT levels (deep recursion) the tree stops moving right and says the depth instead.
        let marker = if depth > MAX_INDENT { format!("[depth {depth}] ") } else { String::new() };
        row.prefix = match last {
            None => String::new(),
            Some(false) => format!("{indent}{marker}├─ "),
            Some(true) => format!("{indent}{marker}└─ "),
        };
        row.name = self.names.get(node.func);
        row.heat = match self.opts.highlight_ns {
            Some(limit) if node.max_ns > limit => Heat::Hot,
            Some(limit) if node.total_ns / columns.invocations.max(1) > limit => Heat::Warm,
            _ => Heat::Normal,
        };
        if node.calls > 1 && columns.spread {
            // min and max are those of the timed calls; with sampling, say how many that was.
            let timed = if node.is_estimated() { format!("; {} timed", node.timed_calls) } else { String::new() };
            row.tags.push((
                dim(),
                format!(
                    "(min {}, mean {}, max {}{timed})",
                    approx(node.min_ns, widened_by_later_calls(node, node.min_ns)),
                    approx(node.mean_ns(), node.mean_is_estimated()),
                    approx(node.max_ns, widened_by_later_calls(node, node.max_ns))
                ),
            ));
        }
        if node.panicked > 0 {
            let at_least = if node.panicked_at_least { "≥" } else { "" };
            let tag = if node.calls == 1 {
                "[panicked]".to_owned()
            } else {
                format!("[panicked {at_least}{} of {}]", node.panicked, node.calls)
            };
            row.tags.push((alarm(), tag));
        }
        row.tags.extend(outcome_tags(node).into_iter().map(|tag| (alarm(), tag)));
        if node.retired_calls > 0 {
            let mark = if node.retired_estimated { "~" } else { "" };
            // `spread` is set for one invocation's tree; an aggregate's counts are per invocation.
            let calls = match columns.spread {
                true => thousands(node.retired_calls),
                false => format!("{}/inv", format_calls(node.retired_calls as f64 / columns.invocations.max(1) as f64)),
            };
            // Its `retire` record lost to the hourly cap: the few calls counted before it went quiet are no count.
            let unknown = retirement(self.trace, node.func).is_none() && self.trace.stats.dropped_cap > 0;
            let calls = if unknown { "?".to_owned() } else { calls };
            row.tags.push((dim(), format!("[+{mark}{calls} after it retired]")));
            if node.retired_all_depths {
                row.tags.push((dim(), "[at every depth of its recursion]".to_owned()));
            }
            // An aggregate's times at this path are its recorded calls' alone: say over how many invocations, so
            // that a mean carried by a process's first, fully recorded invocation reads as such.
            if !columns.spread && node.calls > 0 && (self.runtime_aggregate || node.invocations < columns.invocations) {
                let timed = match self.runtime_aggregate {
                    true => "[times from its calls before it retired]".to_owned(),
                    false => format!("[timed in {} of {} invocations]", node.invocations, columns.invocations),
                };
                row.tags.push((dim(), timed));
            }
        }
        if node.children_overlap_ns > 0 {
            let tag = format!("[children overlap {}]", format_ns(node.children_overlap_ns));
            row.tags.push((dim(), tag));
        }
        rows.push(row);
        let child_indent = match last {
            _ if depth >= MAX_INDENT => indent,
            None => String::new(),
            Some(false) => format!("{indent}│  "),
            Some(true) => format!("{indent}   "),
        };
        let (shown, small): (Vec<&Merged>, Vec<&Merged>) = match self.opts.min_time_ns {
            Some(min) => node.children.iter().partition(|c| c.total_ns >= min),
            None => (node.children.iter().collect(), Vec::new()),
        };
        for (i, child) in shown.iter().enumerate() {
            let is_last = i + 1 == shown.len() && small.is_empty();
            self.rows(child, rows, child_indent.clone(), depth + 1, Some(is_last), columns);
        }
        if !small.is_empty() {
            let marker = if depth + 1 > MAX_INDENT { format!("[depth {}] ", depth + 1) } else { String::new() };
            let total: u64 = small.iter().map(|c| c.total_ns).sum();
            let calls: u64 = small.iter().map(|c| c.all_calls()).sum();
            let estimated = small.iter().any(|c| c.is_estimated());
            rows.push(Row {
                folded: Some((total, calls, estimated)),
                prefix: format!("{child_indent}{marker}└─ "),
                name: format!("({} more, {})", small.len(), approx(total, estimated)),
                ..Row::default()
            });
        }
    }

    /// Lays out rows under a header: right-aligned number columns, then the tree.
    fn table(
        &self,
        out: &mut String,
        header: &[&str],
        hot_column: usize,
        mut rows: Vec<Row>,
        folded: &dyn Fn(u64, u64, bool) -> Vec<String>,
    ) {
        for row in &mut rows {
            if let Some((total, calls, estimated)) = row.folded {
                row.cells = folded(total, calls, estimated);
            }
        }
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(&row.cells) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = String::new();
        for (h, w) in header.iter().zip(&widths) {
            let _ = write!(line, "{h:>w$}  ");
        }
        line.push_str("function");
        let _ = writeln!(out, "{}", self.paint.s(dim(), &line));
        for row in rows {
            let mut line = String::new();
            for (i, (cell, w)) in row.cells.iter().zip(&widths).enumerate() {
                let padded = format!("{cell:>w$}");
                let style = if i == hot_column { row.heat.style() } else { None };
                match style {
                    Some(style) => line.push_str(&self.paint.s(style, &padded)),
                    None => line.push_str(&padded),
                }
                line.push_str("  ");
            }
            line.push_str(&self.paint.s(dim(), &row.prefix));
            if row.folded.is_some() {
                line.push_str(&self.paint.s(dim(), &row.name));
            } else {
                let (module, last) = split_module(&row.name);
                line.push_str(&self.paint.s(dim(), module));
                match row.heat.style() {
                    Some(style) => line.push_str(&self.paint.s(style, last)),
                    None => line.push_str(last),
                }
            }
            for (style, tag) in &row.tags {
                line.push(' ');
                line.push_str(&self.paint.s(*style, tag));
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }

    /// How a folded invocation was recorded, from the trace's `settings` when it has them.
    fn folded_note(&self, has_estimates: bool) -> String {
        let settings = &self.trace.settings;
        let mut note = match settings.get("fold_after") {
            Some(after) => format!("folded into call paths after {after} call{}", plural_s(*after)),
            None => "folded into call paths".to_owned(),
        };
        note.push_str(" (calls counted exactly");
        match (has_estimates, settings.get("time_sample")) {
            (true, Some(n)) => note.push_str(&format!("); times of busy paths sampled 1 in {n} (~ = estimated)")),
            (true, None) => note.push_str("); times of busy paths sampled (~ = estimated)"),
            (false, _) => note.push_str(", every call timed)"),
        }
        note
    }

    fn summary(&self, out: &mut String) {
        let stats = &self.trace.stats;
        let loaded = self.trace.invocations.len() as u64;
        let no_counters = stats.seen == 0 && stats.kept == 0 && loaded > 0;
        // Counters missing or only periodic: the program is still running, or it did not exit normally.
        let running = (no_counters || stats.periodic) && self.trace.process_is_running();
        let line = if no_counters && running {
            format!("invocations: {loaded} recorded (process {} is still running: no counters yet)", self.trace.pid)
        } else if no_counters {
            format!("invocations: {loaded} recorded (the trace has no counters: the program did not exit normally)")
        } else {
            let for_cost = match stats.sampled_for_cost {
                0 => String::new(),
                n => format!(", {n} sampled for cost"),
            };
            let mut line = format!(
                "invocations: {} seen, {} kept, {} sampled out{for_cost}, {} dropped, {} truncated, {} incomplete",
                stats.seen, stats.kept, stats.sampled_out, stats.dropped, stats.truncated, stats.incomplete
            );
            if running {
                line.push_str(&format!(
                    " (process {} is still running: counters as of its last periodic record)",
                    self.trace.pid
                ));
            } else if stats.periodic {
                line.push_str(" (counters as of the last periodic record: the program did not exit normally)");
            }
            line
        };
        let _ = writeln!(out, "{}", self.paint.s(bold(), &line));
        let truncated = if no_counters {
            self.trace.invocations.iter().filter(|i| i.truncated_calls > 0).count() as u64
        } else {
            stats.truncated
        };
        let too_deep = self.trace.invocations.iter().filter(|i| depth_limit_reached(self.trace, i).is_some()).count();
        let too_deep = too_deep as u64;
        if too_deep > 0 {
            let note = format!(
                "  {too_deep} invocation{} reached the frame-depth limit (--max-depth {}): deeper calls were counted, \
                 not recorded",
                plural_s(too_deep),
                max_depth(self.trace)
            );
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        let capped = truncated.saturating_sub(too_deep);
        if capped > 0 {
            let note = format!(
                "  {capped} invocation{} hit the node cap (--node-cap): calls past it were counted, not recorded",
                plural_s(capped)
            );
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        if stats.dropped > 0 {
            let them = if stats.dropped == 1 { "it" } else { "them" };
            let left_out = match &self.trace.aggregate {
                // The runtime's aggregate folded them in before they were dropped.
                Some(_) => format!("no tree kept; `--format aggregate` counts {them}"),
                None => format!("the aggregate leaves {them} out"),
            };
            let note = format!(
                "  {} invocation{} dropped ({}): {left_out}",
                stats.dropped,
                plural_s(stats.dropped),
                drop_causes(stats),
            );
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        if let Some(note) = unrecorded_parts_note(self.trace) {
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        if let Some(note) = choice_note(self.trace) {
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        if let Some(note) = controls_note(self.trace) {
            let _ = writeln!(out, "{}", self.paint.s(dim(), &format!("  {note}")));
        }
        if let Some(note) = sampled_note(self.trace) {
            let note = format!(
                "  {note}: trees, calls per invocation and times per call are over the recorded ones; each root's \
                 count and mean over all of them (its aggregate's header)"
            );
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        let retired = stats.retired_functions.max(self.trace.retirements.len() as u64);
        if retired > 0 {
            let note = format!(
                "  {retired} probe{} retired during the run: later calls of {} were counted, not timed{} \
                 (--exact keeps every call)",
                plural_s(retired),
                if retired == 1 { "that function" } else { "those functions" },
                match self.trace.quiet.len() {
                    0 => String::new(),
                    n => format!(", then estimated once {n} went quiet (~)"),
                }
            );
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
        if stats.incomplete > 0 {
            let note = format!(
                "  {} record{} cut off at the end of the trace (the program stopped while writing) and left out",
                stats.incomplete,
                plural_s(stats.incomplete)
            );
            let _ = writeln!(out, "{}", self.paint.s(warn(), &note));
        }
        if stats.sampled_out > 0 && !no_counters {
            let note =
                format!("  sampling (--sample) recorded {} of {} invocations", stats.kept + stats.dropped, stats.seen);
            let _ = writeln!(out, "{}", self.paint.s(dim(), &note));
        }
    }
}

/// Under a tree with calls made after a probe retired.
const RETIRED_IN_TREE_NOTE: &str =
    "  [+N after it retired]: calls made after the function's probe retired, in its calls \
     count, not timed (their time is in the caller's self time); ~ where estimated (gone quiet, or shared among call \
     paths by their callers' rates of calling them)";

/// A node that only holds calls made after its function's probe retired has no time of its own (it is in the
/// caller's): `-` in its time cells.
/// `extreme` (a node's min or max) is the estimate of its calls made after the function retired, which widened it
/// (`Merged::estimate_retired_times`): an estimate, marked as the mean is.
fn widened_by_later_calls(node: &Merged, extreme: u64) -> bool {
    node.has_estimated_later_calls() && extreme == node.retired_mean_ns
}

fn untimed_dashes(node: &Merged, mut cells: Vec<String>, times: std::ops::Range<usize>) -> Vec<String> {
    if node.calls == 0 && node.retired_calls > 0 {
        for cell in cells.iter_mut().take(times.end).skip(times.start) {
            *cell = "-".to_owned();
        }
    }
    cells
}

/// The calls cell of a node: every call (per invocation in an aggregate), `~` first when some of them are
/// an estimate of calls made after the function's probe retired.
fn calls_cell(node: &Merged, per_invocation: Option<u64>) -> String {
    let mark = if node.retired_calls > 0 && node.retired_estimated { "~" } else { "" };
    match per_invocation {
        None => format!("{mark}{}", node.all_calls()),
        Some(n) => format!("{mark}{}", format_calls(node.all_calls() as f64 / n.max(1) as f64)),
    }
}

/// What a tree's rows show: the number cells of a node, and whether folded calls get min/mean/max.
struct Columns<'c> {
    cells: &'c dyn Fn(&Merged) -> Row,
    spread: bool,
    /// Invocations the tree sums over: a node is "warm" when its time per invocation adds up past `--highlight`.
    invocations: u64,
}

#[derive(Debug, Default)]
struct Row {
    /// Right-aligned number columns.
    cells: Vec<String>,
    /// Tree drawing.
    prefix: String,
    name: String,
    heat: Heat,
    /// Styled text after the name.
    tags: Vec<(Style, String)>,
    /// A `--min-time` "(N more)" line: (total ns, calls, whether the total is estimated) of the folded siblings.
    folded: Option<(u64, u64, bool)>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Heat {
    #[default]
    Normal,
    /// Adds up to more than `--highlight` per invocation, though no single call is that slow.
    Warm,
    /// At least one call slower than `--highlight`.
    Hot,
}

impl Heat {
    fn style(self) -> Option<Style> {
        match self {
            Heat::Normal => None,
            Heat::Warm => Some(Style::new().fg_color(Some(AnsiColor::Yellow.into()))),
            Heat::Hot => Some(alarm()),
        }
    }
}

struct Paint {
    on: bool,
}

impl Paint {
    fn s(&self, style: Style, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }
}

fn bold() -> Style {
    Style::new().bold()
}

fn dim() -> Style {
    Style::new().dimmed()
}

fn alarm() -> Style {
    Style::new().bold().fg_color(Some(AnsiColor::Red.into()))
}

fn warn() -> Style {
    Style::new().fg_color(Some(AnsiColor::Yellow.into()))
}

/// What the run kept and why (`--slower-than`, `--keep-slowest`, `--keep-sample`), and over which span of the run
/// the roots it chose from started; `None` when the run kept every invocation it recorded in order.
fn choice_note(trace: &Trace) -> Option<String> {
    let stats = &trace.stats;
    let setting = |key: &str| trace.settings.get(key).copied().unwrap_or(0);
    let (slower_than, slowest, sample) = (setting("slower_than_ns"), setting("keep_slowest"), setting("keep_sample"));
    let mut why = Vec::new();
    if slowest > 0 {
        why.push(format!("the {slowest} slowest (--keep-slowest)"));
    } else if sample > 0 {
        why.push(format!("a uniform sample of {sample} (--keep-sample)"));
    }
    if slower_than > 0 {
        why.push(format!("only those slower than {} (--slower-than)", format_ns(slower_than)));
    } else if let Some(set) = trace.controls.iter().rev().find(|c| c.setting == "slower_than_ns" && c.value > 0) {
        let (ns, at) = (format_ns(set.value), format_ns(set.at_ns));
        why.push(format!("from +{at} only those slower than {ns} (ctl slower-than)"));
    }
    let span = (stats.last_root_ns > 0).then(|| stats.last_root_ns.saturating_sub(stats.first_root_ns));
    if why.is_empty() {
        // Kept in order: which part of the run that covers, when some were not kept.
        let starts = trace.invocations.iter().map(|inv| inv.start_ns);
        let (first_kept, last_kept) = (starts.clone().min()?, starts.max()?);
        let span = span.filter(|_| stats.dropped + stats.sampled_out > 0)?;
        return Some(format!(
            "  the kept invocations started from {} to {} into the {} over which roots started",
            format_ns(first_kept.saturating_sub(stats.first_root_ns)),
            format_ns(last_kept.saturating_sub(stats.first_root_ns)),
            format_ns(span)
        ));
    }
    let over = span.map(|span| format!(", chosen from roots that started over {}", format_ns(span)));
    let left_out = stats.left_out_fast + stats.left_out_unselected;
    Some(format!(
        "  kept {} of {} invocations: {}; {} left out ({} not slower, {} not chosen){}",
        stats.kept,
        stats.seen,
        why.join(", "),
        left_out,
        stats.left_out_fast,
        stats.left_out_unselected,
        over.unwrap_or_default()
    ))
}

/// What sampling for cost left out: `recorded 1,200 of 20,000 invocations (sampled to keep the probes' cost under
/// 5%)`; `None` when every invocation was recorded. Every view says it: text and aggregate in their summary (and
/// each sampled root's aggregate header), table under its title, JSON in `sampled`, the others on stderr.
pub(crate) fn sampled_note(trace: &Trace) -> Option<String> {
    let listed: u64 = trace.sampled.iter().map(|s| s.skipped).sum();
    let skipped = trace.stats.sampled_for_cost.max(listed);
    if skipped == 0 {
        return None;
    }
    let seen = trace.stats.seen.max(skipped + trace.invocations.len() as u64);
    let recorded = seen - skipped - trace.stats.sampled_out.min(seen - skipped);
    let budget = trace.settings.get("cost_budget_pct").map_or(String::new(), |pct| format!(" under {pct}%"));
    Some(format!(
        "recorded {} of {} invocations (sampled to keep the probes' cost{budget})",
        thousands(recorded),
        thousands(seen)
    ))
}

/// The settings `cargo calltime ctl` switched while the program ran, with their times (since the trace's start):
/// `switched while running (cargo calltime ctl): recording off at +1.20s, recording on at +1.70s`. Every view
/// says it: text and aggregate in their summary, table under its title, JSON in `controls`, the others on stderr.
pub(crate) fn controls_note(trace: &Trace) -> Option<String> {
    if trace.controls.is_empty() {
        return None;
    }
    let changes: Vec<String> = trace
        .controls
        .iter()
        .map(|c| {
            let process = if trace.processes > 1 { format!(" (process {})", c.pid) } else { String::new() };
            format!("{} at +{}{process}", c.describe(), format_ns(c.at_ns))
        })
        .collect();
    Some(format!("switched while running (cargo calltime ctl): {}", changes.join(", ")))
}

/// The root's mean per invocation beside its median, when slow invocations carry the mean (over 1.25x the
/// median): a process's first invocation records every call, the later ones little, and a tree's mean over a few
/// invocations moves with one slow one.
fn root_spread_note(agg: &Aggregate) -> Option<String> {
    let root = &agg.tree;
    let median = root.percentile_ns(0.5).filter(|&ns| ns > 0)?;
    let mean = root.mean_ns();
    // Of two invocations the nearest-rank median is the faster one: no middle to compare with.
    if agg.invocations < 3 || (mean as f64) <= 1.25 * median as f64 {
        return None;
    }
    Some(format!(
        "  per invocation: mean {} over {} invocations, median {}, slowest {}: the mean is {:.2}x the median, carried by \
         slow invocations",
        format_ns(mean),
        agg.invocations,
        format_ns(median),
        format_ns(root.max_ns),
        mean as f64 / median as f64
    ))
}

/// Why invocations were dropped: the causes a version 3 trace counts, else the possible ones.
/// Allocation columns of an invocation's tree (when the trace counted allocations): allocations and bytes of the
/// subtree, then of the node alone.
const ALLOC_COLUMNS: [&str; 4] = ["allocs", "self allocs", "bytes", "self bytes"];
/// The same, per invocation, in the aggregate.
const ALLOC_COLUMNS_PER_INVOCATION: [&str; 4] = ["allocs/inv", "self allocs/inv", "bytes/inv", "self bytes/inv"];

fn drop_causes(stats: &crate::trace::Stats) -> String {
    let causes: Vec<String> = [
        (stats.dropped_queue_full, "the trace writer fell behind"),
        (stats.dropped_limit, "--max-invocations was reached"),
        (stats.dropped_no_buffer, "no recording buffer was free"),
        (stats.dropped_cap, "the hourly byte cap was reached (CALLTIME_MAX_BYTES_PER_HOUR)"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n}: {why}"))
    .collect();
    if causes.is_empty() {
        "the trace writer fell behind, or --max-invocations was reached".to_owned()
    } else {
        causes.join("; ")
    }
}

/// `~1.23ms` for an estimate, `1.23ms` otherwise.
fn approx(ns: u64, estimated: bool) -> String {
    if estimated {
        format!("~{}", format_ns(ns))
    } else {
        format_ns(ns)
    }
}

/// A node's self time is its total minus its children's: an estimate when any of those is one.
fn self_is_estimated(node: &Merged) -> bool {
    node.is_estimated() || node.children.iter().any(Merged::is_estimated)
}

/// Some call path of the tree holds calls without their own duration (percentiles are left out there).
fn has_folded_calls(node: &Merged) -> bool {
    node.folded_calls > 0 || node.children.iter().any(has_folded_calls)
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// Splits `a::b::Type::method` into (`a::b::Type::`, `method`); `::` inside `<...>` does not count.
fn split_module(name: &str) -> (&str, &str) {
    let mut depth = 0i32;
    let mut split = 0;
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => split = i + 2,
            _ => {}
        }
    }
    // A name with a location suffix (`a::f (x.rs:3)`) splits before the suffix's own colon: the `::` search above
    // only sees `::`, so this is already right.
    name.split_at(split.min(name.len()))
}

/// What the invocation handed to other threads and tasks: how many, their time summed (which may overlap the
/// invocation's own wall time and each other), and what was not attached.
fn spawned_note(inv: &Invocation) -> Option<String> {
    if inv.spawned.is_empty() && inv.unrecorded_spawns == 0 {
        return None;
    }
    let attached = |kind: ThreadKind| {
        inv.spawned.iter().filter(|s| s.thread.kind == kind && !s.outlived && !s.unrecorded).count() as u64
    };
    let (threads, tasks) = (attached(ThreadKind::Thread), attached(ThreadKind::Task));
    let mut kinds = Vec::new();
    if threads > 0 {
        kinds.push(format!("{threads} on other threads"));
    }
    if tasks > 0 {
        kinds.push(format!("{tasks} as tasks"));
    }
    let mut parts = Vec::new();
    if !kinds.is_empty() {
        let summed = format_ns(inv.spawned_summed_ns());
        let wall = format_ns(inv.duration_ns);
        parts.push(format!("{}, {summed} summed over them (wall time of the root: {wall})", kinds.join(", ")));
    }
    let outlived = inv.spawned.iter().filter(|s| s.outlived).count();
    if outlived > 0 {
        parts.push(format!("{outlived} outlived the invocation (still running when it was written: not in the tree)"));
    }
    let unrecorded = inv.spawned.iter().filter(|s| s.unrecorded).count() as u64 + inv.unrecorded_spawns;
    if unrecorded > 0 {
        parts.push(format!("{unrecorded} ran unrecorded (no free recording buffer)"));
    }
    Some(format!("  spawned work: {}", parts.join("; ")))
}

/// Work the kept invocations spawned that ran unrecorded (each tree's header says so, the aggregate did not): the
/// `[thread]` and `[task]` rows of the aggregate hold fewer calls than were made (async-executor's jobs: 2.80
/// subtasks an invocation shown of 4 spawned, with 2,000 tasks open at once and no free recording buffer).
fn unrecorded_parts_note(trace: &Trace) -> Option<String> {
    let unrecorded: u64 = trace
        .invocations
        .iter()
        .map(|inv| inv.spawned.iter().filter(|s| s.unrecorded).count() as u64 + inv.unrecorded_spawns)
        .sum();
    if unrecorded == 0 {
        return None;
    }
    let spawned: u64 = trace.invocations.iter().map(|inv| inv.spawned.len() as u64 + inv.unrecorded_spawns).sum();
    let with = trace
        .invocations
        .iter()
        .filter(|inv| inv.unrecorded_spawns > 0 || inv.spawned.iter().any(|s| s.unrecorded))
        .count();
    Some(format!(
        "  {unrecorded} of the {spawned} spawned parts of the kept invocations ran unrecorded (in {with} invocation{}: \
         no free recording buffer, or past the cap of spawns an invocation): the calls they made are in no tree, and \
         the aggregate's [thread] and [task] rows count fewer calls than were made",
        plural_s(with as u64)
    ))
}

/// `[cancelled]` / `[cancelled 2 of 5]` and `[err]` / `[err 1 of 3]`: calls that never finished and calls that
/// returned an `Err`.
fn outcome_tags(node: &Merged) -> Vec<String> {
    let count = |what: &str, n: u64, at_least: bool| {
        let at_least = if at_least { "≥" } else { "" };
        if node.calls == 1 {
            format!("[{what}]")
        } else {
            format!("[{what} {at_least}{n} of {}]", node.calls)
        }
    };
    let mut tags = Vec::new();
    if let Some(lane) = &node.lane {
        // Id 0: merged over invocations, where thread numbers mean nothing.
        tags.push(if lane.id == 0 { format!("[{}]", lane.kind_name()) } else { format!("[{lane}]") });
    }
    if node.outlived > 0 {
        tags.push(if node.outlived == 1 { "[outlived]".to_owned() } else { format!("[outlived {}]", node.outlived) });
    }
    if node.cancelled > 0 {
        tags.push(count("cancelled", node.cancelled, node.cancelled_at_least));
    }
    if node.errs > 0 {
        tags.push(count("err", node.errs, false));
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_part_splits_at_the_last_top_level_path_separator() {
        assert_eq!(split_module("a::b::f"), ("a::b::", "f"));
        assert_eq!(split_module("<a::T as b::Tr>::m"), ("<a::T as b::Tr>::", "m"));
        assert_eq!(split_module("main"), ("", "main"));
        assert_eq!(split_module("#3"), ("", "#3"));
    }

    #[test]
    fn the_builders_left_out_are_named_under_the_settings() {
        assert_eq!(builders_note(&[]), None);
        let two = builders_note(&["delimited".into(), "preceded".into()]).unwrap();
        assert!(two.starts_with("no probe in 2 functions that only build a closure"), "{two}");
        assert!(two.ends_with(": delimited, preceded"), "{two}");
        let many: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert!(builders_note(&many).unwrap().ends_with(": f0, f1, f2, f3, f4, f5 and 2 more"));
    }
}

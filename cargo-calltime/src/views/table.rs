//! `--format table`: one row per function over every call path it was called at (uftrace's `report`): calls,
//! total, self, mean, min and max, sorted by `--sort`. The same rows are the `functions` array of the JSON view.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::aggregate::{aggregate, select, Merged};
use super::{plan_summary, Names, ViewOptions};
use crate::trace::Trace;
use crate::units::{format_ns, plural};

/// How the table is ordered (`--sort`), largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    SelfTime,
    Total,
    Calls,
}

/// One function, over every call path it was called at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub path: String,
    /// The short name, made longer where two functions would read alike (as in the other views).
    pub display: String,
    /// Every call: those recorded in the trees and those made after the function's probe retired.
    pub calls: u64,
    /// Of `calls`, those made after its probe retired (not timed; not in total, self, mean, min and max).
    #[serde(skip_serializing_if = "is_zero")]
    pub retired_calls: u64,
    /// `retired_calls` is an estimate (the function went quiet: its calls were no longer counted).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retired_estimated: bool,
    /// Time from entry to exit, counted once for recursive calls (the outermost call holds the inner ones).
    pub total_ns: u64,
    /// Time not spent in instrumented callees.
    pub self_ns: u64,
    /// Mean duration of one recorded call (recursive ones included; calls after retirement were not timed).
    pub mean_ns: u64,
    /// Shortest and longest timed call (0 when none was timed).
    pub min_ns: u64,
    pub max_ns: u64,
    /// Some calls were recorded folded and not all timed: the times are estimates.
    pub estimated: bool,
    /// Calls that returned an `Err`, and calls cancelled (a lower bound where recorded folded).
    pub errs: u64,
    pub cancelled: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Default)]
struct Sums {
    calls: u64,
    timed_calls: u64,
    total_ns: u64,
    all_calls_ns: u64,
    self_ns: u64,
    min_ns: Option<u64>,
    max_ns: u64,
    errs: u64,
    cancelled: u64,
}

/// The rows of the selected invocations (all, or `--invocation K`), sorted by `sort` then by name.
pub fn rows(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<Vec<Row>> {
    let selected = select(trace, opts.invocation)?;
    let mut sums: HashMap<u32, Sums> = HashMap::new();
    // `open[f]`: calls of `f` on the current call path (a recursive call's time is already in its caller's).
    let mut open: HashMap<u32, u32> = HashMap::new();
    for agg in aggregate(selected.iter().map(|(_, inv)| *inv)) {
        add(&agg.tree, &mut sums, &mut open);
    }
    // Calls made after a probe retired are counted per function, not per call path: every one belongs in the row.
    let mut retired: HashMap<u32, (u64, bool)> = HashMap::new();
    for r in selected.iter().flat_map(|(_, inv)| &inv.retired) {
        let entry = retired.entry(r.func).or_default();
        *entry = (entry.0.saturating_add(r.calls), entry.1 | r.estimated);
        sums.entry(r.func).or_default();
    }
    let names = Names::new(&trace.table);
    let mut rows: Vec<Row> = sums
        .into_iter()
        .map(|(func, s)| {
            let (retired_calls, retired_estimated) = retired.get(&func).copied().unwrap_or_default();
            Row {
                path: trace.table.path(func),
                display: names.get(func),
                calls: s.calls.saturating_add(retired_calls),
                retired_calls,
                retired_estimated,
                total_ns: s.total_ns,
                self_ns: s.self_ns,
                mean_ns: mean_within(&s),
                min_ns: s.min_ns.unwrap_or(0),
                max_ns: s.max_ns,
                estimated: s.timed_calls < s.calls,
                errs: s.errs,
                cancelled: s.cancelled,
            }
        })
        .collect();
    let key = |r: &Row| match opts.sort {
        SortKey::SelfTime => r.self_ns,
        SortKey::Total => r.total_ns,
        SortKey::Calls => r.calls,
    };
    rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.path.cmp(&b.path)));
    Ok(rows)
}

/// The mean of the recorded calls, rounded, never outside the timed calls' min and max (each call path's mean is
/// within them; rounding must not take the function's outside).
fn mean_within(s: &Sums) -> u64 {
    let calls = u128::from(s.calls);
    let mean = (u128::from(s.all_calls_ns) + calls / 2).checked_div(calls).map_or(0, |m| m as u64);
    match s.min_ns {
        Some(min) if s.timed_calls > 0 && min <= s.max_ns => mean.clamp(min, s.max_ns),
        _ => mean,
    }
}

fn add(node: &Merged, sums: &mut HashMap<u32, Sums>, open: &mut HashMap<u32, u32>) {
    let depth = open.entry(node.func).or_default();
    let outermost = *depth == 0;
    *depth += 1;
    let s = sums.entry(node.func).or_default();
    s.calls += node.calls;
    s.timed_calls += node.timed_calls;
    s.all_calls_ns = s.all_calls_ns.saturating_add(node.total_ns);
    if outermost {
        s.total_ns = s.total_ns.saturating_add(node.total_ns);
    }
    s.self_ns = s.self_ns.saturating_add(node.self_ns);
    s.errs += node.errs;
    s.cancelled += node.cancelled;
    if node.timed_calls > 0 {
        s.min_ns = Some(s.min_ns.map_or(node.min_ns, |m| m.min(node.min_ns)));
        s.max_ns = s.max_ns.max(node.max_ns);
    }
    for child in &node.children {
        add(child, sums, open);
    }
    if let Some(depth) = open.get_mut(&node.func) {
        *depth -= 1;
    }
}

/// The table as text: a title, then one row per function.
pub fn render(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<String> {
    let rows = rows(trace, opts)?;
    let mut out = String::new();
    let sorted_by = match opts.sort {
        SortKey::SelfTime => "self time",
        SortKey::Total => "total time",
        SortKey::Calls => "calls",
    };
    let invocations = match opts.invocation {
        Some(k) => format!("invocation #{k}"),
        None => plural(trace.invocations.len() as u64, "invocation"),
    };
    let _ = writeln!(out, "{}: {invocations}, functions by {sorted_by}\n", plan_summary(trace));
    let all_self: u64 = rows.iter().map(|r| r.self_ns).sum();
    let header = ["self", "self%", "total", "calls", "mean", "min", "max", "function"].map(str::to_owned);
    let mut cells: Vec<[String; 8]> = vec![header];
    for r in &rows {
        let approx = if r.estimated { "~" } else { "" };
        let pct = if all_self == 0 { 0.0 } else { 100.0 * r.self_ns as f64 / all_self as f64 };
        cells.push([
            format!("{approx}{}", format_ns(r.self_ns)),
            format!("{pct:.1}%"),
            format!("{approx}{}", format_ns(r.total_ns)),
            format!("{}{}", if r.retired_estimated { "~" } else { "" }, r.calls),
            format!("{approx}{}", format_ns(r.mean_ns)),
            format_ns(r.min_ns),
            format_ns(r.max_ns),
            name_with_outcomes(r),
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &cells {
        let mut line = String::from(" ");
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            // Numbers right-aligned, the function name left.
            if i + 1 == row.len() {
                let _ = write!(line, " {cell}");
            } else {
                let _ = write!(line, " {cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let estimated = rows.iter().any(|r| r.estimated);
    if estimated {
        let _ = writeln!(out, "\n~ estimated: some calls were recorded folded and only a sample of them was timed");
    }
    if rows.iter().any(|r| r.retired_calls > 0) {
        let _ = writeln!(
            out,
            "{}calls include those made after a probe retired ([N after it retired]: not timed, so not in the times; \
             ~ before calls: some of them estimated, once the function went quiet)",
            if estimated { "" } else { "\n" }
        );
    }
    Ok(out)
}

/// The function's name, then `[err N]` and `[cancelled N]` when some of its calls returned an `Err` or never
/// finished.
fn name_with_outcomes(r: &Row) -> String {
    let mut name = r.display.clone();
    if r.retired_calls > 0 {
        let mark = if r.retired_estimated { "~" } else { "" };
        let _ = write!(name, " [{mark}{} after it retired]", r.retired_calls);
    }
    if r.errs > 0 {
        let _ = write!(name, " [err {}]", r.errs);
    }
    if r.cancelled > 0 {
        let _ = write!(name, " [cancelled {}]", r.cancelled);
    }
    name
}

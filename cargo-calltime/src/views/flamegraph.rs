//! Flamegraph SVG (inferno) from the aggregate's self times, or a time-ordered flame chart of one invocation.

use anyhow::{bail, Context, Result};
use inferno::flamegraph::{self, Options};

use std::collections::HashMap;

use super::aggregate::{aggregate, callers_of_retired, select, Merged};
use super::folded::{stacks, timeline, CANCELLED_MARK, ERR_MARK, PANICKED_MARK};
use super::svg_frames::{self, Edit};
use super::{plan_summary, plan_summary_for, Names, ViewOptions, Weight};
use crate::trace::{Times, Trace};
use crate::units::thousands;
use crate::units::{format_bytes, format_ns, plural_s};

pub fn render(trace: &Trace, opts: &ViewOptions, slower: Option<super::SlowerThan>) -> Result<Vec<u8>> {
    if trace.invocations.is_empty() {
        return Err(crate::error::UserError::new(format!(
            "{} holds no complete invocation: there is nothing to draw",
            trace.path.display()
        ))
        .hint("check that the program called the root (`cargo calltime report --format text` shows the counters)")
        .into());
    }
    let what = plan_summary(trace);
    let count = trace.invocations.len();
    let mut options = Options::default();
    options.count_name = "ns".to_owned();
    options.name_type = "Function:".to_owned();
    // Colours keyed by name, the same in every run: two graphs of one program compare by eye.
    options.hash = true;
    options.deterministic = true;
    let lines: Vec<String> = if opts.flamechart {
        // A flame chart needs one timeline: `--invocation K`, else the slowest invocation.
        let (k, inv) = match opts.invocation {
            Some(_) => select(trace, opts.invocation)?.remove(0),
            None => trace
                .invocations
                .iter()
                .enumerate()
                .map(|(i, inv)| (i + 1, inv))
                .max_by(|(ka, a), (kb, b)| a.duration_ns.cmp(&b.duration_ns).then(kb.cmp(ka)))
                .expect("not empty"),
        };
        options.flame_chart = true;
        let what = plan_summary_for(trace, &[trace.table.path(inv.root.func)]);
        options.title = format!("{what}: invocation #{k} of {count}");
        let slowest = if opts.invocation.is_none() && count > 1 { ", the slowest" } else { "" };
        // A folded invocation has no order of calls: its call paths are laid out one after another.
        let order = if inv.folded {
            "folded: call paths one after another, not in time order"
        } else {
            "time runs left to right"
        };
        options.subtitle =
            Some(format!("flame chart ({order}){slowest} · {} · took {}", inv.thread, format_ns(inv.duration_ns)));
        let names = Names::for_stacks(&trace.table);
        // inferno reverses a flame chart's lines before laying them out, so they are given latest first.
        timeline(&inv.root, &names, inv.folded, true)
            .into_iter()
            .rev()
            .map(|(stack, ns)| format!("{stack} {ns}"))
            .collect()
    } else {
        match opts.invocation {
            Some(_) => {
                let (k, inv) = select(trace, opts.invocation)?.remove(0);
                let what = plan_summary_for(trace, &[trace.table.path(inv.root.func)]);
                options.title = format!("{what}: invocation #{k} of {count}");
                options.subtitle =
                    Some(format!("self time by call path · {} · took {}", inv.thread, format_ns(inv.duration_ns)));
            }
            None => {
                options.title = format!("{what}: {count} invocation{}", crate::units::plural_s(count as u64));
                options.subtitle = Some(if count == 1 {
                    "self time by call path".to_owned()
                } else {
                    "self time by call path, summed over the invocations".to_owned()
                });
            }
        }
        if opts.weight != Weight::Time {
            weigh_by_allocations(trace, opts.weight, &mut options)?;
        }
        stacks(trace, opts, true)?.into_iter().map(|(stack, ns)| format!("{stack} {ns}")).collect()
    };
    // Which times these are (compensated or raw), as every view says; a flame graph has one subtitle line.
    if trace.calibration.is_some() && opts.weight == Weight::Time {
        let compensated = if trace.times == Times::Compensated { "compensated times" } else { "raw times" };
        options.subtitle = Some(format!("{} · {compensated}", options.subtitle.take().unwrap_or_default()));
    }
    if let (Some(slower), Some(subtitle)) = (slower, options.subtitle.as_mut()) {
        subtitle.push_str(&format!(" · {slower}"));
    }
    if lines.is_empty() {
        bail!("the selected invocations took no measurable time: there is nothing to draw");
    }
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .context("inferno could not draw the flamegraph")?;
    let svg = String::from_utf8(svg).context("inferno wrote an SVG that is not UTF-8")?;
    let format_width: &dyn Fn(u64) -> String = match opts.weight {
        Weight::Time => &format_ns,
        Weight::Bytes => &|bytes| format_bytes(bytes as f64),
        Weight::Allocs => &|allocs| crate::units::plural(allocs, "allocation"),
    };
    // Tooltips of a flamegraph (not a flame chart, whose frames are single calls) give each call path's calls,
    // those made after a probe retired included: their time is in the caller's frame, their count in their own.
    let counts = if options.flame_chart { HashMap::new() } else { call_counts(trace, opts)? };
    let mut svg = svg_frames::rewrite_in_units(&svg, format_width, |frame| Edit {
        fill: mark_fill(frame.path.last()),
        extra: counts.get(&unmarked(&frame.path)).cloned(),
        ..Edit::default()
    })?;
    if options.flame_chart {
        svg = svg_frames::add_time_axis(&svg)?;
    }
    Ok(svg.into_bytes())
}

/// Per call path (frame names from the root), its calls as a tooltip says them: `20,003 calls, 15,907 after it
/// retired`, `~` where estimated.
fn call_counts(trace: &Trace, opts: &ViewOptions) -> Result<HashMap<Vec<String>, String>> {
    fn walk(node: &Merged, names: &Names, path: &mut Vec<String>, out: &mut HashMap<Vec<String>, String>) {
        path.push(names.get(node.func));
        let approx = if node.retired_estimated { "~" } else { "" };
        let calls = format!("{approx}{} call{}", thousands(node.all_calls()), plural_s(node.all_calls()));
        let text = match node.retired_calls {
            0 => calls,
            n => format!("{calls}, {approx}{} after it retired", thousands(n)),
        };
        out.insert(path.clone(), text);
        for child in &node.children {
            walk(child, names, path, out);
        }
        path.pop();
    }
    let names = Names::for_stacks(&trace.table);
    let callers = callers_of_retired(trace);
    let mut out = HashMap::new();
    for agg in aggregate(select(trace, opts.invocation)?.iter().map(|(_, inv)| *inv)) {
        let mut tree = agg.tree.clone();
        tree.place_retired(&agg.retired, &callers);
        walk(&tree, &names, &mut Vec::new(), &mut out);
    }
    Ok(out)
}

/// A frame path's names without the marks frames get (` [panicked]`, ...).
fn unmarked(path: &[String]) -> Vec<String> {
    let strip = |name: &str| {
        let mut name = name.to_owned();
        for mark in [ERR_MARK, CANCELLED_MARK, PANICKED_MARK] {
            if let Some(rest) = name.strip_suffix(mark) {
                name = rest.to_owned();
            }
        }
        name
    };
    path.iter().map(|n| strip(n)).collect()
}

/// A flamegraph by self bytes or self allocations (`--weight`): its units and subtitle; an error when the trace
/// counted no allocations.
fn weigh_by_allocations(trace: &Trace, weight: Weight, options: &mut Options) -> Result<()> {
    if !trace.counts_allocs() {
        return Err(crate::error::UserError::new(format!("{} counted no allocations", trace.path.display()))
            .hint("record it again with this version of cargo calltime, or draw it by time (`--weight time`)")
            .into());
    }
    let (unit, what) = match weight {
        Weight::Bytes => ("bytes", "self bytes allocated"),
        _ => ("allocations", "self allocations"),
    };
    options.count_name = unit.to_owned();
    let by = options.subtitle.take().unwrap_or_default().replacen("self time", what, 1);
    options.subtitle = Some(by);
    Ok(())
}

/// Frames of calls that panicked: a purple no frame of inferno's warm palette has.
pub const PANICKED_FILL: &str = "rgb(150,60,200)";
/// Frames of cancelled calls (futures dropped before completing): grey, work that came to nothing.
pub const CANCELLED_FILL: &str = "rgb(160,160,170)";
/// Frames of calls that returned an `Err`: a blue no frame of the warm palette has.
pub const ERR_FILL: &str = "rgb(70,130,210)";

/// The fill of a marked frame: panicked first, then cancelled, then `Err`.
fn mark_fill(name: Option<&String>) -> Option<String> {
    let name = name?;
    let fills = [(PANICKED_MARK, PANICKED_FILL), (CANCELLED_MARK, CANCELLED_FILL), (ERR_MARK, ERR_FILL)];
    fills.iter().find(|(mark, _)| name.contains(mark)).map(|(_, fill)| (*fill).to_owned())
}

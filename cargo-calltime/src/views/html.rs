//! `cargo calltime report --format html`: one self-contained page to share. The summary, the slowest invocations as
//! collapsible trees (`<details>`), the flamegraph (inferno's SVG, inlined as a data URL so its own script runs in
//! its own document), a flat per-function table sortable by total, self and calls (uftrace `report` style), and,
//! when the run store has history for the root, the charts across runs. Nothing is loaded from the network: the
//! CSS and the script (vanilla JS) are embedded from `views/html/`.

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::Result;

use super::aggregate::{aggregate, Merged};
use super::{plan_summary, Names, ViewOptions};
use crate::store::{dates, SeriesPoint};
use crate::trace::Trace;
use crate::units::format_ns;

const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

/// Nodes drawn per invocation tree; past this, a note sends the reader to the flamegraph.
const MAX_TREE_NODES: usize = 400;

/// What the report shows besides the trace.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// How many of the slowest invocations are drawn as trees.
    pub top: usize,
    /// Per root function, its points across the store's runs (oldest first); empty without history.
    pub history: Vec<(String, Vec<SeriesPoint>)>,
}

/// The whole page. Walks trees recursively: call it on a big stack (`views::with_big_stack`).
pub fn render(trace: &Trace, opts: &HtmlOptions) -> Result<String> {
    let names = Names::new(&trace.table);
    let what = plan_summary(trace);
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>calltime: {}</title>\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n<header><h1>calltime report</h1><p class=\"what\">{}</p>\n",
        escape(&what),
        escape(&what)
    );
    let history = opts.history.iter().any(|(_, points)| !points.is_empty());
    page.push_str("<nav><a href=\"#summary\">Summary</a> <a href=\"#slowest\">Slowest invocations</a> ");
    page.push_str("<a href=\"#flamegraph\">Flamegraph</a> <a href=\"#functions\">Functions</a>");
    if history {
        page.push_str(" <a href=\"#history\">Across runs</a>");
    }
    page.push_str("</nav></header>\n<main>\n");
    summary(&mut page, trace);
    slowest(&mut page, trace, &names, opts.top);
    flamegraph(&mut page, trace)?;
    functions(&mut page, trace, &names);
    // Which times the page shows, as every view says (and the runtime's settings, from trace format 3 on).
    let settings = super::times::settings_note(trace).map(|s| format!(" · {}", escape(&s))).unwrap_or_default();
    let _ = writeln!(page, "<p class=\"what\">{}{settings}</p>", escape(&super::times::times_note(trace)));
    if history {
        across_runs(&mut page, &opts.history)?;
    }
    let _ = write!(page, "</main>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    Ok(page)
}

fn summary(page: &mut String, trace: &Trace) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let recorded = (trace.epoch_unix_ns / 1_000_000) as i64;
    if recorded > 0 {
        rows.push(("recorded", format!("{} UTC", dates::format_ms(recorded))));
    }
    rows.push(("program", trace.exe.clone()));
    rows.push(("trace", trace.path.display().to_string()));
    rows.push(("invocations", trace.invocations.len().to_string()));
    let stats = &trace.stats;
    rows.push(("root calls seen", stats.seen.to_string()));
    for (name, value) in [("sampled out", stats.sampled_out), ("dropped", stats.dropped)] {
        if value > 0 {
            rows.push((name, value.to_string()));
        }
    }
    for (name, value) in [("truncated trees", stats.truncated), ("cut-off records", stats.incomplete)] {
        if value > 0 {
            rows.push((name, value.to_string()));
        }
    }
    for agg in aggregate(&trace.invocations) {
        let tree = &agg.tree;
        let percentiles = match (tree.percentile_ns(0.5), tree.percentile_ns(0.99)) {
            (Some(p50), Some(p99)) => format!(" · p50 {} · p99 {}", format_ns(p50), format_ns(p99)),
            _ => String::new(),
        };
        let value = format!(
            "{} invocations · mean {}{percentiles} · max {}",
            agg.invocations,
            format_ns(tree.mean_ns()),
            format_ns(tree.max_ns)
        );
        rows.push(("root", format!("{}: {value}", trace.table.path(tree.func))));
    }
    if !trace.settings.is_empty() {
        let settings: Vec<String> = trace.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rows.push(("runtime settings", settings.join(" ")));
    }
    page.push_str("<section id=\"summary\"><h2>Summary</h2>\n<table class=\"kv\">\n");
    for (name, value) in rows {
        let _ = writeln!(page, "<tr><th>{}</th><td>{}</td></tr>", escape(name), escape(&value));
    }
    for warning in &trace.warnings {
        let _ = writeln!(page, "<tr><th>warning</th><td class=\"warn\">{}</td></tr>", escape(warning));
    }
    page.push_str("</table></section>\n");
}

fn slowest(page: &mut String, trace: &Trace, names: &Names, top: usize) {
    let mut slowest: Vec<(usize, &crate::trace::Invocation)> =
        trace.invocations.iter().enumerate().map(|(i, inv)| (i + 1, inv)).collect();
    slowest.sort_by(|(ka, a), (kb, b)| b.duration_ns.cmp(&a.duration_ns).then(ka.cmp(kb)));
    page.push_str("<section id=\"slowest\"><h2>Slowest invocations</h2>\n");
    let callers = super::aggregate::callers_of_retired(trace);
    if slowest.is_empty() {
        page.push_str("<p>No complete invocation was recorded.</p></section>\n");
        return;
    }
    page.push_str(
        "<p class=\"tools\"><button type=\"button\" data-trees=\"open\">Expand all</button> \
         <button type=\"button\" data-trees=\"close\">Collapse all</button> \
         Repeated calls under one parent are merged; each line shows total, self time and calls.</p>\n",
    );
    for (k, inv) in slowest.into_iter().take(top.max(1)) {
        let _ = writeln!(
            page,
            "<div class=\"tree\" id=\"invocation-{k}\"><h3>invocation #{k} · {} · took {}</h3>",
            escape(&inv.thread.to_string()),
            format_ns(inv.duration_ns)
        );
        let mut merged = Merged::of_invocation(inv);
        merged.place_retired(&inv.retired, &callers);
        merged.estimate_retired_times(&trace.retirements);
        let mut budget = MAX_TREE_NODES;
        tree_node(page, &merged, merged.total_ns.max(1), names, &mut budget);
        let left = merged_count(&merged).saturating_sub(MAX_TREE_NODES);
        if left > 0 {
            let _ = writeln!(page, "<p class=\"more\">{left} more nodes are not drawn: see the flamegraph.</p>");
        }
        page.push_str("</div>\n");
    }
    page.push_str("</section>\n");
}

fn merged_count(node: &Merged) -> usize {
    1 + node.children.iter().map(merged_count).sum::<usize>()
}

fn tree_node(page: &mut String, node: &Merged, root_ns: u64, names: &Names, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    let share = node.total_ns as f64 * 100.0 / root_ns as f64;
    // Calls made after the function's probe retired are counted too (`~`: some of them estimated).
    let approx_calls = if node.retired_estimated { "~" } else { "" };
    let calls = match node.all_calls() {
        1 => String::new(),
        n => format!(" <span class=\"calls\">×{approx_calls}{n}</span>"),
    };
    let estimate = if node.is_estimated() { "~" } else { "" };
    let mut marks = if node.panicked > 0 { " <span class=\"warn\">marks</span>".to_owned() } else { String::new() };
    // Cancelled calls, `Err` returns and concurrent children, as the text view says them.
    if node.cancelled > 0 {
        let _ = write!(marks, " <span class=\"warn\">cancelled {} of {}</span>", node.cancelled, node.calls);
    }
    if node.errs > 0 {
        let _ = write!(marks, " <span class=\"warn\">err {} of {}</span>", node.errs, node.calls);
    }
    if node.children_overlap_ns > 0 {
        let overlap = format_ns(node.children_overlap_ns);
        let _ = write!(marks, " <span class=\"calls\">children overlap {overlap}</span>");
    }
    let label = format!(
        "<span class=\"bar\" style=\"width:{share:.1}%\"></span><span class=\"name\">{}</span> \
         <span class=\"total\">{estimate}{}</span> <span class=\"self\">self {estimate}{}</span>{calls}{marks}",
        escape(&names.get(node.func)),
        format_ns(node.total_ns),
        format_ns(node.self_ns)
    );
    if node.children.is_empty() {
        let _ = writeln!(page, "<div class=\"leaf\">{label}</div>");
        return;
    }
    let _ = writeln!(page, "<details class=\"node\" open><summary>{label}</summary>");
    for child in &node.children {
        tree_node(page, child, root_ns, names, budget);
    }
    page.push_str("</details>\n");
}

fn flamegraph(page: &mut String, trace: &Trace) -> Result<()> {
    page.push_str("<section id=\"flamegraph\"><h2>Flamegraph</h2>\n");
    if trace.invocations.is_empty() {
        page.push_str("<p>No complete invocation was recorded: there is nothing to draw.</p></section>\n");
        return Ok(());
    }
    let svg = super::flamegraph::render(
        trace,
        &ViewOptions { format: super::ViewFormat::Svg, ..ViewOptions::default() },
        None,
    )?;
    let height = svg_height(&svg).unwrap_or(600);
    let _ = writeln!(
        page,
        "<p class=\"tools\">Click a frame to zoom, Ctrl+F to search.</p>\n\
         <iframe class=\"flamegraph\" title=\"flamegraph\" style=\"height:{}px\" src=\"data:image/svg+xml;base64,{}\"></iframe>",
        height + 4,
        base64(&svg)
    );
    page.push_str("</section>\n");
    Ok(())
}

/// The `height` of an SVG's root element, to size its frame.
fn svg_height(svg: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(&svg[..svg.len().min(4096)]).ok()?;
    let start = text.find("<svg")?;
    let tag = &text[start..start + text[start..].find('>')?];
    let at = tag.find(" height=\"")? + " height=\"".len();
    let value = &tag[at..at + tag[at..].find('"')?];
    value.trim_end_matches("px").parse::<f64>().ok().map(|h| h.ceil() as u32)
}

/// One function's row of the flat table.
#[derive(Debug, Clone, Default)]
struct FunctionRow {
    calls: u64,
    /// Of `calls`, those made after the function's probe retired (not timed).
    retired_calls: u64,
    self_ns: u64,
    /// Time inside the function, counting a recursive call nested in another call of it once.
    total_ns: u64,
    estimated: bool,
}

/// Per function over every invocation: calls, self time and total time (uftrace `report`).
fn function_rows(trace: &Trace) -> Vec<(u32, FunctionRow)> {
    fn walk(node: &Merged, on_stack: &mut Vec<u32>, rows: &mut HashMap<u32, FunctionRow>) {
        let row = rows.entry(node.func).or_default();
        row.calls += node.calls;
        row.self_ns = row.self_ns.saturating_add(node.self_ns);
        row.estimated |= node.is_estimated();
        if !on_stack.contains(&node.func) {
            row.total_ns = row.total_ns.saturating_add(node.total_ns);
        }
        on_stack.push(node.func);
        for child in &node.children {
            walk(child, on_stack, rows);
        }
        on_stack.pop();
    }
    let mut rows = HashMap::new();
    for agg in aggregate(&trace.invocations) {
        walk(&agg.tree, &mut Vec::new(), &mut rows);
    }
    // Calls made after a probe retired count in the function's row (not in its times: they were not timed).
    for r in trace.invocations.iter().flat_map(|inv| &inv.retired) {
        let row = rows.entry(r.func).or_default();
        row.calls = row.calls.saturating_add(r.calls);
        row.retired_calls = row.retired_calls.saturating_add(r.calls);
    }
    let mut rows: Vec<(u32, FunctionRow)> = rows.into_iter().collect();
    rows.sort_by(|(fa, a), (fb, b)| b.self_ns.cmp(&a.self_ns).then(fa.cmp(fb)));
    rows
}

fn functions(page: &mut String, trace: &Trace, names: &Names) {
    let rows = function_rows(trace);
    let all_self: u64 = rows.iter().map(|(_, r)| r.self_ns).sum::<u64>().max(1);
    page.push_str(
        "<section id=\"functions\"><h2>Functions</h2>\n<p class=\"tools\">Every invocation together; click a column \
         to sort. Total counts a recursive call inside another call of the same function once; ~ marks sampled \
         (estimated) times.</p>\n<table class=\"sortable\" id=\"functions-table\">\n<thead><tr>\
         <th data-key=\"name\" data-type=\"text\">Function</th>\
         <th data-key=\"total\" data-type=\"number\">Total</th>\
         <th data-key=\"self\" data-type=\"number\" aria-sort=\"descending\">Self</th>\
         <th data-key=\"self-share\" data-type=\"number\">Self %</th>\
         <th data-key=\"calls\" data-type=\"number\">Calls</th>\
         <th data-key=\"mean-self\" data-type=\"number\">Self per call</th>\
         </tr></thead>\n<tbody>\n",
    );
    for (func, row) in rows {
        let estimate = if row.estimated { "~" } else { "" };
        let mean_self = row.self_ns / row.calls.saturating_sub(row.retired_calls).max(1);
        let name = names.get(func);
        let _ = writeln!(
            page,
            "<tr><td data-key=\"name\" data-v=\"{}\" title=\"{}\">{}</td>\
             <td data-key=\"total\" data-v=\"{}\">{estimate}{}</td><td data-key=\"self\" data-v=\"{}\">{estimate}{}</td>\
             <td data-key=\"self-share\" data-v=\"{}\">{:.1}%</td><td data-key=\"calls\" data-v=\"{}\">{}</td>\
             <td data-key=\"mean-self\" data-v=\"{mean_self}\">{estimate}{}</td></tr>",
            escape(&name),
            escape(&trace.table.path(func)),
            escape(&name),
            row.total_ns,
            format_ns(row.total_ns),
            row.self_ns,
            format_ns(row.self_ns),
            row.self_ns,
            row.self_ns as f64 * 100.0 / all_self as f64,
            row.calls,
            row.calls,
            format_ns(mean_self)
        );
    }
    page.push_str("</tbody></table></section>\n");
}

fn across_runs(page: &mut String, history: &[(String, Vec<SeriesPoint>)]) -> Result<()> {
    page.push_str("<section id=\"history\"><h2>Across runs</h2>\n");
    for (root, points) in history.iter().filter(|(_, points)| !points.is_empty()) {
        let _ = write!(page, "<h3>{}</h3>\n<div class=\"chart\">", escape(root));
        // plotters' SVG has no script and no ids: it is safe to inline as is.
        page.push_str(&super::chart::render_svg(root, points)?);
        page.push_str("</div>\n<table class=\"runs\"><thead><tr><th>Run</th><th>Recorded (UTC)</th><th>Label</th>");
        page.push_str(
            "<th>Mean</th><th>p50</th><th>p99</th><th>Calls per invocation</th><th>Note</th></tr></thead><tbody>\n",
        );
        for p in points {
            let optional = |ns: Option<u64>| ns.map_or_else(|| "-".to_owned(), format_ns);
            let _ = writeln!(
                page,
                "<tr{}><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
                if p.dirty.is_some() { " class=\"dirty\"" } else { "" },
                p.run_id,
                dates::format_ms(p.recorded_ms),
                escape(p.label.as_deref().unwrap_or("")),
                format_ns(p.stat.mean_ns),
                optional(p.stat.p50_ns),
                optional(p.stat.p99_ns),
                p.stat.calls_per_invocation,
                escape(p.dirty.as_deref().map_or("", |d| d))
            );
        }
        page.push_str("</tbody></table>\n");
    }
    page.push_str("</section>\n");
    Ok(())
}

/// Text for HTML content and quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding (for the flamegraph's data URL).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
    }

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn svg_height_reads_the_root_element() {
        assert_eq!(svg_height(b"<?xml version=\"1.0\"?><svg width=\"1200\" height=\"342\" x=\"1\">"), Some(342));
        assert_eq!(svg_height(b"<svg width=\"10\">"), None);
    }
}

//! `cargo calltime graph`'s output: a plan as text, JSON (docs/graph-json.md) or Graphviz dot.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::IMPLICIT_CALLS;
use crate::plan::{ErrCounting, Plan, PlannedFunction, ProbeKind};

/// Version of the JSON document; bump on incompatible changes.
pub const GRAPH_JSON_VERSION: u32 = 1;

/// How `cargo calltime graph` prints the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Text,
    /// docs/graph-json.md
    Json,
    /// Graphviz.
    Dot,
}

/// The plan in `format`; file paths relative to the workspace `root`.
pub fn render(plan: &Plan, root: &Path, format: GraphFormat) -> Result<String> {
    Ok(match format {
        GraphFormat::Text => render_text(plan, root),
        GraphFormat::Json => render_json(plan, root)?,
        GraphFormat::Dot => render_dot(plan),
    })
}

pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn rel(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

fn probe_text(f: &PlannedFunction) -> String {
    match (&f.probe, &f.skip_reason) {
        (Some(p), _) => {
            let kind = match p.kind {
                ProbeKind::Sync => "",
                ProbeKind::Async => " (async)",
                ProbeKind::AsyncBlock => " (async block)",
            };
            // The one case where a `*Result` function's `Err` returns go uncounted is worth a note.
            let errs = match p.errs {
                ErrCounting::TrackCaller => " (Err returns not counted: #[track_caller] keeps its body unwrapped)",
                ErrCounting::Counted | ErrCounting::NotAResult => "",
            };
            format!("probe #{}{kind}{errs}", p.index)
        }
        (None, Some(reason)) => format!("skipped: {reason}"),
        (None, None) => "skipped".to_owned(),
    }
}

/// Counts for the totals line and the JSON `totals` object.
#[derive(Debug, Serialize)]
pub struct Totals {
    pub functions: usize,
    pub instrumented: usize,
    pub skipped: usize,
    pub edges: usize,
    pub unresolved: usize,
    pub warnings: usize,
}

pub fn totals(plan: &Plan) -> Totals {
    let instrumented = plan.functions.iter().filter(|f| f.probe.is_some()).count();
    Totals {
        functions: plan.functions.len(),
        instrumented,
        skipped: plan.functions.len() - instrumented,
        edges: plan.edges.len(),
        unresolved: plan.unresolved.len(),
        warnings: plan.warnings.len(),
    }
}

pub fn render_text(plan: &Plan, root: &Path) -> String {
    let mut out = String::new();
    let mut filter = plan.filter.as_deref().map(|f| format!(", filter {f}")).unwrap_or_default();
    if let Some(exclude) = &plan.exclude {
        filter.push_str(&format!(", exclude {exclude}"));
    }
    let _ = writeln!(out, "plan for {} (depth {}{filter})", plan.root_args.join(", "), plan.depth);
    let _ = writeln!(out);
    let _ = writeln!(out, "functions ({}):", plan.functions.len());
    let locations: Vec<String> = plan.functions.iter().map(|f| format!("{}:{}", rel(&f.file, root), f.line)).collect();
    let path_width = plan.functions.iter().map(|f| f.path.len()).max().unwrap_or(0);
    let loc_width = locations.iter().map(String::len).max().unwrap_or(0);
    for (f, loc) in plan.functions.iter().zip(&locations) {
        let _ = writeln!(
            out,
            "  {:>2}  {:<path_width$}  {:<loc_width$}  {}",
            f.level,
            f.path,
            loc,
            probe_text(f),
            path_width = path_width,
            loc_width = loc_width
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "edges ({}):", plan.edges.len());
    // A path defined twice (`#[cfg]` variants) is told apart by its location.
    let mut path_count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for f in &plan.functions {
        *path_count.entry(f.path.as_str()).or_default() += 1;
    }
    let name = |i: usize| {
        let f = &plan.functions[i];
        if path_count[f.path.as_str()] > 1 {
            format!("{} ({})", f.path, locations[i])
        } else {
            f.path.clone()
        }
    };
    for e in &plan.edges {
        let _ = writeln!(out, "  {} -> {}", name(e.from), name(e.to));
    }
    if !plan.unresolved.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "unresolved or over-approximated call sites ({}):", plan.unresolved.len());
        for n in &plan.unresolved {
            let _ = writeln!(out, "  {}:{}  {}  in {}: {}", rel(&n.file, root), n.line, n.call, n.function, n.note);
        }
    }
    if !plan.warnings.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "warnings ({}):", plan.warnings.len());
        for w in &plan.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    let t = totals(plan);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "totals: {}, {} probes, {} skipped, {}, {}, {}",
        plural(t.functions, "function"),
        t.instrumented,
        t.skipped,
        plural(t.edges, "edge"),
        plural(t.unresolved, "call-site note"),
        plural(t.warnings, "warning")
    );
    let _ = writeln!(out, "{IMPLICIT_CALLS}");
    out
}

#[derive(Serialize)]
struct JsonGraph<'a> {
    version: u32,
    workspace_root: String,
    roots: &'a [String],
    depth: u32,
    filter: Option<&'a str>,
    exclude: Option<&'a str>,
    implicit_calls: &'static str,
    functions: Vec<JsonFunction<'a>>,
    edges: Vec<JsonEdge<'a>>,
    unresolved: Vec<JsonNote<'a>>,
    warnings: &'a [String],
    totals: Totals,
}

#[derive(Serialize)]
struct JsonFunction<'a> {
    path: &'a str,
    display: &'a str,
    file: String,
    line: u32,
    level: u32,
    is_root: bool,
    instrumented: bool,
    index: Option<u32>,
    probe_kind: Option<ProbeKind>,
    skip_reason: Option<String>,
    /// The stable code of `skip_reason`.
    skip_code: Option<&'static str>,
}

#[derive(Serialize)]
struct JsonEdge<'a> {
    from: &'a str,
    to: &'a str,
    from_position: usize,
    to_position: usize,
}

#[derive(Serialize)]
struct JsonNote<'a> {
    function: &'a str,
    file: String,
    line: u32,
    call: &'a str,
    note: &'a str,
}

pub fn render_json(plan: &Plan, root: &Path) -> Result<String> {
    let doc = JsonGraph {
        version: GRAPH_JSON_VERSION,
        workspace_root: root.display().to_string(),
        roots: &plan.root_args,
        depth: plan.depth,
        filter: plan.filter.as_deref(),
        exclude: plan.exclude.as_deref(),
        implicit_calls: IMPLICIT_CALLS,
        functions: plan
            .functions
            .iter()
            .map(|f| JsonFunction {
                path: &f.path,
                display: &f.display,
                file: rel(&f.file, root),
                line: f.line,
                level: f.level,
                is_root: f.is_root,
                instrumented: f.probe.is_some(),
                index: f.probe.as_ref().map(|p| p.index),
                probe_kind: f.probe.as_ref().map(|p| p.kind),
                skip_reason: f.skip_reason.as_ref().map(ToString::to_string),
                skip_code: f.skip_reason.as_ref().map(|r| r.code()),
            })
            .collect(),
        edges: plan
            .edges
            .iter()
            .map(|e| JsonEdge {
                from: &plan.functions[e.from].path,
                to: &plan.functions[e.to].path,
                from_position: e.from,
                to_position: e.to,
            })
            .collect(),
        unresolved: plan
            .unresolved
            .iter()
            .map(|n| JsonNote {
                function: &n.function,
                file: rel(&n.file, root),
                line: n.line,
                call: &n.call,
                note: &n.note,
            })
            .collect(),
        warnings: &plan.warnings,
        totals: totals(plan),
    };
    let mut text = serde_json::to_string_pretty(&doc).context("cannot serialise the plan")?;
    text.push('\n');
    Ok(text)
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

pub fn render_dot(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph calltime {{");
    let _ = writeln!(out, "  rankdir=LR;");
    let _ = writeln!(out, "  node [shape=box, fontname=\"monospace\"];");
    for (i, f) in plan.functions.iter().enumerate() {
        let label = format!("{}\\nlevel {}, {}", dot_escape(&f.path), f.level, dot_escape(&probe_text(f)));
        let style = if f.probe.is_some() { "" } else { ", style=dashed" };
        let root = if f.is_root { ", penwidth=2" } else { "" };
        let _ = writeln!(out, "  n{i} [label=\"{label}\"{style}{root}];");
    }
    for e in &plan.edges {
        let _ = writeln!(out, "  n{} -> n{};", e.from, e.to);
    }
    let _ = writeln!(out, "}}");
    out
}

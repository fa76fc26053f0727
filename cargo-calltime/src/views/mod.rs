//! Stage 9: views of recorded trees: text trees (the default), flamegraph SVG, folded stacks, Chrome trace event
//! JSON and versioned JSON, all from one [`Trace`]. Where the rendered bytes go is the commands' business
//! (`commands::report`, `commands::run`).

pub mod aggregate;
pub mod chart;
mod chrome;
mod flamegraph;
mod folded;
pub mod history;
pub mod html;
mod json;
mod names;
pub mod overhead;
pub(crate) mod svg_frames;
pub mod table;
mod text;
pub mod times;

use std::path::PathBuf;

use anyhow::Result;

use crate::trace::Trace;
use crate::workspace::Workspace;

pub use json::JSON_VERSION;
pub use names::{stack_safe, unique_paths, Names};
pub use table::SortKey;

/// What the flamegraph and the folded stacks weigh call paths by (`--weight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Weight {
    /// Self time (ns).
    #[default]
    Time,
    /// Bytes allocated while the call path was the innermost recorded call.
    Bytes,
    /// Allocations made while the call path was the innermost recorded call.
    Allocs,
}

impl Weight {
    /// A merged call path's own share: self time, self bytes or self allocations.
    pub fn of_self(self, node: &aggregate::Merged) -> u64 {
        match self {
            Weight::Time => node.self_ns,
            Weight::Bytes => node.self_alloc_bytes,
            Weight::Allocs => node.self_allocs,
        }
    }

    /// The same for the whole subtree.
    pub fn of_total(self, node: &aggregate::Merged) -> u64 {
        match self {
            Weight::Time => node.total_ns,
            Weight::Bytes => node.alloc_bytes,
            Weight::Allocs => node.allocs,
        }
    }
}

/// The formats a trace renders to (`--format`; their help is in cli.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewFormat {
    Text,
    Svg,
    Folded,
    Chrome,
    Json,
    Table,
    /// One self-contained HTML page ([`html`]).
    Html,
    /// The whole run by call path ([`text::render_whole_run`]).
    Aggregate,
}

/// How a trace is rendered; `Default` is what `cargo calltime report` does with no flags.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewOptions {
    pub format: ViewFormat,
    /// Text: how many of the slowest invocations are shown in full.
    pub top: usize,
    /// Text: nodes with a call slower than this stand out.
    pub highlight_ns: Option<u64>,
    /// Text: sibling nodes faster than this (total of their calls) fold into one "(N more)" line.
    pub min_time_ns: Option<u64>,
    /// Only this invocation (1-based, completion order).
    pub invocation: Option<usize>,
    /// SVG: a time-ordered flame chart of one invocation instead of a flamegraph.
    pub flamechart: bool,
    /// Text: ANSI colours.
    pub color: bool,
    /// Show times as recorded, the probes' own cost included (`--raw-times`); compensated otherwise, when the trace
    /// has a calibration.
    pub raw_times: bool,
    /// Table (and the JSON's `functions`): the order of the rows.
    pub sort: SortKey,
    /// Only invocations that took longer than this (`--slower-than`), in every format.
    pub slower_than_ns: Option<u64>,
    /// Flamegraph and folded stacks: what a frame's width is (`--weight`).
    pub weight: Weight,
    /// HTML: per root function, its points across the run store's runs (oldest first); empty without history.
    pub history: Vec<(String, Vec<crate::store::SeriesPoint>)>,
}

impl Default for ViewOptions {
    fn default() -> ViewOptions {
        ViewOptions {
            format: ViewFormat::Text,
            top: 3,
            highlight_ns: None,
            min_time_ns: None,
            invocation: None,
            flamechart: false,
            color: false,
            raw_times: false,
            sort: SortKey::SelfTime,
            weight: Weight::Time,
            slower_than_ns: None,
            history: Vec::new(),
        }
    }
}

/// A rendered view.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub bytes: Vec<u8>,
    /// Not meant for a terminal (SVG, HTML): without `-o` it goes to a file.
    pub binary_like: bool,
    /// What the commands say on stderr (`--slower-than`: how many invocations were kept), for the formats that have
    /// no place for it.
    pub note: Option<String>,
}

/// `--slower-than`: the invocations a view keeps, of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SlowerThan {
    pub slower_than_ns: u64,
    pub kept: usize,
    pub of: usize,
}

impl std::fmt::Display for SlowerThan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kept, of, ns) = (self.kept, self.of, crate::units::format_ns(self.slower_than_ns));
        write!(f, "only invocations slower than {ns}: {kept} of {of} kept")
    }
}

/// Renders `trace` in the format `opts` asks for, its times compensated for probe cost unless `opts.raw_times`
/// (see [`times::prepare`]: a trace prepared once is not compensated again).
pub fn render(trace: &Trace, opts: &ViewOptions) -> Result<Rendered> {
    let trace = &*times::for_view(trace, opts.raw_times);
    let filtered;
    let (trace, slower) = match opts.slower_than_ns {
        Some(ns) => {
            let slower = SlowerThan { slower_than_ns: ns, kept: 0, of: trace.invocations.len() };
            filtered = keep_slower(trace, ns)?;
            (&filtered, Some(SlowerThan { kept: filtered.invocations.len(), ..slower }))
        }
        None => (trace, None),
    };
    // Text and table say it under their title; SVG in its subtitle; JSON in a field.
    let with_note = |text: String| match slower {
        Some(slower) => after_first_line(&text, &slower.to_string()),
        None => text,
    };
    let (bytes, binary_like) = match opts.format {
        ViewFormat::Text => (with_note(text::render(trace, opts)?).into_bytes(), false),
        ViewFormat::Svg => (flamegraph::render(trace, opts, slower)?, true),
        ViewFormat::Folded => (folded::render(trace, opts)?.into_bytes(), false),
        ViewFormat::Chrome => (chrome::render(trace, opts)?.into_bytes(), false),
        ViewFormat::Json => (json::render(trace, opts, slower)?.into_bytes(), false),
        ViewFormat::Table => {
            let table = table::render(trace, opts)?;
            let table = match text::controls_note(trace) {
                Some(note) => after_first_line(&table, &note),
                None => table,
            };
            let table = match text::sampled_note(trace) {
                Some(note) => after_first_line(&table, &note),
                None => table,
            };
            (with_note(table).into_bytes(), false)
        }
        ViewFormat::Aggregate => (text::render_whole_run(trace, opts)?.into_bytes(), false),
        ViewFormat::Html => {
            let html_opts = html::HtmlOptions { top: opts.top.max(1), history: opts.history.clone() };
            (html::render(trace, &html_opts)?.into_bytes(), true)
        }
    };
    // Text and aggregate say it in their summary, table under its title, JSON in `controls`; the others on stderr.
    let controls = match opts.format {
        ViewFormat::Text | ViewFormat::Aggregate | ViewFormat::Json | ViewFormat::Table => None,
        ViewFormat::Svg | ViewFormat::Folded | ViewFormat::Chrome | ViewFormat::Html => {
            match (text::controls_note(trace), text::sampled_note(trace)) {
                (Some(controls), Some(sampled)) => Some(format!("{controls}; {sampled}")),
                (controls, sampled) => controls.or(sampled),
            }
        }
    };
    let note = match (slower.map(|s| s.to_string()), controls) {
        (Some(slower), Some(controls)) => Some(format!("{slower}; {controls}")),
        (slower, controls) => slower.or(controls),
    };
    Ok(Rendered { bytes, binary_like, note })
}

/// The invocations of `trace` that took longer than `ns` (a copy: the views take a whole trace).
fn keep_slower(trace: &Trace, ns: u64) -> Result<Trace> {
    let mut kept = trace.clone();
    kept.invocations.retain(|inv| inv.duration_ns > ns);
    if kept.invocations.is_empty() && !trace.invocations.is_empty() {
        let slowest = trace.invocations.iter().map(|inv| inv.duration_ns).max().unwrap_or(0);
        return Err(crate::error::UserError::new(format!(
            "none of the {} invocations is slower than {}: the slowest took {}",
            trace.invocations.len(),
            crate::units::format_ns(ns),
            crate::units::format_ns(slowest)
        ))
        .hint("pass a lower --slower-than, or leave it out")
        .into());
    }
    Ok(kept)
}

/// `text` with `line` inserted after its first line.
fn after_first_line(text: &str, line: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{line}\n{rest}"),
        None => format!("{text}\n{line}\n"),
    }
}

/// Runs `f` on a thread with a 1 GiB stack (reserved, not committed): trees are walked recursively, and a deeply
/// recursive program records trees tens of thousands of levels deep. Falls back to the current thread if no
/// thread can be started.
pub fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let mut f = Some(f);
    let result = std::thread::scope(|scope| {
        let f = &mut f;
        let spawned = std::thread::Builder::new()
            .name("calltime-views".into())
            .stack_size(1 << 30)
            .spawn_scoped(scope, move || f.take().map(|f| f()));
        spawned.ok().map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    match result.flatten() {
        Some(value) => value,
        None => (f.take().expect("not run when the thread could not start"))(),
    }
}

/// Where the run command leaves the last run's trace (its function table beside it, as
/// [`crate::trace::functions_path_for`] names it).
pub fn last_trace_path(ws: &Workspace) -> PathBuf {
    ws.calltime_dir().join("last.trace")
}

/// The function paths of the trace's roots: those the function table marks as roots, else the `--root` arguments.
fn root_paths(trace: &Trace) -> Vec<String> {
    let marked: Vec<String> = trace.table.functions.iter().filter(|f| f.root).map(|f| f.path.clone()).collect();
    if marked.is_empty() {
        trace.table.roots.clone()
    } else {
        marked
    }
}

/// `demo::server::handle (depth 5, filter ^demo::)`: what was recorded, for titles. Names the roots that were
/// actually called (a plan with several roots may record only some), else the plan's roots.
pub(crate) fn plan_summary(trace: &Trace) -> String {
    let mut called: Vec<String> = Vec::new();
    for inv in &trace.invocations {
        let path = trace.table.path(inv.root.func);
        if !called.contains(&path) {
            called.push(path);
        }
    }
    if called.is_empty() {
        called = root_paths(trace);
    }
    plan_summary_for(trace, &called)
}

/// [`plan_summary`] naming only the given roots (a view of one invocation names its own root).
fn plan_summary_for(trace: &Trace, roots: &[String]) -> String {
    let mut text = if roots.is_empty() { "calltime".to_owned() } else { roots.join(", ") };
    let mut details = Vec::new();
    if trace.table.depth > 0 {
        details.push(format!("depth {}", trace.table.depth));
    }
    if let Some(filter) = &trace.table.filter {
        details.push(format!("filter {filter}"));
    }
    if !details.is_empty() {
        text.push_str(&format!(" ({})", details.join(", ")));
    }
    text
}

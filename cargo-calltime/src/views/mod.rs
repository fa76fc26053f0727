//! Stage 9: views of recorded trees: text trees (the default), flamegraph SVG, folded stacks, Chrome trace event
//! JSON and versioned JSON, all from one [`Trace`]; and `cargo calltime report`, which renders a saved trace.

pub mod aggregate;
mod chrome;
mod flamegraph;
mod folded;
mod json;
mod names;
pub mod overhead;
mod text;
pub mod times;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{ReportArgs, ViewArgs, ViewFormat};
use crate::trace::Trace;
use crate::ui;
use crate::units::parse_duration;
use crate::workspace::Workspace;

pub use json::JSON_VERSION;
pub use names::Names;

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
        }
    }
}

impl ViewOptions {
    /// Reads the view flags; colour follows `ui::color_stdout` when the text goes to stdout.
    pub fn from_args(args: &ViewArgs) -> Result<ViewOptions> {
        let duration = |flag: &str, value: &Option<String>| -> Result<Option<u64>> {
            value.as_deref().map(parse_duration).transpose().with_context(|| format!("invalid {flag}"))
        };
        if args.flamechart && args.format != ViewFormat::Svg {
            anyhow::bail!(
                "--flamechart draws an SVG flame chart\n  hint: add `--format svg` (and `--invocation K` to pick the invocation)"
            );
        }
        if args.invocation == Some(0) {
            anyhow::bail!(
                "--invocation counts from 1\n  hint: `--invocation 1` is the first invocation that completed"
            );
        }
        let to_stdout = match &args.output {
            None => true,
            Some(path) => path == Path::new("-"),
        };
        Ok(ViewOptions {
            format: args.format,
            top: args.top,
            highlight_ns: duration("--highlight", &args.highlight)?,
            min_time_ns: duration("--min-time", &args.min_time)?,
            invocation: args.invocation,
            flamechart: args.flamechart,
            color: to_stdout && args.format == ViewFormat::Text && ui::color_stdout(),
            raw_times: false,
        })
    }
}

/// A rendered view.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub bytes: Vec<u8>,
    /// Not meant for a terminal (SVG): without `-o` it goes to a file.
    pub binary_like: bool,
}

/// Renders `trace` in the format `opts` asks for, its times compensated for probe cost unless `opts.raw_times`
/// (see [`times::prepare`]: a trace prepared once is not compensated again).
pub fn render(trace: &Trace, opts: &ViewOptions) -> Result<Rendered> {
    let trace = &*times::for_view(trace, opts.raw_times);
    let (bytes, binary_like) = match opts.format {
        ViewFormat::Text => (text::render(trace, opts)?.into_bytes(), false),
        ViewFormat::Svg => (flamegraph::render(trace, opts)?, true),
        ViewFormat::Folded => (folded::render(trace, opts)?.into_bytes(), false),
        ViewFormat::Chrome => (chrome::render(trace, opts)?.into_bytes(), false),
        ViewFormat::Json => (json::render(trace, opts)?.into_bytes(), false),
    };
    Ok(Rendered { bytes, binary_like })
}

/// Renders and writes: to `-o FILE` (`-o -` is stdout); without `-o`, text/folded/chrome/json go to stdout and an
/// SVG goes to `default_svg_path`, whose path is printed on stderr (never SVG to a terminal).
pub fn emit(trace: &Trace, args: &ViewArgs, default_svg_path: &Path) -> Result<()> {
    let opts = ViewOptions::from_args(args)?;
    let rendered = with_big_stack(|| render(trace, &opts))?;
    let file: Option<PathBuf> = match &args.output {
        Some(path) if path == Path::new("-") => None,
        Some(path) => Some(path.clone()),
        None if rendered.binary_like => Some(default_svg_path.to_owned()),
        None => None,
    };
    match file {
        None => {
            use std::io::IsTerminal;
            if rendered.binary_like && std::io::stdout().is_terminal() {
                anyhow::bail!(
                    "not writing an SVG to the terminal\n  hint: pass `-o FILE.svg`, leave out `-o` to get \
                     {}, or pipe the output",
                    default_svg_path.display()
                );
            }
            let mut out = std::io::stdout().lock();
            match out.write_all(&rendered.bytes).and_then(|()| out.flush()) {
                // `| head` closing the pipe early is not an error worth reporting.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("cannot write the report to stdout")?,
            }
        }
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
            }
            std::fs::write(&path, &rendered.bytes).with_context(|| format!("cannot write {}", path.display()))?;
            // The path is the result the user asked for, so it is printed even with `-q`.
            let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Green.into()));
            let _ = writeln!(anstream::stderr(), "{style}{:>12}{style:#} {}", "Wrote", path.display());
        }
    }
    Ok(())
}

/// `cargo calltime report [TRACE]`: renders a saved trace, by default the last run's
/// (`<target>/calltime/last.trace`), without building anything.
pub fn report_command(args: &ReportArgs) -> Result<i32> {
    // Loading, rendering and dropping a deep tree all recurse.
    with_big_stack(|| report(args))
}

fn report(args: &ReportArgs) -> Result<i32> {
    ui::set_quiet(args.cargo.quiet);
    // (An SVG needs its default place even with `-o -`: the refusal to write to a terminal names it.)
    let needs_svg_path = args.view.format == ViewFormat::Svg;
    // The workspace is only needed to find the last trace or the default SVG place; `cargo metadata` is not free.
    let workspace = if args.trace.is_none() || needs_svg_path { Some(Workspace::load(&args.cargo)) } else { None };
    let trace_path = match &args.trace {
        Some(path) => path.clone(),
        None => {
            let ws = match workspace.as_ref().expect("loaded when no trace is given") {
                Ok(ws) => ws,
                Err(e) => {
                    let reason = e.to_string();
                    let reason = reason.lines().next().unwrap_or_default().to_owned();
                    anyhow::bail!(
                        "cannot find the last run's trace: {reason}\n  hint: pass a trace file \
                         (`cargo calltime report path/to/run.trace`) or run this inside the workspace"
                    );
                }
            };
            let last = last_trace_path(ws);
            if !last.exists() {
                anyhow::bail!(
                    "no trace from a previous run at {}\n  hint: run `cargo calltime --root PATH` first or pass a trace file",
                    last.display()
                );
            }
            last
        }
    };
    let trace = Trace::load(&trace_path, args.functions.as_deref())?;
    for warning in &trace.warnings {
        ui::warn(warning);
    }
    let svg_path = match workspace {
        Some(Ok(ws)) => ws.calltime_dir().join("flamegraph.svg"),
        // No workspace (a trace copied elsewhere): the SVG goes beside the trace.
        _ => trace_path.with_extension("svg"),
    };
    emit(&trace, &args.view, &svg_path)?;
    if let Some(note) = overhead::exclude_note(&trace) {
        ui::note(&note);
    }
    Ok(0)
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
fn plan_summary(trace: &Trace) -> String {
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

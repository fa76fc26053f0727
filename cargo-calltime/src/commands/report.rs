//! `cargo calltime report [TRACE]`: renders a saved trace, by default the last run's
//! (`<target>/calltime/last.trace`), without building anything.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::options;
use crate::cli::{GlobalArgs, ReportArgs};
use crate::error::UserError;
use crate::trace::Trace;
use crate::ui;
use crate::views::{self, overhead, Rendered, ViewFormat};
use crate::workspace::Workspace;

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<i32> {
    let view =
        options::view_options(&args.view, ui::color_stdout() && options::to_stdout(args.view.output.as_deref()))?;
    let cargo = options::cargo_options(global, &args.cargo);
    // (An SVG needs its default place even with `-o -`: the refusal to write to a terminal names it.)
    let needs_svg_path = view.format == ViewFormat::Svg;
    // The workspace is only needed to find the last trace or the default SVG place; `cargo metadata` is not free.
    let workspace = if args.trace.is_none() || needs_svg_path { Some(Workspace::load(&cargo)) } else { None };
    let trace_path = match (&args.trace, &workspace) {
        (Some(path), _) => path.clone(),
        (None, Some(Ok(ws))) => last_trace(ws)?,
        (None, Some(Err(e))) => {
            let reason = e.to_string();
            return Err(UserError::new(format!(
                "cannot find the last run's trace: {}",
                reason.lines().next().unwrap_or_default()
            ))
            .hint("pass a trace file (`cargo calltime report path/to/run.trace`) or run this inside the workspace")
            .into());
        }
        (None, None) => unreachable!("the workspace is loaded when no trace is given"),
    };
    let svg_path = match &workspace {
        Some(Ok(ws)) => ws.calltime_dir().join("flamegraph.svg"),
        // No workspace (a trace copied elsewhere): the SVG goes beside the trace.
        _ => trace_path.with_extension("svg"),
    };
    // Loading, rendering and dropping a deep tree all recurse.
    views::with_big_stack(|| -> Result<i32> {
        let trace = Trace::load(&trace_path, args.functions.as_deref())?;
        for warning in &trace.warnings {
            ui::warn(warning);
        }
        let rendered = views::render(&trace, &view)?;
        emit(&rendered, args.view.output.as_deref(), &svg_path)?;
        if let Some(note) = overhead::exclude_note(&trace) {
            ui::note(&note);
        }
        Ok(0)
    })
}

fn last_trace(ws: &Workspace) -> Result<PathBuf> {
    let last = views::last_trace_path(ws);
    if !last.exists() {
        return Err(UserError::new(format!("no trace from a previous run at {}", last.display()))
            .hint("run `cargo calltime --root PATH` first or pass a trace file")
            .into());
    }
    Ok(last)
}

/// Writes a rendered view: to `-o FILE` (`-o -` is stdout); without `-o`, text/folded/chrome/json go to stdout and
/// an SVG goes to `default_svg_path`, whose path is printed on stderr (never SVG to a terminal).
pub fn emit(rendered: &Rendered, output: Option<&Path>, default_svg_path: &Path) -> Result<()> {
    let file: Option<&Path> = match output {
        Some(path) if path == Path::new("-") => None,
        Some(path) => Some(path),
        None if rendered.binary_like => Some(default_svg_path),
        None => None,
    };
    let Some(path) = file else {
        use std::io::IsTerminal;
        if rendered.binary_like && std::io::stdout().is_terminal() {
            return Err(UserError::new("not writing an SVG to the terminal")
                .hint(format!(
                    "pass `-o FILE.svg`, leave out `-o` to get {}, or pipe the output",
                    default_svg_path.display()
                ))
                .into());
        }
        return super::write_stdout(&rendered.bytes);
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    std::fs::write(path, &rendered.bytes).with_context(|| format!("cannot write {}", path.display()))?;
    // The path is the result the user asked for, so it is printed even with `-q`.
    ui::status_always("Wrote", &path.display().to_string());
    Ok(())
}

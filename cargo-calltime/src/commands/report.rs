//! `cargo calltime report [TRACE]`: renders a saved trace, by default the last run's
//! (`<target>/calltime/last.trace`), without building anything.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::options;
use crate::cli::{GlobalArgs, ReportArgs};
use crate::error::UserError;
use crate::store::{self, Source, StoreOptions};
use crate::trace::Trace;
use crate::ui;
use crate::views::{self, overhead, Rendered, ViewFormat};
use crate::workspace::Workspace;

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<i32> {
    let mut view =
        options::view_options(&args.view, ui::color_stdout() && options::to_stdout(args.view.output.as_deref()))?;
    let cargo = options::cargo_options(global, &args.cargo);
    if args.import.is_none() && (args.store.label.is_some() || args.store.keep.is_some()) {
        return Err(UserError::new("--label and --keep go with --import FILE")
            .hint("`cargo calltime report --import run.trace --label ci` stores a trace recorded elsewhere")
            .into());
    }
    let store_opts = super::history::store_options(&args.store, Source::Import, None)?;
    // (A file format needs its default place even with `-o -`: the refusal to write to a terminal names it.)
    let needs_default_file = matches!(view.format, ViewFormat::Svg | ViewFormat::Html);
    // The workspace finds the last trace, the default file's place and the run store; `cargo metadata` is not free.
    let needs_workspace =
        args.trace.is_none() || needs_default_file || args.import.is_some() || view.format == ViewFormat::Html;
    let workspace = if needs_workspace { Some(Workspace::load(&cargo)) } else { None };
    let trace_path = match (args.import.as_ref().or(args.trace.as_ref()), &workspace) {
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
    let calltime_dir = match &workspace {
        Some(Ok(ws)) => Some(ws.calltime_dir()),
        Some(Err(e)) if args.import.is_some() => {
            return Err(UserError::new(format!(
                "cannot find the run store: {}",
                e.to_string().lines().next().unwrap_or_default()
            ))
            .hint("run `report --import` inside the workspace (or pass --manifest-path)")
            .into())
        }
        _ => None,
    };
    let extension = if view.format == ViewFormat::Html { "html" } else { "svg" };
    let default_file = match &calltime_dir {
        Some(dir) => dir.join(if extension == "html" { "report.html" } else { "flamegraph.svg" }),
        // No workspace (a trace copied elsewhere): the file goes beside the trace.
        None => trace_path.with_extension(extension),
    };
    // Loading, rendering and dropping a deep tree all recurse.
    views::with_big_stack(|| -> Result<i32> {
        let trace = Trace::load(&trace_path, args.functions.as_deref())?;
        for warning in &trace.warnings {
            ui::warn(warning);
        }
        if let (Some(dir), Some(_)) = (&calltime_dir, &args.import) {
            let ws_root = workspace.as_ref().and_then(|w| w.as_ref().ok()).map(|w| w.root.clone());
            let opts = StoreOptions { workspace_root: ws_root, ..store_opts.clone() };
            let recorded = store::record_run(dir, &trace, &trace_path, &opts)?;
            ui::status_always("Stored", &format!("run #{} from {}", recorded.id, trace_path.display()));
        }
        if let (Some(dir), ViewFormat::Html) = (&calltime_dir, view.format) {
            view.history = super::history::series_for(dir, &trace)?;
        }
        let rendered = views::render(&trace, &view)?;
        emit(&rendered, args.view.output.as_deref(), &default_file)?;
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
            let kind = if default_svg_path.extension().is_some_and(|x| x == "html") { "HTML" } else { "SVG" };
            return Err(UserError::new(format!("not writing {kind} to the terminal"))
                .hint(format!(
                    "pass `-o FILE.{}`, leave out `-o` to get {}, or pipe the output",
                    kind.to_lowercase(),
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

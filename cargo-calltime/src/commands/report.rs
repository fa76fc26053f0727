//! `cargo calltime report [TRACE]`: renders a saved trace, by default the last run's
//! (`<target>/calltime/last.trace`), without building anything.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::options;
use crate::cli::{GlobalArgs, ReportArgs};
use crate::error::UserError;
use crate::store::{self, Source, StoreOptions};
use crate::trace::Trace;
use crate::ui;
use crate::views::{self, overhead, ViewFormat};
use crate::workspace::Workspace;

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<i32> {
    let file_format = matches!(args.view.format, ViewFormat::Svg | ViewFormat::Html);
    super::check_open(args.view.open, file_format, args.view.output.as_deref())?;
    let extension = if args.view.format == ViewFormat::Html { "html" } else { "svg" };
    let file =
        super::destination(args.view.output.as_deref(), args.view.open, || super::temp_output("report", extension));
    let mut view = options::view_options(&args.view, ui::color_stdout() && file.is_none())?;
    let cargo = options::cargo_options(global, &args.cargo);
    if args.import.is_none() && (args.store.label.is_some() || args.store.keep.is_some()) {
        return Err(UserError::new("--label and --keep go with --import FILE")
            .hint("`cargo calltime report --import run.trace --label ci` stores a trace recorded elsewhere")
            .into());
    }
    let store_opts = super::history::store_options(&args.store, Source::Import, None)?;
    // The workspace finds the last trace and the run store; `cargo metadata` is not free.
    let needs_workspace = args.trace.is_none() || args.import.is_some() || view.format == ViewFormat::Html;
    let workspace = if needs_workspace { Some(Workspace::load(&cargo)) } else { None };
    let trace_path = match (args.import.as_ref().or(args.trace.as_ref()), &workspace) {
        (Some(path), _) => path.clone(),
        (None, Some(Ok(ws))) if args.follow => newest_trace(ws)?,
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
    if args.follow {
        view.format = ViewFormat::Aggregate;
        return follow(&trace_path, args, &view);
    }
    // Loading, rendering and dropping a deep tree all recurse.
    views::with_big_stack(|| -> Result<i32> {
        let trace = Trace::load(&trace_path, args.functions.as_deref())?;
        // Compensated once, here: the view and the note below see the same times.
        let trace = views::times::prepare(trace, view.raw_times);
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
        super::emit(&rendered.bytes, rendered.binary_like, file.as_deref(), args.view.open)?;
        if let Some(note) = &rendered.note {
            ui::note(note);
        }
        if let Some(note) = overhead::exclude_note(&trace) {
            ui::note(&note);
        }
        Ok(0)
    })
}

/// `--follow`: the whole-run aggregate of the trace as it is written, redrawn every second until Ctrl-C (or
/// `--follow-frames` redraws).
fn follow(trace_path: &Path, args: &ReportArgs, view: &views::ViewOptions) -> Result<i32> {
    use std::io::IsTerminal;
    let clear = if std::io::stdout().is_terminal() { "\x1b[H\x1b[2J" } else { "" };
    let mut frame = 0u64;
    loop {
        let text = match views::with_big_stack(|| -> Result<String> {
            let trace = Trace::load(trace_path, args.functions.as_deref())?;
            Ok(String::from_utf8_lossy(&views::render(&trace, view)?.bytes).into_owned())
        }) {
            Ok(text) => text,
            // The program may not have written its first record yet.
            Err(e) if !trace_path.exists() => format!("waiting for {} ({e:#})\n", trace_path.display()),
            Err(e) => return Err(e),
        };
        let footer = format!("following {} (every second; Ctrl-C to stop)", trace_path.display());
        super::write_stdout(format!("{clear}{text}\n{footer}\n").as_bytes())?;
        frame += 1;
        if args.follow_frames.is_some_and(|n| frame >= n) {
            return Ok(0);
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// The newest run's trace under `<target>/calltime/traces` (a program still running writes there).
fn newest_trace(ws: &Workspace) -> Result<PathBuf> {
    let dir = ws.calltime_dir().join("traces");
    let newest = std::fs::read_dir(&dir)
        .ok()
        .into_iter()
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .max();
    newest.ok_or_else(|| {
        UserError::new(format!("no trace of a run under {}", dir.display()))
            .hint("start the program with `cargo calltime --root PATH -- ARGS` first, or pass its trace file")
            .into()
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

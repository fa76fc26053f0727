//! `cargo calltime report [TRACE]`: renders a saved trace, by default the last run's
//! (`<target>/calltime/last.trace`), without building anything.

use std::path::PathBuf;

use anyhow::Result;

use super::options;
use crate::cli::{GlobalArgs, ReportArgs};
use crate::error::UserError;
use crate::trace::Trace;
use crate::ui;
use crate::views::{self, overhead, ViewFormat};
use crate::workspace::Workspace;

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<i32> {
    let svg = args.view.format == ViewFormat::Svg;
    super::check_open(args.view.open, svg, args.view.output.as_deref())?;
    let file = super::destination(args.view.output.as_deref(), args.view.open, || super::temp_output("report", "svg"));
    let view = options::view_options(&args.view, ui::color_stdout() && file.is_none())?;
    let cargo = options::cargo_options(global, &args.cargo);
    // The workspace is only needed to find the last trace; `cargo metadata` is not free.
    let trace_path = match &args.trace {
        Some(path) => path.clone(),
        None => match Workspace::load(&cargo) {
            Ok(ws) => last_trace(&ws)?,
            Err(e) => {
                let reason = e.to_string();
                return Err(UserError::new(format!(
                    "cannot find the last run's trace: {}",
                    reason.lines().next().unwrap_or_default()
                ))
                .hint("pass a trace file (`cargo calltime report path/to/run.trace`) or run this inside the workspace")
                .into());
            }
        },
    };
    // Loading, rendering and dropping a deep tree all recurse.
    views::with_big_stack(|| -> Result<i32> {
        let trace = Trace::load(&trace_path, args.functions.as_deref())?;
        for warning in &trace.warnings {
            ui::warn(warning);
        }
        let rendered = views::render(&trace, &view)?;
        super::emit(&rendered.bytes, rendered.binary_like, file.as_deref(), args.view.open)?;
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

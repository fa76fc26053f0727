//! The commands: the only code that reads the clap flags ([`crate::cli`]) and talks to the terminal
//! ([`crate::ui`]). Each command turns its flags into the stages' typed options once (validating every flag in
//! one place, with one message), calls the stages, and prints what they return: progress, warnings, results.
//! The stages take typed options and return values; `tests/tidy.rs` keeps them away from `cli` and `ui`.

mod build;
mod diff;
mod graph;
mod history;
mod instrument;
mod options;
mod report;
mod run;

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{Cli, Command};
use crate::plan::{Plan, PlanOptions};
use crate::ui;
use crate::units::plural;
use crate::views::overhead;
use crate::workspace::Workspace;

/// Runs the command the flags name; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    ui::set_quiet(cli.global.quiet);
    match &cli.command {
        None => run::run(&cli.global, &cli.run),
        Some(Command::Graph(args)) => graph::graph(&cli.global, args),
        Some(Command::Build(args)) => build::build(&cli.global, args),
        Some(Command::Report(args)) => report::report(&cli.global, args),
        Some(Command::Diff(args)) => diff::diff(&cli.global, args),
        Some(Command::History(args)) => history::history(&cli.global, args),
    }
}

/// Writes a command's result to stdout; a closed pipe (`| head`) is not an error worth reporting.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the output to stdout"),
    }
}

/// Writes a command's result to `-o FILE`.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| {
        anyhow::Error::new(
            crate::error::UserError::new(format!("cannot write {}: {e}", path.display()))
                .hint("check that the directory exists and is writable"),
        )
    })
}

/// Analyses and plans, printing the progress, figures and warnings the analysis returns. With `--exclude-fast`, the
/// functions earlier runs of this workspace found too fast to probe are left out.
fn plan(ws: &Workspace, options: &mut PlanOptions, exclude_fast: bool) -> Result<Plan> {
    if exclude_fast {
        let file = overhead::remembered_path(&ws.calltime_dir());
        let fast = overhead::remembered(&file);
        if fast.is_empty() {
            ui::warn(&format!(
                "--exclude-fast: no earlier run of this workspace found functions too fast to probe ({} is empty or \
                 missing); probing as usual",
                file.display()
            ));
        } else {
            let excluding =
                format!("{} functions earlier runs found too fast to probe ({})", fast.len(), file.display());
            ui::status("Excluding", &excluding);
        }
        options.exclusions.fast = Some(fast);
    }
    let analysis = crate::analysis::analyse(ws, &options.roots);
    let counts = analysis.counts;
    let figures = [
        plural(counts.files as u64, "file"),
        plural(counts.lines as u64, "line"),
        plural(counts.functions as u64, "function"),
    ];
    ui::status("Analysed", &figures.join(", "));
    for warning in &analysis.warnings {
        ui::warn(warning);
    }
    let printed = analysis.warnings.len();
    let plan = analysis.plan(ws, options)?;
    // The planning's own warnings (a --filter that leaves only the roots) follow the analysis's in the plan.
    for warning in plan.warnings.iter().skip(printed) {
        ui::warn(warning);
    }
    Ok(plan)
}

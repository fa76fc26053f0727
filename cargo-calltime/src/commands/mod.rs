//! The commands: the only code that reads the clap flags ([`crate::cli`]) and talks to the terminal
//! ([`crate::ui`]). Each command turns its flags into the stages' typed options once (validating every flag in
//! one place, with one message), calls the stages, and prints what they return: progress, warnings, results.
//! The stages take typed options and return values; `tests/tidy.rs` keeps them away from `cli` and `ui`.

mod build;
mod ctl;
mod diff;
mod graph;
mod history;
mod instrument;
mod options;
mod report;
mod run;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{Cli, Command};
use crate::error::UserError;
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
        Some(Command::Ctl(args)) => ctl::ctl(&cli.global, args),
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

/// Where a command's result goes: `-o FILE`, else stdout (`-o -` too), except that `--open` needs a file: then
/// `open_fallback`, a place of the command's choosing.
fn destination(output: Option<&Path>, open: bool, open_fallback: impl FnOnce() -> PathBuf) -> Option<PathBuf> {
    match output {
        Some(path) if path != Path::new("-") => Some(path.to_owned()),
        _ if open => Some(open_fallback()),
        _ => None,
    }
}

/// A temporary file for `--open` without `-o` (left in place: the browser reads it after we exit).
fn temp_output(what: &str, extension: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cargo-calltime-{}-{what}.{extension}", std::process::id()))
}

/// Writes a command's result to `file`, or to stdout when there is none (never an SVG or HTML report, a
/// `file_format`, to a terminal); with `open`,
/// opens the file in the browser. Every command's output goes through here, so `-o`, `-o -` and `--open` mean the
/// same everywhere.
fn emit(bytes: &[u8], file_format: bool, file: Option<&Path>, open: bool) -> Result<()> {
    let Some(path) = file else {
        use std::io::IsTerminal;
        if file_format && std::io::stdout().is_terminal() {
            return Err(UserError::new("not writing an SVG or HTML report to the terminal")
                .hint("pass `-o FILE`, `--open` to see it in the browser, or pipe the output")
                .into());
        }
        return write_stdout(bytes);
    };
    write_file(path, bytes)?;
    // The path is the result the user asked for, so it is printed even with `-q`.
    ui::status_always("Wrote", &path.display().to_string());
    if open {
        open_in_browser(path);
    }
    Ok(())
}

/// Writes a command's result to `-o FILE`, creating its directory.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| {
        anyhow::Error::new(
            UserError::new(format!("cannot write {}: {e}", path.display()))
                .hint("check that the directory exists and is writable"),
        )
    })
}

/// `--open`: the system's opener (`open` on macOS, `xdg-open` elsewhere). The file is already written, so a
/// missing opener is a warning, not an error.
fn open_in_browser(path: &Path) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    ui::status("Opening", &format!("{} with {opener}", path.display()));
    let status = std::process::Command::new(opener).arg(path).stdin(std::process::Stdio::null()).status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => ui::warn(&format!("{opener} {} failed ({status}); open the file yourself", path.display())),
        Err(e) => ui::warn(&format!("cannot run {opener} ({e}); open {} yourself", path.display())),
    }
}

/// `--open` shows an SVG or HTML report (`file_format`): refused up front (before any build) for other formats and
/// for `-o -`.
fn check_open(open: bool, file_format: bool, output: Option<&Path>) -> Result<()> {
    if !open {
        return Ok(());
    }
    if !file_format {
        return Err(UserError::new("--open opens an SVG or HTML report in the browser")
            .hint("add `--format svg` or `--format html`")
            .into());
    }
    if output == Some(Path::new("-")) {
        return Err(UserError::new("--open needs a file, not `-o -`")
            .hint("leave out `-o` (a temporary file is used) or pass `-o FILE.svg`")
            .into());
    }
    Ok(())
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

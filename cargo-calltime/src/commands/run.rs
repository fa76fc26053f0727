//! `cargo calltime` (the default command): analyse, build, run the program, keep the trace, render it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::instrument::{analyse_and_build, Built};
use super::options;
use crate::cli::{GlobalArgs, RunArgs};
use crate::error::UserError;
use crate::store::{Source, StoreOptions};
use crate::trace::Trace;
use crate::ui;
use crate::units::plural;
use crate::views::{self, overhead, ViewFormat};

pub fn run(global: &GlobalArgs, args: &RunArgs) -> Result<i32> {
    let record = options::record_options(&args.record)?;
    let store_opts = super::history::store_options(&args.store, Source::Run, None)?;
    // The report goes to stderr unless `-o` says otherwise; colour follows the stream it goes to.
    let to_stderr = args.view.output.is_none();
    let color = if to_stderr { ui::color_stderr() } else { ui::color_stdout() };
    let mut view = options::view_options(&args.view, color && options::to_stdout(args.view.output.as_deref()))?;
    let file_format = matches!(view.format, ViewFormat::Svg | ViewFormat::Html);
    super::check_open(args.view.open, file_format, args.view.output.as_deref())?;
    let built = analyse_and_build(global, &args.cargo, &args.target, &args.plan)?;
    let calltime_dir = built.ws.calltime_dir();
    let trace_path = crate::run::new_trace_path(&calltime_dir)?;
    let mut cmd = crate::run::program_command(
        &built.ws,
        &built.target,
        &built.executable,
        &args.program_args,
        &trace_path,
        &record,
    );
    ui::status("Running", &program_line(&built.executable, &args.program_args, &built.ws.root));
    let code = crate::run::run_child(&mut cmd).with_context(|| format!("cannot run {}", built.executable.display()))?;

    let table = PathBuf::from(&built.info.table);
    if !trace_path.exists() {
        return root_never_called(&built, code, 0);
    }
    let trace = Trace::load(&trace_path, Some(&table))?;
    crate::run::keep_trace(&trace_path, &table, &calltime_dir.join("last.trace"))?;
    if let Some(save) = &args.save {
        crate::run::keep_trace(&trace_path, &table, save)?;
    }
    for warning in &trace.warnings {
        ui::warn(warning);
    }
    if trace.invocations.is_empty() {
        return root_never_called(&built, code, trace.stats.seen);
    }
    let store_opts = StoreOptions { workspace_root: Some(built.ws.root.clone()), ..store_opts };
    super::history::record(&calltime_dir, &trace, &trace_path, &store_opts);
    if view.format == ViewFormat::Html {
        view.history = super::history::series_for(&calltime_dir, &trace)?;
    }
    let count = trace.invocations.len() as u64;
    ui::status("Rendering", &format!("{} of {}", plural(count, "invocation"), built.plan.root_args.join(", ")));
    let rendered = views::with_big_stack(|| views::render(&trace, &view))?;
    if args.view.output.is_some() || rendered.binary_like {
        // Without `-o`, an SVG or HTML report goes to a file of its own: stdout is the program's, stderr is no
        // place for it.
        let file = match args.view.output.as_deref() {
            None => Some(calltime_dir.join(if view.format == ViewFormat::Html { "last.html" } else { "last.svg" })),
            output => super::destination(output, false, PathBuf::new),
        };
        super::emit(&rendered.bytes, rendered.binary_like, file.as_deref(), args.view.open)?;
    } else {
        // The program's stdout must stay byte-identical to an uninstrumented run: the report goes to stderr.
        write_stderr(&rendered.bytes)?;
    }
    if let Some(note) = overhead::exclude_note(&trace) {
        ui::note(&note);
        let file = overhead::remembered_path(&calltime_dir);
        if let Err(e) = overhead::remember(&file, &overhead::fast_functions(&trace)) {
            ui::warn(&format!("{e:#}"));
        }
    }
    Ok(code)
}

fn write_stderr(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    match err.write_all(bytes).and_then(|()| err.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the report to stderr"),
    }
}

/// The root never completed: an error naming the plan size, with the program's failing exit code if it had one.
fn root_never_called(built: &Built, code: i32, started: u64) -> Result<i32> {
    let roots = built.plan.root_args.join("`, `");
    let exited = if code != 0 { format!("; the program exited with code {code}") } else { String::new() };
    let functions = built.info.functions;
    let err = if started > 0 {
        UserError::new(format!(
            "root `{roots}` was entered {} but never returned ({functions} functions instrumented){exited}",
            plural(started, "time")
        ))
        .hint("the program ended inside it (process::exit, abort, a signal); pick a root that returns")
    } else {
        UserError::new(format!("root `{roots}` was never called ({functions} functions instrumented){exited}")).hint(
            "check that the program reaches it with these arguments (after `--`), or pick another --root; \
             `cargo calltime graph --root ...` shows the plan",
        )
    };
    ui::error(&err.into());
    Ok(if code != 0 { code } else { 1 })
}

/// `program args` for the progress line, relative to the workspace when possible.
fn program_line(exe: &Path, args: &[String], root: &Path) -> String {
    let shown = exe.strip_prefix(root).unwrap_or(exe);
    let mut line = shown.display().to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    line
}

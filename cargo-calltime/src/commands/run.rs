//! `cargo calltime` (the default command): analyse, build, run the program, keep the trace, render it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::instrument::{analyse_and_build, Built};
use super::options;
use crate::cli::{GlobalArgs, RunArgs};
use crate::error::UserError;
use crate::run::ChildExit;
use crate::store::{Source, StoreOptions};
use crate::trace::{Stats, Trace};
use crate::ui;
use crate::units::plural;
use crate::views::{self, overhead, ViewFormat};

pub fn run(global: &GlobalArgs, args: &RunArgs) -> Result<i32> {
    let record = options::record_options(&args.record, args.view.slower_than.as_deref())?;
    let store_opts = super::history::store_options(&args.store, Source::Run, None)?;
    // The report goes to stderr unless `-o` says otherwise; colour follows the stream it goes to.
    let to_stderr = args.view.output.is_none();
    let color = if to_stderr { ui::color_stderr() } else { ui::color_stdout() };
    let mut view = options::view_options(&args.view, color && options::to_stdout(args.view.output.as_deref()))?;
    let file_format = matches!(view.format, ViewFormat::Svg | ViewFormat::Html);
    super::check_open(args.view.open, file_format, args.view.output.as_deref())?;
    // Before the build and the run, which can take minutes: a mistyped directory fails at once.
    super::check_output_dir("-o", args.view.output.as_deref())?;
    super::check_output_dir("--save", args.save.as_deref())?;
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
    let exit = crate::run::run_child(&mut cmd).with_context(|| format!("cannot run {}", built.executable.display()))?;
    let code = exit.code;

    let table = PathBuf::from(&built.info.table);
    if !trace_path.exists() {
        return nothing_recorded(&built, &exit, None);
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
        return nothing_recorded(&built, &exit, Some(&trace));
    }
    if let Some(signal) = exit.signal {
        ui::warn(&format!(
            "the program was {}; invocations of the root still running then are not in the report",
            killed_by(signal, &exit)
        ));
    }
    // Compensated once (recursively: on the big stack): the stored run, the view and the note see the same times,
    // as `report --import` stores them.
    let trace = views::with_big_stack(|| views::times::prepare(trace, view.raw_times));
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
    if let Some(note) = &rendered.note {
        ui::note(note);
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

/// No invocation was recorded: an error saying why as far as the exit status and the runtime's counters tell (never
/// called, killed by a signal, dropped by a limit, sampled out, never returned), with the program's failing exit
/// code if it had one.
fn nothing_recorded(built: &Built, exit: &ChildExit, trace: Option<&Trace>) -> Result<i32> {
    let roots = built.plan.root_args.join("`, `");
    let functions = built.info.functions;
    let exited = match exit.signal {
        Some(signal) => format!("; the program was {}", killed_by(signal, exit)),
        None if exit.code != 0 => format!("; the program exited with code {}", exit.code),
        None => String::new(),
    };
    // The runtime writes its counters at each flush and at exit: none means the process ended abruptly.
    let stats = trace.filter(|t| t.stats_records > 0).map(|t| t.stats);
    let err = match stats {
        None if exit.signal.is_some() || trace.is_some() => UserError::new(format!(
            "no invocation of root `{roots}` was written ({functions} functions instrumented){exited}"
        ))
        .hint(
            "a root still running when the program ends is not recorded, and invocations that returned just \
             before may not have reached the trace yet; pick a root that returns while the program runs (one \
             called from inside its loop)",
        ),
        Some(stats) if stats.seen > 0 && stats.dropped > 0 => dropped_error(&roots, stats, trace, &exited),
        Some(stats) if stats.left_out_fast > 0 => {
            let threshold = trace.and_then(|t| t.settings.get("slower_than_ns").copied()).unwrap_or(0);
            UserError::new(format!(
                "root `{roots}` was entered {} and no invocation was slower than {}{exited}",
                plural(stats.seen, "time"),
                crate::units::format_ns(threshold)
            ))
            .hint("pass a lower --slower-than, or leave it out to see how long the invocations take")
        }
        Some(stats) if stats.seen > 0 && stats.sampled_out == stats.seen => UserError::new(format!(
            "root `{roots}` was entered {} and every invocation was sampled out by --sample{exited}",
            plural(stats.seen, "time")
        ))
        .hint("--sample N records 1 invocation in N: lower it, or give the program more work"),
        Some(stats) if stats.seen > 0 => UserError::new(format!(
            "root `{roots}` was entered {} but never returned ({functions} functions instrumented){exited}",
            plural(stats.seen, "time")
        ))
        .hint("the program ended inside it (process::exit, abort, a signal); pick a root that returns"),
        _ => UserError::new(format!("root `{roots}` was never called ({functions} functions instrumented){exited}"))
            .hint(
                "check that the program reaches it with these arguments (after `--`), or pick another --root; \
                 `cargo calltime graph --root ...` shows the plan",
            ),
    };
    ui::error(&err.into());
    Ok(if exit.code != 0 { exit.code } else { 1 })
}

/// Every invocation was dropped: by `--max-invocations` when the count reached it, else the writer fell behind.
fn dropped_error(roots: &str, stats: Stats, trace: Option<&Trace>, exited: &str) -> UserError {
    let limit = trace.and_then(|t| t.settings.get("max_invocations").copied());
    let entered = plural(stats.seen, "time");
    match limit {
        Some(limit) if stats.kept + stats.dropped > limit => UserError::new(format!(
            "root `{roots}` was entered {entered} and all {} invocations were dropped by --max-invocations {limit}{exited}",
            stats.dropped
        ))
        .hint("--max-invocations N records the first N invocations: raise it (the default is 100000)"),
        _ => UserError::new(format!(
            "root `{roots}` was entered {entered} but all {} invocations were dropped: the trace writer fell behind{exited}",
            stats.dropped
        ))
        .hint("a longer writer queue keeps more (CALLTIME_QUEUE, default 1024), or --sample N records fewer"),
    }
}

/// `killed by signal 15 (SIGTERM, passed on from cargo calltime)`.
fn killed_by(signal: i32, exit: &ChildExit) -> String {
    let mut about: Vec<&str> = crate::run::signal_name(signal).into_iter().collect();
    if exit.forwarded == Some(signal) {
        about.push("passed on from cargo calltime");
    }
    if about.is_empty() {
        format!("killed by signal {signal}")
    } else {
        format!("killed by signal {signal} ({})", about.join(", "))
    }
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

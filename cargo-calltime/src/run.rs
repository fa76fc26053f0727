//! Stages 6-7: analyse, rewrite the shadow copy, build it (see [`crate::build`]), run it, keep the trace, render.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::analysis::render;
use crate::build::{self, Target, TargetKind};
use crate::cli::{self, BuildArgs, CargoArgs, GraphArgs, PlanArgs, RunArgs, TargetArgs};
use crate::error::UserError;
use crate::plan::{self, Plan, PlanOptions};
use crate::rewrite::PlanInfo;
use crate::shadow;
use crate::trace::{self, Trace};
use crate::ui;
use crate::workspace::Workspace;

/// Everything up to a built instrumented executable.
struct Built {
    ws: Workspace,
    plan: Plan,
    info: PlanInfo,
    target: Target,
    executable: PathBuf,
}

/// `cargo calltime` (the default command).
pub fn run_command(args: &RunArgs) -> Result<i32> {
    let record_env = args.record.env()?;
    let built = analyse_and_build(&args.cargo, &args.target, &args.plan)?;
    let calltime_dir = built.ws.calltime_dir();
    let traces = calltime_dir.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("cannot create {}", traces.display()))?;
    prune_traces(&traces, 50);
    let trace_path = traces.join(format!("{}-{}.trace", timestamp(), std::process::id()));

    let mut cmd = Command::new(&built.executable);
    if built.target.kind == TargetKind::Bench {
        // What `cargo bench` passes, so a harness runs benchmarks rather than tests.
        cmd.arg("--bench");
    }
    cmd.args(&args.program_args);
    cmd.env("CALLTIME_OUT", &trace_path);
    cmd.envs(record_env);
    set_cargo_run_env(&mut cmd, &built);
    ui::status("Running", &program_line(&built.executable, &args.program_args, &built.ws.root));
    let code = run_child(&mut cmd).with_context(|| format!("cannot run {}", built.executable.display()))?;

    let table = PathBuf::from(&built.info.table);
    if !trace_path.exists() {
        return root_never_called(&built, code, 0);
    }
    let trace = Trace::load(&trace_path, Some(&table))?;
    keep_trace(&trace_path, &table, &calltime_dir.join("last.trace"))?;
    if let Some(save) = &args.save {
        keep_trace(&trace_path, &table, save)?;
    }
    for warning in &trace.warnings {
        ui::warn(warning);
    }
    if trace.invocations.is_empty() {
        return root_never_called(&built, code, trace.stats.seen);
    }
    ui::status(
        "Rendering",
        &format!(
            "{} invocation{} of {}",
            trace.invocations.len(),
            if trace.invocations.len() == 1 { "" } else { "s" },
            built.plan.root_args.join(", ")
        ),
    );
    render(&trace, args, &calltime_dir)?;
    if let Some(note) = crate::views::overhead::exclude_note(&trace) {
        ui::note(&note);
        let file = crate::views::overhead::remembered_path(&calltime_dir);
        if let Err(e) = crate::views::overhead::remember(&file, &crate::views::overhead::fast_functions(&trace)) {
            ui::warn(&format!("{e:#}"));
        }
    }
    Ok(code)
}

/// `cargo calltime build`.
pub fn build_command(args: &BuildArgs) -> Result<i32> {
    let built = analyse_and_build(&args.cargo, &args.target, &args.plan)?;
    ui::status(
        "Built",
        &format!(
            "{} ({} functions instrumented); running it records a trace to $CALLTIME_OUT, or calltime-<pid>.trace in \
             its working directory; `cargo calltime report TRACE --functions {}` renders it",
            built.target.name, built.info.functions, built.info.table
        ),
    );
    println!("{}", built.executable.display());
    Ok(0)
}

fn analyse_and_build(cargo: &CargoArgs, target_args: &TargetArgs, plan_args: &PlanArgs) -> Result<Built> {
    ui::set_quiet(cargo.quiet);
    let ws = Workspace::load(cargo)?;
    let options = plan_options(&ws, plan_args)?;
    let target = build::select_target(&ws, target_args, cargo)?;

    ui::status("Analysing", &format!("{} from {}", ws.root.display(), plan_args.root.join(", ")));
    let plan = plan_showing_progress(&ws, &options)?;
    let functions = plan.instrumented().count() as u32;
    if functions == 0 {
        bail!(
            "no function gets a probe ({} reached from {})\n  hint: check --filter; `cargo calltime graph` shows the plan",
            plan.functions.len(),
            plan.root_args.join(", ")
        );
    }
    let calltime_dir = ws.calltime_dir();
    let id = shadow::plan_id(&plan);
    let plans = calltime_dir.join("plans");
    std::fs::create_dir_all(&plans).with_context(|| format!("cannot create {}", plans.display()))?;
    let table_path = plans.join(format!("{id}.functions.json"));
    plan.function_table(&id).save(&table_path)?;
    let info = PlanInfo { id, table: table_path.display().to_string(), functions };

    // Two runs at once on one workspace would write the same copy: the second waits for the first's build.
    let _lock = CopyLock::acquire(&calltime_dir)?;
    let shadow_dir = calltime_dir.join("shadow");
    let runtime = shadow::runtime_for(&ws, &calltime_dir, &shadow_dir)?;
    let stats = shadow::prepare(&ws, &shadow_dir, Some((&plan, &info)), &runtime)?;
    ui::status(
        "Copying",
        &format!(
            "{} files to {} ({} changed, {} removed; {} functions probed in {} files)",
            stats.files,
            shadow_dir.display(),
            stats.written,
            stats.removed,
            functions,
            stats.rewritten
        ),
    );

    ui::status("Building", &format!("{} `{}` with probes", &target.kind.flag()[2..], target.name));
    let build_dir = calltime_dir.join("build");
    let out = build::cargo_build(&shadow_dir, &ws.root, &build_dir, cargo, target_args, Some(&target))?;
    if !out.success {
        return Err(explain_build_failure(&ws, &plan, cargo, target_args, &target, &runtime, out));
    }
    let Some(executable) = out.executable else {
        bail!(
            "cargo built {} `{}` but named no executable for it\n  hint: run with -v to see cargo's output",
            &target.kind.flag()[2..],
            target.name
        );
    };
    Ok(Built { ws, plan, info, target, executable })
}

/// An exclusive lock on `<calltime>/lock` (flock on unix; released when dropped or when the process ends).
struct CopyLock {
    _file: std::fs::File,
}

impl CopyLock {
    fn acquire(calltime_dir: &Path) -> Result<CopyLock> {
        std::fs::create_dir_all(calltime_dir).with_context(|| format!("cannot create {}", calltime_dir.display()))?;
        let path = calltime_dir.join("lock");
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            extern "C" {
                fn flock(fd: i32, operation: i32) -> i32;
            }
            const LOCK_EX: i32 = 2;
            const LOCK_NB: i32 = 4;
            // SAFETY: flock on a descriptor this function owns; no memory is shared.
            if unsafe { flock(file.as_raw_fd(), LOCK_EX | LOCK_NB) } != 0 {
                ui::status("Blocking", "waiting for another cargo calltime on this workspace to finish building");
                // SAFETY: as above.
                if unsafe { flock(file.as_raw_fd(), LOCK_EX) } != 0 {
                    bail!("cannot lock {}: {}", path.display(), std::io::Error::last_os_error());
                }
            }
        }
        Ok(CopyLock { _file: file })
    }
}

/// Errors the analysis would also report, checked before the slow steps.
/// clap's plan flags as validated options (each flag checked here, once); `--exclude-fast` reads the functions
/// earlier runs of this workspace remembered.
pub fn plan_options(ws: &Workspace, args: &PlanArgs) -> Result<PlanOptions> {
    let mut options = PlanOptions::new(args.root.clone(), args.depth)?;
    options.filter = args.filter.as_deref().map(|re| plan::path_regex("--filter", re)).transpose()?;
    options.exclusions.pattern = args.exclude.as_deref().map(|re| plan::path_regex("--exclude", re)).transpose()?;
    if args.exclude_fast {
        let file = crate::views::overhead::remembered_path(&ws.calltime_dir());
        options.exclusions.fast = Some(crate::views::overhead::remembered(&file).into_iter().collect());
    }
    options.probe_trivial = args.probe_trivial;
    options.all_functions = args.all_functions;
    Ok(options)
}

/// Analyses and plans, printing the progress, figures and warnings the analysis returns.
pub fn plan_showing_progress(ws: &Workspace, options: &PlanOptions) -> Result<Plan> {
    if let Some(fast) = &options.exclusions.fast {
        let file = crate::views::overhead::remembered_path(&ws.calltime_dir());
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
    }
    let analysis = crate::analysis::analyse(ws, &options.roots);
    let counts = analysis.counts;
    let plural = crate::analysis::render::plural;
    let figures = [plural(counts.files, "file"), plural(counts.lines, "line"), plural(counts.functions, "function")];
    ui::status("Analysed", &figures.join(", "));
    for warning in &analysis.warnings {
        ui::warn(warning);
    }
    analysis.plan(ws, options)
}

/// `cargo calltime graph`.
pub fn graph_command(args: &GraphArgs) -> Result<i32> {
    ui::set_quiet(args.cargo.quiet);
    let started = std::time::Instant::now();
    // The graph needs no dependency resolution: `--no-deps` keeps `cargo metadata` off the registry and fast.
    let ws = Workspace::load_members_only(&args.cargo)?;
    tracing::info!("cargo metadata in {:?}", started.elapsed());
    let options = plan_options(&ws, &args.plan)?;
    let plan = plan_showing_progress(&ws, &options)?;
    let format = match args.format {
        cli::GraphFormat::Text => render::GraphFormat::Text,
        cli::GraphFormat::Json => render::GraphFormat::Json,
        cli::GraphFormat::Dot => render::GraphFormat::Dot,
    };
    let out = render::render(&plan, &ws.root, format)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, out).map_err(|err| {
                UserError::new(format!("cannot write {}: {err}", path.display()))
                    .hint("check that the directory exists and is writable")
            })?;
            ui::status("Wrote", &path.display().to_string());
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = stdout.write_all(out.as_bytes());
        }
    }
    tracing::info!("graph command done in {:?}", started.elapsed());
    Ok(0)
}

/// A failed instrumented build: builds the unmodified copy to tell the user whether the probes or their code broke
/// it, and which function's probe.
fn explain_build_failure(
    ws: &Workspace,
    plan: &Plan,
    cargo: &CargoArgs,
    target_args: &TargetArgs,
    target: &Target,
    runtime: &Path,
    failed: build::BuildOutput,
) -> anyhow::Error {
    let calltime_dir = ws.calltime_dir();
    let plain_dir = calltime_dir.join("shadow-plain");
    if cargo.verbose == 0 {
        eprint!("{}", failed.stderr);
    }
    ui::status("Checking", "whether the workspace builds without probes");
    let plain = shadow::prepare(ws, &plain_dir, None, runtime).and_then(|_| {
        build::cargo_build(&plain_dir, &ws.root, &calltime_dir.join("build-plain"), cargo, target_args, Some(target))
    });
    match plain {
        Ok(plain) if !plain.success && reads_outside_workspace(&ws.root, failed.first_error.as_ref()) => {
            let err = failed.first_error.as_ref().expect("checked by reads_outside_workspace");
            anyhow::anyhow!(
                "the copy of the workspace cannot be built: {}:{}: {}\n  hint: the code reads a file outside the \
                 workspace by a relative path (include_str!, include_bytes!, #[path]); cargo calltime builds a copy \
                 of the workspace only, so such paths do not resolve there (a known limit)",
                err.file.display(),
                err.line,
                err.message
            )
        }
        Ok(plain) if !plain.success => anyhow::anyhow!(
            "the workspace does not build, with or without probes{}\n  hint: fix the errors above (a plain `cargo build` \
             shows them too), then run cargo calltime again",
            failed.first_error.as_ref().map(|e| format!(" ({}:{}: {})", e.file.display(), e.line, e.message)).unwrap_or_default()
        ),
        Ok(_) => {
            let culprit = failed
                .first_error
                .as_ref()
                .and_then(|e| build::function_at(plan, &ws.root, &e.file, e.line).map(|f| (e, f)));
            match culprit {
                Some((err, function)) => anyhow::anyhow!(
                    "the probe inserted into `{function}` broke the build ({}:{}: {}); the workspace builds without \
                     probes\n  hint: leave `{function}` out with a --filter that does not match it, and please report \
                     this cargo-calltime bug",
                    err.file.display(),
                    err.line,
                    err.message
                ),
                None => anyhow::anyhow!(
                    "the instrumented build failed but the workspace builds without probes\n  hint: this is a \
                     cargo-calltime bug; run with -v and report it, or narrow --filter/--depth to avoid the failing \
                     function"
                ),
            }
        }
        Err(err) => anyhow::anyhow!(
            "the instrumented build failed (and building the unmodified copy to find out why failed too: {err:#})\n  \
             hint: run with -v to see cargo's output"
        ),
    }
}

/// Whether a build error is a file read (`couldn't read `path``, a missing module file) through a relative path that
/// leaves the workspace: it builds in place but not in the copy.
fn reads_outside_workspace(root: &Path, error: Option<&build::FirstError>) -> bool {
    let Some(error) = error else { return false };
    if !(error.message.starts_with("couldn't read") || error.message.starts_with("file not found for module")) {
        return false;
    }
    let Some(quoted) = error.message.split('`').nth(1) else { return false };
    let path = Path::new(quoted);
    let base = if path.is_absolute() { PathBuf::new() } else { root.to_owned() };
    !shadow::normalize(&base.join(path)).starts_with(shadow::normalize(root))
}

/// The environment `cargo run` gives a program, pointed at the user's package rather than the copy.
fn set_cargo_run_env(cmd: &mut Command, built: &Built) {
    let package =
        built.ws.metadata.packages.iter().find(|p| format!("{}@{}", p.name, p.version) == built.target.package_spec);
    cmd.env("CARGO_MANIFEST_DIR", &built.target.package_dir);
    if let Some(p) = package {
        cmd.env("CARGO_PKG_NAME", p.name.as_str()).env("CARGO_PKG_VERSION", p.version.to_string());
    }
    if let Ok(cargo) = std::env::var("CARGO") {
        cmd.env("CARGO", cargo);
    }
    if let Ok(cwd) = std::env::current_dir() {
        for (name, value) in config_env(&cwd) {
            cmd.env(name, value);
        }
    }
    // Tests and benches run from their package's directory, as under `cargo test`.
    if matches!(built.target.kind, TargetKind::Test | TargetKind::Bench) {
        cmd.current_dir(&built.target.package_dir);
    }
    // Dynamic libraries built alongside (dylib/cdylib dependencies), as cargo run does.
    if let Some(deps) = built.executable.parent() {
        let var = if cfg!(target_os = "macos") {
            "DYLD_FALLBACK_LIBRARY_PATH"
        } else if cfg!(windows) {
            "PATH"
        } else {
            "LD_LIBRARY_PATH"
        };
        let mut paths = vec![deps.join("deps"), deps.to_owned()];
        if let Some(existing) = std::env::var_os(var) {
            paths.extend(std::env::split_paths(&existing));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            cmd.env(var, joined);
        }
    }
}

/// The `[env]` variables of the cargo config files that apply in `cwd`, which `cargo run` sets for the program:
/// deeper config files win over outer ones and `$CARGO_HOME/config.toml`; a variable already in the environment is
/// kept unless the entry says `force = true`; `relative = true` values are relative to the config's directory.
fn config_env(cwd: &Path) -> Vec<(String, std::ffi::OsString)> {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        for name in ["config.toml", "config"] {
            let file = dir.join(".cargo").join(name);
            if file.is_file() {
                files.push(file);
                break;
            }
        }
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(home) = cargo_home {
        let file = home.join("config.toml");
        if file.is_file() && !files.contains(&file) {
            files.push(file);
        }
    }
    let mut chosen: std::collections::BTreeMap<String, (std::ffi::OsString, bool)> = Default::default();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else { continue };
        let Some(env) = doc.get("env").and_then(|e| e.as_table_like()) else { continue };
        // The directory holding `.cargo/`.
        let base = file.parent().and_then(Path::parent).unwrap_or(Path::new("."));
        for (name, item) in env.iter() {
            if chosen.contains_key(name) {
                continue;
            }
            let (value, force, relative) = if let Some(v) = item.as_str() {
                (v.to_owned(), false, false)
            } else if let Some(t) = item.as_table_like() {
                let Some(v) = t.get("value").and_then(|v| v.as_str()) else { continue };
                let flag = |k: &str| t.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
                (v.to_owned(), flag("force"), flag("relative"))
            } else {
                continue;
            };
            let value = if relative { base.join(value).into_os_string() } else { value.into() };
            chosen.insert(name.to_owned(), (value, force));
        }
    }
    chosen
        .into_iter()
        .filter(|(name, (_, force))| *force || std::env::var_os(name).is_none())
        .map(|(name, (value, _))| (name, value))
        .collect()
}

/// Runs the program with inherited stdio and returns its exit code (128+signal when a signal killed it, as shells
/// report it). Ctrl-C reaches the program; the tool ignores it meanwhile so it can still render what was recorded.
fn run_child(cmd: &mut Command) -> std::io::Result<i32> {
    let mut child = cmd.spawn()?;
    let _ignore = IgnoreInterrupt::new();
    let status = child.wait()?;
    if let Some(code) = status.code() {
        return Ok(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Ok(128 + signal);
        }
    }
    Ok(1)
}

/// Ignores SIGINT while alive (unix); restores the default on drop.
struct IgnoreInterrupt;

#[cfg(unix)]
mod sigint {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGINT: i32 = 2;
    const SIG_DFL: usize = 0;
    const SIG_IGN: usize = 1;
    pub fn ignore(yes: bool) {
        // SAFETY: `signal` with SIG_IGN/SIG_DFL installs no Rust code as a handler.
        unsafe {
            signal(SIGINT, if yes { SIG_IGN } else { SIG_DFL });
        }
    }
}

impl IgnoreInterrupt {
    fn new() -> IgnoreInterrupt {
        #[cfg(unix)]
        sigint::ignore(true);
        IgnoreInterrupt
    }
}

impl Drop for IgnoreInterrupt {
    fn drop(&mut self) {
        #[cfg(unix)]
        sigint::ignore(false);
    }
}

/// The root never completed: an error naming the plan size, with the program's failing exit code if it had one.
fn root_never_called(built: &Built, code: i32, started: u64) -> Result<i32> {
    let roots = built.plan.root_args.join("`, `");
    let exited = if code != 0 { format!("; the program exited with code {code}") } else { String::new() };
    let err = if started > 0 {
        anyhow::anyhow!(
            "root `{roots}` was entered {started} time{} but never returned ({} functions instrumented){exited}\n  \
             hint: the program ended inside it (process::exit, abort, a signal); pick a root that returns",
            if started == 1 { "" } else { "s" },
            built.info.functions
        )
    } else {
        anyhow::anyhow!(
            "root `{roots}` was never called ({} functions instrumented){exited}\n  hint: check that the program \
             reaches it with these arguments (after `--`), or pick another --root; `cargo calltime graph --root ...` \
             shows the plan",
            built.info.functions
        )
    };
    ui::error(&err);
    Ok(if code != 0 { code } else { 1 })
}

/// Keeps the `keep - 1` newest traces of earlier runs (their names sort by time), so the directory does not grow
/// without bound; `last.trace` and `--save` copies are elsewhere.
fn prune_traces(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut traces: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "trace")).collect();
    traces.sort();
    let excess = traces.len().saturating_sub(keep.saturating_sub(1));
    for old in &traces[..excess] {
        let _ = std::fs::remove_file(old);
    }
}

/// Copies a trace and its function table to `dest` and `dest.functions.json`.
fn keep_trace(trace_path: &Path, table: &Path, dest: &Path) -> Result<()> {
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::copy(trace_path, dest).with_context(|| format!("cannot copy the trace to {}", dest.display()))?;
    let dest_table = trace::functions_path_for(dest);
    std::fs::copy(table, &dest_table)
        .with_context(|| format!("cannot copy the function table to {}", dest_table.display()))?;
    Ok(())
}

/// Renders the report. The program's stdout must stay byte-identical to an uninstrumented run, so the report goes
/// to stderr unless `-o FILE` is given (`-o -` means stdout).
fn render(trace: &Trace, args: &RunArgs, calltime_dir: &Path) -> Result<()> {
    let default_svg = calltime_dir.join("last.svg");
    if args.view.output.is_some() {
        return crate::views::emit(trace, &args.view, &default_svg);
    }
    let mut opts = crate::views::ViewOptions::from_args(&args.view)?;
    opts.color = opts.format == crate::cli::ViewFormat::Text
        && !matches!(anstream::AutoStream::choice(&std::io::stderr()), anstream::ColorChoice::Never);
    let rendered = crate::views::render(trace, &opts)?;
    if rendered.binary_like {
        return crate::views::emit(trace, &args.view, &default_svg);
    }
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    match err.write_all(&rendered.bytes).and_then(|()| err.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the report to stderr"),
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

/// UTC `YYYYMMDDTHHMMSS` for trace file names (sortable by time).
fn timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}

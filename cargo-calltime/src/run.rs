//! Stage 7: running the instrumented program as `cargo run` would, with the runtime's settings, and keeping the
//! trace it writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::cargo::{Target, TargetKind};
use crate::trace;
use crate::workspace::Workspace;

/// What the runtime keeps while the program runs; unset fields leave the runtime's defaults
/// (docs/trace-format.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordOptions {
    pub node_cap: Option<u64>,
    pub fold_after: Option<u64>,
    /// At least 1.
    pub time_sample: Option<u64>,
    pub min_node_ns: Option<u64>,
    /// At least 1.
    pub sample: Option<u64>,
    pub max_invocations: Option<u64>,
    /// Probes never retire (`--exact`): every call recorded.
    pub exact: bool,
    /// The frame-depth limit; at least 1.
    pub max_depth: Option<u64>,
    /// Keep only invocations slower than this (`--slower-than` of a run).
    pub slower_than_ns: Option<u64>,
    /// Keep the K slowest invocations (`--keep-slowest`); at least 1.
    pub keep_slowest: Option<u64>,
    /// Keep a uniform sample of N invocations over the run (`--keep-sample`); at least 1.
    pub keep_sample: Option<u64>,
    /// Recording starts switched off (`--start-off`; `ctl on` switches it on).
    pub start_off: bool,
    /// Bytes after which a trace file continues in a new segment (`--rotate-size`; 0 never).
    pub rotate_bytes: Option<u64>,
    /// Bytes of trees written per hour at most (`--max-size-per-hour`; 0 no cap).
    pub max_bytes_per_hour: Option<u64>,
}

impl RecordOptions {
    /// The runtime's CALLTIME_* environment variables for the options that are set.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        [
            ("CALLTIME_NODE_CAP", self.node_cap),
            ("CALLTIME_FOLD_AFTER", self.fold_after),
            ("CALLTIME_TIME_SAMPLE", self.time_sample),
            ("CALLTIME_MIN_NS", self.min_node_ns),
            ("CALLTIME_SAMPLE", self.sample),
            ("CALLTIME_MAX_INVOCATIONS", self.max_invocations),
            ("CALLTIME_EXACT", self.exact.then_some(1)),
            ("CALLTIME_MAX_DEPTH", self.max_depth),
            ("CALLTIME_SLOWER_THAN_NS", self.slower_than_ns),
            ("CALLTIME_KEEP_SLOWEST", self.keep_slowest),
            ("CALLTIME_KEEP_SAMPLE", self.keep_sample),
            ("CALLTIME_START_OFF", self.start_off.then_some(1)),
            ("CALLTIME_ROTATE_BYTES", self.rotate_bytes),
            ("CALLTIME_MAX_BYTES_PER_HOUR", self.max_bytes_per_hour),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v.to_string())))
        .collect()
    }
}

/// The instrumented program, ready to run as `cargo run` would run it, writing its trace to `trace_path`.
pub fn program_command(
    ws: &Workspace,
    target: &Target,
    executable: &Path,
    program_args: &[String],
    trace_path: &Path,
    record: &RecordOptions,
) -> Command {
    let mut cmd = Command::new(executable);
    if target.kind == TargetKind::Bench {
        // What `cargo bench` passes, so a harness runs benchmarks rather than tests.
        cmd.arg("--bench");
    }
    cmd.args(program_args);
    cmd.env("CALLTIME_OUT", trace_path);
    // `cargo calltime ctl` finds the program's control files there.
    cmd.env("CALLTIME_CONTROL_DIR", crate::control::control_dir(&ws.calltime_dir()));
    cmd.envs(record.env());
    set_cargo_run_env(&mut cmd, ws, target, executable);
    cmd
}

/// A fresh trace path under `<calltime>/traces`, named by time so they sort; old traces are pruned.
pub fn new_trace_path(calltime_dir: &Path) -> Result<PathBuf> {
    let traces = calltime_dir.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("cannot create {}", traces.display()))?;
    prune_traces(&traces, 50);
    Ok(traces.join(format!("{}-{}.trace", timestamp(), std::process::id())))
}

/// The environment `cargo run` gives a program, pointed at the user's package rather than the copy.
fn set_cargo_run_env(cmd: &mut Command, ws: &Workspace, target: &Target, executable: &Path) {
    let package = ws.metadata.packages.iter().find(|p| format!("{}@{}", p.name, p.version) == target.package_spec);
    cmd.env("CARGO_MANIFEST_DIR", &target.package_dir);
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
    if matches!(target.kind, TargetKind::Test | TargetKind::Bench | TargetKind::Lib) {
        cmd.current_dir(&target.package_dir);
    }
    // Dynamic libraries built alongside (dylib/cdylib dependencies), as cargo run does.
    if let Some(deps) = executable.parent() {
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

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildExit {
    /// The exit code, or 128+signal when a signal killed it (as shells report it).
    pub code: i32,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// A signal the tool received (and passed on) while the program ran.
    pub forwarded: Option<i32>,
}

/// Runs the program with inherited stdio and waits for it. SIGTERM, SIGHUP and a SIGINT sent to the tool alone are
/// passed on to the program, as if it had received them itself (the tool keeps running to render what was
/// recorded); a Ctrl-C at the terminal already reaches the whole process group, the program included, and is not
/// sent twice.
pub fn run_child(cmd: &mut Command) -> std::io::Result<ChildExit> {
    let forwarding = signals::Forwarding::install();
    let mut child = cmd.spawn()?;
    forwarding.target(child.id());
    let status = child.wait()?;
    let forwarded = forwarding.received();
    drop(forwarding);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Ok(ChildExit { code: 128 + signal, signal: Some(signal), forwarded });
        }
    }
    Ok(ChildExit { code: status.code().unwrap_or(1), signal: None, forwarded })
}

/// The name of a common signal (`SIGTERM`), for messages.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    let names = [
        (1, "SIGHUP"),
        (2, "SIGINT"),
        (3, "SIGQUIT"),
        (4, "SIGILL"),
        (6, "SIGABRT"),
        (7, "SIGBUS"),
        (8, "SIGFPE"),
        (9, "SIGKILL"),
        (11, "SIGSEGV"),
        (13, "SIGPIPE"),
        (14, "SIGALRM"),
        (15, "SIGTERM"),
    ];
    names.iter().find(|(n, _)| *n == signal).map(|(_, name)| *name)
}

#[cfg(unix)]
mod signals {
    //! libc's `sigaction` with `SA_SIGINFO`: the handler must tell a terminal's SIGINT (sent by the kernel to the
    //! whole foreground process group) from one sent to the tool alone (`kill`), which only siginfo's `si_code`
    //! says; hand-written struct layouts for that differ per platform, so libc provides them.
    use std::sync::atomic::{AtomicI32, Ordering::SeqCst};

    static CHILD: AtomicI32 = AtomicI32::new(0);
    static RECEIVED: AtomicI32 = AtomicI32::new(0);
    const FORWARDED: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

    /// Handlers installed while alive; the previous dispositions come back on drop.
    pub struct Forwarding {
        previous: Vec<(libc::c_int, libc::sigaction)>,
    }

    extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
        // Only async-signal-safe work here: atomics and kill(2).
        RECEIVED.store(signal, SeqCst);
        if signal == libc::SIGINT && !sent_by_a_process(info) {
            return;
        }
        let child = CHILD.load(SeqCst);
        if child > 0 {
            // SAFETY: kill(2) on the pid of the child this process spawned and has not reaped yet.
            unsafe { libc::kill(child, signal) };
        }
    }

    /// Whether `kill`/`sigqueue` sent the signal (Linux: a `si_code` of 0 or below; the terminal's come from the
    /// kernel with a positive one). Elsewhere the codes differ: a SIGINT is then taken as the terminal's.
    fn sent_by_a_process(info: *mut libc::siginfo_t) -> bool {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (null checked anyway).
        cfg!(target_os = "linux") && !info.is_null() && unsafe { (*info).si_code } <= 0
    }

    impl Forwarding {
        pub fn install() -> Forwarding {
            CHILD.store(0, SeqCst);
            RECEIVED.store(0, SeqCst);
            let mut previous = Vec::new();
            for signal in FORWARDED {
                // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler above only does
                // async-signal-safe work; `old` receives the previous disposition to restore.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = on_signal as *const () as usize;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                    libc::sigemptyset(&mut action.sa_mask);
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(signal, &action, &mut old) == 0 {
                        previous.push((signal, old));
                    }
                }
            }
            Forwarding { previous }
        }

        /// Sends the program what arrived before its pid was known.
        pub fn target(&self, pid: u32) {
            let pid = pid as i32;
            CHILD.store(pid, SeqCst);
            let early = RECEIVED.load(SeqCst);
            if early != 0 && early != libc::SIGINT {
                // SAFETY: as in the handler.
                unsafe { libc::kill(pid, early) };
            }
        }

        pub fn received(&self) -> Option<i32> {
            Some(RECEIVED.load(SeqCst)).filter(|&s| s != 0)
        }
    }

    impl Drop for Forwarding {
        fn drop(&mut self) {
            CHILD.store(0, SeqCst);
            for (signal, old) in &self.previous {
                // SAFETY: restores the disposition sigaction returned for this signal.
                unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
            }
        }
    }
}

#[cfg(not(unix))]
mod signals {
    /// No forwarding: Ctrl-C reaches the console's whole process group.
    pub struct Forwarding;

    /// Whether `kill`/`sigqueue` sent the signal (Linux: a `si_code` of 0 or below; the terminal's come from the
    /// kernel with a positive one). Elsewhere the codes differ: a SIGINT is then taken as the terminal's.
    fn sent_by_a_process(info: *mut libc::siginfo_t) -> bool {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (null checked anyway).
        cfg!(target_os = "linux") && !info.is_null() && unsafe { (*info).si_code } <= 0
    }

    impl Forwarding {
        pub fn install() -> Forwarding {
            Forwarding
        }
        pub fn target(&self, _pid: u32) {}
        pub fn received(&self) -> Option<i32> {
            None
        }
    }
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
        // With the files the run's other processes and rotations wrote beside it.
        for file in trace::run_files(old) {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Copies a trace and its function table to `dest` and `dest.functions.json`.
pub fn keep_trace(trace_path: &Path, table: &Path, dest: &Path) -> Result<()> {
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if trace::run_files(trace_path).len() > 1 {
        // Several processes (or rotated segments): the copy is the merged trace, one file.
        let merged = trace::Trace::load(trace_path, Some(table))?;
        std::fs::write(dest, trace::TraceBuilder::write(&merged))
            .with_context(|| format!("cannot write the merged trace to {}", dest.display()))?;
    } else {
        std::fs::copy(trace_path, dest).with_context(|| format!("cannot copy the trace to {}", dest.display()))?;
    }
    let dest_table = trace::functions_path_for(dest);
    std::fs::copy(table, &dest_table)
        .with_context(|| format!("cannot copy the function table to {}", dest_table.display()))?;
    Ok(())
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

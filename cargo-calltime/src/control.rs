//! Control of running instrumented programs (`cargo calltime ctl`): the tool's side of the runtime's control files
//! (calltime-rt/src/control.rs). Each process the runtime runs in keeps `<pid>.status` fresh (about every second)
//! in its control directory and reads `<pid>.cmd` every 20 ms.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::error::UserError;

/// A status older than this belongs to a process that is gone (or stopped).
const STALE_MS: u128 = 5_000;

/// A command for the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlCommand {
    On,
    Off,
    Status,
    /// Record 1 in N roots.
    Sample(u64),
}

impl ControlCommand {
    fn text(self) -> String {
        match self {
            ControlCommand::On => "on".into(),
            ControlCommand::Off => "off".into(),
            ControlCommand::Status => "status".into(),
            ControlCommand::Sample(n) => format!("sample {n}"),
        }
    }
}

/// What a process's status file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessStatus {
    pub pid: u32,
    pub recording: bool,
    pub sample: u64,
    /// The last command applied.
    pub applied: u64,
    pub seen: u64,
    pub kept: u64,
    pub dropped: u64,
    pub trace: PathBuf,
    pub updated_unix_ms: u128,
    pub dir: PathBuf,
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

fn read_status(path: &Path) -> Option<ProcessStatus> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut status = ProcessStatus { dir: path.parent()?.to_owned(), ..ProcessStatus::default() };
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else { continue };
        let number = || value.parse::<u64>().unwrap_or(0);
        match key {
            "pid" => status.pid = value.parse().ok()?,
            "recording" => status.recording = value == "on",
            "sample" => status.sample = number(),
            "applied" => status.applied = number(),
            "seen" => status.seen = number(),
            "kept" => status.kept = number(),
            "dropped" => status.dropped = number(),
            "trace" => status.trace = PathBuf::from(value),
            "updated_unix_ms" => status.updated_unix_ms = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    (status.pid != 0).then_some(status)
}

/// The control directories to look in: the workspace's (`<target>/calltime/control`, where `cargo calltime` runs
/// point the runtime) and the runtime's default for programs run by hand.
pub fn default_dirs(calltime_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = calltime_dir.map(control_dir).into_iter().collect();
    dirs.push(std::env::temp_dir().join("calltime-control"));
    dirs
}

/// Where `cargo calltime` runs put their control files (`CALLTIME_CONTROL_DIR`).
pub fn control_dir(calltime_dir: &Path) -> PathBuf {
    calltime_dir.join("control")
}

/// The instrumented processes running now (a fresh status file), by pid.
pub fn running(dirs: &[PathBuf]) -> Vec<ProcessStatus> {
    let mut found: Vec<ProcessStatus> = dirs
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|e| e.path().extension().is_some_and(|x| x == "status"))
        .filter_map(|e| read_status(&e.path()))
        .filter(|s| now_ms().saturating_sub(s.updated_unix_ms) < STALE_MS)
        .collect();
    found.sort_by_key(|s| s.pid);
    found.dedup_by_key(|s| s.pid);
    found
}

/// The process to control: `pid`, or the only one running.
pub fn pick(dirs: &[PathBuf], pid: Option<u32>) -> Result<ProcessStatus> {
    let running = running(dirs);
    let listed = || running.iter().map(|s| s.pid.to_string()).collect::<Vec<_>>().join(", ");
    match pid {
        Some(pid) => running.iter().find(|s| s.pid == pid).cloned().ok_or_else(|| {
            UserError::new(format!("no instrumented process {pid} is running"))
                .hint(if running.is_empty() {
                    "start one with `cargo calltime --root PATH -- ARGS` (its root must have been entered once)"
                        .to_owned()
                } else {
                    format!("running now: {}", listed())
                })
                .into()
        }),
        None => match running.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(UserError::new("no instrumented process is running")
                .hint("start one with `cargo calltime --root PATH -- ARGS` (its root must have been entered once)")
                .into()),
            _ => Err(UserError::new(format!("{} instrumented processes are running", running.len()))
                .hint(format!("name one: `cargo calltime ctl PID ...` with PID one of {}", listed()))
                .into()),
        },
    }
}

/// Sends `command` to `process` and waits (up to `timeout`) until the runtime applied it; its new status and how
/// long that took.
pub fn send(process: &ProcessStatus, command: ControlCommand, timeout: Duration) -> Result<(ProcessStatus, Duration)> {
    let seq = process.applied.max(now_ms() as u64) + 1;
    let cmd = process.dir.join(format!("{}.cmd", process.pid));
    let partial = process.dir.join(format!("{}.cmd.tmp", process.pid));
    let started = Instant::now();
    std::fs::write(&partial, format!("{seq} {}\n", command.text()))
        .and_then(|()| std::fs::rename(&partial, &cmd))
        .with_context(|| format!("cannot write the control file {}", cmd.display()))?;
    let status_path = process.dir.join(format!("{}.status", process.pid));
    loop {
        if let Some(status) = read_status(&status_path).filter(|s| s.applied >= seq) {
            return Ok((status, started.elapsed()));
        }
        if started.elapsed() > timeout {
            return Err(UserError::new(format!(
                "process {} did not apply `{}` within {} ms",
                process.pid,
                command.text(),
                timeout.as_millis()
            ))
            .hint("it may have exited or be stopped; `cargo calltime ctl status` lists the running ones")
            .into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

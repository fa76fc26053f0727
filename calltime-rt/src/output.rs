//! Where the writer's bytes go: one file per process, rotated by size, with a cap on the bytes of trees written per
//! hour (docs/trace-format.md, "Where the file goes").
//!
//! - The first process to create `CALLTIME_OUT` writes it; a process that finds it held by another live process
//!   (a program that spawned copies of itself, or forked workers that then ran their own roots) writes
//!   `<CALLTIME_OUT>.p<pid>` instead, so no two processes share a file. A file left by a process that is gone is
//!   taken over (truncated), as before. Either way the `.s<n>` segments of the file taken are removed: an earlier,
//!   longer run rotated into them.
//! - Past `CALLTIME_ROTATE_BYTES` the writer goes on in `<file>.s1`, `<file>.s2`, ...; each segment starts with the
//!   header, so each is a trace on its own, and the tool merges a run's files.
//! - Trees are written within a budget of `CALLTIME_MAX_BYTES_PER_HOUR`: a token bucket that starts full with half
//!   an hour's bytes and refills the other half evenly over the hour, so no hour-long window ever gets more than
//!   the cap, a short run can write up to half of it at once, and a busy service keeps trees spread over the hour
//!   rather than its first minutes; trees past it are dropped and counted (`dropped_cap`). Aggregate and stats lines are always written
//!   and count against the budget.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A process's trace output.
pub(crate) struct Output {
    /// This process's first file (`CALLTIME_OUT` or its `.p<pid>` sibling), once chosen.
    base: Option<PathBuf>,
    file: Option<File>,
    segment: u32,
    bytes_in_file: u64,
    rotate_bytes: u64,
    budget: Budget,
    /// The header lines every segment starts with.
    header: String,
}

/// Bytes of trees that may be written now: half of `per_hour` at the start and saved up at most, the other half
/// refilled continuously over the hour (any hour-long window: at most `per_hour`).
struct Budget {
    per_hour: u64,
    available: f64,
    refilled: Option<Instant>,
}

impl Budget {
    fn refill(&mut self) {
        let now = Instant::now();
        let burst = self.per_hour as f64 / 2.0;
        match self.refilled {
            None => self.available = burst,
            Some(at) => {
                let earned = now.duration_since(at).as_secs_f64() * burst / 3600.0;
                self.available = (self.available + earned).min(burst);
            }
        }
        self.refilled = Some(now);
    }
}

impl Output {
    pub(crate) const fn new() -> Output {
        Output {
            base: None,
            file: None,
            segment: 0,
            bytes_in_file: 0,
            rotate_bytes: 0,
            budget: Budget { per_hour: 0, available: 0.0, refilled: None },
            header: String::new(),
        }
    }

    /// Opens this process's file under `out` and writes `header`; false when it cannot be created (reported once).
    pub(crate) fn open(&mut self, out: &Path, header: String, rotate_bytes: u64, per_hour: u64) -> bool {
        self.rotate_bytes = rotate_bytes;
        self.budget.per_hour = per_hour;
        self.header = header;
        match claim(out) {
            Ok((path, file)) => {
                remove_stale_segments(&path);
                self.base = Some(path);
                self.start_segment(file)
            }
            Err(e) => {
                eprintln!("calltime: cannot create trace file {}: {e}; nothing will be recorded", out.display());
                false
            }
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// The file being written now.
    pub(crate) fn current_path(&self) -> Option<PathBuf> {
        let base = self.base.as_ref()?;
        Some(segment_path(base, self.segment))
    }

    fn start_segment(&mut self, mut file: File) -> bool {
        if file.write_all(self.header.as_bytes()).is_err() {
            return false;
        }
        self.bytes_in_file = self.header.len() as u64;
        self.file = Some(file);
        true
    }

    /// Whether `bytes` of trees fit in this hour's budget; taken from it when they do.
    pub(crate) fn admit_trees(&mut self, bytes: usize) -> bool {
        if self.budget.per_hour == 0 {
            return true;
        }
        self.budget.refill();
        if self.budget.available < bytes as f64 {
            return false;
        }
        self.budget.available -= bytes as f64;
        true
    }

    /// Writes lines that are not trees (aggregate, stats): always, but they count against the budget.
    pub(crate) fn write_always(&mut self, bytes: &[u8]) -> bool {
        if self.budget.per_hour > 0 {
            self.budget.refill();
            self.budget.available -= bytes.len() as f64;
        }
        self.write(bytes)
    }

    /// Writes whole records (never split across segments), rotating first when they would pass the size limit.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> bool {
        let past_limit = self.rotate_bytes > 0 && self.bytes_in_file + bytes.len() as u64 > self.rotate_bytes;
        if past_limit && self.bytes_in_file > self.header.len() as u64 {
            self.rotate();
        }
        let Some(file) = self.file.as_mut() else { return false };
        let ok = file.write_all(bytes).is_ok();
        if ok {
            self.bytes_in_file += bytes.len() as u64;
        }
        ok
    }

    fn rotate(&mut self) {
        let Some(base) = self.base.clone() else { return };
        self.segment += 1;
        self.file = None;
        match File::create(segment_path(&base, self.segment)) {
            Ok(file) => {
                self.start_segment(file);
            }
            Err(e) => eprintln!("calltime: cannot create the next trace segment of {}: {e}", base.display()),
        }
    }
}

/// Segment `n` of a process's file: the file itself, then `<file>.s<n>`.
fn segment_path(base: &Path, segment: u32) -> PathBuf {
    if segment == 0 {
        return base.to_owned();
    }
    let mut name = base.as_os_str().to_owned();
    name.push(format!(".s{segment}"));
    PathBuf::from(name)
}

/// Removes the segments (`<base>.s<n>`) an earlier process that wrote `base` rotated into: this process has just
/// created or taken over `base`, so they are not its own, and a reader would otherwise find them beside it. Only
/// names [`segment_path`] gives are touched; what cannot be removed is left (the reader leaves it out, warning).
///
/// A process rotates into `.s1` first, so without one there is nothing to remove in the common case, and opening the
/// file costs one `unlink` instead of a scan of its directory (which may be `/tmp`: hundreds of thousands of
/// instructions on the program's exit path when the trace is opened there; docs/truth-bench.md, "Eighth round").
fn remove_stale_segments(base: &Path) {
    if std::fs::remove_file(segment_path(base, 1)).is_err_and(|e| e.kind() == ErrorKind::NotFound) {
        return;
    }
    let Some(name) = base.file_name().and_then(|n| n.to_str()) else { return };
    let dir = match base.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(segment) = file_name.to_str().and_then(|f| f.strip_prefix(name)?.strip_prefix(".s")) else {
            continue;
        };
        // `.s` and digits, as `segment_path` writes them (no sign, no leading zero): `run.trace.s01` is not one.
        match segment.parse::<u32>() {
            Ok(n) if n > 0 && segment == n.to_string() => {
                let _ = std::fs::remove_file(entry.path());
            }
            _ => {}
        }
    }
}

/// Creates `out` for this process, or its `.p<pid>` sibling when another live process holds `out`.
fn claim(out: &Path) -> std::io::Result<(PathBuf, File)> {
    match OpenOptions::new().write(true).create_new(true).open(out) {
        Ok(file) => return Ok((out.to_owned(), file)),
        Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    if !held_by_another_process(out) {
        return Ok((out.to_owned(), File::create(out)?));
    }
    let mut name = out.as_os_str().to_owned();
    name.push(format!(".p{}", std::process::id()));
    let path = PathBuf::from(name);
    let file = File::create(&path)?;
    Ok((path, file))
}

/// The `process` line of an existing trace names a live process other than this one; a file whose header is not
/// written yet counts as held (its creator is starting).
fn held_by_another_process(path: &Path) -> bool {
    let mut head = [0u8; 256];
    let read = File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let text = String::from_utf8_lossy(&head[..read]);
    let Some(pid) = text.lines().nth(1).and_then(|line| line.strip_prefix("process ")) else { return true };
    match pid.split(' ').next().and_then(|p| p.parse::<u32>().ok()) {
        Some(pid) if pid == std::process::id() => false,
        Some(pid) => is_alive(pid),
        None => true,
    }
}

#[cfg(unix)]
fn is_alive(pid: u32) -> bool {
    extern "C" {
        fn kill(pid: i32, signal: i32) -> i32;
    }
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists and may be signalled; nothing is sent.
    let status = unsafe { kill(pid, 0) };
    // EPERM (1): it exists but belongs to someone else.
    status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(1)
}

#[cfg(not(unix))]
fn is_alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_named_after_the_file() {
        assert_eq!(segment_path(Path::new("/t/run.trace"), 0), Path::new("/t/run.trace"));
        assert_eq!(segment_path(Path::new("/t/run.trace"), 2), Path::new("/t/run.trace.s2"));
    }

    #[test]
    fn budget_starts_with_half_an_hour_and_refills_the_other_half_evenly() {
        let mut output = Output::new();
        output.budget.per_hour = 36_000;
        assert!(output.admit_trees(18_000), "half the hour's bytes at once");
        assert!(!output.admit_trees(100), "then only what is earned: 5 bytes a second");
        output.budget.refilled = output.budget.refilled.map(|at| at - std::time::Duration::from_secs(40));
        assert!(output.admit_trees(150));
        assert!(!output.admit_trees(100), "40 s earned 200 bytes, 150 taken");
    }

    #[test]
    fn opening_removes_the_segments_an_earlier_run_left_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("calltime-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("run.trace");
        // A longer earlier run by a process that is gone: its file and two segments.
        std::fs::write(&out, format!("calltime-trace 3\nprocess {} 0 /x\n", u32::MAX - 1)).unwrap();
        let stale = ["run.trace.s1", "run.trace.s2", "run.trace.s12"];
        // Not segments of `run.trace`: another process's file and segment, other names that only look alike.
        let kept =
            ["run.trace.p7", "run.trace.p7.s1", "run.trace.s01", "run.trace.s", "run.trace.s1x", "runs.trace.s1"];
        for name in stale.iter().chain(&kept) {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let mut output = Output::new();
        assert!(output.open(&out, "calltime-trace 3\n".to_owned(), 0, 0));
        for name in stale {
            assert!(!dir.join(name).exists(), "{name} left");
        }
        for name in kept {
            assert!(dir.join(name).exists(), "{name} removed");
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "calltime-trace 3\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_live_process_keeps_its_file() {
        let dir = std::env::temp_dir().join(format!("calltime-claim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("run.trace");
        // Held by a live process (pid 1 always exists on unix): this process writes a sibling.
        std::fs::write(&out, "calltime-trace 3\nprocess 1 0 /sbin/init\n").unwrap();
        let (path, _) = claim(&out).unwrap();
        assert_eq!(path, dir.join(format!("run.trace.p{}", std::process::id())));
        // Left by a process that is gone: taken over.
        std::fs::write(&out, format!("calltime-trace 3\nprocess {} 0 /x\n", u32::MAX - 1)).unwrap();
        let (path, _) = claim(&out).unwrap();
        assert_eq!(path, out);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Where the writer's bytes go: one file per process, rotated by size, with a cap on the bytes of trees written per
//! hour (docs/trace-format.md, "Where the file goes").
//!
//! - The first process to create `CALLTIME_OUT` writes it; a process that finds it held by another live process
//!   (a program that spawned copies of itself, or forked workers that then ran their own roots) writes
//!   `<CALLTIME_OUT>.p<pid>` instead, so no two processes share a file. A file left by a process that is gone is
//!   taken over (truncated), as before.
//! - Past `CALLTIME_ROTATE_BYTES` the writer goes on in `<file>.s1`, `<file>.s2`, ...; each segment starts with the
//!   header, so each is a trace on its own, and the tool merges a run's files.
//! - Trees are written within a budget of `CALLTIME_MAX_BYTES_PER_HOUR`, refilled evenly (a token bucket holding at
//!   most a tenth of an hour's bytes), so a busy service keeps trees spread over the hour rather than its first
//!   minutes; trees past it are dropped and counted (`dropped_cap`). Aggregate and stats lines are always written
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

/// Bytes of trees that may be written now: `per_hour` refilled continuously, at most a tenth of it saved up.
struct Budget {
    per_hour: u64,
    available: f64,
    refilled: Option<Instant>,
}

impl Budget {
    fn refill(&mut self) {
        let now = Instant::now();
        let burst = self.per_hour as f64 / 10.0;
        match self.refilled {
            None => self.available = burst,
            Some(at) => {
                let earned = now.duration_since(at).as_secs_f64() * self.per_hour as f64 / 3600.0;
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
    fn budget_refills_evenly_up_to_a_tenth_of_an_hour() {
        let mut output = Output::new();
        output.budget.per_hour = 36_000;
        assert!(output.admit_trees(3_600), "a tenth of the hour's bytes at once");
        assert!(!output.admit_trees(100), "then only what is earned: 10 bytes a second");
        output.budget.refilled = output.budget.refilled.map(|at| at - std::time::Duration::from_secs(20));
        assert!(output.admit_trees(150));
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

//! Control while the program runs (`cargo calltime ctl`): recording on or off and the root sampling rate, switched
//! without a restart through two small files per process in the control directory (`CALLTIME_CONTROL_DIR`, else
//! `calltime-control` in the system's temporary directory), which work alike on Linux and macOS:
//!
//! - `<pid>.cmd`, written by `ctl` (to a temporary name, then renamed): `<seq> <command> [<argument>]`, where the
//!   command is `on`, `off`, `sample` (argument N: record 1 in N roots), `slower-than` (argument: the threshold in
//!   ns, 0 for off; see `keep`) or `status`. The writer thread reads it every
//!   `POLL` (20 ms) and applies a command whose `seq` is newer than the last it applied.
//! - `<pid>.status`, written by the runtime when it starts, after each command and about every second:
//!   `key=value` lines (`pid`, `recording`, `sample`, `applied`, `seen`, `kept`, `dropped`, `trace`,
//!   `updated_unix_ms`, `slower_than_ns`). `ctl` waits for `applied` to reach its `seq`. Both files are removed at exit.
//!
//! Off costs the root probe one more load and branch than a probe outside any invocation: nothing is recorded,
//! counted or aggregated. Each change a command makes is written to the trace as a `control` record (by the writer,
//! with its time), so the report says what was switched while the program ran.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::invocation::lock;

/// `STATE` before the runtime started: the first root entry reads `CALLTIME_START_OFF`.
const UNSET: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNSET);
/// This process is a child forked without exec from one that had started the runtime (see `watch_forks`).
static FORKED: AtomicBool = AtomicBool::new(false);
/// Record 1 in N roots (`CALLTIME_SAMPLE`, then `ctl sample N`).
static SAMPLE: AtomicU64 = AtomicU64::new(1);
/// How often the status file is rewritten without a command.
const STATUS_EVERY: Duration = Duration::from_secs(1);

/// The root probe's check: recording was switched off.
#[inline(always)]
pub(crate) fn is_off() -> bool {
    STATE.load(Relaxed) >= OFF
}

/// This process is a child forked (without exec) from one that had started the runtime: its writer thread is its
/// own (see `writer::child_writer`).
#[inline]
pub(crate) fn forked() -> bool {
    FORKED.load(Relaxed)
}

/// The runtime's locks, held across a fork (see `watch_forks`), in the order the writer takes them.
struct ForkLocks {
    sink: MutexGuard<'static, crate::writer::Sink>,
    aggregate: crate::aggregate::ForkLocks,
    poller: MutexGuard<'static, Poller>,
    outboxes: MutexGuard<'static, Vec<&'static crate::outbox::Outbox>>,
    pool: MutexGuard<'static, crate::invocation::Pool>,
    retirements: MutexGuard<'static, crate::retire::Records>,
    samplers: MutexGuard<'static, crate::sampler::Tables>,
}

thread_local! {
    /// Between the fork handler's `prepare` and its `parent` or `child`, on the forking thread.
    static HELD: std::cell::RefCell<Option<ForkLocks>> = const { std::cell::RefCell::new(None) };
}

/// Registers the fork handler once (at the runtime's start, before its set-up: a fork during the set-up waits for
/// it to finish), so a child forked without exec records its own trees
/// in its own file, as a spawned copy does. Before the fork, `prepare` takes the runtime's locks (the sink, the
/// aggregates, the control poller, the outboxes' list, the recorders' pool, the retirements) in the writer's order,
/// so no other thread is inside them and the child's copies are consistent, and opens this process's file, so the
/// forking process keeps its name; `parent` releases them. `child` (the child's only thread) forgets what was the
/// parent's while it holds them: its queued, held and outboxed trees, its aggregate and counters, its trace file
/// (the child opens `<out>.p<pid>` at its first write) and its control state; its retirements are written again
/// (its functions stay retired); then it releases them. The child starts its own writer thread at its first wake.
/// A root open on the forking thread goes on in both processes, and is recorded by each.
#[cfg(unix)]
pub(crate) fn watch_forks() {
    extern "C" {
        fn pthread_atfork(
            prepare: Option<extern "C" fn()>,
            parent: Option<extern "C" fn()>,
            child: Option<extern "C" fn()>,
        ) -> std::os::raw::c_int;
    }
    extern "C" fn prepare() {
        crate::invocation::wait_for_runtime_start();
        let locks = ForkLocks {
            sink: crate::writer::lock_sink_for_fork(),
            aggregate: crate::aggregate::lock_for_fork(),
            poller: lock(&POLLER),
            outboxes: crate::outbox::lock_for_fork(),
            pool: crate::invocation::lock_pool_for_fork(),
            retirements: crate::retire::lock_for_fork(),
            samplers: crate::sampler::lock_for_fork(),
        };
        let _ = HELD.try_with(|held| *held.borrow_mut() = Some(locks));
    }
    extern "C" fn parent() {
        let _ = HELD.try_with(|held| held.borrow_mut().take());
    }
    extern "C" fn child() {
        let _ = HELD.try_with(|held| {
            let Some(mut locks) = held.borrow_mut().take() else { return };
            FORKED.store(true, Relaxed);
            crate::writer::forget_parent_sink(&mut locks.sink, &mut locks.pool);
            locks.aggregate.forget_parent();
            locks.outboxes.iter().for_each(|outbox| outbox.forget_parent());
            crate::invocation::forget_parent_counters();
            locks.retirements.forget_parent();
            crate::sampler::forget_parent(&locks.samplers);
            *locks.poller = Poller::new();
        });
    }
    // A flag, not a `Once`: a fork while another thread is inside a `Once` leaves the child a `Once` that never
    // completes, and its first root would wait for it forever. Forked between the swap and the registration, the
    // child has no handler and a runtime not yet set up: it sets one up as a spawned copy does.
    static REGISTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !REGISTERED.swap(true, Relaxed) {
        // SAFETY: pthread_atfork is the C library's (libc on Linux, libSystem on macOS); the handlers are plain
        // extern "C" fns with no captured state.
        unsafe {
            pthread_atfork(Some(prepare), Some(parent), Some(child));
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn watch_forks() {}

/// The roots' sampling rate now (at least 1).
#[inline(always)]
pub(crate) fn sample() -> u64 {
    SAMPLE.load(Relaxed).max(1)
}

/// At the runtime's start: the configured sampling rate and whether recording starts off (`CALLTIME_START_OFF=1`).
pub(crate) fn start(sample: u64, start_off: bool) {
    SAMPLE.store(sample.max(1), Relaxed);
    let started = STATE.compare_exchange(UNSET, if start_off { OFF } else { ON }, Relaxed, Relaxed);
    if start_off && started.is_ok() {
        crate::retire::start_quiet_while_off();
    }
    watch_forks();
}

/// What the writer thread keeps between polls.
struct Poller {
    /// The control directory, once the first status file was written there.
    dir: Option<PathBuf>,
    applied: u64,
    last_status: Option<Instant>,
    trace: String,
    /// The first poll (see `FIRST_STATUS_AFTER`).
    first_poll: Option<Instant>,
    /// This process's command file, named once (a name costs a `getpid` and an allocation).
    cmd: Option<PathBuf>,
}

impl Poller {
    const fn new() -> Poller {
        Poller { dir: None, applied: 0, last_status: None, trace: String::new(), first_poll: None, cmd: None }
    }
}

/// The status file is first written this long after the writer's first poll: a program that ends sooner (most runs
/// of a command-line program) creates, renames and removes no control file, which cost about as much CPU as the
/// rest of the writer's work in a 30 ms run (docs/performance.md, "Ninth round"). Until then no `ctl` can name the
/// process, so there is no command file to read either.
const FIRST_STATUS_AFTER: Duration = Duration::from_millis(100);

static POLLER: Mutex<Poller> = Mutex::new(Poller::new());
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// The control directory (`CALLTIME_CONTROL_DIR`, else `<temp>/calltime-control`).
fn dir() -> &'static PathBuf {
    DIR.get_or_init(|| match std::env::var_os("CALLTIME_CONTROL_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::env::temp_dir().join("calltime-control"),
    })
}

fn file(extension: &str) -> PathBuf {
    dir().join(format!("{}.{extension}", std::process::id()))
}

/// A setting a command changed, as the trace's `control` record names it: `recording` (1 on, 0 off), `sample` or
/// `slower_than_ns` (the `settings` line's keys), and its new value.
pub(crate) type Change = (&'static str, u64);

/// A change and when it was applied (before the status file says so, so `ctl` never sees it earlier).
pub(crate) type Applied = (&'static str, u64, Instant);

/// Called by the writer thread every period: applies a new command, and rewrites the status file when something
/// changed or a second passed. `trace` names the current trace file for the status. Returns the setting the command
/// changed, for the trace (a command that changes nothing, such as `status` or a second `off`, returns `None`).
pub(crate) fn poll(trace: &std::path::Path) -> Option<Applied> {
    let mut poller = lock(&POLLER);
    if poller.dir.is_none() {
        let first = *poller.first_poll.get_or_insert_with(Instant::now);
        if first.elapsed() < FIRST_STATUS_AFTER || std::fs::create_dir_all(dir()).is_err() {
            return None;
        }
        poller.dir = Some(dir().clone());
    }
    let mut changed = false;
    let mut change = None;
    let cmd = poller.cmd.get_or_insert_with(|| file("cmd"));
    if let Ok(text) = std::fs::read_to_string(cmd) {
        let before = settings_now();
        if let Some(seq) = apply(&text, poller.applied) {
            poller.applied = seq;
            changed = true;
            change = difference(before, settings_now()).map(|(setting, value)| (setting, value, Instant::now()));
        }
    }
    let trace = trace.to_string_lossy();
    if poller.trace != trace {
        poller.trace = trace.into_owned();
        changed = true;
    }
    let due = poller.last_status.map_or(true, |at| at.elapsed() >= STATUS_EVERY);
    if changed || due {
        poller.last_status = Some(Instant::now());
        write_status(&poller);
    }
    change
}

/// What a command can change: (recording, sample, slower_than_ns).
fn settings_now() -> [Change; 3] {
    [("recording", u64::from(!is_off())), ("sample", sample()), ("slower_than_ns", crate::keep::slower_than_ns())]
}

/// The one setting that differs (a command changes at most one).
fn difference(before: [Change; 3], after: [Change; 3]) -> Option<Change> {
    before.iter().zip(after).find(|(b, a)| b.1 != a.1).map(|(_, a)| a)
}

/// Applies `<seq> <command> [<argument>]` when `seq` is newer than `applied`; the new seq.
fn apply(text: &str, applied: u64) -> Option<u64> {
    let mut words = text.split_whitespace();
    let seq: u64 = words.next()?.parse().ok()?;
    if seq <= applied {
        return None;
    }
    match (words.next(), words.next().and_then(|n| n.parse::<u64>().ok())) {
        (Some("on"), _) => {
            crate::retire::end_quiet_while_off();
            STATE.store(ON, Relaxed)
        }
        (Some("off"), _) => STATE.store(OFF, Relaxed),
        (Some("sample"), Some(n)) => SAMPLE.store(n.max(1), Relaxed),
        (Some("slower-than"), Some(ns)) => crate::keep::set_slower_than(ns),
        // `status` (and anything this runtime does not know) only asks for a fresh status.
        _ => {}
    }
    Some(seq)
}

fn write_status(poller: &Poller) {
    let stats = crate::stats();
    let recording = if is_off() { "off" } else { "on" };
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let text = format!(
        "pid={}\nrecording={recording}\nsample={}\napplied={}\nseen={}\nkept={}\ndropped={}\ntrace={}\n\
         updated_unix_ms={now_ms}\nslower_than_ns={}\n",
        std::process::id(),
        sample(),
        poller.applied,
        stats.seen,
        stats.kept,
        stats.dropped,
        poller.trace.replace('\n', " "),
        crate::keep::slower_than_ns(),
    );
    // Written whole under a temporary name, then renamed: `ctl` never reads half a file.
    let status = file("status");
    let partial = status.with_extension("status.tmp");
    let written = std::fs::File::create(&partial).and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&partial, &status);
    }
}

/// At exit: the process is no longer controllable.
pub(crate) fn remove_files() {
    if lock(&POLLER).dir.is_some() {
        let _ = std::fs::remove_file(file("status"));
        let _ = std::fs::remove_file(file("cmd"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_apply_once_in_order() {
        start(1, false);
        assert_eq!(apply("3 off\n", 2), Some(3));
        assert!(is_off());
        assert_eq!(apply("3 on\n", 3), None, "an old command is not applied again");
        assert!(is_off());
        assert_eq!(apply("4 sample 10\n", 3), Some(4));
        assert_eq!(sample(), 10);
        assert_eq!(apply("5 on", 4), Some(5));
        assert!(!is_off());
        assert_eq!(apply("6 status", 5), Some(6));
        assert_eq!(apply("7 slower-than 5000000", 6), Some(7));
        assert_eq!(crate::keep::slower_than_ns(), 5_000_000);
        assert_eq!(apply("8 slower-than 0", 7), Some(8));
        assert_eq!(crate::keep::slower_than_ns(), 0);
        assert_eq!(apply("garbage", 0), None);
        SAMPLE.store(1, Relaxed);
    }

    #[test]
    fn a_change_names_the_setting_it_moved() {
        let before = [("recording", 1), ("sample", 1), ("slower_than_ns", 0)];
        assert_eq!(
            difference(before, [("recording", 0), ("sample", 1), ("slower_than_ns", 0)]),
            Some(("recording", 0))
        );
        assert_eq!(difference(before, [("recording", 1), ("sample", 10), ("slower_than_ns", 0)]), Some(("sample", 10)));
        assert_eq!(difference(before, before), None, "`status`, or `on` while on, changes nothing");
    }
}

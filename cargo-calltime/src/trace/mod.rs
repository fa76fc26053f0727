//! Stage 8: the trace format (docs/trace-format.md), the one leaf module that knows it. It holds the model of a
//! loaded trace, the function table that names its indices, the one reader ([`parse`], [`Trace::load`]) and the one
//! writer ([`TraceBuilder`], used by tests to produce exactly what the runtime writes). It imports nothing from the
//! rest of the tool.
//!
//! - `records`: every line kind's fields, read and written side by side; adding a header key or a node field is a
//!   change there (plus the model field here).
//! - `read`: assembles lines into [`Trace`] (record boundaries, trees from depths, what a crash leaves).
//! - `build`: writes a [`Trace`] (or invocations one at a time) back as text.
//! - `table`: the function table ([`FunctionTable`]).
//! - `quiet`: the estimated calls of retired functions that went quiet (`quiet` records), filled in on loading.
//! - `service`: the records of long-running services: settings switched by `ctl`, held trees displaced later.

mod aggregate;
mod binary;
mod build;
pub mod compensate;
mod files;
mod parts;
pub mod quiet;
mod read;
mod records;
mod service;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

pub use aggregate::{
    bucket_low, bucket_middle, spawned_kind, AggregatePath, RunAggregate, SPAWNED_TASKS_INDEX, SPAWNED_THREADS_INDEX,
};
pub use build::TraceBuilder;
pub use files::run_files;
pub use read::{parse, parse_bytes, text_of};
pub use service::ControlChange;
pub use table::{FunctionInfo, FunctionTable};

use crate::error::UserError;

/// The newest trace format version this reader understands (4: version 3 plus binary blocks; 5: their records may be
/// narrow); it also reads every older one (1, 2, 3, 4).
pub const TRACE_VERSION: u32 = 5;
/// Versions [`parse`] accepts.
pub const TRACE_VERSIONS: std::ops::RangeInclusive<u32> = 1..=TRACE_VERSION;

/// A loaded trace file.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub path: PathBuf,
    pub version: u32,
    pub pid: u32,
    /// Wall-clock time (ns since the Unix epoch) of the trace's time origin; every `start_ns` counts from it.
    pub epoch_unix_ns: u64,
    pub exe: String,
    pub plan_id: Option<String>,
    /// The function table path named by the `plan` line.
    pub table_hint: Option<PathBuf>,
    pub table: FunctionTable,
    /// The runtime's settings from the `settings` line (version 2: `node_cap`, `fold_after`, `time_sample`,
    /// `min_ns`, `sample`, `max_invocations`, and whatever later runtimes add); empty for version 1.
    pub settings: BTreeMap<String, u64>,
    /// The probes' own cost measured by the runtime at start-up (version 3 `calibration` line); `None` for older
    /// traces, whose times can only be shown raw.
    pub calibration: Option<Calibration>,
    /// Whether the node times are raw (as read) or compensated for probe cost ([`compensate::compensated`]).
    pub times: Times,
    /// Functions whose probes retired during the run (version 3 `retire` records), in file order.
    pub retirements: Vec<Retirement>,
    /// Retired functions whose later calls were no longer counted (`quiet` records), in file order: their calls in
    /// the invocations that ended after it went quiet are estimated ([`quiet::estimate_quiet_calls`]).
    pub quiet: Vec<Quiet>,
    /// Complete invocations, in the order they were written (completion order).
    pub invocations: Vec<Invocation>,
    /// The runtime's whole-run aggregate: the last complete `aggregate` record (summed over processes when a run's
    /// files are merged); `None` for runtimes that do not write one.
    pub aggregate: Option<RunAggregate>,
    /// Settings `cargo calltime ctl` switched while the program ran (`control` records), in file order (a merged
    /// run: process by process).
    pub controls: Vec<ControlChange>,
    /// Roots whose invocations were sampled for cost (`sampled` records, the last of each process, summed over a
    /// merged run's processes), in root order: the invocations not recorded and their roots' times.
    pub sampled: Vec<SampledRoot>,
    /// Sequence numbers of trees written while held (`--keep-slowest`, `--keep-sample`) and displaced later
    /// (`unheld` records); the reader leaves those invocations out.
    pub unheld: Vec<u64>,
    /// Processes and files a merged run was read from (1 and 1 for a single file).
    pub processes: usize,
    pub files: usize,
    pub stats: Stats,
    /// How many `stats` lines the file has: the runtime appends one at each flush and at exit, so 0 means the
    /// counters are unknown (the program crashed or is still running).
    pub stats_records: usize,
    /// Problems found while loading (a record cut off by a crash, a missing function table, ...).
    pub warnings: Vec<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Trace {
    /// Whether the process that wrote the trace is still running (unix: `kill(pid, 0)`, Linux and macOS alike;
    /// elsewhere unknown, so false). A recycled pid can make a long-gone process look alive: callers ask only when
    /// the trace has no counters from its exit.
    pub fn process_is_running(&self) -> bool {
        self.pid != 0 && process_exists(self.pid)
    }
}

/// Whether a process with this id exists: signal 0 checks without sending anything; EPERM means it exists but
/// belongs to another user.
#[cfg(unix)]
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: `kill` with signal 0 sends nothing; it only reads the process table.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
pub(crate) fn process_exists(_pid: u32) -> bool {
    false
}

/// Counters the runtime keeps per process (the last `stats` line of the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Root invocations started.
    pub seen: u64,
    /// Invocations written to the file.
    pub kept: u64,
    /// Invocations not recorded because of 1-in-N sampling.
    pub sampled_out: u64,
    /// Invocations not recorded to keep the probes' cost within the budget (`cost_budget_pct`; not in `dropped`
    /// nor `sampled_out`): see [`Trace::sampled`].
    #[serde(skip_serializing_if = "is_zero")]
    pub sampled_for_cost: u64,
    /// Invocations dropped because the writer fell behind or the maximum was reached.
    pub dropped: u64,
    /// Invocations whose tree hit the node cap.
    pub truncated: u64,
    /// Causes of `dropped` (version 3; 0 in older traces): `--max-invocations` reached, the writer's queue full,
    /// no recording buffer free. `dropped` also counts failed writes and thread teardown.
    pub dropped_limit: u64,
    pub dropped_queue_full: u64,
    pub dropped_no_buffer: u64,
    /// Functions whose probes retired (version 3).
    pub retired_functions: u64,
    /// Invocations left out by choice, not lost (not in `dropped`): not slower than `--slower-than`; not among the
    /// `--keep-slowest` or not in the `--keep-sample`.
    #[serde(skip_serializing_if = "is_zero")]
    pub left_out_fast: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub left_out_unselected: u64,
    /// The first and the last root start of the run, in ns since the epoch of the trace (0 and 0 when unknown):
    /// the span the kept invocations were chosen from.
    #[serde(skip_serializing_if = "is_zero")]
    pub first_root_ns: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub last_root_ns: u64,
    /// Of `dropped`: trees the hourly byte cap (`CALLTIME_MAX_BYTES_PER_HOUR`) left unwritten.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_cap: u64,
    /// The last `stats` line was a periodic one, written while the program ran (not at its exit): the process is
    /// still running, or did not exit normally.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub periodic: bool,
    /// Records cut off at the end of the file (a crash while writing); counted by the reader.
    pub incomplete: u64,
}

/// The probes' own costs, in picoseconds, as the runtime measured them at start-up on the machine it ran on
/// (docs/trace-format.md, version 3). `inner`: what a call records of itself; `outer`: what one call adds to its
/// caller's measured time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Calibration {
    /// A per-call node (`n` line, or a call recorded before the fold).
    #[serde(rename = "recorded_inner_ps")]
    pub recorded_inner: u64,
    #[serde(rename = "recorded_outer_ps")]
    pub recorded_outer: u64,
    /// An untimed call counted on a folded call path.
    #[serde(rename = "folded_outer_ps")]
    pub folded_outer: u64,
    /// A timed (sampled) call of a folded call path.
    #[serde(rename = "timed_inner_ps")]
    pub timed_inner: u64,
    #[serde(rename = "timed_outer_ps")]
    pub timed_outer: u64,
    /// A call of a retired function (counted in an `r` line).
    #[serde(rename = "retired_outer_ps")]
    pub retired_outer: u64,
    /// A call of a retired function once it went quiet (not counted); `retired_outer` when the trace does not say.
    #[serde(rename = "quiet_outer_ps", skip_serializing_if = "Option::is_none")]
    pub quiet_outer: Option<u64>,
    /// The same quiet call of a tiny function inlined into a loop (the rewrite's closure form), where the state
    /// byte's test costs the loop more than it costs an out-of-line call; what compensation takes per estimated
    /// quiet call when the trace has it.
    #[serde(rename = "quiet_inline_ps", skip_serializing_if = "Option::is_none")]
    pub quiet_inline: Option<u64>,
}

/// Whether a trace's times are as recorded or compensated for the probes' own cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Times {
    /// As recorded (and estimated): every probe's cost is in the times.
    #[default]
    Raw,
    /// The calibrated probe costs subtracted, then children clamped to their parents.
    Compensated,
}

/// A function whose probe retired itself (a `retire` record): from `at_ns` on, its calls were counted, not timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Retirement {
    /// Dense index into the function table.
    pub func: u32,
    /// When it retired (ns since the trace epoch).
    pub at_ns: u64,
    /// Calls observed before it retired.
    pub calls: u64,
    /// Their compensated mean duration.
    pub mean_ns: u64,
}

/// Calls of a retired function made during one invocation after it retired (an `r` line): not timed, not in the
/// tree (their time is in their callers' times).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RetiredCalls {
    pub func: u32,
    pub calls: u64,
    /// The count is an estimate: the function had gone quiet (a `quiet` record), so its calls were not all counted.
    pub estimated: bool,
    /// Of `calls`, those the runtime counted (its `r` line; `calls` unless estimated).
    #[serde(skip)]
    pub counted: u64,
}

impl RetiredCalls {
    /// Calls counted exactly (an `r` line).
    pub fn counted(func: u32, calls: u64) -> RetiredCalls {
        RetiredCalls { func, calls, estimated: false, counted: calls }
    }

    /// An estimate of `calls` calls, `counted` of which the runtime counted.
    pub fn estimated(func: u32, calls: u64, counted: u64) -> RetiredCalls {
        RetiredCalls { func, calls: calls.max(counted), estimated: true, counted }
    }
}

/// A root's invocations not recorded to keep the probes' cost within the budget (a `sampled` record, cumulative):
/// neither dropped nor sampled out by `--sample`. Every one is counted, so the root's count over the whole run is
/// exact; `timed` of them had their root timed: a uniform random sample (1 in 16) of those run on a thread, none of
/// the root tasks. So the root's mean over the whole run is an estimate from them (exact in traces where every one
/// run on a thread was timed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SampledRoot {
    pub func: u32,
    pub skipped: u64,
    pub timed: u64,
    /// The timed roots' time (ns). Raw as read (the probes of an unrecorded invocation record nothing); compensation
    /// takes from it what the recorded invocations' calls of retired functions cost, on average (`compensate`).
    pub timed_ns: u64,
    /// Of `skipped`, the root tasks (never timed: their polls may move between threads). Absent in traces written
    /// before a thread's skipped invocations were timed at random: those timed every one, so their untimed ones were
    /// the tasks (`SampledRoot::tasks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<u64>,
}

impl SampledRoot {
    /// Of the skipped invocations, the root tasks (see the field).
    pub fn tasks(&self) -> u64 {
        self.tasks.unwrap_or(self.skipped.saturating_sub(self.timed))
    }

    /// The skipped invocations run on a thread: the ones whose roots were timed, or could have been.
    pub fn on_threads(&self) -> u64 {
        self.skipped.saturating_sub(self.tasks())
    }

    /// Whether the timed roots are a sample of those run on a thread (then their total is estimated from them).
    pub fn timing_sampled(&self) -> bool {
        self.timed < self.on_threads()
    }

    /// The total root time (ns) of the skipped invocations run on a thread: the timed ones' mean times their number
    /// (unbiased: the timed ones are a uniform random sample; exact when every one was timed). `None` when none was.
    pub fn on_threads_ns(&self) -> Option<u64> {
        (self.timed > 0).then(|| estimated_total(self.timed_ns, self.timed, self.on_threads()))
    }
}

/// A retired function that went quiet (a `quiet` record): from then on its calls were not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Quiet {
    pub func: u32,
    /// When it went quiet (ns since the trace epoch, read before its probes stopped counting): an invocation that
    /// ended before counted every call it made.
    pub at_ns: u64,
    /// When it went quiet within an invocation (a long one): its calls and its callers' calls in that invocation
    /// so far, with no caller's call open, so their ratio is its calls per caller call. 0 and 0 when it went quiet
    /// as an invocation ended.
    #[serde(skip_serializing_if = "is_zero")]
    pub calls: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub caller_calls: u64,
    /// When its callers' calls were still open as it went quiet within an invocation (a loop that runs for the
    /// whole invocation): the function whose calls `caller_calls` counts instead, a busy sibling called alongside
    /// it; its later calls are then estimated from that function's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadKind {
    Thread,
    Task,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadRef {
    pub kind: ThreadKind,
    pub id: u64,
    pub name: String,
}

impl ThreadRef {
    /// `thread` or `task`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ThreadKind::Thread => "thread",
            ThreadKind::Task => "task",
        }
    }
}

impl std::fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self.kind_name();
        if self.name.is_empty() {
            write!(f, "{kind} {}", self.id)
        } else {
            write!(f, "{kind} {} ({})", self.id, self.name)
        }
    }
}

/// One call of the root and everything instrumented under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub seq: u64,
    pub thread: ThreadRef,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Calls counted past the node cap but not stored (0 when the tree is complete).
    pub truncated_calls: u64,
    /// Nodes left out because they were shorter than the minimum duration.
    pub filtered_nodes: u64,
    /// The tree was recorded folded (version 2 `a` lines): one node per call path, not per call, with exact call
    /// counts and times that may be estimated from a sample of the calls.
    pub folded: bool,
    pub root: Node,
    /// Calls of retired functions during this invocation, after they retired (version 3 `r` lines), in file order.
    pub retired: Vec<RetiredCalls>,
    /// Work spawned inside this invocation that ran on another thread or task (`p` lines), in file order; its
    /// calls are in the tree under the spawning node, marked with their [`Node::lane`].
    pub spawned: Vec<Spawned>,
    /// Spawns past the runtime's cap per invocation, which ran unrecorded (`pu` lines).
    pub unrecorded_spawns: u64,
}

/// Work spawned inside an invocation that ran on another thread or task (a `p` line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spawned {
    /// Where it ran (no name: parts carry none).
    pub thread: ThreadRef,
    /// The spawned closure's or future's own span (its first poll to its completion).
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Still running when the invocation was written: its calls are not in the tree.
    pub outlived: bool,
    /// Ran unrecorded (the runtime had no free buffer for it).
    pub unrecorded: bool,
}

impl Invocation {
    /// Wall time of the invocation and the time summed over the spawned work that ran on other threads or tasks
    /// (which may overlap the invocation's own thread and each other).
    pub fn spawned_summed_ns(&self) -> u64 {
        self.spawned.iter().map(|s| s.duration_ns).sum()
    }
}

/// One call in a tree (an `n` line), or every call of one call path in a folded tree (an `a` line).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Dense index into the function table.
    pub func: u32,
    /// Start of the (first) call.
    pub start_ns: u64,
    /// Duration of the call; for a call path, the estimated total of its calls (exact when every call was timed).
    pub duration_ns: u64,
    /// Calls this node stands for: 1 for a single call, the exact count of a call path's calls otherwise.
    pub calls: u64,
    /// How many of `calls` were timed (`calls` when the duration is exact).
    pub timed_calls: u64,
    /// Shortest and longest timed call (the duration for a single call; 0 when no call was timed).
    pub min_ns: u64,
    pub max_ns: u64,
    /// Sum of the timed calls' durations (`timed_ns` of an `a` line; the duration for a single call).
    pub timed_ns: u64,
    /// Of `timed_calls`, those timed unconditionally (recorded per call before the fold; version 3 `a` lines), and
    /// their total; the other timed calls were sampled at random among the `calls - exact_calls` others. 0 for `n`
    /// lines and older `a` lines.
    pub exact_calls: u64,
    pub exact_ns: u64,
    /// The call was left by unwinding; for a call path, at least one of its calls was.
    pub panicked: bool,
    /// The call was cancelled (an async function dropped before completing) or still open when its invocation
    /// ended; for a call path, at least one of its calls was.
    pub cancelled: bool,
    /// Allocations made while this call (or, for a call path, one of its calls) was the innermost recorded call,
    /// and their bytes: self counts, exact (0 when the trace counted no allocations; see [`Trace::counts_allocs`]).
    pub self_allocs: u64,
    pub self_alloc_bytes: u64,
    /// Calls that returned an `Err` (functions returning a `*Result`): 0 or 1 for a call, the count for a path.
    pub errs: u64,
    /// Set on a call made by work spawned on another thread or task (a `p` record's top-level calls): where it ran.
    pub lane: Option<ThreadRef>,
    /// Work this call spawned that was still running when the invocation was written (`[outlived]`).
    pub outlived: u32,
    pub children: Vec<Node>,
}

impl Node {
    /// One call (an `n` line, or a test's tree).
    pub fn call(func: u32, start_ns: u64, duration_ns: u64, panicked: bool, children: Vec<Node>) -> Node {
        Node {
            func,
            start_ns,
            duration_ns,
            calls: 1,
            timed_calls: 1,
            min_ns: duration_ns,
            max_ns: duration_ns,
            timed_ns: duration_ns,
            exact_calls: 0,
            exact_ns: 0,
            panicked,
            cancelled: false,
            self_allocs: 0,
            self_alloc_bytes: 0,
            errs: 0,
            lane: None,
            outlived: 0,
            children,
        }
    }

    /// One call path of a folded tree (an `a` line): `calls` calls, `timed_calls` of them timed, taking `timed_ns`
    /// together, `min_ns`..`max_ns` each; the duration is the estimated total.
    pub fn path(
        func: u32,
        start_ns: u64,
        calls: u64,
        timed_calls: u64,
        timed_ns: u64,
        (min_ns, max_ns): (u64, u64),
        children: Vec<Node>,
    ) -> Node {
        Node {
            func,
            start_ns,
            duration_ns: estimated_total(timed_ns, timed_calls, calls),
            calls,
            timed_calls,
            min_ns,
            max_ns,
            timed_ns,
            exact_calls: 0,
            exact_ns: 0,
            panicked: false,
            cancelled: false,
            self_allocs: 0,
            self_alloc_bytes: 0,
            errs: 0,
            lane: None,
            outlived: 0,
            children,
        }
    }

    /// The same call path with `exact_calls` of its timed calls timed unconditionally, taking `exact_ns` together
    /// (version 3): the duration becomes the unbiased estimate ([`unbiased_total`]).
    pub fn with_exact(mut self, exact_calls: u64, exact_ns: u64) -> Node {
        self.exact_calls = exact_calls;
        self.exact_ns = exact_ns;
        self.duration_ns = unbiased_total(self.calls, self.timed_calls, self.timed_ns, exact_calls, exact_ns);
        self
    }

    /// The same node with `allocs` self allocations of `bytes` in all.
    pub fn with_allocs(mut self, allocs: u64, bytes: u64) -> Node {
        self.self_allocs = allocs;
        self.self_alloc_bytes = bytes;
        self
    }

    /// Allocations of this node and everything under it (count, bytes).
    pub fn total_allocs(&self) -> (u64, u64) {
        let below = self.children.iter().map(Node::total_allocs);
        below.fold((self.self_allocs, self.self_alloc_bytes), |(n, b), (cn, cb)| (n + cn, b + cb))
    }

    /// The duration is an estimate: only some of the calls were timed.
    pub fn is_estimated(&self) -> bool {
        self.timed_calls < self.calls
    }

    /// Time not spent in instrumented children (saturating: neither clock skew nor estimated children that add up
    /// to more than their parent make it negative).
    pub fn self_ns(&self) -> u64 {
        self.duration_ns.saturating_sub(self.children_busy_ns())
    }

    /// The children's durations added up (overlapping time counted once per child).
    pub fn children_sum_ns(&self) -> u64 {
        self.children.iter().fold(0u64, |sum, c| sum.saturating_add(c.duration_ns))
    }

    /// Time during which at least one child ran: the union of the children's intervals when each child is one
    /// timed call (async children polled together, by `join!` or `select!`, overlap), else their sum (a call path
    /// of a folded tree has no interval).
    pub fn children_busy_ns(&self) -> u64 {
        // Intervals are trusted only as the format promises them: each child one call, inside its parent's span.
        let end = self.start_ns.saturating_add(self.duration_ns);
        // Work spawned on another thread may end after its spawner (attached while the invocation was not yet
        // written): its interval is cut at the parent's end.
        let has_interval = |c: &Node| {
            c.calls == 1
                && c.timed_calls == 1
                && c.start_ns >= self.start_ns
                && (c.lane.is_some() || c.start_ns.saturating_add(c.duration_ns) <= end)
        };
        if !self.children.iter().all(has_interval) {
            if !self.children.iter().any(|c| c.lane.is_some()) {
                return self.children_sum_ns();
            }
            // A folded path (or a parent with folded children): the spawned calls that are one call each ran
            // alongside each other on other threads, so they count by the union of their intervals; the other
            // children have no interval and add up.
            let single = |c: &&Node| c.lane.is_some() && c.calls == 1 && c.timed_calls == 1;
            let spans =
                self.children.iter().filter(single).map(|c| (c.start_ns, c.start_ns.saturating_add(c.duration_ns)));
            let others =
                self.children.iter().filter(|c| !single(c)).fold(0u64, |sum, c| sum.saturating_add(c.duration_ns));
            return others.saturating_add(union_ns(spans)).min(self.duration_ns);
        }
        union_ns(self.children.iter().map(|c| (c.start_ns, c.start_ns.saturating_add(c.duration_ns).min(end))))
    }

    /// Time the children ran concurrently with each other: their sum less their union (0 when they ran one after
    /// another).
    pub fn children_overlap_ns(&self) -> u64 {
        self.children_sum_ns().saturating_sub(self.children_busy_ns())
    }

    /// Number of nodes in this subtree, itself included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
}

/// The time covered by at least one of the `(start, end)` spans.
fn union_ns(spans: impl Iterator<Item = (u64, u64)>) -> u64 {
    let mut spans: Vec<(u64, u64)> = spans.collect();
    spans.sort_unstable();
    let (mut busy, mut covered_to) = (0u64, 0u64);
    for (start, end) in spans {
        let from = start.max(covered_to);
        if end > from {
            busy = busy.saturating_add(end - from);
            covered_to = end;
        }
    }
    busy
}

/// Totals for one call path (root first) within one invocation; times of a folded tree may be estimates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStat {
    pub calls: u64,
    pub total_ns: u64,
    pub self_ns: u64,
    /// Self allocations and their bytes (exact).
    pub self_allocs: u64,
    pub self_alloc_bytes: u64,
    /// Calls that returned an `Err`, and calls cancelled (a folded path's flag counts 1).
    pub errs: u64,
    pub cancelled: u64,
}

impl Invocation {
    /// An invocation of `root` on `thread`: its span is the root's, nothing truncated or filtered, not folded.
    pub fn new(seq: u64, thread: ThreadRef, root: Node) -> Invocation {
        Invocation {
            seq,
            thread,
            start_ns: root.start_ns,
            duration_ns: root.duration_ns,
            truncated_calls: 0,
            filtered_nodes: 0,
            folded: false,
            root,
            retired: Vec::new(),
            spawned: Vec::new(),
            unrecorded_spawns: 0,
        }
    }
}

impl Invocation {
    /// Calls `visit` with every node of the tree, preorder, and its call path (function indices from the root).
    fn for_each_path(&self, mut visit: impl FnMut(&[u32], &Node)) {
        fn walk(node: &Node, path: &mut Vec<u32>, visit: &mut impl FnMut(&[u32], &Node)) {
            path.push(node.func);
            visit(path, node);
            for child in &node.children {
                walk(child, path, visit);
            }
            path.pop();
        }
        walk(&self.root, &mut Vec::new(), &mut visit);
    }

    /// The call paths (as in [`Invocation::path_stats`]) whose last call ran as spawned work on another thread or
    /// task, with where.
    pub fn spawned_paths(&self) -> BTreeMap<Vec<u32>, ThreadKind> {
        let mut out = BTreeMap::new();
        self.for_each_path(|path, node| {
            if let Some(lane) = &node.lane {
                out.insert(path.to_vec(), lane.kind);
            }
        });
        out
    }

    /// Every call path in the tree (as function indices from the root) with its calls, total and self time.
    pub fn path_stats(&self) -> BTreeMap<Vec<u32>, PathStat> {
        let mut out = BTreeMap::<Vec<u32>, PathStat>::new();
        self.for_each_path(|path, node| {
            let stat = out.entry(path.to_vec()).or_default();
            stat.calls += node.calls;
            stat.total_ns = stat.total_ns.saturating_add(node.duration_ns);
            stat.self_ns = stat.self_ns.saturating_add(node.self_ns());
            stat.self_allocs += node.self_allocs;
            stat.self_alloc_bytes += node.self_alloc_bytes;
            stat.errs += node.errs;
            stat.cancelled += u64::from(node.cancelled);
        });
        out
    }
}

impl Trace {
    /// The runtime counted allocations per node (`settings ... allocs=1`), or some node has some: views show
    /// allocation columns only then.
    pub fn counts_allocs(&self) -> bool {
        fn any(node: &Node) -> bool {
            node.self_allocs > 0 || node.children.iter().any(any)
        }
        self.settings.get("allocs").is_some_and(|&on| on != 0) || self.invocations.iter().any(|inv| any(&inv.root))
    }

    /// Loads a run's trace: `path` merged with the files the run's other processes and rotations wrote beside it
    /// (see `files`); `functions` overrides the function table the trace names.
    pub fn load(path: &Path, functions: Option<&Path>) -> Result<Trace> {
        let paths = files::run_files(path);
        if paths.len() <= 1 {
            return Trace::load_file(path, functions);
        }
        let traces = paths.iter().map(|p| Trace::load_file(p, functions)).collect::<Result<Vec<_>>>()?;
        let (traces, left_out) = files::leave_out_stale_segments(path, &paths, traces);
        let mut merged = files::merge(traces).context("a run without trace files")?;
        merged.path = path.to_owned();
        merged.warnings.extend(left_out);
        Ok(merged)
    }

    /// Loads one trace file; `functions` overrides the function table the trace names.
    pub fn load_file(path: &Path, functions: Option<&Path>) -> Result<Trace> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read trace {}", path.display()))?;
        let mut trace = parse_bytes(&bytes).with_context(|| format!("{} is not a calltime trace", path.display()))?;
        trace.path = path.to_owned();
        quiet::estimate_quiet_calls(&mut trace);
        let table_path = match functions {
            Some(p) => Some(p.to_owned()),
            None => trace.table_path_hint(path),
        };
        match table_path {
            Some(p) if p.exists() => trace.table = FunctionTable::load(&p)?,
            Some(p) => trace.warnings.push(format!(
                "function table {} not found: functions are shown by index (pass --functions FILE)",
                p.display()
            )),
            None => trace
                .warnings
                .push("the trace names no function table: functions are shown by index (pass --functions FILE)".into()),
        }
        if let (Some(id), false) = (&trace.plan_id, trace.table.plan_id.is_empty()) {
            if *id != trace.table.plan_id {
                trace.warnings.push(format!(
                    "function table is for plan {} but the trace was recorded with plan {id}: names may be wrong",
                    trace.table.plan_id
                ));
            }
        }
        Ok(trace)
    }

    /// Where the function table should be: `<trace>.functions.json` beside the trace wins over the path in the
    /// `plan` line, so a saved trace and its table travel together.
    fn table_path_hint(&self, trace_path: &Path) -> Option<PathBuf> {
        let beside = functions_path_for(trace_path);
        if beside.exists() {
            return Some(beside);
        }
        self.table_hint.clone()
    }
}

/// The conventional place of a trace's function table: `<trace file name>.functions.json` beside it.
pub fn functions_path_for(trace_path: &Path) -> PathBuf {
    let mut name = trace_path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".functions.json");
    trace_path.with_file_name(name)
}

/// `timed_ns * calls / timed`, rounded to the nearest ns (0 when nothing was timed); exact when `timed == calls`.
pub fn estimated_total(timed_ns: u64, timed: u64, calls: u64) -> u64 {
    if timed == 0 {
        return 0;
    }
    let (timed_ns, timed, calls) = (u128::from(timed_ns), u128::from(timed), u128::from(calls));
    u64::try_from((timed_ns * calls + timed / 2) / timed).unwrap_or(u64::MAX)
}

/// The unbiased estimated total of a call path's calls (docs/trace-format.md, version 3): the exact part as
/// measured, plus the other calls scaled from the random samples among them; with no sample, the exact calls
/// scaled to every call (an estimate biased towards the first calls); 0 when nothing was timed. With no exact
/// part (version 2) this is [`estimated_total`].
pub fn unbiased_total(calls: u64, timed: u64, timed_ns: u64, exact_calls: u64, exact_ns: u64) -> u64 {
    if timed > exact_calls {
        let sampled_ns = timed_ns.saturating_sub(exact_ns);
        let others = calls.saturating_sub(exact_calls);
        exact_ns.saturating_add(estimated_total(sampled_ns, timed - exact_calls, others))
    } else if exact_calls > 0 {
        estimated_total(exact_ns, exact_calls, calls)
    } else {
        0
    }
}

/// The error for a file that is not a trace this tool can read, with the hint that says what to pass instead.
fn not_a_trace(message: impl Into<String>) -> anyhow::Error {
    UserError::new(message)
        .hint(
            "pass a trace written by cargo calltime (`--save FILE`, `<target>/calltime/last.trace`) or by an \
             instrumented binary (CALLTIME_OUT)",
        )
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_running_process_is_told_from_a_finished_one() {
        assert!(process_exists(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().expect("`true` runs");
        let pid = child.id();
        child.wait().expect("`true` exits");
        // Reaped: the pid names no process until it is recycled, which the kernel does not do at once.
        assert!(!process_exists(pid));
        let trace = Trace { pid: std::process::id(), ..Trace::default() };
        assert!(trace.process_is_running());
        assert!(!Trace::default().process_is_running(), "pid 0 is no process");
    }
}

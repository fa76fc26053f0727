//! What the store keeps of one run, and how it is taken from a trace: the aggregate of
//! [`crate::views::aggregate`], flattened to one row per call path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::trace::Trace;
use crate::views::aggregate::{aggregate, callers_of_retired, Aggregate, Merged};
use crate::views::unique_paths;

/// How the run entered the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Recorded by `cargo calltime`.
    Run,
    /// A trace recorded elsewhere, added with `cargo calltime report --import`.
    Import,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Import => "import",
        }
    }

    pub fn parse(text: &str) -> Source {
        if text == "import" {
            Source::Import
        } else {
            Source::Run
        }
    }
}

/// The commit and branch of the workspace, when it is a git checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitInfo {
    pub commit: Option<String>,
    pub branch: Option<String>,
}

impl GitInfo {
    /// Asks git about `dir`; anything git cannot answer (not a repository, no git, a detached head) stays `None`.
    pub fn detect(dir: &Path) -> GitInfo {
        let ask = |args: &[&str]| -> Option<String> {
            let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
            let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
            (out.status.success() && !text.is_empty()).then_some(text)
        };
        GitInfo { commit: ask(&["rev-parse", "HEAD"]), branch: ask(&["symbolic-ref", "--short", "-q", "HEAD"]) }
    }
}

/// `host (linux-x86_64, 2 cpus, CPU model)`: enough to tell runs of different machines apart.
pub fn machine_description() -> String {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let host = read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = read("/proc/cpuinfo").and_then(|info| {
        info.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
    });
    let os = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
    match model {
        Some(model) => format!("{host} ({os}, {cpus} cpus, {model})"),
        None => format!("{host} ({os}, {cpus} cpus)"),
    }
}

/// One root function's summary over a run's invocations of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RootStat {
    pub root: String,
    pub invocations: u64,
    pub mean_ns: u64,
    /// `None` when some calls were recorded folded (no per-call durations).
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// Calls of instrumented functions (the root included) per invocation of the root.
    pub calls_per_invocation: f64,
}

/// One call path of a run's aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct PathRow {
    /// Function paths from the root, joined by `;` (a `;` inside a path becomes `:`, as in folded stacks).
    pub path: String,
    /// Every call at the path, those made after the function's probe retired included (as in the views).
    pub calls: u64,
    pub total_ns: u64,
    pub self_ns: u64,
    pub invocations: u64,
    pub mean_ns: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
}

/// Everything the store keeps of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// When the trace was recorded (its wall-clock origin), ms since the Unix epoch.
    pub recorded_ms: i64,
    /// When the run entered the store.
    pub stored_ms: i64,
    pub label: Option<String>,
    pub git: GitInfo,
    pub source: Source,
    pub roots: Vec<String>,
    pub depth: u32,
    pub filter: Option<String>,
    pub settings: BTreeMap<String, u64>,
    pub machine: String,
    pub trace_path: Option<PathBuf>,
    pub invocations: u64,
    pub seen: u64,
    pub dropped: u64,
    pub truncated: u64,
    pub incomplete: u64,
    /// Filled by [`RunRecord::from_trace`] and by store queries.
    pub root_stats: Vec<RootStat>,
    /// Filled by [`RunRecord::from_trace`]; queries leave it empty (see `Store::path_stats`).
    pub path_stats: Vec<PathRow>,
}

impl RunRecord {
    /// The record of `trace`, with no label, no git information, source `Run` and this machine; the caller sets
    /// what it knows. Walks the trees recursively: call it on a big stack (`views::with_big_stack`).
    pub fn from_trace(trace: &Trace) -> RunRecord {
        let mut aggregates = aggregate(&trace.invocations);
        // Calls made after a probe retired count at their call paths, as in the views: a run's calls per invocation
        // must not drop because a function retired earlier in it.
        let callers = callers_of_retired(trace);
        for agg in &mut aggregates {
            let retired = std::mem::take(&mut agg.retired);
            agg.tree.place_retired(&retired, &callers);
            agg.tree.estimate_retired_times(&trace.retirements);
            agg.retired = retired;
        }
        // Call paths and roots are keys in the store: two functions sharing a path must not share a key.
        let keys = Keys(unique_paths(&trace.table));
        let mut path_stats = Vec::new();
        for agg in &aggregates {
            flatten(&keys, &agg.tree, &mut String::new(), &mut path_stats);
        }
        let root_stats = aggregates.iter().map(|agg| root_stat(&keys, agg)).collect();
        let mut roots: Vec<String> = trace.table.functions.iter().filter(|f| f.root).map(|f| f.path.clone()).collect();
        if roots.is_empty() {
            roots = trace.table.roots.clone();
        }
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        RunRecord {
            recorded_ms: (trace.epoch_unix_ns / 1_000_000) as i64,
            stored_ms: now_ms,
            label: None,
            git: GitInfo::default(),
            source: Source::Run,
            roots,
            depth: trace.table.depth,
            filter: trace.table.filter.clone(),
            settings: trace.settings.clone(),
            machine: machine_description(),
            trace_path: None,
            invocations: trace.invocations.len() as u64,
            seen: trace.stats.seen,
            dropped: trace.stats.dropped,
            truncated: trace.stats.truncated,
            incomplete: trace.stats.incomplete,
            root_stats,
            path_stats,
        }
    }
}

/// Each function's key in the store ([`unique_paths`]).
struct Keys(Vec<String>);

impl Keys {
    fn get(&self, func: u32) -> String {
        self.0.get(func as usize).cloned().unwrap_or_else(|| format!("#{func}"))
    }
}

fn root_stat(keys: &Keys, agg: &Aggregate) -> RootStat {
    fn calls(node: &Merged) -> u64 {
        node.all_calls() + node.children.iter().map(calls).sum::<u64>()
    }
    RootStat {
        root: keys.get(agg.tree.func),
        invocations: agg.invocations,
        mean_ns: agg.tree.mean_ns(),
        p50_ns: agg.tree.percentile_ns(0.5),
        p99_ns: agg.tree.percentile_ns(0.99),
        calls_per_invocation: calls(&agg.tree) as f64 / agg.invocations.max(1) as f64,
    }
}

fn flatten(keys: &Keys, node: &Merged, prefix: &mut String, out: &mut Vec<PathRow>) {
    let len = prefix.len();
    if !prefix.is_empty() {
        prefix.push(';');
    }
    prefix.push_str(&keys.get(node.func).replace(';', ":"));
    out.push(PathRow {
        path: prefix.clone(),
        calls: node.all_calls(),
        total_ns: node.total_ns,
        self_ns: node.self_ns,
        invocations: node.invocations,
        mean_ns: node.mean_ns(),
        p50_ns: node.percentile_ns(0.5),
        p99_ns: node.percentile_ns(0.99),
    });
    for child in &node.children {
        flatten(keys, child, prefix, out);
    }
    prefix.truncate(len);
}

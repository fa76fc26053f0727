//! The JSON view: a versioned schema (docs/json.md) with every invocation's merged tree and the aggregate.

use std::collections::BTreeMap;

use serde::Serialize;

use super::aggregate::{aggregate, callers_of_retired, select, Aggregate, Callers, Merged};
use super::{root_paths, ViewOptions};
use crate::trace::{Calibration, ControlChange, Node, RetiredCalls, Spawned, Stats, ThreadRef, Times, Trace};

/// Bumped on any change that can break a reader; fields may be added without a bump. 2: `p50_ns` and `p99_ns`
/// may be null (call paths recorded folded have no per-call durations). 3: a node's `calls` counts the calls made
/// after its function's probe retired too (`retired_calls` of them).
pub const JSON_VERSION: u32 = 3;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    /// The first root function's path ("" when the function table is missing).
    root: String,
    /// Every root function's path.
    roots: Vec<String>,
    depth: u32,
    filter: Option<&'a str>,
    plan_id: Option<&'a str>,
    pid: u32,
    exe: &'a str,
    epoch_unix_ns: u64,
    /// The runtime's settings (trace format 2); empty for older traces.
    settings: &'a BTreeMap<String, u64>,
    /// Times are compensated for the probes' own cost (`calibration`); false: raw (`--raw-times`, or a trace
    /// without calibration).
    compensated: bool,
    /// The probe costs the runtime measured (trace format 3), in picoseconds; null for older traces.
    calibration: Option<Calibration>,
    /// Functions whose probes retired during the run.
    retired: Vec<JsonRetirement>,
    invocations: Vec<JsonInvocation<'a>>,
    aggregate: Vec<JsonAggregate>,
    /// The runtime's whole-run aggregate (every invocation while recording was on, kept as a tree or not); null for
    /// traces without one.
    whole_run: Option<JsonWholeRun>,
    /// One row per function, as `--format table` shows them (sorted by `--sort`).
    functions: Vec<super::table::Row>,
    /// `--slower-than`: the invocations kept, of how many; null without it.
    slower_than: Option<super::SlowerThan>,
    /// Settings `cargo calltime ctl` switched while the program ran, in order, with when (ns since the epoch).
    controls: &'a [ControlChange],
    /// Roots whose invocations were sampled for cost: how many were not recorded, and their roots' timed share
    /// (left out when none was).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    sampled: &'a [crate::trace::SampledRoot],
    stats: Stats,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct JsonInvocation<'a> {
    /// 1-based, in completion order (what `--invocation K` takes).
    index: usize,
    seq: u64,
    thread: &'a ThreadRef,
    start_ns: u64,
    duration_ns: u64,
    truncated_calls: u64,
    filtered_nodes: u64,
    /// Recorded folded: one node per call path, exact call counts, times possibly estimated.
    folded: bool,
    tree: JsonNode,
    /// Calls of retired functions during this invocation after they retired: not timed, not in the tree.
    retired: Vec<JsonRetiredCalls>,
    /// Work spawned inside the invocation that ran on other threads or tasks (its calls are in the tree, with
    /// their `lane`); absent when there was none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    spawned: &'a [Spawned],
}

#[derive(Serialize)]
struct JsonRetirement {
    index: u32,
    path: String,
    display: String,
    /// When it retired (ns since the trace epoch).
    at_ns: u64,
    /// When it went quiet (its later calls estimated, not counted); absent while they were counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    quiet_at_ns: Option<u64>,
    /// Calls observed before it retired, and their compensated mean.
    calls: u64,
    mean_ns: u64,
}

#[derive(Serialize)]
struct JsonRetiredCalls {
    index: u32,
    path: String,
    calls: u64,
    /// The count is an estimate (the function had gone quiet: its calls were no longer counted); absent when
    /// counted exactly.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
    /// The calls are in the tree too, at the function's call paths (`retired_calls`): false when neither it nor a
    /// caller of it has a node there.
    in_tree: bool,
    /// In an aggregate: calls per invocation of its root.
    #[serde(skip_serializing_if = "Option::is_none")]
    calls_per_invocation: Option<f64>,
}

/// Which function a node is: the fields every node kind starts with.
#[derive(Serialize)]
struct JsonFunction {
    path: String,
    display: String,
    file: String,
    line: u32,
}

/// A node's times, in both node kinds.
#[derive(Serialize)]
struct JsonTimes {
    timed_calls: u64,
    /// `total_ns`, `self_ns` and the mean are estimates (`timed_calls < calls`).
    estimated: bool,
    total_ns: u64,
    self_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

fn times(m: &Merged) -> JsonTimes {
    JsonTimes {
        timed_calls: m.timed_calls,
        estimated: m.is_estimated(),
        total_ns: m.total_ns,
        self_ns: m.self_ns,
        min_ns: m.min_ns,
        max_ns: m.max_ns,
    }
}

/// A node's allocations, exact, when the trace counted them (absent otherwise): of the subtree and of the node
/// alone (made while it was the innermost recorded call).
#[derive(Serialize)]
struct JsonAllocs {
    allocs: u64,
    alloc_bytes: u64,
    self_allocs: u64,
    self_alloc_bytes: u64,
}

fn allocs(trace: &Trace, m: &Merged) -> Option<JsonAllocs> {
    trace.counts_allocs().then_some(JsonAllocs {
        allocs: m.allocs,
        alloc_bytes: m.alloc_bytes,
        self_allocs: m.self_allocs,
        self_alloc_bytes: m.self_alloc_bytes,
    })
}

#[derive(Serialize)]
struct JsonNode {
    #[serde(flatten)]
    function: JsonFunction,
    /// Every call at this path: recorded, and made after the function's probe retired (`retired_calls`).
    calls: u64,
    #[serde(flatten)]
    retired: JsonRetiredAt,
    #[serde(flatten)]
    times: JsonTimes,
    /// Calls left by unwinding.
    panicked: u64,
    #[serde(flatten)]
    outcomes: JsonOutcomes,
    start_ns: u64,
    #[serde(flatten)]
    allocs: Option<JsonAllocs>,
    /// Calls made by spawned work: the thread or task they ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<ThreadRef>,
    /// Spawned work still running when the invocation was written.
    #[serde(skip_serializing_if = "is_zero")]
    outlived: u64,
    children: Vec<JsonNode>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct JsonAggregate {
    invocations: u64,
    tree: JsonAggregateNode,
    /// Calls of retired functions after they retired, over these invocations.
    retired: Vec<JsonRetiredCalls>,
}

/// The runtime's `aggregate` record: what `--format aggregate` and `--follow` show.
#[derive(Serialize)]
struct JsonWholeRun {
    /// When the runtime wrote it (ns since the trace epoch; the latest of a merged run's processes).
    at_ns: u64,
    /// Root invocations folded in, kept as trees or not.
    invocations: u64,
    /// Of those, kept as trees in this trace (`invocations` of the document).
    kept: u64,
    /// Processes whose aggregates are summed (1 for one process).
    processes: u64,
    /// Calls on call paths past the runtime's path cap: counted, in no path.
    untracked_calls: u64,
    /// Trees dropped by the hourly byte cap (their calls are in `aggregate`).
    dropped_cap: u64,
    /// Always false: the runtime aggregates raw times (the probes' cost included).
    compensated: bool,
    /// One tree per root function, as `aggregate` above but over the whole run.
    aggregate: Vec<JsonAggregate>,
}

fn whole_run(trace: &Trace) -> Option<JsonWholeRun> {
    let run = trace.aggregate.as_ref()?;
    let aggregates = super::aggregate::whole_run(trace)?;
    Some(JsonWholeRun {
        at_ns: run.at_ns,
        invocations: run.invocations,
        kept: trace.invocations.len() as u64,
        processes: run.processes.max(1),
        untracked_calls: run.untracked_calls,
        dropped_cap: run.dropped_cap,
        compensated: false,
        aggregate: {
            let callers = callers_of_retired(trace);
            aggregates.iter().map(|agg| json_aggregate(trace, agg, &callers, true)).collect()
        },
    })
}

/// `whole_run`: the runtime's whole-run aggregate, which counts no allocations (its nodes get no `allocs`).
fn json_aggregate(trace: &Trace, agg: &Aggregate, callers: &Callers, whole_run: bool) -> JsonAggregate {
    let mut tree = agg.tree.clone();
    let unplaced = tree.place_retired(&agg.retired, callers);
    tree.estimate_retired_times(&trace.retirements);
    JsonAggregate {
        invocations: agg.invocations,
        tree: aggregate_node(trace, agg, &tree, whole_run),
        retired: retired_calls(trace, &agg.retired, &unplaced, Some(agg.invocations)),
    }
}

#[derive(Serialize)]
struct JsonAggregateNode {
    #[serde(flatten)]
    function: JsonFunction,
    /// Every call at this path, as in a tree node.
    calls: u64,
    #[serde(flatten)]
    retired: JsonRetiredAt,
    /// Invocations in which this call path occurs.
    invocations: u64,
    /// Where the path's calls went on after its function retired (counted, not timed): the invocations whose
    /// recorded calls give its times (`mean_ns` and the rest), fewer than the aggregate's (a process's first
    /// invocation is recorded in full). Absent elsewhere, and in the runtime's whole-run aggregate (not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    timed_invocations: Option<u64>,
    calls_per_invocation: f64,
    #[serde(flatten)]
    times: JsonTimes,
    mean_ns: u64,
    /// None where calls were recorded folded.
    p50_ns: Option<u64>,
    p99_ns: Option<u64>,
    panicked: u64,
    #[serde(flatten)]
    outcomes: JsonOutcomes,
    /// Over all its invocations (divide by `invocations` of the aggregate for a mean).
    #[serde(flatten)]
    allocs: Option<JsonAllocs>,
    /// Calls made by spawned work: where they ran (`kind` only: thread numbers mean nothing across invocations);
    /// absent for the spawner's own calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<ThreadRef>,
    children: Vec<JsonAggregateNode>,
}

/// Calls of a node made after its function's probe retired (not timed), in both node kinds; absent when none.
#[derive(Serialize)]
struct JsonRetiredAt {
    #[serde(skip_serializing_if = "is_zero")]
    retired_calls: u64,
    /// `retired_calls` is an estimate (the function went quiet, or its calls were shared among call paths).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    retired_estimated: bool,
    /// `retired_calls` are a recursive function's calls at every depth under this caller (the tree recorded none).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    retired_all_depths: bool,
}

fn retired_at(m: &Merged) -> JsonRetiredAt {
    JsonRetiredAt {
        retired_calls: m.retired_calls,
        retired_estimated: m.retired_estimated,
        retired_all_depths: m.retired_all_depths,
    }
}

/// Cancelled calls, `Err` returns and concurrent children, in both node kinds.
#[derive(Serialize)]
struct JsonOutcomes {
    /// Calls that never finished: async functions dropped before completing, calls open when the invocation ended
    /// (a lower bound where calls were recorded folded).
    cancelled: u64,
    /// Calls that returned an `Err` (functions returning a `*Result`; exact).
    errs: u64,
    /// How much longer the children's durations add up to than the time they covered: they ran concurrently.
    children_overlap_ns: u64,
}

fn outcomes(m: &Merged) -> JsonOutcomes {
    JsonOutcomes { cancelled: m.cancelled, errs: m.errs, children_overlap_ns: m.children_overlap_ns }
}

pub fn render(trace: &Trace, opts: &ViewOptions, slower: Option<super::SlowerThan>) -> anyhow::Result<String> {
    let selected = select(trace, opts.invocation)?;
    let roots = root_paths(trace);
    let callers = callers_of_retired(trace);
    let doc = Document {
        version: JSON_VERSION,
        root: roots.first().cloned().unwrap_or_default(),
        roots,
        depth: trace.table.depth,
        filter: trace.table.filter.as_deref(),
        plan_id: trace.plan_id.as_deref(),
        pid: trace.pid,
        exe: &trace.exe,
        epoch_unix_ns: trace.epoch_unix_ns,
        settings: &trace.settings,
        compensated: trace.times == Times::Compensated,
        calibration: trace.calibration,
        retired: trace
            .retirements
            .iter()
            .map(|r| {
                let JsonFunction { path, display, .. } = describe(trace, r.func);
                let quiet_at_ns = trace.quiet.iter().find(|q| q.func == r.func).map(|q| q.at_ns);
                let (at_ns, calls, mean_ns) = (r.at_ns, r.calls, r.mean_ns);
                JsonRetirement { index: r.func, path, display, at_ns, quiet_at_ns, calls, mean_ns }
            })
            .collect(),
        invocations: selected
            .iter()
            .map(|&(index, inv)| {
                let mut tree = Merged::of_invocation(inv);
                let unplaced = tree.place_retired(&inv.retired, &callers);
                tree.estimate_retired_times(&trace.retirements);
                JsonInvocation {
                    index,
                    seq: inv.seq,
                    thread: &inv.thread,
                    start_ns: inv.start_ns,
                    duration_ns: inv.duration_ns,
                    truncated_calls: inv.truncated_calls,
                    filtered_nodes: inv.filtered_nodes,
                    folded: inv.folded,
                    tree: node(trace, &tree),
                    retired: retired_calls(trace, &inv.retired, &unplaced, None),
                    spawned: &inv.spawned,
                }
            })
            .collect(),
        aggregate: aggregate(selected.iter().map(|(_, inv)| *inv))
            .iter()
            .map(|agg| json_aggregate(trace, agg, &callers, false))
            .collect(),
        whole_run: whole_run(trace),
        functions: super::table::rows(trace, opts)?,
        slower_than: slower,
        controls: &trace.controls,
        sampled: &trace.sampled,
        stats: trace.stats,
        warnings: &trace.warnings,
    };
    // Indentation grows with depth, so a deeply recursive tree pretty-printed would be quadratic in its depth.
    let deepest = selected.iter().map(|(_, inv)| depth(&inv.root)).max().unwrap_or(0);
    let mut text =
        if deepest <= MAX_PRETTY_DEPTH { serde_json::to_string_pretty(&doc)? } else { serde_json::to_string(&doc)? };
    text.push('\n');
    Ok(text)
}

/// Trees deeper than this are written without indentation.
const MAX_PRETTY_DEPTH: usize = 64;

fn depth(node: &Node) -> usize {
    1 + node.children.iter().map(depth).max().unwrap_or(0)
}

/// (path, display, file, line) of a function, `#index` when the table does not name it.
fn describe(trace: &Trace, func: u32) -> JsonFunction {
    match trace.table.get(func) {
        Some(f) => {
            JsonFunction { path: f.path.clone(), display: f.display.clone(), file: f.file.clone(), line: f.line }
        }
        None => JsonFunction { path: format!("#{func}"), display: format!("#{func}"), file: String::new(), line: 0 },
    }
}

fn retired_calls(
    trace: &Trace,
    retired: &[RetiredCalls],
    unplaced: &[RetiredCalls],
    invocations: Option<u64>,
) -> Vec<JsonRetiredCalls> {
    retired
        .iter()
        .map(|r| JsonRetiredCalls {
            index: r.func,
            path: describe(trace, r.func).path,
            calls: r.calls,
            estimated: r.estimated,
            in_tree: !unplaced.iter().any(|u| u.func == r.func),
            calls_per_invocation: invocations.map(|n| r.calls as f64 / n.max(1) as f64),
        })
        .collect()
}

fn node(trace: &Trace, m: &Merged) -> JsonNode {
    JsonNode {
        function: describe(trace, m.func),
        calls: m.all_calls(),
        retired: retired_at(m),
        times: times(m),
        panicked: m.panicked,
        outcomes: outcomes(m),
        start_ns: m.start_ns,
        allocs: allocs(trace, m),
        lane: m.lane.clone(),
        outlived: m.outlived,
        children: m.children.iter().map(|c| node(trace, c)).collect(),
    }
}

fn aggregate_node(trace: &Trace, agg: &Aggregate, m: &Merged, whole_run: bool) -> JsonAggregateNode {
    JsonAggregateNode {
        function: describe(trace, m.func),
        calls: m.all_calls(),
        retired: retired_at(m),
        invocations: m.invocations,
        timed_invocations: match m.calls {
            _ if whole_run || m.retired_calls == 0 => None,
            0 => Some(0),
            _ => Some(m.invocations).filter(|&n| n < agg.invocations),
        },
        calls_per_invocation: m.all_calls() as f64 / agg.invocations.max(1) as f64,
        times: times(m),
        mean_ns: m.mean_ns(),
        p50_ns: m.percentile_ns(0.5),
        p99_ns: m.percentile_ns(0.99),
        panicked: m.panicked,
        outcomes: outcomes(m),
        allocs: if whole_run { None } else { allocs(trace, m) },
        lane: m.lane.clone(),
        children: m.children.iter().map(|c| aggregate_node(trace, agg, c, whole_run)).collect(),
    }
}

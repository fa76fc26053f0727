//! Stage 10: call-path diffs of two sets of runs (`cargo calltime diff BASE HEAD`).
//!
//! Each side is one trace file or a directory of traces from repeated runs of the same command. Calls are matched
//! by call path from the root, spelled with the function paths of each trace's own function table, so base and head
//! may come from different plans. Call counts are compared exactly (they have no noise); times go through dirty-run
//! removal and a statistical test ([`stats`]) before a path is called regressed or improved. docs/ci.md explains
//! the method, the JSON format and the exit codes.

mod markdown;
pub mod stats;
mod svg;
mod text;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{hints_of, UserError};
use crate::trace::{ThreadKind, Trace};
use crate::units::format_calls;
use stats::Bootstrap;

/// Version of the JSON diff format (docs/ci.md); bumped on any incompatible change.
pub const DIFF_JSON_VERSION: u32 = 2;
/// Significance level of the Mann-Whitney test.
pub const ALPHA: f64 = 0.01;
/// Exit status when `--fail-above` trips (1 is taken by errors).
pub const EXIT_REGRESSION: i32 = 2;
/// A run is dirty when its median root time is farther than this many scaled MADs from the median of the runs...
pub const OUTLIER_MADS: f64 = 3.0;
/// ...and farther than this fraction of it.
pub const OUTLIER_MIN_RELATIVE: f64 = 0.05;
/// Fewer invocations than this on either side and a path's times are not tested.
pub const MIN_SAMPLES: usize = 8;
/// The smallest move of a path's median self time that can be a regression or an improvement, whatever its
/// percentage: the probes' compensation leaves a few nanoseconds of error per call (semver's paths of 1-2 ns a call
/// came out `-100.0%, 1ns -> 0ns` between two runs of one binary).
pub const MIN_CHANGE_NS: f64 = 5.0;
/// GitHub's limit on a comment body, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;
/// Room the Markdown report leaves under that limit for what a workflow appends (a link to the run's artifacts).
pub const COMMENT_HEADROOM: usize = 1_000;
/// Separator of the functions of a call path in every format but the flamegraph.
pub const PATH_SEPARATOR: &str = " -> ";

/// The formats a diff renders to (`--format`; their help is in cli.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Text,
    Json,
    Markdown,
    Svg,
}

/// Renders a comparison; `color` is for the text format on a terminal.
pub fn render(report: &Report, format: DiffFormat, color: bool) -> Result<Vec<u8>> {
    Ok(match format {
        DiffFormat::Text => text::render(report, color).into_bytes(),
        DiffFormat::Json => {
            let mut json = serde_json::to_string_pretty(report).context("cannot serialise the diff")?;
            json.push('\n');
            json.into_bytes()
        }
        DiffFormat::Markdown => markdown::render(report, GITHUB_COMMENT_LIMIT - COMMENT_HEADROOM).into_bytes(),
        DiffFormat::Svg => svg::render(report)?,
    })
}

/// The warning when `--fail-above` trips, or None.
pub fn fail_above_warning(report: &Report, settings: &Settings) -> Option<String> {
    let over = &report.summary.over_fail_above;
    if over.is_empty() {
        return None;
    }
    Some(format!(
        "{} call path(s) regressed by more than {}: {}",
        over.len(),
        format_pct_plain(settings.fail_above_pct.unwrap_or_default()),
        over.join(", ")
    ))
}

/// How the comparison decides.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub threshold_pct: f64,
    pub alpha: f64,
    pub fail_above_pct: Option<f64>,
    pub bootstrap: Bootstrap,
}

/// Call path as function paths from the root: the key that matches base and head.
type PathKey = Vec<String>;

/// What one side recorded for one call path, over the invocations of the runs kept.
#[derive(Debug, Clone, Default)]
struct PathSamples {
    /// Display names, root first.
    display: Vec<String>,
    calls: u64,
    /// The sum over invocations of each one's calls squared (with `calls`, the spread of calls per invocation: a
    /// side that recorded a random sample of its invocations compares by it).
    calls_sq: u128,
    /// Calls that returned an `Err`, and calls cancelled, over the side's invocations.
    errs: u64,
    cancelled: u64,
    errs_sq: u128,
    cancelled_sq: u128,
    self_ns_sum: u128,
    /// Self allocations and bytes over the side's invocations (exact).
    self_allocs: u64,
    self_alloc_bytes: u64,
    self_allocs_sq: u128,
    self_alloc_bytes_sq: u128,
    /// Per invocation in which the path ran: its total time, and its self time.
    total_ns: Vec<f64>,
    self_ns: Vec<f64>,
    /// Where each run's samples start in `total_ns`: the bootstrap resamples runs, then invocations within them.
    run_starts: Vec<usize>,
    last_run: Option<usize>,
    /// The path's last call ran as spawned work on another thread or task in some invocation: its frame is shown
    /// `name [thread]` / `name [task]` (the key stays the function path, so work a pool ran inline in one run and
    /// on another thread in the next still matches).
    spawned: Option<ThreadKind>,
}

impl PathSamples {
    /// Self-time samples grouped by run (the bootstrap resamples runs, then invocations within them).
    fn self_by_run(&self) -> Vec<&[f64]> {
        let mut ends = self.run_starts.iter().skip(1).copied().chain([self.self_ns.len()]);
        self.run_starts.iter().map(|&start| &self.self_ns[start..ends.next().unwrap_or(start)]).collect()
    }
}

/// One run (trace file) of a side.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub file: String,
    pub invocations: usize,
    /// Median duration of the root over the run's invocations.
    pub median_root_ns: Option<f64>,
    /// Why the run was left out (dirty data), if it was.
    pub dropped: Option<String>,
}

/// One side of the diff, loaded.
pub struct Side {
    pub label: String,
    pub input: PathBuf,
    pub runs: Vec<RunInfo>,
    /// Invocations analysed (kept runs, complete trees).
    pub invocations: u64,
    /// Invocations of kept runs left out because their tree hit the node cap (their call counts are not exact).
    pub truncated_invocations: u64,
    /// Invocations whose trees lost nodes shorter than CALLTIME_MIN_NS (counts under them are low).
    pub filtered_invocations: u64,
    paths: HashMap<PathKey, PathSamples>,
    /// Functions (paths) whose probes retired in a kept run: their calls per call path depend on when they
    /// retired, so only their total calls compare.
    retired: HashSet<String>,
    /// Of those, the ones whose later calls were estimated (they went quiet: docs/trace-format.md).
    estimated: HashSet<String>,
    /// Every call of each function over the analysed invocations: in the trees, plus retired calls (`r` lines).
    function_calls: HashMap<String, u64>,
    /// Their sum of squares per invocation, as [`PathSamples::calls_sq`].
    function_calls_sq: HashMap<String, u128>,
    /// A kept run recorded a random sample of its invocations (sampled for cost, or `CALLTIME_SAMPLE`): counts per
    /// invocation over the recorded ones differ between two runs by chance, so they compare statistically.
    pub sampled: bool,
    /// Every kept run counted allocations: only then do they compare.
    counts_allocs: bool,
    pub warnings: Vec<String>,
    /// What each kept run recorded (`root (depth 5, filter ^x::)`), once each: a diff of different plans compares
    /// paths one side never probed.
    pub plans: Vec<String>,
}

impl Side {
    /// Loads a trace file or every `*.trace` file of a directory, drops dirty runs and gathers per-path samples;
    /// times compensated for probe cost where the traces have a calibration.
    pub fn load(input: &Path, label: &str) -> Result<Side> {
        Side::load_with(input, label, false)
    }

    /// [`Side::load`], with raw times when `raw_times` (`--raw-times`).
    pub fn load_with(input: &Path, label: &str, raw_times: bool) -> Result<Side> {
        Side::load_files(input, &trace_files(input)?, label, raw_times)
    }

    /// [`Side::load_with`] of the given trace files (stored runs: `@label:L`); `input` names the side in messages.
    pub fn load_files(input: &Path, files: &[PathBuf], label: &str, raw_times: bool) -> Result<Side> {
        // Parsing dominates on big traces: one file per thread.
        let loaded: Vec<Result<Trace>> = files
            .par_iter()
            .map(|file| Trace::load(file, None).map(|trace| crate::views::times::prepare(trace, raw_times)))
            .collect();
        let mut warnings = Vec::new();
        let mut traces = Vec::with_capacity(files.len());
        for (file, trace) in files.iter().zip(loaded) {
            let trace = trace.map_err(|e| {
                if !hints_of(&e).is_empty() {
                    return e;
                }
                UserError::new(format!("{e:#}"))
                    .hint(
                        "pass traces written by `cargo calltime --save FILE` (or CALLTIME_OUT), with their \
                         `.functions.json` table beside them",
                    )
                    .into()
            })?;
            let name = run_name(input, file);
            // `diff` has no --functions flag: the table travels beside each trace.
            warnings.extend(trace.warnings.iter().map(|w| {
                let w = w.replace("(pass --functions FILE)", "(keep `<trace>.functions.json` beside the trace)");
                format!("{label} {name}: {w}")
            }));
            traces.push((name, trace));
        }
        let mut runs: Vec<RunInfo> = traces
            .iter()
            .map(|(name, trace)| {
                let mut roots: Vec<f64> = trace.invocations.iter().map(|i| i.duration_ns as f64).collect();
                let median_root_ns = stats::median(&mut roots);
                RunInfo {
                    file: name.clone(),
                    invocations: trace.invocations.len(),
                    median_root_ns,
                    dropped: median_root_ns.is_none().then(|| "no complete invocations".to_owned()),
                }
            })
            .collect();
        mark_dirty_runs(&mut runs);
        let mut side = Side {
            label: label.to_owned(),
            input: input.to_owned(),
            runs,
            invocations: 0,
            truncated_invocations: 0,
            filtered_invocations: 0,
            paths: HashMap::new(),
            retired: HashSet::new(),
            estimated: HashSet::new(),
            function_calls: HashMap::new(),
            function_calls_sq: HashMap::new(),
            sampled: false,
            counts_allocs: true,
            warnings,
            plans: Vec::new(),
        };
        let kept: Vec<bool> = side.runs.iter().map(|r| r.dropped.is_none()).collect();
        for (run, ((_, trace), keep)) in traces.iter().zip(kept).enumerate() {
            if keep {
                side.add_trace(trace, run);
                let plan = crate::views::plan_summary(trace);
                if !side.plans.contains(&plan) {
                    side.plans.push(plan);
                }
            }
        }
        if side.invocations == 0 {
            return Err(UserError::new(format!(
                "{} ({label}) has no complete root invocations to compare",
                input.display()
            ))
            .hint("check that the recorded command calls the root function and returns normally")
            .into());
        }
        if side.truncated_invocations > 0 {
            side.warnings.push(format!(
                "{label}: {} invocation(s) hit the node cap and are left out (raise CALLTIME_NODE_CAP)",
                side.truncated_invocations
            ));
        }
        if side.filtered_invocations > 0 {
            side.warnings.push(format!(
                "{label}: {} invocation(s) lost nodes to CALLTIME_MIN_NS: their call counts are low",
                side.filtered_invocations
            ));
        }
        Ok(side)
    }

    fn add_trace(&mut self, trace: &Trace, run: usize) {
        self.counts_allocs &= trace.counts_allocs();
        self.sampled |= trace.stats.sampled_for_cost > 0 || trace.stats.sampled_out > 0;
        // Index paths repeat across invocations: name each one once.
        let mut names: HashMap<Vec<u32>, PathKey> = HashMap::new();
        self.retired.extend(trace.retirements.iter().map(|r| trace.table.path(r.func)));
        for invocation in &trace.invocations {
            if invocation.truncated_calls > 0 {
                self.truncated_invocations += 1;
                continue;
            }
            if invocation.filtered_nodes > 0 {
                self.filtered_invocations += 1;
            }
            self.invocations += 1;
            // Each function's calls in this invocation, for the sums of squares.
            let mut function_calls: HashMap<String, u64> = HashMap::new();
            for retired in &invocation.retired {
                let path = trace.table.path(retired.func);
                *function_calls.entry(path.clone()).or_default() += retired.calls;
                if retired.estimated {
                    self.estimated.insert(path.clone());
                }
                self.retired.insert(path);
            }
            for (indices, stat) in invocation.path_stats() {
                let key = names
                    .entry(indices.clone())
                    .or_insert_with(|| indices.iter().map(|&i| trace.table.path(i)).collect())
                    .clone();
                let samples = self.paths.entry(key).or_insert_with(|| PathSamples {
                    display: indices.iter().map(|&i| trace.table.display(i)).collect(),
                    ..PathSamples::default()
                });
                samples.calls += stat.calls;
                samples.calls_sq += u128::from(stat.calls).pow(2);
                samples.errs += stat.errs;
                samples.errs_sq += u128::from(stat.errs).pow(2);
                samples.cancelled_sq += u128::from(stat.cancelled).pow(2);
                samples.cancelled += stat.cancelled;
                if let Some(&function) = indices.last() {
                    *function_calls.entry(trace.table.path(function)).or_default() += stat.calls;
                }
                samples.self_ns_sum += u128::from(stat.self_ns);
                samples.self_allocs += stat.self_allocs;
                samples.self_alloc_bytes += stat.self_alloc_bytes;
                samples.self_allocs_sq += u128::from(stat.self_allocs).pow(2);
                samples.self_alloc_bytes_sq += u128::from(stat.self_alloc_bytes).pow(2);
                if samples.last_run != Some(run) {
                    samples.run_starts.push(samples.total_ns.len());
                    samples.last_run = Some(run);
                }
                samples.total_ns.push(stat.total_ns as f64);
                samples.self_ns.push(stat.self_ns as f64);
            }
            for (function, calls) in function_calls {
                *self.function_calls_sq.entry(function.clone()).or_default() += u128::from(calls).pow(2);
                *self.function_calls.entry(function).or_default() += calls;
            }
            for (indices, kind) in invocation.spawned_paths() {
                if let Some(samples) = names.get(&indices).and_then(|key| self.paths.get_mut(key)) {
                    samples.spawned.get_or_insert(kind);
                }
            }
        }
    }
}

/// The trace files of a side: the file itself, or the directory's `*.trace` files in name order.
fn trace_files(input: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(input).map_err(|e| {
        UserError::new(format!("cannot read {}: {e}", input.display()))
            .hint("pass a trace saved with `cargo calltime --save FILE`, or a directory of them")
    })?;
    if !meta.is_dir() {
        return Ok(vec![input.to_owned()]);
    }
    let entries = std::fs::read_dir(input).with_context(|| format!("cannot list directory {}", input.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(UserError::new(format!("directory {} holds no *.trace files", input.display()))
            .hint(format!("record runs into it with `cargo calltime ... --save {}/run-1.trace`", input.display()))
            .into());
    }
    Ok(files)
}

/// A run's name in reports: its path relative to the side's directory (never an absolute temp path).
fn run_name(input: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(input).ok().filter(|r| !r.as_os_str().is_empty());
    relative.or_else(|| file.file_name().map(Path::new)).unwrap_or(file).display().to_string()
}

/// Marks runs whose median root time is clearly unlike the other runs' (see [`stats::outliers`]).
fn mark_dirty_runs(runs: &mut [RunInfo]) {
    let candidates: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].dropped.is_none()).collect();
    let medians: Vec<f64> = candidates.iter().filter_map(|&i| runs[i].median_root_ns).collect();
    let flags = stats::outliers(&medians, OUTLIER_MADS, OUTLIER_MIN_RELATIVE);
    let mut kept: Vec<f64> = medians.iter().zip(&flags).filter(|(_, &out)| !out).map(|(&m, _)| m).collect();
    let typical = stats::median(&mut kept).unwrap_or(0.0);
    for (&i, &out) in candidates.iter().zip(&flags) {
        if out {
            let median = runs[i].median_root_ns.unwrap_or(0.0);
            runs[i].dropped = Some(format!(
                "median root time {} is unlike the other runs' {}",
                crate::units::format_ns_f64(median),
                crate::units::format_ns_f64(typical)
            ));
        }
    }
}

/// What happened to a call path's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Significantly slower by at least the threshold.
    Regressed,
    /// Significantly faster by at least the threshold.
    Improved,
    Unchanged,
    /// Only in head.
    Added,
    /// Only in base.
    Removed,
}

/// Why an unchanged path's time difference was set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// Moved by at least the threshold, but the test did not find it significant.
    NotSignificant,
    /// Significant, but smaller than the threshold (or than [`MIN_CHANGE_NS`]).
    BelowThreshold,
    /// Too few invocations on a side to test.
    TooFewSamples,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Calls {
    /// Calls per invocation (mean over the side's invocations).
    pub base: f64,
    pub head: f64,
    /// Exact comparison of the per-invocation rates (total calls × invocations, in integers).
    pub changed: bool,
    /// The function retired in a run of either side: how its calls split between call paths depends on when it
    /// retired, so `base` and `head` are all its calls per invocation (every path, plus its retired calls).
    pub retired: bool,
    /// Some of those calls were estimated (the function went quiet on either side): `changed` then means a
    /// difference of more than 1%, not any difference.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

/// Self allocations of a call path per invocation, on both sides (when both counted them). Exact, like calls: any
/// difference is a change, with no statistics.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Allocs {
    pub base: f64,
    pub head: f64,
    pub base_bytes: f64,
    pub head_bytes: f64,
    /// The count or the bytes per invocation differ (compared exactly, in integers).
    pub changed: bool,
}

/// Calls of a path that ended one way (returned an `Err`, were cancelled), per invocation: counted exactly, like
/// calls, so any change is reported.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Outcomes {
    pub base: f64,
    pub head: f64,
    pub changed: bool,
}

impl Outcomes {
    /// From each side's count and sum of squares per invocation.
    fn of(
        (base_count, base_sq): (u64, u128),
        base: &Side,
        (head_count, head_sq): (u64, u128),
        head: &Side,
    ) -> Outcomes {
        let sampled = base.sampled || head.sampled;
        Outcomes {
            base: base_count as f64 / base.invocations as f64,
            head: head_count as f64 / head.invocations as f64,
            changed: u128::from(base_count) * u128::from(head.invocations)
                != u128::from(head_count) * u128::from(base.invocations)
                && (!sampled
                    || differs_beyond_chance(
                        (base_count, base_sq, base.invocations),
                        (head_count, head_sq, head.invocations),
                    )),
        }
    }

    /// `err 0 -> 1` when it changed, `err 1` when there are some, nothing otherwise.
    fn text(&self, what: &str) -> Option<String> {
        if self.changed {
            Some(format!("{what} {} -> {}", format_calls(self.base), format_calls(self.head)))
        } else if self.head > 0.0 {
            Some(format!("{what} {}", format_calls(self.head)))
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct TimeStats {
    /// Invocations in which the path ran (the time samples).
    pub samples: usize,
    /// Median over those invocations of the path's total time per invocation.
    pub median_total_ns: f64,
    pub median_self_ns: f64,
    /// Self time per invocation averaged over all of the side's invocations (what the flamegraph shows).
    pub mean_self_ns_per_invocation: f64,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Change {
    /// Relative change of the medians of self time, in percent (`None` when the base median is 0): what decides
    /// the status, so a slower function is counted once and not again in each of its callers.
    pub median_pct: Option<f64>,
    /// Relative change of the medians of total time, in percent (`None` when the base median is 0).
    pub total_pct: Option<f64>,
    /// The total time moved significantly (Mann-Whitney, same direction as `total_pct`) by at least the threshold.
    pub total_moved: bool,
    /// Bootstrap confidence interval of that change, in percent.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// Two-sided Mann-Whitney p-value.
    pub p_value: f64,
    pub significant: bool,
}

/// One call path, compared.
#[derive(Debug, Clone, Serialize)]
pub struct PathDiff {
    /// Function paths, root first: the matching key.
    pub path: Vec<String>,
    /// Display names joined with ` -> `.
    pub display: String,
    pub status: Status,
    pub noise: Option<Noise>,
    pub calls: Calls,
    /// Self allocations per invocation; absent unless both sides counted allocations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocs: Option<Allocs>,
    /// `Err` returns per invocation.
    pub errs: Outcomes,
    /// Cancelled calls per invocation (a folded call path with the flag counts 1).
    pub cancelled: Outcomes,
    pub base: Option<TimeStats>,
    pub head: Option<TimeStats>,
    pub change: Option<Change>,
    /// Absolute change of self time per invocation (ns): how rows are ordered.
    pub impact_ns: f64,
    /// For a caller whose own self time did not change but whose total time moved with a change below it: the
    /// display of that cause (the changed descendant with the biggest impact).
    pub cause: Option<String>,
    /// For a cause: the display names of its callers (nearest first).
    pub callers: Vec<String>,
    /// Frame names for the flamegraph: display names, or function paths when two paths would read alike.
    #[serde(skip)]
    pub frames: Vec<String>,
}

impl PathDiff {
    /// Whether the path belongs in the table of changes (otherwise it is folded with the unchanged ones).
    pub fn is_reported(&self) -> bool {
        self.status != Status::Unchanged
            || self.calls.changed
            || self.allocs.is_some_and(|a| a.changed)
            || self.errs.changed
            || self.cancelled.changed
    }

    /// For a caller folded under its cause: whether the cause made it slower (`Some(true)`) or faster.
    pub fn cause_direction(&self) -> Option<bool> {
        self.cause.as_ref()?;
        self.change.and_then(|c| c.total_pct).map(|pct| pct > 0.0)
    }

    /// Signed change of self time per invocation (ns).
    pub fn self_delta_ns(&self) -> f64 {
        let mean = |t: &Option<TimeStats>| t.map_or(0.0, |t| t.mean_self_ns_per_invocation);
        mean(&self.head) - mean(&self.base)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub label: String,
    pub input: String,
    pub runs: Vec<RunInfo>,
    pub invocations: u64,
    pub truncated_invocations: u64,
    /// Its runs recorded a random sample of their invocations: counts compared statistically ([`Side::sampled`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sampled: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SettingsSummary {
    pub threshold_pct: f64,
    pub alpha: f64,
    pub fail_above_pct: Option<f64>,
    pub bootstrap_resamples: usize,
    pub confidence: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub regressed: usize,
    pub improved: usize,
    pub unchanged: usize,
    pub added: usize,
    pub removed: usize,
    /// Paths on both sides whose calls per invocation changed.
    pub calls_changed: usize,
    /// Paths on both sides whose self allocations (count or bytes) per invocation changed.
    #[serde(skip_serializing_if = "is_zero")]
    pub allocs_changed: usize,
    /// Paths whose `Err` returns, or cancelled calls, per invocation changed (added and gone paths included).
    pub errs_changed: usize,
    pub cancelled_changed: usize,
    pub not_significant: usize,
    pub below_threshold: usize,
    pub too_few_samples: usize,
    /// Unchanged paths (by self time) whose total time moved with a regressed or new path below them.
    pub regressed_callers: usize,
    /// Unchanged paths (by self time) whose total time moved with an improved or gone path below them.
    pub improved_callers: usize,
    /// Regressed paths beyond `--fail-above` (display names): non-empty means exit status 2.
    pub over_fail_above: Vec<String>,
}

/// The whole comparison: what every format renders. Serialised as the JSON format.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub version: u32,
    pub base: SideSummary,
    pub head: SideSummary,
    pub settings: SettingsSummary,
    pub summary: Summary,
    /// Reported paths by impact, then unchanged paths by name.
    pub paths: Vec<PathDiff>,
}

impl Report {
    pub fn dropped_runs(&self) -> impl Iterator<Item = (&str, &RunInfo)> {
        let base = self.base.runs.iter().map(|r| (self.base.label.as_str(), r));
        let head = self.head.runs.iter().map(|r| (self.head.label.as_str(), r));
        base.chain(head).filter(|(_, r)| r.dropped.is_some())
    }
}

/// Compares two loaded sides path by path.
pub fn compare(base: &Side, head: &Side, settings: &Settings) -> Report {
    let mut keys: Vec<&PathKey> =
        base.paths.keys().chain(head.paths.keys().filter(|k| !base.paths.contains_key(*k))).collect();
    keys.sort();
    let mut paths: Vec<PathDiff> = keys.par_iter().map(|key| compare_path(key, base, head, settings)).collect();
    // Two call paths that read the same by short names (`a::new` and `b::new`) are shown by full paths instead.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for p in &paths {
        *seen.entry(p.display.clone()).or_default() += 1;
    }
    for p in &mut paths {
        if seen[&p.display] > 1 {
            p.display = p.path.join(PATH_SEPARATOR);
            p.frames = p.path.clone();
        }
    }
    fold_callers(&mut paths);
    paths.sort_by(|a, b| {
        b.is_reported()
            .cmp(&a.is_reported())
            .then_with(|| if a.is_reported() { b.impact_ns.total_cmp(&a.impact_ns) } else { std::cmp::Ordering::Equal })
            .then_with(|| a.display.cmp(&b.display))
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut summary = Summary::default();
    for p in &paths {
        match p.status {
            Status::Regressed => summary.regressed += 1,
            Status::Improved => summary.improved += 1,
            Status::Unchanged => match p.cause_direction() {
                Some(true) => summary.regressed_callers += 1,
                Some(false) => summary.improved_callers += 1,
                None => summary.unchanged += 1,
            },
            Status::Added => summary.added += 1,
            Status::Removed => summary.removed += 1,
        }
        if p.calls.changed && !matches!(p.status, Status::Added | Status::Removed) {
            summary.calls_changed += 1;
        }
        if p.allocs.is_some_and(|a| a.changed) && !matches!(p.status, Status::Added | Status::Removed) {
            summary.allocs_changed += 1;
        }
        summary.errs_changed += usize::from(p.errs.changed);
        summary.cancelled_changed += usize::from(p.cancelled.changed);
        match p.noise {
            Some(Noise::NotSignificant) => summary.not_significant += 1,
            Some(Noise::BelowThreshold) => summary.below_threshold += 1,
            Some(Noise::TooFewSamples) => summary.too_few_samples += 1,
            None => {}
        }
        if let (Status::Regressed, Some(limit), Some(pct)) =
            (p.status, settings.fail_above_pct, p.change.and_then(|c| c.median_pct))
        {
            if pct > limit {
                summary.over_fail_above.push(format!("{} ({})", p.display, format_pct(pct)));
            }
        }
    }
    let side_summary = |side: &Side| SideSummary {
        label: side.label.clone(),
        input: side.input.display().to_string(),
        runs: side.runs.clone(),
        invocations: side.invocations,
        truncated_invocations: side.truncated_invocations,
        sampled: side.sampled,
    };
    Report {
        version: DIFF_JSON_VERSION,
        base: side_summary(base),
        head: side_summary(head),
        settings: SettingsSummary {
            threshold_pct: settings.threshold_pct,
            alpha: settings.alpha,
            fail_above_pct: settings.fail_above_pct,
            bootstrap_resamples: settings.bootstrap.resamples,
            confidence: settings.bootstrap.level,
        },
        summary,
        paths,
    }
}

/// Whether a path's change makes its callers' totals slower (`Some(true)`) or faster, by its status.
fn slower(p: &PathDiff) -> Option<bool> {
    match p.status {
        Status::Regressed | Status::Added => Some(true),
        Status::Improved | Status::Removed => Some(false),
        Status::Unchanged => None,
    }
}

/// Folds callers under their cause: a path whose self time did not change but whose total time moved is linked to
/// the changed path below it, in the same direction, with the biggest impact.
fn fold_callers(paths: &mut [PathDiff]) {
    let mut links: Vec<(usize, usize)> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let Some(change) = p.change.filter(|c| c.total_moved && p.status == Status::Unchanged) else { continue };
        let direction = change.total_pct.map(|pct| pct > 0.0);
        let cause = paths
            .iter()
            .enumerate()
            .filter(|(_, c)| c.path.len() > p.path.len() && c.path.starts_with(&p.path) && slower(c) == direction)
            .max_by(|(_, a), (_, b)| a.impact_ns.total_cmp(&b.impact_ns))
            .map(|(j, _)| j);
        if let Some(j) = cause {
            links.push((i, j));
        }
    }
    // Nearest caller first.
    links.sort_by_key(|&(i, _)| std::cmp::Reverse(paths[i].path.len()));
    for (caller, cause) in links {
        paths[caller].cause = Some(paths[cause].display.clone());
        let name = paths[caller].display.clone();
        paths[cause].callers.push(name);
    }
}

/// Display names joined, each frame that ran as spawned work (on either side) marked ` [thread]` / ` [task]`.
fn marked_display(key: &PathKey, display: &[String], base: &Side, head: &Side) -> String {
    let frames = display.iter().enumerate().map(|(depth, name)| {
        let prefix = &key[..(depth + 1).min(key.len())];
        let kind = [base, head].iter().find_map(|side| side.paths.get(prefix).and_then(|p| p.spawned));
        match kind {
            Some(ThreadKind::Thread) => format!("{name} [thread]"),
            Some(ThreadKind::Task) => format!("{name} [task]"),
            None => name.clone(),
        }
    });
    frames.collect::<Vec<_>>().join(PATH_SEPARATOR)
}

/// How far apart (percent) the estimated calls of a retired function must be to be a change when a side recorded a
/// random sample of its invocations.
const SAMPLED_ESTIMATE_PCT: u128 = 10;

/// How far apart (in standard errors) two means of per-invocation counts must be to be a change when a side recorded
/// a random sample of its invocations: far out, since every path of a diff is tested.
const SAMPLED_COUNT_Z: f64 = 4.0;

/// Whether two per-invocation counts, each given as (sum, sum of squares, invocations), differ by more than the
/// sampling of invocations explains (Welch's z over the per-invocation spread). With no spread on either side any
/// difference counts.
fn differs_beyond_chance((sum_a, sq_a, n_a): (u64, u128, u64), (sum_b, sq_b, n_b): (u64, u128, u64)) -> bool {
    let moments = |sum: u64, sq: u128, n: u64| {
        let n = n.max(1) as f64;
        let mean = sum as f64 / n;
        (mean, (sq as f64 / n - mean * mean).max(0.0) / n)
    };
    let ((mean_a, var_a), (mean_b, var_b)) = (moments(sum_a, sq_a, n_a), moments(sum_b, sq_b, n_b));
    let spread = (var_a + var_b).sqrt();
    if spread == 0.0 {
        return mean_a != mean_b;
    }
    (mean_a - mean_b).abs() > SAMPLED_COUNT_Z * spread
}

fn compare_path(key: &PathKey, base: &Side, head: &Side, settings: &Settings) -> PathDiff {
    let in_base = base.paths.get(key);
    let in_head = head.paths.get(key);
    let display = in_base.or(in_head).map(|p| marked_display(key, &p.display, base, head)).unwrap_or_default();
    let function = key.last().map(String::as_str).unwrap_or_default();
    let retired = base.retired.contains(function) || head.retired.contains(function);
    let ((calls_base, sq_base), (calls_head, sq_head)) = if retired {
        let total = |side: &Side| {
            let calls = side.function_calls.get(function).copied().unwrap_or(0);
            (calls, side.function_calls_sq.get(function).copied().unwrap_or(0))
        };
        (total(base), total(head))
    } else {
        let of = |p: Option<&PathSamples>| p.map_or((0, 0), |p| (p.calls, p.calls_sq));
        (of(in_base), of(in_head))
    };
    // Over random samples of the invocations, a difference must stand out of their spread; so must one in work
    // spawned onto other threads or tasks (a rayon chain's parts): how the pool splits it, and so what each call
    // counts, changes from run to run.
    let scheduled = (1..=key.len())
        .any(|n| [base, head].iter().any(|side| side.paths.get(&key[..n]).is_some_and(|p| p.spawned.is_some())));
    let sampled = base.sampled || head.sampled || scheduled;
    let stands_out = |(sum_base, sq_base): (u64, u128), (sum_head, sq_head): (u64, u128)| {
        !sampled || differs_beyond_chance((sum_base, sq_base, base.invocations), (sum_head, sq_head, head.invocations))
    };
    let estimated = retired && (base.estimated.contains(function) || head.estimated.contains(function));
    let (scaled_base, scaled_head) =
        (u128::from(calls_base) * u128::from(head.invocations), u128::from(calls_head) * u128::from(base.invocations));
    let calls = Calls {
        base: calls_base as f64 / base.invocations as f64,
        head: calls_head as f64 / head.invocations as f64,
        changed: match (estimated, sampled) {
            (false, _) => scaled_base != scaled_head && stands_out((calls_base, sq_base), (calls_head, sq_head)),
            (true, false) => scaled_base.abs_diff(scaled_head) * 100 > scaled_base.max(scaled_head),
            // Estimated from the calls counted in a few random invocations: no spread to test, a wider margin.
            (true, true) => {
                scaled_base.abs_diff(scaled_head) * 100 > SAMPLED_ESTIMATE_PCT * scaled_base.max(scaled_head)
            }
        },
        retired,
        estimated,
    };
    let allocs = (base.counts_allocs && head.counts_allocs).then(|| {
        let (n_base, n_head) = (u128::from(base.invocations), u128::from(head.invocations));
        let of = |p: Option<&PathSamples>| p.map_or((0, 0), |p| (p.self_allocs, p.self_alloc_bytes));
        let ((allocs_base, bytes_base), (allocs_head, bytes_head)) = (of(in_base), of(in_head));
        let squares = |p: Option<&PathSamples>| p.map_or((0, 0), |p| (p.self_allocs_sq, p.self_alloc_bytes_sq));
        let ((allocs_sq_base, bytes_sq_base), (allocs_sq_head, bytes_sq_head)) = (squares(in_base), squares(in_head));
        Allocs {
            base: allocs_base as f64 / base.invocations as f64,
            head: allocs_head as f64 / head.invocations as f64,
            base_bytes: bytes_base as f64 / base.invocations as f64,
            head_bytes: bytes_head as f64 / head.invocations as f64,
            changed: (u128::from(allocs_base) * n_head != u128::from(allocs_head) * n_base
                && stands_out((allocs_base, allocs_sq_base), (allocs_head, allocs_sq_head)))
                || (u128::from(bytes_base) * n_head != u128::from(bytes_head) * n_base
                    && stands_out((bytes_base, bytes_sq_base), (bytes_head, bytes_sq_head))),
        }
    });
    let errs_of = |p: Option<&PathSamples>| p.map_or((0, 0), |p| (p.errs, p.errs_sq));
    let cancelled_of = |p: Option<&PathSamples>| p.map_or((0, 0), |p| (p.cancelled, p.cancelled_sq));
    let errs = Outcomes::of(errs_of(in_base), base, errs_of(in_head), head);
    let cancelled = Outcomes::of(cancelled_of(in_base), base, cancelled_of(in_head), head);
    let time_stats = |samples: Option<&PathSamples>, side: &Side| {
        samples.map(|p| TimeStats {
            samples: p.total_ns.len(),
            median_total_ns: stats::median(&mut p.total_ns.clone()).unwrap_or(0.0),
            median_self_ns: stats::median(&mut p.self_ns.clone()).unwrap_or(0.0),
            mean_self_ns_per_invocation: p.self_ns_sum as f64 / side.invocations as f64,
        })
    };
    let base_time = time_stats(in_base, base);
    let head_time = time_stats(in_head, head);
    let mut diff = PathDiff {
        path: key.clone(),
        display,
        status: Status::Unchanged,
        noise: None,
        calls,
        allocs,
        errs,
        cancelled,
        base: base_time,
        head: head_time,
        change: None,
        impact_ns: 0.0,
        cause: None,
        callers: Vec::new(),
        frames: in_base.or(in_head).map(|p| p.display.clone()).unwrap_or_default(),
    };
    diff.impact_ns = diff.self_delta_ns().abs();
    let (Some(b), Some(h), Some(bt), Some(ht)) = (in_base, in_head, base_time, head_time) else {
        diff.status = if in_base.is_some() { Status::Removed } else { Status::Added };
        return diff;
    };
    if b.total_ns.len() < MIN_SAMPLES || h.total_ns.len() < MIN_SAMPLES {
        diff.noise = Some(Noise::TooFewSamples);
        return diff;
    }
    // The status is decided by self time: a slower function makes its callers' totals slower too, and counting
    // each of them as a regression would report one cause many times (they are folded under it, [`fold_callers`]).
    let test = stats::mann_whitney(&b.self_ns, &h.self_ns);
    let relative = |base: f64, head: f64| (base > 0.0).then(|| (head / base - 1.0) * 100.0);
    let median_pct = relative(bt.median_self_ns, ht.median_self_ns);
    let total_pct = relative(bt.median_total_ns, ht.median_total_ns);
    let total_test = stats::mann_whitney(&b.total_ns, &h.total_ns);
    let total_moved = total_pct.is_some_and(|pct| {
        total_test.p < settings.alpha && (pct > 0.0) == (total_test.z > 0.0) && pct.abs() >= settings.threshold_pct
    });
    let interval = stats::bootstrap_relative_change(
        &b.self_by_run(),
        &h.self_by_run(),
        settings.bootstrap,
        stats::stable_hash(&key.join("\n")),
    );
    // Both must agree: the rank test on invocations, and the interval, which also carries run-to-run spread.
    let interval_excludes_zero = interval.is_none_or(|(low, high)| low > 0.0 || high < 0.0);
    let significant = test.p < settings.alpha && interval_excludes_zero;
    diff.change = Some(Change {
        median_pct,
        total_pct,
        total_moved,
        ci_low_pct: interval.map(|i| i.0 * 100.0),
        ci_high_pct: interval.map(|i| i.1 * 100.0),
        p_value: test.p,
        significant,
    });
    let Some(pct) = median_pct else { return diff };
    let big = pct.abs() >= settings.threshold_pct && (ht.median_self_ns - bt.median_self_ns).abs() >= MIN_CHANGE_NS;
    // The test and the medians must agree on the direction (a shift of the bulk against the median is not a
    // regression anyone can act on).
    let same_direction = (pct > 0.0) == (test.z > 0.0);
    diff.status = match (significant && same_direction, big) {
        (true, true) if pct > 0.0 => Status::Regressed,
        (true, true) => Status::Improved,
        (true, false) => {
            diff.noise = Some(Noise::BelowThreshold);
            Status::Unchanged
        }
        (false, true) => {
            diff.noise = Some(Noise::NotSignificant);
            Status::Unchanged
        }
        (false, false) => Status::Unchanged,
    };
    diff
}

/// `+12.3%`, `-4.0%`, `+0.0%`.
pub fn format_pct(pct: f64) -> String {
    let rounded = (pct * 10.0).round() / 10.0;
    if rounded == 0.0 {
        return "+0.0%".to_owned();
    }
    format!("{rounded:+.1}%")
}

/// `20%`, `12.5%`: a limit given by the user.
fn format_pct_plain(pct: f64) -> String {
    let text = format!("{pct:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// The change column: `+52.1%` or `new` / `gone` / `n/a`.
pub fn change_text(p: &PathDiff) -> String {
    match p.status {
        Status::Added => "new".to_owned(),
        Status::Removed => "gone".to_owned(),
        _ => p.change.and_then(|c| c.median_pct).map_or_else(|| "n/a".to_owned(), format_pct),
    }
}

/// The interval column: `+48.0%..+55.2%`, empty when there is none.
pub fn interval_text(p: &PathDiff) -> String {
    match p.change {
        Some(Change { ci_low_pct: Some(low), ci_high_pct: Some(high), .. }) => {
            format!("{}..{}", format_pct(low), format_pct(high))
        }
        _ => String::new(),
    }
}

/// Median self time per invocation of a side (what the change compares), or `-` when the path did not run there.
pub fn time_text(t: &Option<TimeStats>) -> String {
    t.map_or_else(|| "-".to_owned(), |t| crate::units::format_ns_f64(t.median_self_ns))
}

/// Callers listed under their cause before the rest are counted.
const CALLERS_LISTED: usize = 3;

/// `2 callers slower through it: handle -> route, handle` (each name through `name`), or None for a path that is
/// nobody's cause.
pub fn callers_text(p: &PathDiff, name: impl Fn(&str) -> String) -> Option<String> {
    if p.callers.is_empty() {
        return None;
    }
    let moved = if slower(p) == Some(true) { "slower" } else { "faster" };
    let mut listed: Vec<String> = p.callers.iter().take(CALLERS_LISTED).map(|c| name(c)).collect();
    if p.callers.len() > CALLERS_LISTED {
        listed.push(format!("{} more", p.callers.len() - CALLERS_LISTED));
    }
    let count = crate::units::plural(p.callers.len() as u64, "caller");
    Some(format!("{count} {moved} through it: {}", listed.join(", ")))
}

/// `1 regressed (1 cause, 2 callers)`: a count of causes and the callers folded under them.
pub fn count_with_callers(count: usize, word: &str, callers: usize) -> String {
    match (count, callers) {
        (_, 0) => format!("{count} {word}"),
        (0, _) => {
            format!("{count} {word} ({} moved by new or gone paths)", crate::units::plural(callers as u64, "caller"))
        }
        _ => format!(
            "{count} {word} ({}, {})",
            crate::units::plural(count as u64, "cause"),
            crate::units::plural(callers as u64, "caller")
        ),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Self allocations per invocation: `3 -> 5 (96 B -> 160 B)` when they changed, `3 (96 B)` otherwise; empty when the
/// traces counted none.
pub fn allocs_text(p: &PathDiff) -> String {
    let Some(a) = p.allocs else { return String::new() };
    let bytes = crate::units::format_bytes;
    if a.changed {
        format!(
            "{} -> {} ({} -> {})",
            format_calls(a.base),
            format_calls(a.head),
            bytes(a.base_bytes),
            bytes(a.head_bytes)
        )
    } else {
        format!("{} ({})", format_calls(a.head), bytes(a.head_bytes))
    }
}

/// `1 -> 2` for calls per invocation; `(all, retired)` after the calls of a function that retired, which are all
/// its calls per invocation, not the path's; then `Err` returns and cancelled calls per invocation, when there are
/// any (`(err 0 -> 1, cancelled 2)`).
pub fn calls_text(p: &PathDiff) -> String {
    let calls = if p.calls.changed {
        format!("{} -> {}", format_calls(p.calls.base), format_calls(p.calls.head))
    } else {
        format_calls(p.calls.head)
    };
    let calls = match (p.calls.retired, p.calls.estimated) {
        (true, true) => format!("~{calls} (all, retired, estimated)"),
        (true, false) => format!("{calls} (all, retired)"),
        (false, _) => calls,
    };
    let outcomes: Vec<String> = [p.errs.text("err"), p.cancelled.text("cancelled")].into_iter().flatten().collect();
    if outcomes.is_empty() {
        calls
    } else {
        format!("{calls} ({})", outcomes.join(", "))
    }
}

/// `+1.20ms` for a signed duration.
pub fn signed_ns(ns: f64) -> String {
    let text = crate::units::format_ns_f64(ns.abs());
    if ns < 0.0 {
        format!("-{text}")
    } else {
        format!("+{text}")
    }
}

//! The lines of the trace format, one reader and one writer per kind, side by side: a field added to a line is added
//! here, in both functions, and nowhere else (besides its field in the model). The reader (`read`) decides what a
//! line means for the file (record boundaries, trees); the builder (`build`) decides which lines to write.
//! Every writer appends exactly one line, ending in `\n`, as the runtime writes it.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::{
    AggregatePath, Calibration, Invocation, Node, Quiet, RetiredCalls, Retirement, RunAggregate, SampledRoot, Spawned,
    Stats, ThreadKind, ThreadRef, Trace,
};

pub(super) const MAGIC: &str = "calltime-trace";

/// Settings the runtime writes, in its order: a value of these that is not a number is an error, and the builder
/// writes them first, in this order, as the runtime does.
pub(super) const KNOWN_SETTINGS: [&str; 21] = [
    "node_cap",
    "fold_after",
    "time_sample",
    "min_ns",
    "sample",
    "max_invocations",
    "max_depth",
    "retire",
    "retire_factor",
    "retire_min_calls",
    "aggregate",
    "aggregate_ms",
    "rotate_bytes",
    "max_bytes_per_hour",
    "start_off",
    "slower_than_ns",
    "keep_slowest",
    "keep_sample",
    "allocs",
    "quiet_after",
    "cost_budget_pct",
];

// ---- header ----

/// `calltime-trace <version>`: the version, not yet checked against the versions this reader knows.
pub(super) fn read_magic(line: &str) -> Option<u32> {
    let mut words = line.split_whitespace();
    (words.next() == Some(MAGIC)).then_some(())?;
    words.next()?.parse().ok()
}

pub(super) fn write_magic(out: &mut String, version: u32) {
    let _ = writeln!(out, "{MAGIC} {version}");
}

/// `process <pid> <epoch_unix_ns> <exe>`
pub(super) fn read_process(rest: &str, trace: &mut Trace) -> Result<()> {
    let mut f = Fields::new(rest, 2);
    trace.pid = f.num()? as u32;
    trace.epoch_unix_ns = f.num()?;
    trace.exe = f.rest().to_owned();
    Ok(())
}

pub(super) fn write_process(out: &mut String, trace: &Trace) {
    let _ = writeln!(out, "process {} {} {}", trace.pid, trace.epoch_unix_ns, one_line(&trace.exe));
}

/// `plan <plan_id> <function table path>` (the path may be empty).
pub(super) fn read_plan(rest: &str, trace: &mut Trace) -> Result<()> {
    let mut f = Fields::new(rest, 1);
    trace.plan_id = Some(f.word()?.to_owned());
    let table = f.rest();
    trace.table_hint = (!table.is_empty()).then(|| PathBuf::from(table));
    Ok(())
}

pub(super) fn write_plan(out: &mut String, trace: &Trace) {
    let table = trace.table_hint.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let _ = writeln!(out, "plan {} {}", trace.plan_id.as_deref().unwrap_or_default(), one_line(&table));
}

/// `settings <key>=<value> ...` (version 2).
pub(super) fn read_settings(rest: &str, trace: &mut Trace) -> Result<()> {
    for pair in rest.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("setting `{pair}` is not `key=value`");
        };
        // Later runtimes may write settings that are not numbers: unknown ones are skipped.
        match value.parse() {
            Ok(value) => {
                trace.settings.insert(key.to_owned(), value);
            }
            Err(_) if KNOWN_SETTINGS.contains(&key) => bail!("setting {key}=`{value}` is not a number"),
            Err(_) => {}
        }
    }
    Ok(())
}

pub(super) fn write_settings(out: &mut String, trace: &Trace) {
    out.push_str("settings");
    let known = KNOWN_SETTINGS.iter().filter_map(|&key| trace.settings.get_key_value(key));
    let others = trace.settings.iter().filter(|(key, _)| !KNOWN_SETTINGS.contains(&key.as_str()));
    for (key, value) in known.chain(others) {
        let _ = write!(out, " {key}={value}");
    }
    out.push('\n');
}

/// `calibration recorded_inner=<ps> recorded_outer=<ps> folded_outer=<ps> timed_inner=<ps> timed_outer=<ps>
/// retired_outer=<ps> quiet_outer=<ps> quiet_inline=<ps>` (version 3): unknown keys are ignored, a missing key counts
/// as 0 (a missing `quiet_outer` or `quiet_inline`, from older runtimes, stays `None`).
pub(super) fn read_calibration(rest: &str, trace: &mut Trace) -> Result<()> {
    let mut calibration = Calibration::default();
    for pair in rest.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("calibration `{pair}` is not `key=value`");
        };
        if key == "quiet_outer" || key == "quiet_inline" {
            let ps = value.parse().with_context(|| format!("calibration {key}=`{value}` is not a number"))?;
            *(if key == "quiet_outer" { &mut calibration.quiet_outer } else { &mut calibration.quiet_inline }) =
                Some(ps);
            continue;
        }
        let Some(field) = calibration_field(&mut calibration, key) else { continue };
        *field = value.parse().with_context(|| format!("calibration {key}=`{value}` is not a number"))?;
    }
    trace.calibration = Some(calibration);
    Ok(())
}

fn calibration_field<'c>(c: &'c mut Calibration, key: &str) -> Option<&'c mut u64> {
    Some(match key {
        "recorded_inner" => &mut c.recorded_inner,
        "recorded_outer" => &mut c.recorded_outer,
        "folded_outer" => &mut c.folded_outer,
        "timed_inner" => &mut c.timed_inner,
        "timed_outer" => &mut c.timed_outer,
        "retired_outer" => &mut c.retired_outer,
        _ => return None,
    })
}

pub(super) fn write_calibration(out: &mut String, c: &Calibration) {
    let _ = writeln!(
        out,
        "calibration recorded_inner={} recorded_outer={} folded_outer={} timed_inner={} timed_outer={} \
         retired_outer={}",
        c.recorded_inner, c.recorded_outer, c.folded_outer, c.timed_inner, c.timed_outer, c.retired_outer
    );
    for (key, value) in [("quiet_outer", c.quiet_outer), ("quiet_inline", c.quiet_inline)] {
        if let Some(ps) = value {
            out.pop();
            let _ = writeln!(out, " {key}={ps}");
        }
    }
}

/// `retire <index> <at_ns> <calls> <mean_ns>` (version 3, between invocations).
pub(super) fn read_retire(rest: &str) -> Result<Retirement> {
    let mut f = Fields::new(rest, 4);
    Ok(Retirement { func: f.index()?, at_ns: f.num()?, calls: f.num()?, mean_ns: f.num()? })
}

pub(super) fn write_retire(out: &mut String, r: &Retirement) {
    let _ = writeln!(out, "retire {} {} {} {}", r.func, r.at_ns, r.calls, r.mean_ns);
}

/// `quiet <index> <at_ns> [<calls> <caller_calls>]` (version 3, between invocations; the last two when it went quiet
/// within an invocation).
pub(super) fn read_quiet(rest: &str) -> Result<Quiet> {
    let mut f = Fields::new(rest, 5);
    let (func, at_ns) = (f.index()?, f.num()?);
    let (calls, caller_calls) = (f.optional_num()?.unwrap_or(0), f.optional_num()?.unwrap_or(0));
    let by = match f.optional_num()? {
        Some(by) => Some(u32::try_from(by).with_context(|| format!("`{by}` is not a function index"))?),
        None => None,
    };
    Ok(Quiet { func, at_ns, calls, caller_calls, by })
}

pub(super) fn write_quiet(out: &mut String, q: &Quiet) {
    if let (Some(by), true) = (q.by, q.caller_calls != 0) {
        let _ = writeln!(out, "quiet {} {} {} {} {by}", q.func, q.at_ns, q.calls, q.caller_calls);
    } else if q.caller_calls != 0 {
        let _ = writeln!(out, "quiet {} {} {} {}", q.func, q.at_ns, q.calls, q.caller_calls);
    } else {
        let _ = writeln!(out, "quiet {} {}", q.func, q.at_ns);
    }
}

/// `r <index> <calls>` (version 3, inside an invocation after its nodes).
pub(super) fn read_retired_calls(rest: &str) -> Result<RetiredCalls> {
    let mut f = Fields::new(rest, 2);
    Ok(RetiredCalls::counted(f.index()?, f.num()?))
}

/// Estimated calls (of a quiet function) are the reader's, not the runtime's: only what it counted is written.
pub(super) fn write_retired_calls(out: &mut String, r: &RetiredCalls) {
    if r.counted > 0 || !r.estimated {
        let _ = writeln!(out, "r {} {}", r.func, r.counted);
    }
}

// ---- invocation records ----

/// `inv <seq> <thread|task> <id> <start_ns> <duration_ns> <node_count> <truncated_calls> <filtered_nodes> <name>`:
/// the invocation (its root still empty) and the node count it announces.
pub(super) fn read_inv(rest: &str) -> Result<(Invocation, u64)> {
    let mut f = Fields::new(rest, 8);
    let seq = f.num()?;
    let (kind, id, start_ns, duration_ns, [node_count, truncated_calls, filtered_nodes]) = read_span(&mut f)?;
    let name = f.rest().to_owned();
    let inv = Invocation {
        seq,
        thread: ThreadRef { kind, id, name },
        start_ns,
        duration_ns,
        truncated_calls,
        filtered_nodes,
        folded: false,
        root: Node::call(0, start_ns, duration_ns, false, Vec::new()),
        retired: Vec::new(),
        spawned: Vec::new(),
        unrecorded_spawns: 0,
    };
    Ok((inv, node_count))
}

/// `p <parent_line> <thread|task> <id> <start_ns> <duration_ns> <node_count> <truncated_calls> <filtered_nodes>
/// <flags>`: work spawned inside the invocation that ran elsewhere, with the line of its spawning node (counted
/// over the record's node lines and its earlier parts') and the node lines that follow (the first is the spawned
/// closure or future itself). Flags: 1 outlived, 2 unrecorded.
pub(super) fn read_part(rest: &str) -> Result<(u64, Spawned, [u64; 3])> {
    let mut f = Fields::new(rest, 9);
    let parent = f.num()?;
    let (kind, id, start_ns, duration_ns, counts) = read_span(&mut f)?;
    let flags = f.num()?;
    let thread = ThreadRef { kind, id, name: String::new() };
    let spawned = Spawned { thread, start_ns, duration_ns, outlived: flags & 1 != 0, unrecorded: flags & 2 != 0 };
    Ok((parent, spawned, counts))
}

/// The fields `inv` and `p` lines share: `<thread|task> <id> <start_ns> <duration_ns> <node_count>
/// <truncated_calls> <filtered_nodes>`.
fn read_span(f: &mut Fields) -> Result<(ThreadKind, u64, u64, u64, [u64; 3])> {
    let kind = match f.word()? {
        "thread" => ThreadKind::Thread,
        "task" => ThreadKind::Task,
        other => bail!("unknown thread kind `{other}`"),
    };
    Ok((kind, f.num()?, f.num()?, f.num()?, [f.num()?, f.num()?, f.num()?]))
}

/// `pu <parent_line> <count>`: spawns past the runtime's cap, run unrecorded.
pub(super) fn read_unrecorded_parts(rest: &str) -> Result<u64> {
    let mut f = Fields::new(rest, 2);
    let _parent = f.num()?;
    f.num()
}

pub(super) fn write_inv(out: &mut String, inv: &Invocation, node_count: usize) {
    let kind = match inv.thread.kind {
        ThreadKind::Thread => "thread",
        ThreadKind::Task => "task",
    };
    let _ = writeln!(
        out,
        "inv {} {kind} {} {} {} {node_count} {} {} {}",
        inv.seq,
        inv.thread.id,
        inv.start_ns,
        inv.duration_ns,
        inv.truncated_calls,
        inv.filtered_nodes,
        one_line(&inv.thread.name)
    );
}

/// `n <depth> <index> <start_ns> <duration_ns> <flags>`: one call.
/// `n <depth> <index> <start_ns> <duration_ns> <flags>`: one call; a runtime that counts allocations appends
/// `<self_allocs> <self_alloc_bytes>`.
pub(super) fn read_call(rest: &str) -> Result<(u32, Node)> {
    let mut f = Fields::new(rest, 7);
    let depth = f.num()? as u32;
    let func = f.num()? as u32;
    let start_ns = f.num()?;
    let duration_ns = f.num()?;
    let mut node = Node::call(func, start_ns, duration_ns, false, Vec::new());
    set_flags(&mut node, f.num()?);
    Ok((depth, read_allocs(&mut f, node)?))
}

/// `allocs`: the trace's runtime writes the allocation fields (its `settings` line has an `allocs` key).
pub(super) fn write_call(out: &mut String, depth: u32, node: &Node, allocs: bool) {
    let _ = write!(out, "n {depth} {} {} {} {}", node.func, node.start_ns, node.duration_ns, flags(node));
    write_allocs(out, node, allocs);
    out.push('\n');
}

/// The optional `<self_allocs> <self_alloc_bytes>` at the end of `n` and `a` lines.
fn read_allocs(f: &mut Fields, node: Node) -> Result<Node> {
    match (f.optional_num()?, f.optional_num()?) {
        (Some(allocs), Some(bytes)) => Ok(node.with_allocs(allocs, bytes)),
        (None, None) => Ok(node),
        _ => bail!("an allocation count without its bytes"),
    }
}

fn write_allocs(out: &mut String, node: &Node, allocs: bool) {
    if allocs {
        let _ = write!(out, " {} {}", node.self_allocs, node.self_alloc_bytes);
    }
}

/// `a <depth> <index> <calls> <timed> <first_start_ns> <timed_ns> <min_ns> <max_ns> <flags>`: one call path of a
/// folded invocation; version 3 appends `<exact_calls> <exact_ns>`, then, from a runtime that counts
/// allocations (or when an `Err` count follows), `<self_allocs> <self_alloc_bytes>`, then, when a call returned an
/// `Err`, `<errs>`.
pub(super) fn read_path(rest: &str, version: u32) -> Result<(u32, Node)> {
    let mut f = Fields::new(rest, 14);
    let depth = f.num()? as u32;
    let func = f.num()? as u32;
    let calls = f.num()?;
    let timed_calls = f.num()?;
    let start_ns = f.num()?;
    let timed_ns = f.num()?;
    let min_ns = f.num()?;
    let max_ns = f.num()?;
    let flags = f.num()?;
    let (exact_calls, exact_ns) = if version >= 3 { (f.num()?, f.num()?) } else { (0, 0) };
    if calls == 0 {
        bail!("a call path with 0 calls");
    }
    if timed_calls > calls {
        bail!("{timed_calls} timed calls of {calls}");
    }
    if exact_calls > timed_calls {
        bail!("{exact_calls} exact calls of {timed_calls} timed");
    }
    let node = Node::path(func, start_ns, calls, timed_calls, timed_ns, (min_ns, max_ns), Vec::new());
    let mut node = node.with_exact(exact_calls, exact_ns);
    set_flags(&mut node, flags);
    let node = if version >= 3 { read_allocs(&mut f, node)? } else { node };
    // After the allocation fields, when a call returned an `Err`; a path with the flag but no count had at least one.
    let errs = if version >= 3 { f.optional_num()? } else { None };
    let mut node = node;
    if let Some(errs) = errs {
        node.errs = errs.min(calls);
    }
    Ok((depth, node))
}

pub(super) fn write_path(out: &mut String, depth: u32, node: &Node, version: u32, allocs: bool) {
    let _ = write!(
        out,
        "a {depth} {} {} {} {} {} {} {} {}",
        node.func,
        node.calls,
        node.timed_calls,
        node.start_ns,
        node.timed_ns,
        node.min_ns,
        node.max_ns,
        flags(node)
    );
    if version >= 3 {
        let _ = write!(out, " {} {}", node.exact_calls, node.exact_ns);
        // An `Err` count comes after the allocation fields, written (as 0 0) when allocations are not counted.
        write_allocs(out, node, allocs || node.errs > 0);
        if node.errs > 0 {
            let _ = write!(out, " {}", node.errs);
        }
    }
    out.push('\n');
}

/// Flag bits of `n` and `a` lines: bit 0 unwound, bit 1 cancelled, bit 2 returned an `Err`; other bits are
/// reserved and ignored.
const PANICKED: u64 = 1;
const CANCELLED: u64 = 2;
const ERR: u64 = 4;

fn set_flags(node: &mut Node, flags: u64) {
    node.panicked = flags & PANICKED != 0;
    node.cancelled = flags & CANCELLED != 0;
    node.errs = u64::from(flags & ERR != 0);
}

fn flags(node: &Node) -> u64 {
    let bit = |set: bool, bit: u64| if set { bit } else { 0 };
    bit(node.panicked, PANICKED) | bit(node.cancelled, CANCELLED) | bit(node.errs > 0, ERR)
}

/// `end <seq>`
pub(super) fn read_end(rest: &str) -> Result<u64> {
    Fields::new(rest, 1).num()
}

pub(super) fn write_end(out: &mut String, seq: u64) {
    let _ = writeln!(out, "end {seq}");
}

// ---- statistics ----

/// `sampled <root> <skipped> <timed> <timed_ns> [<tasks>]`: a root's invocations sampled for cost so far (cumulative;
/// written right before each `stats` line of a run that sampled); `tasks` since a thread's skipped invocations are
/// timed at random (see `SampledRoot`).
pub(super) fn read_sampled(rest: &str) -> Result<SampledRoot> {
    let mut f = Fields::new(rest, 5);
    let (func, skipped, timed, timed_ns) = (f.index()?, f.num()?, f.num()?, f.num()?);
    Ok(SampledRoot { func, skipped, timed, timed_ns, tasks: f.optional_num()? })
}

pub(super) fn write_sampled(out: &mut String, s: &SampledRoot) {
    let _ = write!(out, "sampled {} {} {} {}", s.func, s.skipped, s.timed, s.timed_ns);
    let _ = match s.tasks {
        Some(tasks) => writeln!(out, " {tasks}"),
        None => writeln!(out),
    };
}

/// `stats <seen> <kept> <sampled_out> <dropped> <truncated>`, then (version 3) `<dropped_limit>
/// <dropped_queue_full> <dropped_no_buffer> <retired_functions>`, then `<left_out_fast> <left_out_unselected>
/// <first_root_ns> <last_root_ns>`, then `<dropped_cap>`, then `<periodic>` (1 or 0), then `<sampled_for_cost>`,
/// each optional (a runtime may write only the first five); `incomplete` is the reader's own count, kept.
pub(super) fn read_stats(rest: &str, incomplete: u64) -> Result<Stats> {
    let mut f = Fields::new(rest, 16);
    let mut stats = Stats {
        seen: f.num()?,
        kept: f.num()?,
        sampled_out: f.num()?,
        dropped: f.num()?,
        truncated: f.num()?,
        incomplete,
        ..Stats::default()
    };
    for field in [
        &mut stats.dropped_limit,
        &mut stats.dropped_queue_full,
        &mut stats.dropped_no_buffer,
        &mut stats.retired_functions,
        &mut stats.left_out_fast,
        &mut stats.left_out_unselected,
        &mut stats.first_root_ns,
        &mut stats.last_root_ns,
        &mut stats.dropped_cap,
    ] {
        match f.optional_num()? {
            Some(value) => *field = value,
            None => break,
        }
    }
    stats.periodic = f.optional_num()? == Some(1);
    stats.sampled_for_cost = f.optional_num()?.unwrap_or(0);
    Ok(stats)
}

pub(super) fn write_stats(out: &mut String, stats: &Stats, version: u32) {
    let Stats { seen, kept, sampled_out, dropped, truncated, .. } = stats;
    let _ = write!(out, "stats {seen} {kept} {sampled_out} {dropped} {truncated}");
    if version >= 3 {
        let Stats { dropped_limit, dropped_queue_full, dropped_no_buffer, retired_functions, .. } = stats;
        let _ = write!(out, " {dropped_limit} {dropped_queue_full} {dropped_no_buffer} {retired_functions}");
        let Stats { left_out_fast, left_out_unselected, first_root_ns, last_root_ns, dropped_cap, .. } = stats;
        let periodic = stats.periodic;
        let chosen = (left_out_fast, left_out_unselected, first_root_ns, last_root_ns, dropped_cap);
        let sampled = stats.sampled_for_cost;
        if periodic || sampled != 0 || chosen != (&0, &0, &0, &0, &0) {
            let _ = write!(out, " {left_out_fast} {left_out_unselected} {first_root_ns} {last_root_ns}");
        }
        if periodic || sampled != 0 || *dropped_cap != 0 {
            let _ = write!(out, " {dropped_cap}");
        }
        if periodic || sampled != 0 {
            let _ = write!(out, " {}", u8::from(periodic));
        }
        if sampled != 0 {
            let _ = write!(out, " {sampled}");
        }
    }
    out.push('\n');
}

/// A rest-of-line field cannot hold a newline: the runtime writes spaces instead.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ").into()
    } else {
        text.into()
    }
}

// ---- whole-run aggregate ----

/// `aggregate <at_ns> <invocations> <paths> <untracked_calls> <dropped_cap> <retired> [<processes>]`: a snapshot of
/// the whole run, followed by its `paths` `g` lines and `retired` `gr` lines (`processes`, when more than 1: a run
/// merged by the tool). The aggregate (without paths yet) and the number
/// of lines that follow.
pub(super) fn read_aggregate(rest: &str) -> Result<(RunAggregate, u64)> {
    let mut f = Fields::new(rest, 7);
    let at_ns = f.num()?;
    let invocations = f.num()?;
    let paths = f.num()?;
    let untracked_calls = f.num()?;
    let dropped_cap = f.num()?;
    let retired = f.num()?;
    // Written by the tool only, for a run merged from several processes.
    let processes = f.optional_num()?.unwrap_or(1);
    let aggregate = RunAggregate { at_ns, invocations, untracked_calls, dropped_cap, processes, ..Default::default() };
    Ok((aggregate, paths + retired))
}

pub(super) fn write_aggregate(out: &mut String, a: &RunAggregate, paths: usize) {
    let (at, invocations, untracked, capped) = (a.at_ns, a.invocations, a.untracked_calls, a.dropped_cap);
    let _ = write!(out, "aggregate {at} {invocations} {paths} {untracked} {capped} {}", a.retired.len());
    if a.processes > 1 {
        let _ = write!(out, " {}", a.processes);
    }
    out.push('\n');
}

/// `g <depth> <index> <calls> <timed> <total_ns> <min_ns> <max_ns> [<bucket>:<count> ...]`: one call path of an
/// aggregate, in preorder (depth 0: a root function).
pub(super) fn read_aggregate_path(rest: &str) -> Result<(u32, AggregatePath)> {
    let mut f = Fields::new(rest, 7);
    let depth = f.num()? as u32;
    let func = f.index()?;
    let [calls, timed, total_ns, min_ns, max_ns] = [f.num()?, f.num()?, f.num()?, f.num()?, f.num()?];
    if timed > calls {
        bail!("{timed} timed calls of {calls}");
    }
    let mut histogram: Vec<(u32, u64)> = Vec::new();
    for pair in f.rest().split_whitespace() {
        let parsed = pair.split_once(':').and_then(|(b, n)| Some((b.parse::<u32>().ok()?, n.parse::<u64>().ok()?)));
        let Some((bucket, count)) = parsed else { bail!("histogram bucket `{pair}` is not `<bucket>:<count>`") };
        if histogram.last().is_some_and(|&(last, _)| last >= bucket) {
            bail!("histogram buckets out of order at `{pair}`");
        }
        histogram.push((bucket, count));
    }
    let path =
        AggregatePath { func, calls, timed, total_ns, min_ns, max_ns, histogram, self_ns: None, children: Vec::new() };
    Ok((depth, path))
}

/// `gs <self_ns>`: the self time of the path whose `g` line follows (docs/trace-format.md).
pub(super) fn read_aggregate_self(rest: &str) -> Result<u64> {
    let mut f = Fields::new(rest, 1);
    f.num()
}

/// `gr <index> <calls>`: calls of a retired function after it retired, over the whole run (after the `g` lines).
pub(super) fn read_aggregate_retired(rest: &str) -> Result<RetiredCalls> {
    read_retired_calls(rest)
}

pub(super) fn write_aggregate_retired(out: &mut String, r: &RetiredCalls) {
    let _ = writeln!(out, "gr {} {}", r.func, r.calls);
}

pub(super) fn write_aggregate_path(out: &mut String, depth: u32, p: &AggregatePath) {
    if let Some(self_ns) = p.self_ns {
        let _ = writeln!(out, "gs {self_ns}");
    }
    let _ = write!(out, "g {depth} {} {} {} {} {} {}", p.func, p.calls, p.timed, p.total_ns, p.min_ns, p.max_ns);
    for (bucket, count) in &p.histogram {
        let _ = write!(out, " {bucket}:{count}");
    }
    out.push('\n');
}

/// Whitespace-separated fields, then the rest of the line (which may hold spaces).
struct Fields<'a> {
    words: Vec<&'a str>,
    rest: &'a str,
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(line: &'a str, count: usize) -> Fields<'a> {
        let mut words = Vec::with_capacity(count);
        let mut rest = line;
        for _ in 0..count {
            let trimmed = rest.trim_start_matches(' ');
            let (word, after) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
            if word.is_empty() {
                break;
            }
            words.push(word);
            rest = after;
        }
        Fields { words, rest, at: 0 }
    }

    fn word(&mut self) -> Result<&'a str> {
        let w = self.words.get(self.at).copied().context("too few fields")?;
        self.at += 1;
        Ok(w)
    }

    fn num(&mut self) -> Result<u64> {
        let w = self.word()?;
        w.parse().with_context(|| format!("`{w}` is not a number"))
    }

    /// The next field if there is one (fields a later version appends).
    fn optional_num(&mut self) -> Result<Option<u64>> {
        if self.at >= self.words.len() {
            return Ok(None);
        }
        self.num().map(Some)
    }

    /// A function index (dense, u32).
    fn index(&mut self) -> Result<u32> {
        let w = self.word()?;
        w.parse().with_context(|| format!("`{w}` is not a function index"))
    }

    fn rest(&self) -> &'a str {
        self.rest
    }
}

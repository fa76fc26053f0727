//! A run's trace files: the runtime writes one file per process (`CALLTIME_OUT`, and `<CALLTIME_OUT>.p<pid>` for
//! every other process of the run) and rotates each by size (`<file>.s<n>`); [`super::Trace::load`] reads them all
//! and merges them into one trace.

use std::path::{Path, PathBuf};

use super::{Node, Quiet, Stats, Trace};

/// Where a file sits in its run: the process (0 for the one that wrote `CALLTIME_OUT` itself, else its pid) and
/// the segment (0 for the first file).
fn position(run: &str, name: &str) -> Option<(u64, u64)> {
    if name == run {
        return Some((0, 0));
    }
    let suffix = name.strip_prefix(run)?.strip_prefix('.')?;
    let (process, segment) = match suffix.split_once('.') {
        Some((process, segment)) => (Some(process), segment),
        None if suffix.starts_with('p') => (Some(suffix), ""),
        None => (None, suffix),
    };
    let process = match process {
        Some(p) => p.strip_prefix('p')?.parse().ok()?,
        None => 0,
    };
    let segment = match segment {
        "" => 0,
        s => s.strip_prefix('s')?.parse().ok()?,
    };
    Some((process, segment))
}

/// `path` and the files the run's other processes and rotations wrote beside it, in order: by process (the first
/// one first), then by segment. Just `path` when it has none (or its directory cannot be read).
pub fn run_files(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(run)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return vec![path.to_owned()];
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![path.to_owned()] };
    let mut files: Vec<((u64, u64), PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((position(run, &name)?, path.with_file_name(name)))
        })
        .collect();
    if files.is_empty() {
        return vec![path.to_owned()];
    }
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

/// The runtime truncates `CALLTIME_OUT` when a run starts, and removes the segments (`<file>.s<n>`) an earlier,
/// longer run rotated into; older runtimes left them, and a removal can fail: a segment whose process (pid and
/// epoch) is not its first file's is such a leftover.
/// Returns the traces without them, and a warning naming each one left out. `paths` and `traces` are in
/// [`run_files`] order (each process's first file before its segments).
pub fn leave_out_stale_segments(run: &Path, paths: &[PathBuf], traces: Vec<Trace>) -> (Vec<Trace>, Vec<String>) {
    let run_name = run.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let mut owners: Vec<(u64, (u32, u64))> = Vec::new();
    let (mut kept, mut warnings) = (Vec::new(), Vec::new());
    for (path, trace) in paths.iter().zip(traces) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let (process, segment) = position(run_name, name).unwrap_or((0, 0));
        let this = (trace.pid, trace.epoch_unix_ns);
        let owner = owners.iter().find(|(p, _)| *p == process).map(|(_, o)| *o);
        match owner {
            Some(owner) if segment > 0 && owner != this => {
                warnings.push(format!(
                    "left out {}: a segment an earlier run left there (process {}, not this run's {}); delete it",
                    path.display(),
                    trace.pid,
                    owner.0
                ));
                continue;
            }
            None => owners.push((process, this)),
            Some(_) => {}
        }
        kept.push(trace);
    }
    (kept, warnings)
}

/// Merges the traces of one run's files (in `run_files` order) into one: a process's segments one after another,
/// its counters and aggregate from its last segment that has them (they are cumulative), processes summed; other
/// processes' start times moved to the first one's epoch and their thread and task ids offset by a million per
/// process, so their trees never mix in the views.
pub fn merge(mut traces: Vec<Trace>) -> Option<Trace> {
    let files = traces.len();
    let mut processes: Vec<Vec<Trace>> = Vec::new();
    for trace in traces.drain(..) {
        match processes.last_mut() {
            Some(group) if group[0].pid == trace.pid => group.push(trace),
            _ => processes.push(vec![trace]),
        }
    }
    let mut merged: Option<Trace> = None;
    for (rank, segments) in processes.into_iter().enumerate() {
        let process = merge_segments(segments, files > 1);
        match merged.as_mut() {
            None => merged = Some(process),
            Some(into) => add_process(into, process, rank as u64),
        }
    }
    let mut merged = merged?;
    merged.files = files;
    // Applied per process; the numbers below are the merged run's own.
    merged.unheld.clear();
    for (seq, inv) in merged.invocations.iter_mut().enumerate() {
        inv.seq = seq as u64;
    }
    Some(merged)
}

/// One process's segments: invocations in order; counters and aggregate of the last segment that has them.
fn merge_segments(segments: Vec<Trace>, name_files: bool) -> Trace {
    let mut segments = segments.into_iter();
    let Some(mut first) = segments.next() else { return Trace::default() };
    label_warnings(&mut first, name_files);
    for mut later in segments {
        label_warnings(&mut later, name_files);
        first.quiet.append(&mut later.quiet);
        first.invocations.append(&mut later.invocations);
        first.warnings.append(&mut later.warnings);
        first.controls.append(&mut later.controls);
        first.unheld.append(&mut later.unheld);
        for r in later.retirements {
            if !first.retirements.iter().any(|f| f.func == r.func) {
                first.retirements.push(r);
            }
        }
        if later.stats_records > 0 {
            let incomplete = first.stats.incomplete + later.stats.incomplete;
            first.stats = Stats { incomplete, ..later.stats };
            first.stats_records += later.stats_records;
            // Cumulative, written with each `stats` line.
            if !later.sampled.is_empty() {
                first.sampled = later.sampled;
            }
        } else {
            first.stats.incomplete += later.stats.incomplete;
        }
        if later.aggregate.is_some() {
            first.aggregate = later.aggregate;
        }
    }
    // A tree held in one segment may be displaced in a later one.
    super::service::drop_unheld(&mut first);
    super::quiet::estimate_quiet_calls(&mut first);
    first
}

fn label_warnings(trace: &mut Trace, name_files: bool) {
    if name_files {
        let name = trace.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for warning in &mut trace.warnings {
            *warning = format!("{name}: {warning}");
        }
    }
}

/// Adds another process of the run to `into`.
fn add_process(into: &mut Trace, mut process: Trace, rank: u64) {
    let shift = process.epoch_unix_ns.saturating_sub(into.epoch_unix_ns);
    for inv in &mut process.invocations {
        inv.start_ns = inv.start_ns.saturating_add(shift);
        inv.thread.id += rank * 1_000_000;
        shift_starts(&mut inv.root, shift);
    }
    into.quiet.extend(process.quiet.iter().map(|q| Quiet { at_ns: q.at_ns.saturating_add(shift), ..*q }));
    into.invocations.append(&mut process.invocations);
    into.warnings.append(&mut process.warnings);
    for change in &mut process.controls {
        change.at_ns = change.at_ns.saturating_add(shift);
    }
    into.controls.append(&mut process.controls);
    into.processes += 1;
    let (a, b) = (&mut into.stats, process.stats);
    for (sum, add) in [
        (&mut a.seen, b.seen),
        (&mut a.kept, b.kept),
        (&mut a.sampled_out, b.sampled_out),
        (&mut a.sampled_for_cost, b.sampled_for_cost),
        (&mut a.dropped, b.dropped),
        (&mut a.truncated, b.truncated),
        (&mut a.dropped_limit, b.dropped_limit),
        (&mut a.dropped_queue_full, b.dropped_queue_full),
        (&mut a.dropped_no_buffer, b.dropped_no_buffer),
        (&mut a.dropped_cap, b.dropped_cap),
        (&mut a.retired_functions, b.retired_functions),
        (&mut a.incomplete, b.incomplete),
    ] {
        *sum += add;
    }
    a.periodic |= b.periodic;
    for s in process.sampled {
        match into.sampled.iter_mut().find(|t| t.func == s.func) {
            Some(t) => {
                // Each side's tasks as it reads them (an older process's untimed ones were tasks).
                let tasks = t.tasks() + s.tasks();
                t.skipped += s.skipped;
                t.timed += s.timed;
                t.timed_ns += s.timed_ns;
                t.tasks = (t.tasks.is_some() || s.tasks.is_some()).then_some(tasks);
            }
            None => into.sampled.push(s),
        }
    }
    into.sampled.sort_by_key(|s| s.func);
    into.stats_records += process.stats_records;
    match (&mut into.aggregate, process.aggregate) {
        (Some(a), Some(b)) => a.merge(&b),
        (a @ None, b) => *a = b,
        (Some(_), None) => {}
    }
}

fn shift_starts(node: &mut Node, shift: u64) {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        node.start_ns = node.start_ns.saturating_add(shift);
        stack.extend(node.children.iter_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_a_run_are_named_by_process_and_segment() {
        let run = "1-2.trace";
        assert_eq!(position(run, "1-2.trace"), Some((0, 0)));
        assert_eq!(position(run, "1-2.trace.s3"), Some((0, 3)));
        assert_eq!(position(run, "1-2.trace.p77"), Some((77, 0)));
        assert_eq!(position(run, "1-2.trace.p77.s12"), Some((77, 12)));
        assert_eq!(position(run, "1-2.trace.functions.json"), None);
        assert_eq!(position(run, "1-2.trace.px"), None);
        assert_eq!(position(run, "1-2.traces"), None);
    }
}

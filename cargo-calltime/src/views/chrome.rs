//! Chrome trace event JSON (`{"traceEvents":[...]}`) for Perfetto and chrome://tracing: one track per thread or
//! task, one complete ("X") slice per recorded call, times in µs.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::aggregate::select;
use super::{Names, ViewOptions};
use crate::trace::{Node, ThreadKind, ThreadRef, Trace};

pub fn render(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<String> {
    let names = Names::new(&trace.table);
    let selected = select(trace, opts.invocation)?;
    let pid = trace.pid;
    // Threads and tasks have separate id spaces; each gets its own dense track id, in order of first appearance.
    let mut tracks: BTreeMap<(u8, u64), (u64, &ThreadRef)> = BTreeMap::new();
    for (_, inv) in &selected {
        let key = track_key(&inv.thread);
        let next = tracks.len() as u64 + 1;
        tracks.entry(key).or_insert((next, &inv.thread));
    }
    let mut events: Vec<Value> = Vec::new();
    let exe = trace.exe.rsplit(['/', '\\']).next().unwrap_or(&trace.exe);
    let process = if exe.is_empty() { format!("calltime pid {pid}") } else { format!("{exe} (pid {pid})") };
    events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}}));
    let mut by_tid: Vec<&(u64, &ThreadRef)> = tracks.values().collect();
    by_tid.sort_by_key(|(tid, _)| *tid);
    for (tid, thread) in by_tid {
        events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": {"name": thread.to_string()}}));
        events.push(json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
            "args": {"sort_index": tid}}));
    }
    for (k, inv) in &selected {
        let tid = tracks[&track_key(&inv.thread)].0;
        let mut root_args = serde_json::Map::new();
        root_args.insert("invocation".into(), json!(k));
        if inv.truncated_calls > 0 {
            root_args.insert("truncated_calls".into(), json!(inv.truncated_calls));
        }
        if inv.filtered_nodes > 0 {
            root_args.insert("filtered_nodes".into(), json!(inv.filtered_nodes));
        }
        slices(&inv.root, trace, &names, pid, tid, Some(root_args), &mut events);
    }
    // One event per line: diffable and still compact.
    let mut out = String::from("{\"traceEvents\":[\n");
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&serde_json::to_string(event)?);
    }
    out.push_str("\n],\"displayTimeUnit\":\"ns\"}\n");
    Ok(out)
}

fn track_key(thread: &ThreadRef) -> (u8, u64) {
    (if thread.kind == ThreadKind::Thread { 0 } else { 1 }, thread.id)
}

fn slices(
    node: &Node,
    trace: &Trace,
    names: &Names,
    pid: u32,
    tid: u64,
    extra: Option<serde_json::Map<String, Value>>,
    events: &mut Vec<Value>,
) {
    let mut args = extra.unwrap_or_default();
    match trace.table.get(node.func) {
        Some(f) => {
            args.insert("path".into(), json!(f.path));
            args.insert("location".into(), json!(format!("{}:{}", f.file, f.line)));
        }
        None => {
            args.insert("index".into(), json!(node.func));
        }
    }
    args.insert("panicked".into(), json!(node.panicked));
    events.push(json!({
        "name": names.get(node.func),
        "cat": "calltime",
        "ph": "X",
        "ts": node.start_ns as f64 / 1000.0,
        "dur": node.duration_ns as f64 / 1000.0,
        "pid": pid,
        "tid": tid,
        "args": args,
    }));
    for child in &node.children {
        slices(child, trace, names, pid, tid, None, events);
    }
}

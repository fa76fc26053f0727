//! Chrome trace event JSON (`{"traceEvents":[...]}`) for Perfetto and chrome://tracing: one track per thread or
//! task, one complete ("X") slice per recorded call, times in µs.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

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
        let next = tracks.len() as u64 + 1;
        tracks.entry(track_key(&inv.thread)).or_insert((next, &inv.thread));
    }
    let mut events = Events { out: String::from("{\"traceEvents\":[\n"), first: true };
    let exe = trace.exe.rsplit(['/', '\\']).next().unwrap_or(&trace.exe);
    let process = if exe.is_empty() { format!("calltime pid {pid}") } else { format!("{exe} (pid {pid})") };
    events.push(&json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}}));
    let mut by_tid: Vec<&(u64, &ThreadRef)> = tracks.values().collect();
    by_tid.sort_by_key(|(tid, _)| *tid);
    for (tid, thread) in by_tid {
        events.push(&json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": {"name": thread.to_string()}}));
        events.push(&json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
            "args": {"sort_index": tid}}));
    }
    // Each function's name and location, made once rather than once per call.
    let functions: BTreeMap<u32, Function> = trace
        .table
        .functions
        .iter()
        .map(|f| {
            (
                f.index,
                Function { name: names.get(f.index), path: f.path.clone(), location: format!("{}:{}", f.file, f.line) },
            )
        })
        .collect();
    for (k, inv) in &selected {
        let track = Track { pid, tid: tracks[&track_key(&inv.thread)].0 };
        let root = RootArgs {
            invocation: *k,
            truncated_calls: (inv.truncated_calls > 0).then_some(inv.truncated_calls),
            filtered_nodes: (inv.filtered_nodes > 0).then_some(inv.filtered_nodes),
        };
        slices(&inv.root, &names, &functions, track, Some(root), &mut events);
    }
    let mut out = events.out;
    out.push_str("\n],\"displayTimeUnit\":\"ns\"}\n");
    Ok(out)
}

fn track_key(thread: &ThreadRef) -> (u8, u64) {
    (if thread.kind == ThreadKind::Thread { 0 } else { 1 }, thread.id)
}

#[derive(Clone, Copy)]
struct Track {
    pid: u32,
    tid: u64,
}

/// The event list, written as it is built (one event per line: diffable and still compact); a trace can hold
/// millions of calls, so no intermediate value per event is kept.
struct Events {
    out: String,
    first: bool,
}

impl Events {
    fn push(&mut self, event: &impl Serialize) {
        if !self.first {
            self.out.push_str(",\n");
        }
        self.first = false;
        // Serializing these structs and maps to a string cannot fail.
        self.out.push_str(&serde_json::to_string(event).unwrap_or_default());
    }
}

/// One complete ("X") slice.
#[derive(Serialize)]
struct Slice<'a> {
    name: &'a str,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u64,
    args: Args<'a>,
}

#[derive(Serialize)]
struct Args<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<&'a str>,
    /// The function's index when the function table does not name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
    panicked: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    root: Option<RootArgs>,
}

/// Extra arguments of an invocation's root slice.
#[derive(Serialize, Clone, Copy)]
struct RootArgs {
    invocation: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filtered_nodes: Option<u64>,
}

struct Function {
    name: String,
    path: String,
    location: String,
}

fn slices(
    node: &Node,
    names: &Names,
    functions: &BTreeMap<u32, Function>,
    track: Track,
    root: Option<RootArgs>,
    events: &mut Events,
) {
    let function = functions.get(&node.func);
    let unnamed;
    let name = match function {
        Some(f) => f.name.as_str(),
        None => {
            unnamed = names.get(node.func);
            unnamed.as_str()
        }
    };
    events.push(&Slice {
        name,
        cat: "calltime",
        ph: "X",
        ts: node.start_ns as f64 / 1000.0,
        dur: node.duration_ns as f64 / 1000.0,
        pid: track.pid,
        tid: track.tid,
        args: Args {
            path: function.map(|f| f.path.as_str()),
            location: function.map(|f| f.location.as_str()),
            index: function.is_none().then_some(node.func),
            panicked: node.panicked,
            root,
        },
    });
    for child in &node.children {
        slices(child, names, functions, track, None, events);
    }
}

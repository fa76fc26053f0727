//! Chrome trace event JSON (`{"traceEvents":[...]}`) for Perfetto and chrome://tracing: one track per thread or
//! task, one complete ("X") slice per recorded call, times in µs.
//!
//! A folded invocation (trace format 2) has one node per call path, not per call, and no order of calls: each
//! node is one slice of its (estimated) total time, its children laid out one after another from its start, with
//! `calls`, `timed`, `min_ns`, `max_ns` and `estimated` in its args.
//!
//! Children that ran concurrently (async futures polled together by `join!` or `select!`) would cross on one
//! track: each child that starts before an earlier sibling ended goes to an extra track (a lane, named
//! `concurrent with track N`). Cancelled calls and `Err` returns are in the args (`cancelled`, `errs`). Calls made
//! by work spawned on another thread or task go on a track of that thread or task (`thread N (spawned)`).

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
    let mut events = Events {
        out: String::from("{\"traceEvents\":[\n"),
        first: true,
        pid,
        lanes: BTreeMap::new(),
        spawned: BTreeMap::new(),
        next_tid: tracks.len() as u64 + 1,
    };
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
        let track = Track { pid, tid: tracks[&track_key(&inv.thread)].0, depth: 0 };
        let root = RootArgs {
            invocation: *k,
            truncated_calls: (inv.truncated_calls > 0).then_some(inv.truncated_calls),
            filtered_nodes: (inv.filtered_nodes > 0).then_some(inv.filtered_nodes),
        };
        let layout = if inv.folded {
            let end_ns = inv.root.start_ns.saturating_add(inv.root.duration_ns);
            Layout::Sequential { start_ns: inv.root.start_ns, end_ns }
        } else {
            Layout::Recorded
        };
        slices(&inv.root, layout, &names, &functions, track, Some(root), &mut events);
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
    /// Depth of the node whose slice goes on it (the root's is 0).
    depth: u32,
}

/// The event list, written as it is built (one event per line: diffable and still compact); a trace can hold
/// millions of calls, so no intermediate value per event is kept.
struct Events {
    out: String,
    first: bool,
    pid: u32,
    /// Extra tracks for children that ran concurrently with an earlier sibling: by (the parent's track, the
    /// parent's depth, lane). Nodes of one track and depth never overlap, so their children can share lanes.
    lanes: BTreeMap<(u64, u32, usize), u64>,
    /// Tracks of the threads and tasks spawned work ran on, by `track_key`.
    spawned: BTreeMap<(u8, u64), u64>,
    next_tid: u64,
}

impl Events {
    /// The track of lane `lane` (0: the parent's own) for the children of a node on `parent`.
    fn lane(&mut self, parent: Track, lane: usize) -> Track {
        let depth = parent.depth + 1;
        if lane == 0 {
            return Track { depth, ..parent };
        }
        let key = (parent.tid, parent.depth, lane);
        let tid = match self.lanes.get(&key) {
            Some(&tid) => tid,
            None => {
                let tid = self.next_tid;
                self.next_tid += 1;
                self.lanes.insert(key, tid);
                self.name_track(tid, format!("concurrent with track {} (depth {depth}, lane {lane})", parent.tid));
                tid
            }
        };
        Track { pid: parent.pid, tid, depth }
    }

    /// The track of the thread or task `lane` that spawned work ran on, for a call under a node on `parent`.
    fn spawned_track(&mut self, parent: Track, lane: &ThreadRef) -> Track {
        let key = track_key(lane);
        let tid = match self.spawned.get(&key) {
            Some(&tid) => tid,
            None => {
                let tid = self.next_tid;
                self.next_tid += 1;
                self.spawned.insert(key, tid);
                self.name_track(tid, format!("{lane} (spawned)"));
                tid
            }
        };
        Track { pid: parent.pid, tid, depth: parent.depth + 1 }
    }

    /// The metadata events that name a new track and keep tracks in id order.
    fn name_track(&mut self, tid: u64, name: String) {
        self.push(&json!({"name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid, "args": {"name": name}}));
        self.push(&json!({"name": "thread_sort_index", "ph": "M", "pid": self.pid, "tid": tid,
            "args": {"sort_index": tid}}));
    }

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
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cancelled: bool,
    #[serde(skip_serializing_if = "is_zero")]
    errs: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    path_stats: Option<PathArgs>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    root: Option<RootArgs>,
}

/// Extra arguments of a folded invocation's slice: it stands for every call of one call path.
#[derive(Serialize, Clone, Copy)]
struct PathArgs {
    /// The path's (estimated) total: the slice is shorter only where it had to be cut at its parent's end.
    total_ns: u64,
    calls: u64,
    timed: u64,
    /// Shortest and longest timed call.
    min_ns: u64,
    max_ns: u64,
    /// The slice's duration is estimated from the timed calls.
    estimated: bool,
}

/// Where a node's slice goes on the time line.
#[derive(Clone, Copy)]
enum Layout {
    /// Where the call happened.
    Recorded,
    /// A folded node, at `start_ns` and ending by `end_ns` (its parent's end): its calls have no single place in
    /// time.
    Sequential { start_ns: u64, end_ns: u64 },
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
    layout: Layout,
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
    let (start_ns, duration_ns, path_stats) = match layout {
        Layout::Recorded => (node.start_ns, node.duration_ns, None),
        Layout::Sequential { start_ns, end_ns } => (
            start_ns,
            node.duration_ns.min(end_ns.saturating_sub(start_ns)),
            Some(PathArgs {
                total_ns: node.duration_ns,
                calls: node.calls,
                timed: node.timed_calls,
                min_ns: node.min_ns,
                max_ns: node.max_ns,
                estimated: node.is_estimated(),
            }),
        ),
    };
    events.push(&Slice {
        name,
        cat: "calltime",
        ph: "X",
        ts: start_ns as f64 / 1000.0,
        dur: duration_ns as f64 / 1000.0,
        pid: track.pid,
        tid: track.tid,
        args: Args {
            path: function.map(|f| f.path.as_str()),
            location: function.map(|f| f.location.as_str()),
            index: function.is_none().then_some(node.func),
            panicked: node.panicked,
            cancelled: node.cancelled,
            errs: node.errs,
            path_stats,
            root,
        },
    });
    // Sequential children start where the previous one ended. Estimated totals can add up to more than the
    // parent's time: then the slices are cut at the parent's end (a slice never sticks out of its parent).
    let end_ns = start_ns.saturating_add(duration_ns);
    let mut next_ns = start_ns;
    // Recorded children that overlap an earlier sibling (futures polled together) go to a lane of their own,
    // so no two slices of one track cross: each lane ends before its next child starts.
    let mut lane_ends: Vec<u64> = Vec::new();
    for child in &node.children {
        let (child_layout, lane) = match layout {
            Layout::Recorded => {
                let lane = lane_ends.iter().position(|&end| end <= child.start_ns).unwrap_or(lane_ends.len());
                let child_end = child.start_ns.saturating_add(child.duration_ns);
                match lane_ends.get_mut(lane) {
                    Some(end) => *end = child_end,
                    None => lane_ends.push(child_end),
                }
                (Layout::Recorded, lane)
            }
            Layout::Sequential { .. } => (Layout::Sequential { start_ns: next_ns.min(end_ns), end_ns }, 0),
        };
        next_ns = next_ns.saturating_add(child.duration_ns);
        let child_track = match &child.lane {
            Some(spawned) => events.spawned_track(track, spawned),
            None => events.lane(track, lane),
        };
        slices(child, child_layout, names, functions, child_track, None, events);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

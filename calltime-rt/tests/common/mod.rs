//! Shared by the runtime's tests: run a scenario in a child process with its own settings, and read the trace file
//! back with cargo-calltime's reader (the one reader of docs/trace-format.md), flattened into preorder nodes with
//! depths, as the lines are written, for the tests' shapes and checks. The reader does not know version 3 yet (the
//! tool's side of issue 11): its additions are taken out here (`split_version_3`) and the rest, a version 2 trace,
//! goes through the reader.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use cargo_calltime::trace as reader;

/// Environment variable that makes a test binary run one scenario instead of checking it.
pub const CHILD_VAR: &str = "CALLTIME_RT_TEST_CHILD";

/// True in the child process started by [`run_child`] for `name`.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD_VAR).is_ok_and(|v| v == name)
}

/// Runs test `name` of this test binary in a child process (where `is_child(name)` holds) with `CALLTIME_OUT` set to
/// a fresh file and `env` added; returns the child's output and the trace text ("" when no file was written).
pub fn run_child(name: &str, env: &[(&str, &str)]) -> (Output, String) {
    let out = out_path(name);
    let _ = std::fs::remove_file(&out);
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(&exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"]).env(CHILD_VAR, name).env("CALLTIME_OUT", &out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().unwrap();
    let text = read_trace(&out);
    (output, text)
}

/// The `CALLTIME_OUT` that [`run_child`] gives test `name`'s child (its directory created).
pub fn out_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("calltime-rt-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
    dir.join(format!("{stem}-{name}.trace"))
}

/// A trace file's text, version 4's binary blocks written out as the lines they stand for ("" when unreadable).
pub fn read_trace(path: impl AsRef<std::path::Path>) -> String {
    std::fs::read(path).map(|bytes| reader::text_of(&bytes)).unwrap_or_default()
}

/// Like [`run_child`], and the child must succeed.
pub fn run_ok(name: &str, env: &[(&str, &str)]) -> Trace {
    let (output, text) = run_child(name, env);
    assert!(
        output.status.success(),
        "child {name} failed: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    parse(&text)
}

/// A node as the tests look at it: the tool's model flattened into preorder with depths, as the lines are written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub depth: u32,
    pub index: u32,
    pub start: u64,
    /// The call's duration; for a call path, `timed_ns` (the sum over its timed calls, as written).
    pub duration: u64,
    /// Bit 0 unwound, bit 1 cancelled, as in the file.
    pub flags: u32,
    /// `Some` for a call path of a folded invocation (an `a` line): calls, timed calls, min and max ns.
    pub folded: Option<Folded>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Folded {
    pub calls: u64,
    pub timed: u64,
    pub min: u64,
    pub max: u64,
    /// Of `timed`, the calls timed unconditionally and their total ns (version 3); the others were sampled.
    pub exact_calls: u64,
    pub exact_ns: u64,
}

impl Folded {
    /// The unbiased estimate of the path's total (trace-format.md), from its timed ns.
    pub fn estimate(&self, timed_ns: u64) -> f64 {
        let (calls, timed, exact_calls, exact_ns) = (self.calls, self.timed, self.exact_calls, self.exact_ns);
        if timed > exact_calls {
            let sampled = (timed_ns - exact_ns) as f64 / (timed - exact_calls) as f64;
            exact_ns as f64 + (calls - exact_calls) as f64 * sampled
        } else if exact_calls > 0 {
            exact_ns as f64 * calls as f64 / exact_calls as f64
        } else {
            0.0
        }
    }
}

/// A `retire` record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retire {
    pub index: u32,
    pub at_ns: u64,
    pub calls: u64,
    pub mean_ns: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Inv {
    pub seq: u64,
    pub kind: String,
    pub id: u64,
    pub start: u64,
    pub duration: u64,
    pub node_count: u64,
    pub truncated: u64,
    pub filtered: u64,
    pub name: String,
    pub nodes: Vec<Node>,
    /// `r` lines: (function index, calls made after it retired).
    pub retired: Vec<(u32, u64)>,
}

#[derive(Debug, Default)]
pub struct Trace {
    /// The header lines as the runtime wrote them.
    pub header: Vec<String>,
    pub invocations: Vec<Inv>,
    /// seen, kept, sampled_out, dropped, truncated of the last `stats` line.
    pub stats: Option<[u64; 5]>,
    /// Every field of the last `stats` line.
    pub stats_fields: Vec<u64>,
    pub retirements: Vec<Retire>,
    /// `quiet` records: (function index, at_ns).
    pub quiet: Vec<(u32, u64)>,
    /// The last `sampled` record of each root: root index, invocations skipped for cost, of them timed, their ns,
    /// and the root tasks among them.
    pub sampled: Vec<[u64; 5]>,
    pub stats_lines: usize,
    pub incomplete: usize,
    pub last_line: String,
}

/// Reads a trace with cargo-calltime's reader. The runtime must write nothing the reader has to drop, except what a
/// crash cuts off; and the tool's builder must write a whole trace back byte for byte.
pub fn parse(text: &str) -> Trace {
    if text.is_empty() {
        // No file was written (the scenario wrote elsewhere, or recorded nothing).
        return Trace::default();
    }
    let (version_2, extras) = split_version_3(text);
    let mut trace = parse_version_2(&version_2);
    trace.header = text
        .lines()
        .take(trace.header.len() + usize::from(extras.calibration) + usize::from(extras.clock))
        .map(str::to_owned)
        .collect();
    for inv in &mut trace.invocations {
        let exact = extras.exact.get(&inv.seq).map_or(&[][..], Vec::as_slice);
        let paths = inv.nodes.iter_mut().filter_map(|n| n.folded.as_mut());
        assert_eq!(paths.count(), exact.len(), "every a line of invocation {} has its exact part", inv.seq);
        let paths = inv.nodes.iter_mut().filter_map(|n| n.folded.as_mut());
        for (folded, &(calls, ns)) in paths.zip(exact) {
            (folded.exact_calls, folded.exact_ns) = (calls, ns);
        }
        inv.retired = extras.retired.get(&inv.seq).cloned().unwrap_or_default();
    }
    trace.retirements = extras.retirements;
    trace.quiet = extras.quiet;
    trace.stats_fields = extras.stats_fields;
    trace.sampled = extras.sampled;
    trace
}

/// What version 3 adds to version 2, read from a trace's lines.
#[derive(Default)]
struct Extras {
    calibration: bool,
    /// The header's `clock` line (the TSC rate's span and error bound).
    clock: bool,
    retirements: Vec<Retire>,
    quiet: Vec<(u32, u64)>,
    /// By invocation seq: `(exact_calls, exact_ns)` of its `a` lines in file order, and its `r` lines.
    exact: std::collections::HashMap<u64, Vec<(u64, u64)>>,
    retired: std::collections::HashMap<u64, Vec<(u32, u64)>>,
    stats_fields: Vec<u64>,
    sampled: Vec<[u64; 5]>,
}

/// A version 3 trace as the version 2 trace it contains, and what version 3 adds (checked as it is read).
fn split_version_3(text: &str) -> (String, Extras) {
    let mut extras = Extras::default();
    // Versions 4 and 5 are version 3 with binary blocks, which `run_child` wrote out as lines.
    let rest =
        ["calltime-trace 3\n", "calltime-trace 4\n", "calltime-trace 5\n"].iter().find_map(|v| text.strip_prefix(v));
    let Some(rest) = rest else { return (text.to_owned(), extras) };
    let mut out = String::from("calltime-trace 2\n");
    let mut open: Option<u64> = None;
    let number = |word: &str| word.parse::<u64>().unwrap_or_else(|_| panic!("not a number: {word:?}"));
    for line in rest.split_inclusive('\n') {
        let words: Vec<&str> = line.trim_end_matches('\n').split(' ').collect();
        let whole = line.ends_with('\n');
        match words[0] {
            // The whole-run aggregate (between invocations) is read and checked by the tool's tests.
            "aggregate" | "gs" | "g" | "gr" if whole => {
                assert!(open.is_none(), "aggregate records come between invocations: {line}");
                continue;
            }
            "calibration" if whole => {
                assert!(!extras.calibration && open.is_none(), "one calibration line, in the header: {line}");
                extras.calibration = true;
                continue;
            }
            "clock" if whole => {
                assert!(!extras.clock && open.is_none(), "one clock line, in the header: {line}");
                extras.clock = true;
                continue;
            }
            "retire" if whole => {
                assert!(open.is_none(), "retire between invocations: {line}");
                let [index, at_ns, calls, mean_ns] = [1, 2, 3, 4].map(|i| number(words[i]));
                extras.retirements.push(Retire { index: index as u32, at_ns, calls, mean_ns });
                continue;
            }
            // Written where the writer is when a function goes quiet, not where the builder would put it.
            "quiet" if whole => {
                assert!(open.is_none(), "quiet between invocations: {line}");
                let index = number(words[1]) as u32;
                assert!(extras.retirements.iter().any(|r| r.index == index), "quiet after its retire: {line}");
                extras.quiet.push((index, number(words[2])));
                continue;
            }
            "r" if whole => {
                let seq = open.expect("r inside an invocation");
                let (index, calls) = (number(words[1]), number(words[2]));
                assert!(calls > 0 && words.len() == 3, "{line}");
                extras.retired.entry(seq).or_default().push((index as u32, calls));
                continue;
            }
            "a" if whole => {
                // 11 fields, then the allocation counts of a runtime that counts them.
                assert_eq!(words.len(), 14, "an a line of version 3 has 13 fields: {line}");
                let seq = open.expect("a inside an invocation");
                extras.exact.entry(seq).or_default().push((number(words[10]), number(words[11])));
                out.push_str(&words[..10].join(" "));
                out.push('\n');
                continue;
            }
            "stats" if whole => {
                extras.stats_fields = words[1..].iter().map(|w| number(w)).collect();
                out.push_str(&words[..6].join(" "));
                out.push('\n');
                continue;
            }
            // Kept for the reader too (cumulative: the last of each root stands).
            "sampled" if whole => {
                assert!(open.is_none(), "sampled between invocations: {line}");
                assert_eq!(words.len(), 6, "a sampled record has five fields: {line}");
                let fields = [1, 2, 3, 4, 5].map(|i| number(words[i]));
                extras.sampled.retain(|s| s[0] != fields[0]);
                extras.sampled.push(fields);
            }
            "inv" => open = words.get(1).and_then(|w| w.parse().ok()),
            "end" => open = None,
            _ => {}
        }
        out.push_str(line);
    }
    (out, extras)
}

/// Reads a version 2 trace with cargo-calltime's reader.
fn parse_version_2(text: &str) -> Trace {
    let model = reader::parse(text).unwrap_or_else(|e| panic!("not a trace: {e:#}\n{text}"));
    assert!(model.warnings.iter().all(|w| w.contains("cut off")), "{:?}\n{text}", model.warnings);
    let last_line = text.lines().last().unwrap_or_default().to_owned();
    let header: Vec<String> = reader::TraceBuilder::new(&model).text().lines().map(str::to_owned).collect();
    assert!(text.starts_with(&header.join("\n")), "the builder writes the header as the runtime does:\n{text}");
    // `TraceBuilder::write` puts records of a kind together: a `control` record between invocations has no place
    // it could keep, so a trace with one is read but not written back.
    let whole = model.warnings.is_empty()
        && model.controls.is_empty()
        && model.stats_records <= 1
        && (model.stats_records == 0 || last_line.starts_with("stats "));
    if whole {
        assert_eq!(reader::TraceBuilder::write(&model), text, "the builder writes the trace as the runtime does");
    }
    Trace {
        header,
        invocations: model.invocations.iter().map(flatten).collect(),
        stats: (model.stats_records > 0).then(|| {
            let s = model.stats;
            [s.seen, s.kept, s.sampled_out, s.dropped, s.truncated]
        }),
        stats_lines: model.stats_records,
        incomplete: model.stats.incomplete as usize,
        last_line,
        ..Trace::default()
    }
}

fn flatten(inv: &reader::Invocation) -> Inv {
    fn walk(node: &reader::Node, depth: u32, folded: bool, out: &mut Vec<Node>) {
        let (calls, timed, min, max) = (node.calls, node.timed_calls, node.min_ns, node.max_ns);
        let path = folded.then_some(Folded { calls, timed, min, max, exact_calls: 0, exact_ns: 0 });
        if let Some(f) = path {
            // Ticks become nanoseconds value by value (the sum, the min and the max each rounded), so the sum may
            // be off by up to a nanosecond per timed call.
            let ok = f.timed == 0
                || (f.min <= f.max
                    && f.min * f.timed <= node.timed_ns + f.timed
                    && node.timed_ns <= f.max * f.timed + f.timed);
            assert!(ok, "timed calls of a path disagree with its extremes: {node:?}");
        }
        out.push(Node {
            depth,
            index: node.func,
            start: node.start_ns,
            duration: node.timed_ns,
            flags: u32::from(node.panicked) | (u32::from(node.cancelled) << 1),
            folded: path,
        });
        for child in &node.children {
            walk(child, depth + 1, folded, out);
        }
    }
    let mut nodes = Vec::new();
    walk(&inv.root, 0, inv.folded, &mut nodes);
    let kind = match inv.thread.kind {
        reader::ThreadKind::Thread => "thread",
        reader::ThreadKind::Task => "task",
    };
    Inv {
        seq: inv.seq,
        kind: kind.to_owned(),
        id: inv.thread.id,
        start: inv.start_ns,
        duration: inv.duration_ns,
        node_count: nodes.len() as u64,
        truncated: inv.truncated_calls,
        filtered: inv.filtered_nodes,
        name: inv.thread.name.clone(),
        nodes,
        retired: Vec::new(),
    }
}

impl Inv {
    /// The tree as text: `index[children]`, `!` after a panicked node, `~` after a cancelled one.
    pub fn shape(&self) -> String {
        let mut out = String::new();
        let mut stack: Vec<u32> = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            while stack.len() as u32 > node.depth {
                stack.pop();
                out.push(']');
            }
            if i > 0 && !out.ends_with('[') {
                out.push(' ');
            }
            out.push_str(&node.index.to_string());
            if let Some(folded) = node.folded {
                out.push_str(&format!("*{}", folded.calls));
            }
            if node.flags & 1 != 0 {
                out.push('!');
            }
            if node.flags & 2 != 0 {
                out.push('~');
            }
            let has_child = self.nodes.get(i + 1).is_some_and(|n| n.depth > node.depth);
            if has_child {
                out.push('[');
                stack.push(node.depth);
            }
        }
        while stack.pop().is_some() {
            out.push(']');
        }
        out
    }

    /// Every node lies within its parent's span (start and end), and the root's span is the invocation's.
    pub fn check_nesting(&self) {
        assert_eq!((self.nodes[0].start, self.nodes[0].duration), (self.start, self.duration));
        let mut stack: Vec<&Node> = Vec::new();
        for node in &self.nodes {
            stack.truncate(node.depth as usize);
            if let Some(parent) = stack.last() {
                assert!(node.start >= parent.start, "{node:?} starts before its parent {parent:?}");
                assert!(
                    node.start + node.duration <= parent.start + parent.duration,
                    "{node:?} ends after its parent {parent:?}"
                );
            }
            stack.push(node);
        }
    }
}

impl Trace {
    pub fn shapes(&self) -> Vec<String> {
        self.invocations.iter().map(Inv::shape).collect()
    }
}

/// A waker that does nothing: the tests poll their tasks in turn themselves.
pub fn noop_waker() -> std::task::Waker {
    fn clone(_: *const ()) -> std::task::RawWaker {
        std::task::RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: std::task::RawWakerVTable = std::task::RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: every vtable function ignores the (null) data pointer.
    unsafe { std::task::Waker::from_raw(std::task::RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// A boxed task the tests poll by hand.
pub type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Polls `task` once; true when it finished.
pub fn poll_once(task: &mut Task) -> bool {
    let waker = noop_waker();
    task.as_mut().poll(&mut std::task::Context::from_waker(&waker)).is_ready()
}

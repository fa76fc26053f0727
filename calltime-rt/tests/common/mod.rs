//! Shared by the runtime's tests: run a scenario in a child process with its own settings, and read the trace file
//! back with a small parser that follows docs/trace-format.md (the same rules as cargo-calltime's reader: a record
//! without `end` is left out and counted).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Environment variable that makes a test binary run one scenario instead of checking it.
pub const CHILD_VAR: &str = "CALLTIME_RT_TEST_CHILD";

/// True in the child process started by [`run_child`] for `name`.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD_VAR).is_ok_and(|v| v == name)
}

/// Runs test `name` of this test binary in a child process (where `is_child(name)` holds) with `CALLTIME_OUT` set to
/// a fresh file and `env` added; returns the child's output and the trace text ("" when no file was written).
pub fn run_child(name: &str, env: &[(&str, &str)]) -> (Output, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("calltime-rt-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
    let out = dir.join(format!("{stem}-{name}.trace"));
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(&exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"]).env(CHILD_VAR, name).env("CALLTIME_OUT", &out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().unwrap();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    (output, text)
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

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub depth: u32,
    pub index: u32,
    pub start: u64,
    pub duration: u64,
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
            exact_ns as f64 + (calls - exact_calls) as f64 * (timed_ns - exact_ns) as f64 / (timed - exact_calls) as f64
        } else if exact_calls > 0 {
            exact_ns as f64 * calls as f64 / exact_calls as f64
        } else {
            0.0
        }
    }
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

/// A `retire` record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retire {
    pub index: u32,
    pub at_ns: u64,
    pub calls: u64,
    pub mean_ns: u64,
}

#[derive(Debug, Default)]
pub struct Trace {
    pub header: Vec<String>,
    pub invocations: Vec<Inv>,
    /// seen, kept, sampled_out, dropped, truncated of the last `stats` line.
    pub stats: Option<[u64; 5]>,
    /// Every field of the last `stats` line.
    pub stats_fields: Vec<u64>,
    pub retirements: Vec<Retire>,
    pub stats_lines: usize,
    pub incomplete: usize,
    pub last_line: String,
}

fn nums<const N: usize>(words: &[&str]) -> Option<[u64; N]> {
    let mut out = [0; N];
    for (slot, word) in out.iter_mut().zip(words) {
        *slot = word.parse().ok()?;
    }
    (words.len() >= N).then_some(out)
}

/// Parses a trace; every complete record is checked for consistency (node count, depths, seq in `end`).
pub fn parse(text: &str) -> Trace {
    let mut trace = Trace::default();
    let mut open: Option<Inv> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let complete_line = line.ends_with('\n');
        let line = line.trim_end_matches('\n');
        trace.last_line = line.to_string();
        let header_line = i < 4 || line.starts_with("calibration ");
        if header_line && !line.starts_with("inv ") && !line.starts_with("stats ") {
            trace.header.push(line.to_string());
            continue;
        }
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let words: Vec<&str> = rest.split(' ').collect();
        if !complete_line {
            // Torn last line.
            if open.take().is_some() {
                trace.incomplete += 1;
            }
            break;
        }
        match kind {
            "inv" => {
                if open.is_some() {
                    trace.incomplete += 1;
                }
                let (seq, id, start, duration, node_count, truncated, filtered) = {
                    let w: Vec<&str> = rest.splitn(9, ' ').collect();
                    let n = |k: usize| w[k].parse::<u64>().unwrap();
                    (n(0), n(2), n(3), n(4), n(5), n(6), n(7))
                };
                let w: Vec<&str> = rest.splitn(9, ' ').collect();
                open = Some(Inv {
                    seq,
                    kind: w[1].to_string(),
                    id,
                    start,
                    duration,
                    node_count,
                    truncated,
                    filtered,
                    name: w.get(8).unwrap_or(&"").to_string(),
                    nodes: Vec::new(),
                    retired: Vec::new(),
                });
            }
            "n" => {
                let [depth, index, start, duration, flags] = nums::<5>(&words).expect("node fields");
                open.as_mut().expect("node inside an invocation").nodes.push(Node {
                    depth: depth as u32,
                    index: index as u32,
                    start,
                    duration,
                    flags: flags as u32,
                    folded: None,
                });
            }
            "a" => {
                let [depth, index, calls, timed, start, timed_ns, min, max, flags] =
                    nums::<9>(&words).expect("path fields");
                let [exact_calls, exact_ns] = nums::<2>(&words[9..]).expect("exact fields of version 3");
                assert!(timed <= calls && calls >= 1, "{line}");
                assert!(exact_calls <= timed && exact_ns <= timed_ns, "{line}");
                assert!(timed == 0 || (min <= max && min * timed <= timed_ns && timed_ns <= max * timed), "{line}");
                open.as_mut().expect("path inside an invocation").nodes.push(Node {
                    depth: depth as u32,
                    index: index as u32,
                    start,
                    duration: timed_ns,
                    flags: flags as u32,
                    folded: Some(Folded { calls, timed, min, max, exact_calls, exact_ns }),
                });
            }
            "end" => {
                let inv = open.take().expect("end after inv");
                assert_eq!(rest.parse::<u64>().unwrap(), inv.seq, "end names its inv");
                assert_eq!(inv.nodes.len() as u64, inv.node_count, "node_count matches the n lines");
                assert_eq!(inv.nodes[0].depth, 0, "the root comes first");
                for pair in inv.nodes.windows(2) {
                    assert!(pair[1].depth >= 1 && pair[1].depth <= pair[0].depth + 1, "preorder depths");
                }
                trace.invocations.push(inv);
            }
            "r" => {
                let [index, calls] = nums::<2>(&words).expect("r fields");
                assert!(calls > 0, "{line}");
                open.as_mut().expect("r inside an invocation").retired.push((index as u32, calls));
            }
            "retire" => {
                assert!(open.is_none(), "retire between invocations: {line}");
                let [index, at_ns, calls, mean_ns] = nums::<4>(&words).expect("retire fields");
                trace.retirements.push(Retire { index: index as u32, at_ns, calls, mean_ns });
            }
            "stats" => {
                trace.stats = Some(nums::<5>(&words).expect("stats fields"));
                trace.stats_fields = words.iter().map(|w| w.parse().expect("stats field")).collect();
                trace.stats_lines += 1;
            }
            _ => {}
        }
    }
    if open.is_some() {
        trace.incomplete += 1;
    }
    trace
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

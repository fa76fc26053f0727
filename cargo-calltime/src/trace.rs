//! Stage 8: loading what the runtime wrote. The file format is specified in docs/trace-format.md; this is its
//! only reader.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The newest trace format version this reader understands; it also reads every older one (1).
pub const TRACE_VERSION: u32 = 2;
/// Versions [`parse`] accepts.
pub const TRACE_VERSIONS: std::ops::RangeInclusive<u32> = 1..=TRACE_VERSION;
const MAGIC: &str = "calltime-trace";

/// The side table that names the runtime's dense indices; written by the tool as JSON next to the trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FunctionTable {
    pub version: u32,
    pub plan_id: String,
    pub roots: Vec<String>,
    pub depth: u32,
    pub filter: Option<String>,
    /// Indexed by `FunctionInfo::index` (dense, 0..N).
    pub functions: Vec<FunctionInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionInfo {
    pub index: u32,
    pub path: String,
    pub display: String,
    pub file: String,
    pub line: u32,
    pub root: bool,
}

impl FunctionTable {
    pub fn load(path: &Path) -> Result<FunctionTable> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read function table {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("function table {} is not valid JSON", path.display()))
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text).with_context(|| format!("cannot write function table {}", path.display()))
    }

    /// The function with index `index`, if the table has it.
    pub fn get(&self, index: u32) -> Option<&FunctionInfo> {
        self.functions.get(index as usize).filter(|f| f.index == index)
    }

    /// Full path of `index`, or `#index` when the table does not name it.
    pub fn path(&self, index: u32) -> String {
        self.get(index).map_or_else(|| format!("#{index}"), |f| f.path.clone())
    }

    /// Short name of `index`, or `#index` when the table does not name it.
    pub fn display(&self, index: u32) -> String {
        self.get(index).map_or_else(|| format!("#{index}"), |f| f.display.clone())
    }
}

/// A loaded trace file.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub path: PathBuf,
    pub version: u32,
    pub pid: u32,
    /// Wall-clock time (ns since the Unix epoch) of the trace's time origin; every `start_ns` counts from it.
    pub epoch_unix_ns: u64,
    pub exe: String,
    pub plan_id: Option<String>,
    /// The function table path named by the `plan` line.
    pub table_hint: Option<PathBuf>,
    pub table: FunctionTable,
    /// The runtime's settings from the `settings` line (version 2: `node_cap`, `fold_after`, `time_sample`,
    /// `min_ns`, `sample`, `max_invocations`, and whatever later runtimes add); empty for version 1.
    pub settings: BTreeMap<String, u64>,
    /// Complete invocations, in the order they were written (completion order).
    pub invocations: Vec<Invocation>,
    pub stats: Stats,
    /// Problems found while loading (a record cut off by a crash, a missing function table, ...).
    pub warnings: Vec<String>,
}

/// Counters the runtime keeps per process (the last `stats` line of the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Root invocations started.
    pub seen: u64,
    /// Invocations written to the file.
    pub kept: u64,
    /// Invocations not recorded because of 1-in-N sampling.
    pub sampled_out: u64,
    /// Invocations dropped because the writer fell behind or the maximum was reached.
    pub dropped: u64,
    /// Invocations whose tree hit the node cap.
    pub truncated: u64,
    /// Records cut off at the end of the file (a crash while writing); counted by the reader.
    pub incomplete: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadKind {
    Thread,
    Task,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadRef {
    pub kind: ThreadKind,
    pub id: u64,
    pub name: String,
}

impl std::fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            ThreadKind::Thread => "thread",
            ThreadKind::Task => "task",
        };
        if self.name.is_empty() {
            write!(f, "{kind} {}", self.id)
        } else {
            write!(f, "{kind} {} ({})", self.id, self.name)
        }
    }
}

/// One call of the root and everything instrumented under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub seq: u64,
    pub thread: ThreadRef,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Calls counted past the node cap but not stored (0 when the tree is complete).
    pub truncated_calls: u64,
    /// Nodes left out because they were shorter than the minimum duration.
    pub filtered_nodes: u64,
    /// The tree was recorded folded (version 2 `a` lines): one node per call path, not per call, with exact call
    /// counts and times that may be estimated from a sample of the calls.
    pub folded: bool,
    pub root: Node,
}

/// One call in a tree (an `n` line), or every call of one call path in a folded tree (an `a` line).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Dense index into the function table.
    pub func: u32,
    /// Start of the (first) call.
    pub start_ns: u64,
    /// Duration of the call; for a call path, the estimated total of its calls (exact when every call was timed).
    pub duration_ns: u64,
    /// Calls this node stands for: 1 for a single call, the exact count of a call path's calls otherwise.
    pub calls: u64,
    /// How many of `calls` were timed (`calls` when the duration is exact).
    pub timed_calls: u64,
    /// Shortest and longest timed call (the duration for a single call; 0 when no call was timed).
    pub min_ns: u64,
    pub max_ns: u64,
    /// The call was left by unwinding; for a call path, at least one of its calls was.
    pub panicked: bool,
    pub children: Vec<Node>,
}

impl Node {
    /// One call (an `n` line, or a test's tree).
    pub fn call(func: u32, start_ns: u64, duration_ns: u64, panicked: bool, children: Vec<Node>) -> Node {
        Node {
            func,
            start_ns,
            duration_ns,
            calls: 1,
            timed_calls: 1,
            min_ns: duration_ns,
            max_ns: duration_ns,
            panicked,
            children,
        }
    }

    /// The duration is an estimate: only some of the calls were timed.
    pub fn is_estimated(&self) -> bool {
        self.timed_calls < self.calls
    }

    /// Time not spent in instrumented children (saturating: neither clock skew nor estimated children that add up
    /// to more than their parent make it negative).
    pub fn self_ns(&self) -> u64 {
        let children = self.children.iter().fold(0u64, |sum, c| sum.saturating_add(c.duration_ns));
        self.duration_ns.saturating_sub(children)
    }

    /// Number of nodes in this subtree, itself included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
}

/// Totals for one call path (root first) within one invocation; times of a folded tree may be estimates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStat {
    pub calls: u64,
    pub total_ns: u64,
    pub self_ns: u64,
}

impl Invocation {
    /// Every call path in the tree (as function indices from the root) with its calls, total and self time.
    pub fn path_stats(&self) -> BTreeMap<Vec<u32>, PathStat> {
        fn walk(node: &Node, path: &mut Vec<u32>, out: &mut BTreeMap<Vec<u32>, PathStat>) {
            path.push(node.func);
            let stat = out.entry(path.clone()).or_default();
            stat.calls += node.calls;
            stat.total_ns = stat.total_ns.saturating_add(node.duration_ns);
            stat.self_ns = stat.self_ns.saturating_add(node.self_ns());
            for child in &node.children {
                walk(child, path, out);
            }
            path.pop();
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut Vec::new(), &mut out);
        out
    }
}

impl Trace {
    /// Loads a trace file; `functions` overrides the function table the trace names.
    pub fn load(path: &Path, functions: Option<&Path>) -> Result<Trace> {
        let text = std::fs::read(path).with_context(|| format!("cannot read trace {}", path.display()))?;
        let text = String::from_utf8_lossy(&text);
        let mut trace = parse(&text).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a calltime trace: {e:#}\n  hint: pass a trace written by cargo calltime (`--save FILE`, \
                 `<target>/calltime/last.trace`) or by an instrumented binary (CALLTIME_OUT)",
                path.display()
            )
        })?;
        trace.path = path.to_owned();
        let table_path = match functions {
            Some(p) => Some(p.to_owned()),
            None => trace.table_path_hint(path),
        };
        match table_path {
            Some(p) if p.exists() => trace.table = FunctionTable::load(&p)?,
            Some(p) => trace.warnings.push(format!(
                "function table {} not found: functions are shown by index (pass --functions FILE)",
                p.display()
            )),
            None => trace
                .warnings
                .push("the trace names no function table: functions are shown by index (pass --functions FILE)".into()),
        }
        if let (Some(id), false) = (&trace.plan_id, trace.table.plan_id.is_empty()) {
            if *id != trace.table.plan_id {
                trace.warnings.push(format!(
                    "function table is for plan {} but the trace was recorded with plan {id}: names may be wrong",
                    trace.table.plan_id
                ));
            }
        }
        Ok(trace)
    }

    /// Where the function table should be: `<trace>.functions.json` beside the trace wins over the path in the
    /// `plan` line, so a saved trace and its table travel together.
    fn table_path_hint(&self, trace_path: &Path) -> Option<PathBuf> {
        let beside = functions_path_for(trace_path);
        if beside.exists() {
            return Some(beside);
        }
        self.table_hint.clone()
    }
}

/// The conventional place of a trace's function table: `<trace file name>.functions.json` beside it.
pub fn functions_path_for(trace_path: &Path) -> PathBuf {
    let mut name = trace_path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".functions.json");
    trace_path.with_file_name(name)
}

/// Parses trace text. Records cut off at the end (no `end` line) are counted in `stats.incomplete`.
pub fn parse(text: &str) -> Result<Trace> {
    let mut lines = text.lines().enumerate();
    let Some((_, first)) = lines.next() else { bail!("the file is empty") };
    let mut head = first.split_whitespace();
    if head.next() != Some(MAGIC) {
        bail!("the first line is not `{MAGIC} <version>`");
    }
    let version: u32 = head.next().and_then(|v| v.parse().ok()).context("the header has no version number")?;
    if !TRACE_VERSIONS.contains(&version) {
        bail!(
            "trace format version {version} is not supported (this cargo-calltime reads versions 1 and {TRACE_VERSION})"
        );
    }
    let mut trace = Trace { version, ..Trace::default() };
    // (invocation header, flat preorder nodes with depth); the header's `folded` says which node kind it holds.
    let mut open: Option<(Invocation, Vec<(u32, Node)>)> = None;
    for (lineno, line) in lines {
        let lineno = lineno + 1;
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let parsed: Result<()> = (|| {
            match kind {
                "process" => {
                    let mut f = Fields::new(rest, 2);
                    trace.pid = f.num()? as u32;
                    trace.epoch_unix_ns = f.num()?;
                    trace.exe = f.rest().to_owned();
                }
                "plan" => {
                    let mut f = Fields::new(rest, 1);
                    trace.plan_id = Some(f.word()?.to_owned());
                    let table = f.rest();
                    trace.table_hint = (!table.is_empty()).then(|| PathBuf::from(table));
                }
                "settings" => {
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
                }
                "inv" => {
                    if open.is_some() {
                        trace.stats.incomplete += 1;
                    }
                    let mut f = Fields::new(rest, 8);
                    let seq = f.num()?;
                    let kind = match f.word()? {
                        "thread" => ThreadKind::Thread,
                        "task" => ThreadKind::Task,
                        other => bail!("unknown thread kind `{other}`"),
                    };
                    let id = f.num()?;
                    let start_ns = f.num()?;
                    let duration_ns = f.num()?;
                    let nodes = f.num()? as usize;
                    let truncated_calls = f.num()?;
                    let filtered_nodes = f.num()?;
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
                    };
                    open = Some((inv, Vec::with_capacity(nodes.min(1 << 20))));
                }
                "n" => {
                    let Some((inv, nodes)) = open.as_mut() else { bail!("a node outside any invocation") };
                    if inv.folded {
                        bail!("an `n` line in a folded invocation (its nodes must all be `a` lines)");
                    }
                    let mut f = Fields::new(rest, 5);
                    let depth = f.num()? as u32;
                    let func = f.num()? as u32;
                    let start_ns = f.num()?;
                    let duration_ns = f.num()?;
                    let flags = f.num()?;
                    nodes.push((depth, Node::call(func, start_ns, duration_ns, flags & 1 != 0, Vec::new())));
                }
                "a" => {
                    let Some((inv, nodes)) = open.as_mut() else { bail!("a call path outside any invocation") };
                    if !inv.folded && !nodes.is_empty() {
                        bail!("an `a` line after `n` lines (an invocation's nodes are all `n` or all `a` lines)");
                    }
                    inv.folded = true;
                    nodes.push(call_path(rest)?);
                }
                "end" => {
                    let Some((mut inv, nodes)) = open.take() else { bail!("`end` without `inv`") };
                    inv.root = build_tree(nodes).context("malformed node depths")?;
                    trace.invocations.push(inv);
                }
                "stats" => {
                    let mut f = Fields::new(rest, 5);
                    let incomplete = trace.stats.incomplete;
                    trace.stats = Stats {
                        seen: f.num()?,
                        kept: f.num()?,
                        sampled_out: f.num()?,
                        dropped: f.num()?,
                        truncated: f.num()?,
                        incomplete,
                    };
                }
                // Blank lines, comments and record kinds from newer writers of the same version are skipped.
                _ => {}
            }
            Ok(())
        })();
        if let Err(e) = parsed {
            // A torn last line is what a crash leaves; anything else is reported but does not stop the load.
            trace.warnings.push(format!("line {lineno}: {e:#}"));
            if open.take().is_some() {
                trace.stats.incomplete += 1;
            }
        }
    }
    if open.is_some() {
        trace.stats.incomplete += 1;
    }
    if trace.stats.incomplete > 0 {
        trace.warnings.push(format!(
            "{} invocation record(s) were cut off (the program probably crashed while writing) and are left out",
            trace.stats.incomplete
        ));
    }
    Ok(trace)
}

/// Settings the runtime writes today: a value of these that is not a number is an error.
const KNOWN_SETTINGS: [&str; 6] = ["node_cap", "fold_after", "time_sample", "min_ns", "sample", "max_invocations"];

/// Parses the fields of an `a` line:
/// `<depth> <index> <calls> <timed> <first_start_ns> <timed_ns> <min_ns> <max_ns> <flags>`.
fn call_path(fields: &str) -> Result<(u32, Node)> {
    let mut f = Fields::new(fields, 9);
    let depth = f.num()? as u32;
    let func = f.num()? as u32;
    let calls = f.num()?;
    let timed_calls = f.num()?;
    let start_ns = f.num()?;
    let timed_ns = f.num()?;
    let min_ns = f.num()?;
    let max_ns = f.num()?;
    let flags = f.num()?;
    if calls == 0 {
        bail!("a call path with 0 calls");
    }
    if timed_calls > calls {
        bail!("{timed_calls} timed calls of {calls}");
    }
    let node = Node {
        func,
        start_ns,
        duration_ns: estimated_total(timed_ns, timed_calls, calls),
        calls,
        timed_calls,
        min_ns,
        max_ns,
        panicked: flags & 1 != 0,
        children: Vec::new(),
    };
    Ok((depth, node))
}

/// `timed_ns * calls / timed`, rounded to the nearest ns (0 when nothing was timed); exact when `timed == calls`.
pub fn estimated_total(timed_ns: u64, timed: u64, calls: u64) -> u64 {
    if timed == 0 {
        return 0;
    }
    let (timed_ns, timed, calls) = (u128::from(timed_ns), u128::from(timed), u128::from(calls));
    u64::try_from((timed_ns * calls + timed / 2) / timed).unwrap_or(u64::MAX)
}

/// Rebuilds a tree from preorder nodes with depths (root at depth 0).
fn build_tree(nodes: Vec<(u32, Node)>) -> Result<Node> {
    let mut stack: Vec<Node> = Vec::new();
    for (depth, node) in nodes {
        let depth = depth as usize;
        if depth == 0 && !stack.is_empty() {
            bail!("a second root in one invocation");
        }
        if depth > stack.len() {
            bail!("depth {depth} follows depth {}", stack.len().saturating_sub(1));
        }
        while stack.len() > depth {
            let done = stack.pop().expect("len > depth >= 0");
            stack.last_mut().expect("depth >= 1 has a parent").children.push(done);
        }
        stack.push(node);
    }
    while stack.len() > 1 {
        let done = stack.pop().expect("len > 1");
        stack.last_mut().expect("len >= 1").children.push(done);
    }
    stack.pop().context("an invocation without nodes")
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

    fn rest(&self) -> &'a str {
        self.rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "calltime-trace 1
process 42 1700000000000000000 /tmp/demo
plan abc123 /tmp/t.functions.json
inv 0 thread 1 100 50 3 0 0 main
n 0 0 100 50 0
n 1 1 110 20 0
n 1 1 135 10 1
end 0
inv 1 task 7 300 10 1 0 0
n 0 0 300 10 0
";

    #[test]
    fn parses_trees_and_drops_cut_off_records() {
        let trace = parse(SAMPLE).unwrap();
        assert_eq!(trace.invocations.len(), 1);
        let inv = &trace.invocations[0];
        assert_eq!(inv.root.children.len(), 2);
        assert!(inv.root.children[1].panicked);
        assert_eq!(inv.root.self_ns(), 20);
        assert_eq!(trace.stats.incomplete, 1);
        assert_eq!(trace.plan_id.as_deref(), Some("abc123"));
        let paths = inv.path_stats();
        assert_eq!(paths[&vec![0, 1]], PathStat { calls: 2, total_ns: 30, self_ns: 30 });
    }

    #[test]
    fn rejects_other_files() {
        assert!(parse("hello").is_err());
        let err = format!("{:#}", parse("calltime-trace 9").unwrap_err());
        assert!(err.contains("version 9 is not supported") && err.contains("reads versions 1 and 2"), "{err}");
    }

    const FOLDED: &str = "calltime-trace 2
process 4242 1795382232762346307 /work/app/target/release/app
plan 3fa2c1d0 /work/app/target/calltime/3fa2c1d0.functions.json
settings node_cap=100000 fold_after=4096 time_sample=64 min_ns=0 sample=1 max_invocations=100000 future=x later=7
inv 0 thread 1 1000 136000000 4 0 0 main
a 0 0 1 1 1000 136000000 136000000 136000000 0
a 1 3 441070 6892 1200 1089000 13 280000 0
a 2 5 337452 5273 1300 221000 11 247000 0
a 1 4 3 3 2000 900 200 400 1
end 0
inv 1 thread 1 200000000 50 2 0 0 main
n 0 0 200000000 50 0
n 1 3 200000010 20 0
end 1
stats 2 2 0 0 0
";

    #[test]
    fn reads_folded_call_paths_and_settings() {
        let trace = parse(FOLDED).unwrap();
        assert_eq!(trace.version, 2);
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.settings["fold_after"], 4096);
        assert_eq!(trace.settings["time_sample"], 64);
        // Unknown settings are kept when they are numbers and skipped otherwise.
        assert_eq!(trace.settings.get("later"), Some(&7));
        assert!(!trace.settings.contains_key("future"));
        assert_eq!(trace.invocations.len(), 2);
        let folded = &trace.invocations[0];
        assert!(folded.folded && !trace.invocations[1].folded);
        let root = &folded.root;
        assert_eq!((root.calls, root.timed_calls, root.duration_ns, root.is_estimated()), (1, 1, 136_000_000, false));
        let busy = &root.children[0];
        assert_eq!((busy.func, busy.calls, busy.timed_calls, busy.start_ns), (3, 441_070, 6892, 1200));
        assert_eq!((busy.min_ns, busy.max_ns), (13, 280_000));
        // 1_089_000 ns over 6892 timed calls, scaled to 441_070 calls: 69_693_155.8 ns.
        assert_eq!(busy.duration_ns, 69_693_156);
        assert!(busy.is_estimated() && !busy.panicked);
        assert_eq!(busy.children[0].duration_ns, estimated_total(221_000, 5273, 337_452));
        // Every call timed: the total is exact; flag bit 0 is the panic.
        let exact = &root.children[1];
        assert_eq!((exact.duration_ns, exact.is_estimated(), exact.panicked), (900, false, true));
        assert_eq!(root.self_ns(), 136_000_000 - 69_693_156 - 900);
        let paths = folded.path_stats();
        assert_eq!(paths[&vec![0, 3]].calls, 441_070);
        assert_eq!(paths[&vec![0, 3, 5]].calls, 337_452);
        assert_eq!(paths[&vec![0, 4]], PathStat { calls: 3, total_ns: 900, self_ns: 900 });
        // A version 1 style invocation in the same file is read per call, as before.
        assert_eq!(trace.invocations[1].root.children[0].calls, 1);
    }

    #[test]
    fn estimates_scale_timed_time_to_every_call() {
        assert_eq!(estimated_total(1000, 10, 10), 1000);
        assert_eq!(estimated_total(1000, 3, 10), 3333);
        assert_eq!(estimated_total(2000, 3, 10), 6667);
        assert_eq!(estimated_total(5, 0, 10), 0);
        assert_eq!(estimated_total(u64::MAX, 1, u64::MAX), u64::MAX);
    }

    #[test]
    fn malformed_call_paths_drop_their_invocation_with_a_warning() {
        let bad = |line: &str| {
            let text = format!(
                "calltime-trace 2\nprocess 1 0 /x\nplan p \ninv 0 thread 1 0 10 2 0 0 \n\
                 a 0 0 1 1 0 10 10 10 0\n{line}\nend 0\ninv 1 thread 1 20 5 1 0 0 \nn 0 0 20 5 0\nend 1\n"
            );
            let trace = parse(&text).unwrap();
            assert_eq!(trace.invocations.len(), 1, "{line}");
            assert_eq!(trace.invocations[0].seq, 1, "the next invocation is still read");
            trace.warnings[0].clone()
        };
        assert!(bad("a 1 2 3 4 0 10 1 5 0").contains("4 timed calls of 3"));
        assert!(bad("a 1 2 0 0 0 0 0 0 0").contains("0 calls"));
        assert!(bad("n 1 2 3 4 0").contains("an `n` line in a folded invocation"));
        assert!(bad("a 1 2 3").contains("too few fields"));
        let mixed = "calltime-trace 2\nplan p \ninv 0 thread 1 0 10 2 0 0 \nn 0 0 0 10 0\na 1 1 1 1 0 5 5 5 0\nend 0\n";
        let trace = parse(mixed).unwrap();
        assert!(trace.invocations.is_empty());
        assert!(trace.warnings[0].contains("an `a` line after `n` lines"), "{:?}", trace.warnings);
        let trace = parse("calltime-trace 2\nsettings fold_after=lots\n").unwrap();
        assert!(trace.warnings[0].contains("setting fold_after=`lots` is not a number"), "{:?}", trace.warnings);
    }
}

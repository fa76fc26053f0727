//! Overhead hot spots: probed functions so fast and so often called that their probes cost about as much as what
//! they measure (JProfiler calls them the same). After a run the tool names them and prints the `--exclude` value
//! that leaves them out of the next plan, instead of silently changing the plan between runs (which would make
//! two runs' call counts incomparable).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::plan::FastFunctions;
use crate::trace::{Node, Trace};
use crate::units::{format_ns, thousands};

/// Mean time per call under which a busy function counts as too fast to probe: about ten timed probe pairs (24 ns)
/// on the machines we measured, or twenty folded ones.
pub const FAST_NS: u64 = 250;
/// Calls (over the whole run) below which a fast function is not worth mentioning.
pub const BUSY_CALLS: u64 = 10_000;

#[derive(Debug, Clone, PartialEq)]
pub struct FastFunction {
    pub func: u32,
    pub path: String,
    pub display: String,
    /// Where it is defined: with the path, its identity in `fast-functions.txt`.
    pub file: String,
    pub line: u32,
    /// Every call: in the trees, plus those counted after it retired.
    pub calls: u64,
    /// Mean of the timed calls (compensated when the trace is); for a retired function, what it showed before.
    pub mean_ns: u64,
    /// Its probe retired during the run.
    pub retired: bool,
}

/// Probed functions (roots excepted) that retired during the run, and those called at least `BUSY_CALLS` times
/// at a mean under `FAST_NS`; most calls first.
pub fn fast_functions(trace: &Trace) -> Vec<FastFunction> {
    fn walk(node: &Node, totals: &mut BTreeMap<u32, (u64, u64)>) {
        let entry = totals.entry(node.func).or_default();
        entry.0 = entry.0.saturating_add(node.calls);
        entry.1 = entry.1.saturating_add(node.duration_ns);
        for child in &node.children {
            walk(child, totals);
        }
    }
    let mut totals = BTreeMap::new();
    let mut retired_calls: BTreeMap<u32, u64> = BTreeMap::new();
    for inv in &trace.invocations {
        walk(&inv.root, &mut totals);
        for r in &inv.retired {
            *retired_calls.entry(r.func).or_default() += r.calls;
        }
    }
    let retired_funcs: Vec<u32> = trace.retirements.iter().map(|r| r.func).collect();
    for &func in retired_funcs.iter().chain(retired_calls.keys()) {
        totals.entry(func).or_default();
    }
    // Two impls share a short name (`Value::from` of `From<u64>` and `From<&str>`): the note names them apart.
    let names = super::Names::new(&trace.table);
    let mut fast: Vec<FastFunction> = totals
        .into_iter()
        .filter_map(|(func, (calls, total_ns))| {
            let info = trace.table.get(func)?;
            let retirement = trace.retirements.iter().find(|r| r.func == func);
            let mean_ns = retirement.map_or(total_ns / calls.max(1), |r| r.mean_ns);
            let retired = retirement.is_some() || retired_calls.contains_key(&func);
            let calls = calls.saturating_add(retired_calls.get(&func).copied().unwrap_or(0));
            (!info.root && (retired || (calls >= BUSY_CALLS && mean_ns < FAST_NS))).then(|| FastFunction {
                func,
                path: info.path.clone(),
                display: names.get(func),
                file: info.file.clone(),
                line: info.line,
                calls,
                mean_ns,
                retired,
            })
        })
        .collect();
    fast.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.path.cmp(&b.path)));
    fast
}

/// The `note:` text naming the overhead hot spots and the `--exclude` argument that leaves them out, if any. With
/// retirement on (trace format 3), the probes dealt with them during the run: the note says which retired and
/// asks for no second run.
pub fn exclude_note(trace: &Trace) -> Option<String> {
    let fast = fast_functions(trace);
    if fast.is_empty() {
        return None;
    }
    if trace.settings.get("retire").is_some_and(|&on| on != 0) {
        return retired_note(&fast, !trace.quiet.is_empty());
    }
    let calls: u64 = fast.iter().map(|f| f.calls).sum();
    let listed = listed(&fast.iter().collect::<Vec<_>>());
    let paths: Vec<String> = fast.iter().map(|f| f.path.clone()).collect();
    let pattern = exact_paths_regex(&paths);
    Some(format!(
        "{} probed function{} ran {} times at under {} a call on average: {listed}. Probes on such functions \
         cost about as much as what they measure; to leave them out of the plan (their time then counts in their \
         callers' self time), add `--exclude-fast` (every function runs of this workspace found too fast) or:\n  --exclude {}",
        fast.len(),
        crate::units::plural_s(fast.len() as u64),
        thousands(calls),
        format_ns(FAST_NS),
        shell_quote(&pattern)
    ))
}

/// With retirement on: the functions whose probes retired, and how to keep them out of later plans.
fn retired_note(fast: &[FastFunction], some_quiet: bool) -> Option<String> {
    let retired: Vec<&FastFunction> = fast.iter().filter(|f| f.retired).collect();
    if retired.is_empty() {
        return None;
    }
    let listed = listed(&retired);
    Some(format!(
        "{} probe{} retired during the run, too fast to be worth timing: {listed}. Their later calls were counted{}, \
         not timed, and their time is in their callers'. `--exclude-fast` leaves them out of later plans; `--exact` \
         times every call.",
        retired.len(),
        crate::units::plural_s(retired.len() as u64),
        if some_quiet { " (then estimated, once they went quiet)" } else { "" },
    ))
}

/// `mix (20,003 calls, 12ns), ... and 3 more`: the first five functions with their calls and means.
fn listed(fast: &[&FastFunction]) -> String {
    let shown: Vec<String> = fast
        .iter()
        .take(5)
        .map(|f| format!("{} ({} calls, {})", f.display, thousands(f.calls), format_ns(f.mean_ns)))
        .collect();
    let more = if fast.len() > 5 { format!(" and {} more", fast.len() - 5) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// A regex matching exactly these paths (once each: two impls can share a path, `<T as AddAssign>::add_assign`
/// for two right-hand types).
pub fn exact_paths_regex(paths: &[String]) -> String {
    let mut alternatives: Vec<String> = Vec::new();
    for path in paths {
        let escaped = regex::escape(path);
        if !alternatives.contains(&escaped) {
            alternatives.push(escaped);
        }
    }
    format!("^(?:{})$", alternatives.join("|"))
}

/// Where the functions found too fast are remembered for `--exclude-fast`.
pub fn remembered_path(calltime_dir: &Path) -> PathBuf {
    calltime_dir.join("fast-functions.txt")
}

/// The remembered lines (empty when the file is missing or unreadable; `#` lines are comments).
fn remembered_lines(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

/// The remembered functions, by identity (`path @ file:line`; a bare path from older files).
pub fn remembered(file: &Path) -> FastFunctions {
    let mut fast = FastFunctions::default();
    for line in remembered_lines(file) {
        fast.insert_line(&line);
    }
    fast
}

/// Adds this run's fast functions to the remembered ones; returns how many were new.
pub fn remember(file: &Path, fast: &[FastFunction]) -> anyhow::Result<usize> {
    use anyhow::Context;
    let mut all: BTreeSet<String> = remembered_lines(file).into_iter().collect();
    let before = all.len();
    all.extend(fast.iter().map(|f| FastFunctions::line_of(&f.path, &f.file, f.line)));
    if all.len() == before {
        return Ok(0);
    }
    let mut text = format!(
        "# Functions cargo calltime found too fast to probe: called at least {} times in a run at under {}\n\
         # a call, or whose probes retired. `cargo calltime --exclude-fast` leaves them out of the plan. One function\n\
         # per line, `<path> @ <file>:<line>`; edit or delete.\n",
        thousands(BUSY_CALLS),
        format_ns(FAST_NS)
    );
    for path in &all {
        text.push_str(path);
        text.push('\n');
    }
    std::fs::write(file, text).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(all.len() - before)
}

/// Single-quotes `text` for POSIX shells (`'` becomes `'\''`).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{FunctionInfo, FunctionTable, Invocation, ThreadKind, ThreadRef};

    fn info(index: u32, path: &str, display: &str, root: bool) -> FunctionInfo {
        FunctionInfo { index, path: path.into(), display: display.into(), file: "src/lib.rs".into(), line: 1, root }
    }

    fn folded(func: u32, calls: u64, total_ns: u64, children: Vec<Node>) -> Node {
        let mut node = Node::call(func, 0, total_ns, false, children);
        node.calls = calls;
        node.timed_calls = calls;
        node
    }

    #[test]
    fn names_busy_fast_functions_and_quotes_the_pattern() {
        let table = FunctionTable {
            functions: vec![
                info(0, "k::root", "root", true),
                info(1, "<k::Cow<'a> as core::ops::Deref>::deref", "Cow::deref", false),
                info(2, "k::slow", "slow", false),
                info(3, "k::rare", "rare", false),
            ],
            ..FunctionTable::default()
        };
        let root = folded(
            0,
            1,
            10_000_000,
            vec![
                folded(1, 40_000, 40_000 * 30, vec![]),
                folded(2, 20_000, 20_000 * 900, vec![folded(1, 10_000, 10_000 * 20, vec![])]),
                folded(3, 10, 100, vec![]),
            ],
        );
        let trace = Trace {
            table,
            invocations: vec![Invocation {
                seq: 0,
                thread: ThreadRef { kind: ThreadKind::Thread, id: 1, name: String::new() },
                start_ns: 0,
                duration_ns: 10_000_000,
                truncated_calls: 0,
                filtered_nodes: 0,
                folded: true,
                root,
                retired: Vec::new(),
                spawned: Vec::new(),
                unrecorded_spawns: 0,
            }],
            ..Trace::default()
        };
        let fast = fast_functions(&trace);
        assert_eq!(fast.len(), 1);
        assert_eq!((fast[0].func, fast[0].calls, fast[0].mean_ns), (1, 50_000, 28));
        let note = exclude_note(&trace).unwrap();
        assert!(note.contains("ran 50,000 times") && note.contains("Cow::deref (50,000 calls, 28ns)"), "{note}");
        assert_eq!(
            (thousands(0), thousands(999), thousands(1000), thousands(1234567)),
            ("0".into(), "999".into(), "1,000".into(), "1,234,567".into())
        );
        let pattern = r"^(?:<k::Cow<'a> as core::ops::Deref>::deref)$";
        assert!(note.ends_with(&format!("--exclude {}", shell_quote(pattern))), "{note}");
        assert!(regex::Regex::new(pattern).unwrap().is_match("<k::Cow<'a> as core::ops::Deref>::deref"));

        // Remembered across runs, once each, comments kept out.
        let dir = tempfile::tempdir().unwrap();
        let file = remembered_path(dir.path());
        assert!(remembered(&file).is_empty());
        assert_eq!(remember(&file, &fast).unwrap(), 1);
        assert_eq!(remember(&file, &fast).unwrap(), 0);
        let other = FastFunction { path: "k::other".into(), ..fast[0].clone() };
        assert_eq!(remember(&file, &[other]).unwrap(), 1);
        let lines = remembered_lines(&file);
        assert_eq!(lines, ["<k::Cow<'a> as core::ops::Deref>::deref @ src/lib.rs:1", "k::other @ src/lib.rs:1"]);
        let identity = ("k::other".to_owned(), "src/lib.rs".to_owned(), 1);
        assert!(remembered(&file).exact.contains(&identity) && remembered(&file).by_path.is_empty());
        assert!(std::fs::read_to_string(&file).unwrap().starts_with("# "));

        // With retirement on, the functions that retired are named, with no `--exclude` to copy for a second run.
        let mut retiring = trace.clone();
        retiring.settings.insert("retire".into(), 1);
        retiring.retirements.push(crate::trace::Retirement { func: 3, at_ns: 5, calls: 2_000, mean_ns: 4 });
        retiring.invocations[0].retired.push(crate::trace::RetiredCalls::counted(3, 90_000));
        let note = exclude_note(&retiring).unwrap();
        assert!(
            note.starts_with("1 probe retired during the run, too fast to be worth timing: rare (90,010 calls, 4ns)"),
            "{note}"
        );
        assert!(!note.contains("--exclude ") && note.contains("--exclude-fast"), "{note}");
        let fast = fast_functions(&retiring);
        assert_eq!(fast.iter().map(|f| (f.func, f.retired)).collect::<Vec<_>>(), [(3, true), (1, false)]);
    }
}

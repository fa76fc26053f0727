//! Overhead hot spots: probed functions so fast and so often called that their probes cost about as much as what
//! they measure (JProfiler calls them the same). After a run the tool names them and prints the `--exclude` value
//! that leaves them out of the next plan, instead of silently changing the plan between runs (which would make
//! two runs' call counts incomparable).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::trace::{Node, Trace};
use crate::units::format_ns;

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
    pub calls: u64,
    pub mean_ns: u64,
}

/// Probed functions (roots excepted) called at least `BUSY_CALLS` times at a mean under `FAST_NS`, most calls
/// first.
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
    for inv in &trace.invocations {
        walk(&inv.root, &mut totals);
    }
    let mut fast: Vec<FastFunction> = totals
        .into_iter()
        .filter_map(|(func, (calls, total_ns))| {
            let info = trace.table.get(func)?;
            let mean_ns = total_ns / calls.max(1);
            (!info.root && calls >= BUSY_CALLS && mean_ns < FAST_NS).then(|| FastFunction {
                func,
                path: info.path.clone(),
                display: info.display.clone(),
                calls,
                mean_ns,
            })
        })
        .collect();
    fast.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.path.cmp(&b.path)));
    fast
}

/// The `note:` text naming the overhead hot spots and the `--exclude` argument that leaves them out, if any.
pub fn exclude_note(trace: &Trace) -> Option<String> {
    let fast = fast_functions(trace);
    if fast.is_empty() {
        return None;
    }
    let calls: u64 = fast.iter().map(|f| f.calls).sum();
    let shown: Vec<String> = fast
        .iter()
        .take(5)
        .map(|f| format!("{} ({} calls, {})", f.display, thousands(f.calls), format_ns(f.mean_ns)))
        .collect();
    let more = if fast.len() > 5 { format!(" and {} more", fast.len() - 5) } else { String::new() };
    let paths: Vec<String> = fast.iter().map(|f| f.path.clone()).collect();
    let pattern = exact_paths_regex(&paths);
    Some(format!(
        "{} probed function{} ran {} times at under {} a call on average: {}{more}. Probes on such functions \
         cost about as much as what they measure; to leave them out of the plan (their time then counts in their \
         callers' self time), add `--exclude-fast` (every function runs of this workspace found too fast) or:\n  --exclude {}",
        fast.len(),
        crate::units::plural_s(fast.len() as u64),
        thousands(calls),
        format_ns(FAST_NS),
        shown.join(", "),
        shell_quote(&pattern)
    ))
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

/// The remembered paths (empty when the file is missing or unreadable; `#` lines are comments).
pub fn remembered(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

/// Adds this run's fast functions to the remembered ones; returns how many were new.
pub fn remember(file: &Path, fast: &[FastFunction]) -> anyhow::Result<usize> {
    use anyhow::Context;
    let mut all: BTreeSet<String> = remembered(file).into_iter().collect();
    let before = all.len();
    all.extend(fast.iter().map(|f| f.path.clone()));
    if all.len() == before {
        return Ok(0);
    }
    let mut text = format!(
        "# Functions cargo calltime found too fast to probe: called at least {} times in a run at under {}\n\
         # a call. `cargo calltime --exclude-fast` leaves them out of the plan. One path per line; edit or delete.\n",
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

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
        assert_eq!(remembered(&file), ["<k::Cow<'a> as core::ops::Deref>::deref", "k::other"]);
        assert!(std::fs::read_to_string(&file).unwrap().starts_with("# "));
    }
}

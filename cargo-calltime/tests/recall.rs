//! The recall check: every function of a test workspace gets a probe (`--all-functions`), the program runs, and
//! every caller -> callee edge of the recorded trees must be an edge of the static graph (`graph --all-functions`).
//! The run is the ground truth: a miss is a call the analysis did not see, which would silently re-parent a
//! subtree in a normal run. Known, explained misses go in tests/data/recall/allowed.txt.
//!
//! `recall_on_any_workspace` (ignored) runs the same check on a workspace given by environment variables, for
//! real crates.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use util::{calltime, copy_test_crate, data, run};

type EdgeSet = BTreeSet<(String, String)>;

/// The program to check: where it is and how to build and run it.
struct Program {
    /// The workspace directory (a copy: the run writes its target dir there).
    dir: PathBuf,
    /// The manifest passed as `--manifest-path`.
    manifest: PathBuf,
    /// Package and feature flags, for both `graph` and the run (`--features getopts`).
    cargo_args: Vec<String>,
    /// Which target runs (`--example demo`); `graph` takes none.
    target_args: Vec<String>,
    root: String,
    /// A file fed to the program's stdin.
    stdin: Option<PathBuf>,
}

/// What the check found.
struct Recall {
    static_edges: EdgeSet,
    /// Observed (caller, callee) pairs with the number of calls seen.
    observed: BTreeMap<(String, String), u64>,
}

impl Recall {
    fn misses(&self) -> Vec<(&(String, String), u64)> {
        self.observed.iter().filter(|(e, _)| !self.static_edges.contains(*e)).map(|(e, n)| (e, *n)).collect()
    }
}

/// Builds and runs test crate `krate` (a copy) with every function probed from `root`, and compares the observed
/// edges with the static ones, minus the explained misses of tests/data/recall/allowed.txt.
#[track_caller]
fn check_recall(krate: &str, manifest_rel: &str, target_args: &[&str], root: &str, min_observed: usize) {
    let (_tmp, dir) = copy_test_crate(krate);
    let program = Program {
        manifest: dir.join(manifest_rel),
        dir,
        cargo_args: Vec::new(),
        target_args: target_args.iter().map(|a| a.to_string()).collect(),
        root: root.to_owned(),
        stdin: None,
    };
    let recall = measure(&program);
    let allowed = allowed_misses(krate);
    let misses: Vec<_> = recall.misses().into_iter().filter(|(e, _)| !allowed.contains(*e)).collect();
    let stale: Vec<&(String, String)> =
        allowed.iter().filter(|e| !recall.observed.contains_key(*e) || recall.static_edges.contains(*e)).collect();
    eprintln!(
        "{krate} (root {root}): {} observed edges, {} static edges, {} misses, {} allowed",
        recall.observed.len(),
        recall.static_edges.len(),
        misses.len(),
        allowed.len()
    );
    let mut problems = String::new();
    for ((caller, callee), count) in &misses {
        problems.push_str(&format!("  missed {caller} -> {callee} ({count} calls)\n"));
    }
    for (caller, callee) in &stale {
        problems.push_str(&format!("  allow-list entry no longer needed: {caller} -> {callee}\n"));
    }
    assert!(problems.is_empty(), "{krate}: runtime edges not in the static graph:\n{problems}");
    // A run that recorded (almost) nothing would pass the subset check vacuously: the minimums are about 80% of
    // what the programs exercise today.
    assert!(
        recall.observed.len() >= min_observed,
        "{krate}: only {} observed edges, expected at least {min_observed}: {:?}",
        recall.observed.len(),
        recall.observed.keys().collect::<Vec<_>>()
    );
}

/// `graph --all-functions` for the static edges, then the run with every function probed.
fn measure(program: &Program) -> Recall {
    Recall { static_edges: static_edges(program), observed: observed_edges(program) }
}

fn static_edges(program: &Program) -> EdgeSet {
    let out = run(
        calltime()
            .current_dir(&program.dir)
            .arg("graph")
            .arg("--manifest-path")
            .arg(&program.manifest)
            .args(&program.cargo_args)
            .args(["--root", &program.root, "--all-functions", "--depth", "1000", "--format", "json"]),
        true,
    );
    let plan: Value = serde_json::from_slice(&out.stdout).expect("graph prints JSON");
    let untaken: Vec<String> = plan["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter(|f| f["instrumented"] != true)
        .map(|f| format!("{} ({})", f["path"], f["skip_reason"]))
        .collect();
    eprintln!("{}: not probed: {untaken:?}", program.dir.display());
    plan["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| (e["from"].as_str().expect("from").to_owned(), e["to"].as_str().expect("to").to_owned()))
        .collect()
}

/// (caller, callee) pairs of the recorded trees, with the number of calls seen for each.
fn observed_edges(program: &Program) -> BTreeMap<(String, String), u64> {
    let out_file = program.dir.join("recall.json");
    let mut cmd = calltime();
    cmd.current_dir(&program.dir)
        .arg("--manifest-path")
        .arg(&program.manifest)
        .args(&program.cargo_args)
        .args(&program.target_args)
        .args(["--root", &program.root, "--all-functions", "--depth", "1000", "--format", "json", "-o"])
        .arg(&out_file);
    if let Some(input) = &program.stdin {
        cmd.stdin(Stdio::from(std::fs::File::open(input).expect("stdin file opens")));
    }
    run(&mut cmd, true);
    let text = std::fs::read_to_string(&out_file).expect("the run wrote its JSON");
    let doc: Value = serde_json::from_str(&text).expect("JSON view parses");
    let invocations = doc["invocations"].as_array().expect("invocations");
    assert!(!invocations.is_empty(), "no invocation recorded: {text}");
    let mut calls = BTreeMap::new();
    for inv in invocations {
        assert_eq!(
            inv["truncated_calls"], 0,
            "a tree hit the node cap: the check would be incomplete (raise CALLTIME_NODE_CAP)"
        );
        collect_edges(&inv["tree"], &mut calls);
    }
    calls
}

fn collect_edges(node: &Value, calls: &mut BTreeMap<(String, String), u64>) {
    let parent = node["path"].as_str().expect("node path");
    assert!(!parent.starts_with('#'), "the function table does not name {parent}");
    for child in node["children"].as_array().into_iter().flatten() {
        let path = child["path"].as_str().expect("child path").to_owned();
        *calls.entry((parent.to_owned(), path)).or_default() += child["calls"].as_u64().unwrap_or(0);
        collect_edges(child, calls);
    }
}

/// `tests/data/recall/allowed.txt`: `krate: caller -> callee  # why` lines for misses the analysis does not model
/// on purpose. Every entry must still be a miss, so the list cannot go stale.
fn allowed_misses(krate: &str) -> EdgeSet {
    let text = std::fs::read_to_string(data("recall/allowed.txt")).unwrap_or_default();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix(krate)?.strip_prefix(':'))
        .filter_map(|l| l.split_once("->"))
        .map(|(a, b)| (a.trim().to_owned(), b.trim().to_owned()))
        .collect()
}

#[test]
fn demo_server() {
    check_recall("demo", "Cargo.toml", &[], "demo::main", 35);
}

#[test]
fn analysis_calls_example() {
    check_recall("analysis-calls", "Cargo.toml", &["--example", "demo"], "demo::main", 35);
}

#[test]
fn analysis_modules_example() {
    check_recall("analysis-modules", "Cargo.toml", &["--example", "run"], "run::main", 12);
}

/// From the root manifest, so that both members (`app` and `alpha`) are probed.
#[test]
fn analysis_use_example() {
    check_recall("analysis-use", "Cargo.toml", &["--example", "serve"], "serve::main", 20);
}

/// `--manifest-path` of a member selects that package, as cargo does: the other member's functions are planned
/// (they are reached) but not probed, and the root manifest selects both.
#[test]
fn member_manifest_selects_its_package() {
    let (_tmp, dir) = copy_test_crate("analysis-use");
    let probed = |manifest: &Path| -> BTreeSet<String> {
        let out = run(
            calltime()
                .current_dir(&dir)
                .arg("graph")
                .arg("--manifest-path")
                .arg(manifest)
                // Without --probe-trivial, alpha's functions (one-liners) would be unprobed for that reason.
                .args(["--root", "app::run", "--probe-trivial", "--format", "json"]),
            true,
        );
        let plan: Value = serde_json::from_slice(&out.stdout).expect("graph prints JSON");
        plan["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .filter(|f| f["instrumented"] == true)
            .map(|f| f["path"].as_str().expect("path").split("::").next().unwrap_or("").to_owned())
            .collect()
    };
    let crates_of = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(probed(&dir.join("crates/app/Cargo.toml")), crates_of(&["app"]));
    assert_eq!(probed(&dir.join("Cargo.toml")), crates_of(&["alpha", "app"]));
    // A root outside the selected member is an error that says how to select it.
    let out = run(
        calltime()
            .current_dir(&dir)
            .arg("graph")
            .arg("--manifest-path")
            .arg(dir.join("crates/alpha/Cargo.toml"))
            .args(["--root", "app::run"]),
        false,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in package `app`, which is not selected") && stderr.contains("hint: pass -p app"),
        "{stderr}"
    );
}

#[test]
fn analysis_edge_bin() {
    check_recall("analysis-edge", "Cargo.toml", &["--bin", "my-tool"], "my_tool::main", 15);
}

/// The check on any workspace, by hand: it builds a shadow copy under the workspace's target dir (the sources
/// stay untouched) and prints every miss. For example, pulldown-cmark 0.13.6:
///
/// ```sh
/// RECALL_DIR=/path/to/pulldown-cmark RECALL_ROOT=pulldown_cmark::html::write_html_io \
///   RECALL_ARGS='--features getopts' RECALL_STDIN=input.md CALLTIME_NODE_CAP=5000000 \
///   cargo test -p cargo-calltime --test recall -- --ignored --nocapture recall_on_any_workspace
/// ```
#[test]
#[ignore]
fn recall_on_any_workspace() {
    let (Ok(dir), Ok(root)) = (std::env::var("RECALL_DIR"), std::env::var("RECALL_ROOT")) else {
        panic!("set RECALL_DIR (workspace) and RECALL_ROOT; optional RECALL_MANIFEST, RECALL_ARGS, RECALL_TARGET_ARGS, RECALL_STDIN");
    };
    let words = |var: &str| -> Vec<String> {
        std::env::var(var).unwrap_or_default().split_whitespace().map(str::to_owned).collect()
    };
    let dir = PathBuf::from(dir);
    let program = Program {
        manifest: std::env::var("RECALL_MANIFEST").map(PathBuf::from).unwrap_or_else(|_| dir.join("Cargo.toml")),
        dir,
        cargo_args: words("RECALL_ARGS"),
        target_args: words("RECALL_TARGET_ARGS"),
        root,
        stdin: std::env::var("RECALL_STDIN").ok().map(PathBuf::from),
    };
    let recall = measure(&program);
    let misses = recall.misses();
    println!(
        "{}: {} observed edges, {} static edges, {} misses",
        program.dir.display(),
        recall.observed.len(),
        recall.static_edges.len(),
        misses.len()
    );
    for ((caller, callee), count) in &misses {
        println!("  missed {caller} -> {callee} ({count} calls)");
    }
    assert!(misses.is_empty(), "{} runtime edges are not static edges", misses.len());
}

//! The recall check: every function of a test workspace gets a probe (`--all-functions`), the program runs, and
//! every caller -> callee edge of the recorded trees must be an edge of the static graph (`graph --all-functions`).
//! The run is the ground truth: a miss is a call the analysis did not see, which would silently re-parent a
//! subtree in a normal run. Known, explained misses go in tests/data/recall/allowed.txt.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use util::{calltime, copy_test_crate, data, run};

type EdgeSet = BTreeSet<(String, String)>;

/// Builds and runs `krate` (a copy) with every function probed from `root`, and compares the observed edges with
/// the static ones. `target_args` select the program to run (`--example demo`); `graph` takes none.
#[track_caller]
fn check_recall(krate: &str, manifest_rel: &str, target_args: &[&str], root: &str, min_observed: usize) {
    let (_tmp, dir) = copy_test_crate(krate);
    let manifest = dir.join(manifest_rel);
    let static_edges = static_edges(&dir, &manifest, root);
    let (observed, calls) = observed_edges(&dir, &manifest, target_args, root);
    let allowed = allowed_misses(krate);

    let misses: Vec<&(String, String)> =
        observed.iter().filter(|e| !static_edges.contains(*e) && !allowed.contains(*e)).collect();
    let stale: Vec<&(String, String)> =
        allowed.iter().filter(|e| !observed.contains(*e) || static_edges.contains(*e)).collect();
    eprintln!(
        "{krate} (root {root}): {} observed edges, {} static edges, {} misses, {} allowed",
        observed.len(),
        static_edges.len(),
        misses.len(),
        allowed.len()
    );
    let mut problems = String::new();
    for (caller, callee) in &misses {
        let count = calls[&(caller.clone(), callee.clone())];
        problems.push_str(&format!("  missed {caller} -> {callee} ({count} calls)\n"));
    }
    for (caller, callee) in &stale {
        problems.push_str(&format!("  allow-list entry no longer needed: {caller} -> {callee}\n"));
    }
    assert!(problems.is_empty(), "{krate}: runtime edges not in the static graph:\n{problems}");
    // A run that recorded (almost) nothing would pass the subset check vacuously: the minimums are about 80% of
    // what the programs exercise today.
    assert!(
        observed.len() >= min_observed,
        "{krate}: only {} observed edges, expected at least {min_observed}: {observed:?}",
        observed.len()
    );
}

fn static_edges(dir: &Path, manifest: &Path, root: &str) -> EdgeSet {
    let out = run(
        calltime().current_dir(dir).arg("graph").arg("--manifest-path").arg(manifest).args([
            "--root",
            root,
            "--all-functions",
            "--depth",
            "1000",
            "--format",
            "json",
        ]),
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
    eprintln!("{}: not probed: {untaken:?}", dir.display());
    plan["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| (e["from"].as_str().expect("from").to_owned(), e["to"].as_str().expect("to").to_owned()))
        .collect()
}

/// (caller, callee) pairs of the recorded trees, with the number of calls seen for each.
fn observed_edges(
    dir: &Path,
    manifest: &Path,
    target_args: &[&str],
    root: &str,
) -> (EdgeSet, BTreeMap<(String, String), u64>) {
    let out_file = dir.join("recall.json");
    run(
        calltime()
            .current_dir(dir)
            .arg("--manifest-path")
            .arg(manifest)
            .args(target_args)
            .args(["--root", root, "--all-functions", "--depth", "1000", "--format", "json", "-o"])
            .arg(&out_file),
        true,
    );
    let text = std::fs::read_to_string(&out_file).expect("the run wrote its JSON");
    let doc: Value = serde_json::from_str(&text).expect("JSON view parses");
    let invocations = doc["invocations"].as_array().expect("invocations");
    assert!(!invocations.is_empty(), "no invocation recorded: {text}");
    let mut calls = BTreeMap::new();
    for inv in invocations {
        assert_eq!(inv["truncated_calls"], 0, "a tree hit the node cap: the check would be incomplete");
        collect_edges(&inv["tree"], &mut calls);
    }
    (calls.keys().cloned().collect(), calls)
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
                .args(["--root", "app::run", "--format", "json"]),
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

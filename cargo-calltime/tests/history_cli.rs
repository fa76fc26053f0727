//! The run store through the real binary on a copy of the demo: every run is stored with its label, `history`
//! lists and filters them, `--keep` drops old traces, `diff` takes `@label:L` and `@run:N`, `report --import` adds a
//! trace recorded elsewhere, `history --chart` and `report --format html` draw the runs, `history --delete` removes
//! one.

mod util;

use std::path::Path;
use std::process::Output;

use util::{calltime, data, run};

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The run ids and labels `history` lists (first column and label column of each run's line).
fn listed(dir: &Path, args: &[&str]) -> Vec<(String, String)> {
    let out = run(calltime().current_dir(dir).arg("history").args(args), true);
    let (stdout, _) = text(&out);
    stdout
        .lines()
        .filter(|l| l.starts_with('#') && !l.contains(" is dirty"))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields[0].to_owned(), fields[3].to_owned())
        })
        .collect()
}

fn record(dir: &Path, label: &str, extra: &[&str]) {
    let mut cmd = calltime();
    cmd.current_dir(dir).args(["-q", "--root", "server::handle", "--depth", "5", "--label", label, "-o", "-"]);
    run(cmd.args(extra), true);
}

#[test]
fn runs_are_stored_labelled_listed_compared_and_imported() {
    let (_tmp, dir) = util::copy_test_crate("demo");
    record(&dir, "base", &[]);
    record(&dir, "base", &[]);
    record(&dir, "head", &[]);
    record(&dir, "head", &["--keep", "3"]);
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(listed(&dir, &[]), pairs(&[("#1", "base"), ("#2", "base"), ("#3", "head"), ("#4", "head")]));
    assert_eq!(listed(&dir, &["--label", "head"]), pairs(&[("#3", "head"), ("#4", "head")]));
    assert_eq!(listed(&dir, &["--root", "handle", "--until", "2000-01-01"]), pairs(&[]));
    let runs_dir = dir.join("target/calltime/runs");
    let kept =
        std::fs::read_dir(&runs_dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "trace");
    assert_eq!(kept.count(), 3, "--keep 3 left three trace files");

    // Run #1's trace is gone: a diff of every `base` run says so; run #2 against the `head` runs works.
    let out = run(calltime().current_dir(&dir).args(["diff", "@label:base", "@label:head"]), false);
    let (_, stderr) = text(&out);
    assert!(stderr.contains("error: the traces of run(s) #1 are no longer kept"), "{stderr}");
    assert!(stderr.contains("hint: keep more traces with `--keep N`"), "{stderr}");
    let out = run(calltime().current_dir(&dir).args(["diff", "@run:2", "@label:head", "--format", "json"]), true);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = |side: &str| (report[side]["input"].clone(), report[side]["runs"].as_array().map_or(0, Vec::len));
    assert_eq!(runs("base"), (serde_json::json!("@run:2"), 1));
    assert_eq!(runs("head"), (serde_json::json!("@label:head"), 2));

    // A trace recorded elsewhere, imported with its own date and a label.
    let imported = data("history/runs/run-1.trace");
    let out = run(
        calltime().current_dir(&dir).args(["report", "--import"]).arg(&imported).args(["--label", "ci", "-o", "-"]),
        true,
    );
    assert!(text(&out).1.contains("Stored run #5 from"), "{}", text(&out).1);
    let out = run(calltime().current_dir(&dir).args(["history", "--label", "ci"]), true);
    assert!(text(&out).0.contains("#5   2026-03-01 10:00  ci "), "{}", text(&out).0);

    // The chart of the `base` and `head` runs, and the HTML report with its charts across runs.
    let chart = dir.join("history.svg");
    run(calltime().current_dir(&dir).args(["history", "--root", "server::handle", "--chart"]).arg(&chart), true);
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 5, "one mean point per run of the root: four and the import");
    let page = dir.join("report.html");
    run(calltime().current_dir(&dir).args(["report", "--format", "html", "-o"]).arg(&page), true);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"history\"") && html.contains("<td>#4</td>"), "the report charts the stored runs");

    run(calltime().current_dir(&dir).args(["history", "--delete", "1"]), true);
    assert_eq!(listed(&dir, &["--label", "base"]), pairs(&[("#2", "base")]));

    // Flags that need something else say what.
    let out = run(calltime().current_dir(&dir).args(["report", "--label", "x"]), false);
    assert!(text(&out).1.contains("hint: `cargo calltime report --import run.trace --label ci`"), "{}", text(&out).1);
    let out =
        run(calltime().current_dir(&dir).args(["history", "--since", "2026-03-02", "--until", "2026-03-01"]), false);
    assert!(text(&out).1.contains("error: --since is later than --until"), "{}", text(&out).1);
    let out = run(calltime().current_dir(&dir).args(["diff", "@branch:x", "@run:2"]), false);
    assert!(text(&out).1.contains("error: `@branch:x` names no stored run"), "{}", text(&out).1);
}

//! Shared test harness: golden files and running the real binary.
//!
//! `check(expect_file, actual)` compares `actual` with the file's content; with `UPDATE_EXPECT=1` it rewrites the
//! file instead, for review with `git diff`.

#![allow(dead_code)]

pub mod svg;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (the parent of `cargo-calltime/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crate has a parent").to_owned()
}

/// `cargo-calltime/tests/data/<rel>`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

/// Compares `actual` with the expectation file, or rewrites it with `UPDATE_EXPECT=1`.
#[track_caller]
pub fn check(expect_file: &Path, actual: &str) {
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if let Some(dir) = expect_file.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(expect_file, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(expect_file).unwrap_or_else(|_| {
        panic!("missing expectation {}; run with UPDATE_EXPECT=1 to create it", expect_file.display())
    });
    if expected != actual {
        let diff = line_diff(&expected, actual);
        panic!(
            "output differs from {}\n(run with UPDATE_EXPECT=1 to accept the new output)\n{diff}",
            expect_file.display()
        );
    }
}

/// A small unified-style diff: good enough to see what moved.
fn line_diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let mut out = String::new();
    let n = e.len().max(a.len());
    for i in 0..n {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!("-{:>4} {x}\n", i + 1));
                }
                if let Some(y) = y {
                    out.push_str(&format!("+{:>4} {y}\n", i + 1));
                }
            }
        }
    }
    out
}

/// Replaces every occurrence of `dir` (and its canonical form) with `placeholder`.
pub fn normalize_path(text: &str, dir: &Path, placeholder: &str) -> String {
    let mut out = text.replace(&dir.display().to_string(), placeholder);
    if let Ok(canon) = dir.canonicalize() {
        out = out.replace(&canon.display().to_string(), placeholder);
    }
    out
}

/// Copies a test crate (`test-crates/<name>`) into a fresh temporary directory, skipping `target/`.
pub fn copy_test_crate(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = repo_root().join("test-crates").join(name);
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(name);
    copy_dir(&src, &dst);
    (tmp, dst)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let from = entry.path();
        let to = dst.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&from, &to);
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// The real `cargo-calltime` binary, built by cargo for this test run.
pub fn calltime() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-calltime"));
    cmd.arg("calltime");
    cmd.env("NO_COLOR", "1").env_remove("CARGO_TERM_COLOR").env_remove("CARGO_TARGET_DIR");
    // The shared runtime cache: one for the test runs, not the user's ~/.cache (the runtime is compiled once).
    cmd.env("CALLTIME_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("calltime-cache"));
    cmd
}

/// Runs `cmd`; on an unexpected status, panics with the command, status, stdout and stderr.
#[track_caller]
pub fn run(cmd: &mut Command, expect_success: bool) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if out.status.success() != expect_success {
        panic!(
            "command {:?}\nexpected {}, got status {}\n--- stdout\n{}\n--- stderr\n{}",
            cmd,
            if expect_success { "success" } else { "failure" },
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// The runtime's default settings, in the order its `settings` line has them (trace format 2).
pub const RUNTIME_SETTINGS: [(&str, u64); 6] = [
    ("node_cap", 100_000),
    ("fold_after", 4096),
    ("time_sample", 64),
    ("min_ns", 0),
    ("sample", 1),
    ("max_invocations", 100_000),
];

/// Every object key in a JSON document, at any depth (to check that docs name them all).
pub fn collect_keys(value: &serde_json::Value, keys: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                keys.insert(k.clone());
                collect_keys(v, keys);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_keys(v, keys)),
        _ => {}
    }
}

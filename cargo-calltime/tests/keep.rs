//! End-to-end: choosing which trees a run keeps (issue 14 item 2) on `test-crates/e2e-slow`, a request loop of 500
//! `handle` calls of which 5 take a 20 ms slow path. The program makes the choice as it runs; the report says what
//! was kept, why, and over which span of the run.

mod util;

use serde_json::Value;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The names of the root's children, per kept invocation.
fn children_of_each(report: &Value) -> Vec<Vec<String>> {
    let invocations = report["invocations"].as_array().expect("an invocations array");
    invocations
        .iter()
        .map(|inv| {
            let children = inv["tree"]["children"].as_array().expect("children");
            children.iter().map(|c| c["path"].as_str().unwrap_or_default().to_owned()).collect()
        })
        .collect()
}

#[test]
fn slower_than_keeps_exactly_the_slow_invocations() {
    let (_tmp, dir) = util::copy_test_crate("e2e-slow");
    let json = dir.join("kept.json");
    let base = ["--root", "handle", "--depth", "2"];
    let out = util::run(
        util::calltime()
            .args(base)
            .args(["--slower-than", "10ms", "--format", "json", "-o"])
            .arg(&json)
            .current_dir(&dir),
        true,
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let children = children_of_each(&report);
    assert_eq!(children.len(), 5, "the 5 slow requests and nothing else: {children:?}");
    assert!(children.iter().all(|c| c.iter().any(|name| name.ends_with("slow_path"))), "{children:?}");
    let stats = &report["stats"];
    assert_eq!((stats["seen"].as_u64(), stats["kept"].as_u64()), (Some(500), Some(5)), "{stats}");
    assert_eq!((stats["left_out_fast"].as_u64(), stats["dropped"].as_u64()), (Some(495), Some(0)), "{stats}");
    assert!(stats["last_root_ns"].as_u64() > stats["first_root_ns"].as_u64(), "{stats}");
    assert_eq!(report["settings"]["slower_than_ns"].as_u64(), Some(10_000_000), "{}", report["settings"]);
    assert!(stderr_of(&out).contains("only invocations slower than 10.0ms: 5 of 5 kept"), "{}", stderr_of(&out));

    // The same build: the two slowest of the run, and the text report says what it kept, why and from when.
    let out = util::run(util::calltime().args(base).args(["--keep-slowest", "2"]).current_dir(&dir), true);
    let stderr = stderr_of(&out);
    let note = stderr.lines().find(|l| l.contains("kept 2 of 500 invocations")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(note.contains(": the 2 slowest (--keep-slowest); 498 left out (0 not slower, 498 not chosen), chosen from roots that started over "), "{note}");
    assert!(stderr.contains("2 invocations"), "{stderr}");

    // None slower: the error says so (not "never returned").
    let out = util::run(util::calltime().args(base).args(["--slower-than", "1s"]).current_dir(&dir), false);
    let stderr = stderr_of(&out);
    assert!(stderr.contains("was entered 500 times and no invocation was slower than 1.00s"), "{stderr}");

    // A sample and a limit on the first N contradict each other.
    let out = util::run(
        util::calltime().args(base).args(["--keep-sample", "10", "--max-invocations", "20"]).current_dir(&dir),
        false,
    );
    assert!(stderr_of(&out).contains("--max-invocations"), "{}", stderr_of(&out));
}

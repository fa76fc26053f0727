//! Work a root hands to other threads and tasks (issue 13 item 1), end to end with the real binary:
//! test-crates/e2e-spawn-threads (scoped threads, threads joined in the root, one of which enters the root again,
//! a thread that outlives its root) and test-crates/e2e-spawn-pools (rayon's `join` and `scope`, a tokio
//! multi-thread runtime whose handler spawns a task and blocking work, and a task that outlives its handler).
//! Spawned calls hang under the node that spawned them with exact call counts. Thread and task numbers vary from
//! run to run, so the dumps keep the kind of lane only and merge siblings by function and kind.

mod util;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the tool on `dir` with `args`, the report as JSON; returns it and the program's stdout.
fn report(tmp: &Path, dir: &Path, args: &[&str]) -> (Value, String) {
    let path = tmp.join("report.json");
    let out = util::run(util::calltime().args(args).args(["--format", "json", "-o"]).arg(&path).current_dir(dir), true);
    let json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (json, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One line per group of siblings with the same function and lane kind (sorted): `display [kind] calls=N`, with
/// `outlived=N` when spawned work outlived the invocation; children pooled per group.
fn dump(nodes: &[&Value], depth: usize, out: &mut String) {
    let mut groups: Vec<(String, u64, u64, Vec<&Value>)> = Vec::new();
    for n in nodes {
        let display = n["display"].as_str().unwrap_or("?");
        let key = match n["lane"]["kind"].as_str() {
            Some(kind) => format!("{display} [{kind}]"),
            None => display.to_owned(),
        };
        let at = match groups.iter().position(|g| g.0 == key) {
            Some(at) => at,
            None => {
                groups.push((key, 0, 0, Vec::new()));
                groups.len() - 1
            }
        };
        groups[at].1 += n["calls"].as_u64().unwrap_or(0);
        groups[at].2 += n["outlived"].as_u64().unwrap_or(0);
        groups[at].3.extend(n["children"].as_array().into_iter().flatten());
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, calls, outlived, children) in groups {
        let outlived = if outlived > 0 { format!(" outlived={outlived}") } else { String::new() };
        out.push_str(&format!("{}{key} calls={calls}{outlived}\n", "  ".repeat(depth)));
        dump(&children, depth + 1, out);
    }
}

/// Every invocation's tree, and what each says it spawned (kinds, and how many outlived it).
fn dump_invocations(json: &Value) -> String {
    let mut out = String::new();
    let mut invocations: Vec<&Value> = json["invocations"].as_array().unwrap().iter().collect();
    invocations.sort_by_key(|inv| inv["tree"]["display"].as_str().unwrap_or("").to_owned());
    for inv in invocations {
        let spawned = inv["spawned"].as_array().cloned().unwrap_or_default();
        let kind = |k: &str| spawned.iter().filter(|s| s["thread"]["kind"] == k).count();
        let outlived = spawned.iter().filter(|s| s["outlived"] == true).count();
        out.push_str(&format!(
            "invocation: {} threads, {} tasks spawned, {outlived} outlived\n",
            kind("thread"),
            kind("task")
        ));
        dump(&[&inv["tree"]], 1, &mut out);
    }
    out
}

/// The runtime's whole-run aggregate (`--format aggregate`, JSON `whole_run`): spawned calls under the spawning
/// call, marked with their kind of lane, counted exactly (also the work that outlived its invocation).
fn dump_whole_run(json: &Value) -> String {
    let mut out = String::new();
    let aggregates = json["whole_run"]["aggregate"].as_array().cloned().unwrap_or_default();
    let mut trees: Vec<&Value> = aggregates.iter().map(|agg| &agg["tree"]).collect();
    trees.sort_by_key(|tree| tree["display"].as_str().unwrap_or("").to_owned());
    for tree in trees {
        out.push_str("whole run:\n");
        dump(&[tree], 1, &mut out);
    }
    out
}

/// Scoped threads, joined threads and a thread that outlives its root: one invocation per root call (the joined
/// thread that enters `handle` again records a call, not an invocation), and the program prints what a plain
/// build prints.
#[test]
fn threads_spawned_in_a_root_hang_under_the_spawning_call() {
    let (tmp, dir) = util::copy_test_crate("e2e-spawn-threads");
    let args = ["--root", "handle", "--root", "serve", "--depth", "5", "--probe-trivial"];
    let (json, stdout) = report(tmp.path(), &dir, &args);
    util::check(&util::data("adopt/threads-tree.txt"), &dump_invocations(&json));
    util::check(&util::data("adopt/threads-whole-run.txt"), &dump_whole_run(&json));
    let mut plain = Command::new("cargo");
    plain.args(["run", "-q", "--offline", "--target-dir"]).arg(tmp.path().join("plain-target")).current_dir(&dir);
    let plain = util::run(plain.env_remove("CARGO_TARGET_DIR").env_remove("RUSTFLAGS"), true);
    assert_eq!(stdout, String::from_utf8_lossy(&plain.stdout));

    // The text view marks the lanes and says what ran elsewhere.
    let text = util::run(util::calltime().args(["report"]).current_dir(&dir), true);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("work [thread "), "{text}");
    assert!(text.contains("serve [outlived]"), "{text}");
    assert!(text.contains("spawned work: 8 on other threads,"), "{text}");

    // Folded stacks (and so flamegraphs) name the frames of spawned calls; Chrome traces give them their threads'
    // tracks.
    let folded = util::run(util::calltime().args(["report", "--format", "folded"]).current_dir(&dir), true);
    let folded = String::from_utf8_lossy(&folded.stdout);
    assert!(folded.lines().any(|l| l.starts_with("handle;scoped;work [thread];step ")), "{folded}");
    let chrome = util::run(util::calltime().args(["report", "--format", "chrome"]).current_dir(&dir), true);
    let chrome = String::from_utf8_lossy(&chrome.stdout);
    assert_eq!(chrome.matches(" (spawned)\"}").count(), 8, "{chrome}");

    // `diff` counts spawned calls on their call paths (per invocation, exact) and marks the frames that ran
    // elsewhere.
    let last = dir.join("target/calltime/last.trace");
    let diff = util::run(util::calltime().arg("diff").arg(&last).arg(&last).args(["--format", "json"]), true);
    let diff: Value = serde_json::from_slice(&diff.stdout).unwrap();
    let mut rows: Vec<String> = diff["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} calls={}\n", p["display"].as_str().unwrap_or("?"), p["calls"]["base"]))
        .collect();
    rows.sort();
    util::check(&util::data("adopt/threads-diff.txt"), &rows.concat());
}

/// rayon's `join` and `scope` (with spawns inside), and tokio tasks and blocking work spawned by a handler.
#[test]
fn rayon_jobs_and_tokio_tasks_hang_under_the_spawning_call() {
    let (tmp, dir) = util::copy_test_crate("e2e-spawn-pools");
    let args = ["--root", "pool", "--root", "handler", "--root", "tag", "--depth", "4", "--probe-trivial"];
    let (json, stdout) = report(tmp.path(), &dir, &args);
    // `pool` spawns 5 jobs (`join`'s 2, the scope's and its 2 spawns) and runs 3 parallel chains in `tally` and one
    // given a function by name in `named`, whose items all run on the pool (`main` is none of its threads): one
    // part per worker that ran an item of a chain, 1 or 2 of the 2 workers per chain as rayon splits the work.
    // Calls are exact whatever the split.
    let pool = json["invocations"].as_array().unwrap().iter().find(|inv| inv["tree"]["display"] == "pool").unwrap();
    let pool_parts = pool["spawned"].as_array().unwrap().len();
    assert!((5 + 4..=5 + 4 * 2).contains(&pool_parts), "{pool_parts} parts");
    let dump = dump_invocations(&json).replace(
        &format!("invocation: {pool_parts} threads,"),
        "invocation: 9 to 13 threads (5 jobs, 1 or 2 workers per parallel chain),",
    );
    util::check(&util::data("adopt/pools-tree.txt"), &dump);
    util::check(&util::data("adopt/pools-whole-run.txt"), &dump_whole_run(&json));
    assert!(stdout.starts_with("pool "), "{stdout}");

    // A rayon worker that ran parts of `pool` and then a `tag` root of its own has one number for both: every
    // thread a part of `pool` names is one of the `tag` invocations' threads (one per worker, all different).
    let invocations = json["invocations"].as_array().unwrap();
    let of = |root: &'static str| invocations.iter().filter(move |inv| inv["tree"]["display"] == root);
    let mut tag_threads: Vec<u64> = of("tag").map(|inv| inv["thread"]["id"].as_u64().unwrap()).collect();
    tag_threads.sort_unstable();
    tag_threads.dedup();
    assert_eq!(tag_threads.len(), 2, "{tag_threads:?}");
    let part_threads: Vec<u64> = of("pool")
        .flat_map(|inv| inv["spawned"].as_array().unwrap())
        .map(|part| part["thread"]["id"].as_u64().unwrap())
        .collect();
    assert!(!part_threads.is_empty());
    assert!(part_threads.iter().all(|id| tag_threads.contains(id)), "parts {part_threads:?}, roots {tag_threads:?}");

    // The whole-run aggregate counts a spawning call's self time as the trees do (its time less the union of its
    // children's intervals, spawned work included, which may overlap): `pool` and `tally`, each called once, have
    // the same self time in both, up to the nanosecond conversions done at different times (raw times: the
    // aggregate is not compensated).
    let raw = util::run(util::calltime().args(["report", "--raw-times", "--format", "json"]).current_dir(&dir), true);
    let raw: Value = serde_json::from_slice(&raw.stdout).unwrap();
    let find = |tree: &Value, name: &str| -> Option<u64> {
        fn walk<'a>(node: &'a Value, name: &str) -> Option<&'a Value> {
            if node["display"] == name {
                return Some(node);
            }
            node["children"].as_array()?.iter().find_map(|child| walk(child, name))
        }
        walk(tree, name)?["self_ns"].as_u64()
    };
    let pool_tree =
        &raw["invocations"].as_array().unwrap().iter().find(|i| i["tree"]["display"] == "pool").unwrap()["tree"];
    let aggregates = raw["whole_run"]["aggregate"].as_array().unwrap();
    let pool_whole = &aggregates.iter().find(|a| a["tree"]["display"] == "pool").unwrap()["tree"];
    for name in ["pool", "tally"] {
        let (in_tree, in_whole) = (find(pool_tree, name).unwrap(), find(pool_whole, name).unwrap());
        assert!(
            in_tree.abs_diff(in_whole) <= in_tree / 100 + 100,
            "{name}: tree {in_tree} ns, whole run {in_whole} ns"
        );
    }

    // A parallel iterator given a workspace function by name (`named`'s `.map(step)`) is adopted like the closures
    // written in `tally`'s chains (its `step` calls are under `named` above): the plan warns of none.
    let graph = util::run(util::calltime().args(["graph", "--root", "pool", "--depth", "4"]).current_dir(&dir), true);
    let said = format!("{}{}", String::from_utf8_lossy(&graph.stdout), String::from_utf8_lossy(&graph.stderr));
    assert!(!said.contains("rayon parallel iterators are not recorded"), "{said}");
}

/// The README's example (issue 13): one tree with work on scoped threads under the spawning call, allocations per
/// node and `Err` returns, all exact. The root's own allocations (std's thread spawning) vary with the toolchain,
/// so the dump gives them for the probed functions below it only.
#[test]
fn one_tree_shows_threads_allocations_and_errors() {
    let (tmp, dir) = util::copy_test_crate("e2e-complete");
    let (json, stdout) = report(tmp.path(), &dir, &["--root", "handle", "--depth", "3", "--probe-trivial"]);
    assert_eq!(stdout, "parsed 8 fields\n");
    fn line(node: &Value, depth: usize, out: &mut String) {
        let lane = node["lane"]["kind"].as_str().map(|k| format!(" [{k}]")).unwrap_or_default();
        let allocs = match depth {
            0 => String::new(),
            _ => format!(" self_allocs={} self_bytes={}", node["self_allocs"], node["self_alloc_bytes"]),
        };
        out.push_str(&format!(
            "{}{}{lane} calls={} errs={}{allocs}\n",
            "  ".repeat(depth),
            node["display"].as_str().unwrap_or("?"),
            node["calls"],
            node["errs"]
        ));
        // Siblings in a stable order: the two threads' parts are told apart by what they parsed.
        let mut children: Vec<String> = Vec::new();
        for child in node["children"].as_array().into_iter().flatten() {
            let mut text = String::new();
            line(child, depth + 1, &mut text);
            children.push(text);
        }
        children.sort();
        out.push_str(&children.concat());
    }
    let mut out = String::new();
    for inv in json["invocations"].as_array().unwrap() {
        let spawned = inv["spawned"].as_array().map_or(0, Vec::len);
        out.push_str(&format!("invocation: {spawned} parts spawned\n"));
        line(&inv["tree"], 0, &mut out);
    }
    util::check(&util::data("adopt/complete-tree.txt"), &out);
}

/// Rayon parallel iterators as a program writes them (test-crates/e2e-parallel, edition 2018): the calls the
/// closures of a chain make hang under the call that starts it, on the workers' lanes, with exact counts, whatever
/// the closures' form (borrowing, `move`, `?`, a declared return type, a zipped chain, a chain nested in a closure,
/// a sort's comparator); the program behaves as its plain build; a chain stored before it is consumed and a closure
/// passed by name are not adopted, and the plan names their function.
#[test]
fn parallel_iterator_closures_hang_under_the_call_that_starts_them() {
    let (tmp, dir) = util::copy_test_crate("e2e-parallel");
    let args = ["--root", "summarise", "--root", "sorted", "--depth", "3", "--probe-trivial"];
    let (json, stdout) = report(tmp.path(), &dir, &args);
    let mut out = String::new();
    let mut invocations: Vec<&Value> = json["invocations"].as_array().unwrap().iter().collect();
    invocations.sort_by_key(|inv| inv["tree"]["display"].as_str().unwrap_or("").to_owned());
    for inv in invocations {
        // Parts ran on the pool's workers only, never on the root's thread (`main` is no worker).
        let root_thread = &inv["thread"]["id"];
        for part in inv["spawned"].as_array().into_iter().flatten() {
            assert_eq!(part["thread"]["kind"], "thread", "{part}");
            assert_ne!(&part["thread"]["id"], root_thread, "{part}");
        }
        out.push_str("invocation:\n");
        dump(&[&inv["tree"]], 1, &mut out);
    }
    out.push_str(&dump_whole_run(&json));
    util::check(&util::data("adopt/parallel-tree.txt"), &out);

    let mut plain = Command::new("cargo");
    plain.args(["run", "-q", "--offline", "--target-dir"]).arg(tmp.path().join("plain-target")).current_dir(&dir);
    let plain = util::run(plain.env_remove("CARGO_TARGET_DIR").env_remove("RUSTFLAGS"), true);
    assert_eq!(stdout, String::from_utf8_lossy(&plain.stdout));

    // What the rewrite made of each chain: insertions only, on the chain's own line.
    let sibling = dir.join("target/calltime/shadow/src/.main.calltime.rs");
    let rewritten = std::fs::read_to_string(&sibling).unwrap();
    let original = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert_eq!(rewritten.lines().count(), original.lines().count());
    let chains: Vec<&str> = rewritten.lines().filter(|l| l.contains("__calltime_par")).map(str::trim).collect();
    util::check(&util::data("adopt/parallel-rewrite.txt"), &(chains.join("\n") + "\n"));

    let graph =
        util::run(util::calltime().args(["graph", "--root", "summarise", "--root", "sorted"]).current_dir(&dir), true);
    let said = format!("{}{}", String::from_utf8_lossy(&graph.stdout), String::from_utf8_lossy(&graph.stderr));
    let warning =
        said.lines().find(|l| l.contains("calls made inside these rayon parallel iterators are not recorded"));
    assert!(warning.is_some_and(|w| w.ends_with(": summarise")), "{said}");
}

/// test-crates/e2e-parallel's `tally`: 20,000 items over two workers, so a worker's part folds and `step` retires on
/// the workers in the first invocation. Its calls after retiring were counted in the parts but written nowhere: the
/// tree showed the few thousand made before (rayon in the program's own code: 3,855 of 29,493 calls of
/// `normalize`). The invocation's `r` lines now add its parts' counts, so the tree holds all 20,000.
#[test]
fn calls_a_function_makes_on_the_workers_after_it_retired_stay_in_the_tree() {
    let (tmp, dir) = util::copy_test_crate("e2e-parallel");
    let (json, _) = report(tmp.path(), &dir, &["--root", "tally", "--depth", "2", "--probe-trivial"]);
    fn calls_of(node: &Value, name: &str) -> f64 {
        let own = if node["display"] == name { node["calls"].as_f64().unwrap_or(0.0) } else { 0.0 };
        own + node["children"].as_array().into_iter().flatten().map(|c| calls_of(c, name)).sum::<f64>()
    }
    let first = &json["invocations"][0];
    let retired = json["retired"].as_array().into_iter().flatten().any(|r| r["display"] == "step");
    let calls = calls_of(&first["tree"], "step");
    assert!(retired || calls == 20_000.0, "step neither retired nor counted exactly: {calls}");
    assert!((calls - 20_000.0).abs() < 1.0, "step: {calls} calls in the first tree, 20,000 made\n{first}");
}

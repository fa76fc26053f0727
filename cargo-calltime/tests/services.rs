//! Long-running services (issue 14), end to end on `test-crates/e2e-server`, a std-only TCP server on loopback with
//! its own bounded load (a fixed request count, or a time limit of a few seconds): the runtime's whole-run aggregate
//! counts every request exactly, whatever was kept; the trace stays under its hourly cap and rotates; a program
//! that spawns copies of itself gives one merged report; `ctl off` stops recording within 100 ms and `ctl on`
//! resumes it, and the report says when; after `ctl slower-than 5ms` the kept trees are the slow ones; the slowest
//! trees held by `--keep-slowest` survive a SIGTERM; `report --follow` redraws the aggregate.

mod util;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cargo_calltime::control::{self, ControlCommand, ProcessStatus};
use cargo_calltime::trace::{run_files, AggregatePath, Invocation, Node, Trace};

fn run_server(dir: &Path, flags: &[&str], env: &[(&str, &str)], program: &[&str]) -> String {
    let mut cmd = util::calltime();
    cmd.args(["--root", "handle_request", "--exact", "-o"]).arg(dir.join("report.txt")).args(flags).arg("--");
    cmd.args(program).envs(env.iter().copied()).current_dir(dir);
    String::from_utf8(util::run(&mut cmd, true).stdout).unwrap()
}

fn last_trace(dir: &Path) -> Trace {
    Trace::load(&dir.join("target/calltime/last.trace"), None).unwrap()
}

/// The newest run's files under `target/calltime/traces` (the originals `last.trace` was merged from).
fn newest_run_files(dir: &Path) -> Vec<PathBuf> {
    let traces = dir.join("target/calltime/traces");
    let newest = std::fs::read_dir(traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .max()
        .unwrap();
    run_files(&newest)
}

fn find<'a>(path: &'a AggregatePath, name_path: &[u32]) -> &'a AggregatePath {
    name_path.iter().fold(path, |node, &func| node.children.iter().find(|c| c.func == func).unwrap())
}

fn func(trace: &Trace, short: &str) -> u32 {
    let table = &trace.table;
    let at = table.functions.iter().position(|f| f.path.ends_with(short));
    at.unwrap_or_else(|| panic!("{short} not in the function table")) as u32
}

#[test]
fn a_service_is_summarised_whole_bounded_merged_and_controlled() {
    let (_tmp, dir) = util::copy_test_crate("e2e-server");

    // 20,000 requests, 1 in 10 recorded and at most 300 kept: the aggregate still counts all of them, and the 20
    // slow ones (every 1000th request of each of the 2 clients).
    let out = run_server(&dir, &["--sample", "10", "--max-invocations", "300"], &[], &["serve", "20000", "2"]);
    assert!(out.contains("served 20000 "), "{out}");
    let trace = last_trace(&dir);
    assert_eq!(trace.stats.seen, 20_000);
    assert!(trace.invocations.len() <= 300, "{}", trace.invocations.len());
    let aggregate = trace.aggregate.as_ref().expect("the runtime wrote its aggregate");
    assert_eq!(aggregate.invocations, 20_000);
    let root = &aggregate.roots[0];
    assert_eq!((root.calls, root.timed), (20_000, 20_000), "every request, kept or not, with its own time");
    let (respond, slow) = (func(&trace, "::respond"), func(&trace, "::slow_path"));
    assert_eq!(find(root, &[respond, slow]).calls, 20);
    assert!(root.max_ns >= 3_000_000 && root.percentile_ns(0.5).unwrap() < 1_000_000, "{root:?}");
    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(report.contains("invocations: 20000 seen, 300 kept"), "{report}");
    let mut cmd = util::calltime();
    cmd.args(["report", "--format", "aggregate"]).current_dir(&dir);
    let whole = String::from_utf8(util::run(&mut cmd, true).stdout).unwrap();
    assert!(whole.contains("whole run: 20,000 invocations folded in by the runtime"), "{whole}");
    assert!(whole.contains("300 kept as trees"), "{whole}");

    // Rotation and the hourly cap, set by flags: 180 KB at once (half of 360 KB an hour), then 50 bytes a second.
    let caps = ["--rotate-size", "60kB", "--max-size-per-hour", "360000"];
    run_server(&dir, &caps, &[], &["serve", "20000", "2"]);
    let files = newest_run_files(&dir);
    let bytes: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    assert!(files.len() >= 2, "rotated by size: {files:?}");
    assert!(bytes <= 200_000, "{bytes} bytes in {files:?}");
    let trace = last_trace(&dir);
    let (rotate, cap) = (trace.settings.get("rotate_bytes"), trace.settings.get("max_bytes_per_hour"));
    assert_eq!((rotate, cap), (Some(&60_000), Some(&360_000)), "the flags reach the settings line");
    let aggregate = trace.aggregate.as_ref().unwrap();
    assert_eq!(aggregate.roots[0].calls, 20_000, "the aggregate counts what the cap dropped");
    assert!(aggregate.dropped_cap > 0 && trace.stats.dropped >= aggregate.dropped_cap, "{aggregate:?}");
    assert!(trace.stats.dropped_cap >= aggregate.dropped_cap, "the stats line names the cause: {:?}", trace.stats);
    assert_eq!(trace.stats.kept + trace.stats.dropped, 20_000);
    assert_eq!(trace.invocations.len() as u64, trace.stats.kept, "the merged segments hold every kept tree");

    // A program that spawns two copies of itself: one file per process, one merged report.
    let out = run_server(&dir, &[], &[], &["fanout", "3", "2000"]);
    assert!(out.contains("total 6000"), "{out}");
    assert_eq!(newest_run_files(&dir).len(), 3);
    let trace = last_trace(&dir);
    let aggregate = trace.aggregate.as_ref().unwrap();
    assert_eq!((aggregate.processes, aggregate.roots[0].calls), (3, 6000));
    // Every tree is there, or counted under a cause (a writer may fall behind on a loaded machine: the queue's).
    let s = &trace.stats;
    assert_eq!((trace.invocations.len() as u64, s.seen, s.kept + s.dropped), (s.kept, 6000, 6000), "{s:?}");
    assert_eq!(s.dropped, s.dropped_queue_full + s.dropped_no_buffer, "no tree lost without its cause: {s:?}");

    controlled_while_running(&dir);
    slower_than_switched_while_running(&dir);
    held_trees_survive_a_kill(&dir);

    let mut cmd = util::calltime();
    cmd.args(["report", "--follow", "--follow-frames", "2"]).current_dir(&dir);
    let frames = String::from_utf8(util::run(&mut cmd, true).stdout).unwrap();
    assert_eq!(frames.matches("whole run: ").count(), 2, "{frames}");
}

fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// Starts `cargo calltime --root handle_request ... -- <program>` and waits until it can be controlled.
fn spawn_controllable(dir: &Path, flags: &[&str], env: &[(&str, &str)], program: &[&str]) -> (Child, ProcessStatus) {
    let mut child = util::calltime()
        .args(["--root", "handle_request", "-o", "-"])
        .args(flags)
        .arg("--")
        .args(program)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dirs = [control::control_dir(&dir.join("target/calltime"))];
    let started = Instant::now();
    let process = loop {
        if let Ok(process) = control::pick(&dirs, None) {
            break process;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server never became controllable");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (child, process)
}

/// Waits for the server and returns how many requests it served.
fn served(child: Child) -> u64 {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("served ")?.split(' ').next()?.parse().ok())
        .unwrap()
}

/// `ctl off` and `ctl on` on a server under load for 3 s: applied within 100 ms; no request recorded in between.
fn controlled_while_running(dir: &Path) {
    let (child, process) = spawn_controllable(dir, &[], &[], &["serve-for", "3000", "2"]);
    std::thread::sleep(Duration::from_millis(300));
    let off_sent = SystemTime::now();
    let (status, took) = control::send(&process, ControlCommand::Off, Duration::from_secs(2)).unwrap();
    let off_applied = SystemTime::now();
    assert!(!status.recording && took <= Duration::from_millis(100), "off took {took:?}");
    std::thread::sleep(Duration::from_millis(500));
    let on_sent = SystemTime::now();
    let (status, took) = control::send(&process, ControlCommand::On, Duration::from_secs(2)).unwrap();
    let on_applied = SystemTime::now();
    assert!(status.recording && took <= Duration::from_millis(100), "on took {took:?}");
    let served = served(child);
    let trace = last_trace(dir);
    let starts: Vec<u64> = trace.invocations.iter().map(|i| trace.epoch_unix_ns + i.start_ns).collect();
    let (off_sent, off_applied, on_sent, on_applied) =
        (unix_ns(off_sent), unix_ns(off_applied), unix_ns(on_sent), unix_ns(on_applied));
    assert!(starts.iter().any(|&s| s < off_sent), "recorded before off");
    assert!(starts.iter().any(|&s| s > on_applied), "recorded again after on");
    let while_off = starts.iter().filter(|&&s| s > off_applied && s < on_sent).count();
    assert_eq!(while_off, 0, "no request recorded while off");
    let counted = trace.aggregate.as_ref().unwrap().roots[0].calls;
    // Every root seen while on is in the whole-run aggregate, except those sampled for cost (not recorded at all).
    let recorded = trace.stats.seen - trace.stats.sampled_for_cost;
    assert!(counted < served && counted == recorded, "{counted} of {served}, {:?}", trace.stats);
    // The trace says what was switched, and when: the time between the two changes (one clock, so the trace
    // epoch's precision does not matter) lies between the shortest and the longest the commands allow.
    let switched: Vec<(u64, &str, u64)> =
        trace.controls.iter().map(|c| (c.at_ns, c.setting.as_str(), c.value)).collect();
    let [(off_at, "recording", 0), (on_at, "recording", 1)] = switched[..] else { panic!("{switched:?}") };
    let (shortest, longest) = (on_sent - off_applied, on_applied - off_sent);
    assert!((shortest..=longest).contains(&(on_at - off_at)), "{} ns between off and on", on_at - off_at);
    let mut cmd = util::calltime();
    cmd.args(["report", "--format", "aggregate"]).current_dir(dir);
    let whole = String::from_utf8(util::run(&mut cmd, true).stdout).unwrap();
    assert!(whole.contains("switched while running (cargo calltime ctl): recording off at +"), "{whole}");
}

fn calls(node: &Node, func: u32) -> bool {
    node.func == func || node.children.iter().any(|child| calls(child, func))
}

/// `ctl slower-than 5ms` on a server under load whose injected slow requests take 20 ms: applied within 100 ms,
/// and from then on the kept trees are the slow ones while the aggregate still counts every request exactly.
fn slower_than_switched_while_running(dir: &Path) {
    // The first 100,000 trees at most before the threshold is set (a run without a keep policy); none after it.
    let (child, process) = spawn_controllable(dir, &[], &[("E2E_SLOW_MS", "20")], &["serve-for", "3000", "2"]);
    std::thread::sleep(Duration::from_millis(300));
    let sent = unix_ns(SystemTime::now());
    let (status, took) =
        control::send(&process, ControlCommand::SlowerThan(5_000_000), Duration::from_secs(2)).unwrap();
    let applied = unix_ns(SystemTime::now());
    assert!(status.slower_than_ns == 5_000_000 && took <= Duration::from_millis(100), "slower-than took {took:?}");
    still_running_report(dir, &status.trace);
    let served = served(child);
    let trace = last_trace(dir);
    let slow = func(&trace, "::slow_path");
    let start = |i: &Invocation| trace.epoch_unix_ns + i.start_ns;
    assert!(trace.invocations.iter().any(|i| start(i) < sent && !calls(&i.root, slow)), "fast ones kept before");
    let after: Vec<&Invocation> = trace.invocations.iter().filter(|i| start(i) > applied).collect();
    assert!(!after.is_empty(), "slow ones kept after");
    for invocation in &after {
        assert!(invocation.duration_ns > 5_000_000, "{invocation:?}");
    }
    // The injected slow requests; on a loaded machine an ordinary request may also take over 5 ms (descheduled),
    // and the threshold rightly keeps it: a few, not most.
    let injected = after.iter().filter(|i| calls(&i.root, slow)).count();
    assert!(injected * 10 >= after.len() * 9, "{injected} of {} kept trees are the injected slow ones", after.len());
    assert!(trace.stats.left_out_fast > 0, "{:?}", trace.stats);
    // Over 100,000 requests are served (128,000 here): the default limit on trees no longer applies once the
    // threshold chooses them.
    assert_eq!(trace.stats.dropped_limit, 0, "{served} served, {:?}", trace.stats);
    let aggregate = trace.aggregate.as_ref().unwrap();
    // Every request counted: in the aggregate, or (not recorded at all) among those sampled for cost.
    let counted = aggregate.roots[0].calls + trace.stats.sampled_for_cost;
    assert_eq!((counted, trace.stats.seen), (served, served), "every request counted");
    let switched: Vec<(&str, u64)> = trace.controls.iter().map(|c| (c.setting.as_str(), c.value)).collect();
    assert_eq!(switched, [("slower_than_ns", 5_000_000)]);
}

/// `--keep-slowest 5` on a server killed by SIGTERM after 2.5 s of load (its injected slow requests take 20 ms):
/// the runtime wrote its held trees every second, so the report has the 5 slow ones although the process never
/// reached its exit handler.
fn held_trees_survive_a_kill(dir: &Path) {
    let flags = ["--keep-slowest", "5"];
    let (child, _) = spawn_controllable(dir, &flags, &[("E2E_SLOW_MS", "20")], &["serve-for", "20000", "2"]);
    std::thread::sleep(Duration::from_millis(2_500));
    // The tool passes SIGTERM on to the program, waits for it, and reports what was recorded.
    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("killed by signal 15 (SIGTERM"), "{stderr}");
    let trace = last_trace(dir);
    let slow = func(&trace, "::slow_path");
    assert_eq!(trace.invocations.len(), 5, "the held set as of the last periodic write: {:?}", trace.stats);
    for invocation in &trace.invocations {
        assert!(invocation.duration_ns > 15_000_000 && calls(&invocation.root, slow), "{invocation:?}");
    }
    assert!(trace.stats.periodic && trace.stats.kept == 5, "counters of the last periodic write: {:?}", trace.stats);
}

/// `report` on the trace of a process still running, once a periodic `stats` line is in (every second): its
/// counters, said to be of a running process rather than of one that "did not exit normally".
fn still_running_report(dir: &Path, trace: &Path) {
    // The first periodic write comes a second after start, later on a loaded machine: ask until it is in (at most
    // 15 s), then check what the report says.
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(1_200));
    let report = loop {
        let mut cmd = util::calltime();
        cmd.arg("report").arg(trace).current_dir(dir);
        let out = cmd.output().expect("cargo-calltime runs");
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && report.contains("is still running") {
            break report;
        }
        if started.elapsed() > Duration::from_secs(15) {
            // The last try, as a check that prints its command and output when the report itself fails.
            break String::from_utf8(util::run(&mut cmd, true).stdout).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(report.contains(" seen, ") && report.contains("is still running: counters as of"), "{report}");
    assert!(!report.contains("did not exit normally"), "{report}");
}

//! Exact trees recorded from sync probes, each scenario in its own child process (settings are read once per
//! process). The probes are written exactly as cargo-calltime's rewrite inserts them.

mod common;

use calltime_rt::__private::{enter, enter_root, hold_writer, PlanInfo};
use common::{is_child, parse, read_trace, run_child, run_ok, Inv};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "plan-sync", table: "/tmp/sync.functions.json", functions: 16 };

// Function indices: 0 root, 1 a, 2 b, 3 early, 4 fallible, 5 step, 6 boom, 7 slow, 8 deep.
fn root() {
    let __calltime_guard = ::calltime_rt::__private::enter_root(
        0,
        &::calltime_rt::__private::PlanInfo { id: "plan-sync", table: "/tmp/sync.functions.json", functions: 16 },
    );
    a();
    a();
    b();
}

fn a() {
    let __calltime_guard = ::calltime_rt::__private::enter(1);
    b();
}

fn b() {
    let __calltime_guard = enter(2);
    black_box(());
}

#[test]
fn nested() {
    if is_child("nested") {
        a(); // outside any root: nothing
        root();
        root();
        b();
        return;
    }
    let trace = run_ok("nested", &[]);
    assert_eq!(trace.header[0], "calltime-trace 5");
    assert!(trace.header[1].starts_with("process "), "{:?}", trace.header);
    assert_eq!(trace.header[2], "plan plan-sync /tmp/sync.functions.json");
    assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]", "0[1[2] 1[2] 2]"]);
    let seqs: Vec<u64> = trace.invocations.iter().map(|i| i.seq).collect();
    assert_eq!(seqs, [0, 1]);
    for inv in &trace.invocations {
        assert_eq!(inv.kind, "thread");
        assert_eq!((inv.truncated, inv.filtered), (0, 0));
        inv.check_nesting();
    }
    assert!(trace.invocations[1].start >= trace.invocations[0].start + trace.invocations[0].duration);
    assert_eq!(trace.stats, Some([2, 2, 0, 0, 0]));
    assert!(trace.last_line.starts_with("stats "), "stats comes last at exit");

    // The clock used where there is no invariant TSC gives the same trees.
    let trace = run_ok("nested", &[("CALLTIME_CLOCK", "instant")]);
    assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]", "0[1[2] 1[2] 2]"]);
    for inv in &trace.invocations {
        inv.check_nesting();
        assert!(inv.duration > 0);
    }
}

fn recursive_root(n: u32) {
    let __calltime_guard = enter_root(0, &PLAN);
    if n > 0 {
        recursive_root(n - 1);
    } else {
        b();
    }
}

#[test]
fn recursive_root_nests() {
    if is_child("recursive_root_nests") {
        recursive_root(3);
        return;
    }
    let trace = run_ok("recursive_root_nests", &[]);
    assert_eq!(trace.shapes(), ["0[0[0[0[2]]]]"]);
    assert_eq!(trace.stats, Some([1, 1, 0, 0, 0]));
}

fn early(quit: bool) -> u32 {
    let __calltime_guard = enter(3);
    if quit {
        return 1;
    }
    b();
    2
}

#[derive(Debug)]
struct Failure;

fn step(fail: bool) -> Result<u32, Failure> {
    let __calltime_guard = enter(5);
    if fail {
        Err(Failure)
    } else {
        Ok(1)
    }
}

fn fallible(fail: bool) -> Result<u32, Failure> {
    let __calltime_guard = enter(4);
    let v = step(fail)?;
    b();
    Ok(v)
}

fn labelled(stop: bool) -> u32 {
    let __calltime_guard = enter(1);
    let v = 'block: {
        if stop {
            break 'block 1;
        }
        b();
        2
    };
    black_box(v)
}

#[test]
fn early_return_question_mark_and_break() {
    if is_child("early_return_question_mark_and_break") {
        let __calltime_guard = enter_root(0, &PLAN);
        black_box(early(true));
        black_box(early(false));
        black_box(fallible(true).is_err());
        black_box(fallible(false).is_ok());
        black_box(labelled(true));
        black_box(labelled(false));
        return;
    }
    let trace = run_ok("early_return_question_mark_and_break", &[]);
    assert_eq!(trace.shapes(), ["0[3 3[2] 4[5] 4[5 2] 1 1[2]]"]);
    trace.invocations[0].check_nesting();
}

fn boom() {
    let __calltime_guard = enter(6);
    b();
    panic!("boom");
}

fn root_that_panics() {
    let __calltime_guard = enter_root(0, &PLAN);
    a();
    boom();
}

#[test]
fn panicking_nodes_are_marked() {
    if is_child("panicking_nodes_are_marked") {
        {
            let __calltime_guard = enter_root(0, &PLAN);
            let caught = std::panic::catch_unwind(boom);
            assert!(caught.is_err());
            b();
        }
        // The root itself unwinds (on another thread, which dies of it): still completed and written.
        let joined = std::thread::spawn(root_that_panics).join();
        assert!(joined.is_err());
        return;
    }
    let trace = run_ok("panicking_nodes_are_marked", &[]);
    assert_eq!(trace.shapes(), ["0[6![2] 2]", "0![1[2] 6![2]]"]);
    assert_ne!(trace.invocations[0].id, trace.invocations[1].id, "two threads");
}

fn worker_root(calls: u32) {
    let __calltime_guard = enter_root(0, &PLAN);
    for _ in 0..calls {
        a();
        std::thread::yield_now();
    }
}

#[test]
fn threads_never_mix() {
    const THREADS: u32 = 4;
    const ROUNDS: u32 = 40;
    if is_child("threads_never_mix") {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS as usize));
        let handles: Vec<_> = (0..THREADS)
            .map(|k| {
                let barrier = barrier.clone();
                std::thread::Builder::new()
                    .name(format!("worker-{k}"))
                    .spawn(move || {
                        barrier.wait();
                        for _ in 0..ROUNDS {
                            worker_root(k + 1);
                        }
                    })
                    .unwrap()
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        return;
    }
    // A queue long enough for the burst: with the default (64) a writer that falls behind drops invocations.
    let trace = run_ok("threads_never_mix", &[("CALLTIME_QUEUE", "512")]);
    assert_eq!(trace.invocations.len() as u32, THREADS * ROUNDS);
    let mut per_thread = std::collections::BTreeMap::<u64, (String, u32)>::new();
    for inv in &trace.invocations {
        let k: u32 = inv.name.strip_prefix("worker-").expect("named worker thread").parse().unwrap();
        let expected = format!("0[{}]", vec!["1[2]"; k as usize + 1].join(" "));
        assert_eq!(inv.shape(), expected, "invocation {} on {}", inv.seq, inv.name);
        inv.check_nesting();
        let entry = per_thread.entry(inv.id).or_insert((inv.name.clone(), 0));
        assert_eq!(entry.0, inv.name, "one thread id, one name");
        entry.1 += 1;
    }
    assert_eq!(per_thread.len() as u32, THREADS);
    assert!(per_thread.values().all(|(_, n)| *n == ROUNDS));
    // Invocations of different threads overlapped in time (they ran at once).
    let mut overlapped = false;
    for x in &trace.invocations {
        for y in &trace.invocations {
            if x.id != y.id && x.start < y.start + y.duration && y.start < x.start + x.duration {
                overlapped = true;
            }
        }
    }
    assert!(overlapped, "the threads were meant to run roots at the same time");
    assert_eq!(trace.stats, Some([160, 160, 0, 0, 0]));
}

fn deep(n: u32) {
    let __calltime_guard = enter(8);
    if n > 0 {
        deep(n - 1);
    }
}

#[test]
fn node_cap_and_depth_limit_truncate() {
    if is_child("node_cap_and_depth_limit_truncate") {
        let cap: u32 = std::env::var("CALLTIME_NODE_CAP").unwrap().parse().unwrap();
        if cap == 5 {
            let __calltime_guard = enter_root(0, &PLAN);
            for _ in 0..10 {
                b();
            }
        } else {
            let __calltime_guard = enter_root(0, &PLAN);
            deep(4999); // 5000 frames under the root: 4095 fit under the 4096-frame stack.
        }
        return;
    }
    // Without folding, the cap keeps the first calls and counts the rest.
    let trace =
        run_ok("node_cap_and_depth_limit_truncate", &[("CALLTIME_NODE_CAP", "5"), ("CALLTIME_FOLD_AFTER", "0")]);
    assert_eq!(trace.shapes(), ["0[2 2 2 2]"]);
    assert_eq!((trace.invocations[0].node_count, trace.invocations[0].truncated), (5, 6));
    assert_eq!(trace.stats, Some([1, 1, 0, 0, 1]));
    // By default the invocation folds when it reaches the cap, and keeps counting every call.
    let trace = run_ok("node_cap_and_depth_limit_truncate", &[("CALLTIME_NODE_CAP", "5")]);
    assert_eq!(trace.shapes(), ["0*1[2*10]"]);
    assert_eq!(trace.stats, Some([1, 1, 0, 0, 0]));

    let trace = run_ok("node_cap_and_depth_limit_truncate", &[("CALLTIME_NODE_CAP", "100000")]);
    let inv = &trace.invocations[0];
    assert_eq!((inv.node_count, inv.truncated), (4096, 5000 - 4095));
    assert_eq!(inv.nodes.last().unwrap().depth, 4095);
}

fn slow() {
    let __calltime_guard = enter(7);
    b();
    std::thread::sleep(std::time::Duration::from_millis(3));
}

#[test]
fn min_duration_filters_subtrees() {
    if is_child("min_duration_filters_subtrees") {
        let __calltime_guard = enter_root(0, &PLAN);
        a();
        for _ in 0..3 {
            let clock = std::time::Instant::now();
            slow();
            println!("slow_ns={}", clock.elapsed().as_nanos());
        }
        return;
    }
    let (output, text) = run_child("min_duration_filters_subtrees", &[("CALLTIME_MIN_NS", "1000000")]);
    assert!(output.status.success());
    let trace = parse(&text);
    assert_eq!(trace.shapes(), ["0[7 7 7]"]);
    assert_eq!(trace.invocations[0].filtered, 5, "a, its b, and the b of each slow");
    // The calibrated clock agrees with Instant measured around the same calls: never longer than Instant by more
    // than 2%, and within 2% at least once (a preemption between the two clocks can only lengthen Instant's).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let instant: Vec<u64> =
        stdout.split("slow_ns=").skip(1).map(|s| s.split_whitespace().next().unwrap().parse().unwrap()).collect();
    let traced: Vec<u64> = trace.invocations[0].nodes[1..].iter().map(|n| n.duration).collect();
    assert_eq!(instant.len(), 3);
    for (t, i) in traced.iter().zip(&instant) {
        assert!(*t >= 3_000_000 && *t * 50 < *i * 51, "traced {traced:?} ns, Instant {instant:?} ns");
    }
    assert!(
        traced.iter().zip(&instant).any(|(t, i)| t.abs_diff(*i) * 50 < *i),
        "traced {traced:?} ns, Instant {instant:?} ns"
    );
}

#[test]
fn sampling_and_maximum() {
    if is_child("sampling_and_maximum") {
        for _ in 0..9 {
            recursive_root(2);
        }
        return;
    }
    let trace = run_ok("sampling_and_maximum", &[("CALLTIME_SAMPLE", "3")]);
    assert_eq!(trace.shapes(), ["0[0[0[2]]]"; 3]);
    assert_eq!(trace.stats, Some([9, 3, 6, 0, 0]), "recursion never starts a new invocation");

    let trace = run_ok("sampling_and_maximum", &[("CALLTIME_MAX_INVOCATIONS", "2")]);
    assert_eq!(trace.invocations.len(), 2);
    assert_eq!(trace.stats, Some([9, 2, 0, 7, 0]));
}

#[test]
fn full_queue_drops_instead_of_blocking() {
    if is_child("full_queue_drops_instead_of_blocking") {
        hold_writer(true);
        for _ in 0..10 {
            root();
        }
        let stats = calltime_rt::stats();
        assert_eq!(
            (stats.dropped, stats.dropped_queue_full, stats.dropped_limit, stats.dropped_no_buffer),
            (6, 6, 0, 0)
        );
        return;
    }
    // A 32-slot outbox: four 6-node invocations (7 slots each) fit.
    let trace = run_ok("full_queue_drops_instead_of_blocking", &[("CALLTIME_QUEUE", "4")]);
    assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]"; 4]);
    assert_eq!(trace.stats, Some([10, 4, 0, 6, 0]));
}

#[test]
fn process_exit_keeps_completed_trees() {
    if is_child("process_exit_keeps_completed_trees") {
        // The writer is held, so only the exit handler can write these.
        hold_writer(true);
        root();
        recursive_root(1);
        std::process::exit(7);
    }
    let (output, text) = run_child("process_exit_keeps_completed_trees", &[]);
    assert_eq!(output.status.code(), Some(7), "{}", String::from_utf8_lossy(&output.stderr));
    let trace = parse(&text);
    assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]", "0[0[2]]"]);
    assert_eq!(trace.stats, Some([2, 2, 0, 0, 0]));
    assert!(trace.last_line.starts_with("stats "));
}

#[test]
fn flush_writes_without_waiting_for_exit() {
    if is_child("flush_writes_without_waiting_for_exit") {
        hold_writer(true);
        root();
        calltime_rt::flush();
        let path = calltime_rt::trace_path().unwrap();
        let text = read_trace(path);
        let trace = parse(&text);
        assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]"]);
        assert_eq!(trace.stats, Some([1, 1, 0, 0, 0]));
        calltime_rt::flush(); // nothing new: no second identical stats line
        root();
        return;
    }
    let trace = run_ok("flush_writes_without_waiting_for_exit", &[]);
    assert_eq!(trace.invocations.len(), 2);
    assert_eq!(trace.stats_lines, 2, "one from the first flush, one at exit");
    assert_eq!(trace.stats, Some([2, 2, 0, 0, 0]));
}

#[test]
fn trace_cut_off_keeps_complete_records() {
    if is_child("trace_cut_off_keeps_complete_records") {
        for _ in 0..3 {
            root();
        }
        return;
    }
    let (output, text) = run_child("trace_cut_off_keeps_complete_records", &[]);
    assert!(output.status.success());
    let full = parse(&text);
    assert_eq!(full.invocations.len(), 3);
    let third = text.find("inv 2 ").unwrap();
    // The third record ends before the exit's aggregate and stats records.
    let stats = third + text[third..].find("end 2\n").unwrap() + "end 2\n".len();
    let third_line_end = third + text[third..].find('\n').unwrap();
    // Every cut inside the third record (including mid-line) keeps exactly the first two.
    for cut in third + 1..stats {
        let trace = parse(&text[..cut]);
        assert_eq!(trace.invocations.len(), 2, "cut at byte {cut}");
        assert_eq!(trace.invocations, full.invocations[..2]);
        // Once the `inv` line is whole, the torn record is counted as cut off.
        if cut > third_line_end {
            assert_eq!(trace.incomplete, 1, "cut at byte {cut}");
        }
    }
    let trace = parse(&text[..stats]);
    assert_eq!((trace.invocations.len(), trace.incomplete), (3, 0));
}

#[test]
fn default_path_is_per_process_in_current_dir() {
    if is_child("default_path_is_per_process_in_current_dir") {
        std::env::remove_var("CALLTIME_OUT");
        let dir = std::env::temp_dir().join(format!("calltime-rt-default-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_current_dir(&dir).unwrap();
        root();
        calltime_rt::flush();
        let expected = dir.join(format!("calltime-{}.trace", std::process::id()));
        assert_eq!(calltime_rt::trace_path().unwrap(), expected);
        let trace = parse(&read_trace(&expected));
        assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]"]);
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    run_ok("default_path_is_per_process_in_current_dir", &[]);
}

#[test]
fn writer_appends_each_tree_as_it_completes() {
    if is_child("writer_appends_each_tree_as_it_completes") {
        root();
        let path = std::env::var("CALLTIME_OUT").unwrap();
        // No flush, no exit handler: the writer thread alone must put the tree on disk, promptly.
        let waited = std::time::Instant::now();
        while !read_trace(&path).contains("end 0\n") {
            assert!(waited.elapsed() < std::time::Duration::from_secs(5), "the writer did not write the tree");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        println!("written after {} us", waited.elapsed().as_micros());
        // A crash: no panic hook, no exit handler, no destructors.
        std::process::abort();
    }
    let (output, text) = run_child("writer_appends_each_tree_as_it_completes", &[]);
    assert!(!output.status.success(), "the child aborts");
    assert!(String::from_utf8_lossy(&output.stdout).contains("written after"));
    let trace = parse(&text);
    assert_eq!(trace.shapes(), ["0[1[2] 1[2] 2]"]);
    assert_eq!(trace.stats, None, "nothing ran after the crash");
}

/// Small invocations wait in their thread's outbox until the writer drains it: with the writer held, the exit
/// handler must still find those of a thread that ended and of one still running, in each thread's order, big
/// invocations (handed over in their buffer) included.
#[test]
fn exit_writes_every_threads_outbox() {
    if is_child("exit_writes_every_threads_outbox") {
        hold_writer(true);
        let named = |name: &str| std::thread::Builder::new().name(name.into());
        named("ended")
            .spawn(|| {
                root();
                recursive_root(9); // 11 nodes: more than this outbox copies (8)
                root();
            })
            .unwrap()
            .join()
            .unwrap();
        let (started, wait) = std::sync::mpsc::channel();
        let _running = named("running").spawn(move || {
            recursive_root(1);
            root();
            started.send(()).unwrap();
            std::thread::park();
        });
        wait.recv().unwrap();
        root();
        std::process::exit(3);
    }
    let (output, text) = run_child("exit_writes_every_threads_outbox", &[("CALLTIME_QUEUE", "4")]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let trace = parse(&text);
    let shapes_of = |name: &str| -> Vec<String> {
        trace.invocations.iter().filter(|inv| inv.name == name).map(Inv::shape).collect()
    };
    let root_shape = "0[1[2] 1[2] 2]";
    let deep = format!("{}2{}", "0[".repeat(10), "]".repeat(10));
    assert_eq!(shapes_of("ended"), [root_shape.to_owned(), deep, root_shape.to_owned()]);
    assert_eq!(shapes_of("running"), ["0[0[2]]", root_shape]);
    // The test harness runs the child scenario on a thread named after the test.
    assert_eq!(shapes_of("exit_writes_every_threads_outbox"), [root_shape]);
    assert_eq!(trace.stats, Some([6, 6, 0, 0, 0]));
}

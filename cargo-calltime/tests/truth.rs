//! True times (trace format 3): compensation for probe cost with exact numbers on small per-call and folded trees,
//! the unbiased folded estimates, generated adversarial folded trees (children never add up to more than their
//! parent after compensation and clamping), retired functions in the views, and `--raw-times`. Every trace is made
//! with the trace builder, as the runtime would write it.

mod util;

use cargo_calltime::trace::compensate::compensated;
use cargo_calltime::trace::{
    parse, Calibration, FunctionInfo, FunctionTable, Invocation, Node, Quiet, RetiredCalls, Retirement, Stats,
    ThreadKind, ThreadRef, Times, Trace, TraceBuilder,
};
use cargo_calltime::views::{render, ViewOptions};
use util::{check, data};

const CALIBRATION: Calibration = Calibration {
    recorded_inner: 5_000,
    recorded_outer: 12_000,
    folded_outer: 2_000,
    timed_inner: 9_000,
    timed_outer: 15_000,
    retired_outer: 1_500,
    quiet_outer: None,
    quiet_inline: None,
};

fn header(calibration: Option<Calibration>) -> Trace {
    let retire = [("retire", 1), ("retire_factor", 20), ("retire_min_calls", 1000)];
    let settings = util::RUNTIME_SETTINGS.into_iter().chain(retire);
    Trace {
        version: 3,
        pid: 4242,
        epoch_unix_ns: 1_795_382_232_762_346_307,
        exe: "/ws/tok/target/calltime/debug/tok".into(),
        plan_id: Some("7c1e9a30".into()),
        table_hint: Some("/ws/tok/target/calltime/7c1e9a30.functions.json".into()),
        settings: settings.map(|(k, v)| (k.to_owned(), v)).collect(),
        calibration,
        ..Trace::default()
    }
}

fn table() -> FunctionTable {
    let names = ["tok::run", "tok::tokenize", "tok::next_token", "tok::helper", "tok::busy_loop"];
    let functions = names
        .iter()
        .enumerate()
        .map(|(i, path)| FunctionInfo {
            index: i as u32,
            path: (*path).into(),
            display: path.trim_start_matches("tok::").into(),
            file: "src/lib.rs".into(),
            line: 10 * (i as u32 + 1),
            root: i == 0,
        })
        .collect();
    FunctionTable {
        version: 1,
        plan_id: "7c1e9a30".into(),
        roots: vec!["tok::run".into()],
        depth: 4,
        filter: None,
        functions,
        builders: Vec::new(),
    }
}

fn main_thread() -> ThreadRef {
    ThreadRef { kind: ThreadKind::Thread, id: 1, name: "main".into() }
}

fn call(func: u32, start: u64, duration: u64, children: Vec<Node>) -> Node {
    Node::call(func, start, duration, false, children)
}

/// A call path of a folded invocation: `calls` calls, `timed` timed taking `timed_ns`, of which `exact` taking
/// `exact_ns` before the fold.
fn path(
    func: u32,
    (calls, timed, timed_ns): (u64, u64, u64),
    (exact, exact_ns): (u64, u64),
    children: Vec<Node>,
) -> Node {
    let (min, max) = match timed {
        0 => (0, 0),
        1 => (timed_ns, timed_ns),
        _ => (timed_ns / timed / 2, timed_ns / timed * 3),
    };
    Node::path(func, 0, calls, timed, timed_ns, (min, max), children).with_exact(exact, exact_ns)
}

/// Reads `text` back with the test table, as `Trace::load` would.
fn read(text: &str) -> Trace {
    let mut trace = parse(text).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    trace.table = table();
    trace
}

fn text_view(trace: &Trace, opts: &ViewOptions) -> String {
    String::from_utf8(render(trace, opts).unwrap_or_else(|e| panic!("{e:#}")).bytes).unwrap()
}

/// A tokenizer run: one small invocation recorded per call, during which `helper` is seen to be too fast and
/// retires; then a big folded one, where `helper`'s later calls are only counted (`r`).
fn tokenizer_trace(calibration: Option<Calibration>) -> String {
    let mut builder = TraceBuilder::new(&header(calibration));
    let helpers = |at: u64| vec![call(3, at + 100, 120, vec![]), call(3, at + 400, 110, vec![])];
    let tokens = (0..3).map(|i| call(2, 1_500 + 3_000 * i, 2_000, helpers(1_500 + 3_000 * i))).collect();
    let root = call(0, 1_000, 50_000, vec![call(1, 1_200, 30_000, tokens), call(4, 32_000, 10_000, vec![])]);
    builder.invocation(&Invocation::new(0, main_thread(), root));
    builder.retire(&Retirement { func: 3, at_ns: 60_000, calls: 4_096, mean_ns: 3 });
    // next_token: 4_000 calls at 110ns before the fold, then 300 of 14_000 sampled at 100ns; helper's 4_096 calls
    // before it retired, at 15ns.
    let helper = path(3, (4_096, 4_096, 61_440), (4_096, 61_440), vec![]);
    let next_token = path(2, (18_000, 4_300, 470_000), (4_000, 440_000), vec![helper]);
    let tokenize = path(1, (1, 1, 2_500_000), (1, 2_500_000), vec![next_token]);
    let busy = path(4, (1, 1, 200_000), (1, 200_000), vec![]);
    let root = Node { start_ns: 100_000, ..path(0, (1, 1, 2_800_000), (1, 2_800_000), vec![tokenize, busy]) };
    let mut inv = Invocation { folded: true, ..Invocation::new(1, main_thread(), root) };
    inv.retired.push(RetiredCalls::counted(3, 95_012));
    builder.invocation(&inv);
    builder.stats(&Stats { seen: 2, kept: 2, retired_functions: 1, ..Stats::default() });
    builder.into_text()
}

#[test]
fn tokenizer_views_match_expected_files() {
    let text = tokenizer_trace(Some(CALIBRATION));
    check(&data("truth/tokenizer.trace"), &text);
    let trace = read(&text);
    let expect = |name: &str| data(&format!("truth/expected/{name}"));
    check(&expect("tokenizer.txt"), &text_view(&trace, &ViewOptions::default()));
    let raw = ViewOptions { raw_times: true, ..ViewOptions::default() };
    check(&expect("tokenizer.raw-times.txt"), &text_view(&trace, &raw));
    let json = ViewOptions { format: cargo_calltime::views::ViewFormat::Json, ..ViewOptions::default() };
    check(&expect("tokenizer.json"), &text_view(&trace, &json));
    let folded = ViewOptions { format: cargo_calltime::views::ViewFormat::Folded, ..ViewOptions::default() };
    check(&expect("tokenizer.folded"), &text_view(&trace, &folded));
    // `cargo calltime report --raw-times`, as a user runs it, on the saved trace and its function table.
    let table_json = serde_json::to_string_pretty(&table()).unwrap();
    check(&data("truth/tokenizer.trace.functions.json"), &table_json);
    let out = util::run(util::calltime().arg("report").arg(data("truth/tokenizer.trace")).arg("--raw-times"), true);
    check(&expect("tokenizer.raw-times.txt"), &String::from_utf8(out.stdout).unwrap());
    let out = util::run(util::calltime().arg("report").arg(data("truth/tokenizer.trace")), true);
    check(&expect("tokenizer.txt"), &String::from_utf8(out.stdout).unwrap());
    // Without a calibration line (a runtime that could not calibrate) the same trace is shown raw, and says so.
    let uncalibrated = read(&tokenizer_trace(None));
    let shown = text_view(&uncalibrated, &ViewOptions::default());
    assert!(shown.contains("raw times: the probes' own cost is included (the trace has no probe calibration)"));
    assert!(shown.contains("retired: helper 95,012 calls (not timed; retired after 4,096 calls at 3ns/call)"));
}

/// A run where `helper` retires in the first invocation, is counted in the second and then goes quiet: the third's
/// calls of it are estimated (the calls per `tokenize` call of the first two, times its one call), marked in the
/// views, and compensated at `quiet_outer` (0.3ns) each, from `tokenize` (its caller) and the root; at
/// `quiet_inline` (0.7ns: the quiet probe inlined into a loop) when the calibration has it.
#[test]
fn quiet_retired_calls_are_estimated_marked_and_compensated() {
    for (quiet_inline, quiet_cost_ns) in [(None, 14_252), (Some(700), 33_255)] {
        let calibration = Calibration { quiet_outer: Some(300), quiet_inline, ..CALIBRATION };
        let mut builder = TraceBuilder::new(&header(Some(calibration)));
        let helpers = vec![call(3, 1_300, 120, vec![]), call(3, 1_600, 110, vec![])];
        let first = call(0, 1_000, 5_000, vec![call(1, 1_200, 3_000, helpers)]);
        builder.invocation(&Invocation::new(0, main_thread(), first));
        builder.retire(&Retirement { func: 3, at_ns: 7_000, calls: 2, mean_ns: 3 });
        let one_tokenize = |seq: u64, at: u64| {
            Invocation::new(seq, main_thread(), call(0, at, 500_000, vec![call(1, at + 100, 400_000, vec![])]))
        };
        let mut counted = one_tokenize(1, 10_000);
        counted.retired.push(RetiredCalls::counted(3, 95_012));
        builder.invocation(&counted);
        builder.quiet(&Quiet { func: 3, at_ns: 600_000, calls: 0, caller_calls: 0, by: None });
        builder.invocation(&one_tokenize(2, 1_000_000));
        let mut trace = read(builder.text());
        assert_eq!(trace.calibration.and_then(|c| c.quiet_inline), quiet_inline, "read back");
        cargo_calltime::trace::quiet::estimate_quiet_calls(&mut trace);
        // (2 + 95,012) calls over 2 calls of tokenize: 47,507 per call.
        let estimated = RetiredCalls::estimated(3, 47_507, 0);
        assert_eq!(trace.invocations[2].retired, [estimated]);
        if quiet_inline.is_none() {
            check(&data("truth/expected/quiet.txt"), &text_view(&trace, &ViewOptions::default()));
            let json = ViewOptions { format: cargo_calltime::views::ViewFormat::Json, ..ViewOptions::default() };
            let json = text_view(&trace, &json);
            assert!(json.contains("\"estimated\": true") && json.contains("\"quiet_at_ns\": 600000"), "{json}");
        }
        let shown = compensated(trace);
        let root = &shown.invocations[2].root;
        // 47,507 quiet calls at 0.3ns (14,252ns) or 0.7ns (33,255ns), from tokenize and from the root.
        assert_eq!(root.children[0].duration_ns, 400_000 - 5 - quiet_cost_ns);
        assert_eq!(root.duration_ns, 500_000 - 5 - 12 - quiet_cost_ns);
    }
}

/// Per-call tree, by hand: ri = 5ns, ro = 12ns. A node loses ri and ro per descendant node; the root also loses
/// 1.5ns per retired call.
#[test]
fn per_call_compensation_has_exact_numbers() {
    let a = call(1, 10, 1_000, vec![call(2, 20, 100, vec![]), call(2, 200, 200, vec![])]);
    let root = call(0, 0, 10_000, vec![a, call(3, 2_000, 500, vec![])]);
    let mut inv = Invocation::new(0, main_thread(), root);
    inv.retired.push(RetiredCalls::counted(4, 100));
    let mut builder = TraceBuilder::new(&header(Some(CALIBRATION)));
    builder.invocation(&inv);
    let raw = read(builder.text());
    let trace = compensated(raw.clone());
    assert_eq!((raw.times, trace.times), (Times::Raw, Times::Compensated));
    let root = &trace.invocations[0].root;
    let a = &root.children[0];
    assert_eq!((a.children[0].duration_ns, a.children[1].duration_ns), (100 - 5, 200 - 5));
    assert_eq!(a.duration_ns, 1_000 - 5 - 2 * 12);
    assert_eq!(root.children[1].duration_ns, 500 - 5);
    // 4 descendants, and 100 retired calls at 1.5ns.
    assert_eq!(root.duration_ns, 10_000 - 5 - 4 * 12 - 150);
    assert_eq!(trace.invocations[0].duration_ns, root.duration_ns);
    // A parent's self time loses ri and (ro - ri) per child: it does not grow with the number of children.
    assert_eq!(a.self_ns(), raw.invocations[0].root.children[0].self_ns() - 5 - 2 * (12 - 5));
    // min and max of a single call follow its duration.
    assert_eq!((a.min_ns, a.max_ns), (a.duration_ns, a.duration_ns));
    // Compensating twice changes nothing; a trace without calibration is left raw.
    assert_eq!(compensated(trace.clone()).invocations, trace.invocations);
    let v2 = Trace { calibration: None, ..raw.clone() };
    assert_eq!(compensated(v2.clone()).invocations, v2.invocations);
}

/// Folded tree, by hand (ps): ri 5000, ro 12000, fo 2000, ti 9000, to 15000.
#[test]
fn folded_compensation_has_exact_numbers() {
    // q: 20_000 calls, 300 sampled (10ns each), none exact: estimate 200_000ns.
    let q = path(2, (20_000, 300, 3_000), (0, 0), vec![]);
    // p: 10_000 calls, 4_096 exact (80_000ns) + 104 sampled (10_000ns): 80_000 + 5_904 x 10_000 / 104.
    let p = path(1, (10_000, 4_200, 90_000), (4_096, 80_000), vec![q]);
    let root = path(0, (1, 1, 1_000_000), (1, 1_000_000), vec![p]);
    let inv = Invocation { folded: true, ..Invocation::new(0, main_thread(), root) };
    let mut builder = TraceBuilder::new(&header(Some(CALIBRATION)));
    builder.invocation(&inv);
    let raw = read(builder.text());
    let (raw_p, raw_q) = (&raw.invocations[0].root.children[0], &raw.invocations[0].root.children[0].children[0]);
    assert_eq!((raw_p.duration_ns, raw_q.duration_ns), (80_000 + 567_692, 200_000));
    let trace = compensated(raw.clone());
    let root = &trace.invocations[0].root;
    let (p, q) = (&root.children[0], &root.children[0].children[0]);
    // q: every call's inner cost at ti (none exact): 20_000 x 9ns = 180_000ns.
    assert_eq!(q.duration_ns, 200_000 - 180_000);
    // q's calls cost p: 300 sampled x 15ns + 19_700 untimed x 2ns = 43_900ns.
    // p's own: 4_096 exact x 5ns + 5_904 others x 9ns = 73_616ns.
    assert_eq!(p.duration_ns, 647_692 - 73_616 - 43_900);
    // p's calls cost the root: 4_096 x 12ns + 104 x 15ns + 5_800 x 2ns = 62_312ns; plus q's 43_900ns.
    assert_eq!(root.duration_ns, 1_000_000 - 5 - 62_312 - 43_900);
    // min and max of sampled calls lose the timed calls' mean inner cost and the per-call descendants' cost.
    assert!(q.min_ns <= raw_q.min_ns && q.max_ns <= raw_q.max_ns);
}

#[test]
fn unbiased_estimates_cover_every_case() {
    use cargo_calltime::trace::{estimated_total, unbiased_total};
    // Exact part as measured, the rest at the sampled mean: 1_000 + 90 x (500 / 5).
    assert_eq!(unbiased_total(100, 15, 1_500, 10, 1_000), 1_000 + 9_000);
    // Only exact calls timed: scaled to every call, and an estimate (some calls were not timed).
    assert_eq!(unbiased_total(100, 10, 1_000, 10, 1_000), 10_000);
    assert!(path(1, (100, 10, 1_000), (10, 1_000), vec![]).is_estimated());
    // Nothing timed: 0.
    assert_eq!(unbiased_total(100, 0, 0, 0, 0), 0);
    // Every call exact: the total, not an estimate.
    let all = path(1, (50, 50, 5_000), (50, 5_000), vec![]);
    assert_eq!((all.duration_ns, all.is_estimated()), (5_000, false));
    // No exact part (version 2): the old scaling.
    assert_eq!(unbiased_total(10, 3, 1_000, 0, 0), estimated_total(1_000, 3, 10));
    // Recursion: the exact first calls are the biggest subtrees; the samples alone estimate the later ones.
    // The old formula would give 10_000 x (1_000_000 + 64 x 10) / 80 = 125_080_000.
    assert_eq!(unbiased_total(10_000, 80, 1_000_000 + 64 * 10, 16, 1_000_000), 1_000_000 + 9_984 * 10);
}

/// xorshift64*: a small seeded generator, so every failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Mostly small numbers, sometimes huge ones: extreme timings.
    fn extreme(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => self.below(10),
            2 => self.below(1_000),
            3 => self.below(1_000_000),
            4 => self.below(1 << 40),
            _ => self.below(1 << 52),
        }
    }
}

fn random_path(rng: &mut Rng, depth: u32) -> Node {
    let calls = 1 + rng.extreme().min(1 << 40);
    let timed = rng.below(calls + 1);
    let exact = if rng.below(3) == 0 { timed } else { rng.below(timed + 1) };
    let timed_ns = rng.extreme();
    let exact_ns = if timed == exact { timed_ns } else { rng.below(timed_ns + 1) };
    let fanout = if depth >= 5 { 0 } else { rng.below(5) };
    let children = (0..fanout).map(|_| random_path(rng, depth + 1)).collect();
    let (min, max) = (rng.extreme(), rng.extreme());
    Node::path(rng.below(5) as u32, 0, calls, timed, timed_ns, (min.min(max), max), children)
        .with_exact(exact, exact_ns)
}

/// Calls one after another, as sync calls are (each child starts where the one before it ended), with extreme
/// durations that may run past their parent's end.
fn random_calls(rng: &mut Rng, depth: u32, start: u64) -> Node {
    let fanout = if depth >= 5 { 0 } else { rng.below(4) };
    let mut at = start;
    let children = (0..fanout)
        .map(|_| {
            let child = random_calls(rng, depth + 1, at);
            at = at.saturating_add(child.duration_ns);
            child
        })
        .collect();
    call(rng.below(5) as u32, start, rng.extreme(), children)
}

/// Children never cover more than their node, after compensation and clamping, at every level; no time grew.
/// (Children of one call that overlap, as concurrent futures do, may add up to more: only their union must fit.)
fn assert_consistent(node: &Node, raw: &Node, seed: u64) {
    let children = u128::from(node.children_busy_ns());
    assert!(children <= u128::from(node.duration_ns), "seed {seed}: children {children} > node {}", node.duration_ns);
    assert_eq!(node.self_ns() as u128, u128::from(node.duration_ns) - children, "seed {seed}");
    assert!(node.duration_ns <= raw.duration_ns, "seed {seed}: compensation made a node longer");
    for (child, raw_child) in node.children.iter().zip(&raw.children) {
        assert_consistent(child, raw_child, seed);
    }
}

#[test]
fn generated_adversarial_trees_never_have_children_over_their_parent() {
    for seed in 1..=400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let calibration = Calibration {
            recorded_inner: rng.extreme(),
            recorded_outer: rng.extreme(),
            folded_outer: rng.extreme(),
            timed_inner: rng.extreme(),
            timed_outer: rng.extreme(),
            retired_outer: rng.extreme(),
            quiet_outer: (rng.below(2) == 0).then(|| rng.extreme()),
            quiet_inline: (rng.below(2) == 0).then(|| rng.extreme()),
        };
        let mut builder = TraceBuilder::new(&header(Some(calibration)));
        for seq in 0..3 {
            let folded = rng.below(4) != 0;
            let root = if folded { random_path(&mut rng, 0) } else { random_calls(&mut rng, 0, 0) };
            let mut inv = Invocation { folded, ..Invocation::new(seq, main_thread(), root) };
            if rng.below(2) == 0 {
                inv.retired.push(RetiredCalls::counted(3, rng.extreme()));
            }
            builder.invocation(&inv);
        }
        let raw = read(builder.text());
        let trace = compensated(raw.clone());
        for (inv, raw_inv) in trace.invocations.iter().zip(&raw.invocations) {
            assert_consistent(&inv.root, &raw_inv.root, seed);
            assert!(inv.duration_ns <= raw_inv.duration_ns, "seed {seed}");
        }
        // Every view renders it; the text view never shows a child over 100% of the root.
        let text = text_view(&trace, &ViewOptions { top: 3, ..ViewOptions::default() });
        for line in text.lines() {
            for word in line.split_whitespace().filter(|w| w.ends_with('%')) {
                let value: f64 = word.trim_end_matches('%').parse().unwrap_or(0.0);
                assert!(value <= 100.0, "seed {seed}: {line}");
            }
        }
    }
}

/// docs/json.md names every field of a version 3 trace's JSON (calibration, retirements, retired calls).
#[test]
fn json_fields_of_true_times_are_documented() {
    let trace = read(&tokenizer_trace(Some(CALIBRATION)));
    let json = ViewOptions { format: cargo_calltime::views::ViewFormat::Json, ..ViewOptions::default() };
    let doc: serde_json::Value = serde_json::from_str(&text_view(&trace, &json)).unwrap();
    assert_eq!(
        (doc["compensated"].as_bool(), doc["calibration"]["recorded_outer_ps"].as_u64()),
        (Some(true), Some(12_000))
    );
    assert_eq!(doc["invocations"][1]["retired"][0]["calls"], 95_012);
    assert_eq!(doc["retired"][0]["path"], "tok::helper");
    let docs = std::fs::read_to_string(util::repo_root().join("docs/json.md")).unwrap();
    let mut keys = std::collections::BTreeSet::new();
    util::collect_keys(&doc, &mut keys);
    for key in keys {
        assert!(docs.contains(&format!("`{key}`")), "docs/json.md does not describe `{key}`");
    }
}

/// A run of 12 invocations calling `helper` `per_invocation` times each (under `next_token`), which retires after
/// invocation `retire_after`: later invocations only count its calls (`r` lines).
fn retiring_run(dir: &std::path::Path, name: &str, per_invocation: u64, retire_after: u64) -> std::path::PathBuf {
    let mut builder = TraceBuilder::new(&header(Some(CALIBRATION)));
    for seq in 0..12u64 {
        let start = seq * 100_000;
        let retired = seq > retire_after;
        let helpers = if retired {
            Vec::new()
        } else {
            (0..per_invocation).map(|i| call(3, start + 20 + i * 30, 20, vec![])).collect()
        };
        let root = call(0, start, 50_000 + seq % 3 * 100, vec![call(2, start + 10, 20_000, helpers)]);
        let mut inv = Invocation::new(seq, main_thread(), root);
        if retired {
            inv.retired.push(RetiredCalls::counted(3, per_invocation));
        }
        if seq == retire_after {
            builder.invocation(&inv).retire(&Retirement { func: 3, at_ns: start + 60_000, calls: 1_000, mean_ns: 2 });
        } else {
            builder.invocation(&inv);
        }
    }
    builder.stats(&Stats { seen: 12, kept: 12, retired_functions: 1, ..Stats::default() });
    let path = dir.join(format!("{name}.trace"));
    std::fs::write(&path, builder.text()).unwrap();
    std::fs::write(dir.join(format!("{name}.trace.functions.json")), serde_json::to_string(&table()).unwrap()).unwrap();
    path
}

/// A function that retired at different times has different calls per call path in each run: only its total
/// calls compare, and a change that is only retirement timing is never reported.
#[test]
fn diff_compares_all_calls_of_retired_functions() {
    use cargo_calltime::diff::{calls_text, compare, stats::Bootstrap, Settings, Side, ALPHA};
    let dir = tempfile::tempdir().unwrap();
    let settings =
        Settings { threshold_pct: 10.0, alpha: ALPHA, fail_above_pct: None, bootstrap: Bootstrap::default() };
    let base = Side::load(&retiring_run(dir.path(), "base", 4, 2), "base").unwrap();
    let later = Side::load(&retiring_run(dir.path(), "later", 4, 7), "head").unwrap();
    let report = compare(&base, &later, &settings);
    let helper = report.paths.iter().find(|p| p.path.last().map(String::as_str) == Some("tok::helper")).unwrap();
    assert!(helper.calls.retired && !helper.calls.changed, "{helper:?}");
    assert_eq!((helper.calls.base, helper.calls.head), (4.0, 4.0));
    assert_eq!(calls_text(helper), "4 (all, retired)");
    assert_eq!(report.summary.calls_changed, 0);
    // A real change in how often it is called still shows, as all its calls.
    let more = Side::load(&retiring_run(dir.path(), "more", 5, 2), "head").unwrap();
    let report = compare(&base, &more, &settings);
    let helper = report.paths.iter().find(|p| p.path.last().map(String::as_str) == Some("tok::helper")).unwrap();
    assert!(helper.calls.retired && helper.calls.changed, "{helper:?}");
    assert_eq!(calls_text(helper), "4 -> 5 (all, retired)");
}

/// What real crates showed wrong in the views (docs/trial-crates.md), on a trace of their shape
/// (tests/data/truth/trial.trace): a folded `from_str` with one timed call of five, inside the chain that pays for
/// a million retired `with_span` calls, keeps its mean between its min and max; the retired calls of a recursive
/// `visit_nested_tables` go to its nested call path (`~`), none to the one under `fmt` (whose 5 calls made 2,
/// all recorded: its rate), and under its caller `fmt` in the next
/// invocation, which recorded none of its calls (exact); `with_span`, whose caller is not in that invocation,
/// stays only in the `retired:` line and says so; the table counts every call; two `Value::from` impls are
/// named apart in the tree, the table and the retirement note.
#[test]
fn real_crate_shapes_count_every_call_and_keep_means_within_extremes() {
    let path = data("truth/trial.trace");
    let trace = Trace::load(&path, None).unwrap();
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    let expect = |name: &str| data(&format!("truth/expected/{name}"));
    check(&expect("trial.txt"), &text_view(&trace, &ViewOptions::default()));
    let table = ViewOptions { format: cargo_calltime::views::ViewFormat::Table, ..ViewOptions::default() };
    check(&expect("trial.table.txt"), &text_view(&trace, &table));
    let json = ViewOptions { format: cargo_calltime::views::ViewFormat::Json, ..ViewOptions::default() };
    check(&expect("trial.json"), &text_view(&trace, &json));
    // The HTML report counts them too: the retired calls placed under `fmt` in the second invocation, and every
    // call of `with_span` in its table row.
    let html = ViewOptions { format: cargo_calltime::views::ViewFormat::Html, ..ViewOptions::default() };
    let page = text_view(&trace, &html);
    assert!(page.contains("encode::visit_nested_tables</span>") && page.contains("×12</span>"), "{page}");
    assert!(page.contains("data-v=\"1001700\""), "with_span's row counts every call:\n{page}");
    // The flamegraph's tooltips too: the time of retired calls is in their callers' frames, their count in theirs.
    let svg = ViewOptions { format: cargo_calltime::views::ViewFormat::Svg, ..ViewOptions::default() };
    let svg = text_view(&trace, &svg);
    assert!(svg.contains("encode::visit_nested_tables (12.0µs, 0.33%, ~58 calls, ~52 after it retired)"), "{svg}");
    assert!(svg.contains("from (45.0µs, 1.22%, 4,000 calls, 3,000 after it retired)"), "{svg}");
    // And the run store: calls per call path and per invocation do not drop because a function retired.
    let record = cargo_calltime::store::RunRecord::from_trace(&trace);
    let with_span = record.path_stats.iter().find(|p| p.path.ends_with("RawString::with_span")).unwrap();
    assert_eq!(with_span.calls, 1_001_700);
    let out = util::run(util::calltime().arg("report").arg(&path), true);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("<app::Value as core::convert::From<u64>>::from (4,000 calls"),
        "the note must tell the From impls apart:\n{stderr}"
    );
    // Every node, compensated, has min <= mean <= max.
    fn within(node: &Node) {
        if node.timed_calls > 0 {
            let mean = (node.duration_ns + node.calls / 2) / node.calls;
            assert!(node.min_ns <= mean && mean <= node.max_ns, "{node:?}");
        }
        node.children.iter().for_each(within);
    }
    compensated(trace).invocations.iter().for_each(|inv| within(&inv.root));
}

/// A recursive cluster that retired with the root (calltime-rt/src/retire/cluster.rs): `run` calls `tokenize`,
/// which calls `next_token`, which calls `run` again. The first invocation is recorded in full; after the cluster
/// retired (each member with a `retire` record), the second has only the root's node and exact `r` counts,
/// including the root's nested calls: the views place those under their callers, never on the root node, whose
/// count stays 1.
#[test]
fn a_retired_recursive_cluster_keeps_the_root_node_and_exact_counts() {
    let mut builder = TraceBuilder::new(&header(Some(CALIBRATION)));
    let nested = call(0, 1_400, 600, vec![call(1, 1_450, 500, vec![call(3, 1_500, 100, vec![])])]);
    let first = call(0, 1_000, 5_000, vec![call(1, 1_100, 4_000, vec![call(2, 1_300, 1_000, vec![nested])])]);
    builder.invocation(&Invocation::new(0, main_thread(), first));
    builder.retire(&Retirement { func: 3, at_ns: 7_000, calls: 1_000, mean_ns: 3 });
    for func in [0, 1, 2] {
        builder.retire(&Retirement { func, at_ns: 8_000, calls: 1_200, mean_ns: 90 });
    }
    let mut second = Invocation::new(1, main_thread(), call(0, 10_000, 4_000, vec![]));
    for (func, calls) in [(0, 1), (1, 2), (2, 1), (3, 1)] {
        second.retired.push(RetiredCalls::counted(func, calls));
    }
    builder.invocation(&second);
    let trace = read(builder.text());
    assert_eq!(trace.invocations[1].retired.len(), 4);
    let single = ViewOptions { invocation: Some(2), ..ViewOptions::default() };
    check(&data("truth/expected/cluster.txt"), &text_view(&trace, &single));
}

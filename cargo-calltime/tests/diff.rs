//! `cargo calltime diff`: synthetic runs written in the trace format (Contract 3) with seeded jitter, compared by
//! the real binary.

mod util;

use std::path::{Path, PathBuf};
use std::process::Output;

use cargo_calltime::trace::{
    FunctionInfo, FunctionTable, Invocation, Node, Stats, ThreadKind, ThreadRef, Trace, TraceBuilder,
};

/// A call in a synthetic tree: function index, self time (ns) and the calls it makes.
#[derive(Clone)]
struct Call {
    func: u32,
    self_ns: u64,
    children: Vec<Call>,
    /// The call returned an `Err` / was cancelled.
    err: bool,
    cancelled: bool,
}

fn call(func: u32, self_ns: u64, children: Vec<Call>) -> Call {
    Call { func, self_ns, children, err: false, cancelled: false }
}

/// SplitMix64: the same seed gives the same trace on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How one recorded run varies.
struct Noise {
    seed: u64,
    /// Each node's self time is scaled by a factor uniform in [1 - jitter, 1 + jitter].
    jitter: f64,
    /// Fraction of invocations hit by a 3x spike (a context switch, a page fault).
    spikes: f64,
    /// The whole run is slower by this factor (a busy runner).
    run_factor: f64,
}

fn noise(seed: u64) -> Noise {
    // Runs differ from each other by up to 3%, as on a shared CI runner.
    let mut rng = Rng(seed ^ 0xABCD);
    Noise { seed, jitter: 0.2, spikes: 0.02, run_factor: 0.97 + 0.06 * rng.unit() }
}

/// `app::server::handle` style paths; the display name is the last segment.
fn table(paths: &[String]) -> FunctionTable {
    FunctionTable {
        version: 1,
        plan_id: "synthetic".to_owned(),
        roots: vec![paths[0].clone()],
        depth: 5,
        filter: None,
        functions: paths
            .iter()
            .enumerate()
            .map(|(i, p)| FunctionInfo {
                index: i as u32,
                path: p.clone(),
                display: p.rsplit("::").next().unwrap_or(p).to_owned(),
                file: "src/lib.rs".to_owned(),
                line: 1 + i as u32,
                root: i == 0,
            })
            .collect(),
        builders: Vec::new(),
    }
}

/// A synthetic run's header: version 1 or 2 (with the runtime's default settings), one process per seed.
fn header(version: u32, seed: u64) -> Trace {
    let settings = util::RUNTIME_SETTINGS;
    Trace {
        version,
        pid: 1000 + seed as u32,
        epoch_unix_ns: 1_700_000_000_000_000_000,
        exe: "/synthetic/app".to_owned(),
        plan_id: Some("synthetic".to_owned()),
        settings: if version >= 2 { settings.map(|(k, v)| (k.to_owned(), v)).into() } else { Default::default() },
        ..Trace::default()
    }
}

fn main_thread() -> ThreadRef {
    ThreadRef { kind: ThreadKind::Thread, id: 1, name: "main".to_owned() }
}

/// Writes the trace text to `path` and `functions` to `<path>.functions.json` beside it.
fn save_run(path: &Path, functions: &FunctionTable, text: &str) {
    std::fs::write(path, text).unwrap();
    functions.save(&cargo_calltime::trace::functions_path_for(path)).unwrap();
}

/// Writes `path` (a trace of `invocations` calls of `tree`) and its `<path>.functions.json` beside it.
fn write_run(path: &Path, functions: &FunctionTable, tree: &Call, invocations: usize, noise: &Noise) {
    let count = invocations as u64;
    let stats = Stats { seen: count, kept: count, ..Stats::default() };
    write_run_of(path, functions, std::slice::from_ref(tree), &|_| 0, invocations, noise, (1, &stats));
}

/// [`write_run`] with invocation `seq` recording `trees[pick(seq)]`, in trace format `version` with its `stats`.
fn write_run_of(
    path: &Path,
    functions: &FunctionTable,
    trees: &[Call],
    pick: &dyn Fn(u64) -> usize,
    invocations: usize,
    noise: &Noise,
    (version, stats): (u32, &Stats),
) {
    /// The call timed from `start`: its self time jittered, half before the children and half after.
    fn timed(call: &Call, start: u64, scale: f64, rng: &mut Rng, jitter: f64) -> Node {
        let own = (call.self_ns as f64 * scale * (1.0 - jitter + 2.0 * jitter * rng.unit())).round() as u64;
        let mut clock = start + own / 2;
        let mut children = Vec::with_capacity(call.children.len());
        for child in &call.children {
            let node = timed(child, clock, scale, rng, jitter);
            clock += node.duration_ns;
            children.push(node);
        }
        let duration = clock + (own - own / 2) - start;
        let mut node = Node::call(call.func, start, duration, false, children);
        node.errs = u64::from(call.err);
        node.cancelled = call.cancelled;
        node
    }
    let mut rng = Rng(noise.seed);
    let mut builder = TraceBuilder::new(&header(version, noise.seed));
    let mut clock = 1_000;
    for seq in 0..invocations as u64 {
        let spike = if rng.unit() < noise.spikes { 3.0 } else { 1.0 };
        let root = timed(&trees[pick(seq)], clock, noise.run_factor * spike, &mut rng, noise.jitter);
        clock += root.duration_ns + 500;
        builder.invocation(&Invocation::new(seq, main_thread(), root));
    }
    builder.stats(stats);
    save_run(path, functions, builder.text());
}

/// Writes `runs` runs named `run-1.trace`.. into `dir`, seeds from `first_seed`; `dirty` runs are 3x slower.
fn write_side(dir: &Path, functions: &FunctionTable, tree: &Call, runs: u64, first_seed: u64, dirty: &[u64]) {
    std::fs::create_dir_all(dir).unwrap();
    for run in 1..=runs {
        let mut noise = noise(first_seed + run);
        if dirty.contains(&run) {
            noise.run_factor *= 3.0;
        }
        write_run(&dir.join(format!("run-{run}.trace")), functions, tree, 200, &noise);
    }
}

fn app_functions() -> FunctionTable {
    let paths = [
        "app::server::handle",
        "app::router::route",
        "app::db::lookup",
        "app::audit::record",
        "app::render::page",
        "app::cache::get",
    ];
    table(&paths.map(String::from))
}

const HANDLE: u32 = 0;
const ROUTE: u32 = 1;
const LOOKUP: u32 = 2;
const RECORD: u32 = 3;
const PAGE: u32 = 4;
const CACHE_GET: u32 = 5;

/// `handle -> route -> lookup`, `handle -> record` (`record_calls` calls sharing 1µs), `handle -> page`.
fn app_tree(lookup_ns: u64, record_calls: u64) -> Call {
    let records = (0..record_calls).map(|_| call(RECORD, 1_000 / record_calls, vec![]));
    let mut children = vec![call(ROUTE, 5_000, vec![call(LOOKUP, lookup_ns, vec![])])];
    children.extend(records);
    children.push(call(PAGE, 30_000, vec![]));
    call(HANDLE, 20_000, children)
}

/// `handle -> route -> get` (a cache asked first, a new path), `handle -> route -> lookup`, `handle -> record`; no
/// `page` (a path gone).
fn cached_tree(lookup_ns: u64) -> Call {
    let route = call(ROUTE, 5_000, vec![call(CACHE_GET, 2_000, vec![]), call(LOOKUP, lookup_ns, vec![])]);
    call(HANDLE, 20_000, vec![route, call(RECORD, 1_000, vec![])])
}

struct Case {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    head: PathBuf,
}

/// Base: 5 runs of the app (run numbers in `dirty` 3x slower); head: 5 runs of `head_tree` with other seeds.
fn case(head_tree: Call, dirty: &[u64]) -> Case {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let head = tmp.path().join("head");
    let functions = app_functions();
    write_side(&base, &functions, &app_tree(50_000, 1), 5, 100, dirty);
    write_side(&head, &functions, &head_tree, 5, 200, &[]);
    Case { _tmp: tmp, base, head }
}

fn diff(case: &Case, args: &[&str], expect_success: bool) -> Output {
    let mut cmd = util::calltime();
    cmd.arg("diff").arg(&case.base).arg(&case.head).args(args);
    util::run(&mut cmd, expect_success)
}

fn diff_json(case: &Case, args: &[&str]) -> serde_json::Value {
    let out = diff(case, &[&["--format", "json"], args].concat(), true);
    serde_json::from_slice(&out.stdout).expect("diff --format json prints JSON")
}

fn path_entry<'a>(json: &'a serde_json::Value, display: &str) -> &'a serde_json::Value {
    json["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["display"] == display)
        .unwrap_or_else(|| panic!("no path `{display}` in {json:#}"))
}

#[test]
fn same_code_recorded_twice_shows_no_change() {
    let case = case(app_tree(50_000, 1), &[]);
    let json = diff_json(&case, &["--fail-above", "5"]);
    let summary = &json["summary"];
    assert_eq!(summary["regressed"], 0, "{json:#}");
    assert_eq!(summary["improved"], 0, "{json:#}");
    assert_eq!(summary["calls_changed"], 0, "{json:#}");
    assert_eq!(summary["unchanged"], 5, "{json:#}");
    assert_eq!(json["base"]["invocations"], 1000);
    assert!(json["paths"].as_array().unwrap().iter().all(|p| p["status"] == "unchanged"));
    // Same data, the exit code says so even with a gate of 5%.
    let out = diff(&case, &["--fail-above", "5"], true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 regressed, 0 improved, 5 unchanged, no call-count changes"), "{text}");
}

#[test]
fn slowdown_in_one_function_comes_first_and_gates() {
    // lookup: 50µs -> 80µs of self time.
    let case = case(app_tree(80_000, 1), &[]);
    let json = diff_json(&case, &[]);
    let first = &json["paths"][0];
    assert_eq!(first["display"], "handle -> route -> lookup", "{json:#}");
    assert_eq!(first["path"], serde_json::json!(["app::server::handle", "app::router::route", "app::db::lookup"]));
    assert_eq!(first["status"], "regressed");
    let pct = first["change"]["median_pct"].as_f64().unwrap();
    assert!((50.0..70.0).contains(&pct), "lookup changed by {pct}%");
    assert!(first["change"]["ci_low_pct"].as_f64().unwrap() < pct);
    assert!(first["change"]["ci_high_pct"].as_f64().unwrap() > pct);
    assert!(first["change"]["p_value"].as_f64().unwrap() < 0.01);
    // Its callers got slower too, but their own self time did not move: they are folded under their cause, and
    // one slower function counts as one regression (issue 16: it used to be `3 regressed`).
    assert_eq!(json["summary"]["regressed"], 1, "{json:#}");
    assert_eq!(json["summary"]["regressed_callers"], 2, "{json:#}");
    assert_eq!(first["callers"], serde_json::json!(["handle -> route", "handle"]));
    for caller in ["handle", "handle -> route"] {
        let entry = path_entry(&json, caller);
        assert_eq!(entry["status"], "unchanged", "{entry:#}");
        assert_eq!(entry["cause"], "handle -> route -> lookup", "{entry:#}");
        assert!(entry["change"]["total_pct"].as_f64().unwrap() > 20.0, "{entry:#}");
    }
    assert_eq!(path_entry(&json, "handle -> page")["status"], "unchanged");
    assert!(path_entry(&json, "handle -> page")["cause"].is_null());
    assert_eq!(json["summary"]["calls_changed"], 0);
    let text = String::from_utf8_lossy(&diff(&case, &[], true).stdout).into_owned();
    assert!(text.contains("1 regressed (1 cause, 2 callers), 0 improved, 2 unchanged"), "{text}");

    let gated = diff(&case, &["--fail-above", "20"], false);
    assert_eq!(gated.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&gated.stderr);
    assert!(stderr.contains("regressed by more than 20%") && stderr.contains("handle -> route -> lookup"), "{stderr}");
    // A gate above the slowdown passes; no gate, no failure.
    diff(&case, &["--fail-above", "90"], true);
    diff(&case, &[], true);
}

#[test]
fn extra_call_is_reported_even_when_time_barely_moves() {
    // record: 1 call of 1µs -> 2 calls of 0.5µs each (batching undone: an N+1 in the making).
    let case = case(app_tree(50_000, 2), &[]);
    let json = diff_json(&case, &["--fail-above", "20"]);
    let record = path_entry(&json, "handle -> record");
    assert_eq!(record["calls"]["base"], 1.0);
    assert_eq!(record["calls"]["head"], 2.0);
    assert_eq!(record["calls"]["changed"], true);
    assert_eq!(record["status"], "unchanged", "{record:#}");
    assert_eq!(json["paths"][0]["display"], "handle -> record", "the only reported path comes first");
    assert_eq!(json["summary"]["calls_changed"], 1);
    assert_eq!(json["summary"]["regressed"], 0);
    let out = diff(&case, &["--format", "markdown"], true);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("**1 call-count change**"), "{md}");
    assert!(md.contains("| 🟡 | `handle -> record` |") && md.contains("| **1 → 2** |"), "{md}");
}

/// `lookup` starts returning an `Err` in every invocation and `page` is cancelled: both are reported like call
/// counts (exact), whatever their times do.
#[test]
fn a_move_of_a_few_nanoseconds_is_never_a_change() {
    // Two runs of semver's parser: paths of 1-2 ns a call (compensated for a probe of ~19 ns) came out as
    // `-100.0%, 1ns -> 0ns`, improved. Here `get` goes from 4 ns to 1 ns: -75%, significant, yet within the
    // compensation's error.
    let tmp = tempfile::tempdir().unwrap();
    let functions = app_functions();
    let tree = |get_ns| call(HANDLE, 20_000, vec![call(ROUTE, 5_000, vec![call(CACHE_GET, get_ns, vec![])])]);
    write_side(&tmp.path().join("base"), &functions, &tree(4), 5, 100, &[]);
    write_side(&tmp.path().join("head"), &functions, &tree(1), 5, 200, &[]);
    let case = Case { base: tmp.path().join("base"), head: tmp.path().join("head"), _tmp: tmp };
    let json = diff_json(&case, &[]);
    let get = path_entry(&json, "handle -> route -> get");
    assert!(get["change"]["median_pct"].as_f64().unwrap() < -50.0, "{get:#}");
    assert!(get["change"]["significant"].as_bool().unwrap(), "{get:#}");
    assert_eq!(get["status"], "unchanged", "{get:#}");
    assert_eq!(json["summary"]["improved"], 0, "{json:#}");
    assert_eq!(json["summary"]["below_threshold"], 1, "{json:#}");
}

/// A root sampled for cost records a random sample of its invocations: two runs of one program record different
/// mixes of its requests (url's 8 shapes of URL: 37 paths' calls per invocation differed between two runs of one
/// binary), so a count per invocation over the recorded ones moves by chance. That is no change; a real one still
/// is, and runs that recorded every invocation still compare exactly.
#[test]
fn counts_over_invocations_sampled_for_cost_change_only_beyond_chance() {
    let tmp = tempfile::tempdir().unwrap();
    let functions = app_functions();
    // Requests that record once or 3 times; `errs` of `lookup` in the records-3-times shape.
    let mut three = app_tree(50_000, 3);
    three.children[0].children[0].err = true;
    let shapes = [app_tree(50_000, 1), three];
    let write = |side: &str, every: u64, sampled_for_cost: u64, shapes: &[Call]| {
        let dir = tmp.path().join(side);
        std::fs::create_dir_all(&dir).unwrap();
        for run in 1..=5u64 {
            let stats = Stats { seen: 200 + sampled_for_cost, kept: 200, sampled_for_cost, ..Stats::default() };
            let pick = move |seq: u64| usize::from(seq % every == 0);
            let path = dir.join(format!("run-{run}.trace"));
            write_run_of(&path, &functions, shapes, &pick, 200, &noise(run * 7 + every), (3, &stats));
        }
        dir
    };
    let calls_changed = |base: &Path, head: &Path| {
        let out = util::run(util::calltime().arg("diff").arg(base).arg(head).args(["--format", "json"]), true);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let record = path_entry(&json, "handle -> record");
        let lookup = path_entry(&json, "handle -> route -> lookup");
        (
            record["calls"]["changed"].as_bool(),
            lookup["errs"]["changed"].as_bool(),
            json["summary"]["calls_changed"].clone(),
        )
    };
    // 1 in 5 against 1 in 4 requests of the second shape: 1.40 against 1.50 records an invocation.
    let (base, head) = (write("base", 5, 9_000, &shapes), write("head", 4, 9_000, &shapes));
    assert_eq!(calls_changed(&base, &head), (Some(false), Some(false), serde_json::json!(0)));
    let text = util::run(util::calltime().arg("diff").arg(&base).arg(&head), true);
    assert!(String::from_utf8_lossy(&text.stdout).contains("base: a random sample of the invocations was recorded"));
    // Every invocation recorded: the same mixes are a change, as ever.
    let (base, head) = (write("base-all", 5, 0, &shapes), write("head-all", 4, 0, &shapes));
    assert_eq!(calls_changed(&base, &head), (Some(true), Some(true), serde_json::json!(1)));
    // Sampled, and the second shape now records 10 times: a change beyond chance.
    let more = [shapes[0].clone(), app_tree(50_000, 10)];
    let head = write("head-more", 4, 9_000, &more);
    assert_eq!(calls_changed(&tmp.path().join("base"), &head).0, Some(true));
}

#[test]
fn err_returns_and_cancelled_calls_are_counted_like_calls() {
    let mut head = app_tree(50_000, 1);
    head.children[0].children[0].err = true;
    head.children[2].cancelled = true;
    let case = case(head, &[]);
    let json = diff_json(&case, &[]);
    let lookup = path_entry(&json, "handle -> route -> lookup");
    assert_eq!((lookup["errs"]["base"].as_f64(), lookup["errs"]["head"].as_f64()), (Some(0.0), Some(1.0)));
    assert_eq!(lookup["errs"]["changed"], true);
    assert_eq!(path_entry(&json, "handle -> page")["cancelled"]["changed"], true);
    assert_eq!(
        (json["summary"]["errs_changed"].as_u64(), json["summary"]["cancelled_changed"].as_u64()),
        (Some(1), Some(1))
    );
    let out = diff(&case, &[], true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 err-count change, 1 cancelled-count change"), "{text}");
    assert!(text.contains("1 (err 0 -> 1)") && text.contains("1 (cancelled 0 -> 1)"), "{text}");
}

#[test]
fn paths_that_appear_or_disappear_are_call_count_changes() {
    // head: `route` asks a cache first (a new path); `page` is no longer rendered (a path gone).
    let case = case(cached_tree(50_000), &[]);
    let json = diff_json(&case, &[]);
    let new = path_entry(&json, "handle -> route -> get");
    assert_eq!(new["status"], "added");
    assert_eq!((new["calls"]["base"].as_f64(), new["calls"]["head"].as_f64()), (Some(0.0), Some(1.0)));
    assert!(new["base"].is_null() && new["change"].is_null());
    let gone = path_entry(&json, "handle -> page");
    assert_eq!(gone["status"], "removed");
    assert_eq!((gone["calls"]["base"].as_f64(), gone["calls"]["head"].as_f64()), (Some(1.0), Some(0.0)));
    let summary = &json["summary"];
    assert_eq!((summary["added"].as_u64(), summary["removed"].as_u64()), (Some(1), Some(1)));
    // `page` took 30µs of the root's ~106µs: its disappearance is the biggest change and comes first.
    assert_eq!(json["paths"][0]["display"], "handle -> page");
    assert_eq!(json["paths"][0]["impact_ns"].as_f64().map(|ns| (25_000.0..35_000.0).contains(&ns)), Some(true));
    let out = diff(&case, &["--format", "markdown"], true);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("**2 call-count changes (1 new path, 1 gone)**"), "{md}");
    // The root got faster only through the gone path: it is folded under it.
    let gone_row =
        "| ➖ | `handle -> page`<br><sub>1 caller faster through it: `handle`</sub> | 30.5µs | - | gone |  | \
                    -31.5µs | **1 → 0** |";
    assert!(md.contains(gone_row), "{md}");
    assert!(md.contains("| ➕ | `handle -> route -> get` | - | 2.01µs | new |  | +2.06µs | **0 → 1** |"), "{md}");
}

#[test]
fn dirty_run_is_dropped_and_reported() {
    let case = case(app_tree(50_000, 1), &[3]);
    let json = diff_json(&case, &[]);
    let runs = json["base"]["runs"].as_array().unwrap();
    let dropped: Vec<&str> =
        runs.iter().filter(|r| !r["dropped"].is_null()).map(|r| r["file"].as_str().unwrap()).collect();
    assert_eq!(dropped, ["run-3.trace"]);
    assert_eq!(json["base"]["invocations"], 800);
    assert_eq!(json["head"]["invocations"], 1000);
    assert_eq!(json["summary"]["regressed"], 0, "the slow run must not make head look faster");
    assert_eq!(json["summary"]["improved"], 0, "the slow run must not make head look faster");
    let out = diff(&case, &[], true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("base: run-3.trace dropped: median root time"), "{text}");
}

#[test]
fn markdown_and_text_reports_match_golden_files() {
    // Base has one dirty run; head has the lookup slowdown and the extra record call.
    let case = case(app_tree(80_000, 2), &[3]);
    let labels = ["--base-label", "main", "--head-label", "feature/cache"];
    let md = diff(&case, &[&["--format", "markdown"], &labels[..]].concat(), true);
    util::check(&util::data("diff/slowdown.md"), &String::from_utf8(md.stdout).unwrap());
    let text = diff(&case, &labels, true);
    util::check(&util::data("diff/slowdown.txt"), &String::from_utf8(text.stdout).unwrap());
}

#[test]
fn svg_is_a_differential_flamegraph_with_the_tables_changes() {
    // head: lookup 50µs -> 80µs, `route` asks a cache first (new), `page` is no longer rendered (gone).
    let case = case(cached_tree(80_000), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("diff.svg");
    diff(&case, &["--format", "svg", "-o", out_file.to_str().unwrap()], true);
    let svg = std::fs::read_to_string(&out_file).unwrap();
    let (frames, texts) = util::svg::svg_frames(&svg);
    assert_eq!(texts[0], "cargo calltime diff: base vs head");
    let frame =
        |name: &str| frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}: {frames:?}"));
    // The tooltip gives the table's change (relative change of the median self time), not a share of the total.
    let text = String::from_utf8(diff(&case, &[], true).stdout).unwrap();
    let lookup_row = text.lines().find(|l| l.ends_with("handle -> route -> lookup")).unwrap();
    let table_change = lookup_row.split_whitespace().next().unwrap();
    assert!(frame("lookup").title.starts_with(&format!("lookup ({table_change}: self ")), "{:?}", frame("lookup"));
    // The path gone in head is drawn (as wide as in base), blue; the new one red; callers pale.
    assert!(frame("page").title.contains("gone in head") && frame("page").width > 20.0, "{:?}", frame("page"));
    assert_eq!(frame("page").fill, "rgb(60,110,230)");
    assert_eq!(frame("get").fill, "rgb(230,70,50)");
    assert_eq!(frame("route").fill, "rgb(250,185,175)");
    let golden: String = frames.iter().map(|f| format!("{}  {}\n", f.fill, f.title)).collect();
    util::check(&util::data("diff/changes.svg-frames.txt"), &golden);
}

#[test]
fn huge_diff_stays_under_the_comment_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let count = 3000;
    let mut paths = vec!["app::server::handle".to_owned()];
    paths.extend((1..=count).map(|i| {
        format!("app::a_module_with_a_rather_long_name_{i:04}::a_function_with_an_even_longer_name_number_{i:04}")
    }));
    let functions = table(&paths);
    let tree = |each: u64| call(0, 1_000, (1..=count).map(|i| call(i as u32, each, vec![])).collect());
    let one_run = |dir: &str, tree: &Call, seed: u64| {
        std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        let noise = Noise { seed, jitter: 0.1, spikes: 0.0, run_factor: 1.0 };
        write_run(&tmp.path().join(dir).join("run-1.trace"), &functions, tree, 10, &noise);
    };
    one_run("base", &tree(1_000), 1);
    one_run("head", &tree(2_000), 2);
    let mut cmd = util::calltime();
    cmd.arg("diff").arg(tmp.path().join("base")).arg(tmp.path().join("head")).args(["--format", "markdown"]);
    let out = util::run(&mut cmd, true);
    let md = String::from_utf8(out.stdout).unwrap();
    // GitHub's limit is 65,536 characters; the report keeps 1,000 free for what a workflow appends.
    assert!(md.chars().count() <= 64_536, "{} characters", md.chars().count());
    assert!(md.len() > 50_000, "the budget is used, not wasted: {} bytes", md.len());
    assert!(md.starts_with("<!-- cargo-calltime -->\n"));
    // Each of the 3000 slower functions is a cause; the root, whose own time did not change, is their caller.
    assert!(md.contains("**3000 regressed (3000 causes, 1 caller)**"), "{}", &md[..400]);
    assert!(md.contains("more changed call path(s) not shown: GitHub comments are limited"), "no truncation note");
    assert!(md.contains("Calls are per invocation and compared exactly.</sub>"), "the method note survives truncation");
    assert!(
        md.trim_end().ends_with("- head: 1 run(s) only: dirty runs are recognised from 3 runs on"),
        "and the notes"
    );
}

#[test]
fn bad_inputs_are_one_line_errors_with_hints() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let junk = tmp.path().join("junk.trace");
    std::fs::write(&junk, "hello\n").unwrap();
    let missing = tmp.path().join("missing");
    let no_invocations = tmp.path().join("no-invocations.trace");
    std::fs::write(&no_invocations, "calltime-trace 1\nprocess 7 0 /bin/app\nplan p \nstats 0 0 0 0 0\n").unwrap();
    for (base, expected) in [
        (&missing, "error: cannot read <tmp>/missing:"),
        (&empty, "error: directory <tmp>/empty holds no *.trace files"),
        (&junk, "error: <tmp>/junk.trace is not a calltime trace: the first line is not"),
        (&no_invocations, "error: <tmp>/no-invocations.trace (base) has no complete root invocations to compare"),
    ] {
        let mut cmd = util::calltime();
        cmd.arg("diff").arg(base).arg(&empty);
        let out = util::run(&mut cmd, false);
        assert_eq!(out.status.code(), Some(1));
        let stderr = util::normalize_path(&String::from_utf8_lossy(&out.stderr), tmp.path(), "<tmp>");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{stderr}");
        assert!(lines[0].starts_with(expected), "{stderr}");
        assert!(lines[1].starts_with("  hint: "), "{stderr}");
    }
}

#[test]
fn same_code_is_never_called_changed_over_many_seeds() {
    use cargo_calltime::diff::{compare, stats::Bootstrap, Settings, Side, ALPHA};
    let functions = app_functions();
    let settings = Settings {
        threshold_pct: 10.0,
        alpha: ALPHA,
        fail_above_pct: None,
        bootstrap: Bootstrap { resamples: 200, ..Bootstrap::default() },
    };
    let (mut rank_test_alone, mut significant_below_threshold) = (0, 0);
    for pair in 0..20 {
        let tmp = tempfile::tempdir().unwrap();
        let (base_dir, head_dir) = (tmp.path().join("base"), tmp.path().join("head"));
        write_side(&base_dir, &functions, &app_tree(50_000, 1), 5, 1_000 + pair * 20, &[]);
        write_side(&head_dir, &functions, &app_tree(50_000, 1), 5, 1_010 + pair * 20, &[]);
        let base = Side::load(&base_dir, "base").unwrap();
        let head = Side::load(&head_dir, "head").unwrap();
        let report = compare(&base, &head, &settings);
        let s = &report.summary;
        assert_eq!((s.regressed, s.improved, s.calls_changed, s.added, s.removed), (0, 0, 0, 0, 0), "pair {pair}");
        significant_below_threshold += s.below_threshold;
        rank_test_alone += report.paths.iter().filter(|p| p.change.is_some_and(|c| c.p_value < ALPHA)).count();
    }
    // Runs differ by up to 3% as a whole, so the rank test on pooled invocations finds small "differences"; the
    // run-level bootstrap interval removes most and the threshold the rest (figures quoted in docs/ci.md).
    eprintln!(
        "of 100 path comparisons of identical code: Mann-Whitney p < {ALPHA} alone: {rank_test_alone}; also with \
         the bootstrap interval excluding 0: {significant_below_threshold}; reported as changed: 0"
    );
}

/// Writes `runs` runs of 200 folded invocations (trace format 2) into `dir`: `handle -> route -> lookup`,
/// `handle -> record` called `record_calls` times (10ns each, sampled as the runtime does: the first 16 calls timed,
/// then 1 in 64), `handle -> page`.
fn write_folded_side(dir: &Path, functions: &FunctionTable, record_calls: u64, runs: u64, first_seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    for run in 1..=runs {
        let noise = noise(first_seed + run);
        let mut rng = Rng(noise.seed);
        let mut time = |ns: u64| (ns as f64 * noise.run_factor * (0.8 + 0.4 * rng.unit())).round() as u64;
        let mut builder = TraceBuilder::new(&header(2, noise.seed));
        let mut clock = 1_000;
        for seq in 0..200 {
            let timed = record_calls.min(16 + record_calls.saturating_sub(16) / 64);
            let record_timed_ns: u64 = (0..timed).map(|_| time(10)).sum();
            let record_ns = cargo_calltime::trace::estimated_total(record_timed_ns, timed, record_calls);
            let (lookup, route_self, page, handle_self) = (time(50_000), time(5_000), time(30_000), time(20_000));
            let route = route_self + lookup;
            let handle = handle_self + route + record_ns + page;
            let one = |func: u32, start: u64, ns: u64, children| Node::path(func, start, 1, 1, ns, (ns, ns), children);
            let record = Node::path(RECORD, clock + route, record_calls, timed, record_timed_ns, (8, 12), vec![]);
            let children = vec![
                one(ROUTE, clock + 10, route, vec![one(LOOKUP, clock + 20, lookup, vec![])]),
                record,
                one(PAGE, clock + route + record_ns, page, vec![]),
            ];
            let inv = Invocation {
                folded: true,
                ..Invocation::new(seq, main_thread(), one(HANDLE, clock, handle, children))
            };
            builder.invocation(&inv);
            clock += handle + 500;
        }
        builder.stats(&Stats { seen: 200, kept: 200, ..Stats::default() });
        save_run(&dir.join(format!("run-{run}.trace")), functions, builder.text());
    }
}

#[test]
fn folded_traces_compare_exact_call_counts_and_estimated_times() {
    let functions = app_functions();
    let folded_case = |head_record_calls: u64| {
        let tmp = tempfile::tempdir().unwrap();
        let (base, head) = (tmp.path().join("base"), tmp.path().join("head"));
        write_folded_side(&base, &functions, 100_000, 5, 100);
        write_folded_side(&head, &functions, head_record_calls, 5, 200);
        Case { _tmp: tmp, base, head }
    };
    // Same code twice: nothing changed, though record's time is estimated from 1578 of its 100000 calls.
    let same = folded_case(100_000);
    let json = diff_json(&same, &["--fail-above", "5"]);
    let summary = &json["summary"];
    assert_eq!((summary["regressed"].as_u64(), summary["improved"].as_u64()), (Some(0), Some(0)), "{json:#}");
    assert_eq!((summary["calls_changed"].as_u64(), summary["unchanged"].as_u64()), (Some(0), Some(5)), "{json:#}");
    assert_eq!(json["base"]["invocations"], 1000);
    let record = path_entry(&json, "handle -> record");
    assert_eq!(
        (record["calls"]["base"].as_f64(), record["calls"]["head"].as_f64()),
        (Some(100_000.0), Some(100_000.0))
    );
    // One extra call per invocation among 100000 sampled ones: counts are exact, so it is reported, exactly.
    let extra = folded_case(100_001);
    let json = diff_json(&extra, &[]);
    let record = path_entry(&json, "handle -> record");
    assert_eq!(
        (record["calls"]["base"].as_f64(), record["calls"]["head"].as_f64()),
        (Some(100_000.0), Some(100_001.0))
    );
    assert_eq!(record["calls"]["changed"], true);
    assert_eq!(json["summary"]["calls_changed"], 1, "{json:#}");
    assert_eq!(json["paths"][0]["display"], "handle -> record", "{json:#}");
    let out = diff(&extra, &["--format", "markdown"], true);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("**100000 → 100001** |"), "{md}");
}

#[test]
fn paths_that_read_alike_are_shown_in_full() {
    let tmp = tempfile::tempdir().unwrap();
    let functions = table(&["app::server::handle", "app::a::new", "app::b::new"].map(String::from));
    let tree = call(0, 10_000, vec![call(1, 1_000, vec![]), call(2, 2_000, vec![])]);
    write_side(&tmp.path().join("base"), &functions, &tree, 1, 1, &[]);
    write_side(&tmp.path().join("head"), &functions, &tree, 1, 2, &[]);
    let mut cmd = util::calltime();
    cmd.arg("diff").arg(tmp.path().join("base")).arg(tmp.path().join("head")).args(["--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&util::run(&mut cmd, true).stdout).unwrap();
    let mut displays: Vec<&str> =
        json["paths"].as_array().unwrap().iter().map(|p| p["display"].as_str().unwrap()).collect();
    displays.sort();
    assert_eq!(displays, ["app::server::handle -> app::a::new", "app::server::handle -> app::b::new", "handle"]);
}

/// Allocation counts are exact, like call counts: one more allocation per invocation in one function is a change,
/// reported with no statistics, and traces that counted none compare as before.
#[test]
fn one_more_allocation_is_reported_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let functions = table(&["app::handle".to_owned(), "app::query".to_owned()]);
    // Ten invocations with the same times on both sides: only query's self allocations differ (4 vs 5 of 16 bytes).
    let write = |name: &str, query_allocs: u64| -> PathBuf {
        let mut trace = header(3, 1);
        trace.settings.insert("allocs".to_owned(), 1);
        let mut builder = TraceBuilder::new(&trace);
        for seq in 0..10 {
            let start = 1_000 + seq * 100_000;
            let query =
                Node::call(1, start + 100, 50_000, false, Vec::new()).with_allocs(query_allocs, 16 * query_allocs);
            let root = Node::call(0, start, 80_000, false, vec![query]).with_allocs(1, 24);
            builder.invocation(&Invocation::new(seq, main_thread(), root));
        }
        let path = dir.path().join(name);
        save_run(&path, &functions, builder.text());
        path
    };
    let (base, head) = (write("base.trace", 4), write("head.trace", 5));
    let case = Case { _tmp: dir, base, head };
    let json = diff_json(&case, &[]);
    assert_eq!(json["summary"]["allocs_changed"], 1, "{json:#}");
    let query = path_entry(&json, "handle -> query");
    assert_eq!(query["allocs"]["base"], 4.0);
    assert_eq!(query["allocs"]["head"], 5.0);
    assert_eq!(query["allocs"]["changed"], true);
    assert_eq!(path_entry(&json, "handle")["allocs"]["changed"], false);
    let text = String::from_utf8(diff(&case, &[], true).stdout).unwrap();
    assert!(text.contains("1 allocation change"), "{text}");
    assert!(text.contains("4 -> 5 (64 B -> 80 B)"), "{text}");
}

/// Runs recorded with another --filter (or --depth, or --root) probe other paths: the paths only one side probed
/// would read as new or gone, so the diff says the plans differ. The same plan on both sides says nothing.
#[test]
fn different_plans_are_named_in_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, head) = (tmp.path().join("base"), tmp.path().join("head"));
    let functions = app_functions();
    let mut filtered = app_functions();
    filtered.filter = Some("^app::db".to_owned());
    write_side(&base, &functions, &app_tree(50_000, 1), 3, 100, &[]);
    write_side(&head, &filtered, &app_tree(50_000, 1), 3, 200, &[]);
    let mixed = Case { _tmp: tmp, base, head };
    let stderr = String::from_utf8_lossy(&diff(&mixed, &[], true).stderr).into_owned();
    assert!(
        stderr.contains(
            "warning: base and head were recorded with different plans (base: app::server::handle (depth 5); head: \
             app::server::handle (depth 5, filter ^app::db))"
        ),
        "{stderr}"
    );
    let same = case(app_tree(50_000, 1), &[]);
    let stderr = String::from_utf8_lossy(&diff(&same, &[], true).stderr).into_owned();
    assert!(!stderr.contains("different plans"), "{stderr}");
}

/// diff/spawned-allocs/: one root whose `count_line` runs on a pool's worker (a `p` part), its allocations per
/// invocation spread over 88-112 as the pool splits the work. `head` adds one allocation in every third invocation
/// (100 -> 100.33 a call, well inside that spread: the rayon program of docs/performance.md reported such an
/// "allocation change" between two runs of one binary); `more` adds 40 to each, a change.
#[test]
fn counts_of_spawned_work_change_only_beyond_its_spread() {
    let dir = util::data("diff/spawned-allocs");
    let allocs_changed = |head: &str| {
        let out = util::run(
            util::calltime().arg("diff").arg(dir.join("base.trace")).arg(dir.join(head)).args(["--format", "json"]),
            true,
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // Left out of the summary when 0.
        json["summary"]["allocs_changed"].as_u64().unwrap_or(0)
    };
    assert_eq!(allocs_changed("head.trace"), 0);
    assert_eq!(allocs_changed("more.trace"), 1);
}

//! Views from fixed synthetic traces (tests/data/views/*.trace, deterministic timings): text, folded and JSON
//! against expected files; the SVG parsed as XML; the Chrome trace checked slice by slice; `cargo calltime report`
//! run as a user runs it.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cargo_calltime::trace::Trace;
use cargo_calltime::units::format_ns;
use cargo_calltime::views::{render, ViewOptions};
use cargo_calltime::views::{SortKey, ViewFormat};
use util::svg::{svg_frames, Frame};
use util::{check, data};

fn load(name: &str) -> Trace {
    let path = data(&format!("views/{name}.trace"));
    Trace::load(&path, None).unwrap_or_else(|e| panic!("cannot load {}: {e:#}", path.display()))
}

fn render_text(trace: &Trace, opts: &ViewOptions) -> String {
    let rendered = render(trace, opts).unwrap_or_else(|e| panic!("render failed: {e:#}"));
    String::from_utf8(rendered.bytes).expect("views write UTF-8")
}

fn opts(format: ViewFormat) -> ViewOptions {
    ViewOptions { format, ..ViewOptions::default() }
}

fn expect(name: &str) -> PathBuf {
    data(&format!("views/expected/{name}"))
}

#[test]
fn text_trees_match_expected_files() {
    let nested = load("nested");
    let many = load("many");
    let text = ViewOptions::default();
    // One invocation: nested tree, repeated calls folded with min/mean/max, a panicked call, shared display names
    // told apart by their paths.
    check(&expect("nested.txt"), &render_text(&nested, &text));
    // `--min-time` folds small siblings into "(N more, total)"; without colour `--highlight` changes nothing.
    let folded = ViewOptions { min_time_ns: Some(60_000), highlight_ns: Some(300_000), ..text.clone() };
    check(&expect("nested.min-time.txt"), &render_text(&nested, &folded));
    // Many invocations on two threads and two tasks: the 3 slowest, the aggregate with percentiles per root, and
    // a summary naming truncation, drops and the record cut off at the end.
    check(&expect("many.txt"), &render_text(&many, &text));
    // `--invocation K` shows only that one: here the truncated one.
    let sixth = ViewOptions { invocation: Some(6), ..text.clone() };
    check(&expect("many.invocation-6.txt"), &render_text(&many, &sixth));
    let aggregate_only = ViewOptions { top: 0, min_time_ns: Some(100_000), ..text };
    check(&expect("many.top-0.txt"), &render_text(&many, &aggregate_only));
}

#[test]
fn colour_marks_slow_and_panicked_nodes_and_dims_modules() {
    let nested = load("nested");
    let coloured = ViewOptions { color: true, highlight_ns: Some(1_000_000), ..ViewOptions::default() };
    let text = render_text(&nested, &coloured);
    let red = "\x1b[1m\x1b[31m";
    let yellow = "\x1b[33m";
    let dim = "\x1b[2m";
    let line = |needle: &str| -> &str {
        text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle} in\n{text}"))
    };
    // db::Pool::query took 2.5ms in one call: slower than 1ms.
    assert!(line("query").contains(&format!("{red}2.50ms")), "{text}");
    assert!(line("query").contains(&format!("{dim}db::Pool::\x1b[0m{red}query")), "{text}");
    // decode: no single call over 1ms, 900µs in total: not highlighted; its panic is tagged in red.
    assert!(line("decode").contains(&format!("{red}[panicked 1 of 3]")), "{text}");
    assert!(!line("decode").contains(&format!("{red} 900µs")), "{text}");
    // parse_request: 1.2ms in its one call.
    assert!(line("parse_request").contains(&format!("{red}1.20ms")), "{text}");
    // parse::header: 3 calls, none over 100µs... with a 400µs threshold the 450µs total is "warm".
    let warm = ViewOptions { color: true, highlight_ns: Some(400_000), ..ViewOptions::default() };
    let text = render_text(&nested, &warm);
    let header = text.lines().find(|l| l.contains("header")).unwrap();
    assert!(header.contains(&format!("{yellow} 450µs")), "{text}");
    // In the aggregate, "warm" is per invocation: 933µs of parse::header over 20 invocations is 47µs each.
    let many = render_text(&load("many"), &ViewOptions { color: true, top: 0, ..warm });
    let header = many.lines().find(|l| l.contains("header")).unwrap();
    assert!(header.contains(" 933µs") && !header.contains(yellow) && !header.contains(red), "{many}");
    // Without colour there is no escape code at all.
    let plain = render_text(&nested, &ViewOptions { highlight_ns: Some(1_000_000), ..ViewOptions::default() });
    assert!(!plain.contains('\x1b'), "{plain}");
}

#[test]
fn folded_stacks_match_expected_files() {
    let many = load("many");
    check(&expect("nested.folded"), &render_text(&load("nested"), &opts(ViewFormat::Folded)));
    check(&expect("many.folded"), &render_text(&many, &opts(ViewFormat::Folded)));
    let tenth = ViewOptions { invocation: Some(10), ..opts(ViewFormat::Folded) };
    check(&expect("many.invocation-10.folded"), &render_text(&many, &tenth));
}

#[test]
fn folded_stacks_carry_self_time_and_add_up_to_the_roots() {
    let many = load("many");
    let folded = render_text(&many, &opts(ViewFormat::Folded));
    let mut total = 0u64;
    let mut previous = String::new();
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no count in `{line}`"));
        let count: u64 = count.parse().unwrap_or_else(|_| panic!("bad count in `{line}`"));
        assert!(count > 0, "zero-self lines are left out: `{line}`");
        assert!(stack > previous.as_str(), "lines are sorted and unique: `{previous}` then `{stack}`");
        previous = stack.to_owned();
        total += count;
    }
    let roots: u64 = many.invocations.iter().map(|i| i.duration_ns).sum();
    assert_eq!(total, roots, "self times add up to the roots' durations");
}

#[test]
fn folded_stacks_are_accepted_by_inferno() {
    let many = load("many");
    let folded = render_text(&many, &opts(ViewFormat::Folded));
    let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    let mut options = inferno::flamegraph::Options::default();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg).expect("inferno accepts the stacks");
    let frames = svg_frames(&String::from_utf8(svg).unwrap()).0;
    // inferno's "all" frame sums every line it understood: none was ignored.
    let all = frames.iter().find(|f| f.title.starts_with("all (")).expect("an `all` frame");
    assert_eq!(all.title, format!("all ({} samples, 100%)", cargo_calltime::units::thousands(total)));
}

/// flamegraph.pl is not shipped with the repository; set FLAMEGRAPH_PL=/path/to/flamegraph.pl (or put it on PATH)
/// to run this check, which is skipped (and says so) otherwise.
#[test]
fn folded_stacks_are_accepted_by_flamegraph_pl() {
    let script = std::env::var_os("FLAMEGRAPH_PL").map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("flamegraph.pl")).find(|p| p.exists()))
    });
    let Some(script) = script else {
        eprintln!("skipped: flamegraph.pl not found (set FLAMEGRAPH_PL)");
        return;
    };
    let many = load("many");
    let folded = render_text(&many, &opts(ViewFormat::Folded));
    let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("many.folded");
    std::fs::write(&input, &folded).unwrap();
    let out = util::run(std::process::Command::new("perl").arg(&script).arg("--countname=ns").arg(&input), true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Ignored"), "flamegraph.pl ignored lines:\n{stderr}");
    let svg = String::from_utf8(out.stdout).unwrap();
    let frames = svg_frames(&svg).0;
    let all = frames.iter().find(|f| f.title.starts_with("all (")).expect("an `all` frame");
    assert_eq!(all.title, format!("all ({} ns, 100%)", cargo_calltime::units::thousands(total)));
    // flamegraph.pl turns `<>` into `()`; every other name comes through as written.
    assert!(frames.iter().any(|f| f.title.starts_with("(db::Row as codec::Decode)::decode (")), "{frames:?}");
}

#[test]
fn flamegraph_svg_is_xml_with_the_expected_frames_and_title() {
    let many = load("many");
    let svg = render(&many, &opts(ViewFormat::Svg)).unwrap();
    assert!(svg.binary_like);
    let svg = String::from_utf8(svg.bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    let names: BTreeSet<&str> = frames.iter().map(|f| f.name()).collect();
    let expected: BTreeSet<&str> = [
        "all",
        "server::handle",
        "parse::parse_request",
        "parse::header",
        "db::Pool::query",
        "<db::Row as codec::Decode>::decode [panicked]",
        "render::render",
        "demo::render::check",
        "server::shutdown",
        "demo::util::check",
    ]
    .into();
    assert_eq!(names, expected);
    let title = &texts[0];
    assert_eq!(title, "demo::server::handle, demo::server::shutdown (depth 4, filter ^demo::): 21 invocations");
    // Widths follow self time summed over invocations: decode (1.67ms of 3.82ms) is wider than header (933µs).
    let width = |name: &str| frames.iter().find(|f| f.name() == name).unwrap().width;
    assert!(width("<db::Row as codec::Decode>::decode [panicked]") > width("parse::header"));
    // Tooltips in human units (`3.78ms`), never raw `3,780,000 ns` (issue 16).
    let handle_ns: u64 = many.invocations.iter().filter(|i| i.root.func == 0).map(|i| i.duration_ns).sum();
    let handle = format!("server::handle ({},", format_ns(handle_ns));
    assert!(frames.iter().any(|f| f.title.starts_with(&handle)), "{handle} in {frames:?}");
    assert!(!frames.iter().any(|f| f.title.contains(" ns,")), "{frames:?}");
    // The call path where a call panicked is its own frame, in a colour of its own.
    let panicked: Vec<&str> = frames.iter().filter(|f| f.fill == PANICKED).map(|f| f.name()).collect();
    assert_eq!(panicked, ["<db::Row as codec::Decode>::decode [panicked]"]);
    labels_are_whole_or_readable(&frames);

    // `--invocation K` draws one invocation, and says which.
    let one = ViewOptions { invocation: Some(10), ..opts(ViewFormat::Svg) };
    let svg = String::from_utf8(render(&many, &one).unwrap().bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    assert_eq!(texts[0], "demo::server::handle (depth 4, filter ^demo::): invocation #10 of 21");
    let root = format!("server::handle ({}, 100", format_ns(many.invocations[9].duration_ns));
    assert!(frames.iter().any(|f| f.title.starts_with(&root)), "{root} in {frames:?}");
    assert!(!frames.iter().any(|f| f.name() == "server::shutdown"));
}

#[test]
fn flame_chart_lays_calls_out_in_time_order() {
    let nested = load("nested");
    let chart = ViewOptions { flamechart: true, ..opts(ViewFormat::Svg) };
    let svg = String::from_utf8(render(&nested, &chart).unwrap().bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    assert!(texts[1].starts_with("flame chart (time runs left to right)"), "{texts:?}");
    let x = |name: &str| frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}")).x;
    assert!(x("parse::parse_request") < x("db::Pool::query"));
    assert!(x("db::Pool::query") < x("render::render"));
    // Three separate calls of decode stay three frames in a flame chart; the one that panicked is marked.
    let decodes: Vec<&Frame> =
        frames.iter().filter(|f| f.name().starts_with("<db::Row as codec::Decode>::decode")).collect();
    assert_eq!(decodes.len(), 3);
    let marked: Vec<bool> = decodes.iter().map(|f| f.name().ends_with(" [panicked]") && f.fill == PANICKED).collect();
    assert_eq!(marked, [false, true, false], "{decodes:?}");
    labels_are_whole_or_readable(&frames);
    // A time axis under the frames: round ticks from 0 to the invocation's 5ms, in human units.
    let ticks: Vec<&str> =
        texts.iter().map(String::as_str).filter(|t| *t == "0" || t.ends_with('s') && t.len() < 8).collect();
    assert_eq!(
        ticks,
        ["0", "500µs", "1.00ms", "1.50ms", "2.00ms", "2.50ms", "3.00ms", "3.50ms", "4.00ms", "4.50ms", "5.00ms"]
    );
    // The call to util::check after render is the last thing server::handle did.
    let last_check = frames.iter().filter(|f| f.name() == "demo::util::check").map(|f| f.x).fold(0.0, f64::max);
    assert!(last_check > x("render::render"));
}

#[test]
fn chrome_trace_has_one_complete_slice_per_call_on_one_track_per_thread_or_task() {
    let many = load("many");
    let text = render_text(&many, &opts(ViewFormat::Chrome));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let calls: usize = many.invocations.iter().map(|i| i.root.count()).sum();
    assert_eq!(slices.len(), calls);
    for s in &slices {
        assert!(s["ts"].is_f64() || s["ts"].is_u64(), "{s}");
        assert!(s["dur"].as_f64().is_some() && s["pid"] == 777 && s["tid"].as_u64().is_some(), "{s}");
        assert!(s["args"]["path"].is_string() && s["args"]["location"].is_string(), "{s}");
    }
    // µs with ns precision: the first root starts at 10_000ns, lasts 78_400ns... as recorded.
    let first = slices[0];
    assert_eq!((first["ts"].as_f64(), first["name"].as_str()), (Some(10.0), Some("server::handle")));
    let threads: BTreeSet<(u64, &str)> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| (e["tid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap()))
        .collect();
    let names: BTreeSet<&str> = threads.iter().map(|(_, n)| *n).collect();
    assert_eq!(names, ["task 7", "task 9", "thread 1 (main)", "thread 2 (worker-1)"].into());
    assert_eq!(threads.iter().map(|(t, _)| t).collect::<BTreeSet<_>>().len(), 4, "one track each");
    let panicked: Vec<&&serde_json::Value> = slices.iter().filter(|s| s["args"]["panicked"] == true).collect();
    assert_eq!(panicked.len(), 1);
    assert_eq!(panicked[0]["args"]["path"], "<demo::db::Row as demo::codec::Decode>::decode");
    assert_eq!(panicked[0]["args"]["location"], "/ws/demo/src/db.rs:130");
    let truncated: Vec<_> = slices.iter().filter(|s| s["args"]["truncated_calls"].is_u64()).collect();
    assert_eq!(truncated.len(), 1);
    assert_eq!(truncated[0]["args"]["invocation"], 6);
}

#[test]
fn function_table_matches_expected_files() {
    let table = |sort| ViewOptions { sort, ..opts(ViewFormat::Table) };
    // Two roots on several threads: functions by self time; `check` of two modules told apart by their paths.
    check(&expect("many.table.txt"), &render_text(&load("many"), &table(SortKey::SelfTime)));
    check(&expect("many.table-total.txt"), &render_text(&load("many"), &table(SortKey::Total)));
    // Folded invocations: exact calls, estimated times marked `~`.
    check(&expect("folded.table-calls.txt"), &render_text(&load("folded"), &table(SortKey::Calls)));
}

#[test]
fn function_table_counts_a_recursive_call_once_in_total_time() {
    use cargo_calltime::trace::{Invocation, Node, ThreadKind, ThreadRef};
    // walk (100ns) -> walk (60ns) -> walk (30ns) -> leaf (10ns).
    let leaf = Node::call(1, 40, 10, false, vec![]);
    let inner = Node::call(0, 30, 30, false, vec![leaf]);
    let middle = Node::call(0, 20, 60, false, vec![inner]);
    let root = Node::call(0, 0, 100, false, vec![middle]);
    let thread = ThreadRef { kind: ThreadKind::Thread, id: 1, name: String::new() };
    let trace = Trace { invocations: vec![Invocation::new(0, thread, root)], ..Trace::default() };
    let json: serde_json::Value = serde_json::from_str(&render_text(&trace, &opts(ViewFormat::Json))).unwrap();
    let walk = &json["functions"][0];
    assert_eq!(
        (walk["calls"].as_u64(), walk["total_ns"].as_u64(), walk["self_ns"].as_u64()),
        (Some(3), Some(100), Some(90))
    );
    // The mean is of every call: (100 + 60 + 30) / 3.
    assert_eq!(
        (walk["mean_ns"].as_u64(), walk["min_ns"].as_u64(), walk["max_ns"].as_u64()),
        (Some(63), Some(30), Some(100))
    );
    assert_eq!(json["functions"][1]["total_ns"], 10);
}

#[test]
fn json_matches_expected_files() {
    check(&expect("nested.json"), &render_text(&load("nested"), &opts(ViewFormat::Json)));
    check(&expect("many.json"), &render_text(&load("many"), &opts(ViewFormat::Json)));
}

/// service.trace: a service kept its 2 slowest trees (one tree written at a checkpoint was displaced later: its
/// `unheld` record takes it out), was switched off, on and to `slower-than 5ms` while it ran (`control` records),
/// and wrote its whole-run aggregate. Every view says what was switched and when; JSON has the whole run too.
#[test]
fn service_views_show_control_changes_and_the_whole_run() {
    let trace = load("service");
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    let seqs: Vec<u64> = trace.invocations.iter().map(|inv| inv.seq).collect();
    assert_eq!(seqs, [4, 9], "the displaced tree (seq 2) is left out");
    check(&expect("service.txt"), &render_text(&trace, &ViewOptions::default()));
    check(&expect("service.aggregate.txt"), &render_text(&trace, &opts(ViewFormat::Aggregate)));
    check(&expect("service.table.txt"), &render_text(&trace, &opts(ViewFormat::Table)));
    let json = render_text(&trace, &opts(ViewFormat::Json));
    check(&expect("service.json"), &json);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let whole = &doc["whole_run"];
    assert_eq!((whole["invocations"].as_u64(), whole["kept"].as_u64()), (Some(1000), Some(2)), "{whole}");
    let root = &whole["aggregate"][0]["tree"];
    assert_eq!((root["calls"].as_u64(), root["p99_ns"].is_u64()), (Some(1000), true), "{root}");
    let changes: Vec<(u64, &str, u64)> = doc["controls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["at_ns"].as_u64().unwrap(), c["setting"].as_str().unwrap(), c["value"].as_u64().unwrap()))
        .collect();
    let expected = [(1_500_000_000, "recording", 0), (2_000_000_000, "recording", 1)];
    assert_eq!(changes[..2], expected);
    assert_eq!(changes[2], (3_000_000_000, "slower_than_ns", 5_000_000));
    // Formats with no summary of their own say it on stderr (the commands print the note).
    let svg = render(&trace, &opts(ViewFormat::Folded)).unwrap();
    let note = svg.note.expect("a note");
    assert!(note.contains("recording off at +1.50s, recording on at +2.00s, slower-than 5.00ms at +3.00s"), "{note}");
}

/// async.trace (test-crates/async-overlap, with a folded invocation added by hand): `both` polls `left` and
/// `right` together (they overlap for 30 ms), `race` drops `slow` when `fast` is done (`slow` cancelled); in the
/// folded invocation `both` returned `Err` 2 of 3 times and a call of `race` was cancelled.
#[test]
fn async_trace_views_mark_concurrency_cancellation_and_errs() {
    let trace = load("async");
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    check(&expect("async.txt"), &render_text(&trace, &ViewOptions::default()));
    check(&expect("async.json"), &render_text(&trace, &opts(ViewFormat::Json)));
    check(&expect("async.folded"), &render_text(&trace, &opts(ViewFormat::Folded)));
    let chrome = render_text(&trace, &opts(ViewFormat::Chrome));
    check(&expect("async.chrome.json"), &chrome);
    let table = ViewOptions { sort: SortKey::Total, ..opts(ViewFormat::Table) };
    check(&expect("async.table.txt"), &render_text(&trace, &table));

    // The flamegraph marks cancelled and `Err` frames; the flame chart draws concurrent children side by side,
    // scaled to the span they covered, so `both` keeps its width and the time axis its length.
    let svg = String::from_utf8(render(&trace, &opts(ViewFormat::Svg)).unwrap().bytes).unwrap();
    let frames = svg_frames(&svg).0;
    let named = |name: &str| frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(named("slow [cancelled]").fill, "rgb(160,160,170)");
    assert_eq!(named("both [err]").fill, "rgb(70,130,210)");
    let chart = ViewOptions { flamechart: true, invocation: Some(1), ..opts(ViewFormat::Svg) };
    let svg = String::from_utf8(render(&trace, &chart).unwrap().bytes).unwrap();
    let frames = svg_frames(&svg).0;
    let width = |name: &str| frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}")).width;
    let (both, left, right) = (width("both"), width("left"), width("right"));
    assert!((left + right - both).abs() < 0.2 && (left - right).abs() < 0.2, "{both} {left} {right}");
    assert!((both / width("run") - 30.0 / 44.1).abs() < 0.01, "{both} of {}", width("run"));

    // Self time is the duration less the union of the children: `both` is not 0 although its children add up
    // to twice its time.
    let both = &trace.invocations[0].root.children[0];
    assert!(both.children_overlap_ns() > 29_000_000 && both.self_ns() > 0, "{both:?}");
    // The folded stacks of the first invocation add up to its root's time (less the probes' compensated cost),
    // not to more: concurrent time is not counted twice.
    let first = ViewOptions { invocation: Some(1), ..opts(ViewFormat::Folded) };
    let folded = render_text(&trace, &first);
    let sum: u64 = folded.lines().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok()).sum();
    let root = trace.invocations[0].root.duration_ns;
    assert!(sum <= root && sum + 1_000 >= root, "{sum} vs {root}:\n{folded}");
    // No two slices of one track cross: each is nested in or disjoint from the others.
    let json: serde_json::Value = serde_json::from_str(&chrome).unwrap();
    let mut by_tid: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for e in json["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        by_tid.entry(e["tid"].as_u64().unwrap()).or_default().push((ts, ts + dur));
    }
    for slices in by_tid.values() {
        for a in slices {
            for b in slices {
                let crosses = a.0 < b.0 && b.0 < a.1 && a.1 < b.1;
                assert!(!crosses, "{a:?} and {b:?} cross in {chrome}");
            }
        }
    }
}

// ---- folded invocations (trace format 2) ----

/// folded.trace: invocation 1 folded into call paths on thread 1 (an estimated path of 441070 calls with the panic
/// flag, under it another estimated path; exact multi-call paths), invocation 2 recorded per call (`n` lines),
/// invocation 3 a folded root of another function on a task with every call timed and a truncation count.
#[test]
fn folded_trace_views_match_expected_files() {
    let folded = load("folded");
    assert_eq!(folded.version, 2);
    assert_eq!(folded.settings.get("time_sample"), Some(&64));
    assert!(folded.warnings.is_empty(), "{:?}", folded.warnings);
    check(&expect("folded.txt"), &render_text(&folded, &ViewOptions::default()));
    // `--min-time` on folded nodes compares their (estimated) totals; the "(N more)" line keeps the `~`.
    let first = ViewOptions { invocation: Some(1), min_time_ns: Some(25_000_000), ..ViewOptions::default() };
    check(&expect("folded.invocation-1.min-time.txt"), &render_text(&folded, &first));
    check(&expect("folded.folded"), &render_text(&folded, &opts(ViewFormat::Folded)));
    check(&expect("folded.json"), &render_text(&folded, &opts(ViewFormat::Json)));
    check(&expect("folded.chrome.json"), &render_text(&folded, &opts(ViewFormat::Chrome)));
}

#[test]
fn folded_text_counts_calls_exactly_and_marks_estimates() {
    let text = render_text(&load("folded"), &ViewOptions::default());
    let line = |needle: &str| -> &str {
        text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle} in\n{text}"))
    };
    assert!(line("folded into call paths after 4096 calls").contains("sampled 1 in 64 (~ = estimated)"), "{text}");
    // decode: 441070 calls, 6892 of them timed; the total is scaled up from those.
    let decode = line("decode (min");
    assert!(decode.contains("~69.7ms") && decode.contains(" 441070  "), "{decode}");
    assert!(decode.contains("(min 13ns, mean ~158ns, max 280µs; 6892 timed) [panicked ≥1 of 441070]"), "{decode}");
    // header: 5000 calls, all timed: exact, no `~`.
    let header = line("parse::header");
    assert!(header.contains("(min 3.00µs, mean 4.00µs, max 9.00µs)") && !header.contains('~'), "{header}");
    // The root's self time is its time minus estimated children: an estimate too.
    assert!(line("db::Pool::query").contains("~10.3ms"), "{}", line("db::Pool::query"));
    // The all-timed folded invocation says so; its truncation note names call paths.
    assert!(text.contains("folded into call paths after 4096 calls (calls counted exactly, every call timed)"));
    assert!(text.contains("12 more calls were counted, not recorded (the cap counts call paths here)"), "{text}");
    // The aggregate over a folded and a per-call invocation: exact calls, no percentiles where calls were folded.
    assert!(text.contains("p50 and p99 are left out (-) where calls were recorded folded"), "{text}");
}

#[test]
fn folded_chrome_slices_nest_one_after_another_with_path_args() {
    let folded = load("folded");
    let text = render_text(&folded, &opts(ViewFormat::Chrome));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let slices: Vec<&serde_json::Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    let nodes: usize = folded.invocations.iter().map(|i| i.root.count()).sum();
    assert_eq!(slices.len(), nodes, "one slice per node");
    let first = &slices[..9];
    let span = |s: &serde_json::Value| {
        let ts = s["ts"].as_f64().unwrap();
        (ts, ts + s["dur"].as_f64().unwrap())
    };
    // Root (1000ns), then parse_request from the root's start, then query right after parse_request's 30ms.
    assert_eq!(span(first[0]), (1.0, 136_001.0));
    assert_eq!(span(first[1]), (1.0, 30_001.0));
    assert_eq!(span(first[2]), (1.0, 20_001.0));
    assert_eq!(first[3]["name"], "db::Pool::query");
    assert_eq!(span(first[3]), (30_001.0, 110_001.0));
    assert_eq!(first[4]["args"]["calls"], 441_070);
    assert_eq!(first[4]["args"]["timed"], 6892);
    assert_eq!((first[4]["args"]["min_ns"].as_u64(), first[4]["args"]["max_ns"].as_u64()), (Some(13), Some(280_000)));
    assert_eq!(
        (first[4]["args"]["estimated"].as_bool(), first[4]["args"]["panicked"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(first[2]["args"]["estimated"], false);
    // Every child lies inside its parent and after its previous sibling: no overlaps.
    let depth_of = [0, 1, 2, 1, 2, 3, 1, 2, 1];
    let mut open: Vec<(f64, f64)> = Vec::new();
    let mut previous_end = [f64::MIN; 4];
    for (slice, &depth) in first.iter().zip(&depth_of) {
        open.truncate(depth);
        let (start, end) = span(slice);
        if let Some(&(parent_start, parent_end)) = open.last() {
            assert!(parent_start <= start && end <= parent_end, "{slice} outside its parent");
        }
        assert!(start >= previous_end[depth], "{slice} overlaps its previous sibling");
        previous_end[depth] = end;
        previous_end[depth + 1..].iter_mut().for_each(|e| *e = f64::MIN);
        open.push((start, end));
    }
    // The per-call invocation keeps its recorded times and has no path args.
    assert_eq!(span(slices[9]), (140_000.0, 140_050.0));
    assert!(slices[9]["args"]["calls"].is_null());
}

#[test]
fn folded_flame_chart_lays_paths_out_one_after_another() {
    let folded = load("folded");
    let chart = ViewOptions { flamechart: true, invocation: Some(1), ..opts(ViewFormat::Svg) };
    let svg = String::from_utf8(render(&folded, &chart).unwrap().bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    assert!(texts[1].starts_with("flame chart (folded: call paths one after another, not in time order)"), "{texts:?}");
    let x = |name: &str| frames.iter().find(|f| f.name() == name).unwrap_or_else(|| panic!("no {name}")).x;
    assert!(x("parse::parse_request") < x("db::Pool::query"));
    assert!(x("db::Pool::query") < x("render::render"));
    // A folded path is one frame, however many calls it holds.
    assert_eq!(frames.iter().filter(|f| f.name().starts_with("<db::Row as codec::Decode>::decode")).count(), 1);
    // The per-call invocation keeps its time order.
    let chart = ViewOptions { flamechart: true, invocation: Some(2), ..opts(ViewFormat::Svg) };
    let svg = String::from_utf8(render(&folded, &chart).unwrap().bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    assert!(texts[1].starts_with("flame chart (time runs left to right)"), "{texts:?}");
    assert_eq!(frames.iter().filter(|f| f.name().starts_with("<db::Row as codec::Decode>::decode")).count(), 2);
}

/// Purple: the frames of calls that panicked.
const PANICKED: &str = "rgb(150,60,200)";

/// Every frame shows its whole name, its start and `..` (3 characters at least), or nothing: never `..m`.
fn labels_are_whole_or_readable(frames: &[Frame]) {
    for frame in frames {
        let label = frame.label.as_str();
        let shown = label.is_empty()
            || label == frame.name()
            || label
                .strip_suffix("..")
                .is_some_and(|start| start.chars().count() >= 3 && frame.name().starts_with(start));
        assert!(shown, "label {label:?} of {frame:?}");
    }
    // Wide frames show their whole name: 7.08 px a character at 1180 px for the whole width.
    for frame in frames.iter().filter(|f| f.width / 100.0 * 1180.0 > 7.08 * (f.name().chars().count() + 1) as f64) {
        assert_eq!(frame.label, frame.name(), "{frame:?}");
    }
}

#[test]
fn json_schema_has_the_documented_fields() {
    let text = render_text(&load("many"), &opts(ViewFormat::Json));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["version"], 3);
    assert_eq!(doc["root"], "demo::server::handle");
    let fields = ["path", "display", "file", "line", "calls", "total_ns", "self_ns", "min_ns", "max_ns", "panicked"];
    let inv = &doc["invocations"][0];
    for key in ["thread", "start_ns", "duration_ns", "tree"] {
        assert!(!inv[key].is_null(), "invocation has {key}");
    }
    for key in fields.iter().chain(&["children"]) {
        assert!(!inv["tree"][key].is_null(), "node has {key}");
        assert!(!doc["aggregate"][0]["tree"][key].is_null(), "aggregate node has {key}");
    }
    for key in ["calls_per_invocation", "mean_ns", "p50_ns", "p99_ns"] {
        assert!(!doc["aggregate"][0]["tree"][key].is_null(), "aggregate node has {key}");
    }
    assert_eq!(doc["stats"]["dropped"], 5);
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("cut off")));
    // docs/json.md names every field the JSON has (a folded trace's too).
    let docs = std::fs::read_to_string(util::repo_root().join("docs/json.md")).unwrap();
    let mut keys = BTreeSet::new();
    util::collect_keys(&doc, &mut keys);
    for other in ["folded", "service"] {
        let json = render_text(&load(other), &opts(ViewFormat::Json));
        util::collect_keys(&serde_json::from_str(&json).unwrap(), &mut keys);
    }
    for key in keys {
        assert!(docs.contains(&format!("`{key}`")), "docs/json.md does not describe `{key}`");
    }
}

#[test]
fn bad_view_requests_are_one_line_errors_with_hints() {
    let many = load("many");
    let missing = ViewOptions { invocation: Some(99), ..ViewOptions::default() };
    let err = render(&many, &missing).unwrap_err();
    let hints = cargo_calltime::error::hints_of(&err);
    assert!(err.to_string().contains("invocation 99 does not exist"), "{err}");
    assert!(hints.len() == 1 && hints[0].starts_with("the trace holds 21 invocations"), "{hints:?}");
    let empty = Trace::default();
    let err = render(&empty, &opts(ViewFormat::Svg)).unwrap_err();
    assert!(err.to_string().contains("no complete invocation"), "{err}");
    assert_eq!(cargo_calltime::error::hints_of(&err).len(), 1, "{err}");
    // Text of an empty trace still says what happened.
    let text = render_text(&empty, &ViewOptions::default());
    assert!(text.contains("no complete invocation was recorded"), "{text}");
}

// ---- `--slower-than` ----

#[test]
fn slower_than_keeps_only_slow_invocations_in_every_view() {
    let many = load("many");
    let slow = |format| ViewOptions { slower_than_ns: Some(200_000), ..opts(format) };
    // The same trace with only the invocations over 200µs, built by hand: every view must match it.
    let by_hand = Trace {
        invocations: many.invocations.iter().filter(|i| i.duration_ns > 200_000).cloned().collect(),
        ..many.clone()
    };
    assert_eq!(by_hand.invocations.len(), 5);
    // Text and table: the summary under the title says how many were kept of how many.
    let text = render_text(&many, &slow(ViewFormat::Text));
    check(&expect("many.slower-than-200us.txt"), &text);
    assert_eq!(text.lines().nth(1), Some("only invocations slower than 200µs: 5 of 21 kept"));
    let table = render_text(&many, &ViewOptions { sort: SortKey::Total, ..slow(ViewFormat::Table) });
    check(&expect("many.slower-than-200us.table.txt"), &table);
    assert!(table.contains("only invocations slower than 200µs: 5 of 21 kept"), "{table}");
    // Folded and Chrome have no place for it (the commands print it on stderr): their data matches.
    for format in [ViewFormat::Folded, ViewFormat::Chrome] {
        assert_eq!(render_text(&many, &slow(format)), render_text(&by_hand, &opts(format)), "{format:?}");
    }
    // JSON: the invocations kept, and a `slower_than` field.
    let json: serde_json::Value = serde_json::from_str(&render_text(&many, &slow(ViewFormat::Json))).unwrap();
    assert_eq!(json["invocations"].as_array().unwrap().len(), 5);
    assert_eq!(json["slower_than"], serde_json::json!({ "slower_than_ns": 200_000, "kept": 5, "of": 21 }));
    assert!(json["invocations"].as_array().unwrap().iter().all(|i| i["duration_ns"].as_u64().unwrap() > 200_000));
    let unfiltered: serde_json::Value = serde_json::from_str(&render_text(&many, &opts(ViewFormat::Json))).unwrap();
    assert!(unfiltered["slower_than"].is_null());
    // SVG: in the subtitle, and the widths of the kept invocations only.
    let svg = String::from_utf8(render(&many, &slow(ViewFormat::Svg)).unwrap().bytes).unwrap();
    let (frames, texts) = svg_frames(&svg);
    assert!(texts[1].ends_with(" · only invocations slower than 200µs: 5 of 21 kept"), "{texts:?}");
    let (all, _) = svg_frames(&String::from_utf8(render(&by_hand, &opts(ViewFormat::Svg)).unwrap().bytes).unwrap());
    let titles = |frames: &[Frame]| frames.iter().map(|f| f.title.clone()).collect::<BTreeSet<_>>();
    assert_eq!(titles(&frames), titles(&all));
    // None slower: an error that says what the slowest took.
    let err = render(&many, &ViewOptions { slower_than_ns: Some(2_000_000), ..opts(ViewFormat::Text) }).unwrap_err();
    assert_eq!(err.to_string(), "none of the 21 invocations is slower than 2.00ms: the slowest took 1.04ms");
}

#[test]
fn report_says_how_many_invocations_slower_than_were_kept() {
    let trace = data("views/many.trace");
    let out = util::run(
        util::calltime().arg("report").arg(&trace).args(["--format", "folded", "--slower-than", "200us"]),
        true,
    );
    assert!(stderr(&out).contains("note: only invocations slower than 200µs: 5 of 21 kept"), "{}", stderr(&out));
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--slower-than", "fast"]), false);
    assert!(stderr(&out).starts_with("error: invalid --slower-than:"), "{}", stderr(&out));
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--sort", "calls"]), false);
    assert!(stderr(&out).contains("error: --sort orders the function table"), "{}", stderr(&out));
}

// ---- `cargo calltime report`, as a user runs it ----

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn report_renders_a_trace_file_with_its_warnings() {
    let trace = data("views/many.trace");
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--format", "folded"]), true);
    check(&expect("many.folded"), &stdout(&out));
    assert!(stderr(&out).contains("warning: 1 invocation record(s) were cut off"), "{}", stderr(&out));
    // Text to a pipe with NO_COLOR: no escape codes; `--color always` and CARGO_TERM_COLOR=always: colour.
    let out = util::run(util::calltime().arg("report").arg(&trace), true);
    assert!(!stdout(&out).contains('\x1b') && stdout(&out).contains("aggregate of 20 invocations"));
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--color", "always"]), true);
    assert!(stdout(&out).contains("\x1b["), "{}", stdout(&out));
    let out = util::run(
        util::calltime().arg("report").arg(&trace).env_remove("NO_COLOR").env("CARGO_TERM_COLOR", "always"),
        true,
    );
    assert!(stdout(&out).contains("\x1b["), "{}", stdout(&out));
}

#[test]
fn report_writes_files_and_never_svg_to_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let trace = data("views/nested.trace");
    let out_svg = dir.path().join("out/graph.svg");
    // A missing directory is an error that names it (issue 16: it was created silently); nothing is written.
    let report_svg = |out_svg: &Path, ok| {
        util::run(util::calltime().arg("report").arg(&trace).args(["--format", "svg", "-o"]).arg(out_svg), ok)
    };
    let out = report_svg(&out_svg, false);
    let missing = dir.path().join("out");
    assert_eq!(
        stderr(&out),
        format!(
            "error: cannot write -o {}: {} does not exist\n  hint: create it first (`mkdir -p {}`), or pass a path \
             in an existing directory\n",
            out_svg.display(),
            missing.display(),
            missing.display()
        )
    );
    assert!(!missing.exists());
    // diff's -o follows the same rule, and a file where the directory should be is named as such.
    let diff = util::run(util::calltime().arg("diff").arg(&trace).arg(&trace).arg("-o").arg(&out_svg), false);
    assert!(stderr(&diff).starts_with(&format!("error: cannot write -o {}: ", out_svg.display())), "{}", stderr(&diff));
    std::fs::write(&missing, "").unwrap();
    let out = report_svg(&out_svg, false);
    assert!(stderr(&out).contains(&format!("{} is not a directory", missing.display())), "{}", stderr(&out));
    std::fs::remove_file(&missing).unwrap();
    std::fs::create_dir(&missing).unwrap();
    let out = report_svg(&out_svg, true);
    assert!(stdout(&out).is_empty());
    assert!(std::fs::read_to_string(&out_svg).unwrap().starts_with("<?xml"));
    // `-o -` is stdout, for any format.
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--format", "json", "-o", "-"]), true);
    check(&expect("nested.json"), &stdout(&out));
    // Outside any workspace an SVG without -o goes to stdout like every format (issue 16: it used to go beside
    // the trace).
    let copy = dir.path().join("saved.trace");
    std::fs::copy(&trace, &copy).unwrap();
    std::fs::copy(data("views/nested.trace.functions.json"), dir.path().join("saved.trace.functions.json")).unwrap();
    let out =
        util::run(util::calltime().current_dir(dir.path()).args(["report", "saved.trace", "--format", "svg"]), true);
    assert!(stdout(&out).starts_with("<?xml"), "{}", stdout(&out));
    assert!(!dir.path().join("saved.svg").exists(), "{}", stderr(&out));
}

fn tiny_workspace(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("Cargo.toml"), "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
        .unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    ws
}

#[test]
fn report_finds_the_last_run_and_says_what_to_do_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    // No workspace, no trace given.
    let out = util::run(util::calltime().current_dir(dir.path()).arg("report"), false);
    assert!(stderr(&out).contains("cannot find the last run's trace"), "{}", stderr(&out));
    assert!(stderr(&out).contains("hint: pass a trace file"), "{}", stderr(&out));
    // A workspace that never ran.
    let ws = tiny_workspace(dir.path());
    let out = util::run(util::calltime().current_dir(&ws).arg("report"), false);
    assert!(stderr(&out).contains("no trace from a previous run"), "{}", stderr(&out));
    assert!(stderr(&out).contains("hint: run `cargo calltime --root"), "{}", stderr(&out));
    // After a run: <target>/calltime/last.trace with its table beside it.
    let calltime_dir = ws.join("target/calltime");
    std::fs::create_dir_all(&calltime_dir).unwrap();
    std::fs::copy(data("views/nested.trace"), calltime_dir.join("last.trace")).unwrap();
    std::fs::copy(data("views/demo.functions.json"), calltime_dir.join("last.trace.functions.json")).unwrap();
    let out = util::run(util::calltime().current_dir(&ws).arg("report"), true);
    check(&expect("nested.txt"), &stdout(&out));
    // Every format goes to stdout without `-o`, an SVG too (issue 16: it used to go to flamegraph.svg).
    let out = util::run(util::calltime().current_dir(&ws).args(["report", "--format", "svg"]), true);
    assert!(stdout(&out).starts_with("<?xml"), "{}", stdout(&out));
    assert!(!calltime_dir.join("flamegraph.svg").exists());
}

#[test]
fn report_honours_a_functions_table_and_rejects_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let table = std::fs::read_to_string(data("views/demo.functions.json")).unwrap();
    let renamed = table.replace("\"display\": \"db::Pool::query\"", "\"display\": \"Pool::query_renamed\"");
    let other = dir.path().join("other.json");
    std::fs::write(&other, renamed).unwrap();
    let trace = data("views/nested.trace");
    let out = util::run(util::calltime().arg("report").arg(&trace).arg("--functions").arg(&other), true);
    assert!(stdout(&out).contains("Pool::query_renamed"), "{}", stdout(&out));
    let out = util::run(util::calltime().arg("report").arg(&trace).arg("--flamechart"), false);
    assert!(stderr(&out).contains("hint: add `--format svg`"), "{}", stderr(&out));
    let out = util::run(util::calltime().arg("report").arg(&trace).args(["--min-time", "5 parsecs"]), false);
    assert!(stderr(&out).contains("invalid --min-time"), "{}", stderr(&out));
    let out = util::run(util::calltime().arg("report").arg(dir.path().join("nope.trace")), false);
    assert!(stderr(&out).contains("cannot read trace"), "{}", stderr(&out));
}

#[test]
fn deep_recursion_stays_readable_and_bounded() {
    // One recursive function, 2000 calls deep: 2ns of self time per level.
    let depth = 2000u64;
    let mut text = String::from("calltime-trace 1\nprocess 1 0 /x/deep\nplan p\n");
    text.push_str(&format!("inv 0 thread 1 0 {} {depth} 0 0 main\n", 2 * depth));
    for d in 0..depth {
        text.push_str(&format!("n {d} {} {d} {} 0\n", u64::from(d > 0), 2 * depth - 2 * d));
    }
    text.push_str("end 0\nstats 1 1 0 0 0\n");
    let trace = cargo_calltime::trace::parse(&text).unwrap();
    let rendered = cargo_calltime::views::with_big_stack(|| {
        [ViewFormat::Text, ViewFormat::Folded, ViewFormat::Json, ViewFormat::Svg]
            .map(|format| render(&trace, &opts(format)).unwrap().bytes)
    });
    let [text, folded, json, svg] = rendered.map(|b| String::from_utf8(b).unwrap());
    // Indentation stops at 40 levels; deeper lines say their depth.
    assert!(text.contains("[depth 41] └─ #1") && text.contains("[depth 1999] └─ #1"), "{}", &text[..2000]);
    assert!(text.lines().all(|l| l.chars().count() < 200));
    // Stacks stop at 512 frames; the rest of the time is one "(deeper calls)" frame, so nothing is lost.
    let deeper = folded.lines().filter(|l| l.contains("(deeper calls)")).count();
    assert_eq!(deeper, 1);
    let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(total, 2 * depth);
    assert_eq!(folded.lines().count(), 513);
    // Deep JSON is written compact (pretty-printing would be quadratic in the depth), every level present.
    assert_eq!(json.lines().count(), 1);
    assert!(json.starts_with("{\"version\":3,"));
    assert_eq!(json.matches("\"children\":[").count() as u64, 2 * depth, "invocation tree + aggregate tree");
    assert!(svg_frames(&svg).0.iter().any(|f| f.name() == "(deeper calls)"));
}

/// A folded invocation whose children's estimates (600ns, 800ns, 2^64 - 1 ns) exceed their parent's 1000ns.
const OVERSHOOTING: &str = "calltime-trace 2\nprocess 1 0 /x/app\nplan p \nsettings fold_after=4096 time_sample=64\n\
                            inv 0 thread 1 0 1000 4 0 0 main\na 0 0 1 1 0 1000 1000 1000 0\n\
                            a 1 1 60 1 10 10 10 10 0\na 1 2 80 1 20 10 10 10 2\n\
                            a 1 3 18446744073709551615 1 30 18446744073709551615 1 1 0\n\
                            end 0\nstats 1 1 0 0 0\n";

#[test]
fn estimates_larger_than_their_parent_stay_inside_it() {
    let trace = cargo_calltime::trace::parse(OVERSHOOTING).unwrap();
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    // (No SVG here: inferno adds the counts of all stacks in a usize, which a 2^64 ns estimate overflows.)
    let rendered = [ViewFormat::Text, ViewFormat::Folded, ViewFormat::Json, ViewFormat::Chrome]
        .map(|format| render(&trace, &opts(format)).unwrap_or_else(|e| panic!("{format:?}: {e:#}")).bytes);
    let [text, _, _, chrome] = rendered.map(|b| String::from_utf8(b).unwrap());
    // Self time saturates at 0; the children are marked as estimates.
    let root = text.lines().find(|l| l.ends_with(" #0")).unwrap_or_else(|| panic!("{text}"));
    assert!(root.contains("~0ns"), "{text}");
    assert!(text.contains("~600ns") && text.contains("~800ns"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&chrome).unwrap();
    let slices: Vec<&serde_json::Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    let span =
        |s: &serde_json::Value| (s["ts"].as_f64().unwrap(), s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap());
    assert_eq!(span(slices[1]), (0.0, 0.6));
    // The second child starts after the first and is cut at the parent's end; its args keep the estimate.
    assert_eq!(span(slices[2]), (0.6, 1.0));
    assert_eq!(slices[2]["args"]["total_ns"], 800);
    assert_eq!(span(slices[3]), (1.0, 1.0));
    // Without the 2^64 ns child, the flamegraph and the flame chart draw the overshooting children.
    let mut two_children = trace.clone();
    two_children.invocations[0].root.children.retain(|child| child.func != 3);
    for options in [opts(ViewFormat::Svg), ViewOptions { flamechart: true, ..opts(ViewFormat::Svg) }] {
        let svg = String::from_utf8(render(&two_children, &options).unwrap().bytes).unwrap();
        let frames = svg_frames(&svg).0;
        // `#2` has the cancelled flag: its frame is marked.
        assert!(frames.iter().any(|f| f.name() == "#2 [cancelled]"), "{frames:?}");
    }
}

// ---- the fixture many.trace ----

/// many.trace is written by the trace builder (`UPDATE_EXPECT=1` rewrites it): 20 deterministic invocations of
/// demo's server::handle on two threads and two tasks, one of server::shutdown, one truncated tree, one with
/// filtered nodes, counters with sampling and drops, and a record cut off at the end (a crash while writing).
#[test]
fn many_trace_is_current() {
    check(&data("views/many.trace"), &many_trace());
}

fn many_trace() -> String {
    use cargo_calltime::trace::{Invocation, Node, Stats, ThreadKind, ThreadRef, TraceBuilder};
    let call = |func, start, duration, children| Node::call(func, start, duration, false, children);
    let header = Trace {
        version: 1,
        pid: 777,
        epoch_unix_ns: 1_700_000_000_000_000_000,
        exe: "/ws/demo/target/calltime/debug/demo".into(),
        plan_id: Some("3fa2c1d0".into()),
        table_hint: Some("/ws/demo/target/calltime/plan.functions.json".into()),
        ..Trace::default()
    };
    let mut builder = TraceBuilder::new(&header);
    let threads = [(ThreadKind::Thread, 1, "main"), (ThreadKind::Thread, 2, "worker-1"), (ThreadKind::Task, 7, "")];
    let threads = [threads[0], threads[1], threads[2], (ThreadKind::Task, 9, "")];
    let thread = |(kind, id, name): (ThreadKind, u64, &str)| ThreadRef { kind, id, name: name.into() };
    let mut t = 10_000;
    for seq in 0..20u64 {
        let start = t;
        // parse_request with 1..3 headers
        let parse_start = start + 1_000;
        let mut headers = Vec::new();
        let mut header_at = parse_start + 500;
        for h in 0..1 + seq % 3 {
            let duration = 20_000 + 1_000 * ((seq * 7 + h * 3) % 10);
            headers.push(call(2, header_at, duration, vec![]));
            header_at += duration + 300;
        }
        let parse_ns = header_at - parse_start + 2_000;
        let mut children = vec![call(1, parse_start, parse_ns, headers)];
        let mut at = parse_start + parse_ns + 1_000;
        // every third invocation queries the db (decode twice); the slow one is seq 9, the panicking one seq 12
        if seq % 3 == 0 {
            let (d1, d2) = (50_000 + 5_000 * (seq % 4), if seq == 9 { 900_000 } else { 60_000 });
            let decodes = vec![call(4, at + 2_000, d1, vec![]), Node::call(4, at + 4_000 + d1, d2, seq == 12, vec![])];
            children.push(call(3, at, d1 + d2 + 10_000, decodes));
            at += d1 + d2 + 10_000 + 1_000;
        }
        let respond_ns = 30_000 + 2_000 * seq;
        children.push(call(5, at, respond_ns, vec![call(7, at + 1_000, 5_000, vec![])]));
        at += respond_ns + 1_000;
        let mut inv = Invocation::new(seq, thread(threads[seq as usize % 4]), call(0, start, at - start, children));
        inv.truncated_calls = if seq == 5 { 250 } else { 0 };
        inv.filtered_nodes = if seq == 6 { 3 } else { 0 };
        builder.invocation(&inv);
        t = at + 5_000 + 1_000 * (seq % 5);
    }
    // one call of the second root
    builder.invocation(&Invocation::new(
        20,
        thread(threads[0]),
        call(8, t, 40_000, vec![call(6, t + 1_000, 3_000, vec![])]),
    ));
    builder.stats(&Stats { seen: 46, kept: 21, sampled_out: 20, dropped: 5, truncated: 1, ..Stats::default() });
    // A record torn by a crash: written up to the duration of its second node, then the newline of a text file.
    let torn = format!("n 1 1 {} 300", t + 51_000);
    let parse = call(1, t + 51_000, 300, vec![call(2, t + 51_100, 100, vec![])]);
    let root = call(0, t + 50_000, 90_000, vec![parse, call(5, t + 60_000, 1_000, vec![])]);
    builder.invocation(&Invocation::new(21, thread(threads[1]), root));
    let mut text = builder.into_text();
    let cut = text.rfind(&torn).expect("the torn node was written") + torn.len();
    text.truncate(cut);
    text.push('\n');
    text
}

#[test]
fn allocations_show_in_text_json_and_weighted_stacks() {
    // Two invocations with exact self allocations per node: 3 allocations of 1116 bytes per parse::header call,
    // 10,000 of 16 bytes in db::Pool::query, a root with one of its own.
    let trace = load("allocs");
    assert!(trace.counts_allocs());
    check(&expect("allocs.txt"), &render_text(&trace, &ViewOptions::default()));
    let json = render_text(&trace, &opts(ViewFormat::Json));
    check(&expect("allocs.json"), &json);
    let bytes = ViewOptions { weight: cargo_calltime::views::Weight::Bytes, ..opts(ViewFormat::Folded) };
    check(&expect("allocs.bytes.folded"), &render_text(&trace, &bytes));
    let allocs = ViewOptions { weight: cargo_calltime::views::Weight::Allocs, ..opts(ViewFormat::Folded) };
    check(&expect("allocs.allocs.folded"), &render_text(&trace, &allocs));
    // The flamegraph by bytes: frames as wide as their self bytes, titles in bytes.
    let svg =
        render_text(&trace, &ViewOptions { weight: cargo_calltime::views::Weight::Bytes, ..opts(ViewFormat::Svg) });
    assert!(svg.contains("self bytes allocated by call path"), "{svg}");
    assert!(svg.contains("db::Pool::query (312 KiB"), "{svg}");
    // A trace that counted nothing cannot be drawn by bytes.
    let nested = load("nested");
    assert!(!nested.counts_allocs());
    let opts_bytes = ViewOptions { weight: cargo_calltime::views::Weight::Bytes, ..opts(ViewFormat::Svg) };
    let err = render(&nested, &opts_bytes).expect_err("no allocations to draw");
    assert!(format!("{err:#}").contains("counted no allocations"), "{err:#}");
}

/// whole-run-estimates.trace: a whole-run aggregate (the runtime's `g` lines) in which an estimated path
/// (`<Row as Decode>::decode`, 400,000 calls, 1 in 64 timed) adds up to more than its estimated parent
/// (`parse::header`), as sampled estimates can on real programs (toml_edit's `Vec<Event>::whitespace` came out at 5x
/// its caller). The aggregate view and JSON clamp estimated children to their parent, as the trees are clamped. Its
/// hourly byte cap dropped 40 trees, which the aggregate view says, alone, and with them `parse::header`'s `retire`
/// record (httparse lost 10 of 18 that way). It counted allocations (`allocs=1`), which the whole-run aggregate
/// does not hold (a tokio server's `--format aggregate` showed 0 allocs/inv for a `respond` making 7 a call).
#[test]
fn whole_run_estimates_never_exceed_their_parent() {
    let trace = load("whole-run-estimates");
    let text = render_text(&trace, &opts(ViewFormat::Aggregate));
    check(&expect("whole-run-estimates.aggregate.txt"), &text);
    // Only the cause that applied: 40 trees dropped by the hourly cap, no "0 calls past the path cap" beside it.
    assert!(text.contains("40 trees dropped by the hourly byte cap") && !text.contains("path cap"), "{text}");
    // parse::header retired, but its `retire` record went with a dropped batch: its count after retiring is not
    // known (3 is what it counted before going quiet), and the view says so rather than showing 0.03/inv.
    assert!(text.contains("parse::header: calls after it retired not known") && text.contains("[+? after"), "{text}");
    // The run counted allocations, but the whole-run aggregate holds none: no columns of zeros that read as "none".
    assert!(!text.contains("allocs/inv"), "{text}");
    let json = render_text(&trace, &opts(ViewFormat::Json));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    fn fits(node: &serde_json::Value) {
        let children: u64 =
            node["children"].as_array().map_or(0, |c| c.iter().map(|c| c["total_ns"].as_u64().unwrap()).sum());
        assert!(children <= node["total_ns"].as_u64().unwrap(), "children exceed their parent: {node}");
        node["children"].as_array().into_iter().flatten().for_each(fits);
    }
    fits(&doc["whole_run"]["aggregate"][0]["tree"]);
    assert!(doc["whole_run"]["aggregate"][0]["tree"]["allocs"].is_null(), "no allocation counts in the whole run");
}

/// sampled.trace: a run whose root (`server::handle`, 10 invocations) was sampled for cost: 3 recorded (trees and
/// the runtime's whole-run aggregate), 7 not (a `sampled` record: all 7 timed, 14 us in all; `sampled_for_cost` in
/// `stats`, neither dropped nor sampled out). Every view says "recorded 3 of 10"; the root's mean is over all 10
/// ((12 + 14) us / 10); calls per invocation stay exact over the recorded 3; `--format aggregate` scales the run's
/// totals to the 10 and marks them `~`; the trace reads back and writes back as the runtime wrote it.
#[test]
fn a_run_sampled_for_cost_says_so_and_scales_the_whole_run() {
    let trace = load("sampled");
    assert_eq!((trace.stats.sampled_for_cost, trace.stats.dropped, trace.stats.sampled_out), (7, 0, 0));
    let text = render_text(&trace, &ViewOptions::default());
    check(&expect("sampled.txt"), &text);
    assert!(text.contains("recorded 3 of 10 invocations (sampled to keep the probes' cost under 5%)"), "{text}");
    assert!(text.contains("the root over all 10: mean 2.60µs"), "{text}");
    let whole = render_text(&trace, &opts(ViewFormat::Aggregate));
    check(&expect("sampled.aggregate.txt"), &whole);
    // The root's total is exact (12 us recorded + 14 us timed), its child's scaled from 3 invocations to 10.
    assert!(
        whole.contains("totals scaled to all of them (~)") && whole.contains("  26.0µs") && whole.contains("~23.3µs")
    );
    let table = render_text(&trace, &opts(ViewFormat::Table));
    assert!(table.contains("recorded 3 of 10 invocations"), "{table}");
    let json = render_text(&trace, &opts(ViewFormat::Json));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["sampled"][0]["skipped"], 7);
    assert_eq!(doc["stats"]["sampled_for_cost"], 7);
    let rendered = render(&trace, &opts(ViewFormat::Folded)).unwrap();
    assert!(rendered.note.as_deref().is_some_and(|n| n.contains("recorded 3 of 10")), "{:?}", rendered.note);
    let written = std::fs::read_to_string(data("views/sampled.trace")).unwrap();
    assert_eq!(cargo_calltime::trace::TraceBuilder::write(&trace), written);
}

/// sampled-timing.trace: sampled.trace as the runtime writes it since a thread's skipped invocations have their
/// root timed at random (1 in 16): 35 skipped, 3 of them timed (9 us), no root task (the `sampled` record's fifth
/// field). The root's count stays exact (38) and its mean over all of them is an estimate, marked `~` and said to be
/// from the 3 timed: (12 us recorded + 35 x 3 us) / 38; `--format aggregate`'s root total likewise (~117 us). An
/// older trace (sampled.trace, four fields) reads as before: its untimed skipped invocations were root tasks.
#[test]
fn a_mean_from_roots_timed_at_random_is_marked_as_an_estimate() {
    let trace = load("sampled-timing");
    let text = render_text(&trace, &ViewOptions::default());
    check(&expect("sampled-timing.txt"), &text);
    assert!(
        text.contains("the root over all 38: mean ~3.08µs (the skipped ones' from 3 of them timed at random)"),
        "{text}"
    );
    assert!(!text.contains("root tasks not timed"), "{text}");
    let whole = render_text(&trace, &opts(ViewFormat::Aggregate));
    check(&expect("sampled-timing.aggregate.txt"), &whole);
    assert!(whole.contains("  ~117µs"), "{whole}");
    let json = render_text(&trace, &opts(ViewFormat::Json));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((doc["sampled"][0]["timed"].as_u64(), doc["sampled"][0]["tasks"].as_u64()), (Some(3), Some(0)));
    let written = std::fs::read_to_string(data("views/sampled-timing.trace")).unwrap();
    assert_eq!(cargo_calltime::trace::TraceBuilder::write(&trace), written);
    let old = load("sampled");
    assert_eq!((old.sampled[0].tasks(), old.sampled[0].timing_sampled()), (0, false));
}

/// sampled-tasks.trace: sampled.trace with its 7 skipped roots untimed (`sampled 0 7 0 0`), as the runtime writes
/// for async roots (tasks; the hyper server of docs/performance.md): the root's mean is over the 3 recorded ones
/// and the header says so, not "over all 10" (it read "the root over all 16,000: mean 1.45µs, 14,250 root tasks
/// not timed").
#[test]
fn a_mean_over_the_timed_roots_says_it_is_not_over_all() {
    let text = render_text(&load("sampled-tasks"), &ViewOptions::default());
    check(&expect("sampled-tasks.txt"), &text);
    assert!(!text.contains("over all 10"), "{text}");
    assert!(text.contains("the root's mean over the 3 timed: 4.00µs (7 root tasks sampled for cost are not timed)"));
}

/// stale/: `run.trace` from this run (process 4242, two invocations, no rotation) beside `run.trace.s1`, a segment
/// an earlier, longer run (process 3131) rotated into and an older runtime left there (today's removes them at
/// start; the reader still guards against them, as a removal can fail). The segment is left out with a
/// warning naming it, not merged in as a second process of this run (httparse's reports mixed two runs that way).
#[test]
fn a_segment_left_by_an_earlier_run_is_left_out() {
    let trace = load("stale/run");
    assert_eq!((trace.invocations.len(), trace.stats.seen), (2, 2), "only this run's trees and counters");
    let warning = trace.warnings.iter().find(|w| w.contains("run.trace.s1")).expect("a warning names the segment");
    assert!(warning.contains("earlier run") && warning.contains("3131"), "{warning}");
    check(&expect("stale.txt"), &render_text(&trace, &ViewOptions::default()));
}

/// placed-retired.trace: `parse::header` is called 10 times by the one call of `parse::parse_request` and once by
/// the 10 calls of `render::render`; it retires after the first invocation, so the second (1 and 30 calls of its
/// callers) records none of its 13 calls (one `r` line). They go under its callers at the rate each called it
/// before it retired (10 and 3), not in proportion to the callers' calls (rhai put half of `Dynamic::clone`'s 684k
/// calls under a caller that made one), nor at rates diluted by the callers' calls after it retired (11 and 2).
#[test]
fn retired_calls_go_under_their_callers_at_each_callers_rate() {
    let trace = load("placed-retired");
    let text = render_text(&trace, &ViewOptions::default());
    check(&expect("placed-retired.txt"), &text);
    // The retired line names where the later calls went: a caller that first called it after it retired would not
    // be among them (petgraph's `FixedBitSet::visit`, recorded under `dijkstra` only, took `Dfs::next`'s calls).
    assert!(
        text.contains("later calls placed under parse::parse_request, render::render (where it was recorded before"),
        "{text}"
    );
}

/// sampled-quiet.trace: a root sampled for cost (3 of 7 invocations recorded, 4 timed only: 20 us) whose callee
/// `parse::header` retired before the first and went quiet after it: the second and third recorded ones hold 1,000
/// estimated quiet calls each, compensated at the calibrated 1 ns a quiet call (5 us -> 4 us). The skipped
/// invocations made those calls too (they are a random sample of the same invocations): their time is taken the
/// recorded ones' mean compensation (2/3 us each), so the root's mean over all 7 is (13 + 20 - 2.67) us / 7 = 4.33
/// us, not 4.71 us, a mean of compensated and raw times (raw, `--raw-times`: 5 us).
#[test]
fn the_roots_skipped_for_cost_are_compensated_as_the_recorded_ones_are() {
    let trace = load("sampled-quiet");
    let text = render_text(&trace, &ViewOptions { top: 0, ..ViewOptions::default() });
    check(&expect("sampled-quiet.txt"), &text);
    assert!(text.contains("the root over all 7: mean 4.33µs"), "{text}");
    let raw = render_text(&trace, &ViewOptions { top: 0, raw_times: true, ..ViewOptions::default() });
    assert!(raw.contains("the root over all 7: mean 5.00µs"), "{raw}");
}

/// recursive-placed.trace: test-crates/e2e-recursive's first invocation (`item` and `list` call each other 5
/// levels deep, 6 items a list, `digit` under the innermost items: 1, 1, 6, 6, 36, 36, 216, 216, 1,296, 1,296,
/// 7,776 and 7,776 calls by depth) folded, its cluster retired at the fold with 2,382 of its calls recorded (the
/// outer calls still open: 1 `list`, 2 `item`s at depth 2 of 6), and two invocations of counted calls only. The
/// counted calls go where the recorded shape and the callers' rates put them, not by each path's recorded calls
/// (that put `list ~5` under the one `item`, and 0.33 `list`s per invocation in the aggregate). The aggregate
/// says the paths were timed in one invocation of three, and that the root's mean is carried by that one.
#[test]
fn a_recursions_counted_calls_follow_its_recorded_shape() {
    let trace = load("recursive-placed");
    let text = render_text(&trace, &ViewOptions::default());
    check(&expect("recursive-placed.txt"), &text);
    // The aggregate's times of the cluster's paths are the first invocation's alone, and the JSON says so too.
    let json: serde_json::Value = serde_json::from_str(&render_text(&trace, &opts(ViewFormat::Json))).unwrap();
    let root = &json["aggregate"][0]["tree"];
    assert_eq!((root["calls"].as_u64(), root.get("timed_invocations")), (Some(3), None), "{root}");
    let item = &root["children"][0];
    assert_eq!((item["calls"].as_u64(), item["timed_invocations"].as_u64()), (Some(3), Some(1)), "{item}");
}

/// open-caller.trace: pulldown-cmark 0.13.6 rendering 6 MB of Markdown (`--root write_html_io --depth 5`, one
/// folded invocation). `Parser::next` retired after 848 calls under `HtmlWriter::run`, whose one call was open for
/// the whole run: its rate from before (848 per call) says nothing of its 758,600 calls after, nor of where its
/// callees' calls went. An `--exact` run of the same binary counts 755,707 `Parser::next` under `run`, 574,898
/// `item_to_event` and 232,590 `Tree::push` under that, 50,156 nested `Parser::next`, 616,732 `CowStr::deref`
/// under `run`: the placed counts must come near them, not 848, 637 and 257 with the rest under the nested
/// `Parser::next` (642,844 and 449,145), as before. `CowStr::deref` under `run` reads ~512,645 (~559,430 before the
/// callers' paths that ran on past its retirement at the fold counted only their calls before it in its rate,
/// branch cycleq: `HtmlWriter::start_tag`'s first 2,400 calls make more of it per call than the rest of the run).
#[test]
fn retired_calls_under_a_caller_open_when_they_retired_follow_the_recorded_calls() {
    let trace = load("open-caller");
    check(&expect("open-caller.txt"), &render_text(&trace, &ViewOptions::default()));
}

/// spine-recursion.trace: rhai 1.27 running fib(25) and loops (`--root Engine::run_ast --depth 5`, 3
/// invocations). The first folded; its cluster (`eval_stmt_block`, `eval_stmt`) retired at the fold with only the
/// first descent's calls recorded (one to five a path, 120 deep), so nothing says how the 546,848 counted calls
/// spread over the depths: they are shared by recorded calls, marked `~` (still rough: an `--exact` run has 42,001
/// and 20,001 at the first two depths). What this pins: `Dynamic::clone` under `Engine::new_global_runtime_state`,
/// whose one call ended before it retired, keeps the 1 its rate says (an `--exact` run: 1; before, ~764, a share
/// of what no rate explained), as does `Scope::new` under the root (1; before, ~671). In the later invocations
/// (counted calls only) `Dynamic::clone` waits for the `eval_stmt` the cluster's placing adds, its other caller:
/// ~1 under `new_global_runtime_state`, the rest under `eval_stmt` (before, all 684,471 under the one call).
#[test]
fn a_caller_whose_calls_ended_before_a_function_retired_keeps_its_rates_count() {
    let trace = load("spine-recursion");
    check(&expect("spine-recursion.txt"), &render_text(&trace, &ViewOptions::default()));
}

/// folded-caller.trace: the winnow arithmetic parser of scripts/unseen-crates-bench.sh (`ONLY=wn`, 2 documents of
/// 400 statements; `--root parse_document --depth 5`). The first invocation folded after 4,096 calls, a few
/// statements in, and its recursive cluster (`expr`, `term`, `factor` and winnow's combinators under them) retired
/// at the fold; the second counted its calls. `statement` calls `expr` once a call, and `factor` calls it for each
/// parenthesis (770 `expr` an invocation in all): the 8 calls of `statement` recorded before the fold made 8 of
/// `expr`, its 392 folded calls after made theirs counted. Its rate is 8 in 8, not 8 in the folded path's 400
/// (`~8` under `statement` an invocation before, the rest under `factor`'s parenthesis path).
#[test]
fn a_folded_callers_calls_after_the_fold_leave_its_rate_alone() {
    let trace = load("folded-caller");
    let text = render_text(&trace, &ViewOptions { top: 0, ..ViewOptions::default() });
    check(&expect("folded-caller.txt"), &text);
}

#[test]
fn names_keep_their_semicolons_except_in_folded_stacks() {
    // winnow's `impl<const LEN: usize> ContainsToken<char> for [char; LEN]`: the text view, the table and JSON show
    // the name as written; only folded stacks (and the flamegraphs drawn from them), where `;` separates frames,
    // write it with a `,`.
    let trace = load("punctuated-names");
    let text = render_text(&trace, &ViewOptions::default());
    let table = render_text(&trace, &opts(ViewFormat::Table));
    let folded = render_text(&trace, &opts(ViewFormat::Folded));
    check(&expect("punctuated-names.txt"), &format!("{text}\n-- table\n{table}\n-- folded\n{folded}"));
    assert!(text.contains("[char; LEN]") && table.contains("[char; LEN]"), "{text}\n{table}");
    assert!(!folded.contains("[char; LEN]") && folded.contains("[char, LEN]"), "{folded}");
}

/// unrecorded-parts.trace: two async invocations of `job`, each spawning two `checksum` tasks; one of the second's ran
/// unrecorded (no free recording buffer: async-executor's 2,000 jobs open at once left 1,300 of 8,000 subtasks
/// unrecorded). The aggregate showed `checksum [task]` at 1.50 calls an invocation with nothing saying why; the
/// summary now counts the unrecorded parts.
#[test]
fn spawned_work_that_ran_unrecorded_is_counted_in_the_summary() {
    let text = render_text(&load("unrecorded-parts"), &ViewOptions { top: 0, ..ViewOptions::default() });
    check(&expect("unrecorded-parts.txt"), &text);
    assert!(
        text.contains("1 of the 4 spawned parts of the kept invocations ran unrecorded (in 1 invocation"),
        "{text}"
    );
}

/// Paths of retired functions show a mean over every call: the recorded ones as timed, the later ones at the
/// `retire` record's estimate (placed-retired.trace: 10 recorded calls of 10 us, 10 later at 5 ns each, mean
/// 5.00 us). Their min and max take in that estimate (an estimated mean carries estimated extremes), and they have
/// no percentiles (the later calls have no durations; the recorded ones' p50 of 10 us read above the mean), so no
/// view shows a mean outside its own extremes: placement-check's "mean outside its extremes" (handlebars 225,
/// winnow 1,200 on main at f466696). folded-caller and open-caller are winnow and pulldown-cmark traces (rhai's
/// spine-recursion is deeper than serde_json reads).
#[test]
fn estimated_means_lie_within_their_extremes() {
    fn check_node(trace: &str, node: &serde_json::Value, bad: &mut Vec<String>) {
        let (mean, min, max) = (node["mean_ns"].as_u64(), node["min_ns"].as_u64(), node["max_ns"].as_u64());
        if let (Some(mean), Some(min), Some(max)) = (mean, min, max) {
            let timed = node["timed_calls"].as_u64().unwrap_or(0) > 0;
            if timed && !(min <= mean && mean <= max) {
                bad.push(format!("{trace}: {} mean {mean} outside {min}..{max}", node["display"]));
            }
            let p50 = node["p50_ns"].as_u64();
            if node["retired_calls"].as_u64().unwrap_or(0) > 0 && p50.is_some() {
                bad.push(format!("{trace}: {} has a p50 though some calls have no durations", node["display"]));
            }
        }
        node["children"].as_array().into_iter().flatten().for_each(|c| check_node(trace, c, bad));
    }
    let mut bad = Vec::new();
    for name in ["placed-retired", "recursive-placed", "folded-caller", "open-caller"] {
        let json = render_text(&load(name), &opts(ViewFormat::Json));
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let aggregates = doc["aggregate"].as_array().into_iter().flatten();
        let whole_run = doc["whole_run"]["aggregate"].as_array().into_iter().flatten();
        for agg in aggregates.chain(whole_run) {
            check_node(name, &agg["tree"], &mut bad);
        }
    }
    assert!(bad.is_empty(), "{} means outside their extremes, first: {:#?}", bad.len(), &bad[..bad.len().min(10)]);
    let text = render_text(&load("placed-retired"), &opts(ViewFormat::Aggregate));
    // The header path: 10 recorded calls of 10 us and 10 later ones at 5 ns.
    let row = text.lines().find(|l| l.contains("parse::header [+~5/inv")).expect("the header row");
    assert!(row.contains("~5.00µs       -       -  10.0µs"), "{row}");
}

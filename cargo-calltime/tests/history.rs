//! The run store and the charts across runs, from seven labelled runs recorded on different dates
//! (tests/data/history/runs.py): filters, provenance, call paths, retention, migrations, dirty runs on the chart,
//! and the store's safety with two writers at once and with a writer killed mid-write (child processes of this
//! test binary: see `writer_process`).

mod util;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use cargo_calltime::store::dates::{parse_date, DayEnd};
use cargo_calltime::store::{self, PathRow, RunFilter, RunRecord, Store};
use cargo_calltime::trace::Trace;
use cargo_calltime::views::chart;
use util::data;

/// (trace file name, label) of each run, from runs.txt.
fn manifest() -> Vec<(String, Option<String>)> {
    let text = std::fs::read_to_string(data("history/runs.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, label) = l.split_once(' ').unwrap();
            (file.to_owned(), (label != "-").then(|| label.to_owned()))
        })
        .collect()
}

fn record(file: &str, label: Option<String>) -> RunRecord {
    let trace = Trace::load(&data("history").join(file), None).unwrap();
    RunRecord { label, ..RunRecord::from_trace(&trace) }
}

/// A store in `dir` holding every run of the manifest; returns it and the run names by id.
fn filled_store(dir: &Path) -> (Store, Vec<(i64, String)>) {
    let mut store = Store::open(&dir.join("runs.sqlite")).unwrap();
    let mut names = Vec::new();
    for (file, label) in manifest() {
        let id = store.insert(&record(&file, label)).unwrap();
        names.push((id, Path::new(&file).file_stem().unwrap().to_string_lossy().into_owned()));
    }
    (store, names)
}

fn names_of(store: &Store, names: &[(i64, String)], filter: &RunFilter) -> Vec<String> {
    let runs = store.runs(filter).unwrap();
    runs.iter().map(|r| names.iter().find(|(id, _)| *id == r.id).unwrap().1.clone()).collect()
}

fn date(text: &str, end: DayEnd) -> Option<i64> {
    Some(parse_date(text, end).unwrap())
}

#[test]
fn filters_return_exactly_the_right_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, names) = filled_store(tmp.path());
    let label = |l: &str| Some(l.to_owned());
    let cases: Vec<(RunFilter, &[&str])> = vec![
        (RunFilter::default(), &["run-1", "run-2", "run-3", "run-4", "run-5", "run-6", "run-7"]),
        (RunFilter { label: label("main"), ..Default::default() }, &["run-1", "run-2", "run-4", "run-7"]),
        (RunFilter { label: label("pr-42"), ..Default::default() }, &["run-3", "run-5"]),
        (RunFilter { label: label("nobody"), ..Default::default() }, &[]),
        (
            RunFilter { since_ms: date("2026-03-03", DayEnd::Start), ..Default::default() },
            &["run-3", "run-4", "run-5", "run-6", "run-7"],
        ),
        // A date-only --until takes in its whole day: run-4 was recorded at 23:59:59.
        (
            RunFilter { until_ms: date("2026-03-04", DayEnd::End), ..Default::default() },
            &["run-1", "run-2", "run-3", "run-4"],
        ),
        (
            RunFilter {
                since_ms: date("2026-03-05", DayEnd::Start),
                until_ms: date("2026-03-05", DayEnd::End),
                ..Default::default()
            },
            &["run-5"],
        ),
        (
            RunFilter {
                since_ms: date("2026-03-04T23:59:59", DayEnd::Start),
                until_ms: date("2026-03-05T00:00", DayEnd::End),
                ..Default::default()
            },
            &["run-4", "run-5"],
        ),
        (RunFilter { root: label("server::shutdown"), ..Default::default() }, &["run-6", "run-7"]),
        (
            RunFilter { root: label("demo::server::handle"), ..Default::default() },
            &["run-1", "run-2", "run-3", "run-4", "run-5", "run-6"],
        ),
        // A root matches by whole path segments only.
        (RunFilter { root: label("er::handle"), ..Default::default() }, &[]),
        (RunFilter { label: label("main"), root: label("shutdown"), ..Default::default() }, &["run-7"]),
        (
            RunFilter { label: label("main"), since_ms: date("2026-03-02", DayEnd::Start), ..Default::default() },
            &["run-2", "run-4", "run-7"],
        ),
    ];
    for (filter, expected) in cases {
        assert_eq!(names_of(&store, &names, &filter), expected, "{filter:?}");
    }
}

#[test]
fn stored_runs_keep_provenance_stats_and_call_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, names) = filled_store(tmp.path());
    let id = |name: &str| names.iter().find(|(_, n)| n == name).unwrap().0;
    let run6 = store.run(id("run-6")).unwrap().unwrap();
    let expected = record("runs/run-6.trace", None);
    assert_eq!(run6.record.recorded_ms, parse_date("2026-03-06T12:00", DayEnd::Start).unwrap());
    assert_eq!(run6.record.roots, ["demo::server::handle", "demo::server::shutdown"]);
    assert_eq!((run6.record.depth, run6.record.filter.as_deref()), (3, Some("^demo::")));
    assert_eq!((run6.record.invocations, run6.record.seen), (7, 7));
    assert_eq!(run6.record.label, None);
    assert_eq!(run6.record.root_stats, expected.root_stats);
    let roots: Vec<(&str, u64)> = run6.record.root_stats.iter().map(|s| (s.root.as_str(), s.invocations)).collect();
    assert_eq!(roots, [("demo::server::handle", 5), ("demo::server::shutdown", 2)]);
    // handle -> parse_request -> header ×1..3 and render: 1 + 1 + (1+2+3+1+2)/5 + 1 calls per invocation.
    assert_eq!(run6.record.root_stats[0].calls_per_invocation, 4.8);
    let paths = store.path_stats(id("run-6")).unwrap();
    let mut expected_paths = expected.path_stats.clone();
    expected_paths.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(paths, expected_paths);
    let header: &PathRow =
        paths.iter().find(|p| p.path == "demo::server::handle;demo::parse::parse_request;demo::parse::header").unwrap();
    assert_eq!((header.calls, header.invocations), (9, 5));
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn retention_keeps_the_newest_traces_and_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let runs_dir = tmp.path().join("runs");
    let mut store = Store::open(&tmp.path().join("runs.sqlite")).unwrap();
    let mut ids = Vec::new();
    for (file, label) in manifest() {
        let source = data("history").join(&file);
        let mut run = record(&file, label);
        let kept = store::keep_trace_file(&runs_dir, &source, run.recorded_ms).unwrap();
        assert!(cargo_calltime::trace::functions_path_for(&kept).exists());
        run.trace_path = Some(kept);
        ids.push(store.insert(&run).unwrap());
    }
    let removed = store.retain_traces(2, &runs_dir).unwrap();
    assert_eq!(removed, ids[..5].iter().rev().copied().collect::<Vec<_>>());
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 7, "rows stay for history");
    let with_trace: Vec<i64> = runs.iter().filter(|r| r.record.trace_path.is_some()).map(|r| r.id).collect();
    assert_eq!(with_trace, ids[5..]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&runs_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut kept: Vec<PathBuf> = runs.iter().filter_map(|r| r.record.trace_path.clone()).collect();
    kept.extend(kept.clone().iter().map(|t| cargo_calltime::trace::functions_path_for(t)));
    kept.sort();
    assert_eq!(files, kept);
    // A kept trace still loads, with its table.
    let trace = Trace::load(&kept[0], None).unwrap();
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    assert!(store.delete(ids[6]).unwrap() && !store.delete(ids[6]).unwrap());
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 6);
}

#[test]
fn a_store_from_a_newer_tool_is_refused_with_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs.sqlite");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 1);
    conn.execute_batch("PRAGMA user_version = 99").unwrap();
    drop(conn);
    let err = Store::open(&path).err().expect("a newer schema is refused");
    assert!(format!("{err:#}").contains("schema version 99, newer than this cargo-calltime knows (1)"), "{err:#}");
    assert!(cargo_calltime::error::hints_of(&err)[0].contains("update cargo-calltime"));
}

#[test]
fn chart_has_one_point_per_run_with_dirty_runs_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, names) = filled_store(tmp.path());
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(store::roots_of(&runs), ["demo::server::handle", "demo::server::shutdown"]);
    let points = store::series(&runs, "demo::server::handle");
    let name = |id: i64| names.iter().find(|(i, _)| *i == id).unwrap().1.clone();
    let dirty: Vec<String> = points.iter().filter(|p| p.dirty.is_some()).map(|p| name(p.run_id)).collect();
    assert_eq!(points.len(), 6);
    assert_eq!(dirty, ["run-4"], "run-4 is three times slower than the others");
    let svg = chart::render_svg("demo::server::handle", &points).unwrap();
    util::check(&data("history/expected/chart.svg"), &svg);
    let doc = Marks(&svg);
    for (series, color) in [
        ("mean", chart::MEAN_COLOR),
        ("p50", chart::P50_COLOR),
        ("p99", chart::P99_COLOR),
        ("calls", chart::CALLS_COLOR),
    ] {
        assert_eq!(doc.circles(color), 6, "one {series} point per run");
    }
    // A dirty run is crossed out on both panels (two strokes each), plus the legend's cross.
    assert_eq!(doc.lines(chart::DIRTY_COLOR), 2 * 2 + 2);
    for p in &points {
        assert!(svg.contains(&format!("#{}", p.run_id)), "run {} is labelled on the x axis", p.run_id);
    }
}

/// Counts the chart's marks by colour (plotters writes `fill="#RRGGBB"` on circles, `stroke` on lines).
struct Marks<'a>(&'a str);

impl Marks<'_> {
    fn hex(color: plotters::style::RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2)
    }

    fn circles(&self, color: plotters::style::RGBColor) -> usize {
        let fill = format!("fill=\"{}\"", Self::hex(color));
        self.0.lines().filter(|l| l.trim_start().starts_with("<circle") && l.contains(&fill)).count()
    }

    fn lines(&self, color: plotters::style::RGBColor) -> usize {
        let stroke = format!("stroke=\"{}\"", Self::hex(color));
        self.0.lines().filter(|l| l.trim_start().starts_with("<line") && l.contains(&stroke)).count()
    }
}

/// Starts this test binary as a child process running [`writer_process`] on `store`.
fn spawn_writer(store: &Path, writes: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["writer_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("CALLTIME_TEST_STORE", store)
        .env("CALLTIME_TEST_WRITES", writes)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A run with many call paths, so that one write takes a while (a kill lands inside one).
fn big_record(n: usize) -> RunRecord {
    let mut run = record("runs/run-1.trace", Some(format!("writer-{}", std::process::id())));
    let template = run.path_stats[0].clone();
    run.recorded_ms += n as i64;
    run.path_stats = (0..2000)
        .map(|i| PathRow { path: format!("{};demo::path_{i:05}", template.path), ..template.clone() })
        .collect();
    run
}

/// Not a test: the child process of the concurrency tests. Inserts `CALLTIME_TEST_WRITES` runs (or runs until it
/// is killed, for `forever`) into the store at `CALLTIME_TEST_STORE`.
#[test]
#[ignore = "run as a child process by the store concurrency tests"]
fn writer_process() {
    let (Some(path), Some(writes)) =
        (std::env::var_os("CALLTIME_TEST_STORE"), std::env::var("CALLTIME_TEST_WRITES").ok())
    else {
        panic!("writer_process is run by the concurrency tests, with CALLTIME_TEST_STORE and CALLTIME_TEST_WRITES");
    };
    let mut store = Store::open(Path::new(&path)).unwrap();
    let limit = if writes == "forever" { usize::MAX } else { writes.parse().unwrap() };
    for n in 0..limit {
        store.insert(&big_record(n)).unwrap();
    }
}

/// Every run in the store is whole: its roots' stats and all of its call paths are there.
fn assert_whole(store: &Store) -> usize {
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let runs = store.runs(&RunFilter::default()).unwrap();
    for run in &runs {
        assert_eq!(run.record.root_stats.len(), 1, "run {}", run.id);
        assert_eq!(store.path_stats(run.id).unwrap().len(), 2000, "run {}", run.id);
    }
    runs.len()
}

#[test]
fn two_writers_at_once_both_land_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs.sqlite");
    let writers = [spawn_writer(&path, "15"), spawn_writer(&path, "15")];
    for mut writer in writers {
        assert!(writer.wait().unwrap().success(), "a writer failed (busy store?)");
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(assert_whole(&store), 30);
    let labels: std::collections::BTreeSet<Option<String>> =
        store.runs(&RunFilter::default()).unwrap().into_iter().map(|r| r.record.label).collect();
    assert_eq!(labels.len(), 2, "both writers' runs are there");
}

#[test]
fn a_writer_killed_mid_write_leaves_a_readable_store() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs.sqlite");
    for round in 0..3 {
        let mut writer = spawn_writer(&path, "forever");
        // Let it commit a few runs, then kill it (SIGKILL) in the middle of its loop: almost all of its time is
        // spent inside a write transaction.
        let started = Instant::now();
        loop {
            let count = Store::open(&path).ok().and_then(|s| s.runs(&RunFilter::default()).ok()).map_or(0, |r| r.len());
            if count >= 3 * (round + 1) || started.elapsed() > Duration::from_secs(60) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(7 * (round as u64 + 1)));
        writer.kill().unwrap();
        writer.wait().unwrap();
        let mut store = Store::open(&path).unwrap();
        let before = assert_whole(&store);
        assert!(before >= 3 * (round + 1), "the writer committed runs before it was killed");
        // And the store still takes writes.
        store.insert(&big_record(0)).unwrap();
        assert_eq!(assert_whole(&store), before + 1);
    }
}

#[test]
fn listing_shows_each_run_and_root_with_dirty_runs_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, _) = filled_store(tmp.path());
    let runs = store.runs(&RunFilter::default()).unwrap();
    util::check(&data("history/expected/listing.txt"), &cargo_calltime::views::history::render(&runs));
    let main = store.runs(&RunFilter { label: Some("main".into()), ..Default::default() }).unwrap();
    util::check(&data("history/expected/listing-main.txt"), &cargo_calltime::views::history::render(&main));
}

#[test]
fn recorded_runs_are_found_by_label_and_id_until_retention_drops_their_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let calltime_dir = tmp.path().join("target/calltime");
    let mut ids = Vec::new();
    for (file, label) in manifest() {
        let source = data("history").join(&file);
        let trace = Trace::load(&source, None).unwrap();
        let opts = store::StoreOptions { label, source: store::Source::Import, keep: 3, workspace_root: None };
        let recorded = store::record_run(&calltime_dir, &trace, &source, &opts).unwrap();
        assert!(recorded.trace_path.starts_with(store::runs_dir(&calltime_dir)));
        ids.push(recorded.id);
    }
    let store = Store::open(&store::store_path(&calltime_dir)).unwrap();
    let main = store::Selector::parse("@label:main").unwrap().unwrap();
    assert_eq!(main.runs(&store).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [ids[0], ids[1], ids[3], ids[6]]);
    // Only the newest three runs (5, 6, 7) keep their traces: run 4 of `main` lost its.
    let err = main.trace_files(&store).unwrap_err();
    assert!(err.to_string().contains(&format!("#{}, #{}, #{}", ids[0], ids[1], ids[3])), "{err:#}");
    assert!(cargo_calltime::error::hints_of(&err)[0].contains("--keep N"));
    let pr = store::Selector::parse("@label:pr-42").unwrap().unwrap();
    assert!(pr.trace_files(&store).is_err(), "run 3 of pr-42 lost its trace");
    let last = store::Selector::parse(&format!("@run:{}", ids[6])).unwrap().unwrap();
    let files = last.trace_files(&store).unwrap();
    let trace = Trace::load(&files[0], None).unwrap();
    assert_eq!((trace.invocations.len(), trace.warnings.len()), (2, 0));
    assert_eq!(store.run(ids[6]).unwrap().unwrap().record.source, store::Source::Import);
    let err = store::Selector::parse("@run:999").unwrap().unwrap().runs(&store).unwrap_err();
    assert!(err.to_string().starts_with("no stored run has id 999"), "{err:#}");
}

/// Two functions sharing a path (one function under two `#[cfg]`s; two impls the table names alike) are two
/// call paths in the store, not a UNIQUE constraint failure: each key is made unique by location, then index.
#[test]
fn functions_sharing_a_path_are_stored_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("runs.sqlite")).unwrap();
    let id = store.insert(&record("shared-paths.trace", None)).unwrap();
    let rows: Vec<String> = store
        .path_stats(id)
        .unwrap()
        .iter()
        .map(|p| format!("{} calls {} total {}", p.path, p.calls, p.total_ns))
        .collect();
    util::check(&data("history/expected/shared-paths.txt"), &(rows.join("\n") + "\n"));
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

//! The HTML report (`report --format html`): what the page holds, that it loads nothing from the network, and, in a
//! real headless Chromium, that it loads without console errors, that its table sorts and its trees collapse.
//! Set `CALLTIME_SCREENSHOT=FILE.png` to keep a screenshot of the page (docs/img/report.png is made this way).

mod browser;
mod util;

use std::path::{Path, PathBuf};

use cargo_calltime::store::{self, RunFilter, RunRecord, Store};
use cargo_calltime::trace::Trace;
use cargo_calltime::views::html::{self, HtmlOptions};
use serde_json::{json, Value};
use util::data;

fn load(rel: &str) -> Trace {
    Trace::load(&data(rel), None).unwrap()
}

/// The history of tests/data/history: every run of runs.txt in a store, as series per root.
fn history(dir: &Path) -> Vec<(String, Vec<store::SeriesPoint>)> {
    let mut store = Store::open(&dir.join("runs.sqlite")).unwrap();
    let manifest = std::fs::read_to_string(data("history/runs.txt")).unwrap();
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let (file, label) = line.split_once(' ').unwrap();
        let trace = Trace::load(&data("history").join(file), None).unwrap();
        let label = (label != "-").then(|| label.to_owned());
        store.insert(&RunRecord { label, ..RunRecord::from_trace(&trace) }).unwrap();
    }
    let runs = store.runs(&RunFilter::default()).unwrap();
    store::roots_of(&runs).into_iter().map(|root| (root.clone(), store::series(&runs, &root))).collect()
}

/// The report of run-6 (two roots) with the history of all seven runs, written to `dir/report.html`.
fn report_with_history(dir: &Path) -> (String, PathBuf) {
    let page = html::render(&load("history/runs/run-6.trace"), &HtmlOptions { top: 3, history: history(dir) }).unwrap();
    let file = dir.join("report.html");
    std::fs::write(&file, &page).unwrap();
    (page, file)
}

#[test]
fn report_holds_every_part_and_loads_nothing_from_the_network() {
    let tmp = tempfile::tempdir().unwrap();
    let (page, _) = report_with_history(tmp.path());
    for part in ["id=\"summary\"", "id=\"slowest\"", "id=\"flamegraph\"", "id=\"functions-table\"", "id=\"history\""] {
        assert!(page.contains(part), "the page has {part}");
    }
    // Three slowest invocations, each a tree.
    assert_eq!(page.matches("<div class=\"tree\"").count(), 3);
    // One chart per root across runs; the dirty run is named in its table.
    assert_eq!(page.matches("<div class=\"chart\"><svg").count(), 2);
    assert!(page.contains("<tr class=\"dirty\"><td>#4</td>"));
    // Nothing to fetch: no links, sources or imports to other places (SVG namespaces are names, not loads).
    for needle in ["src=\"http", "href=\"http", "<link", "@import", "url(http", "src=\"//", "fetch(", "XMLHttpRequest"]
    {
        assert!(!page.contains(needle), "the page refers to the network: {needle}");
    }
    // Without history there is no history section.
    let plain = html::render(&load("views/many.trace"), &HtmlOptions { top: 5, history: Vec::new() }).unwrap();
    assert!(!plain.contains("id=\"history\"") && plain.contains("id=\"functions-table\""));
}

#[test]
fn function_table_counts_calls_self_and_total_per_function() {
    let tmp = tempfile::tempdir().unwrap();
    let (page, _) = report_with_history(tmp.path());
    let row = |name: &str| -> Vec<String> {
        let start = page.find(&format!("<tr><td data-key=\"name\" data-v=\"{name}\"")).unwrap();
        let row = &page[start..start + page[start..].find("</tr>").unwrap()];
        row.split("data-v=\"").skip(1).map(|v| v[..v.find('"').unwrap()].to_owned()).collect()
    };
    // name, total, self, self share, calls, self per call; header: 9 calls over 5 invocations (runs.py).
    let header = row("parse::header");
    assert_eq!(header[4], "9");
    let trace = load("history/runs/run-6.trace");
    let header_ns: u64 = trace
        .invocations
        .iter()
        .filter(|inv| inv.root.func == 0)
        .flat_map(|inv| &inv.root.children[..1])
        .flat_map(|parse| &parse.children)
        .map(|n| n.duration_ns)
        .sum();
    assert_eq!((header[1].parse::<u64>().unwrap(), header[2].parse::<u64>().unwrap()), (header_ns, header_ns));
    let handle = row("server::handle");
    let handle_ns: u64 = trace.invocations.iter().filter(|i| i.root.func == 0).map(|i| i.duration_ns).sum();
    assert_eq!((handle[1].parse::<u64>().unwrap(), handle[4].as_str()), (handle_ns, "5"));
}

/// The `data-v` values of one column, in the order the rows are shown.
fn column(browser: &browser::Browser, key: &str) -> Vec<String> {
    let script = "return Array.from(document.querySelectorAll('#functions-table tbody td[data-key=\"' + arguments[0] + '\"]')).map(td => td.getAttribute('data-v'));";
    let values = browser.execute(script, vec![json!(key)]);
    values.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

fn numbers(values: &[String]) -> Vec<f64> {
    values.iter().map(|v| v.parse().unwrap()).collect()
}

fn sort_by(browser: &browser::Browser, key: &str) -> String {
    let th = browser.find(&format!("#functions-table th[data-key=\"{key}\"]"));
    browser.click(&th);
    browser.execute("return arguments[0].getAttribute('aria-sort');", vec![th]).as_str().unwrap_or("").to_owned()
}

#[test]
fn report_works_in_headless_chromium() {
    let Some(browser) = browser::Browser::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = report_with_history(tmp.path());
    browser.open(&file);
    let errors: Vec<(String, String)> =
        browser.console().into_iter().filter(|(level, _)| level == "SEVERE" || level == "WARNING").collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // Sorting: numbers largest first on the first click, then smallest first; names A to Z first.
    for key in ["calls", "self", "total"] {
        assert_eq!(sort_by(&browser, key), "descending");
        let shown = numbers(&column(&browser, key));
        let mut expected = shown.clone();
        expected.sort_by(|a, b| b.partial_cmp(a).unwrap());
        assert_eq!(shown, expected, "sorted by {key}, descending");
        assert_eq!(sort_by(&browser, key), "ascending");
        let shown = numbers(&column(&browser, key));
        expected.reverse();
        assert_eq!(shown, expected, "sorted by {key}, ascending");
    }
    assert_eq!(sort_by(&browser, "name"), "ascending");
    let names = column(&browser, "name");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.len() >= 5, "{names:?}");

    // Collapsing a tree: a click on the root's line hides its children; another shows them again.
    let root = browser.find("#slowest .tree > details.node");
    let child = browser.find("#slowest .tree > details.node > details.node > summary");
    let is_open = |element: &Value| browser.execute("return arguments[0].open;", vec![element.clone()]);
    assert!(browser.displayed(&child));
    browser.click(&browser.find("#slowest .tree > details.node > summary"));
    assert_eq!(is_open(&root), json!(false));
    assert!(!browser.displayed(&child), "a collapsed node hides its children");
    browser.click(&browser.find("#slowest .tree > details.node > summary"));
    assert_eq!(is_open(&root), json!(true));
    assert!(browser.displayed(&child));
    browser.click(&browser.find("button[data-trees=\"close\"]"));
    let open = browser.execute("return document.querySelectorAll('#slowest details.node[open]').length;", vec![]);
    assert_eq!(open, json!(0));
    browser.click(&browser.find("button[data-trees=\"open\"]"));

    // The flamegraph is inferno's SVG, live in its frame: its frames are drawn and its script ran.
    let frame = browser.find("iframe.flamegraph");
    browser.frame(Some(&frame));
    let frames = browser.execute("return document.querySelectorAll('#frames > g').length;", vec![]);
    assert!(frames.as_u64().unwrap() >= 4, "flamegraph frames: {frames}");
    let script_ran =
        browser.execute("return typeof zoom === 'function' && document.getElementById('details') !== null;", vec![]);
    assert_eq!(script_ran, json!(true));
    browser.frame(None);
    // The charts across runs are drawn.
    let charts = browser.execute("return document.querySelectorAll('#history .chart svg circle').length;", vec![]);
    assert!(charts.as_u64().unwrap() >= 6 * 4, "chart points: {charts}");

    let errors: Vec<(String, String)> =
        browser.console().into_iter().filter(|(level, _)| level == "SEVERE" || level == "WARNING").collect();
    assert!(errors.is_empty(), "console errors after interacting: {errors:?}");
    if let Some(path) = std::env::var_os("CALLTIME_SCREENSHOT") {
        browser.execute(
            "window.scrollTo(0, 0); document.querySelector('#functions-table th[data-key=\"self\"]').click();",
            vec![],
        );
        std::fs::write(path, browser.screenshot()).unwrap();
    }
}

#[test]
fn folded_invocations_show_estimates_and_the_runtime_settings() {
    let page = html::render(&load("views/folded.trace"), &HtmlOptions { top: 2, history: Vec::new() }).unwrap();
    assert!(page.contains("<span class=\"total\">~"), "a sampled node's total is marked as an estimate");
    assert!(page.contains("data-key=\"total\" data-v=\"") && page.contains(">~"));
    let summary = &page[page.find("id=\"summary\"").unwrap()..page.find("id=\"slowest\"").unwrap()];
    assert!(summary.contains("runtime settings</th><td>fold_after="), "a version 2 trace's settings are shown");
}

//! The static call graph and plan on the test-crates/analysis-* workspaces: `cargo calltime graph` output as
//! data (text and JSON), errors, probe offsets checked against the files on disk.

mod util;

use std::collections::BTreeMap;
use std::path::Path;

use cargo_calltime::analysis::make_plan;
use cargo_calltime::plan::{path_regex, ErrCounting, Plan, PlanOptions, ProbeKind, SkipReason};
use cargo_calltime::workspace::CargoOptions;
use cargo_calltime::workspace::Workspace;
use util::{calltime, check, copy_test_crate, data, normalize_path, run};

/// (expectation name, test crate, graph arguments)
const CASES: &[(&str, &str, &[&str])] = &[
    ("modules", "analysis-modules", &["--root", "entry", "--depth", "10"]),
    ("use", "analysis-use", &["--root", "app::run", "--depth", "10"]),
    // A root named through a `pub use` with a rename: alpha::prelude::open is alpha::api::connect.
    ("use-reexport-root", "analysis-use", &["--root", "alpha::prelude::open", "--depth", "2"]),
    // `dyn Handler` in alpha reaches the impl in app, a crate alpha cannot name.
    ("use-dyn-downstream", "analysis-use", &["--root", "alpha::api::dispatch", "--depth", "3"]),
    ("use-package", "analysis-use", &["-p", "app", "--root", "run", "--depth", "3"]),
    ("calls", "analysis-calls", &["--root", "entry", "--depth", "10"]),
    ("calls-filter", "analysis-calls", &["--root", "Engine::total", "--depth", "3", "--filter", "::Counter::"]),
    ("calls-exclude", "analysis-calls", &["--root", "Engine::total", "--depth", "3", "--exclude", "::Counter::"]),
    // Roots in an example target: named by crate, or found by the second look that includes examples.
    ("calls-example", "analysis-calls", &["--root", "demo::main", "--depth", "3"]),
    ("calls-example-helper", "analysis-calls", &["--root", "demo_helper", "--depth", "2"]),
    ("edge", "analysis-edge", &["--root", "my_tool::main", "--depth", "10"]),
    ("edge-two-roots", "analysis-edge", &["--root", "edge::recursive", "--root", "fetch", "--depth", "2"]),
    // Functions cheaper than a probe are left out by default, and kept with --probe-trivial.
    ("trivial", "analysis-trivial", &["--root", "Doc::render", "--depth", "3"]),
    ("trivial-probed", "analysis-trivial", &["--root", "Doc::render", "--depth", "3", "--probe-trivial"]),
    // Raw pointer accessors are trivial; `add` on a named type is not.
    ("trivial-pointers", "analysis-trivial", &["--root", "Cursor::scan", "--depth", "2"]),
    // A method call on a field of a generic parameter (`self.read.peek()`, `read: R` in `impl<R: Source>
    // Parser<R>`) dispatches through the impl's bound; on a field of a declared type (`self.delegate.peek()`) it
    // is that type's impl, not the blanket impl for `&mut R`. Forwarders to probed or trivial functions are left
    // out (`forwarder`).
    ("forwarders", "analysis-trivial", &["--root", "Parser::skip_spaces", "--depth", "4"]),
    // At the depth limit a forwarder's callees have no probe: it keeps its own.
    ("forwarders-at-depth", "analysis-trivial", &["--root", "Parser::skip_spaces", "--depth", "2"]),
    // A unit struct taken by value drops nothing; a forwarder whose call is a guess (`.into()`) keeps its probe.
    ("forwarders-guess", "analysis-trivial", &["--root", "UnitVisitor::visit_all", "--depth", "3"]),
    ("forwarders-probed", "analysis-trivial", &["--root", "Parser::skip_spaces", "--depth", "4", "--probe-trivial"]),
    // A workspace `macro_rules!` that runs straight through (serde_json's `tri!`: a match and a return) keeps a
    // body trivial, wherever the macro is defined; one that calls a function or loops does not.
    ("trivial-macros", "analysis-trivial", &["--root", "Checked::scan", "--depth", "2"]),
    // Parser combinators: builders of a closure or an `impl Trait` value with no loop of their own are left out
    // (`builds_for_later`), a builder that loops first keeps its probe; tiny leaves on primitives (`self` a `char`,
    // a generic parameter bounded by a workspace trait implemented only for such types) are trivial.
    ("combinators", "analysis-combinators", &["--root", "parse_list", "--depth", "4"]),
    ("combinators-probed", "analysis-combinators", &["--root", "parse_list", "--depth", "4", "--probe-trivial"]),
    // Issue 12.6: workspace traits implemented for std types, called on literals, `vec![..]`, `String`, `&str`,
    // slices and `Option`; a std value of unknown type and an unknown receiver are over-approximated with a note.
    ("std-impls", "analysis-faults", &["--root", "shapes::shown", "--depth", "2", "--probe-trivial"]),
    // Issue 12.12: items under a `#[cfg]` that is false for the active features (defaults, --features,
    // --no-default-features) or the host target are compiled out: skipped with `cfg_disabled`, their calls not
    // followed; unknown predicates (a --cfg flag, debug_assertions) keep the item.
    ("cfg-default", "analysis-faults", &["--root", "faults::main", "--depth", "4"]),
    ("cfg-grain", "analysis-faults", &["--root", "faults::main", "--depth", "4", "--features", "grain"]),
    ("cfg-no-default", "analysis-faults", &["--root", "faults::main", "--depth", "4", "--no-default-features"]),
    // `.to_string()` runs the type's Display::fmt; `.parse()` runs a FromStr impl (every visible one).
    ("to-string", "to-string-edge", &["--root", "show", "--depth", "2"]),
    ("parse", "to-string-edge", &["--root", "read", "--depth", "2"]),
    // Issue 16: a method call on a field or local of a std type (`store.entries.get(k)` on a HashMap) is std's,
    // not every workspace method of that name; a workspace trait implemented for the std type is still reached.
    ("receivers", "analysis-receivers", &["--root", "entry", "--depth", "3", "--probe-trivial"]),
    // A member reached through `[patch.crates-io]` is the workspace's, as in cargo's resolve (toml_edit's
    // toml_parser, vendored): `graph` reads no resolve, and showed it as external.
    ("patch", "analysis-patch", &["--root", "app::main", "--depth", "3", "--probe-trivial"]),
    // `--root krate::Type::method` read as a Rust path (through `pub use`) wins over other defining paths that end
    // the same way (regex: `regex::Regex::new` against `regex_automata::dfa::regex::Regex::new`).
    (
        "root-as-written",
        "analysis-patch",
        &["--root", "calltime_vendored::Source::new", "--depth", "2", "--probe-trivial"],
    ),
    // Issue 16's leftover: receivers reached through `lock().unwrap()`, `read()`, `borrow()`, `as_ref()`,
    // `Arc::clone`, a function's or method's result and `?` are typed from declared types; a closure's result is
    // still matched by name; `std::mem::take` inside a workspace `take` is std's, not a recursion.
    ("receivers-chains", "analysis-receivers", &["--root", "chains::start", "--depth", "3", "--probe-trivial"]),
    // Std values bound to locals, slice parameters, `size_of`, `Self::Variant(x)` patterns and `if let` shadowing
    // (seen in sd and toml_edit).
    ("receivers-std", "analysis-receivers", &["--root", "chains::more", "--depth", "4", "--probe-trivial"]),
    // A blanket impl's method (digest's `impl<D: ..> Digest for D`) is shown as `<T as Describe>::describe`.
    ("blanket", "analysis-receivers", &["--root", "blanket::show", "--depth", "3", "--probe-trivial"]),
    // std's `Iterator` methods on a workspace type that implements it (pest's `Pairs::map`, url's
    // `Input::take_while`) reach its `next`; they were reported as unresolved, with no edge.
    ("iterator-methods", "analysis-receivers", &["--root", "iterate::total", "--depth", "3", "--probe-trivial"]),
    // A call to an associated function a macro made (pest_derive's `JsonParser::parse`) is a call-site note; it was
    // dropped with none. A std derive's (`Made::clone`) is not.
    ("macro-made", "analysis-receivers", &["--root", "made::made_total", "--depth", "2", "--probe-trivial"]),
    // `.parse()` whose target type the code names (a turbofish, an annotated `let` through `?`, `.expect(..)`,
    // `.unwrap_or(..)`) reaches that type's `FromStr` impl alone; it fanned out to every impl (jiff: 8). A std
    // type's parse reaches none; a target named only by the return type is not seen (`zone_of`).
    ("parse-targets", "analysis-receivers", &["--root", "parsed::parse_line", "--depth", "3", "--probe-trivial"]),
    // `.into()` reaches the `From` impls whose source is the receiver's type or whose target the annotated `let`
    // names; it fanned out to every workspace `From` impl (png: 11 for `FormatErrorInner::X.into()`).
    ("into-targets", "analysis-receivers", &["--root", "converted::convert", "--depth", "3", "--probe-trivial"]),
    // `Some(x)` and `Ok(x)` from a scrutinee of a known type bind the contents' type (rustc-demangle's
    // `match self.style { Some(ref d) => write!(f, "{}", d) }`): `{}` reached no `Display` impl, and a `String`'s
    // `push_str` and `len` were matched to workspace methods by name.
    ("bound-values", "analysis-receivers", &["--root", "bound::show", "--depth", "3", "--probe-trivial"]),
    // `fmt::Display::fmt(style, f)`, a std trait's method called by path, reaches the argument's impl; the path
    // alone left the workspace (rustc-demangle's `DemangleStyle::fmt` reached neither `Demangle` it prints).
    ("trait-path-calls", "analysis-receivers", &["--root", "bound::relay", "--depth", "2", "--probe-trivial"]),
    // A std sequence's `first`, `last_mut`, `pop` give an `Option` and `split_off` the same `Vec` (markdown-rs's
    // `self.buffers.last_mut().expect(..)` matched a workspace `expect` by name).
    ("sequence-methods", "analysis-receivers", &["--root", "Lines::measure", "--depth", "2", "--probe-trivial"]),
    // The result of a method reached through `Deref` is typed (rusqlite's `tx.prepare_cached(..)?`, through
    // `Transaction`'s `Deref`): the call on it was matched by name.
    ("deref-results", "analysis-receivers", &["--root", "derefs::first_step", "--depth", "2", "--probe-trivial"]),
];

fn graph(dir: &Path, args: &[&str], format: &str, expect_success: bool) -> (String, String) {
    let mut cmd = calltime();
    cmd.current_dir(dir).arg("graph").args(args).args(["--format", format]);
    let out = run(&mut cmd, expect_success);
    let stdout = normalize_path(&String::from_utf8_lossy(&out.stdout), dir, "[ROOT]");
    let stderr = normalize_path(&String::from_utf8_lossy(&out.stderr), dir, "[ROOT]");
    (stdout, stderr)
}

#[test]
fn graph_output_matches_expectations() {
    for (name, krate, args) in CASES {
        let (_tmp, dir) = copy_test_crate(krate);
        let (text, _) = graph(&dir, args, "text", true);
        check(&data(&format!("analysis/{name}.txt")), &text);
        let (json, _) = graph(&dir, args, "json", true);
        serde_json::from_str::<serde_json::Value>(&json).expect("graph JSON parses");
        check(&data(&format!("analysis/{name}.json")), &json);
    }
}

#[test]
fn dot_output_is_a_digraph() {
    let (_tmp, dir) = copy_test_crate("analysis-calls");
    let (dot, _) = graph(&dir, &["--root", "Counter::bump", "--depth", "2"], "dot", true);
    check(&data("analysis/calls.dot"), &dot);
}

#[test]
fn unparsable_file_is_a_warning_with_its_line() {
    let (_tmp, dir) = copy_test_crate("analysis-edge");
    let (_, stderr) = graph(&dir, &["--root", "edge::entry"], "text", true);
    assert!(
        stderr.contains("warning: edge/src/broken.rs:3: could not parse: "),
        "stderr lacks the parse warning:\n{stderr}"
    );
}

#[test]
fn unreadable_file_is_a_warning_and_the_rest_goes_on() {
    let (_tmp, dir) = copy_test_crate("analysis-modules");
    let lib = dir.join("src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\n#[cfg(any())]\nmod latin1;\n");
    std::fs::write(&lib, text).unwrap();
    std::fs::write(dir.join("src/latin1.rs"), b"// caf\xe9\nfn f() {}\n").unwrap();
    let (out, stderr) = graph(&dir, &["--root", "entry"], "text", true);
    assert!(stderr.contains("warning: src/latin1.rs: could not read: not valid UTF-8"), "{stderr}");
    assert!(out.contains("analysis_modules::dir::from_dir"), "{out}");
}

#[test]
fn runs_from_a_directory_inside_the_workspace() {
    let (_tmp, dir) = copy_test_crate("analysis-use");
    let (out, _) = graph(&dir.join("crates/app/src/nested"), &["--root", "app::run", "--depth", "2"], "text", true);
    assert!(out.contains("app::run -> alpha::api::connect"), "{out}");
}

#[test]
fn output_file_gets_the_plan() {
    let (_tmp, dir) = copy_test_crate("analysis-modules");
    let out_file = dir.join("plan.json");
    let mut cmd = calltime();
    cmd.current_dir(&dir).args(["graph", "--root", "entry", "--format", "json", "-o"]).arg(&out_file);
    let out = run(&mut cmd, true);
    assert!(out.stdout.is_empty(), "stdout should be empty with -o");
    let text = std::fs::read_to_string(&out_file).expect("plan written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(value["functions"][0]["path"], "analysis_modules::entry");
}

#[test]
fn manifest_path_works_from_another_directory() {
    let (tmp, dir) = copy_test_crate("analysis-use");
    let mut cmd = calltime();
    cmd.current_dir(tmp.path()).args(["graph", "--root", "deep_fn", "--manifest-path"]).arg(dir.join("Cargo.toml"));
    let out = run(&mut cmd, true);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("alpha::inner::deep::deep_fn -> alpha::inner::helper"), "{text}");
}

#[test]
fn errors_name_the_problem_and_a_hint() {
    let cases: &[(&str, &[&str])] = &[
        ("analysis-calls", &["--root", "stepp"]),
        ("analysis-calls", &["--root", "nothing_like_this_at_all"]),
        ("analysis-calls", &["--root", "step"]),
        // Issue 16: trait methods listed as `<T as Trait>::m` where `T::m` would select another impl too; a
        // suggestion only when one candidate is the single free function or inherent method.
        ("analysis-receivers", &["--root", "fmt"]),
        ("analysis-receivers", &["--root", "lookup"]),
        ("analysis-calls", &["--root", "entry", "--filter", "("]),
        ("analysis-calls", &["--root", "entry", "--exclude", "[z-a]"]),
        ("analysis-calls", &["--root", "entry", "--depth", "0"]),
        ("analysis-edge", &["--root", "edge::limit"]),
        // Issue 12.8: proc-macro crates are not analysed, by crate name or by a function of theirs.
        ("analysis-faults", &["--root", "derive_probe::expand"]),
        ("analysis-faults", &["--root", "derive_probe"]),
        ("analysis-faults", &["--root", "expand"]),
    ];
    let mut all = String::new();
    for (krate, args) in cases {
        let (_tmp, dir) = copy_test_crate(krate);
        let (_, stderr) = graph(&dir, args, "text", false);
        // Progress lines vary with the crate; the error is what this test is about.
        let errors: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("    Analysed")).collect();
        all.push_str(&format!("$ cargo calltime graph {}  # in {krate}\n{}\n\n", args.join(" "), errors.join("\n")));
    }
    check(&data("analysis/errors.txt"), &all);
}

/// The plan as `graph` makes it; `everything` adds --probe-trivial (with the filter `.`: every function that can
/// take a probe gets one).
fn plan_for(dir: &Path, roots: &[&str], depth: u32, filter: Option<&str>) -> Plan {
    plan_with(dir, roots, depth, filter, false)
}

fn plan_with(dir: &Path, roots: &[&str], depth: u32, filter: Option<&str>, everything: bool) -> Plan {
    let cargo = CargoOptions { manifest_path: Some(dir.join("Cargo.toml")), ..CargoOptions::default() };
    let ws = Workspace::load(&cargo).expect("workspace loads");
    let mut options = PlanOptions::new(roots.iter().map(|r| r.to_string()).collect(), depth).expect("valid options");
    options.filter = filter.map(|re| path_regex("--filter", re).expect("valid regex"));
    options.probe_trivial = everything;
    make_plan(&ws, &options).expect("plan")
}

/// The end of the line holding `offset`, for failure messages.
fn around(text: &str, offset: usize) -> String {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    format!("{}|{}", &text[start..offset], &text[offset..end])
}

#[test]
fn probe_offsets_point_into_the_files_on_disk() {
    let (_tmp, dir) = copy_test_crate("analysis-edge");
    let plan = plan_for(&dir, &["my_tool::main"], 100, None);
    let mut kinds_seen = Vec::new();
    for (f, probe) in plan.instrumented() {
        let text = std::fs::read_to_string(&f.file).unwrap();
        let bytes = text.as_bytes();
        kinds_seen.push(probe.kind);
        assert_eq!(probe.line, cargo_calltime::rewrite::line_of(&text, probe.open), "{}: line of the probe", f.path);
        match probe.kind {
            ProbeKind::Sync => {
                if probe.body_in_closure || probe.errs == ErrCounting::Counted || probe.body_twice {
                    assert_eq!(bytes[probe.close], b'}', "{}: {}", f.path, around(&text, probe.close));
                } else {
                    assert_eq!(probe.open, probe.close, "{}", f.path);
                }
                let before = text[..probe.open].trim_end();
                assert!(
                    before.ends_with('{') || before.ends_with(']'),
                    "{}: open should follow the body's brace or inner attributes: {}",
                    f.path,
                    around(&text, probe.open)
                );
            }
            ProbeKind::Async => {
                assert_eq!(bytes[probe.open - 1], b'{', "{}: {}", f.path, around(&text, probe.open));
                assert_eq!(bytes[probe.close], b'}', "{}: {}", f.path, around(&text, probe.close));
            }
            ProbeKind::AsyncBlock => {
                assert!(text[probe.open..].starts_with("async move {"), "{}: {}", f.path, around(&text, probe.open));
                assert_eq!(bytes[probe.close - 1], b'}', "{}", f.path);
                assert!(text[probe.close..].trim_start().starts_with('}'), "tail block ends the body");
            }
        }
    }
    for kind in [ProbeKind::Sync, ProbeKind::Async, ProbeKind::AsyncBlock] {
        assert!(kinds_seen.contains(&kind), "no {kind:?} probe in the edge crate");
    }
    let by_path = |p: &str| plan.functions.iter().find(|f| f.path == p).unwrap_or_else(|| panic!("{p} reached"));

    // Inner attributes: the probe goes after them.
    let outer = by_path("edge::outer");
    let text = std::fs::read_to_string(&outer.file).unwrap();
    let open = outer.probe.as_ref().unwrap().open;
    assert!(text[..open].ends_with("#![allow(clippy::items_after_statements)]"), "{}", around(&text, open));

    // The BOM (3 bytes) and the shebang line are counted: the offset is right in the file as on disk.
    let main = by_path("my_tool::main");
    let text = std::fs::read_to_string(&main.file).unwrap();
    assert!(text.starts_with('\u{feff}'));
    let open = main.probe.as_ref().unwrap().open;
    assert!(text[..open].ends_with("fn main() {"), "{}", around(&text, open));
    assert_eq!(main.line, 4);

    // Async return types as written, `impl Trait` erased; None for unit.
    let fetch = by_path("edge::fetch").probe.as_ref().unwrap();
    assert_eq!(fetch.return_type.as_deref(), Some("Result<u32, String>"));
    let helper = by_path("edge::helper_async").probe.as_ref().unwrap();
    assert_eq!(helper.return_type, None);
}

#[test]
fn indices_are_dense_roots_first_and_deterministic() {
    let (_tmp, dir) = copy_test_crate("analysis-calls");
    let plan = plan_for(&dir, &["Counter::bump", "entry"], 10, None);
    let indices: Vec<u32> = plan.instrumented().map(|(_, p)| p.index).collect();
    assert_eq!(indices, (0..indices.len() as u32).collect::<Vec<_>>());
    let first_two: Vec<&str> = plan.instrumented().take(2).map(|(f, _)| f.path.as_str()).collect();
    assert_eq!(first_two, ["analysis_calls::Counter::bump", "analysis_calls::entry"]);
    let again = plan_for(&dir, &["Counter::bump", "entry"], 10, None);
    let a: Vec<(String, u32)> = plan.instrumented().map(|(f, p)| (f.path.clone(), p.index)).collect();
    let b: Vec<(String, u32)> = again.instrumented().map(|(f, p)| (f.path.clone(), p.index)).collect();
    assert_eq!(a, b);
    // The table names every index.
    let table = plan.function_table("test");
    assert_eq!(table.functions.len(), indices.len());
}

/// With an unlimited depth and a filter that takes everything, every reachable function that can take a probe
/// gets one (tests/recall.rs checks the edges against a run with `--all-functions`).
#[test]
fn everything_reachable_gets_a_probe_with_filter_dot() {
    let allowed = |reason: &SkipReason| {
        matches!(
            reason,
            SkipReason::ConstFn
                | SkipReason::ExternBlock
                | SkipReason::GeneratedByMacro(_)
                | SkipReason::FutureWithoutAsyncTail
                | SkipReason::CfgDisabled(_)
        )
    };
    for (krate, root) in [
        ("analysis-calls", "entry"),
        ("analysis-edge", "my_tool::main"),
        ("analysis-use", "app::run"),
        ("analysis-modules", "entry"),
    ] {
        let (_tmp, dir) = copy_test_crate(krate);
        let plan = plan_with(&dir, &[root], 1000, Some("."), true);
        assert!(plan.functions.len() > 5, "{krate}: too few functions reached");
        for f in &plan.functions {
            if let Some(reason) = &f.skip_reason {
                assert!(allowed(reason), "{krate}: {} skipped: {reason}", f.path);
            }
        }
        // Level and edge consistency: every non-root function is called by one a level above it.
        for (i, f) in plan.functions.iter().enumerate() {
            if f.is_root {
                continue;
            }
            let has_parent = plan.edges.iter().any(|e| e.to == i && plan.functions[e.from].level + 1 == f.level);
            assert!(has_parent, "{krate}: {} at level {} has no caller a level above", f.path, f.level);
        }
    }
}

/// A `--filter` that rejects every reached function but the root is warned about, with the crate names that
/// would match (issue 12.9: the README's own `--filter '^myapp::'` on the demo, whose crate is `demo`).
#[test]
fn filter_that_leaves_only_the_root_is_a_warning() {
    let (_tmp, dir) = copy_test_crate("demo");
    let plan = plan_for(&dir, &["server::handle"], 5, Some("^myapp::"));
    assert_eq!(plan.instrumented().count(), 1, "only the root is probed");
    check(&data("analysis/filter-only-root.txt"), &plan.warnings.join("\n"));
    let (text, _) = graph(&dir, &["--root", "server::handle", "--filter", "^myapp::"], "text", true);
    assert!(text.contains("--filter `^myapp::` matches none of the 24"), "graph shows the warning:\n{text}");
    // A filter that keeps some of them says nothing.
    let plan = plan_for(&dir, &["server::handle"], 5, Some("^demo::server::"));
    assert!(plan.instrumented().count() > 1);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

/// `--exclude-fast` leaves out the functions earlier runs remembered and says so by its own name, next to
/// `--exclude`'s (issue 12, item 13a: it used to say "excluded by --exclude").
#[test]
fn exclude_fast_names_itself_apart_from_exclude() {
    let (_tmp, dir) = copy_test_crate("analysis-calls");
    let remembered = dir.join("target/calltime/fast-functions.txt");
    std::fs::create_dir_all(remembered.parent().unwrap()).unwrap();
    std::fs::write(&remembered, "# remembered\nanalysis_calls::Counter::check\n").unwrap();
    let args = ["--root", "Engine::total", "--depth", "3", "--exclude", "::bump$", "--exclude-fast"];
    let (text, stderr) = graph(&dir, &args, "text", true);
    check(&data("analysis/calls-exclude-fast.txt"), &text);
    assert!(stderr.contains("Excluding 1 functions earlier runs found too fast to probe"), "{stderr}");
    let (json, _) = graph(&dir, &args, "json", true);
    let value: serde_json::Value = serde_json::from_str(&json).expect("graph JSON parses");
    let code = |path: &str| {
        let functions = value["functions"].as_array().expect("functions");
        let f = functions.iter().find(|f| f["path"] == path).unwrap_or_else(|| panic!("{path} listed"));
        f["skip_code"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(code("analysis_calls::Counter::check"), "excluded_fast");
    assert_eq!(code("analysis_calls::Counter::bump"), "excluded");
}

/// The analysis and the plan types are stages: they take options and return values, and never reach up into the
/// command line, the printer or later stages (tidy check, as rust-analyzer has).
#[test]
fn analysis_and_plan_do_not_import_cli_ui_or_later_stages() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Submodules too (`analysis/resolve/returns.rs`).
    let mut files = Vec::new();
    let mut dirs = vec![src.join("analysis")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(files.iter().any(|f| f.ends_with("resolve/returns.rs")), "the walk reaches submodules");
    files.push(src.join("plan.rs"));
    let forbidden = ["cli", "ui", "run", "build", "shadow", "rewrite", "views", "diff"];
    let mut offences = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let is_plan = file.ends_with("plan.rs");
        for (n, line) in text.lines().enumerate() {
            // Doc links may point anywhere; code may not.
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (at, _) in line.match_indices("crate::") {
                let module: String = line[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                // plan.rs is a leaf: it may name only other leaf modules.
                let bad = if is_plan {
                    !["error", "trace"].contains(&module.as_str())
                } else {
                    forbidden.contains(&module.as_str())
                };
                if bad {
                    offences.push(format!("{}:{}: crate::{module}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(offences.is_empty(), "stage modules import what they must not:\n{}", offences.join("\n"));
}

/// Without cargo's resolve (`graph` runs `cargo metadata --no-deps`), the features of each member are worked out
/// from the manifests; they must be cargo's (issue 12.12).
#[test]
fn features_without_resolve_are_cargo_metadatas() {
    let (_tmp, dir) = copy_test_crate("analysis-faults");
    let variants: &[(&[&str], bool, bool)] = &[
        (&[], false, false),
        (&["grain"], false, false),
        (&[], false, true),
        (&[], true, false),
        (&["shapes/fine"], false, false),
        (&["grain", "shapes/fine"], false, true),
    ];
    for &(features, all_features, no_default_features) in variants {
        let cargo = CargoOptions {
            manifest_path: Some(dir.join("Cargo.toml")),
            features: features.iter().map(|f| f.to_string()).collect(),
            all_features,
            no_default_features,
            offline: true,
            ..CargoOptions::default()
        };
        let by_name = |ws: &Workspace| -> BTreeMap<String, Vec<String>> {
            ws.features
                .iter()
                .map(|(&i, set)| (ws.metadata.packages[i].name.to_string(), set.iter().cloned().collect()))
                .collect()
        };
        let resolved = by_name(&Workspace::load(&cargo).expect("workspace loads"));
        let worked_out = by_name(&Workspace::load_members_only(&cargo).expect("workspace loads"));
        assert_eq!(worked_out, resolved, "features {features:?} all {all_features} no-default {no_default_features}");
        assert!(resolved.contains_key("shapes"));
    }
}

/// Issue 12.11: a large generated file is parsed one item at a time, so the analysis holds one item's syntax
/// tree at once instead of the whole file's (a 7 MB file took 966 MB). This one is about 1 MB, to stay fast.
#[test]
fn large_generated_file_is_analysed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"big\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    let count = 2500;
    let mut text = String::new();
    for i in 0..count {
        let next = (i + 1) % count;
        text.push_str(&format!(
            "/// Generated function {i}.\npub fn f{i}(x: u64) -> u64 {{\n    let mut total = x;\n    for k in 0..3 {{\n        \
             total = total.wrapping_mul(31).wrapping_add(k);\n    }}\n    let v = vec![total, x, {i}];\n    \
             let s: u64 = v.iter().copied().sum();\n    if x > 1_000_000 {{ return s; }}\n    \
             println!(\"step {{}} of {i}\", s);\n    f{next}(x + 1).wrapping_add(s)\n}}\n"
        ));
    }
    assert!(text.len() > 600_000, "{} bytes", text.len());
    std::fs::write(dir.join("src/lib.rs"), &text).unwrap();
    let plan = plan_for(&dir, &["big::f0"], 3, None);
    assert_eq!(plan.analysed.functions, count);
    let paths: Vec<&str> = plan.functions.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["big::f0", "big::f1", "big::f2"]);
}

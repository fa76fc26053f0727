//! Layering rules checked on the source tree (as rust-analyzer's tidy.rs): the stages take typed options and return
//! values; only the commands read the clap flags (`crate::cli`) or talk to the terminal (`crate::ui`).

use std::path::{Path, PathBuf};

/// Files that may import `cli` and `ui`: the commands, the two modules themselves, and the entry points.
const LAYER_ROOTS: &[&str] = &["commands/", "cli.rs", "ui.rs", "lib.rs", "main.rs"];

/// Stage modules allowed to import `cli` or `ui` for a while (during a move to typed options); an entry that is no
/// longer needed fails the test, so the list cannot go stale.
const NOT_YET_LAYERED: &[&str] = &[];

/// The lines of `source` that use `crate::cli` or `crate::ui` (comments left out), 1-based.
fn layer_violations(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_use_group = false;
    for (i, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        let names_module = |text: &str| {
            text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == "cli" || word == "ui")
        };
        let direct = ["crate::cli", "crate::ui"].iter().any(|m| {
            code.match_indices(m)
                .any(|(at, _)| !code[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        // `use crate::{cli, ui::status};`, possibly over several lines.
        if code.starts_with("use crate::{") || code.starts_with("pub use crate::{") {
            in_use_group = true;
        }
        let grouped = in_use_group && names_module(code.split("crate::").last().unwrap_or(code));
        if code.contains('}') || code.ends_with(';') {
            in_use_group = false;
        }
        if direct || grouped {
            found.push((i + 1, line.trim().to_owned()));
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn stages_do_not_import_cli_or_ui() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if LAYER_ROOTS.iter().any(|root| rel == *root || (root.ends_with('/') && rel.starts_with(root))) {
            continue;
        }
        let violations = layer_violations(&std::fs::read_to_string(file).unwrap());
        let allowed = NOT_YET_LAYERED.contains(&rel.as_str());
        if allowed && violations.is_empty() {
            problems.push(format!("src/{rel} no longer imports cli or ui: remove it from NOT_YET_LAYERED"));
        }
        if !allowed {
            problems.extend(violations.into_iter().map(|(line, text)| format!("src/{rel}:{line}: {text}")));
        }
    }
    assert!(
        problems.is_empty(),
        "stage modules must take typed options and return values; only src/commands/ may use cli and ui:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layer_check_finds_every_spelling() {
    let bad = [
        "use crate::cli::PlanArgs;",
        "use crate::ui;",
        "    crate::ui::warn(&w);",
        "fn f(a: &crate::cli::GraphArgs) {}",
        "use crate::{cli, trace};",
        "use crate::{\n    trace::Trace,\n    ui::status,\n};",
    ];
    for source in bad {
        assert!(!layer_violations(source).is_empty(), "not caught: {source}");
    }
    let good = [
        "use crate::units::plural;",
        "// crate::ui prints this",
        "use crate::{trace, units};\nlet ui = 1;",
        "use crate::client::Thing;",
        "use crate::uinput;",
        "let cli = args();",
    ];
    for source in good {
        assert_eq!(layer_violations(source), [], "wrongly caught: {source}");
    }
    assert_eq!(layer_violations("fn a() {}\n\nuse crate::ui;\n"), [(3, "use crate::ui;".to_owned())]);
}

/// The runtime's start-up calibration measures a quiet probe inlined into a loop in the form the rewrite gives a
/// tiny item-free body: when the rewrite moved such bodies from `run_quiet_in` to the body written twice
/// (`quiet_in!`), the calibration kept timing the closure form, and compensation took 0.45-0.48 ns a quiet call
/// where the tokenizer's `class_of` costs about 0.1-0.3 ns (docs/truth-bench.md, "Ninth round").
#[test]
fn the_calibration_times_the_quiet_form_the_rewrite_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: PathBuf| std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rewrite = read(root.join("src/rewrite.rs"));
    let calibrate = read(root.join("../calltime-rt/src/calibrate.rs"));
    // The form of a body written twice, as the rewrite spells it.
    let form = if rewrite.contains(r#"let form = if counts_errs { "quiet_err_in" } else { "quiet_in" };"#) {
        "quiet_in!("
    } else {
        panic!("rewrite.rs no longer writes tiny bodies twice with `quiet_in!`: make calibrate.rs's `runs_probed` time the form it writes")
    };
    let probed = calibrate.split("fn runs_probed(").nth(1).and_then(|rest| rest.split("\n}").next());
    let probed = probed.expect("calibrate.rs has `fn runs_probed`");
    assert!(
        probed.contains(form),
        "calibrate.rs's `runs_probed` must time `{form}..)`, the form rewrite.rs writes:\n{probed}"
    );
}

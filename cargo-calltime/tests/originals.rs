//! Issue 12 item 2: build scripts, `include_str!`/`include_bytes!`, `file!()`, panics and the program reading its
//! own sources see the user's bytes and names, exactly as in a plain build, although the copy compiles probes.

use std::path::{Path, PathBuf};
use std::process::Command;

mod util;

/// `cargo run` of the same copy, built outside it so the copy stays as it was.
fn plain_run(dir: &Path, target_dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["run", "-q", "--offline", "--target-dir"]).arg(target_dir).args(args).current_dir(dir);
    cmd.env_remove("CARGO_TARGET_DIR").env_remove("RUSTFLAGS");
    util::run(&mut cmd, true)
}

/// Every file under `dir` (relative, sorted), `target/` left out.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path == dir.join("target") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(dir).unwrap().to_owned());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn sources_read_at_build_and_run_time_are_the_users_bytes() {
    let (tmp, dir) = util::copy_test_crate("e2e-originals");
    let before: Vec<(PathBuf, Vec<u8>)> =
        files_under(&dir).into_iter().map(|rel| (rel.clone(), std::fs::read(dir.join(&rel)).unwrap())).collect();
    let selection = ["-p", "app", "-p", "b", "--bin", "app"];
    let out =
        util::run(util::calltime().args(["--root", "run", "--probe-trivial"]).args(selection).current_dir(&dir), true);
    let plain = plain_run(&dir, &tmp.path().join("plain-target"), &["-p", "app"]);
    let probed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(probed, String::from_utf8_lossy(&plain.stdout), "the program's stdout differs from a plain cargo run");
    // Every source the program reads got probes, b's lib.rs included: the equality above is not vacuous.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("probed in 9 files"), "{stderr}");
    assert!(!stderr.contains("include_str!") && !stderr.contains("warning"), "{stderr}");
    let after: Vec<(PathBuf, Vec<u8>)> =
        files_under(&dir).into_iter().map(|rel| (rel.clone(), std::fs::read(dir.join(&rel)).unwrap())).collect();
    assert!(before == after, "the user's workspace changed");

    // The copy: originals as they are, probes and `#[path]`s in hidden siblings the manifests point at.
    let shadow = dir.join("target/calltime/shadow");
    let mut listing = String::new();
    for rel in files_under(&shadow) {
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        if let Some((_, user_bytes)) = before.iter().find(|(user_rel, _)| *user_rel == rel) {
            if name.ends_with(".rs") {
                assert!(std::fs::read(shadow.join(&rel)).unwrap() == *user_bytes, "{} differs", rel.display());
            }
            continue;
        }
        if !name.ends_with(".calltime.rs") {
            continue;
        }
        listing.push_str(&format!("{}\n", rel.display()));
        let text = std::fs::read_to_string(shadow.join(&rel)).unwrap();
        let original = std::fs::read_to_string(shadow.join(rel.with_file_name(original_name(&name)))).unwrap();
        assert_eq!(text.lines().count(), original.lines().count(), "{}", rel.display());
        for line in text.lines().filter(|l| l.contains("#[path") || l.contains("cfg_attr(any()")) {
            listing.push_str(&format!("    {line}\n"));
        }
    }
    for manifest in ["app/Cargo.toml", "b/Cargo.toml"] {
        let text = std::fs::read_to_string(shadow.join(manifest)).unwrap();
        let paths: Vec<&str> = text.lines().filter(|l| l.starts_with("path = ")).collect();
        listing.push_str(&format!("{manifest}: {}\n", paths.join(", ")));
    }
    util::check(&util::data("originals/shadow.txt"), &util::normalize_path(&listing, &shadow, "<shadow>"));
}

/// `main.rs` for `.main.calltime.rs`.
fn original_name(sibling: &str) -> String {
    format!("{}.rs", sibling.trim_start_matches('.').trim_end_matches(".calltime.rs"))
}

//! Stage 5: the shadow copy of the workspace that gets the probes, and the runtime crate it depends on.
//!
//! The copy lives at a stable place under the user's target dir and is reused run after run. Cargo decides what to
//! rebuild from mtimes, so a file in the copy is touched only when its content must change: unchanged files keep
//! their mtime, a file whose content changes gets a fresh mtime (never an older one: cargo would think the old
//! build is still fresh), and files that disappeared from the workspace disappear from the copy. The user's files
//! are only ever read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use toml_edit::{DocumentMut, Item, Value};

use crate::plan::Plan;
use crate::rewrite::{self, PlanInfo, Probe};
use crate::runtime_sources::RUNTIME_SOURCES;
use crate::workspace::Workspace;

/// Appended to edition-2015 crate roots (no newline: line numbers stay as they are).
const EXTERN_CRATE: &str = " #[allow(unused_extern_crates)] extern crate calltime_rt;";

/// Directories never copied: version control metadata.
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj", ".pijul", "_darcs", ".bzr"];

/// What [`prepare`] did, for the progress line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CopyStats {
    /// Files in the copy.
    pub files: usize,
    /// Files written this time (new or changed).
    pub written: usize,
    /// Files removed because they are gone from the workspace.
    pub removed: usize,
    /// Source files that received probes.
    pub rewritten: usize,
}

/// Writes the runtime crate to `<calltime>/calltime-rt` (outside any shadow workspace, with its own empty
/// `[workspace]` so cargo never looks for one above it) and returns its directory. Files are only rewritten when
/// their content changes, so the runtime is compiled once per target dir.
pub fn write_runtime(calltime_dir: &Path) -> Result<PathBuf> {
    let dir = calltime_dir.join("calltime-rt");
    let manifest = "# Written by cargo-calltime: the runtime its probes call. Regenerated when the tool changes.\n\
                    [package]\nname = \"calltime-rt\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
                    [lib]\npath = \"src/lib.rs\"\n\n[dependencies]\n\n[workspace]\n";
    write_if_changed(&dir.join("Cargo.toml"), manifest.as_bytes())?;
    let src = dir.join("src");
    for (path, contents) in RUNTIME_SOURCES {
        write_if_changed(&src.join(path), contents.as_bytes())?;
    }
    remove_stale_runtime_files(&src, &src)?;
    Ok(dir)
}

/// Removes files under `dir` that are not runtime sources (left by an older version of the tool: a module that
/// moved from `x.rs` to `x/mod.rs` would otherwise be found twice).
fn remove_stale_runtime_files(src: &Path, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let path = entry.with_context(|| format!("cannot list {}", dir.display()))?.path();
        if path.is_dir() {
            remove_stale_runtime_files(src, &path)?;
            continue;
        }
        let rel = path.strip_prefix(src).unwrap_or(&path);
        let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        if !RUNTIME_SOURCES.iter().any(|(known, _)| *known == rel) {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// The runtime the probes link: the workspace's own `calltime-rt` member when it has one (cargo-calltime's own
/// repository: two path packages with one name and version cannot share a lock file), else the shipped copy.
pub fn runtime_for(ws: &Workspace, calltime_dir: &Path, shadow_dir: &Path) -> Result<PathBuf> {
    for member in ws.metadata.workspace_packages() {
        if member.name.as_str() == "calltime-rt" {
            if let Some(dir) = member.manifest_path.parent() {
                if let Ok(rel) = relative_inside(&ws.root, dir.as_std_path()) {
                    return Ok(shadow_dir.join(rel));
                }
            }
        }
    }
    write_runtime(calltime_dir)
}

/// The plan's identity: FNV-1a 64 of the function table (without its id) as JSON, 16 hex digits.
pub fn plan_id(plan: &Plan) -> String {
    let table = plan.function_table("");
    let json = serde_json::to_string(&table).unwrap_or_default();
    format!("{:016x}", fnv1a64(json.as_bytes()))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Makes `dir` a copy of the workspace; with `probes`, inserts them and adds calltime-rt (at `runtime_dir`) to every
/// package that has one. Without, the copy is the unmodified workspace (used to tell whether a failed build is ours).
pub fn prepare(
    ws: &Workspace,
    dir: &Path,
    probes: Option<(&Plan, &PlanInfo)>,
    runtime_dir: &Path,
) -> Result<CopyStats> {
    let root = &ws.root;
    // Probes per file, and the manifests that need the runtime dependency, keyed by path relative to the root.
    let mut per_file: BTreeMap<PathBuf, Vec<Probe<'_>>> = BTreeMap::new();
    let mut runtime_manifests: BTreeSet<PathBuf> = BTreeSet::new();
    if let Some((plan, _)) = probes {
        for (function, site) in plan.instrumented() {
            let rel = relative_inside(root, &function.file).with_context(|| {
                format!("function `{}` is in {}, outside the workspace", function.path, function.file.display())
            })?;
            per_file.entry(rel).or_default().push(Probe { site, is_root: function.is_root });
            let manifest = relative_inside(root, &function.manifest_path).with_context(|| {
                format!("package manifest {} is outside the workspace", function.manifest_path.display())
            })?;
            runtime_manifests.insert(manifest);
        }
    }

    // Crate roots of edition-2015 targets of instrumented packages: they need `extern crate calltime_rt;`.
    let mut extern_crate_roots: BTreeSet<PathBuf> = BTreeSet::new();
    for package in &ws.metadata.packages {
        let Ok(manifest) = relative_inside(root, package.manifest_path.as_std_path()) else { continue };
        if !runtime_manifests.contains(&manifest) {
            continue;
        }
        for target in &package.targets {
            if target.edition == cargo_metadata::Edition::E2015 && !target.is_custom_build() && !target.is_proc_macro()
            {
                if let Ok(rel) = relative_inside(root, target.src_path.as_std_path()) {
                    extern_crate_roots.insert(rel);
                }
            }
        }
    }

    // A package that uses calltime-rt from crates.io (to hand a context to spawned work, say) must get the very
    // runtime the probes use: the copy patches crates.io's calltime-rt with it.
    let registry_runtime = probes.is_some()
        && ws.metadata.packages.iter().any(|p| {
            p.name.as_str() == "calltime-rt" && p.source.as_ref().is_some_and(|s| s.repr.starts_with("registry+"))
        });

    let skip = skipped_dirs(ws);
    let mut stats = CopyStats::default();
    let mut kept: BTreeSet<PathBuf> = BTreeSet::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && is_skipped_dir(e.path(), &skip)));
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            // A dangling symlink or an unreadable directory: cargo would not use it either; leave it out.
            Err(err) => {
                tracing::info!("not copying {err}");
                continue;
            }
        };
        let rel = match entry.path().strip_prefix(root) {
            Ok(r) if !r.as_os_str().is_empty() => r.to_owned(),
            _ => continue,
        };
        let dst = dir.join(&rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dst).with_context(|| format!("cannot create {}", dst.display()))?;
            kept.insert(rel);
            continue;
        }
        stats.files += 1;
        let src = entry.path();
        let file_probes = per_file.get(&rel);
        let needs_extern_crate = extern_crate_roots.contains(&rel);
        let written = if file_probes.is_some() || needs_extern_crate {
            stats.rewritten += usize::from(file_probes.is_some());
            let bytes = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                anyhow::anyhow!(
                    "{} is not valid UTF-8\n  hint: rustc only accepts UTF-8 source files; fix the file or exclude \
                     its functions with --filter",
                    src.display()
                )
            })?;
            let mut out = match (file_probes, probes) {
                (Some(file_probes), Some((_, plan_info))) => {
                    rewrite::apply(&text, file_probes, plan_info).with_context(|| format!("in {}", src.display()))?
                }
                _ => text,
            };
            if needs_extern_crate {
                // Edition 2015 resolves `::calltime_rt` from the crate root: declare it there, at the very end of
                // the file, so no line moves.
                out.push_str(EXTERN_CRATE);
            }
            write_if_changed(&dst, out.as_bytes())?
        } else if rel.file_name().is_some_and(|n| n == "Cargo.toml") {
            let text = std::fs::read_to_string(src).with_context(|| format!("cannot read {}", src.display()))?;
            let runtime = runtime_manifests.contains(&rel).then_some(runtime_dir);
            let is_root = rel == Path::new("Cargo.toml");
            let patch = (is_root && registry_runtime).then_some(runtime_dir);
            match edit_manifest(&text, src, root, runtime, is_root, patch) {
                Ok(out) => write_if_changed(&dst, out.as_bytes())?,
                // Not a manifest cargo can read either (a template, a fixture): copy it as it is.
                Err(err) if runtime.is_none() => {
                    tracing::info!("copying {} unchanged: {err:#}", src.display());
                    copy_if_changed(src, &dst)?
                }
                Err(err) => return Err(err.context(format!("cannot edit {}", src.display()))),
            }
        } else if rel == Path::new("Cargo.lock") {
            copy_lock_if_changed(src, &dst)?
        } else {
            copy_if_changed(src, &dst)?
        };
        if written {
            stats.written += 1;
        }
        kept.insert(rel);
    }
    let missing: Vec<_> = per_file.keys().filter(|rel| !kept.contains(*rel)).collect();
    if let Some(rel) = missing.first() {
        bail!("cannot find {} to insert probes\n  hint: is it excluded or a broken symlink?", root.join(rel).display());
    }
    stats.removed = remove_stale(dir, &kept)?;
    Ok(stats)
}

/// The path of `path` relative to `root`, when it is inside it.
fn relative_inside(root: &Path, path: &Path) -> Result<PathBuf> {
    match normalize(path).strip_prefix(normalize(root)) {
        Ok(rel) => Ok(rel.to_owned()),
        Err(_) => bail!("{} is not under {}", path.display(), root.display()),
    }
}

/// Directories left out of the copy: the user's target dir (wherever it is), any cargo target dir inside the
/// workspace (it holds a CACHEDIR.TAG), and version control metadata.
fn skipped_dirs(ws: &Workspace) -> Vec<PathBuf> {
    let mut dirs = vec![normalize(&ws.target_dir)];
    if let Ok(canon) = ws.target_dir.canonicalize() {
        dirs.push(canon);
    }
    dirs
}

fn is_skipped_dir(path: &Path, skip: &[PathBuf]) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if VCS_DIRS.contains(&name) {
        return true;
    }
    if name == "target" && path.join("CACHEDIR.TAG").exists() {
        return true;
    }
    let normalized = normalize(path);
    skip.contains(&normalized)
}

/// Lexical normalisation: makes the path absolute and resolves `.` and `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut out = PathBuf::new();
    for comp in abs.components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Writes `bytes` to `path` unless it already holds exactly them. Returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if let Ok(existing) = std::fs::read(path) {
        if existing == bytes {
            return Ok(false);
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

/// Copies `src` to `dst` unless `dst` already has the same content. A new file keeps the source's mtime (so the next
/// run can skip it by size and mtime); a changed file gets a fresh mtime so cargo sees the change.
fn copy_if_changed(src: &Path, dst: &Path) -> Result<bool> {
    let src_meta = std::fs::metadata(src).with_context(|| format!("cannot read {}", src.display()))?;
    match std::fs::metadata(dst) {
        Ok(dst_meta) if dst_meta.is_file() => {
            if dst_meta.len() == src_meta.len() {
                if dst_meta.modified().ok().is_some() && dst_meta.modified().ok() == src_meta.modified().ok() {
                    return Ok(false);
                }
                let a = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
                let b = std::fs::read(dst).with_context(|| format!("cannot read {}", dst.display()))?;
                if a == b {
                    return Ok(false);
                }
            }
            std::fs::copy(src, dst).with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
            Ok(true)
        }
        Ok(_) => {
            // A directory where a file now is.
            std::fs::remove_dir_all(dst).with_context(|| format!("cannot remove {}", dst.display()))?;
            copy_new(src, dst, &src_meta)
        }
        Err(_) => copy_new(src, dst, &src_meta),
    }
}

fn copy_new(src: &Path, dst: &Path, src_meta: &std::fs::Metadata) -> Result<bool> {
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::copy(src, dst).with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
    if let Ok(mtime) = src_meta.modified() {
        if let Ok(file) = std::fs::File::options().write(true).open(dst) {
            let _ = file.set_modified(mtime);
        }
    }
    Ok(true)
}

/// Cargo.lock: the shadow build adds calltime-rt to the copy's lock. Copy the user's lock again only when the user's
/// changed since the last copy (remembered beside the copy), so the copy's lock is not re-resolved at every run.
fn copy_lock_if_changed(src: &Path, dst: &Path) -> Result<bool> {
    let user = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
    let memo = dst.with_file_name("Cargo.lock.calltime-source");
    let unchanged = std::fs::read(&memo).is_ok_and(|m| m == user) && dst.exists();
    if unchanged {
        return Ok(false);
    }
    write_if_changed(dst, &user)?;
    write_if_changed(&memo, &user)?;
    Ok(true)
}

/// Removes from `dir` every file and directory not in `kept` (paths relative to `dir`), returning how many files.
fn remove_stale(dir: &Path, kept: &BTreeSet<PathBuf>) -> Result<usize> {
    let mut removed = 0;
    let mut stale_dirs = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).contents_first(true).into_iter().flatten() {
        let Ok(rel) = entry.path().strip_prefix(dir) else { continue };
        // The copy's lock (with the calltime-rt entry) stays even when the user has none, so it is not re-resolved.
        if kept.contains(rel) || rel == Path::new("Cargo.lock.calltime-source") || rel == Path::new("Cargo.lock") {
            continue;
        }
        if entry.file_type().is_dir() {
            stale_dirs.push(entry.path().to_owned());
        } else {
            std::fs::remove_file(entry.path()).with_context(|| format!("cannot remove {}", entry.path().display()))?;
            removed += 1;
        }
    }
    for d in stale_dirs {
        let _ = std::fs::remove_dir(&d);
    }
    Ok(removed)
}

/// Edits one manifest of the copy, preserving its formatting: relative paths that leave the workspace become
/// absolute (the copy lives elsewhere), the runtime dependency is added when `runtime` is given, and the root
/// manifest gets an empty `[workspace]` if it has none, so cargo never looks above the copy for a workspace.
pub fn edit_manifest(
    text: &str,
    manifest_path: &Path,
    ws_root: &Path,
    runtime: Option<&Path>,
    is_root: bool,
    patch_crates_io: Option<&Path>,
) -> Result<String> {
    let mut doc: DocumentMut = text.parse().context("not valid TOML")?;
    let manifest_dir = manifest_path.parent().unwrap_or(Path::new("."));
    let ws_root = normalize(ws_root);
    let fix = |value: &mut Value| fix_path_value(value, manifest_dir, &ws_root);

    const DEP_TABLES: &[&str] =
        &["dependencies", "dev-dependencies", "build-dependencies", "dev_dependencies", "build_dependencies"];
    let table = doc.as_table_mut();
    for name in DEP_TABLES {
        if let Some(deps) = table.get_mut(name) {
            fix_dep_table(deps, &fix);
        }
    }
    if let Some(targets) = table.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, target) in targets.iter_mut() {
            if let Some(target) = target.as_table_like_mut() {
                for name in DEP_TABLES {
                    if let Some(deps) = target.get_mut(name) {
                        fix_dep_table(deps, &fix);
                    }
                }
            }
        }
    }
    if let Some(workspace) = table.get_mut("workspace").and_then(Item::as_table_like_mut) {
        if let Some(deps) = workspace.get_mut("dependencies") {
            fix_dep_table(deps, &fix);
        }
    }
    if let Some(patches) = table.get_mut("patch").and_then(Item::as_table_like_mut) {
        for (_, source) in patches.iter_mut() {
            fix_dep_table(source, &fix);
        }
    }
    if let Some(replace) = table.get_mut("replace") {
        fix_dep_table(replace, &fix);
    }
    if let Some(package) = table.get_mut("package").and_then(Item::as_table_like_mut) {
        for key in ["workspace", "build", "readme", "license-file"] {
            if let Some(value) = package.get_mut(key).and_then(Item::as_value_mut) {
                fix(value);
            }
        }
    }
    for key in ["lib", "bin", "example", "test", "bench"] {
        match table.get_mut(key) {
            Some(Item::Table(t)) => {
                if let Some(v) = t.get_mut("path").and_then(Item::as_value_mut) {
                    fix(v);
                }
            }
            Some(Item::ArrayOfTables(a)) => {
                for t in a.iter_mut() {
                    if let Some(v) = t.get_mut("path").and_then(Item::as_value_mut) {
                        fix(v);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(runtime) = runtime {
        let deps = table.entry("dependencies").or_insert_with(|| Item::Table(toml_edit::Table::new()));
        let Some(deps) = deps.as_table_like_mut() else {
            bail!("`dependencies` is not a table");
        };
        let mut dep = toml_edit::InlineTable::new();
        dep.insert("path", Value::from(runtime.display().to_string()));
        deps.insert("calltime-rt", Item::Value(Value::InlineTable(dep)));
    }
    if let Some(runtime) = patch_crates_io {
        let patch = table.entry("patch").or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        let crates_io = patch
            .as_table_like_mut()
            .context("`patch` is not a table")?
            .entry("crates-io")
            .or_insert_with(|| Item::Table(toml_edit::Table::new()));
        let mut dep = toml_edit::InlineTable::new();
        dep.insert("path", Value::from(runtime.display().to_string()));
        crates_io
            .as_table_like_mut()
            .context("`patch.crates-io` is not a table")?
            .insert("calltime-rt", Item::Value(Value::InlineTable(dep)));
    }
    if is_root && !table.contains_key("workspace") {
        table.insert("workspace", Item::Table(toml_edit::Table::new()));
    }
    if is_root {
        optimize_runtime_in_dev(table)?;
    }
    Ok(doc.to_string())
}

/// `[profile.dev.package.calltime-rt] opt-level = 3` unless the user set one: the probes and the trace writer are
/// compiled optimised even in a debug build, so a debug run's overhead stays small and the writer keeps up with
/// bursts of short invocations (a test harness running on every core).
fn optimize_runtime_in_dev(table: &mut toml_edit::Table) -> Result<()> {
    let mut level = table;
    for key in ["profile", "dev", "package", "calltime-rt"] {
        let entry = level.entry(key).or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        level = entry.as_table_mut().with_context(|| format!("`{key}` in the root manifest is not a table"))?;
    }
    if !level.contains_key("opt-level") {
        level.insert("opt-level", toml_edit::value(3));
    }
    Ok(())
}

fn fix_dep_table(deps: &mut Item, fix: &impl Fn(&mut Value)) {
    let Some(deps) = deps.as_table_like_mut() else { return };
    for (_, dep) in deps.iter_mut() {
        if let Some(dep) = dep.as_table_like_mut() {
            if let Some(path) = dep.get_mut("path").and_then(Item::as_value_mut) {
                fix(path);
            }
        }
    }
}

/// Makes a relative path value absolute when it resolves outside the workspace, keeping its decoration.
fn fix_path_value(value: &mut Value, manifest_dir: &Path, ws_root: &Path) {
    let Some(text) = value.as_str() else { return };
    let path = Path::new(text);
    if path.is_absolute() {
        return;
    }
    let resolved = normalize(&manifest_dir.join(path));
    if resolved.starts_with(ws_root) {
        return;
    }
    let decor = value.decor().clone();
    *value = Value::from(resolved.display().to_string());
    *value.decor_mut() = decor;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_paths_leaving_the_workspace_become_absolute() {
        let text = r#"[package]
name = "a" # keep me
workspace = "../.."
readme = "../../../README.md"

[dependencies]
inside = { path = "../b" }
outside = { path = "../../../lib" } # comment
plain = "1"

[target.'cfg(unix)'.dependencies]
tgt = { path = "../../../t" }

[dev-dependencies.dd]
path = "../../../dd"

[patch.crates-io]
p = { path = "../../../p" }
"#;
        let out = edit_manifest(
            text,
            Path::new("/w/crates/a/Cargo.toml"),
            Path::new("/w"),
            Some(Path::new("/rt")),
            false,
            None,
        )
        .unwrap();
        assert_eq!(
            out,
            r#"[package]
name = "a" # keep me
workspace = "../.."
readme = "/README.md"

[dependencies]
inside = { path = "../b" }
outside = { path = "/lib" } # comment
plain = "1"
calltime-rt = { path = "/rt" }

[target.'cfg(unix)'.dependencies]
tgt = { path = "/t" }

[dev-dependencies.dd]
path = "/dd"

[patch.crates-io]
p = { path = "/p" }
"#
        );
    }

    #[test]
    fn root_manifest_gets_a_workspace_table_and_dependencies_when_missing() {
        let out = edit_manifest(
            "[package]\nname = \"a\"\n",
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            Some(Path::new("/rt")),
            true,
            None,
        )
        .unwrap();
        assert_eq!(
            out,
            "[package]\nname = \"a\"\n\n[dependencies]\ncalltime-rt = { path = \"/rt\" }\n\n[workspace]\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\n"
        );
        let out = edit_manifest(
            "[workspace]\nmembers = [\"a\"]\n",
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            None,
            true,
            None,
        )
        .unwrap();
        assert_eq!(out, "[workspace]\nmembers = [\"a\"]\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\n");
    }

    #[test]
    fn a_registry_runtime_is_patched_with_the_probes_runtime() {
        let out = edit_manifest(
            "[workspace]\n\n[patch.crates-io]\nserde = { path = \"s\" }\n",
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            None,
            true,
            Some(Path::new("/rt")),
        )
        .unwrap();
        assert_eq!(
            out,
            "[workspace]\n\n[patch.crates-io]\nserde = { path = \"s\" }\ncalltime-rt = { path = \"/rt\" }\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\n"
        );
        let out = edit_manifest(
            "[workspace]\n",
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            None,
            true,
            Some(Path::new("/rt")),
        )
        .unwrap();
        assert_eq!(out, "[workspace]\n\n[patch.crates-io]\ncalltime-rt = { path = \"/rt\" }\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\n");
    }

    #[test]
    fn fnv_is_the_reference_function() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_copy_is_reused_and_only_changed_files_are_touched() {
        let tmp = tempfile::tempdir().unwrap();
        let ws_dir = tmp.path().join("ws");
        let write = |rel: &str, text: &str| {
            let path = ws_dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("Cargo.toml", "[package]\nname = \"k\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
        write("src/lib.rs", "pub mod extra;\n");
        write("src/extra.rs", "pub fn f() {}\n");
        write(".git/HEAD", "ref: x\n");
        write("target/CACHEDIR.TAG", "tag\n");
        write("target/debug/junk", "junk\n");
        let args = crate::cli::CargoArgs { manifest_path: Some(ws_dir.join("Cargo.toml")), ..Default::default() };
        let ws = Workspace::load(&args).unwrap();
        let copy = tmp.path().join("copy");
        let rt = tmp.path().join("rt");

        let first = prepare(&ws, &copy, None, &rt).unwrap();
        assert_eq!((first.files, first.written, first.removed), (3, 3, 0));
        assert!(!copy.join(".git").exists() && !copy.join("target").exists());
        // The copy is its own workspace root.
        assert!(std::fs::read_to_string(copy.join("Cargo.toml")).unwrap().contains("\n[workspace]\n"));
        let mtime = |rel: &str| std::fs::metadata(copy.join(rel)).unwrap().modified().unwrap();
        let lib_mtime = mtime("src/lib.rs");
        assert_eq!(lib_mtime, std::fs::metadata(ws_dir.join("src/lib.rs")).unwrap().modified().unwrap());

        let again = prepare(&ws, &copy, None, &rt).unwrap();
        assert_eq!((again.written, again.removed), (0, 0));
        assert_eq!(mtime("src/lib.rs"), lib_mtime);

        write("src/extra.rs", "pub fn g() {}\n");
        write("src/new.rs", "\n");
        let changed = prepare(&ws, &copy, None, &rt).unwrap();
        assert_eq!((changed.written, changed.removed), (2, 0));
        assert_eq!(std::fs::read_to_string(copy.join("src/extra.rs")).unwrap(), "pub fn g() {}\n");
        assert_eq!(mtime("src/lib.rs"), lib_mtime);

        std::fs::remove_file(ws_dir.join("src/new.rs")).unwrap();
        let removed = prepare(&ws, &copy, None, &rt).unwrap();
        assert_eq!((removed.written, removed.removed), (0, 1));
        assert!(!copy.join("src/new.rs").exists());
    }

    #[test]
    fn write_if_changed_keeps_identical_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x/y.rs");
        assert!(write_if_changed(&f, b"a").unwrap());
        assert!(!write_if_changed(&f, b"a").unwrap());
        assert!(write_if_changed(&f, b"b").unwrap());
    }
}

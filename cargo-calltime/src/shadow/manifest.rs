//! The copy's manifests: relative paths that leave the workspace made absolute, the runtime dependency added, and
//! the root manifest made a workspace root of its own. Edits keep the user's formatting (toml_edit).

use std::path::Path;

use anyhow::{bail, Context, Result};
use toml_edit::{DocumentMut, Item, Value};

use super::normalize;
use super::redirect::TargetRedirect;

/// What [`edit_manifest`] adds to one manifest.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManifestEdit<'a> {
    /// The runtime's directory, added as a path dependency.
    pub runtime: Option<&'a Path>,
    /// The copy's root manifest: made a workspace root of its own.
    pub is_root: bool,
    /// The runtime's directory, patched in for crates.io's calltime-rt.
    pub patch_crates_io: Option<&'a Path>,
    /// In the root manifest, the runtime's build settings (not when it is prebuilt: cargo would warn that the
    /// profile names no package).
    pub runtime_profiles: bool,
}

/// Edits one manifest of the copy, preserving its formatting: relative paths that leave the workspace become
/// absolute (the copy lives elsewhere), the runtime dependency is added when `runtime` is given, and the root
/// manifest gets an empty `[workspace]` if it has none, so cargo never looks above the copy for a workspace.
pub fn edit_manifest(text: &str, manifest_path: &Path, ws_root: &Path, edit: ManifestEdit) -> Result<String> {
    let ManifestEdit { runtime, is_root, patch_crates_io, runtime_profiles } = edit;
    let mut doc: DocumentMut = text.parse().context("not valid TOML")?;
    let manifest_dir = manifest_path.parent().unwrap_or(Path::new("."));
    let ws_root = normalize(ws_root);
    let table = doc.as_table_mut();
    fix_paths(table, &|value: &mut Value| fix_path_value(value, manifest_dir, &ws_root));
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
    if is_root && runtime_profiles {
        configure_runtime_profiles(table)?;
    }
    Ok(doc.to_string())
}

/// Points each of `targets` at its sibling in the copy's manifest: the `path` of `[lib]` or of the `[[bin]]` (etc.)
/// table with its name, a table added for a target cargo discovered by itself.
pub fn redirect_targets(text: &str, targets: &[TargetRedirect]) -> Result<String> {
    let mut doc: DocumentMut = text.parse().context("not valid TOML")?;
    for target in targets {
        let path = Item::Value(Value::from(target.path.as_str()));
        if target.kind == "lib" {
            let lib = doc.entry("lib").or_insert_with(|| Item::Table(toml_edit::Table::new()));
            lib.as_table_like_mut().context("`lib` is not a table")?.insert("path", path);
            continue;
        }
        let list = doc.entry(target.kind).or_insert_with(|| Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
        let Some(list) = list.as_array_of_tables_mut() else {
            bail!("`{}` is not an array of tables ([[{}]])", target.kind, target.kind);
        };
        let named = list.iter_mut().find(|t| t.get("name").and_then(Item::as_str) == Some(target.name.as_str()));
        match named {
            Some(table) => {
                table.insert("path", path);
            }
            None => {
                let mut table = toml_edit::Table::new();
                table.insert("name", toml_edit::value(target.name.as_str()));
                table.insert("path", path);
                list.push(table);
            }
        }
    }
    Ok(doc.to_string())
}

/// Makes absolute every relative path of the manifest that leaves the workspace: dependencies (of every kind, per
/// target, of the workspace, patches and replacements), package files and target paths.
fn fix_paths(table: &mut toml_edit::Table, fix: &impl Fn(&mut Value)) {
    const DEP_TABLES: &[&str] =
        &["dependencies", "dev-dependencies", "build-dependencies", "dev_dependencies", "build_dependencies"];
    for name in DEP_TABLES {
        if let Some(deps) = table.get_mut(name) {
            fix_dep_table(deps, fix);
        }
    }
    if let Some(targets) = table.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, target) in targets.iter_mut() {
            if let Some(target) = target.as_table_like_mut() {
                for name in DEP_TABLES {
                    if let Some(deps) = target.get_mut(name) {
                        fix_dep_table(deps, fix);
                    }
                }
            }
        }
    }
    if let Some(workspace) = table.get_mut("workspace").and_then(Item::as_table_like_mut) {
        if let Some(deps) = workspace.get_mut("dependencies") {
            fix_dep_table(deps, fix);
        }
    }
    if let Some(patches) = table.get_mut("patch").and_then(Item::as_table_like_mut) {
        for (_, source) in patches.iter_mut() {
            fix_dep_table(source, fix);
        }
    }
    if let Some(replace) = table.get_mut("replace") {
        fix_dep_table(replace, fix);
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
}

/// The runtime's build settings, each unless the user set it: `[profile.dev.package.calltime-rt] opt-level = 3`, so
/// the probes and the trace writer are compiled optimised even in a debug build (a debug run's overhead stays small
/// and the writer keeps up with bursts of short invocations on every core). In dev and release, `debug = false`
/// and `codegen-units = 1`: the runtime's compile is on the first run's critical path, its own debug info serves
/// nobody (the probes are inlined into the user's crates, which keep theirs), and one unit skips the ThinLTO pass
/// that dominated its optimised compile (docs/performance.md: 7.2 s of CPU down to 4.5 s on the demo's first run).
fn configure_runtime_profiles(table: &mut toml_edit::Table) -> Result<()> {
    let dev = runtime_profile(table, "dev")?;
    if !dev.contains_key("opt-level") {
        dev.insert("opt-level", toml_edit::value(3));
    }
    for profile in ["dev", "release"] {
        let runtime = runtime_profile(table, profile)?;
        if !runtime.contains_key("debug") {
            runtime.insert("debug", toml_edit::value(false));
        }
        if !runtime.contains_key("codegen-units") {
            runtime.insert("codegen-units", toml_edit::value(1));
        }
    }
    Ok(())
}

/// `[profile.<profile>.package.calltime-rt]`, created (as dotted-header tables) when missing.
fn runtime_profile<'t>(table: &'t mut toml_edit::Table, profile: &str) -> Result<&'t mut toml_edit::Table> {
    let mut level = table;
    for key in ["profile", profile, "package", "calltime-rt"] {
        let entry = level.entry(key).or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        level = entry.as_table_mut().with_context(|| format!("`{key}` in the root manifest is not a table"))?;
    }
    Ok(level)
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
        let edit = ManifestEdit { runtime: Some(Path::new("/rt")), ..Default::default() };
        let out = edit_manifest(text, Path::new("/w/crates/a/Cargo.toml"), Path::new("/w"), edit).unwrap();
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
    fn targets_are_pointed_at_their_siblings_declared_or_discovered() {
        let text = "[package]\nname = \"a\"\n\n[[bin]]\nname = \"tool\"\npath = \"src/tool.rs\"\n";
        let targets = [
            TargetRedirect { kind: "lib", name: "a".into(), path: "src/.lib.calltime.rs".into() },
            TargetRedirect { kind: "bin", name: "tool".into(), path: "src/.tool.calltime.rs".into() },
            TargetRedirect { kind: "bin", name: "a".into(), path: "src/.main.calltime.rs".into() },
        ];
        assert_eq!(
            redirect_targets(text, &targets).unwrap(),
            "[package]\nname = \"a\"\n\n[[bin]]\nname = \"tool\"\npath = \"src/.tool.calltime.rs\"\n\n[[bin]]\n\
             name = \"a\"\npath = \"src/.main.calltime.rs\"\n\n[lib]\npath = \"src/.lib.calltime.rs\"\n"
        );
    }

    /// Edits a root manifest `/w/Cargo.toml`, with the runtime at `/rt` as a dependency and/or a crates.io patch.
    fn edit_root(text: &str, runtime: bool, patch: bool) -> String {
        let rt = Path::new("/rt");
        let (runtime, patch) = (runtime.then_some(rt), patch.then_some(rt));
        let edit = ManifestEdit { runtime, is_root: true, patch_crates_io: patch, runtime_profiles: true };
        edit_manifest(text, Path::new("/w/Cargo.toml"), Path::new("/w"), edit).unwrap()
    }

    #[test]
    fn a_prebuilt_runtime_gets_no_dependency_and_no_profile() {
        let edit = ManifestEdit { is_root: true, ..Default::default() };
        let out = edit_manifest("[package]\nname = \"a\"\n", Path::new("/w/Cargo.toml"), Path::new("/w"), edit);
        assert_eq!(out.unwrap(), "[package]\nname = \"a\"\n\n[workspace]\n");
    }

    #[test]
    fn root_manifest_gets_a_workspace_table_and_dependencies_when_missing() {
        let out = edit_root("[package]\nname = \"a\"\n", true, false);
        assert_eq!(
            out,
            "[package]\nname = \"a\"\n\n[dependencies]\ncalltime-rt = { path = \"/rt\" }\n\n[workspace]\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\ndebug = false\ncodegen-units = 1\n\n[profile.release.package.calltime-rt]\ndebug = false\ncodegen-units = 1\n"
        );
        let out = edit_root("[workspace]\nmembers = [\"a\"]\n", false, false);
        assert_eq!(out, "[workspace]\nmembers = [\"a\"]\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\ndebug = false\ncodegen-units = 1\n\n[profile.release.package.calltime-rt]\ndebug = false\ncodegen-units = 1\n");
    }

    #[test]
    fn the_users_own_runtime_settings_are_kept() {
        let text = "[workspace]\n\n[profile.dev.package.calltime-rt]\nopt-level = 1\ndebug = 2\n";
        let out = edit_root(text, false, false);
        assert_eq!(
            out,
            "[workspace]\n\n[profile.dev.package.calltime-rt]\nopt-level = 1\ndebug = 2\ncodegen-units = 1\n\n\
             [profile.release.package.calltime-rt]\ndebug = false\ncodegen-units = 1\n"
        );
    }

    #[test]
    fn a_registry_runtime_is_patched_with_the_probes_runtime() {
        let out = edit_root("[workspace]\n\n[patch.crates-io]\nserde = { path = \"s\" }\n", false, true);
        assert_eq!(
            out,
            "[workspace]\n\n[patch.crates-io]\nserde = { path = \"s\" }\ncalltime-rt = { path = \"/rt\" }\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\ndebug = false\ncodegen-units = 1\n\n[profile.release.package.calltime-rt]\ndebug = false\ncodegen-units = 1\n"
        );
        let out = edit_root("[workspace]\n", false, true);
        assert_eq!(out, "[workspace]\n\n[patch.crates-io]\ncalltime-rt = { path = \"/rt\" }\n\n[profile.dev.package.calltime-rt]\nopt-level = 3\ndebug = false\ncodegen-units = 1\n\n[profile.release.package.calltime-rt]\ndebug = false\ncodegen-units = 1\n");
    }
}

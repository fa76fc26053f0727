//! Crate targets of the workspace and the files of their module trees, parsed in parallel.
//!
//! Discovery goes breadth first: every file of one round is parsed at once (rayon), and the `mod x;` declarations
//! they hold name the next round's files. Each file is parsed once even when several targets include it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cargo_metadata::{DependencyKind, PackageId};

use super::cfg::CfgEnv;
use super::items::extract_file;
use super::syntax::{FileSummary, ModItems, ModKind};
use crate::workspace::Workspace;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Lib,
    Bin,
    Example,
    Test,
    Bench,
}

/// Where an extern crate name leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepTarget {
    /// The lib target of a workspace member (index into `metadata.packages`).
    Workspace(usize),
    /// A crate outside the workspace: calls into it end the traversal.
    External,
}

/// One compilation unit to index.
#[derive(Debug, Clone)]
pub struct CrateSpec {
    /// The crate name as paths print it (`-` as `_`).
    pub name: String,
    pub package: usize,
    pub manifest_path: PathBuf,
    pub kind: TargetKind,
    pub root_file: PathBuf,
    /// 2015, 2018, 2021, 2024.
    pub edition: u16,
    /// In a package selected by `-p` (or no `-p` given).
    pub selected: bool,
    /// The extern prelude: dependency names (renames applied) as code writes them.
    pub deps: Vec<(String, DepTarget)>,
    /// What its `#[cfg(..)]`s are evaluated against: the package's enabled features and the host target.
    pub cfg: Arc<CfgEnv>,
}

/// The local paths the workspace root's `[patch.<source>]` tables give packages, by package name: `toml_parser = {
/// path = "toml_parser" }` under `[patch.crates-io]` makes every dependency on the registry's `toml_parser` the
/// member in `toml_parser/`. A manifest that cannot be read has no patches here (cargo reports it elsewhere).
fn patched_paths(root: &Path) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    let Ok(text) = std::fs::read_to_string(root.join("Cargo.toml")) else { return out };
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else { return out };
    let Some(patch) = doc.get("patch").and_then(|p| p.as_table_like()) else { return out };
    for (_, source) in patch.iter() {
        let Some(source) = source.as_table_like() else { continue };
        for (key, entry) in source.iter() {
            let Some(entry) = entry.as_table_like() else { continue };
            let Some(path) = entry.get("path").and_then(|p| p.as_str()) else { continue };
            let package = entry.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            out.insert(package.to_owned(), normalize(&root.join(path)));
        }
    }
    out
}

/// `a/./b/../c` as `a/c`, without touching the file system (cargo metadata's paths are normalised the same way).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn crate_name(target: &str) -> String {
    target.replace('-', "_")
}

/// Every target worth indexing: the lib of each workspace member, plus the bins of the selected members, and
/// with `with_aux` their examples, tests and benches too. Build scripts and proc-macro crates are never
/// instrumented, so they are not indexed.
pub fn crate_specs(ws: &Workspace, with_aux: bool) -> Vec<CrateSpec> {
    let meta = &ws.metadata;
    let by_id: HashMap<&PackageId, usize> = meta.packages.iter().enumerate().map(|(i, p)| (&p.id, i)).collect();
    let members: HashSet<usize> = meta.workspace_members.iter().filter_map(|id| by_id.get(id).copied()).collect();
    let lib_of = |pkg: usize| {
        meta.packages[pkg].targets.iter().find(|t| {
            t.kind.iter().any(|k| matches!(k.to_string().as_str(), "lib" | "rlib" | "dylib" | "cdylib" | "staticlib"))
        })
    };
    let patched =
        if meta.resolve.is_none() { patched_paths(meta.workspace_root.as_std_path()) } else { HashMap::new() };
    let mut specs = Vec::new();
    let mut member_list: Vec<usize> = members.iter().copied().collect();
    member_list.sort_unstable();
    for pkg_index in member_list {
        let pkg = &meta.packages[pkg_index];
        let selected = ws.selected.contains(&pkg_index);
        // Dependencies by kind, from the resolved graph (features applied) or, without one, the manifest.
        let mut normal: Vec<(String, DepTarget)> = Vec::new();
        let mut dev: Vec<(String, DepTarget)> = Vec::new();
        let node = meta.resolve.as_ref().and_then(|r| r.nodes.iter().find(|n| n.id == pkg.id));
        match node {
            Some(node) => {
                for dep in &node.deps {
                    let target = match by_id.get(&dep.pkg) {
                        Some(&i) if members.contains(&i) && lib_of(i).is_some() => DepTarget::Workspace(i),
                        _ => DepTarget::External,
                    };
                    let kinds: Vec<DependencyKind> = dep.dep_kinds.iter().map(|k| k.kind).collect();
                    if kinds.is_empty() || kinds.contains(&DependencyKind::Normal) {
                        normal.push((dep.name.clone(), target.clone()));
                    }
                    if kinds.contains(&DependencyKind::Development) {
                        dev.push((dep.name.clone(), target));
                    }
                }
            }
            None => {
                for dep in &pkg.dependencies {
                    let name = crate_name(dep.rename.as_deref().unwrap_or(&dep.name));
                    // A registry dependency that the root manifest's `[patch]` points at a member is that member, as
                    // in cargo's resolve (which `--no-deps` does not give).
                    let path = dep
                        .path
                        .as_ref()
                        .map(|p| p.as_std_path())
                        .or_else(|| patched.get(&dep.name).filter(|_| dep.source.is_some()).map(PathBuf::as_path));
                    let target = path
                        .and_then(|p| {
                            members.iter().copied().find(|&i| {
                                meta.packages[i].manifest_path.parent().is_some_and(|d| d.as_std_path() == p)
                                    && lib_of(i).is_some()
                            })
                        })
                        .map(DepTarget::Workspace)
                        .unwrap_or(DepTarget::External);
                    match dep.kind {
                        DependencyKind::Normal => normal.push((name, target)),
                        DependencyKind::Development => dev.push((name, target)),
                        _ => {}
                    }
                }
            }
        }
        let cfg = Arc::new(CfgEnv { features: ws.features.get(&pkg_index).cloned() });
        let own_lib = lib_of(pkg_index).map(|t| (crate_name(&t.name), DepTarget::Workspace(pkg_index)));
        for target in &pkg.targets {
            let kinds: Vec<String> = target.kind.iter().map(|k| k.to_string()).collect();
            let kind = if kinds.iter().any(|k| matches!(k.as_str(), "lib" | "rlib" | "dylib" | "cdylib" | "staticlib"))
            {
                TargetKind::Lib
            } else if kinds.iter().any(|k| k == "bin") {
                TargetKind::Bin
            } else if kinds.iter().any(|k| k == "example") {
                TargetKind::Example
            } else if kinds.iter().any(|k| k == "test") {
                TargetKind::Test
            } else if kinds.iter().any(|k| k == "bench") {
                TargetKind::Bench
            } else {
                // custom-build and proc-macro
                continue;
            };
            if kind != TargetKind::Lib && !selected {
                continue;
            }
            let aux = matches!(kind, TargetKind::Example | TargetKind::Test | TargetKind::Bench);
            if !with_aux && aux {
                continue;
            }
            // Packaged crates list tests, benches and examples whose files crates.io does not ship; `cargo build`
            // and `cargo run` ignore them silently, and so does the analysis (no root can be in a missing file).
            if aux && !target.src_path.as_std_path().is_file() {
                continue;
            }
            let mut deps = normal.clone();
            if matches!(kind, TargetKind::Example | TargetKind::Test | TargetKind::Bench) {
                deps.extend(dev.iter().cloned());
            }
            if kind != TargetKind::Lib {
                deps.extend(own_lib.clone());
            }
            let edition: u16 = target.edition.as_str().parse().unwrap_or(2021);
            specs.push(CrateSpec {
                name: crate_name(&target.name),
                package: pkg_index,
                manifest_path: pkg.manifest_path.clone().into_std_path_buf(),
                kind,
                root_file: target.src_path.clone().into_std_path_buf(),
                edition,
                selected,
                deps,
                cfg: cfg.clone(),
            });
        }
    }
    specs
}

/// Every parsed file and how module declarations map to files.
#[derive(Default)]
pub struct SourceSet {
    pub files: HashMap<PathBuf, Arc<FileSummary>>,
    /// (declaring file, declaration number) -> the file that holds the module.
    pub children: HashMap<(PathBuf, usize), PathBuf>,
    /// (path, line) pairs first, then the message: sorted by the caller for stable output.
    pub warnings: Vec<String>,
    pub lines: usize,
}

/// A file to parse, with the directory its `mod x;` children live in.
struct Pending {
    path: PathBuf,
    children_dir: PathBuf,
}

fn children_dir(path: &Path, mod_rs: bool) -> PathBuf {
    let parent = path.parent().map(Path::to_owned).unwrap_or_default();
    if mod_rs {
        parent
    } else {
        parent.join(path.file_stem().unwrap_or_default())
    }
}

/// A module declaration found in a file, with the files it may live in (first existing wins).
struct ChildDecl {
    decl: usize,
    name: String,
    line: u32,
    candidates: Vec<(PathBuf, bool)>,
}

fn collect_child_decls(items: &ModItems, file: &Path, dir: &Path, rel: &Path, top: bool, out: &mut Vec<ChildDecl>) {
    for m in &items.mods {
        // `#[cfg(test)] mod tests;` is not part of any program cargo-calltime runs: not worth parsing.
        if m.test_only {
            continue;
        }
        match &m.kind {
            ModKind::External { decl } => {
                let candidates = match &m.path_attr {
                    // `#[path]` at a file's top level is relative to the file's directory, inside inline modules to
                    // the directory those modules stand for; the file then owns its directory like a mod.rs.
                    Some(p) if top => vec![(file.parent().unwrap_or(Path::new("")).join(p), true)],
                    Some(p) => vec![(dir.join(rel).join(p), true)],
                    None => {
                        let base = dir.join(rel);
                        vec![(base.join(format!("{}.rs", m.name)), false), (base.join(&m.name).join("mod.rs"), true)]
                    }
                };
                out.push(ChildDecl { decl: *decl, name: m.name.clone(), line: m.line, candidates });
            }
            ModKind::Inline(inner) => {
                let component = m.path_attr.clone().unwrap_or_else(|| m.name.clone());
                collect_child_decls(inner, file, dir, &rel.join(component), false, out);
            }
        }
    }
}

/// Parses the module trees of all crates. Each parsed file spawns the parsing of the module files it declares at
/// once (work stealing, no barrier between tree levels), so one large file does not hold the others up.
pub fn parse_sources(specs: &[CrateSpec]) -> SourceSet {
    let shared = std::sync::Mutex::new((SourceSet::default(), HashSet::<PathBuf>::new()));
    rayon::scope(|scope| {
        for spec in specs {
            let pending = Pending { path: spec.root_file.clone(), children_dir: children_dir(&spec.root_file, true) };
            spawn_parse(scope, &shared, pending);
        }
    });
    let (mut set, _) = shared.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    set.warnings.sort();
    set
}

type Shared = std::sync::Mutex<(SourceSet, HashSet<PathBuf>)>;

fn spawn_parse<'s>(scope: &rayon::Scope<'s>, shared: &'s Shared, pending: Pending) {
    {
        let mut guard = shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !guard.1.insert(pending.path.clone()) {
            return;
        }
    }
    scope.spawn(move |scope| {
        let result = parse_one(&pending.path).map(|summary| {
            let mut decls = Vec::new();
            collect_child_decls(&summary.items, &pending.path, &pending.children_dir, Path::new(""), true, &mut decls);
            (summary, decls)
        });
        let mut children = Vec::new();
        {
            let mut guard = shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let set = &mut guard.0;
            match result {
                Ok((summary, decls)) => {
                    set.lines += summary.lines;
                    for decl in decls {
                        match decl.candidates.iter().find(|(p, _)| p.is_file()) {
                            Some((child, mod_rs)) => {
                                set.children.insert((pending.path.clone(), decl.decl), child.clone());
                                children
                                    .push(Pending { path: child.clone(), children_dir: children_dir(child, *mod_rs) });
                            }
                            None => {
                                let looked: Vec<String> =
                                    decl.candidates.iter().map(|(p, _)| p.display().to_string()).collect();
                                set.warnings.push(format!(
                                    "{}:{}: module `{}` not found (looked for {})",
                                    pending.path.display(),
                                    decl.line,
                                    decl.name,
                                    looked.join(" and ")
                                ));
                            }
                        }
                    }
                    set.files.insert(pending.path, Arc::new(summary));
                }
                Err(message) => set.warnings.push(message),
            }
        }
        for child in children {
            spawn_parse(scope, shared, child);
        }
    });
}

/// Reads and extracts one file; the error is a complete warning line.
fn parse_one(path: &Path) -> Result<FileSummary, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: could not read: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: could not read: not valid UTF-8", path.display()))?;
    // syn should never panic, but a panic on user code must not take the tool down.
    let extracted = std::panic::catch_unwind(|| extract_file(&text))
        .map_err(|_| format!("{}: could not parse: the parser panicked", path.display()))?;
    extracted.map_err(|(line, message)| format!("{}:{line}: could not parse: {message}", path.display()))
}

/// The Rust text of a file as syn and proc-macro2 take it: without a BOM and a shebang line, with the number of
/// bytes left out before it (to add to every offset).
pub(crate) fn rust_text(text: &str) -> (usize, &str) {
    let mut base = 0;
    let mut content = text;
    if let Some(rest) = content.strip_prefix('\u{feff}') {
        base += '\u{feff}'.len_utf8();
        content = rest;
    }
    if content.starts_with("#!") && !content[2..].trim_start().starts_with('[') {
        let end = content.find('\n').unwrap_or(content.len());
        base += end;
        content = &content[end..];
    }
    (base, content)
}

/// One out-of-line `mod name;` declaration of a file, found by a token scan (items inside macro invocations such as
/// `cfg_if!` included), with what the shadow copy needs to give it a `#[path]` of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModDecl {
    pub name: String,
    /// Byte offset in the file where an outer attribute can go: the start of the visibility, else of `mod`.
    pub insert_at: usize,
    /// The directories the enclosing inline modules stand for, outermost first (each one's `#[path]` or name).
    pub inline_dirs: Vec<String>,
    /// The first `#[path = "..."]` value.
    pub path_attr: Option<String>,
    /// Each `#[path = ...]` attribute as (offset just after its `#[`, offset of its `]`).
    pub path_attr_brackets: Vec<(usize, usize)>,
    /// A `#[cfg_attr(.., path = ..)]` may choose the file.
    pub cfg_attr_path: bool,
}

/// Every out-of-line module declaration of `text` (the whole file as on disk: offsets count its BOM and shebang).
/// Only tokenizes: comments and strings are skipped, nothing is parsed as items.
pub fn module_decls(text: &str) -> Result<Vec<ModDecl>, String> {
    let (base, content) = rust_text(text);
    let parsed = content.parse::<proc_macro2::TokenStream>();
    let mut out = Vec::new();
    if let Ok(tokens) = &parsed {
        scan_decls(tokens.clone(), base, &[], &mut out);
    }
    // The decls hold no spans: free this file's source map entry.
    proc_macro2::extra::invalidate_current_thread_spans();
    parsed.map_err(|err| format!("cannot tokenize: {err}"))?;
    Ok(out)
}

fn scan_decls(tokens: proc_macro2::TokenStream, base: usize, inline_dirs: &[String], out: &mut Vec<ModDecl>) {
    use proc_macro2::{Delimiter, TokenTree};
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let start = |t: &TokenTree| base + t.span().byte_range().start;
    let is_punct = |t: Option<&TokenTree>, c: char| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c);
    let mut attrs: Vec<&proc_macro2::Group> = Vec::new();
    let mut vis_at: Option<usize> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                if let Some(TokenTree::Group(g)) = tokens.get(i + 1).filter(|_| !is_punct(tokens.get(i + 1), '!')) {
                    if g.delimiter() == Delimiter::Bracket {
                        attrs.push(g);
                        i += 2;
                        continue;
                    }
                }
                attrs.clear();
                vis_at = None;
            }
            TokenTree::Ident(id) if id == "pub" => {
                vis_at = Some(start(&tokens[i]));
                if matches!(tokens.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis) {
                    i += 1;
                }
            }
            TokenTree::Ident(id) if id == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    let path_attrs: Vec<&proc_macro2::Group> =
                        attrs.iter().copied().filter(|g| attr_name(g).as_deref() == Some("path")).collect();
                    let path_attr = path_attrs.first().and_then(|g| path_value(g));
                    if is_punct(tokens.get(i + 2), ';') {
                        out.push(ModDecl {
                            name: name.to_string().trim_start_matches("r#").to_owned(),
                            insert_at: vis_at.unwrap_or_else(|| start(&tokens[i])),
                            inline_dirs: inline_dirs.to_vec(),
                            path_attr,
                            path_attr_brackets: path_attrs
                                .iter()
                                .map(|g| {
                                    (base + g.span_open().byte_range().end, base + g.span_close().byte_range().start)
                                })
                                .collect(),
                            cfg_attr_path: attrs.iter().any(|g| is_cfg_attr_path(g)),
                        });
                        i += 3;
                    } else if let Some(TokenTree::Group(body)) = tokens.get(i + 2) {
                        let dir = path_attr.unwrap_or_else(|| name.to_string().trim_start_matches("r#").to_owned());
                        let nested = [inline_dirs, &[dir]].concat();
                        scan_decls(body.stream(), base, &nested, out);
                        i += 3;
                    } else {
                        i += 1;
                    }
                    attrs.clear();
                    vis_at = None;
                    continue;
                }
                attrs.clear();
                vis_at = None;
            }
            // Macro bodies (`cfg_if! { .. mod unix; .. }`) and any other group may hold declarations too.
            TokenTree::Group(g) => {
                scan_decls(g.stream(), base, inline_dirs, out);
                attrs.clear();
                vis_at = None;
            }
            _ => {
                attrs.clear();
                vis_at = None;
            }
        }
        i += 1;
    }
}

/// The name of the attribute in `#[...]` (`path`, `cfg_attr`, ...).
fn attr_name(group: &proc_macro2::Group) -> Option<String> {
    match group.stream().into_iter().next() {
        Some(proc_macro2::TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    }
}

/// The string of `path = "..."`.
fn path_value(group: &proc_macro2::Group) -> Option<String> {
    let literal = group.stream().into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Literal(l) => Some(l),
        _ => None,
    })?;
    match syn::Lit::new(literal) {
        syn::Lit::Str(s) => Some(s.value()),
        _ => None,
    }
}

fn is_cfg_attr_path(group: &proc_macro2::Group) -> bool {
    fn mentions_path(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(id) => id == "path",
            proc_macro2::TokenTree::Group(g) => mentions_path(g.stream()),
            _ => false,
        })
    }
    attr_name(group).as_deref() == Some("cfg_attr") && mentions_path(group.stream())
}

#[cfg(test)]
mod decl_tests {
    use super::*;

    #[test]
    fn declarations_are_found_with_their_offsets_attributes_and_inline_directories() {
        let text = "\u{feff}//! doc\n#[cfg(unix)] pub(crate) mod a;\nmod b { #[path = \"x\"] mod c { mod d; } }\n\
                    #[path = \"e.rs\"]\nmod e;\ncfg_if! { if #[cfg(x)] { mod f; } }\n\
                    #[cfg_attr(x, path = \"g.rs\")] mod g;\n// mod h;\nfn i() { let s = \"mod j;\"; }\n";
        let decls = module_decls(text).unwrap();
        let names: Vec<&str> = decls.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "d", "e", "f", "g"]);
        assert_eq!(&text[decls[0].insert_at..decls[0].insert_at + 10], "pub(crate)");
        assert_eq!(decls[1].inline_dirs, ["b", "x"]);
        assert_eq!(&text[decls[1].insert_at..decls[1].insert_at + 6], "mod d;");
        assert_eq!(decls[2].path_attr.as_deref(), Some("e.rs"));
        let (open, close) = decls[2].path_attr_brackets[0];
        assert_eq!(&text[open..close], "path = \"e.rs\"");
        assert!(decls[4].cfg_attr_path && decls[4].path_attr.is_none());
    }
}

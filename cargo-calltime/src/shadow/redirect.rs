//! Originals stay original: a file that gets probes (or any other edit) is copied unchanged under its own name, and
//! the edited text is compiled from a hidden sibling in the same directory (`src/.lib.calltime.rs` for `src/lib.rs`:
//! a dot file, so cargo never discovers it as a target). Build scripts, `include_str!`/`include_bytes!` and the
//! program reading its sources all see the user's bytes.
//!
//! The compiler reaches a sibling through the crate root's path in the copy's manifest and through a `#[path]`
//! attribute inserted before each `mod x;` that leads to one (on the declaration's line, no newline). A file loaded
//! with `#[path]` owns its directory like a `mod.rs`, so in a sibling of a non-mod.rs file (`foo.rs`, whose children
//! live in `foo/`) every declaration the move would resolve elsewhere gets a `#[path]` too, and a child file that
//! has declarations of its own is then compiled from a sibling as well. Every file whose name as rustc sees it
//! changes gets a `--remap-path-prefix` back to the name a plain build gives it, so `file!()`, panics and
//! diagnostics name the user's file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::analysis::modules::{module_decls, ModDecl};
use crate::workspace::Workspace;

/// A target whose crate root the copy's manifest points at a sibling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRedirect {
    /// `lib`, `bin`, `example`, `test` or `bench` (the manifest's table name).
    pub kind: &'static str,
    pub name: String,
    /// The sibling, relative to the manifest's directory, with `/` separators.
    pub path: String,
}

/// What the copy compiles from siblings.
#[derive(Debug, Default)]
pub struct Redirects {
    /// Files (relative to the workspace root) compiled from their sibling, with the `#[path]` insertions the sibling
    /// gets on top of the file's other edits.
    pub files: BTreeMap<PathBuf, Vec<(usize, String)>>,
    /// Per manifest (relative to the workspace root): the targets whose crate root is a sibling.
    pub targets: BTreeMap<PathBuf, Vec<TargetRedirect>>,
    /// (the name rustc gives a compiled file, the name a plain build gives it), relative to the workspace root.
    pub remaps: Vec<(PathBuf, PathBuf)>,
    /// Declarations the copy cannot redirect faithfully (a `#[cfg_attr(.., path = ..)]`).
    pub warnings: Vec<String>,
}

/// The hidden sibling `dir/.name.calltime.rs` that holds the compiled text of `dir/name.rs`.
pub fn sibling_of(rel: &Path) -> PathBuf {
    let name = match (rel.file_stem(), rel.extension()) {
        (Some(stem), Some(ext)) if ext == "rs" => stem.to_string_lossy().into_owned(),
        _ => rel.file_name().unwrap_or_default().to_string_lossy().into_owned(),
    };
    rel.with_file_name(format!(".{name}.calltime.rs"))
}

/// One file of a target's module tree.
struct Node {
    /// The file, relative to the workspace root, normalised.
    rel: PathBuf,
    /// The name rustc gives it in a plain build (joined as rustc joins, `..` kept).
    plain_name: PathBuf,
    /// Whether its `mod x;` children live in its own directory (crate roots, `mod.rs`, files loaded by `#[path]`).
    owning: bool,
    parent: Option<usize>,
    /// The file's path from its declaring file's base directory (`x.rs`, `x/mod.rs` or the `#[path]` value).
    suffix: PathBuf,
    /// Its declarations that lead to a file, with that file's node.
    decls: Vec<(ModDecl, usize)>,
    /// Its declarations of a file an earlier declaration already reached, with that file's node: the alternatives
    /// of a `cfg` (sha2's `cfg_if! { if .. { mod soft; } else if .. { mod soft; } }`). Each needs the same `#[path]`
    /// as the first, as any of them may be the one compiled.
    alternatives: Vec<(ModDecl, usize)>,
}

/// A crate target of an instrumented package and its module tree.
struct Tree {
    manifest: PathBuf,
    manifest_dir: PathBuf,
    kind: &'static str,
    name: String,
    nodes: Vec<Node>,
}

/// Which files compile from siblings so that every file in `edited` (relative to the root) can be edited without
/// touching its original, for the targets of the packages whose manifests are in `packages`. Edited files outside
/// every module tree (found through `include!`, say) are left out: the caller edits those in place.
///
/// `shadow` is where the copy lives: a `#[path]` that would climb out of an inline module's directory (which need
/// not exist) names the file by its absolute path there instead.
pub fn plan(ws: &Workspace, edited: &BTreeSet<PathBuf>, packages: &BTreeSet<PathBuf>, shadow: &Path) -> Redirects {
    let root = &ws.root;
    let mut trees = Vec::new();
    for package in &ws.metadata.packages {
        let Ok(manifest) = package.manifest_path.as_std_path().strip_prefix(root) else { continue };
        if !packages.contains(manifest) {
            continue;
        }
        for target in &package.targets {
            let Some(kind) = table_of(target.kind.iter().map(|k| k.to_string())) else { continue };
            let Ok(crate_root) = target.src_path.as_std_path().strip_prefix(root) else { continue };
            trees.push(Tree {
                manifest: manifest.to_owned(),
                manifest_dir: manifest.parent().unwrap_or(Path::new("")).to_owned(),
                kind,
                name: target.name.clone(),
                nodes: module_tree(root, &lexical(crate_root)),
            });
        }
    }
    let redirected = redirected_files(&trees, edited);
    let mut out = Redirects::default();
    for tree in &trees {
        names_and_insertions(tree, &redirected, shadow, &mut out);
        let crate_root = &tree.nodes[0].rel;
        if redirected.contains(crate_root) {
            let path = slash_path(&relative(&tree.manifest_dir, &sibling_of(crate_root)));
            let redirect = TargetRedirect { kind: tree.kind, name: tree.name.clone(), path };
            out.targets.entry(tree.manifest.clone()).or_default().push(redirect);
        }
    }
    for rel in &redirected {
        out.files.entry(rel.clone()).or_default();
    }
    for inserts in out.files.values_mut() {
        inserts.sort();
        inserts.dedup();
    }
    out.remaps.sort();
    out.remaps.dedup();
    out.warnings.sort();
    out.warnings.dedup();
    out
}

/// The manifest table of a target kind; None for build scripts and proc-macros (never instrumented).
fn table_of(kinds: impl Iterator<Item = String>) -> Option<&'static str> {
    let kinds: Vec<String> = kinds.collect();
    let has = |k: &str| kinds.iter().any(|x| x == k);
    if has("proc-macro") || has("custom-build") {
        None
    } else if ["lib", "rlib", "dylib", "cdylib", "staticlib"].iter().any(|k| has(k)) {
        Some("lib")
    } else {
        ["bin", "example", "test", "bench"].into_iter().find(|k| has(k))
    }
}

/// The module tree of the crate whose root is `crate_root`, breadth first (parents before children). Files that
/// cannot be read or tokenized end their branch: the build reports them.
fn module_tree(root: &Path, crate_root: &Path) -> Vec<Node> {
    let first = Node {
        rel: crate_root.to_owned(),
        plain_name: crate_root.to_owned(),
        owning: true,
        parent: None,
        suffix: PathBuf::new(),
        decls: Vec::new(),
        alternatives: Vec::new(),
    };
    let mut nodes = vec![first];
    let mut seen = BTreeSet::from([crate_root.to_owned()]);
    let mut next = 0;
    while next < nodes.len() {
        let text = std::fs::read_to_string(root.join(&nodes[next].rel)).unwrap_or_default();
        for decl in module_decls(&text).unwrap_or_default() {
            let (name, owning) = (&nodes[next].plain_name, nodes[next].owning);
            let base = decl_base(name, owning, &decl);
            let candidates = match &decl.path_attr {
                Some(path) => vec![(PathBuf::from(path), true)],
                None => vec![
                    (PathBuf::from(format!("{}.rs", decl.name)), false),
                    (Path::new(&decl.name).join("mod.rs"), true),
                ],
            };
            let Some((suffix, child_owning)) =
                candidates.into_iter().find(|(suffix, _)| root.join(lexical(&base.join(suffix))).is_file())
            else {
                continue;
            };
            let plain_name = base.join(&suffix);
            let rel = lexical(&plain_name);
            if !seen.insert(rel.clone()) {
                if let Some(child) = nodes.iter().position(|node| node.rel == rel && node.parent == Some(next)) {
                    nodes[next].alternatives.push((decl, child));
                }
                continue;
            }
            let (decls, alternatives) = (Vec::new(), Vec::new());
            nodes.push(Node { rel, plain_name, owning: child_owning, parent: Some(next), suffix, decls, alternatives });
            let child = nodes.len() - 1;
            nodes[next].decls.push((decl, child));
        }
        next += 1;
    }
    nodes
}

/// The directory rustc resolves `decl` against, in the file it names `name`: a top-level `#[path]` is relative to
/// the file's directory; anything else to the directory the file owns, then the enclosing inline modules'.
fn decl_base(name: &Path, owning: bool, decl: &ModDecl) -> PathBuf {
    let dir = name.parent().unwrap_or(Path::new("")).to_owned();
    if decl.inline_dirs.is_empty() && decl.path_attr.is_some() {
        return dir;
    }
    let mut base = if owning { dir } else { dir.join(name.file_stem().unwrap_or_default()) };
    base.extend(&decl.inline_dirs);
    base
}

/// Whether moving the declaring file into a directory-owning sibling changes where `decl` leads.
fn depends_on_ownership(decl: &ModDecl) -> bool {
    !(decl.inline_dirs.is_empty() && decl.path_attr.is_some())
}

/// Whether `decl` of `file` (compiled from its sibling) needs a `#[path]` of its own to reach `child`.
fn needs_path(file: &Node, decl: &ModDecl, child: &Node, redirected: &BTreeSet<PathBuf>) -> bool {
    redirected.contains(&child.rel) || (!file.owning && depends_on_ownership(decl))
}

/// The edited files, every file on the way from a crate root to one, and every file a new `#[path]` would make
/// resolve its own declarations elsewhere; to a fixed point across all trees (a file may be in several).
fn redirected_files(trees: &[Tree], edited: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let mut redirected: BTreeSet<PathBuf> =
        edited.iter().filter(|rel| trees.iter().any(|t| t.nodes.iter().any(|n| &n.rel == *rel))).cloned().collect();
    loop {
        let before = redirected.len();
        for tree in trees {
            for index in 0..tree.nodes.len() {
                let node = &tree.nodes[index];
                if !redirected.contains(&node.rel) {
                    continue;
                }
                let mut parent = node.parent;
                while let Some(up) = parent {
                    redirected.insert(tree.nodes[up].rel.clone());
                    parent = tree.nodes[up].parent;
                }
                let mut moved_owners = Vec::new();
                for (decl, child) in node.decls.iter().chain(&node.alternatives) {
                    let child = &tree.nodes[*child];
                    let moved = needs_path(node, decl, child, &redirected);
                    if moved && !child.owning && child.decls.iter().any(|(d, _)| depends_on_ownership(d)) {
                        moved_owners.push(child.rel.clone());
                    }
                }
                redirected.extend(moved_owners);
            }
        }
        if redirected.len() == before {
            return redirected;
        }
    }
}

/// Walks one tree from its root with the names rustc gives each file in the copy's build: collects the `#[path]`
/// insertions of redirected files and a remap for every file whose name differs from the plain build's.
fn names_and_insertions(tree: &Tree, redirected: &BTreeSet<PathBuf>, shadow: &Path, out: &mut Redirects) {
    let nodes = &tree.nodes;
    let mut names: Vec<(PathBuf, bool)> = Vec::with_capacity(nodes.len());
    let crate_root = &nodes[0];
    let root_name =
        if redirected.contains(&crate_root.rel) { sibling_of(&crate_root.rel) } else { crate_root.rel.clone() };
    names.push((root_name, true));
    for (index, node) in nodes.iter().enumerate() {
        let is_redirected = redirected.contains(&node.rel);
        for (decl, child_index) in &node.decls {
            let child = &nodes[*child_index];
            let (file_name, owning) = names[index].clone();
            let name = if is_redirected && needs_path(node, decl, child, redirected) {
                insert_path(node, decl, child, &file_name, redirected, shadow, out)
            } else {
                decl_base(&file_name, owning, decl).join(&child.suffix)
            };
            let owning = child.owning || (is_redirected && needs_path(node, decl, child, redirected));
            names.push((name, owning));
        }
        // The other declarations of a child already named: the same `#[path]`, whichever of them is compiled.
        for (decl, child_index) in &node.alternatives {
            let child = &nodes[*child_index];
            if is_redirected && needs_path(node, decl, child, redirected) {
                insert_path(node, decl, child, &names[index].0, redirected, shadow, out);
            }
        }
    }
    // `names` is in the order children were visited, which is the nodes' order (breadth first, one push per node).
    for (node, (name, _)) in nodes.iter().zip(&names) {
        if *name != node.plain_name {
            out.remaps.push((name.clone(), node.plain_name.clone()));
        }
    }
}

/// Inserts the `#[path]` that leads `decl` of the redirected `node` (compiled as `file_name`) to `child` (its
/// sibling when the child is redirected too), and returns the name rustc then gives the child.
fn insert_path(
    node: &Node,
    decl: &ModDecl,
    child: &Node,
    file_name: &Path,
    redirected: &BTreeSet<PathBuf>,
    shadow: &Path,
    out: &mut Redirects,
) -> PathBuf {
    // The sibling owns its directory; the inserted path is relative to it (and the inline modules').
    let mut base = file_name.parent().unwrap_or(Path::new("")).to_owned();
    base.extend(&decl.inline_dirs);
    let target = if redirected.contains(&child.rel) { sibling_of(&child.rel) } else { child.rel.clone() };
    let relative = relative(&lexical(&base), &target);
    let value = if relative.starts_with("..") && !decl.inline_dirs.is_empty() {
        shadow.join(&target).display().to_string()
    } else {
        slash_path(&relative)
    };
    if decl.cfg_attr_path {
        out.warnings.push(format!(
            "{}: module `{}` is declared with #[cfg_attr(.., path = ..)]: the copy gives it a #[path] of its own, \
             which wins over the cfg_attr one",
            node.rel.display(),
            decl.name
        ));
    }
    let inserts = out.files.entry(node.rel.clone()).or_default();
    inserts.push((decl.insert_at, format!("#[path = {value:?}] ")));
    // An existing `#[path = ".."]` is turned off (`#[cfg_attr(any(), path = "..")]`): a second one would be an
    // `unused_attributes` warning, an error under `deny(warnings)`.
    for (open, close) in &decl.path_attr_brackets {
        inserts.push((*open, "cfg_attr(any(), ".to_owned()));
        inserts.push((*close, ")".to_owned()));
    }
    base.join(value)
}

/// Lexical normalisation of a relative path (`a/./b/../c` is `a/c`).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The path from directory `from` to `to`, both relative to the same root and normalised.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to_parts: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to_parts).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    out.extend(&to_parts[common..]);
    out
}

/// A relative path with `/` between its components, as a `#[path]` or a manifest writes it on every platform.
fn slash_path(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate `src/lib.rs` -> `a.rs` (non-mod.rs) -> `a/b.rs` (non-mod.rs) -> `a/b/c.rs`, with `a.rs` edited.
    #[test]
    fn moving_a_non_mod_rs_file_moves_the_children_whose_declarations_it_would_change() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("src/lib.rs", "mod a;\n#[path = \"other.rs\"] pub mod kept;\n");
        write("src/other.rs", "pub fn f() {}\n");
        write("src/a.rs", "mod b;\n");
        write("src/a/b.rs", "mod c;\n");
        write("src/a/b/c.rs", "pub fn g() {}\n");
        let tree = Tree {
            manifest: "Cargo.toml".into(),
            manifest_dir: "".into(),
            kind: "lib",
            name: "k".into(),
            nodes: module_tree(dir.path(), Path::new("src/lib.rs")),
        };
        let edited = BTreeSet::from([PathBuf::from("src/a.rs")]);
        let redirected = redirected_files(std::slice::from_ref(&tree), &edited);
        let expected: BTreeSet<PathBuf> = ["src/lib.rs", "src/a.rs", "src/a/b.rs"].iter().map(PathBuf::from).collect();
        assert_eq!(redirected, expected);
        let mut out = Redirects::default();
        names_and_insertions(&tree, &redirected, Path::new("/shadow"), &mut out);
        let inserted = |rel: &str| out.files.get(Path::new(rel)).cloned().unwrap_or_default();
        assert_eq!(inserted("src/lib.rs"), [(0, "#[path = \".a.calltime.rs\"] ".to_owned())]);
        assert_eq!(inserted("src/a.rs"), [(0, "#[path = \"a/.b.calltime.rs\"] ".to_owned())]);
        assert_eq!(inserted("src/a/b.rs"), [(0, "#[path = \"b/c.rs\"] ".to_owned())]);
        let remaps: Vec<(&str, &str)> =
            out.remaps.iter().map(|(a, b)| (a.to_str().unwrap(), b.to_str().unwrap())).collect();
        assert_eq!(
            remaps,
            [
                ("src/.lib.calltime.rs", "src/lib.rs"),
                ("src/.a.calltime.rs", "src/a.rs"),
                ("src/a/.b.calltime.rs", "src/a/b.rs")
            ]
        );
    }

    #[test]
    fn siblings_and_relative_paths() {
        assert_eq!(sibling_of(Path::new("src/bin/tool.rs")), Path::new("src/bin/.tool.calltime.rs"));
        assert_eq!(sibling_of(Path::new("src/gen.in")), Path::new("src/.gen.in.calltime.rs"));
        assert_eq!(relative(Path::new("src/x"), Path::new("src/a/b.rs")), Path::new("../a/b.rs"));
        assert_eq!(lexical(Path::new("src/x/../a/./b.rs")), Path::new("src/a/b.rs"));
    }
}

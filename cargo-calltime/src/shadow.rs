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

mod alloc_root;
mod copy;
mod manifest;
mod redirect;

pub use alloc_root::AllocRoot;
pub use copy::write_if_changed;
pub use manifest::{edit_manifest, ManifestEdit};
pub use redirect::sibling_of;

use crate::error::UserError;
use crate::plan::{AllocatorSite, Plan};
use crate::rewrite::{self, PlanInfo, Probe};
use crate::runtime_sources::RUNTIME_SOURCES;
use crate::workspace::Workspace;

/// Appended to edition-2015 crate roots (no newline: line numbers stay as they are).
const EXTERN_CRATE: &str = " #[allow(unused_extern_crates)] extern crate calltime_rt;";

/// What [`prepare`] did, for the progress line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyStats {
    /// Files in the copy.
    pub files: usize,
    /// Files written this time (new or changed).
    pub written: usize,
    /// Files removed because they are gone from the workspace.
    pub removed: usize,
    /// Source files that received probes.
    pub rewritten: usize,
    /// Files of the workspace left out because the ignore rules exclude them and no build reads them (relative to
    /// the workspace root).
    pub left_out: Vec<PathBuf>,
    /// Probes (plan indices) whose text had to go before user code on the same line, moving its columns (a whole
    /// body on one line).
    pub column_shifts: Vec<u32>,
    /// `include_str!`/`include_bytes!` of a file that gets probes in place (outside every module tree the copy
    /// walks, so no sibling holds its probes): (the including file, its line, the included file), relative to the
    /// workspace root. Those read the probed copy, not the user's bytes.
    pub includes_of_probed: Vec<(PathBuf, u32, PathBuf)>,
    /// Files compiled from a hidden sibling (see `shadow/redirect.rs`) whose name rustc sees differs from a plain
    /// build's: (that name, the plain build's), relative to the workspace root, for `--remap-path-prefix`.
    pub remaps: Vec<(PathBuf, PathBuf)>,
    /// Module declarations the copy cannot point at a sibling faithfully.
    pub warnings: Vec<String>,
}

/// Writes the runtime crate to `<calltime>/calltime-rt` (outside any shadow workspace, with its own empty
/// `[workspace]` so cargo never looks for one above it) and returns its directory. Files are only rewritten when
/// their content changes. `<calltime>` is the shared cache of [`crate::cargo::runtime_home`] when there is one.
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
/// Without `runtime_dir` no manifest names the runtime: the prebuilt one is given to rustc by the build's wrapper.
/// With probes and `alloc_root`, that crate root declares the counting allocator (`shadow/alloc_root.rs`).
pub fn prepare(
    ws: &Workspace,
    dir: &Path,
    probes: Option<(&Plan, &PlanInfo)>,
    runtime_dir: Option<&Path>,
    alloc_root: Option<&AllocRoot>,
) -> Result<CopyStats> {
    let root = &ws.root;
    let edits = Edits::of(ws, probes, runtime_dir, alloc_root, dir)?;
    let skip = copy::skipped_dirs(ws);
    let selection = copy::Selection::of(ws, &skip);
    let mut stats = CopyStats::default();
    let mut kept: BTreeSet<PathBuf> = BTreeSet::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && copy::is_skipped_dir(e.path(), &skip)));
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
        if !selection.takes(&rel) && !edits.takes_edits(&rel) {
            stats.left_out.push(rel);
            continue;
        }
        stats.files += 1;
        stats.rewritten += usize::from(edits.per_file.contains_key(&rel));
        if edits.copy_file(root, entry.path(), &rel, &dst, &mut stats.column_shifts)? {
            stats.written += 1;
        }
        if edits.redirects.files.contains_key(&rel) {
            stats.files += 1;
            kept.insert(sibling_of(&rel));
        }
        kept.insert(rel);
    }
    if let Some(rel) = edits.per_file.keys().find(|rel| !kept.contains(*rel)) {
        return Err(UserError::new(format!("cannot find {} to insert probes", root.join(rel).display()))
            .hint("is it excluded or a broken symlink?")
            .into());
    }
    stats.removed = copy::remove_stale(dir, &kept)?;
    stats.column_shifts.sort_unstable();
    let in_place: BTreeSet<&PathBuf> =
        edits.per_file.keys().filter(|rel| !edits.redirects.files.contains_key(*rel)).collect();
    if !in_place.is_empty() {
        stats.includes_of_probed = includes_of_probed(root, &kept, &in_place);
    }
    stats.remaps = edits.redirects.remaps.clone();
    stats.warnings = edits.redirects.warnings.clone();
    Ok(stats)
}

/// The `include_str!("...")`/`include_bytes!("...")` with a literal path, in the copied `.rs` files, that name a
/// file getting probes (a plain text search: a commented-out include is found too, which only adds a warning).
fn includes_of_probed(
    root: &Path,
    kept: &BTreeSet<PathBuf>,
    probed: &BTreeSet<&PathBuf>,
) -> Vec<(PathBuf, u32, PathBuf)> {
    let pattern = regex::Regex::new(r#"include_(?:str|bytes)!\s*\(\s*"([^"\\]+)""#).expect("a valid regex");
    let mut found = Vec::new();
    for rel in kept.iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let Ok(text) = std::fs::read_to_string(root.join(rel)) else { continue };
        if !text.contains("include_") {
            continue;
        }
        for capture in pattern.captures_iter(&text) {
            let (Some(whole), Some(path)) = (capture.get(0), capture.get(1)) else { continue };
            let dir = rel.parent().unwrap_or(Path::new(""));
            let Ok(target) = relative_inside(root, &root.join(dir).join(path.as_str())) else { continue };
            if probed.contains(&target) {
                found.push((rel.clone(), rewrite::line_of(&text, whole.start()), target));
            }
        }
    }
    found
}

/// What the copy changes, keyed by path relative to the workspace root.
struct Edits<'p> {
    /// Probes per source file.
    per_file: BTreeMap<PathBuf, Vec<Probe<'p>>>,
    /// `#[global_allocator]` statics to wrap in the counting allocator, per source file.
    allocators: BTreeMap<PathBuf, Vec<AllocatorSite>>,
    /// The crate root that declares the counting allocator (there is no allocator to wrap), and whether it is
    /// declared for the library's unit tests only.
    alloc_root: Option<(PathBuf, bool)>,
    plan_info: Option<&'p PlanInfo>,
    /// Manifests of packages that get the runtime dependency.
    runtime_manifests: BTreeSet<PathBuf>,
    /// Crate roots of edition-2015 targets of instrumented packages: they need `extern crate calltime_rt;`.
    extern_crate_roots: BTreeSet<PathBuf>,
    /// Crate roots of every target of the instrumented packages: each declares the crate's table of state bytes that
    /// its probes read (`rewrite::states_declaration`).
    states_roots: BTreeSet<PathBuf>,
    /// A package uses calltime-rt from crates.io (to hand a context to spawned work, say): it must get the very
    /// runtime the probes use, so the copy patches crates.io's calltime-rt with it.
    registry_runtime: bool,
    /// None: the runtime is prebuilt, linked without a dependency.
    runtime_dir: Option<&'p Path>,
    /// Edited files compiled from hidden siblings, their originals copied unchanged.
    redirects: redirect::Redirects,
}

impl<'p> Edits<'p> {
    fn of(
        ws: &Workspace,
        probes: Option<(&'p Plan, &'p PlanInfo)>,
        runtime_dir: Option<&'p Path>,
        alloc_root: Option<&AllocRoot>,
        shadow_dir: &Path,
    ) -> Result<Edits<'p>> {
        let root = &ws.root;
        let mut edits = Edits {
            per_file: BTreeMap::new(),
            allocators: BTreeMap::new(),
            alloc_root: None,
            plan_info: probes.map(|(_, info)| info),
            runtime_manifests: BTreeSet::new(),
            extern_crate_roots: BTreeSet::new(),
            states_roots: BTreeSet::new(),
            registry_runtime: false,
            runtime_dir,
            redirects: redirect::Redirects::default(),
        };
        let Some((plan, _)) = probes else { return Ok(edits) };
        for (function, site) in plan.instrumented() {
            let rel = relative_inside(root, &function.file).with_context(|| {
                format!("function `{}` is in {}, outside the workspace", function.path, function.file.display())
            })?;
            edits.per_file.entry(rel).or_default().push(Probe { site, is_root: function.is_root });
            let manifest = relative_inside(root, &function.manifest_path).with_context(|| {
                format!("package manifest {} is outside the workspace", function.manifest_path.display())
            })?;
            edits.runtime_manifests.insert(manifest);
        }
        for found in &plan.global_allocators {
            let (Ok(rel), Ok(manifest)) =
                (relative_inside(root, &found.file), relative_inside(root, &found.manifest_path))
            else {
                continue;
            };
            edits.allocators.entry(rel).or_default().push(found.site);
            edits.runtime_manifests.insert(manifest);
        }
        if let Some((rel, manifest)) = alloc_root.and_then(|a| alloc_root::relative_file(root, a)) {
            edits.alloc_root = alloc_root.map(|a| (rel, a.unit_tests));
            edits.runtime_manifests.insert(manifest);
        }
        for package in &ws.metadata.packages {
            let Ok(manifest) = relative_inside(root, package.manifest_path.as_std_path()) else { continue };
            if !edits.runtime_manifests.contains(&manifest) {
                continue;
            }
            for target in &package.targets {
                let plain_rust = !target.is_custom_build() && !target.is_proc_macro();
                if plain_rust {
                    if let Ok(rel) = relative_inside(root, target.src_path.as_std_path()) {
                        edits.states_roots.insert(rel);
                    }
                }
                if target.edition == cargo_metadata::Edition::E2015 && plain_rust {
                    if let Ok(rel) = relative_inside(root, target.src_path.as_std_path()) {
                        edits.extern_crate_roots.insert(rel);
                    }
                }
            }
        }
        let declaring = edits.alloc_root.iter().map(|(rel, _)| rel);
        let edited: BTreeSet<PathBuf> = edits
            .per_file
            .keys()
            .chain(&edits.extern_crate_roots)
            .chain(&edits.states_roots)
            .chain(declaring)
            .cloned()
            .collect();
        edits.redirects = redirect::plan(ws, &edited, &edits.runtime_manifests, shadow_dir);
        edits.registry_runtime = ws.metadata.packages.iter().any(|p| {
            p.name.as_str() == "calltime-rt" && p.source.as_ref().is_some_and(|s| s.repr.starts_with("registry+"))
        });
        Ok(edits)
    }

    /// Copies one file, with its edits; returns whether it wrote. Probes that move a column are added to `shifts`.
    /// A file compiled from a sibling is copied unchanged and its sibling gets the edits.
    fn copy_file(&self, root: &Path, src: &Path, rel: &Path, dst: &Path, shifts: &mut Vec<u32>) -> Result<bool> {
        if let Some(mod_paths) = self.redirects.files.get(rel) {
            let sibling = dst.with_file_name(sibling_of(rel).file_name().unwrap_or_default());
            let wrote_sibling = self.write_edited(src, rel, &sibling, mod_paths, shifts)?;
            return Ok(copy::copy_if_changed(src, dst)? | wrote_sibling);
        }
        if self.takes_edits(rel) || self.extern_crate_roots.contains(rel) || self.states_roots.contains(rel) {
            self.write_edited(src, rel, dst, &[], shifts)
        } else if rel.file_name().is_some_and(|n| n == "Cargo.toml") {
            let text = std::fs::read_to_string(src).with_context(|| format!("cannot read {}", src.display()))?;
            let runtime = self.runtime_dir.filter(|_| self.runtime_manifests.contains(rel));
            let is_root = rel == Path::new("Cargo.toml");
            let patch = self.runtime_dir.filter(|_| is_root && self.registry_runtime && self.plan_info.is_some());
            let edit = manifest::ManifestEdit {
                runtime,
                is_root,
                patch_crates_io: patch,
                runtime_profiles: self.runtime_dir.is_some(),
            };
            let edited = edit_manifest(&text, src, root, edit).and_then(|out| match self.redirects.targets.get(rel) {
                Some(targets) => manifest::redirect_targets(&out, targets),
                None => Ok(out),
            });
            match edited {
                Ok(out) => write_if_changed(dst, out.as_bytes()),
                // Not a manifest cargo can read either (a template, a fixture): copy it as it is.
                Err(err) if runtime.is_none() => {
                    tracing::info!("copying {} unchanged: {err:#}", src.display());
                    copy::copy_if_changed(src, dst)
                }
                Err(err) => Err(err.context(format!("cannot edit {}", src.display()))),
            }
        } else if rel == Path::new("Cargo.lock") {
            copy::copy_lock_if_changed(src, dst)
        } else {
            copy::copy_if_changed(src, dst)
        }
    }
}

impl Edits<'_> {
    /// Whether the file gets probes, an allocator wrapped or declared (so it is copied whatever the ignore rules).
    fn takes_edits(&self, rel: &Path) -> bool {
        self.per_file.contains_key(rel)
            || self.allocators.contains_key(rel)
            || self.alloc_root.as_ref().is_some_and(|(root, _)| root == rel)
    }

    /// Writes `src`'s text with its probes, the `#[path]` insertions `mod_paths` and, for an edition-2015 crate root,
    /// `extern crate calltime_rt;` to `dst`; returns whether it wrote.
    fn write_edited(
        &self,
        src: &Path,
        rel: &Path,
        dst: &Path,
        mod_paths: &[(usize, String)],
        shifts: &mut Vec<u32>,
    ) -> Result<bool> {
        let bytes = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            UserError::new(format!("{} is not valid UTF-8", src.display()))
                .hint("rustc only accepts UTF-8 source files; fix the file or exclude its functions with --filter")
        })?;
        let mut insertions = mod_paths.to_vec();
        if let (Some(file_probes), Some(plan_info)) = (self.per_file.get(rel), self.plan_info) {
            let (probes, shifted) = rewrite::probe_insertions(&text, file_probes, plan_info)
                .with_context(|| format!("in {}", src.display()))?;
            insertions.extend(probes);
            shifts.extend(shifted);
        }
        if self.plan_info.is_some() {
            let allocators = self.allocators.get(rel).map_or(&[][..], Vec::as_slice);
            insertions.extend(allocators.iter().flat_map(rewrite::allocator_insertions));
            if let Some((_, unit_tests)) = self.alloc_root.as_ref().filter(|(root, _)| root == rel) {
                insertions.extend(alloc_root::declaration(&text, *unit_tests));
            }
        }
        if self.extern_crate_roots.contains(rel) {
            // Edition 2015 resolves `::calltime_rt` from the crate root: declare it there, after the last token (a
            // trailing line comment stays after it), so no line moves.
            let at = alloc_root::end_of_code(&text).unwrap_or(text.len());
            insertions.push((at, EXTERN_CRATE.to_owned()));
        }
        if let Some(plan_info) = self.plan_info.filter(|_| self.states_roots.contains(rel)) {
            // After the last token too: an item may come anywhere in the crate root, and no line moves.
            let at = alloc_root::end_of_code(&text).unwrap_or(text.len());
            insertions.push((at, rewrite::states_declaration(plan_info)));
        }
        let out = rewrite::insert(&text, insertions).with_context(|| format!("in {}", src.display()))?;
        write_if_changed(dst, out.as_bytes())
    }
}

/// An exclusive lock on `<calltime>/lock`, held while the copy is written and built (flock on unix; released when
/// dropped or when the process ends).
pub struct CopyLock {
    _file: std::fs::File,
}

impl CopyLock {
    /// The lock if no other process holds it.
    pub fn try_acquire(calltime_dir: &Path) -> Result<Option<CopyLock>> {
        Self::lock(calltime_dir, false)
    }

    /// The lock, waiting for another process to release it.
    pub fn acquire(calltime_dir: &Path) -> Result<CopyLock> {
        Ok(Self::lock(calltime_dir, true)?.expect("a blocking lock is always taken"))
    }

    fn lock(calltime_dir: &Path, wait: bool) -> Result<Option<CopyLock>> {
        std::fs::create_dir_all(calltime_dir).with_context(|| format!("cannot create {}", calltime_dir.display()))?;
        let path = calltime_dir.join("lock");
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            extern "C" {
                fn flock(fd: i32, operation: i32) -> i32;
            }
            const LOCK_EX: i32 = 2;
            const LOCK_NB: i32 = 4;
            let operation = if wait { LOCK_EX } else { LOCK_EX | LOCK_NB };
            // SAFETY: flock on a descriptor this function owns; no memory is shared.
            if unsafe { flock(file.as_raw_fd(), operation) } != 0 {
                if !wait {
                    return Ok(None);
                }
                bail!("cannot lock {}: {}", path.display(), std::io::Error::last_os_error());
            }
        }
        #[cfg(not(unix))]
        let _ = wait;
        Ok(Some(CopyLock { _file: file }))
    }
}

/// The path of `path` relative to `root`, when it is inside it.
fn relative_inside(root: &Path, path: &Path) -> Result<PathBuf> {
    match normalize(path).strip_prefix(normalize(root)) {
        Ok(rel) => Ok(rel.to_owned()),
        Err(_) => bail!("{} is not under {}", path.display(), root.display()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // Ignored stray output stays out; ignored files in a source directory are still copied (include_str!).
        write(".gitignore", "*.out\nlogs/\n");
        write("run.out", "stray\n");
        write("logs/a.txt", "log\n");
        write("src/table.out", "data\n");
        let args =
            crate::workspace::CargoOptions { manifest_path: Some(ws_dir.join("Cargo.toml")), ..Default::default() };
        let ws = Workspace::load(&args).unwrap();
        let copy = tmp.path().join("copy");
        let rt = tmp.path().join("rt");

        let first = prepare(&ws, &copy, None, Some(&rt), None).unwrap();
        assert_eq!((first.files, first.written, first.removed), (5, 5, 0));
        assert!(!copy.join(".git").exists() && !copy.join("target").exists());
        assert_eq!(first.left_out, [PathBuf::from("logs/a.txt"), PathBuf::from("run.out")]);
        assert!(copy.join("src/table.out").exists() && copy.join(".gitignore").exists());
        // The copy is its own workspace root.
        assert!(std::fs::read_to_string(copy.join("Cargo.toml")).unwrap().contains("\n[workspace]\n"));
        let mtime = |rel: &str| std::fs::metadata(copy.join(rel)).unwrap().modified().unwrap();
        let lib_mtime = mtime("src/lib.rs");
        assert_eq!(lib_mtime, std::fs::metadata(ws_dir.join("src/lib.rs")).unwrap().modified().unwrap());

        let again = prepare(&ws, &copy, None, Some(&rt), None).unwrap();
        assert_eq!((again.written, again.removed), (0, 0));
        assert_eq!(mtime("src/lib.rs"), lib_mtime);

        write("src/extra.rs", "pub fn g() {}\n");
        write("src/new.rs", "\n");
        let changed = prepare(&ws, &copy, None, Some(&rt), None).unwrap();
        assert_eq!((changed.written, changed.removed), (2, 0));
        assert_eq!(std::fs::read_to_string(copy.join("src/extra.rs")).unwrap(), "pub fn g() {}\n");
        assert_eq!(mtime("src/lib.rs"), lib_mtime);

        std::fs::remove_file(ws_dir.join("src/new.rs")).unwrap();
        let removed = prepare(&ws, &copy, None, Some(&rt), None).unwrap();
        assert_eq!((removed.written, removed.removed), (0, 1));
        assert!(!copy.join("src/new.rs").exists());
    }
}

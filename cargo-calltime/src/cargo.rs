//! Stage 6: choosing the target like `cargo run` does, building the shadow copy with cargo, and finding the probed
//! function a compiler error points at.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use cargo_metadata::diagnostic::DiagnosticLevel;
use cargo_metadata::Message;

use crate::error::UserError;
use crate::plan::Plan;
use crate::workspace::{CargoOptions, Workspace};

/// How cargo builds: the typed form of the target and output flags.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    pub release: bool,
    pub profile: Option<String>,
    /// `--color`: `Some(true)` always, `Some(false)` never, `None` when stderr is a terminal and NO_COLOR is unset.
    pub color: Option<bool>,
    /// Stream cargo's output, compiler messages included (`-v`).
    pub echo: bool,
    /// Show cargo's own progress lines (`Compiling x`, `Finished`) on stderr: on a terminal or with `-v`, not `-q`.
    pub progress: bool,
    /// Pass `-v` to cargo (`-vv`).
    pub cargo_verbose: bool,
}

/// `--bin NAME`, `--example NAME`, `--test NAME`, `--bench NAME` or `--lib` (whose name is the package's library's,
/// empty until [`select_target`] finds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTarget {
    pub kind: TargetKind,
    pub name: String,
}

/// Which kind of target runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Bin,
    Example,
    Test,
    Bench,
    /// The library's unit tests (`cargo test --lib`).
    Lib,
}

impl TargetKind {
    /// `bin`, `example`, ...: the flag without its dashes, for messages.
    pub fn noun(self) -> &'static str {
        &self.flag()[2..]
    }

    pub fn flag(self) -> &'static str {
        match self {
            TargetKind::Bin => "--bin",
            TargetKind::Example => "--example",
            TargetKind::Test => "--test",
            TargetKind::Bench => "--bench",
            TargetKind::Lib => "--lib",
        }
    }
}

/// The target to build and run, chosen like `cargo run` does.
#[derive(Debug, Clone)]
pub struct Target {
    pub package: String,
    /// `name@version`: unambiguous for `-p` even when a dependency has the same name (serde_json's dev-dependencies
    /// pull in another serde_json).
    pub package_spec: String,
    /// Directory of the package's manifest in the user's workspace.
    pub package_dir: PathBuf,
    pub kind: TargetKind,
    pub name: String,
}

/// Picks the target: `--bin/--example/--test/--bench NAME`, or the single bin of the selected packages (the root
/// package, or the default members, when no `-p` is given), honouring `default-run`.
pub fn select_target(ws: &Workspace, named: Option<&NamedTarget>, cargo: &CargoOptions) -> Result<Target> {
    let meta = &ws.metadata;
    let scope: Vec<&cargo_metadata::Package> = if !cargo.packages.is_empty() {
        ws.selected_packages().collect()
    } else if let Some(root) = meta.root_package() {
        vec![root]
    } else if meta.workspace_default_members.is_available() {
        meta.workspace_default_packages()
    } else {
        meta.workspace_packages()
    };
    let make = |p: &cargo_metadata::Package, kind, name: &str| Target {
        package: p.name.to_string(),
        package_spec: format!("{}@{}", p.name, p.version),
        package_dir: p.manifest_path.parent().map(|d| d.as_std_path().to_owned()).unwrap_or_else(|| ws.root.clone()),
        kind,
        name: name.to_owned(),
    };
    if let Some(NamedTarget { kind: TargetKind::Lib, .. }) = named {
        return select_lib(&scope, make);
    }
    if let Some(NamedTarget { kind, name }) = named {
        // An explicit name is looked up in every member when no -p narrows it, like cargo does.
        let search: Vec<&cargo_metadata::Package> =
            if cargo.packages.is_empty() { meta.workspace_packages() } else { scope.clone() };
        for p in &search {
            if let Some(t) = targets_of(p, *kind).find(|t| t.name == *name) {
                return Ok(make(p, *kind, &t.name));
            }
        }
        let available: Vec<&str> = search.iter().flat_map(|p| targets_of(p, *kind)).map(|t| t.name.as_str()).collect();
        let what = kind.noun();
        let hint = if available.is_empty() {
            format!("the selected packages have no {what} targets")
        } else {
            format!("available {what} targets: {}", available.join(", "))
        };
        return Err(UserError::new(format!("no {what} target named `{name}`")).hint(hint).into());
    }
    let mut candidates = Vec::new();
    for p in &scope {
        if let Some(default_run) = &p.default_run {
            candidates.push(make(p, TargetKind::Bin, default_run));
            continue;
        }
        for t in p.targets.iter().filter(|t| t.is_bin()) {
            candidates.push(make(p, TargetKind::Bin, &t.name));
        }
    }
    match candidates.len() {
        1 => Ok(candidates.remove(0)),
        0 => {
            let names: Vec<&str> = scope.iter().map(|p| p.name.as_str()).collect();
            Err(UserError::new(format!("no bin target to run in {}", names.join(", ")))
                .hint(
                    "pass --lib (its unit tests), --example NAME, --test NAME or --bench NAME, or -p a package that \
                     has a bin; `cargo calltime build` builds without running",
                )
                .into())
        }
        _ => {
            let names: Vec<&str> = candidates.iter().map(|t| t.name.as_str()).collect();
            Err(UserError::new(format!("several bin targets could run: {}", names.join(", ")))
                .hint("pass --bin NAME (or set `default-run` in the package)")
                .into())
        }
    }
}

/// `--lib`: the library of the selected package (the root package, or the one `-p` names).
fn select_lib(
    scope: &[&cargo_metadata::Package],
    make: impl Fn(&cargo_metadata::Package, TargetKind, &str) -> Target,
) -> Result<Target> {
    let make = &make;
    let libs: Vec<Target> = scope
        .iter()
        .flat_map(|p| targets_of(p, TargetKind::Lib).map(move |t| make(p, TargetKind::Lib, &t.name)))
        .collect();
    match <[Target; 1]>::try_from(libs) {
        Ok([lib]) => Ok(lib),
        Err(libs) if libs.is_empty() => {
            let names: Vec<&str> = scope.iter().map(|p| p.name.as_str()).collect();
            Err(UserError::new(format!("--lib: no library in {}", names.join(", ")))
                .hint("pass -p a package that has a lib target")
                .into())
        }
        Err(libs) => {
            let names: Vec<&str> = libs.iter().map(|t| t.package.as_str()).collect();
            Err(UserError::new(format!("--lib: several packages have a library: {}", names.join(", ")))
                .hint("pick one with -p NAME")
                .into())
        }
    }
}

/// The package's targets of one kind.
fn targets_of(package: &cargo_metadata::Package, kind: TargetKind) -> impl Iterator<Item = &cargo_metadata::Target> {
    package.targets.iter().filter(move |t| match kind {
        TargetKind::Bin => t.is_bin(),
        TargetKind::Example => t.is_example(),
        TargetKind::Test => t.is_test(),
        TargetKind::Bench => t.is_bench(),
        TargetKind::Lib => t.is_lib() || t.is_rlib() || t.is_proc_macro(),
    })
}

/// The first compiler error of a build: where, and what.
#[derive(Debug, Clone)]
pub struct FirstError {
    /// Path relative to the workspace root when it is inside it.
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

/// What one cargo build produced.
#[derive(Debug, Default)]
pub struct BuildOutput {
    pub success: bool,
    /// The executable of the selected target.
    pub executable: Option<PathBuf>,
    /// cargo's stderr (progress and rendered diagnostics), kept to show on failure.
    pub stderr: String,
    pub first_error: Option<FirstError>,
}

/// What the workspace's crates in the copy are compiled with, beyond cargo's own flags (through the
/// RUSTC_WORKSPACE_WRAPPER, see [`rustc_wrapper_from_env`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ShadowRustc<'a> {
    /// `--remap-path-prefix` per file the copy compiles from a hidden sibling: the name rustc sees, the name to give.
    pub file_remaps: &'a [(PathBuf, PathBuf)],
    /// The prebuilt runtime ([`prebuilt_runtime`]) given as `--extern calltime_rt=<rlib>`, when the copy's manifests
    /// do not depend on the runtime's sources.
    pub runtime_rlib: Option<&'a Path>,
}

/// Builds `shadow_manifest` into `target_dir` with the user's cargo flags, passing `--remap-path-prefix` to the
/// workspace's crates so debug info, panic locations and diagnostics name the user's files, and what `rustc` says
/// (one remap more per file compiled from a sibling, the prebuilt runtime). cargo's output is streamed with `-v`, its
/// progress lines shown with `progress`, and everything captured for a failure.
pub fn cargo_build(
    shadow_root: &Path,
    user_root: &Path,
    rustc: ShadowRustc,
    target_dir: &Path,
    cargo: &CargoOptions,
    build: &BuildOptions,
    target: Option<&Target>,
) -> Result<BuildOutput> {
    let color = match build.color {
        Some(always) => always,
        None => std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal(),
    };
    let cargo_bin = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo_bin);
    // A library's unit tests are built by `cargo test --no-run`: `cargo build --lib` builds the library itself.
    if target.is_some_and(|t| t.kind == TargetKind::Lib) {
        cmd.args(["test", "--no-run"]);
    } else {
        cmd.arg("build");
    }
    cmd.arg("--manifest-path")
        .arg(shadow_root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        // Diagnostics come back as JSON (with their rendered text, printed by us) so the first error's place is known.
        .arg(if color { "--message-format=json-diagnostic-rendered-ansi" } else { "--message-format=json" });
    add_selection_flags(&mut cmd, cargo, build, target);
    cmd.arg(if color { "--color=always" } else { "--color=never" });
    add_remap(&mut cmd, shadow_root, user_root, rustc.file_remaps);
    if let Some(rlib) = rustc.runtime_rlib {
        // Set for cargo too: the wrapper records it as an `env-dep` of each crate it links it to, so cargo rebuilds
        // them when another runtime (a new tool, another variant) takes its place.
        cmd.env(RUNTIME_RLIB_VAR, rlib);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    tracing::info!("running {cmd:?}");
    let mut child = cmd.spawn().with_context(|| format!("cannot run {}", Path::new(&cargo_bin).display()))?;

    // cargo's stderr and the rendered diagnostics, in arrival order: streamed with -v, kept for a failure.
    let kept = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    // `show(text, is_cargo_line)`: cargo's stderr holds its own lines only (the compiler's come as JSON on stdout);
    // with `progress` they are passed on as they come, so a first run that builds every dependency is not silent.
    let show = {
        let (kept, echo, progress) = (kept.clone(), build.echo, build.progress);
        // cargo's own lines (`Compiling x (path)`, notes) name the copy: show the user's paths instead.
        let (from, to) = (shadow_root.display().to_string(), user_root.display().to_string());
        move |text: &str, is_cargo_line: bool| {
            let text = text.replace(&from, &to);
            if echo || (progress && is_cargo_line) {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            if let Ok(mut kept) = kept.lock() {
                kept.push_str(&text);
            }
        }
    };
    let stderr = child.stderr.take().expect("stderr is piped");
    let stderr_reader = {
        let show = show.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                show(&line, true);
                line.clear();
            }
        })
    };
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut out = read_messages(BufReader::new(stdout), target, &|text| show(text, false), (shadow_root, user_root));
    let status = child.wait().context("cannot wait for cargo")?;
    let _ = stderr_reader.join();
    out.stderr = kept.lock().map(|k| k.clone()).unwrap_or_default();
    out.success &= status.success();
    Ok(out)
}

/// Package, feature, profile and network flags for the build of the copy.
fn add_selection_flags(cmd: &mut Command, cargo: &CargoOptions, build: &BuildOptions, target: Option<&Target>) {
    if let Some(t) = target {
        cmd.args(["-p", &t.package_spec, t.kind.flag()]);
        if t.kind != TargetKind::Lib {
            cmd.arg(&t.name);
        }
    } else {
        for p in &cargo.packages {
            cmd.args(["-p", p]);
        }
    }
    for f in &cargo.features {
        cmd.args(["--features", f]);
    }
    if cargo.all_features {
        cmd.arg("--all-features");
    }
    if cargo.no_default_features {
        cmd.arg("--no-default-features");
    }
    if build.release {
        cmd.arg("--release");
    }
    if let Some(profile) = &build.profile {
        cmd.args(["--profile", profile]);
    }
    // The copy's Cargo.lock gains the calltime-rt entry, so --locked cannot hold for it; the user's lock is never
    // written. --frozen keeps its no-network half.
    if cargo.offline {
        cmd.arg("--offline");
    }
    if cargo.locked {
        tracing::info!("not passing --locked to the shadow build: adding calltime-rt changes the copy's Cargo.lock");
    }
    if build.cargo_verbose {
        cmd.arg("-v");
    }
}

/// Reads cargo's JSON messages: the target's executable, whether the build finished, and the first error's place.
fn read_messages(
    stdout: impl BufRead,
    target: Option<&Target>,
    show: &impl Fn(&str),
    (shadow_root, user_root): (&Path, &Path),
) -> BuildOutput {
    let mut out = BuildOutput::default();
    for message in Message::parse_stream(stdout) {
        let Ok(message) = message else { continue };
        match message {
            Message::CompilerArtifact(artifact) => {
                let matches = target
                    .is_none_or(|t| artifact.target.name == t.name && artifact.package_id.repr.contains(&t.package));
                if let (true, Some(exe)) = (matches, artifact.executable) {
                    out.executable = Some(exe.into_std_path_buf());
                }
            }
            Message::CompilerMessage(msg) => {
                let diag = &msg.message;
                if let Some(rendered) = &diag.rendered {
                    show(rendered);
                }
                if out.first_error.is_none() && matches!(diag.level, DiagnosticLevel::Error | DiagnosticLevel::Ice) {
                    if let Some(span) = diag.spans.iter().find(|s| s.is_primary) {
                        let mut span = span;
                        // An error inside a macro expansion: the user's line is the outermost call site.
                        while let Some(exp) = &span.expansion {
                            span = &exp.span;
                        }
                        out.first_error = Some(FirstError {
                            file: relative_to_roots(Path::new(&span.file_name), shadow_root, user_root),
                            line: span.line_start,
                            message: diag.message.clone(),
                        });
                    }
                }
            }
            Message::BuildFinished(finished) => out.success = finished.success,
            _ => {}
        }
    }
    out
}

/// The variable that makes this binary a rustc wrapper adding `--remap-path-prefix=<each of its values>` (separated
/// by [`REMAP_SEPARATOR`]; a later one wins where both match).
const REMAP_VAR: &str = "CALLTIME_RUSTC_REMAP";
/// Between the values of [`REMAP_VAR`], as in CARGO_ENCODED_RUSTFLAGS.
const REMAP_SEPARATOR: char = '\x1f';

/// The `FROM=TO` values of `--remap-path-prefix`: the copy's root to the workspace's, then each file's own (given
/// after it, so it wins: rustc applies the last mapping that matches).
fn remap_values(shadow_root: &Path, user_root: &Path, file_remaps: &[(PathBuf, PathBuf)]) -> Vec<String> {
    let mut values = vec![format!("{}={}", shadow_root.display(), user_root.display())];
    values.extend(file_remaps.iter().map(|(from, to)| format!("{}={}", from.display(), to.display())));
    values
}

/// `--remap-path-prefix=<shadow>=<workspace>` for the workspace's crates only, through RUSTC_WORKSPACE_WRAPPER (this
/// binary, see [`rustc_wrapper_from_env`]): given in RUSTFLAGS it would change every dependency's fingerprint too,
/// so none of the user's built dependencies could be reused. When the user has a workspace wrapper of their own,
/// the flag goes into the rustflags as before.
fn add_remap(cmd: &mut Command, shadow_root: &Path, user_root: &Path, file_remaps: &[(PathBuf, PathBuf)]) {
    let own_wrapper = std::env::var_os("RUSTC_WORKSPACE_WRAPPER").is_some_and(|w| !w.is_empty());
    let values = remap_values(shadow_root, user_root, file_remaps);
    match std::env::current_exe() {
        Ok(exe) if !own_wrapper => {
            cmd.env("RUSTC_WORKSPACE_WRAPPER", exe).env(REMAP_VAR, values.join(&REMAP_SEPARATOR.to_string()));
        }
        _ => add_remap_flags(cmd, &values),
    }
}

/// The prebuilt runtime's rlib the wrapper gives the workspace's crates as `--extern calltime_rt=<rlib>`.
const RUNTIME_RLIB_VAR: &str = "CALLTIME_RUNTIME_RLIB";

/// When cargo runs this binary as the shadow build's RUSTC_WORKSPACE_WRAPPER (`cargo-calltime RUSTC ARGS...`, with
/// [`REMAP_VAR`] set): runs rustc with the remap flag (and the prebuilt runtime, [`RUNTIME_RLIB_VAR`]) added to
/// compilations and returns its exit code.
pub fn rustc_wrapper_from_env() -> Option<i32> {
    let remap = std::env::var_os(REMAP_VAR)?;
    let runtime_rlib = std::env::var_os(RUNTIME_RLIB_VAR).filter(|r| !r.is_empty());
    let mut args = std::env::args_os().skip(1);
    let rustc = args.next()?;
    let args: Vec<std::ffi::OsString> = args.collect();
    let mut cmd = Command::new(&rustc);
    cmd.args(&args);
    // Only compilations take it (not `rustc -vV` or `--print` queries, whose output cargo parses).
    let compiling = args.iter().any(|a| Path::new(a).extension().is_some_and(|e| e == "rs"));
    if compiling {
        for value in remap.to_string_lossy().split(REMAP_SEPARATOR) {
            cmd.arg(format!("--remap-path-prefix={value}"));
        }
        if let Some(rlib) = &runtime_rlib {
            let mut extern_arg = std::ffi::OsString::from("calltime_rt=");
            extern_arg.push(rlib);
            cmd.arg("--extern").arg(extern_arg);
            // A crate that uses the runtime only through another (a bin through its lib) finds it by search path:
            // rustc looks dependencies of dependencies up there, not in `--extern`.
            if let Some(dir) = Path::new(rlib).parent() {
                let mut search = std::ffi::OsString::from("dependency=");
                search.push(dir);
                cmd.arg("-L").arg(search);
            }
        }
    }
    cmd.env_remove(REMAP_VAR).env_remove(RUNTIME_RLIB_VAR);
    let code = match cmd.status() {
        Ok(status) => status.code().unwrap_or(101),
        Err(e) => {
            eprintln!("error: cargo-calltime cannot run {}: {e}", Path::new(&rustc).display());
            return Some(101);
        }
    };
    if let (0, true, Some(rlib)) = (code, compiling, &runtime_rlib) {
        if let Err(e) = record_runtime_dependency(&args, Path::new(rlib)) {
            eprintln!("error: cargo-calltime cannot record the runtime in the crate's dep-info: {e:#}");
            return Some(101);
        }
    }
    Some(code)
}

/// Appends `# env-dep:CALLTIME_RUNTIME_RLIB=<rlib>` to the dep-info file rustc wrote for a compilation (`ARGS`:
/// `--out-dir D --crate-name N -C extra-filename=X` give `D/NX.d`), as rustc does for an `env!`: cargo then rebuilds
/// the crate when the variable names another rlib. cargo knows nothing else of a runtime given as `--extern`.
fn record_runtime_dependency(args: &[std::ffi::OsString], rlib: &Path) -> Result<()> {
    let value_of = |flag: &str| args.windows(2).find(|w| w[0] == flag).map(|w| w[1].to_string_lossy().into_owned());
    let extra = args.iter().find_map(|a| a.to_str()?.strip_prefix("extra-filename=")).unwrap_or_default();
    let emits_dep_info =
        args.iter().any(|a| a.to_str().is_some_and(|a| a.starts_with("--emit=") && a.contains("dep-info")));
    let (Some(out_dir), Some(name), true) = (value_of("--out-dir"), value_of("--crate-name"), emits_dep_info) else {
        return Ok(()); // not the way cargo compiles: nothing cargo would read
    };
    let dep_info = Path::new(&out_dir).join(format!("{name}{extra}.d"));
    let rlib = rlib.to_string_lossy();
    if rlib.contains(['\n', '\r']) {
        return Ok(()); // rustc would escape it; such a cache path is not worth the code
    }
    let mut file = std::fs::File::options()
        .append(true)
        .open(&dep_info)
        .with_context(|| format!("cannot open {}", dep_info.display()))?;
    writeln!(file, "# env-dep:{RUNTIME_RLIB_VAR}={rlib}")
        .with_context(|| format!("cannot write {}", dep_info.display()))
}

/// Whether the build uses the dev profile (or `test`, which inherits it): the one cargo compiles unoptimised unless
/// the user set an `opt-level`, and the one the runtime's dev variant serves.
pub fn is_dev_profile(build: &BuildOptions) -> bool {
    profile_dir(build) == "debug"
}

/// The profile directory cargo builds into (`debug`, `release`, or a custom profile's name).
fn profile_dir(build: &BuildOptions) -> &str {
    match build.profile.as_deref() {
        Some("dev" | "test") | None if !build.release => "debug",
        Some("release" | "bench") | None => "release",
        Some(custom) => custom,
    }
}

/// Before the first build into `target_dir`: copies the dependency artifacts the user's own builds left in
/// `user_target` (`deps`, `build`, `.fingerprint` of the profile), mtimes kept, so cargo finds the dependencies it
/// would build with the same flags fresh. Returns how many files were copied (0 when `target_dir` already has a
/// build of the profile, or the user has none). The user's files are only read.
pub fn seed_dependencies(user_target: &Path, target_dir: &Path, build: &BuildOptions) -> Result<usize> {
    let profile = profile_dir(build);
    let (from, to) = (user_target.join(profile), target_dir.join(profile));
    if to.exists() || !from.join(".fingerprint").is_dir() || to.starts_with(&from) {
        return Ok(0);
    }
    let mut copied = 0;
    for dir in ["deps", "build", ".fingerprint"] {
        copied += copy_tree(&from.join(dir), &to.join(dir))
            .with_context(|| format!("cannot copy {} to {}", from.join(dir).display(), to.display()))?;
    }
    Ok(copied)
}

/// Where the runtime crate is written and its builds are kept across workspaces: `$CALLTIME_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cargo-calltime`, else `~/.cache/cargo-calltime`, in a directory named after the tool's version
/// and the runtime's sources (a new tool never rewrites files an older one's builds depend on). The runtime is
/// written there once, atomically (another run may be reading it); the prebuilt runtimes go there too
/// ([`prebuilt_runtime`]). Entries of other versions unused for a day are removed ([`prune_runtime_cache`]). `None`
/// when no cache directory can be made: the runtime then goes under the workspace's target dir as before (compiled
/// once per target dir).
pub fn runtime_home() -> Option<PathBuf> {
    let base = std::env::var_os("CALLTIME_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()).map(|d| Path::new(&d).join("cargo-calltime"))
        })
        .or_else(|| {
            std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|d| Path::new(&d).join(".cache/cargo-calltime"))
        })?;
    let home = base.join(format!("runtime-{}-{:016x}", env!("CARGO_PKG_VERSION"), runtime_sources_hash()));
    prune_runtime_cache(&base, &home);
    if home.join("calltime-rt/Cargo.toml").is_file() {
        mark_used(&home);
        return Some(home);
    }
    // Written beside, then renamed into place: a concurrent run sees the whole crate or none of it.
    let staging = home.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::create_dir_all(&home).map_err(anyhow::Error::from).and_then(|()| {
        let dir = crate::shadow::write_runtime(&staging)?;
        std::fs::rename(&dir, home.join("calltime-rt")).or_else(|e| {
            if home.join("calltime-rt/Cargo.toml").is_file() {
                Ok(()) // another run won the race with the same files
            } else {
                Err(e.into())
            }
        })
    });
    let _ = std::fs::remove_dir_all(&staging);
    match written {
        Ok(()) => {
            mark_used(&home);
            Some(home)
        }
        Err(e) => {
            tracing::info!("no shared runtime cache in {}: {e:#}", home.display());
            None
        }
    }
}

fn runtime_sources_hash() -> u64 {
    hash_of(crate::runtime_sources::RUNTIME_SOURCES)
}

fn hash_of(value: impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Setting it to `0` makes every build compile the runtime from its sources, as when no prebuilt one fits.
const PREBUILT_SWITCH_VAR: &str = "CALLTIME_PREBUILT_RUNTIME";

/// The runtime compiled when the tool was built (build.rs) that this build can link instead of compiling it: the
/// variant of its profile (dev or release), written once into the cache `home`.
/// `None`, and the runtime is compiled as before, unless the user's rustc (`$RUSTC`, else the `rustc` that runs here,
/// rust-toolchain files included) prints the very `rustc -vV` of the one that built the tool, for the
/// host target (no `CARGO_BUILD_TARGET`), with no `-Z` rustflags (nightly flags that must match across crates), the
/// wrapper that passes it ours alone, a dev/test or release/bench profile, and no `[profile.*.package.calltime-rt]`
/// of the user's. A build that still fails on it is retried with the runtime compiled ([`failed_on_prebuilt_runtime`]).
pub fn prebuilt_runtime(
    home: &Path,
    ws_root: &Path,
    build: &BuildOptions,
    rustc_version: RustcVersion,
) -> Option<PathBuf> {
    use crate::runtime_sources::{PREBUILT_RUNTIMES, PREBUILT_RUSTC};
    let profile = match profile_dir(build) {
        "debug" => "dev",
        "release" => "release",
        _ => "",
    };
    let rustflags = ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS"].map(std::env::var_os);
    let why_not = if std::env::var_os(PREBUILT_SWITCH_VAR).is_some_and(|v| v == "0") {
        Some(format!("{PREBUILT_SWITCH_VAR}=0"))
    } else if profile.is_empty() {
        Some("a custom profile".to_owned())
    } else if std::env::var_os("RUSTC_WORKSPACE_WRAPPER").is_some_and(|w| !w.is_empty()) {
        Some("the build has a RUSTC_WORKSPACE_WRAPPER of its own".to_owned())
    } else if std::env::var_os("CARGO_BUILD_TARGET").is_some_and(|t| !t.is_empty()) {
        Some("CARGO_BUILD_TARGET is set".to_owned())
    } else if rustflags.iter().flatten().any(|f| f.to_string_lossy().contains("-Z")) {
        Some("the rustflags have -Z flags".to_owned())
    } else if sets_runtime_profile(&ws_root.join("Cargo.toml")) {
        Some("the workspace sets [profile.*.package.calltime-rt]".to_owned())
    } else if !PREBUILT_RUNTIMES.iter().any(|(name, _)| *name == profile) {
        Some("the tool was built without prebuilt runtimes".to_owned())
    } else {
        match rustc_version.wait() {
            Some(version) if version == PREBUILT_RUSTC => None,
            Some(version) => Some(format!(
                "the workspace's rustc is not the one that built the tool ({} against {})",
                version.lines().next().unwrap_or_default(),
                PREBUILT_RUSTC.lines().next().unwrap_or_default()
            )),
            None => Some("`rustc -vV` failed".to_owned()),
        }
    };
    if let Some(why) = why_not {
        tracing::info!("compiling the runtime: {why}");
        return None;
    }
    let bytes = PREBUILT_RUNTIMES.iter().find(|(name, _)| *name == profile)?.1;
    let rlib = prebuilt_rlib_path(home, profile, PREBUILT_RUSTC, bytes);
    match write_once(&rlib, bytes) {
        Ok(()) => Some(rlib),
        Err(e) => {
            tracing::info!("compiling the runtime: cannot write {}: {e:#}", rlib.display());
            None
        }
    }
}

/// `rustc -vV` of the rustc the copy's build will use, run in the background from the start of a build (it is a
/// process or two, rustup's proxy and rustc, that the analysis need not wait for).
pub struct RustcVersion(std::thread::JoinHandle<Option<String>>);

impl RustcVersion {
    pub fn start() -> RustcVersion {
        RustcVersion(std::thread::spawn(user_rustc_version))
    }

    /// Its output; `None` when it failed.
    fn wait(self) -> Option<String> {
        self.0.join().ok().flatten()
    }
}

/// `rustc -vV` of the rustc the copy's build will use: `$RUSTC`, else `rustc` run from the current directory, as the
/// build's cargo is (rustup's proxy honours that directory's rust-toolchain file and `RUSTUP_TOOLCHAIN`).
fn user_rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").filter(|r| !r.is_empty()).unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("-vV").stdin(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the manifest has a `[profile.<any>.package.calltime-rt]` table (the user's settings for the runtime).
fn sets_runtime_profile(manifest: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest) else { return false };
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else { return false };
    let profiles = doc.get("profile").and_then(|p| p.as_table_like());
    profiles.is_some_and(|profiles| {
        profiles.iter().any(|(_, profile)| {
            profile.get("package").and_then(|p| p.as_table_like()).is_some_and(|p| p.contains_key("calltime-rt"))
        })
    })
}

/// The start of the name the prebuilt runtime takes in a build's `deps` directory ([`place_prebuilt_runtime`]); not
/// `libcalltime_rt-`, the compiled runtime's, which [`share_runtime_build`] copies.
const PLACED_RUNTIME_PREFIX: &str = "libcalltime_rt_prebuilt-";

/// Links (or copies) the prebuilt runtime `rlib` of the cache into the build's own `deps` directory, which cargo
/// gives every crate it compiles as `-L dependency=`, and returns its path there, to be given to the workspace's
/// crates. A crate that is not the workspace's but depends on a member that links the runtime (pest_meta on a
/// `[patch]`ed pest) loads the runtime as that member's dependency, by search path: from the cache, which only the
/// workspace's crates are told of, it was not found (`E0463 can't find crate for pest`). Named after the cached
/// file's path, which names its content ([`prebuilt_rlib_path`]); an earlier one is removed first.
pub fn place_prebuilt_runtime(rlib: &Path, target_dir: &Path, build: &BuildOptions) -> Result<PathBuf> {
    let deps = target_dir.join(profile_dir(build)).join("deps");
    std::fs::create_dir_all(&deps).with_context(|| format!("cannot create {}", deps.display()))?;
    let name = format!("{PLACED_RUNTIME_PREFIX}{:016x}.rlib", hash_of(rlib));
    let placed = deps.join(&name);
    let entries = std::fs::read_dir(&deps).with_context(|| format!("cannot read {}", deps.display()))?;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.starts_with(PLACED_RUNTIME_PREFIX) && file != name {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if !placed.is_file() {
        let staging = placed.with_extension(format!("tmp{}", std::process::id()));
        let _ = std::fs::remove_file(&staging);
        let written = std::fs::hard_link(rlib, &staging)
            .or_else(|_| std::fs::copy(rlib, &staging).map(|_| ()))
            .and_then(|()| std::fs::rename(&staging, &placed));
        let _ = std::fs::remove_file(&staging);
        written.with_context(|| format!("cannot copy {} to {}", rlib.display(), placed.display()))?;
    }
    Ok(placed)
}

/// Where the prebuilt runtime `bytes` of `profile`, made by `rustc` (its `rustc -vV`), goes in the cache `home`: a
/// directory named after both. The same runtime sources (one `home`) compiled into two tool binaries give two
/// different rlibs (the sources' path is in them: two checkouts, an installed tool and a development one); were they
/// to share a file, a run of one tool would replace it while another's build was linking crates against it, and
/// the next crate to load those would fail on the changed runtime (`E0463 can't find crate for` a workspace crate,
/// `E0460`), as would a later build that cargo, seeing the same path in the crates' `env-dep`, took for fresh.
fn prebuilt_rlib_path(home: &Path, profile: &str, rustc: &str, bytes: &[u8]) -> PathBuf {
    home.join(format!("prebuilt-{:016x}/{profile}/libcalltime_rt.rlib", hash_of((rustc, bytes))))
}

/// Writes `bytes` to `path` unless a file of that length is there (the path names its content, see
/// [`prebuilt_rlib_path`]): under a temporary name, then renamed into place, so no run reads half a file.
fn write_once(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(());
    }
    let dir = path.parent().context("the rlib path has a directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let staging = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::write(&staging, bytes).and_then(|()| std::fs::rename(&staging, path));
    let _ = std::fs::remove_file(&staging);
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// Whether the build failed because the program got a second global allocator: the counting one the copy declared,
/// and one the analysis did not find (rustc: "the `#[global_allocator]` in .. conflicts with global allocator in: ..",
/// or "cannot define multiple global allocators" within one crate).
pub fn failed_on_second_allocator(failed: &BuildOutput) -> bool {
    failed.stderr.lines().any(|line| {
        line.contains("conflicts with global allocator in") || line.contains("cannot define multiple global allocators")
    })
}

/// Whether a build that linked the prebuilt runtime failed because of it: rustc refused the rlib (another compiler,
/// target or panic strategy, flags that must match across crates). The build is then retried with the runtime
/// compiled from its sources.
pub fn failed_on_prebuilt_runtime(failed: &BuildOutput) -> bool {
    const REFUSALS: &[&str] =
        &["E0460", "E0461", "E0462", "E0463", "E0514", "E0519", "panic strategy", "mixing", "target modifier"];
    failed.stderr.lines().any(|line| line.contains("calltime_rt") && REFUSALS.iter().any(|r| line.contains(r)))
}

/// Removes the cache's `runtime-*` entries other than `current` (older tool versions or runtime sources, a crashed
/// run's staging directory) that no run has used for [`STALE_AFTER`]: a run of another tool may be using a newer
/// one. Each run marks its entry used ([`mark_used`]). Best effort: what cannot be removed stays.
fn prune_runtime_cache(base: &Path, current: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_runtime = entry.file_name().to_string_lossy().starts_with("runtime-");
        if !is_runtime || path == current {
            continue;
        }
        let used = std::fs::metadata(path.join(USED_MARKER)).or_else(|_| std::fs::metadata(&path));
        let idle = used.and_then(|m| m.modified()).ok().and_then(|t| now.duration_since(t).ok());
        if idle.is_some_and(|idle| idle > STALE_AFTER) {
            tracing::info!("removing the unused runtime cache entry {}", path.display());
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// How long a cache entry of another tool version may go unused before a run removes it.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);
/// The file in a cache entry whose mtime is its last use.
const USED_MARKER: &str = "last-used";

/// Marks the cache entry `home` used now (for [`prune_runtime_cache`]).
fn mark_used(home: &Path) {
    let marker = home.join(USED_MARKER);
    let touched = std::fs::File::options().create(true).truncate(false).write(true).open(&marker);
    if let Err(e) = touched.and_then(|f| f.set_modified(std::time::SystemTime::now())) {
        tracing::info!("cannot mark {} used: {e}", home.display());
    }
}

/// The runtime's build artifacts in a profile directory: `deps/{lib,}calltime_rt-*` and `.fingerprint/calltime-rt-*`.
fn runtime_artifacts(profile_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for (dir, prefixes) in [("deps", &["libcalltime_rt-", "calltime_rt-"][..]), (".fingerprint", &["calltime-rt-"][..])]
    {
        let Ok(entries) = std::fs::read_dir(profile_dir.join(dir)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if prefixes.iter().any(|p| name.starts_with(p)) {
                found.push(Path::new(dir).join(name));
            }
        }
    }
    found
}

/// Copies the runtime's artifacts of the profile between a build dir and the shared cache's target dir (`from` to
/// `to`), each only when `to` lacks it, mtimes kept: seeded into a new build dir, cargo finds the runtime fresh
/// (same sources at the same path, same flags) and does not compile it again. Files go in under a temporary name
/// and are renamed into place, so a concurrent run never reads half a file. Returns how many were copied.
pub fn share_runtime_build(from: &Path, to: &Path, build: &BuildOptions) -> Result<usize> {
    let profile = profile_dir(build);
    let (from, to) = (from.join(profile), to.join(profile));
    let mut copied = 0;
    for artifact in runtime_artifacts(&from) {
        let target = to.join(&artifact);
        if target.exists() {
            continue;
        }
        let staging = target.with_extension(format!("calltime-tmp{}", std::process::id()));
        let result = copy_tree_or_file(&from.join(&artifact), &staging).and_then(|n| {
            std::fs::rename(&staging, &target)?;
            Ok(n)
        });
        let _ = std::fs::remove_dir_all(&staging).or_else(|_| std::fs::remove_file(&staging));
        copied += result
            .with_context(|| format!("cannot copy {} to {}", from.join(&artifact).display(), target.display()))?;
    }
    Ok(copied)
}

/// [`copy_tree`] for a directory, else one file with its mtime.
fn copy_tree_or_file(from: &Path, to: &Path) -> std::io::Result<usize> {
    if from.is_dir() {
        return copy_tree(from, to);
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    copy_file(from, to)?;
    Ok(1)
}

/// Copies one file and gives the copy the original's mtime.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    let modified = std::fs::metadata(from)?.modified()?;
    std::fs::File::options().write(true).open(to)?.set_modified(modified)
}

/// Copies a directory tree, keeping each file's mtime (cargo's freshness checks compare them).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<usize> {
    if !from.is_dir() {
        return Ok(0);
    }
    std::fs::create_dir_all(to)?;
    let mut copied = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copied += copy_tree(&source, &target)?;
        } else if kind.is_file() {
            copy_file(&source, &target)?;
            copied += 1;
        }
    }
    Ok(copied)
}

/// `--remap-path-prefix=<shadow>=<workspace>` without clobbering the user's rustflags: appended to
/// CARGO_ENCODED_RUSTFLAGS or RUSTFLAGS when either is set (they win over config files), else given as
/// `--config build.rustflags=[..]`, which cargo merges with the arrays of the user's config files.
fn add_remap_flags(cmd: &mut Command, values: &[String]) {
    let flags: Vec<String> = values.iter().map(|v| format!("--remap-path-prefix={v}")).collect();
    if let Ok(encoded) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        let mut parts: Vec<String> = encoded.split('\x1f').filter(|p| !p.is_empty()).map(str::to_owned).collect();
        parts.extend(flags);
        cmd.env("CARGO_ENCODED_RUSTFLAGS", parts.join("\x1f"));
    } else if let Ok(rustflags) = std::env::var("RUSTFLAGS") {
        // Encoded form so a path with spaces stays one argument.
        let mut parts: Vec<String> = rustflags.split_whitespace().map(str::to_owned).collect();
        parts.extend(flags);
        cmd.env_remove("RUSTFLAGS").env("CARGO_ENCODED_RUSTFLAGS", parts.join("\x1f"));
    } else {
        let values: Vec<String> = flags.into_iter().map(|f| toml_edit::Value::from(f).to_string()).collect();
        cmd.arg("--config").arg(format!("build.rustflags=[{}]", values.join(", ")));
    }
}

/// A diagnostic's file as a path relative to the workspace root when it is in the copy or the workspace.
fn relative_to_roots(file: &Path, shadow_root: &Path, user_root: &Path) -> PathBuf {
    for root in [shadow_root, user_root] {
        if let Ok(rel) = file.strip_prefix(root) {
            return rel.to_owned();
        }
    }
    file.to_owned()
}

/// The probed function whose probe is nearest above `line` of `file` (relative to the workspace root): the one a
/// compiler error there is about.
pub fn function_at<'p>(plan: &'p Plan, ws_root: &Path, file: &Path, line: usize) -> Option<&'p str> {
    let mut best: Option<(u32, &str)> = None;
    for (function, site) in plan.instrumented() {
        let rel = function.file.strip_prefix(ws_root).unwrap_or(&function.file);
        if rel != file {
            continue;
        }
        let start_line = function.line.min(site.line);
        if start_line as usize <= line && best.is_none_or(|(l, _)| start_line > l) {
            best = Some((start_line, function.path.as_str()));
        }
    }
    best.map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlannedFunction, ProbeKind, ProbeSite};

    fn function(root: &Path, path: &str, file: &str, line: u32, open: usize) -> PlannedFunction {
        PlannedFunction {
            path: path.to_owned(),
            display: path.to_owned(),
            file: root.join(file),
            line,
            level: 1,
            manifest_path: root.join("Cargo.toml"),
            is_root: false,
            probe: Some(ProbeSite {
                index: 0,
                kind: ProbeKind::Sync,
                line,
                open,
                close: open,
                return_type: None,
                errs: Default::default(),
                body_in_closure: false,
                body_twice: false,
                spawns: Vec::new(),
            }),
            skip_reason: None,
        }
    }

    #[test]
    fn a_compiler_error_is_blamed_on_the_probe_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let source = "fn a() {\n    1;\n}\n\nfn b() {\n    2;\n}\n";
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), source).unwrap();
        let b_open = source.rfind('{').unwrap() + 1;
        let mut a = function(dir.path(), "k::a", "src/lib.rs", 1, 8);
        let mut b = function(dir.path(), "k::b", "src/lib.rs", 5, b_open);
        a.probe.as_mut().unwrap().index = 0;
        b.probe.as_mut().unwrap().index = 1;
        let plan = Plan {
            root_args: vec!["a".into()],
            depth: 1,
            filter: None,
            exclude: None,
            functions: vec![a, b],
            edges: vec![],
            unresolved: vec![],
            warnings: vec![],
            analysed: Default::default(),
            global_allocators: Vec::new(),
        };
        let file = Path::new("src/lib.rs");
        assert_eq!(function_at(&plan, dir.path(), file, 2), Some("k::a"));
        assert_eq!(function_at(&plan, dir.path(), file, 5), Some("k::b"));
        assert_eq!(function_at(&plan, dir.path(), file, 7), Some("k::b"));
        assert_eq!(function_at(&plan, dir.path(), Path::new("src/other.rs"), 2), None);
    }

    #[test]
    fn the_runtime_build_is_shared_with_mtimes_and_never_overwritten() {
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let debug = from.path().join("debug");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        for file in
            ["deps/libcalltime_rt-ab.rlib", "deps/calltime_rt-ab.d", ".fingerprint/calltime-rt-ab/lib-calltime_rt"]
        {
            std::fs::create_dir_all(debug.join(file).parent().unwrap()).unwrap();
            std::fs::write(debug.join(file), file).unwrap();
            std::fs::File::options().write(true).open(debug.join(file)).unwrap().set_modified(old).unwrap();
        }
        // Not the runtime's: left where it is.
        std::fs::write(debug.join("deps/libdemo-cd.rlib"), "").unwrap();
        std::fs::create_dir_all(to.path().join("debug/deps")).unwrap();
        std::fs::write(to.path().join("debug/deps/calltime_rt-ab.d"), "newer").unwrap();
        let build = BuildOptions::default();
        assert_eq!(share_runtime_build(from.path(), to.path(), &build).unwrap(), 2);
        let copied = to.path().join("debug/.fingerprint/calltime-rt-ab/lib-calltime_rt");
        assert_eq!(std::fs::metadata(&copied).unwrap().modified().unwrap(), old);
        assert_eq!(std::fs::read_to_string(to.path().join("debug/deps/calltime_rt-ab.d")).unwrap(), "newer");
        assert!(to.path().join("debug/deps/libcalltime_rt-ab.rlib").is_file());
        assert!(!to.path().join("debug/deps/libdemo-cd.rlib").exists());
        let left: Vec<_> =
            std::fs::read_dir(to.path().join("debug/deps")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 2, "no staging file is left: {left:?}");
        assert_eq!(share_runtime_build(from.path(), to.path(), &build).unwrap(), 0);
    }

    /// The E0463 flake of docs/performance.md's "Unseen programs": two tool binaries built from two checkouts of the
    /// same sources embed different rlibs, of the same length or not; each goes to its own file, so neither run
    /// replaces the runtime another's build is linking crates against.
    #[test]
    fn two_tools_with_the_same_runtime_sources_never_share_a_prebuilt_rlib() {
        let home = tempfile::tempdir().unwrap();
        let rustc = "rustc 1.91.0 (f8297e351 2025-10-28)\nhost: x86_64-unknown-linux-gnu\n";
        let runtimes: [&[u8]; 3] =
            [b"rlib compiled in /work/a", b"rlib compiled in /work/b", b"rlib compiled in /work/abc"];
        let paths: Vec<PathBuf> =
            runtimes.iter().map(|bytes| prebuilt_rlib_path(home.path(), "release", rustc, bytes)).collect();
        for (path, bytes) in paths.iter().zip(runtimes) {
            write_once(path, bytes).unwrap();
        }
        for (path, bytes) in paths.iter().zip(runtimes) {
            assert_eq!(std::fs::read(path).unwrap(), bytes, "{}", path.display());
        }
        // The same runtime by the same rustc is the same file; by another rustc, another.
        assert_eq!(prebuilt_rlib_path(home.path(), "release", rustc, runtimes[0]), paths[0]);
        assert_ne!(prebuilt_rlib_path(home.path(), "release", "rustc 1.92.0", runtimes[0]), paths[0]);
        assert_ne!(prebuilt_rlib_path(home.path(), "dev", rustc, runtimes[0]), paths[0]);
    }

    #[test]
    fn only_rustcs_refusals_of_the_prebuilt_runtime_retry_the_build() {
        let failed = |stderr: &str| BuildOutput { stderr: stderr.to_owned(), ..Default::default() };
        assert!(failed_on_prebuilt_runtime(&failed(
            "error[E0514]: found crate `calltime_rt` compiled by an incompatible version of rustc"
        )));
        assert!(failed_on_prebuilt_runtime(&failed(
            "error[E0461]: couldn't find crate `calltime_rt` with expected target triple"
        )));
        assert!(failed_on_prebuilt_runtime(&failed(
            "error: mixing `-Zregparm` will cause an ABI mismatch in crate `calltime_rt`"
        )));
        // The user's own errors, or a probe's: the build is not retried.
        assert!(!failed_on_prebuilt_runtime(&failed("error[E0308]: mismatched types\n --> src/lib.rs:3:5")));
        assert!(!failed_on_prebuilt_runtime(&failed("3 |     let _g = ::calltime_rt::__private::enter(1); x + \"\"")));
    }

    #[test]
    fn the_users_runtime_profile_is_found_in_any_profile() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(&manifest, "[package]\nname = \"a\"\n[profile.release]\nlto = true\n").unwrap();
        assert!(!sets_runtime_profile(&manifest));
        std::fs::write(&manifest, "[profile.bench.package.calltime-rt]\nopt-level = 1\n").unwrap();
        assert!(sets_runtime_profile(&manifest));
    }

    #[test]
    fn old_runtime_cache_entries_are_removed_after_a_day_unused() {
        let base = tempfile::tempdir().unwrap();
        let day_ago = std::time::SystemTime::now() - STALE_AFTER - std::time::Duration::from_secs(60);
        let entry = |name: &str, used: Option<std::time::SystemTime>| {
            let dir = base.path().join(name);
            std::fs::create_dir_all(dir.join("target")).unwrap();
            mark_used(&dir);
            if let Some(used) = used {
                std::fs::File::options().write(true).open(dir.join(USED_MARKER)).unwrap().set_modified(used).unwrap();
            }
            dir
        };
        let current = entry("runtime-0.2.0-b", Some(day_ago));
        let old = entry("runtime-0.1.0-a", Some(day_ago));
        let recent = entry("runtime-0.1.0-c", None);
        let other = entry("not-a-runtime", Some(day_ago));
        prune_runtime_cache(base.path(), &current);
        assert!(current.exists(), "the current entry stays, however old");
        assert!(!old.exists(), "an entry unused for a day goes");
        assert!(recent.exists(), "an entry another tool used lately stays");
        assert!(other.exists(), "only runtime-* entries are touched");
    }

    #[test]
    fn diagnostic_paths_are_made_relative_to_the_workspace() {
        let shadow = Path::new("/w/target/calltime/shadow");
        let user = Path::new("/w");
        assert_eq!(
            relative_to_roots(Path::new("/w/target/calltime/shadow/src/a.rs"), shadow, user),
            Path::new("src/a.rs")
        );
        assert_eq!(relative_to_roots(Path::new("/w/src/a.rs"), shadow, user), Path::new("src/a.rs"));
        assert_eq!(relative_to_roots(Path::new("src/a.rs"), shadow, user), Path::new("src/a.rs"));
    }
}

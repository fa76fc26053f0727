//! What `run` and `build` share: analyse, rewrite the shadow copy, build it, and say whose fault a failed build is.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::options;
use crate::cargo::{self, BuildOptions, NamedTarget, Target};
use crate::cli::{CargoArgs, GlobalArgs, PlanArgs, TargetArgs};
use crate::error::UserError;
use crate::plan::{Plan, PlannedFunction, ProbeSite, SkipReason};
use crate::rewrite::PlanInfo;
use crate::shadow::{self, CopyLock};
use crate::ui;
use crate::units::plural;
use crate::workspace::{CargoOptions, Workspace};

/// Everything up to a built instrumented executable.
pub struct Built {
    pub ws: Workspace,
    pub plan: Plan,
    pub info: PlanInfo,
    pub target: Target,
    pub executable: PathBuf,
}

/// The typed options of an analysed build, from the flags `run` and `build` share.
struct BuildPlan<'a> {
    cargo: CargoOptions,
    build: BuildOptions,
    named: Option<NamedTarget>,
    plan: &'a PlanArgs,
}

pub fn analyse_and_build(
    global: &GlobalArgs,
    cargo_args: &CargoArgs,
    target_args: &TargetArgs,
    plan_args: &PlanArgs,
) -> Result<Built> {
    // Asked now, answered while the workspace is read and analysed.
    let rustc_version = cargo::RustcVersion::start();
    let mut plan_options = options::plan_options(plan_args)?;
    let opts = BuildPlan {
        cargo: options::cargo_options(global, cargo_args),
        build: options::build_options(global, target_args),
        named: options::named_target(target_args)?,
        plan: plan_args,
    };
    let ws = Workspace::load(&opts.cargo)?;
    let target = cargo::select_target(&ws, opts.named.as_ref(), &opts.cargo)?;

    ui::status("Analysing", &format!("{} from {}", ws.root.display(), opts.plan.root.join(", ")));
    let plan = super::plan(&ws, &mut plan_options, opts.plan.exclude_fast)?;
    let functions = plan.instrumented().count() as u32;
    if functions == 0 {
        return Err(UserError::new(format!(
            "no function gets a probe ({} reached from {})",
            plan.functions.len(),
            plan.root_args.join(", ")
        ))
        .hint("check --filter; `cargo calltime graph` shows the plan")
        .into());
    }
    let calltime_dir = ws.calltime_dir();
    let id = shadow::plan_id(&plan);
    let plans = calltime_dir.join("plans");
    std::fs::create_dir_all(&plans).with_context(|| format!("cannot create {}", plans.display()))?;
    let table_path = plans.join(format!("{id}.functions.json"));
    plan.function_table(&id).save(&table_path)?;
    let dev_profile = cargo::is_dev_profile(&opts.build);
    let info = PlanInfo { id, table: table_path.display().to_string(), functions, dev_profile };

    // Two runs at once on one workspace would write the same copy: the second waits for the first's build.
    let _lock = match CopyLock::try_acquire(&calltime_dir)? {
        Some(lock) => lock,
        None => {
            ui::status("Blocking", "waiting for another cargo calltime on this workspace to finish building");
            CopyLock::acquire(&calltime_dir)?
        }
    };
    let shadow_dir = calltime_dir.join("shadow");
    // The runtime: prebuilt when the user's toolchain is the tool's, else compiled (once per machine: in a cache
    // shared by every workspace, with its build; under the target dir when there is no cache).
    // Allocations are counted by the program's own global allocator wrapped in the copy, else by the counting
    // allocator the copy declares in the crate root of the executable it builds.
    let alloc_root = if plan.global_allocators.is_empty() { shadow::AllocRoot::of_target(&ws, &target) } else { None };
    let home = cargo::runtime_home();
    let prebuilt = home
        .as_deref()
        .filter(|_| !ws_has_runtime_package(&ws))
        .and_then(|home| cargo::prebuilt_runtime(home, &ws.root, &opts.build, rustc_version));
    let runtime = match prebuilt {
        Some(_) => {
            if opts.build.echo {
                let rustc = crate::runtime_sources::PREBUILT_RUSTC.lines().next().unwrap_or_default();
                ui::status("Linking", &format!("the runtime compiled with the tool ({rustc})"));
            }
            None
        }
        None => Some(compiled_runtime(&ws, home.as_deref(), &shadow_dir)?),
    };
    let runtime_dir = runtime.as_ref().map(|r| r.dir.as_path());
    let stats = shadow::prepare(&ws, &shadow_dir, Some((&plan, &info)), runtime_dir, alloc_root.as_ref())?;
    report_copy(&ws, &plan, &opts, &shadow_dir, &stats);

    ui::status("Building", &format!("{} `{}` with probes", target.kind.noun(), target.name));
    let build_dir = calltime_dir.join("build");
    let user_target = ws.metadata.target_directory.as_std_path();
    let seeded = cargo::seed_dependencies(user_target, &build_dir, &opts.build)?;
    if seeded > 0 {
        ui::status("Reusing", &format!("{seeded} files of dependencies built in {}", user_target.display()));
    }
    // After the seeding, which needs an empty profile dir.
    let prebuilt = match prebuilt {
        Some(rlib) => Some(cargo::place_prebuilt_runtime(&rlib, &build_dir, &opts.build)?),
        None => None,
    };
    let build = |runtime: Option<&CompiledRuntime>, remaps: &[(PathBuf, PathBuf)]| {
        let rustc =
            cargo::ShadowRustc { file_remaps: remaps, runtime_rlib: prebuilt.as_deref().filter(|_| runtime.is_none()) };
        build_copy(&ws.root, &shadow_dir, &build_dir, &opts, &target, rustc, runtime)
    };
    let mut out = build(runtime.as_ref(), &stats.remaps)?;
    let mut runtime = runtime;
    if !out.success && prebuilt.is_some() && cargo::failed_on_prebuilt_runtime(&out) {
        ui::status("Compiling", "the runtime: the prebuilt one does not link with this build");
        let compiled = compiled_runtime(&ws, home.as_deref(), &shadow_dir)?;
        let stats = shadow::prepare(&ws, &shadow_dir, Some((&plan, &info)), Some(&compiled.dir), alloc_root.as_ref())?;
        out = build(Some(&compiled), &stats.remaps)?;
        runtime = Some(compiled);
    }
    if !out.success && alloc_root.is_some() && cargo::failed_on_second_allocator(&out) {
        // A global allocator the analysis does not see (a dependency's, or one in a module of a target it did not
        // index): the program keeps it, and allocations go uncounted.
        ui::warn(
            "allocations are not counted: the program has a #[global_allocator] of its own that the copy cannot \
             wrap (in a dependency or a file outside the analysed crates)",
        );
        let runtime_dir = runtime.as_ref().map(|r| r.dir.as_path());
        let stats = shadow::prepare(&ws, &shadow_dir, Some((&plan, &info)), runtime_dir, None)?;
        out = build(runtime.as_ref(), &stats.remaps)?;
    }
    if !out.success {
        return Err(explain_build_failure(&ws, &plan, &opts, &target, out));
    }
    let Some(executable) = out.executable else {
        return Err(UserError::new(format!(
            "cargo built {} `{}` but named no executable for it",
            target.kind.noun(),
            target.name
        ))
        .hint("run with -v to see cargo's output")
        .into());
    };
    Ok(Built { ws, plan, info, target, executable })
}

/// The runtime compiled from its sources: its crate, and the shared cache's target dir its build is copied to and
/// from (none when it is under the workspace's target dir).
struct CompiledRuntime {
    dir: PathBuf,
    cache: Option<PathBuf>,
}

/// Writes the runtime crate: into the shared cache `home`, else under the workspace's target dir.
fn compiled_runtime(ws: &Workspace, home: Option<&Path>, shadow_dir: &Path) -> Result<CompiledRuntime> {
    let calltime_dir = ws.calltime_dir();
    let dir = shadow::runtime_for(ws, home.unwrap_or(&calltime_dir), shadow_dir)?;
    let cache = home.filter(|home| dir == home.join("calltime-rt")).map(|home| home.join("target"));
    Ok(CompiledRuntime { dir, cache })
}

/// The workspace has a package named calltime-rt (its own member, or crates.io's): the copy must link it by
/// manifest, so the runtime is compiled.
fn ws_has_runtime_package(ws: &Workspace) -> bool {
    ws.metadata.packages.iter().any(|p| p.name.as_str() == "calltime-rt")
}

/// One build of the copy; a compiled runtime's artifacts are copied in from the cache before (another workspace's
/// build: cargo finds it fresh) and back after. Best effort both ways: a copy that fails costs only a compile.
fn build_copy(
    user_root: &Path,
    shadow_dir: &Path,
    build_dir: &Path,
    opts: &BuildPlan,
    target: &Target,
    rustc: cargo::ShadowRustc,
    runtime: Option<&CompiledRuntime>,
) -> Result<cargo::BuildOutput> {
    let cache = runtime.and_then(|r| r.cache.as_deref());
    // After the dependencies' seeding, which needs an empty profile dir.
    if let Some(cache) = cache {
        match cargo::share_runtime_build(cache, build_dir, &opts.build) {
            Ok(n) if n > 0 => ui::status("Reusing", &format!("the runtime built in {}", cache.display())),
            Ok(_) => {}
            Err(e) => tracing::info!("not reusing the cached runtime: {e:#}"),
        }
    }
    let out = cargo::cargo_build(shadow_dir, user_root, rustc, build_dir, &opts.cargo, &opts.build, Some(target))?;
    if let (Some(cache), true) = (cache, out.success) {
        if let Err(e) = cargo::share_runtime_build(build_dir, cache, &opts.build) {
            tracing::info!("not caching the runtime's build: {e:#}");
        }
    }
    Ok(out)
}

/// The notes and warnings of the copy: what it holds, wrapped allocators, shifted columns, left-out files.
fn report_copy(ws: &Workspace, plan: &Plan, opts: &BuildPlan, shadow_dir: &Path, stats: &shadow::CopyStats) {
    ui::status(
        "Copying",
        &format!(
            "{} files to {} ({} changed, {} removed; {} functions probed in {} files)",
            stats.files,
            shadow_dir.display(),
            stats.written,
            stats.removed,
            plan.instrumented().count(),
            stats.rewritten
        ),
    );
    let builders = plan.functions.iter().filter(|f| f.skip_reason == Some(SkipReason::BuildsForLater)).count();
    if builders > 0 {
        let (s, its, gets, them) =
            if builders == 1 { ("s", "its", "gets", "it") } else { ("", "their", "get", "them") };
        ui::note(&format!(
            "{} only build{s} a closure, an `impl Trait` value or a struct of {its} arguments (parser combinators \
             and the like) and {gets} no probe: a probe would time the building, not the work done when the value is used, which \
             shows in the callers' times (`cargo calltime graph` lists {them}; --probe-trivial probes {them})",
            plural(builders as u64, "function"),
        ));
    }
    for found in &plan.global_allocators {
        let at = found.file.strip_prefix(&ws.root).unwrap_or(&found.file);
        ui::note(&format!(
            "allocations are counted by wrapping the program's #[global_allocator] at {}:{} in the copy",
            at.display(),
            found.site.line
        ));
    }
    // A one-line body and a spawn argument wrapped where it stands both move the tokens after them on their line;
    // the note names the cause, since only the first is the user's layout.
    let shifted = plan.instrumented().filter(|(_, site)| stats.column_shifts.binary_search(&site.index).is_ok());
    let (by_spawns, by_braces): (Vec<_>, Vec<_>) = shifted.partition(|(_, site)| !site.spawns.is_empty());
    let names = |found: &[(&PlannedFunction, &ProbeSite)]| -> Vec<String> {
        found.iter().map(|(function, _)| function.path.clone()).collect()
    };
    if !by_braces.is_empty() {
        let names = names(&by_braces);
        ui::note(&format!(
            "{} {} code on the line of {} opening brace: the probe goes before it, so column!(), panic locations \
             and diagnostics on that line report columns shifted right: {}",
            plural(names.len() as u64, "probed function"),
            if names.len() == 1 { "has" } else { "have" },
            if names.len() == 1 { "its" } else { "their" },
            names.join(", ")
        ));
    }
    if !by_spawns.is_empty() {
        let names = names(&by_spawns);
        ui::note(&format!(
            "{} {} a spawned closure where it stands, so column!(), panic locations and diagnostics after it on \
             its line report columns shifted right: {}",
            plural(names.len() as u64, "probed function"),
            if names.len() == 1 { "wraps" } else { "wrap" },
            names.join(", ")
        ));
    }
    for warning in &stats.warnings {
        ui::warn(warning);
    }
    for (file, line, included) in &stats.includes_of_probed {
        ui::warn(&format!(
            "{}:{line} includes {} with include_str!/include_bytes!, which gets probes: the build reads the \
             probed copy, not your bytes (a known limit)",
            file.display(),
            included.display()
        ));
    }
    if !stats.left_out.is_empty() {
        let shown: Vec<String> = stats.left_out.iter().take(20).map(|p| p.display().to_string()).collect();
        let more = stats.left_out.len().saturating_sub(shown.len());
        let listed = if opts.build.echo {
            format!(": {}{}", shown.join(", "), if more > 0 { format!(" and {more} more") } else { String::new() })
        } else {
            " (-v lists them)".to_owned()
        };
        ui::status(
            "Leaving",
            &format!("out {} ignored by .gitignore{listed}", plural(stats.left_out.len() as u64, "file")),
        );
    }
}

/// A failed instrumented build: builds the unmodified copy to tell the user whether the probes or their code broke
/// it, and which function's probe.
fn explain_build_failure(
    ws: &Workspace,
    plan: &Plan,
    opts: &BuildPlan,
    target: &Target,
    failed: cargo::BuildOutput,
) -> anyhow::Error {
    let calltime_dir = ws.calltime_dir();
    let plain_dir = calltime_dir.join("shadow-plain");
    if let Some(refusal) = cargo_refusal(&failed) {
        return refusal.into();
    }
    if !opts.build.echo {
        eprint!("{}", failed.stderr);
    }
    ui::status("Checking", "whether the workspace builds without probes");
    let plain = shadow::prepare(ws, &plain_dir, None, None, None).and_then(|_| {
        let plain_build = calltime_dir.join("build-plain");
        let rustc = cargo::ShadowRustc::default();
        cargo::cargo_build(&plain_dir, &ws.root, rustc, &plain_build, &opts.cargo, &opts.build, Some(target))
    });
    let at = |e: &cargo::FirstError| format!("{}:{}: {}", e.file.display(), e.line, e.message);
    let error = match plain {
        Ok(plain) if !plain.success && reads_outside_workspace(&ws.root, failed.first_error.as_ref()) => {
            let err = failed.first_error.as_ref().expect("checked by reads_outside_workspace");
            UserError::new(format!("the copy of the workspace cannot be built: {}", at(err))).hint(
                "the code reads a file outside the workspace by a relative path (include_str!, include_bytes!, \
                 #[path]); cargo calltime builds a copy of the workspace only, so such paths do not resolve there \
                 (a known limit)",
            )
        }
        Ok(plain) if !plain.success => UserError::new(format!(
            "the workspace does not build, with or without probes{}",
            failed.first_error.as_ref().map(|e| format!(" ({})", at(e))).unwrap_or_default()
        ))
        .hint("fix the errors above (a plain `cargo build` shows them too), then run cargo calltime again"),
        Ok(_) => {
            let culprit = failed
                .first_error
                .as_ref()
                .and_then(|e| cargo::function_at(plan, &ws.root, &e.file, e.line).map(|f| (e, f)));
            match culprit {
                Some((err, function)) => UserError::new(format!(
                    "the probe inserted into `{function}` broke the build ({}); the workspace builds without probes",
                    at(err)
                ))
                .hint(format!(
                    "leave `{function}` out with a --filter that does not match it, and please report this \
                     cargo-calltime bug"
                )),
                None => UserError::new("the instrumented build failed but the workspace builds without probes").hint(
                    "this is a cargo-calltime bug; run with -v and report it, or narrow --filter/--depth to avoid \
                     the failing function",
                ),
            }
        }
        Err(err) => UserError::new(format!(
            "the instrumented build failed (and building the unmodified copy to find out why failed too: {err:#})"
        ))
        .hint("run with -v to see cargo's output"),
    };
    error.into()
}

/// cargo stopped before compiling anything (an unknown profile, a bad flag): its own `error:` line, and a hint that
/// points at the flag rather than at the workspace. None when a compiler error is in the output.
fn cargo_refusal(failed: &cargo::BuildOutput) -> Option<UserError> {
    if failed.first_error.is_some() || failed.stderr.contains("Compiling ") {
        return None;
    }
    let line = failed.stderr.lines().find_map(|l| l.trim().strip_prefix("error: "))?;
    let hint = if line.contains("profile") {
        "check --profile: cargo knows dev, release, test and bench, and the profiles declared as [profile.NAME] \
         in the workspace's Cargo.toml"
    } else {
        "the flags passed to cargo are in `cargo calltime -vv`'s output; a plain `cargo build` with the same flags \
         fails the same way"
    };
    Some(UserError::new(format!("cargo refused to build: {line}")).hint(hint))
}

/// Whether a build error is a file read (`couldn't read `path``, a missing module file) through a relative path that
/// leaves the workspace: it builds in place but not in the copy.
fn reads_outside_workspace(root: &Path, error: Option<&cargo::FirstError>) -> bool {
    let Some(error) = error else { return false };
    if !(error.message.starts_with("couldn't read") || error.message.starts_with("file not found for module")) {
        return false;
    }
    let Some(quoted) = error.message.split('`').nth(1) else { return false };
    let path = Path::new(quoted);
    let base = if path.is_absolute() { PathBuf::new() } else { root.to_owned() };
    !shadow::normalize(&base.join(path)).starts_with(shadow::normalize(root))
}

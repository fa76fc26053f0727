//! Stage 1: workspace discovery with `cargo metadata`.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use anyhow::{Context, Result};
use cargo_metadata::{CargoOpt, DependencyKind, Metadata, MetadataCommand, Package};

use crate::error::UserError;

/// Cargo's workspace, package and feature selection, as typed options (commands build them from the flags).
#[derive(Debug, Clone, Default)]
pub struct CargoOptions {
    /// `--manifest-path`; else the Cargo.toml found from the current directory upwards.
    pub manifest_path: Option<PathBuf>,
    /// `-p` specs (empty: the whole workspace).
    pub packages: Vec<String>,
    /// Feature names, already split at commas and spaces.
    pub features: Vec<String>,
    pub all_features: bool,
    pub no_default_features: bool,
    pub target_dir: Option<PathBuf>,
    /// `--offline` or `--frozen`.
    pub offline: bool,
    /// `--locked` or `--frozen`.
    pub locked: bool,
}

/// The user's workspace as cargo sees it.
#[derive(Debug)]
pub struct Workspace {
    pub metadata: Metadata,
    /// The workspace root (the directory holding the root Cargo.toml).
    pub root: PathBuf,
    /// The user's target dir (honours `--target-dir`, CARGO_TARGET_DIR and `.cargo/config.toml`).
    pub target_dir: PathBuf,
    /// Indices into `metadata.packages` of the packages selected by `-p` (default: every workspace member).
    pub selected: Vec<usize>,
    /// The features enabled in each workspace member (by index into `metadata.packages`) under the feature flags
    /// given: cargo's resolve when there is one, else worked out from the manifests the same way.
    pub features: HashMap<usize, BTreeSet<String>>,
}

impl Workspace {
    /// Runs `cargo metadata` for the manifest named by `--manifest-path`, or the one found from the current
    /// directory upwards.
    pub fn load(args: &CargoOptions) -> Result<Workspace> {
        Self::load_with(args, false)
    }

    /// Like [`Workspace::load`] but with `cargo metadata --no-deps`: only the workspace's own packages, no
    /// dependency resolution (no registry access, several times faster). Enough for the static analysis, which
    /// reads workspace dependencies and their renames from the manifests; `metadata.resolve` is None.
    pub fn load_members_only(args: &CargoOptions) -> Result<Workspace> {
        Self::load_with(args, true)
    }

    fn load_with(args: &CargoOptions, no_deps: bool) -> Result<Workspace> {
        let mut cmd = MetadataCommand::new();
        if no_deps {
            cmd.no_deps();
        }
        if let Some(path) = &args.manifest_path {
            cmd.manifest_path(path);
        }
        if args.all_features {
            cmd.features(CargoOpt::AllFeatures);
        }
        if args.no_default_features {
            cmd.features(CargoOpt::NoDefaultFeatures);
        }
        if !args.features.is_empty() {
            cmd.features(CargoOpt::SomeFeatures(args.features.clone()));
        }
        let mut other = Vec::new();
        if args.offline {
            other.push("--offline".to_owned());
        }
        if args.locked {
            other.push("--locked".to_owned());
        }
        cmd.other_options(other);
        // `cargo metadata` writes a Cargo.lock when there is none; the user's workspace must stay untouched, so a
        // lock that appears where there was none is removed again.
        let start = match &args.manifest_path {
            Some(p) => std::path::absolute(p).ok().and_then(|p| p.parent().map(PathBuf::from)),
            None => std::env::current_dir().ok(),
        };
        let lockless: Vec<PathBuf> = start
            .map(|s| s.ancestors().filter(|d| !d.join("Cargo.lock").exists()).map(PathBuf::from).collect())
            .unwrap_or_default();
        let metadata = cmd.exec().map_err(|e| metadata_error(e, args))?;
        let root = metadata.workspace_root.clone().into_std_path_buf();
        if lockless.contains(&root) {
            let _ = std::fs::remove_file(root.join("Cargo.lock"));
        }
        let target_dir = match &args.target_dir {
            Some(dir) => {
                std::path::absolute(dir).with_context(|| format!("cannot resolve --target-dir {}", dir.display()))?
            }
            None => metadata.target_directory.clone().into_std_path_buf(),
        };
        let members: Vec<usize> = metadata
            .packages
            .iter()
            .enumerate()
            .filter(|(_, p)| metadata.workspace_members.contains(&p.id))
            .map(|(i, _)| i)
            .collect();
        let selected = if args.packages.is_empty() {
            match member_of_manifest(&metadata, &members, args, &root) {
                Some(i) => vec![i],
                None => members.clone(),
            }
        } else {
            let mut selected = Vec::new();
            for spec in &args.packages {
                let found = members.iter().copied().find(|&i| metadata.packages[i].name.as_str() == spec.as_str());
                match found {
                    Some(i) => selected.push(i),
                    None => {
                        let names: Vec<&str> = members.iter().map(|&i| metadata.packages[i].name.as_str()).collect();
                        return Err(UserError::new(format!(
                            "package `{spec}` is not a member of the workspace at {}",
                            root.display()
                        ))
                        .hint(format!("members are: {}", names.join(", ")))
                        .into());
                    }
                }
            }
            selected
        };
        let features = match &metadata.resolve {
            Some(resolve) => members
                .iter()
                .filter_map(|&i| {
                    let node = resolve.nodes.iter().find(|n| n.id == metadata.packages[i].id)?;
                    Some((i, node.features.iter().map(|f| f.to_string()).collect()))
                })
                .collect(),
            None => member_features(&metadata, &members, &selected, args, &root),
        };
        Ok(Workspace { metadata, root, target_dir, selected, features })
    }

    /// The selected packages.
    pub fn selected_packages(&self) -> impl Iterator<Item = &Package> {
        self.selected.iter().map(|&i| &self.metadata.packages[i])
    }

    /// Where everything cargo-calltime writes lives: `<target>/calltime`.
    pub fn calltime_dir(&self) -> PathBuf {
        self.target_dir.join("calltime")
    }
}

/// The features of each member without cargo's resolve (`cargo metadata --no-deps`), as cargo metadata would
/// resolve them: every member with its defaults (or all features), the `--features` of the selected packages (the
/// root package when the root manifest is one), `pkg/feat` for member `pkg`, then what enabled features and the
/// members' dependency declarations turn on, transitively.
fn member_features(
    meta: &Metadata,
    members: &[usize],
    selected: &[usize],
    args: &CargoOptions,
    root: &std::path::Path,
) -> HashMap<usize, BTreeSet<String>> {
    let name_of = |i: usize| meta.packages[i].name.replace('-', "_");
    let member_named = |name: &str| members.iter().copied().find(|&i| name_of(i) == name.replace('-', "_"));
    let root_package = members.iter().copied().find(|&i| meta.packages[i].manifest_path == root.join("Cargo.toml"));
    let plain_targets: Vec<usize> = match root_package {
        Some(i) if args.packages.is_empty() => vec![i],
        _ => selected.to_vec(),
    };
    let mut work: Vec<(usize, String)> = Vec::new();
    for &i in members {
        let declared = &meta.packages[i].features;
        if args.all_features {
            work.extend(declared.keys().map(|f| (i, f.clone())));
        } else if !args.no_default_features {
            work.push((i, "default".to_owned()));
        }
        // Dependency declarations on other members: their default features and the features they list.
        for dep in &meta.packages[i].dependencies {
            if dep.optional || !matches!(dep.kind, DependencyKind::Normal | DependencyKind::Build) {
                continue;
            }
            let Some(j) = member_named(&dep.name) else { continue };
            if dep.uses_default_features {
                work.push((j, "default".to_owned()));
            }
            work.extend(dep.features.iter().map(|f| (j, f.clone())));
        }
    }
    for feature in &args.features {
        match feature.split_once('/') {
            Some((package, f)) => work.extend(member_named(package).map(|j| (j, f.to_owned()))),
            None => work.extend(plain_targets.iter().map(|&i| (i, feature.clone()))),
        }
    }
    let mut enabled: HashMap<usize, BTreeSet<String>> = members.iter().map(|&i| (i, BTreeSet::new())).collect();
    while let Some((i, feature)) = work.pop() {
        let Some(values) = meta.packages[i].features.get(&feature) else { continue };
        if !enabled.entry(i).or_default().insert(feature.clone()) {
            continue;
        }
        for value in values {
            if value.starts_with("dep:") {
                continue;
            }
            match value.split_once('/') {
                Some((dep, f)) => {
                    let dep = dep.trim_end_matches('?');
                    let renamed = meta.packages[i].dependencies.iter().find(|d| d.rename.as_deref() == Some(dep));
                    let target = renamed.map_or(dep, |d| d.name.as_str());
                    work.extend(member_named(target).map(|j| (j, f.to_owned())));
                }
                None => work.push((i, value.clone())),
            }
        }
    }
    enabled
}

/// Like cargo without `-p`: a member's own manifest (`--manifest-path crates/app/Cargo.toml`, or the nearest
/// Cargo.toml above the current directory) selects that package. The root manifest keeps every member selected,
/// so that a root anywhere in the workspace can be timed (cargo would take only the root package, or
/// `default-members`).
fn member_of_manifest(
    metadata: &Metadata,
    members: &[usize],
    args: &CargoOptions,
    root: &std::path::Path,
) -> Option<usize> {
    let manifest = match &args.manifest_path {
        Some(p) => p.canonicalize().ok()?,
        None => {
            let cwd = std::env::current_dir().ok()?;
            cwd.ancestors().map(|d| d.join("Cargo.toml")).find(|m| m.is_file())?.canonicalize().ok()?
        }
    };
    if root.join("Cargo.toml").canonicalize().ok().as_ref() == Some(&manifest) {
        return None;
    }
    members
        .iter()
        .copied()
        .find(|&i| metadata.packages[i].manifest_path.as_std_path().canonicalize().ok().as_ref() == Some(&manifest))
}

fn metadata_error(err: cargo_metadata::Error, args: &CargoOptions) -> anyhow::Error {
    let text = err.to_string();
    if text.contains("could not find `Cargo.toml`") || text.contains("could not find Cargo.toml") {
        let place = match &args.manifest_path {
            Some(p) => p.display().to_string(),
            None => std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".to_owned()),
        };
        return UserError::new(format!("no cargo workspace found at {place}"))
            .hint("run inside a cargo project or pass --manifest-path path/to/Cargo.toml")
            .into();
    }
    anyhow::anyhow!("`cargo metadata` failed: {}", text.trim())
}

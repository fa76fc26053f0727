//! `cargo calltime history`, and what the other commands do with the run store: record each run (`--label`,
//! `--keep`), import a trace (`report --import`), give the HTML report its charts across runs, and resolve
//! `@label:L` / `@run:N` for `diff`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::options;
use crate::cli::{GlobalArgs, HistoryArgs, StoreArgs};
use crate::error::UserError;
use crate::store::dates::{parse_date, DayEnd};
use crate::store::{self, RunFilter, Selector, SeriesPoint, Source, Store, StoreOptions};
use crate::trace::Trace;
use crate::ui;
use crate::views::{self, chart};
use crate::workspace::Workspace;

/// Trace files the store keeps when `--keep` is not given.
pub const DEFAULT_KEEP: usize = 20;

/// `--label` and `--keep`, validated.
pub fn store_options(args: &StoreArgs, source: Source, workspace_root: Option<&Path>) -> Result<StoreOptions> {
    if let Some(label) = &args.label {
        if label.trim().is_empty() || label.contains(char::is_whitespace) {
            return Err(UserError::new(format!("--label `{label}` is empty or has spaces"))
                .hint("pass one word, e.g. `--label main` or `--label pr-42`")
                .into());
        }
    }
    Ok(StoreOptions {
        label: args.label.clone(),
        source,
        keep: args.keep.unwrap_or(DEFAULT_KEEP),
        workspace_root: workspace_root.map(Path::to_owned),
    })
}

/// Records `trace` in the store of `calltime_dir`. A run is not failed by the store: a problem is a warning.
pub fn record(calltime_dir: &Path, trace: &Trace, trace_file: &Path, opts: &StoreOptions) -> Option<i64> {
    match views::with_big_stack(|| store::record_run(calltime_dir, trace, trace_file, opts)) {
        Ok(recorded) => {
            let label = opts.label.as_deref().map(|l| format!(" ({l})")).unwrap_or_default();
            ui::status(
                "Stored",
                &format!("run #{}{label} in {}", recorded.id, store::store_path(calltime_dir).display()),
            );
            Some(recorded.id)
        }
        Err(e) => {
            ui::warn(&format!("the run was not stored in the history: {e:#}"));
            None
        }
    }
}

/// The HTML report's charts: for each root of `trace`, its points across every stored run; empty without a store.
pub fn series_for(calltime_dir: &Path, trace: &Trace) -> Result<Vec<(String, Vec<SeriesPoint>)>> {
    let path = store::store_path(calltime_dir);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let runs = Store::open(&path)?.runs(&RunFilter::default())?;
    let mut roots: Vec<String> = Vec::new();
    for inv in &trace.invocations {
        let root = trace.table.path(inv.root.func);
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    Ok(roots.into_iter().map(|root| (root.clone(), store::series(&runs, &root))).filter(|(_, p)| p.len() > 1).collect())
}

/// A diff side: `@label:L` / `@run:N` become the stored runs' trace files (from the workspace's store).
pub fn diff_side(global: &GlobalArgs, input: &Path, label: &str, raw_times: bool) -> Result<crate::diff::Side> {
    let Some(selector) = Selector::parse(&input.to_string_lossy())? else {
        return crate::diff::Side::load_with(input, label, raw_times);
    };
    let ws = Workspace::load_members_only(&options::cargo_options(global, &Default::default()))?;
    let store = open_existing(&ws.calltime_dir())?;
    let files: Vec<PathBuf> = selector.trace_files(&store)?;
    crate::diff::Side::load_files(input, &files, label, raw_times)
}

fn open_existing(calltime_dir: &Path) -> Result<Store> {
    let path = store::store_path(calltime_dir);
    if !path.exists() {
        return Err(UserError::new(format!("no run has been stored yet ({} does not exist)", path.display()))
            .hint(
                "every `cargo calltime --root PATH` run is stored; `cargo calltime report --import FILE` adds a trace",
            )
            .into());
    }
    Store::open(&path)
}

pub fn history(global: &GlobalArgs, args: &HistoryArgs) -> Result<i32> {
    super::check_output_dir("--chart", args.chart.as_deref())?;
    let filter = RunFilter {
        label: args.label.clone(),
        since_ms: args.since.as_deref().map(|d| parse_date(d, DayEnd::Start)).transpose()?,
        until_ms: args.until.as_deref().map(|d| parse_date(d, DayEnd::End)).transpose()?,
        root: args.root.clone(),
    };
    if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms) {
        if since > until {
            return Err(UserError::new("--since is later than --until").hint("swap them, or leave one out").into());
        }
    }
    let ws = Workspace::load_members_only(&options::cargo_options(global, &args.cargo))?;
    let mut store = open_existing(&ws.calltime_dir())?;
    for &id in &args.delete {
        if !store.delete(id)? {
            return Err(UserError::new(format!("no stored run has id {id}"))
                .hint("`cargo calltime history` lists the runs with their ids")
                .into());
        }
        ui::status("Removed", &format!("run #{id}"));
    }
    let runs = store.runs(&filter)?;
    super::write_stdout(views::history::render(&runs).as_bytes())?;
    if let Some(path) = &args.chart {
        let roots = store::roots_of(&runs);
        let wanted = |r: &&String| args.root.as_ref().is_some_and(|w| *r == w || r.ends_with(&format!("::{w}")));
        let root = match roots.as_slice() {
            [] => return Err(UserError::new("no stored run matches: there is nothing to chart").into()),
            [only] => only.clone(),
            // Some runs recorded several roots: `--root` picks one.
            _ => match roots.iter().find(wanted) {
                Some(root) => root.clone(),
                None => {
                    return Err(UserError::new(format!(
                        "the runs listed recorded {} roots: a chart shows one",
                        roots.len()
                    ))
                    .hint(format!("pick one with --root (one of: {})", roots.join(", ")))
                    .into())
                }
            },
        };
        let svg = chart::render_svg(&root, &store::series(&runs, &root))?;
        super::write_file(path, svg.as_bytes())?;
        ui::status_always("Wrote", &path.display().to_string());
    }
    Ok(0)
}

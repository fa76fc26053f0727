//! `cargo calltime graph`: the plan as text, JSON (docs/graph-json.md) or Graphviz dot, without building.

use std::path::PathBuf;

use anyhow::Result;

use super::options;
use crate::analysis::{render, IMPLICIT_CALLS};
use crate::cli::{GlobalArgs, GraphArgs};
use crate::workspace::Workspace;

pub fn graph(global: &GlobalArgs, args: &GraphArgs) -> Result<i32> {
    super::check_output_dir("-o", args.output.as_deref())?;
    let mut options = options::plan_options(&args.plan)?;
    let cargo = options::cargo_options(global, &args.cargo);
    let started = std::time::Instant::now();
    // The graph needs no dependency resolution: `--no-deps` keeps `cargo metadata` off the registry and fast.
    let ws = Workspace::load_members_only(&cargo)?;
    tracing::info!("cargo metadata in {:?}", started.elapsed());
    let plan = super::plan(&ws, &mut options, args.plan.exclude_fast)?;
    let mut out = render::render(&plan, &ws.root, args.format)?;
    if global.verbose == 0 {
        out = without_implicit_calls(out);
    }
    let file = super::destination(args.output.as_deref(), false, PathBuf::new);
    super::emit(out.as_bytes(), false, file.as_deref(), false)?;
    tracing::info!("graph command done in {:?}", started.elapsed());
    Ok(0)
}

/// The text plan without its closing paragraph on the implicit calls the graph models: the same for every run, so
/// shown only with `-v` (it is also in docs/graph-json.md).
fn without_implicit_calls(text: String) -> String {
    match text.strip_suffix(&format!("{IMPLICIT_CALLS}\n")) {
        Some(rest) => format!("{rest}(-v lists the implicit calls the graph follows)\n"),
        None => text,
    }
}

//! `cargo calltime graph`: the plan as text, JSON (docs/graph-json.md) or Graphviz dot, without building.

use anyhow::Result;

use super::options;
use crate::analysis::render;
use crate::cli::{GlobalArgs, GraphArgs};
use crate::ui;
use crate::workspace::Workspace;

pub fn graph(global: &GlobalArgs, args: &GraphArgs) -> Result<i32> {
    let mut options = options::plan_options(&args.plan)?;
    let cargo = options::cargo_options(global, &args.cargo);
    let started = std::time::Instant::now();
    // The graph needs no dependency resolution: `--no-deps` keeps `cargo metadata` off the registry and fast.
    let ws = Workspace::load_members_only(&cargo)?;
    tracing::info!("cargo metadata in {:?}", started.elapsed());
    let plan = super::plan(&ws, &mut options, args.plan.exclude_fast)?;
    let out = render::render(&plan, &ws.root, args.format)?;
    match &args.output {
        Some(path) => {
            super::write_file(path, out.as_bytes())?;
            ui::status("Wrote", &path.display().to_string());
        }
        None => super::write_stdout(out.as_bytes())?,
    }
    tracing::info!("graph command done in {:?}", started.elapsed());
    Ok(0)
}

//! `cargo calltime build`: the instrumented target, built; its path is the last line of stdout.

use anyhow::Result;

use super::instrument::analyse_and_build;
use crate::cli::{BuildArgs, GlobalArgs};
use crate::ui;

pub fn build(global: &GlobalArgs, args: &BuildArgs) -> Result<i32> {
    let built = analyse_and_build(global, &args.cargo, &args.target, &args.plan)?;
    ui::status(
        "Built",
        &format!(
            "{} ({} functions instrumented); running it records a trace to $CALLTIME_OUT, or calltime-<pid>.trace in \
             its working directory; `cargo calltime report TRACE --functions {}` renders it",
            built.target.name, built.info.functions, built.info.table
        ),
    );
    println!("{}", built.executable.display());
    Ok(0)
}

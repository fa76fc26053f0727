//! Stages 6-7: build the shadow copy and run it.

use anyhow::Result;

use crate::cli::{BuildArgs, RunArgs};

/// `cargo calltime` (the default command).
pub fn run_command(args: &RunArgs) -> Result<i32> {
    let _ = args;
    anyhow::bail!("`cargo calltime` is not implemented yet")
}

/// `cargo calltime build`.
pub fn build_command(args: &BuildArgs) -> Result<i32> {
    let _ = args;
    anyhow::bail!("`cargo calltime build` is not implemented yet")
}

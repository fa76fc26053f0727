//! Stage 10: call-path diffs of two sets of runs.

use anyhow::Result;

use crate::cli::DiffArgs;

/// `cargo calltime diff`.
pub fn diff_command(args: &DiffArgs) -> Result<i32> {
    let _ = args;
    anyhow::bail!("`cargo calltime diff` is not implemented yet")
}

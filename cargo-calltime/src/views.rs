//! Stage 9: views of recorded trees.

use anyhow::Result;

use crate::cli::ReportArgs;

/// `cargo calltime report`.
pub fn report_command(args: &ReportArgs) -> Result<i32> {
    let _ = args;
    anyhow::bail!("`cargo calltime report` is not implemented yet")
}

//! `--format svg`: a differential flamegraph (inferno) of base vs head. Frame widths are head's self time per
//! invocation (averaged over invocations); colour is the change from base: red grew, blue shrank.

use anyhow::{Context, Result};

use super::{Report, Side};

pub fn render(base: &Side, head: &Side, report: &Report) -> Result<Vec<u8>> {
    let before = base.folded();
    let after = head.folded();
    let mut differential = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut differential,
    )
    .context("cannot combine the folded stacks of base and head")?;
    if differential.is_empty() {
        return Err(crate::error::UserError::new("nothing to draw: every call path took 0ns on both sides")
            .hint("check the traces with `cargo calltime report TRACE`")
            .into());
    }
    // Stable input order, so the same traces give the same SVG.
    let text = String::from_utf8_lossy(&differential);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("cargo calltime diff: {} vs {}", report.base.label, report.head.label);
    options.subtitle = Some(format!(
        "width: {} self time per invocation; red: slower than {}, blue: faster",
        report.head.label, report.base.label
    ));
    options.count_name = "ns".to_owned();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().copied(), &mut svg)
        .context("cannot draw the differential flamegraph")?;
    Ok(svg)
}

//! `cargo calltime diff BASE HEAD`: returns 0, or [`EXIT_REGRESSION`] when `--fail-above` trips.

use anyhow::Result;

use crate::cli::{DiffArgs, GlobalArgs};
use crate::diff::{self, stats::Bootstrap, DiffFormat, Settings, ALPHA, EXIT_REGRESSION};
use crate::error::UserError;
use crate::ui;

pub fn diff(global: &GlobalArgs, args: &DiffArgs) -> Result<i32> {
    let settings = Settings {
        threshold_pct: percentage("--threshold", args.threshold, 10)?,
        alpha: ALPHA,
        fail_above_pct: args.fail_above.map(|pct| percentage("--fail-above", pct, 20)).transpose()?,
        bootstrap: Bootstrap::default(),
    };
    super::check_open(args.open, args.format == DiffFormat::Svg, args.output.as_deref())?;
    super::check_output_dir("-o", args.output.as_deref())?;
    let base = super::history::diff_side(global, &args.base, &args.base_label, args.raw_times)?;
    let head = super::history::diff_side(global, &args.head, &args.head_label, args.raw_times)?;
    for warning in base.warnings.iter().chain(&head.warnings) {
        ui::warn(warning);
    }
    if !base.plans.iter().all(|p| head.plans.contains(p)) || !head.plans.iter().all(|p| base.plans.contains(p)) {
        ui::warn(&format!(
            "base and head were recorded with different plans (base: {}; head: {}): call paths that only one plan \
             probes show as new or gone; record both with the same --root, --depth and --filter to compare them",
            base.plans.join(", "),
            head.plans.join(", ")
        ));
    }
    let report = diff::compare(&base, &head, &settings);
    let file = super::destination(args.output.as_deref(), args.open, || super::temp_output("diff", "svg"));
    let color = file.is_none() && ui::color_stdout();
    let rendered = diff::render(&report, args.format, color)?;
    super::emit(&rendered, args.format == DiffFormat::Svg, file.as_deref(), args.open)?;
    match diff::fail_above_warning(&report, &settings) {
        Some(warning) => {
            ui::warn(&warning);
            Ok(EXIT_REGRESSION)
        }
        None => Ok(0),
    }
}

/// A percentage flag: finite and not negative.
fn percentage(flag: &str, pct: f64, example: u32) -> Result<f64> {
    if pct.is_finite() && pct >= 0.0 {
        return Ok(pct);
    }
    Err(UserError::new(format!("{flag} {pct} is not a percentage"))
        .hint(format!("pass a number such as {example} (meaning {example}%)"))
        .into())
}

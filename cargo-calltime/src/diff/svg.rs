//! `--format svg`: a differential flamegraph (inferno) of base vs head. Every call path of either side is drawn,
//! as wide as the larger of its base and head self time per invocation (so paths gone in head show too); colour and
//! tooltip give the change the table gives (relative change of the median self time), not a share of the total.

use std::collections::HashMap;

use anyhow::{Context, Result};

use super::{callers_text, change_text, time_text, PathDiff, Report, Status};
use crate::views::stack_safe;
use crate::views::svg_frames::{self, Edit};

pub fn render(report: &Report) -> Result<Vec<u8>> {
    let frames_of = |p: &PathDiff| -> Vec<String> { p.frames.iter().map(|f| stack_safe(f)).collect() };
    let mut lines: Vec<String> = report
        .paths
        .iter()
        .filter_map(|p| {
            let mean = |t: &Option<super::TimeStats>| t.map_or(0.0, |t| t.mean_self_ns_per_invocation);
            let width = mean(&p.base).max(mean(&p.head)).round() as u64;
            (width > 0).then(|| format!("{} {width}", frames_of(p).join(";")))
        })
        .collect();
    if lines.is_empty() {
        return Err(crate::error::UserError::new("nothing to draw: every call path took 0ns on both sides")
            .hint("check the traces with `cargo calltime report TRACE`")
            .into());
    }
    // Stable input order, so the same traces give the same SVG.
    lines.sort_unstable();
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("cargo calltime diff: {} vs {}", report.base.label, report.head.label);
    options.subtitle = Some(format!(
        "width: the larger of {base} and {head} self time per invocation; colour: change of the median self time \
         (red slower, blue faster, pale: callers of a change, grey: unchanged)",
        base = report.base.label,
        head = report.head.label
    ));
    options.count_name = "ns".to_owned();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .context("cannot draw the differential flamegraph")?;
    let svg = String::from_utf8(svg).context("inferno wrote an SVG that is not UTF-8")?;
    let by_frames: HashMap<Vec<String>, &PathDiff> = report.paths.iter().map(|p| (frames_of(p), p)).collect();
    let svg = svg_frames::rewrite(&svg, |frame| match by_frames.get(&frame.path) {
        Some(p) => Edit { info: Some(info(p, report)), fill: Some(fill(p).to_owned()), ..Edit::default() },
        None => Edit::default(),
    })?;
    Ok(svg.into_bytes())
}

/// The tooltip's part in parentheses: `+55.4%: self 51.7µs → 80.3µs per invocation, regressed; calls 1` (no parentheses inside: inferno's
/// script strips the last parenthesised part of a tooltip to get the label).
fn info(p: &PathDiff, report: &Report) -> String {
    let status = match (p.status, &p.cause) {
        (Status::Regressed, _) => "regressed".to_owned(),
        (Status::Improved, _) => "improved".to_owned(),
        (Status::Added, _) => format!("new in {}", report.head.label),
        (Status::Removed, _) => format!("gone in {}", report.head.label),
        (Status::Unchanged, Some(cause)) => {
            let total = p.change.and_then(|c| c.total_pct).map(super::format_pct).unwrap_or_default();
            format!("unchanged; total {total} through {cause}")
        }
        (Status::Unchanged, None) if p.calls.changed => "calls changed".to_owned(),
        (Status::Unchanged, None) => "unchanged".to_owned(),
    };
    let mut text = format!(
        "{}: self {} → {} per invocation, {status}; calls {}",
        change_text(p),
        time_text(&p.base),
        time_text(&p.head),
        super::calls_text(p)
    );
    if let Some(callers) = callers_text(p, str::to_owned) {
        text.push_str("; ");
        text.push_str(&callers);
    }
    text.replace(['(', ')'], "")
}

/// Red slower, blue faster (pale for callers), yellow for calls changed only, grey unchanged.
fn fill(p: &PathDiff) -> &'static str {
    match (p.status, p.cause_direction()) {
        (Status::Regressed | Status::Added, _) => "rgb(230,70,50)",
        (Status::Improved | Status::Removed, _) => "rgb(60,110,230)",
        (Status::Unchanged, Some(true)) => "rgb(250,185,175)",
        (Status::Unchanged, Some(false)) => "rgb(180,200,250)",
        (Status::Unchanged, None) if p.calls.changed => "rgb(240,210,80)",
        (Status::Unchanged, None) => "rgb(215,215,215)",
    }
}

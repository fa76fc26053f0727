//! `--format markdown`: a GitHub pull-request comment that stays under GitHub's comment limit.

use std::fmt::Write;

use super::{
    callers_text, calls_text, change_text, count_with_callers, interval_text, signed_ns, time_text, Noise, PathDiff,
    Report, Status, Summary,
};

/// First line of every comment: lets a workflow find and update its previous comment.
pub const MARKER: &str = "<!-- cargo-calltime -->";
/// Longest call path shown in a cell; longer ones keep their ends.
const MAX_PATH_CHARS: usize = 200;
/// Dropped runs listed one by one before they are summed up.
const MAX_DROPPED_LISTED: usize = 20;
/// Room kept for the truncation notes.
const NOTE_RESERVE: usize = 600;

/// Renders the comment in at most `limit - 1` bytes (so also under `limit` characters).
pub fn render(report: &Report, limit: usize) -> String {
    let base = label(&report.base.label);
    let head = label(&report.head.label);
    let mut top = String::new();
    let _ = writeln!(top, "{MARKER}");
    let _ = writeln!(top, "### cargo calltime: `{base}` → `{head}`\n");
    let _ = writeln!(top, "{}\n", headline(&report.summary));

    let mut bottom = String::new();
    let _ = writeln!(
        bottom,
        "<sub>{}. Times are medians of each call path's self time per invocation (time in the function itself); a \
         path changed when a Mann-Whitney U test gives p < {}, the {:.0}% bootstrap interval of the change excludes \
         0 and the medians differ by at least {}; callers whose total time moved only through it are listed under \
         it. Self time / inv is the change of the mean (slow invocations included, so it can move against the \
         medians). Calls are per invocation and compared exactly.</sub>",
        sides_line(report),
        report.settings.alpha,
        report.settings.confidence * 100.0,
        super::format_pct_plain(report.settings.threshold_pct)
    );
    let notes = noise_notes(report);
    if !notes.is_empty() {
        let _ = writeln!(bottom, "\n**Set aside as noise**\n");
        for note in notes {
            let _ = writeln!(bottom, "- {}", escape_text(&note));
        }
    }

    let budget = limit.saturating_sub(1 + top.len() + bottom.len() + NOTE_RESERVE);
    let mut used = 0;
    let mut middle = String::new();

    let reported: Vec<&PathDiff> = report.paths.iter().filter(|p| p.is_reported()).collect();
    let unchanged: Vec<&PathDiff> = report.paths.iter().filter(|p| !p.is_reported()).collect();
    if reported.is_empty() {
        let _ = writeln!(middle, "No call path changed.\n");
    } else {
        let table_head = format!(
            "| | Call path | {base} | {head} | Change | {:.0}% CI | Self time / inv | Calls / inv |\n\
             |:-:|:--|--:|--:|--:|:-:|--:|--:|\n",
            report.settings.confidence * 100.0
        );
        used += table_head.len();
        middle.push_str(&table_head);
        let mut shown = 0;
        for p in &reported {
            let row = changed_row(p);
            if used + row.len() > budget {
                break;
            }
            used += row.len();
            middle.push_str(&row);
            shown += 1;
        }
        if shown < reported.len() {
            let _ = writeln!(
                middle,
                "\n_{} more changed call path(s) not shown: GitHub comments are limited to 65,536 characters \
                 (all paths: `cargo calltime diff --format json`)._",
                reported.len() - shown
            );
        }
        middle.push('\n');
    }
    if !unchanged.is_empty() {
        let open = format!(
            "<details><summary>{} call path(s) with no change in self time or calls</summary>\n\n",
            unchanged.len()
        );
        let table_head =
            format!("| Call path | {base} | {head} | Change | Calls / inv | Note |\n|:--|--:|--:|--:|--:|:--|\n");
        let close = "\n</details>\n\n";
        if used + open.len() + table_head.len() + close.len() <= budget {
            used += open.len() + table_head.len() + close.len();
            middle.push_str(&open);
            middle.push_str(&table_head);
            let mut shown = 0;
            for p in &unchanged {
                let row = format!(
                    "| `{}` | {} | {} | {} | {} | {} |\n",
                    code(&p.display),
                    time_text(&p.base),
                    time_text(&p.head),
                    change_text(p),
                    calls_text(p),
                    note(p)
                );
                if used + row.len() > budget {
                    break;
                }
                used += row.len();
                middle.push_str(&row);
                shown += 1;
            }
            if shown < unchanged.len() {
                let _ = writeln!(
                    middle,
                    "\n_{} more call path(s) with no change not shown (comment size limit)._",
                    unchanged.len() - shown
                );
            }
            middle.push_str(close);
        } else {
            let _ =
                writeln!(middle, "_{} call path(s) with no change not shown (comment size limit)._\n", unchanged.len());
        }
    }
    let mut out = top;
    out.push_str(&middle);
    out.push_str(&bottom);
    out
}

fn changed_row(p: &PathDiff) -> String {
    let icon = match p.status {
        Status::Regressed => "🔴",
        Status::Improved => "🟢",
        Status::Added => "➕",
        Status::Removed => "➖",
        Status::Unchanged => "🟡",
    };
    let change = change_text(p);
    let change =
        if matches!(p.status, Status::Regressed | Status::Improved) { format!("**{change}**") } else { change };
    let calls = if p.calls.changed { format!("**{}**", calls_text(p).replace("->", "→")) } else { calls_text(p) };
    let callers = callers_text(p, |name| format!("`{}`", code(name)))
        .map(|text| format!("<br><sub>{text}</sub>"))
        .unwrap_or_default();
    format!(
        "| {icon} | `{}`{callers} | {} | {} | {change} | {} | {} | {calls} |\n",
        code(&p.display),
        time_text(&p.base),
        time_text(&p.head),
        interval_text(p),
        signed_ns(p.self_delta_ns()),
    )
}

/// `**1 regressed** · 0 improved · 12 unchanged · 1 call-count change`.
fn headline(s: &Summary) -> String {
    let regressed = count_with_callers(s.regressed, "regressed", s.regressed_callers);
    let improved = count_with_callers(s.improved, "improved", s.improved_callers);
    let mut parts = vec![
        if s.regressed > 0 { format!("**{regressed}**") } else { regressed },
        if s.improved > 0 { format!("**{improved}**") } else { improved },
        format!("{} unchanged", s.unchanged),
    ];
    if s.calls_changed + s.added + s.removed > 0 {
        parts.push(format!("**{}**", call_changes_text(s)));
    } else {
        parts.push("no call-count changes".to_owned());
    }
    if let Some(text) = outcome_changes_text(s) {
        parts.push(format!("**{text}**"));
    }
    if !s.over_fail_above.is_empty() {
        parts.push(format!("**{} over the `--fail-above` limit**", s.over_fail_above.len()));
    }
    parts.join(" · ")
}

/// `1 err-count change, 2 cancelled-count changes`: call paths whose `Err` returns or cancelled calls per
/// invocation changed; None when none did.
pub(super) fn outcome_changes_text(s: &Summary) -> Option<String> {
    let parts: Vec<String> = [(s.errs_changed, "err"), (s.cancelled_changed, "cancelled")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}-count change{}", crate::units::plural_s(n as u64)))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `2 call-count changes (1 new path, 1 gone)`.
pub(super) fn call_changes_text(s: &Summary) -> String {
    let total = s.calls_changed + s.added + s.removed;
    let mut text = format!("{total} call-count change{}", crate::units::plural_s(total as u64));
    let mut extra = Vec::new();
    if s.added > 0 {
        extra.push(format!("{} new path{}", s.added, crate::units::plural_s(s.added as u64)));
    }
    if s.removed > 0 {
        extra.push(format!("{} gone", s.removed));
    }
    if !extra.is_empty() {
        let _ = write!(text, " ({})", extra.join(", "));
    }
    text
}

/// `base: 5 runs, 1000 invocations; head: 5 runs (1 dropped), 800 invocations`.
pub(super) fn sides_line(report: &Report) -> String {
    let side = |s: &super::SideSummary| {
        let dropped = s.runs.iter().filter(|r| r.dropped.is_some()).count();
        let runs = s.runs.len();
        let dropped = if dropped > 0 { format!(" ({dropped} dropped)") } else { String::new() };
        format!(
            "{}: {runs} run{}{dropped}, {} invocation{}",
            label(&s.label),
            crate::units::plural_s(runs as u64),
            s.invocations,
            crate::units::plural_s(s.invocations)
        )
    };
    format!("{}; {}", side(&report.base), side(&report.head))
}

/// What was set aside: dropped runs and paths whose difference did not count.
pub(super) fn noise_notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let dropped: Vec<_> = report.dropped_runs().collect();
    for (side, run) in dropped.iter().take(MAX_DROPPED_LISTED) {
        notes.push(format!("{side}: {} dropped: {}", run.file, run.dropped.as_deref().unwrap_or_default()));
    }
    if dropped.len() > MAX_DROPPED_LISTED {
        notes.push(format!("{} more runs dropped", dropped.len() - MAX_DROPPED_LISTED));
    }
    for side in [&report.base, &report.head] {
        if side.runs.len() < 3 {
            notes.push(format!(
                "{}: {} run(s) only: dirty runs are recognised from 3 runs on",
                label(&side.label),
                side.runs.len()
            ));
        }
    }
    for side in [&report.base, &report.head] {
        if side.sampled {
            notes.push(format!(
                "{}: a random sample of the invocations was recorded (sampled for cost, or CALLTIME_SAMPLE): calls \
                 and allocations per invocation are changes only beyond what sampling explains",
                label(&side.label)
            ));
        }
    }
    let s = &report.summary;
    let threshold = super::format_pct_plain(report.settings.threshold_pct);
    if s.not_significant > 0 {
        notes.push(format!(
            "{} path(s) moved by {threshold} or more but not significantly (Mann-Whitney p >= {})",
            s.not_significant, report.settings.alpha
        ));
    }
    if s.below_threshold > 0 {
        notes.push(format!(
            "{} path(s) differ by less than {threshold}: below --threshold, not reported",
            s.below_threshold
        ));
    }
    if s.too_few_samples > 0 {
        notes.push(format!(
            "{} path(s) ran in fewer than {} invocations on a side: times not tested",
            s.too_few_samples,
            super::MIN_SAMPLES
        ));
    }
    let truncated = report.base.truncated_invocations + report.head.truncated_invocations;
    if truncated > 0 {
        notes.push(format!("{truncated} invocation(s) hit the node cap and were left out"));
    }
    notes
}

/// Text for inside a code span in a table cell: no backticks, `|` escaped, long paths cut in the middle.
fn code(text: &str) -> String {
    let count = text.chars().count();
    let text = if count > MAX_PATH_CHARS {
        let head: String = text.chars().take(MAX_PATH_CHARS / 2).collect();
        let tail: String = text.chars().skip(count - MAX_PATH_CHARS / 2).collect();
        format!("{head} … {tail}")
    } else {
        text.to_owned()
    };
    text.replace('`', "'").replace('|', "\\|")
}

/// A label inside a code span (backticks removed, length bounded).
fn label(text: &str) -> String {
    let text: String = text.chars().take(100).collect();
    text.replace('`', "'").replace('|', "\\|")
}

/// Plain text in Markdown: HTML-ish and emphasis characters made inert.
fn escape_text(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;").replace('*', "\\*").replace('_', "\\_")
}

/// The note of an unchanged path: its cause when it is a caller, else why its difference was set aside.
fn note(p: &PathDiff) -> String {
    match (&p.cause, p.cause_direction()) {
        (Some(cause), Some(slower)) => {
            format!("{} through `{}`", if slower { "slower" } else { "faster" }, code(cause))
        }
        _ => noise_word(p.noise).to_owned(),
    }
}

fn noise_word(noise: Option<Noise>) -> &'static str {
    match noise {
        Some(Noise::NotSignificant) => "not significant",
        Some(Noise::BelowThreshold) => "below threshold",
        Some(Noise::TooFewSamples) => "too few samples",
        None => "",
    }
}

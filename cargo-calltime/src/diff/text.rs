//! `--format text`: the terminal view of a diff.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use super::{
    allocs_text, callers_text, calls_text, change_text, count_with_callers, interval_text, signed_ns, time_text,
    PathDiff, Report, Status, Summary,
};

/// Renders the report; `color` adds ANSI styles.
pub fn render(report: &Report, color: bool) -> String {
    let paint = |style: Style, text: &str| {
        if color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let bold = Style::new().bold();
    let red = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().bold().fg_color(Some(AnsiColor::Green.into()));
    let yellow = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
    let dim = Style::new().dimmed();

    let mut out = String::new();
    let title = format!("cargo calltime diff: {} -> {}", report.base.label, report.head.label);
    let _ = writeln!(out, "{}", paint(bold, &title));
    let _ = writeln!(out, "{}", paint(dim, &super::markdown::sides_line(report)));
    let _ = writeln!(out, "{}", headline(&report.summary, &paint));

    let reported: Vec<&PathDiff> = report.paths.iter().filter(|p| p.is_reported()).collect();
    if !reported.is_empty() {
        let mut header =
            vec!["change", report.base.label.as_str(), report.head.label.as_str(), "95% CI", "self/inv", "calls"];
        // Allocations compare only when both sides counted them.
        let with_allocs = reported.iter().any(|p| p.allocs.is_some());
        if with_allocs {
            header.push("self allocs/inv");
        }
        let rows: Vec<Vec<String>> = reported
            .iter()
            .map(|p| {
                let mut row = vec![
                    change_text(p),
                    time_text(&p.base),
                    time_text(&p.head),
                    interval_text(p),
                    signed_ns(p.self_delta_ns()),
                    calls_text(p),
                ];
                if with_allocs {
                    row.push(allocs_text(p));
                }
                row
            })
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        out.push('\n');
        let mut line = String::from("  ");
        for (h, &w) in header.iter().zip(&widths) {
            let _ = write!(line, "{h:<w$}  ");
        }
        line.push_str("call path");
        let _ = writeln!(out, "{}", paint(bold, &line));
        for (p, row) in reported.iter().zip(&rows) {
            let mut line = String::from("  ");
            for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
                let padded = format!("{cell:<w$}");
                let styled = match (i, p.status) {
                    (0, Status::Regressed | Status::Added) => paint(red, &padded),
                    (0, Status::Improved | Status::Removed) => paint(green, &padded),
                    (5, _) if p.calls.changed || p.errs.changed || p.cancelled.changed => paint(yellow, &padded),
                    (6, _) if p.allocs.is_some_and(|a| a.changed) => paint(yellow, &padded),
                    _ => padded,
                };
                line.push_str(&styled);
                line.push_str("  ");
            }
            let path_column = line.chars().count();
            line.push_str(&p.display);
            let _ = writeln!(out, "{}", line.trim_end());
            if let Some(callers) = callers_text(p, str::to_owned) {
                let _ = writeln!(out, "{:path_column$}{}", "", paint(dim, &format!("↳ {callers}")));
            }
        }
        let _ = writeln!(
            out,
            "\n  {}",
            paint(dim, "times: median self time per invocation (in the function itself, not in the calls it makes)")
        );
        // The mean counts every invocation, slow ones included: it can move against the medians beside it.
        let _ = writeln!(
            out,
            "  {}",
            paint(dim, "self/inv: change of the mean self time per invocation (slow invocations included)")
        );
    }
    let unchanged = report.paths.len() - reported.len();
    if unchanged > 0 {
        let _ = writeln!(
            out,
            "\n{unchanged} call path(s) with no change in self time or calls not listed (all paths: --format json)"
        );
    }
    let notes = super::markdown::noise_notes(report);
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}", paint(bold, "set aside as noise:"));
        for note in notes {
            let _ = writeln!(out, "  {note}");
        }
    }
    out
}

/// The summary line: regressed, improved, unchanged, call-count and allocation changes.
fn headline(s: &Summary, paint: &dyn Fn(Style, &str) -> String) -> String {
    let bold = Style::new().bold();
    let red = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().bold().fg_color(Some(AnsiColor::Green.into()));
    let yellow = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
    let mut headline = vec![
        paint(
            if s.regressed > 0 { red } else { bold },
            &count_with_callers(s.regressed, "regressed", s.regressed_callers),
        ),
        paint(
            if s.improved > 0 { green } else { bold },
            &count_with_callers(s.improved, "improved", s.improved_callers),
        ),
        format!("{} unchanged", s.unchanged),
    ];
    let call_changes = s.calls_changed + s.added + s.removed;
    if call_changes > 0 {
        headline.push(paint(yellow, &super::markdown::call_changes_text(s)));
    } else {
        headline.push("no call-count changes".to_owned());
    }
    if s.allocs_changed > 0 {
        let text = format!("{} allocation change{}", s.allocs_changed, crate::units::plural_s(s.allocs_changed as u64));
        headline.push(paint(yellow, &text));
    }
    if let Some(text) = super::markdown::outcome_changes_text(s) {
        headline.push(paint(yellow, &text));
    }
    headline.join(", ")
}

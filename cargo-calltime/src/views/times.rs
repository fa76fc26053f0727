//! What every view says about its times: compensated for probe cost or raw, the runtime settings that shaped the
//! recording (folding, sampling, retirement), and the functions whose probes retired.

use std::borrow::Cow;

use crate::trace::compensate::compensated;
use crate::trace::{Retirement, Times, Trace};
use crate::units::thousands;
use crate::units::{format_ns, format_ns_f64};

/// The trace as a view shows it: compensated for probe cost unless `raw_times` (or the trace has no calibration,
/// or is already compensated).
pub fn prepare(trace: Trace, raw_times: bool) -> Trace {
    if raw_times {
        trace
    } else {
        compensated(trace)
    }
}

/// [`prepare`] for a borrowed trace: a compensated copy only when one is needed.
pub fn for_view(trace: &Trace, raw_times: bool) -> Cow<'_, Trace> {
    if raw_times || trace.times == Times::Compensated || trace.calibration.is_none() {
        Cow::Borrowed(trace)
    } else {
        Cow::Owned(compensated(trace.clone()))
    }
}

/// One line saying which times the view shows.
pub fn times_note(trace: &Trace) -> String {
    match (trace.times, &trace.calibration) {
        (Times::Compensated, Some(c)) => format!(
            "times compensated for probe cost ({} per recorded call; --raw-times to see raw)",
            format_ns_f64(c.recorded_outer as f64 / 1000.0)
        ),
        (Times::Compensated, None) => "times compensated for probe cost (--raw-times to see raw)".to_owned(),
        (Times::Raw, Some(_)) => "raw times (--raw-times): the probes' own cost is included".to_owned(),
        (Times::Raw, None) => {
            "raw times: the probes' own cost is included (the trace has no probe calibration)".to_owned()
        }
    }
}

/// The runtime settings that shaped the recording, for traces that carry retirement settings (version 3):
/// `fold after 4096 calls, 1 in 64 folded calls timed, retire on (under 20x probe cost, after 1000 calls)`.
pub fn settings_note(trace: &Trace) -> Option<String> {
    let settings = &trace.settings;
    let retire = settings.get("retire")?;
    let mut parts = Vec::new();
    match settings.get("fold_after") {
        Some(0) => parts.push("never folded".to_owned()),
        Some(after) => parts.push(format!("fold after {after} calls")),
        None => {}
    }
    if let Some(n) = settings.get("time_sample") {
        parts.push(if *n <= 1 { "every folded call timed".to_owned() } else { format!("1 in {n} folded calls timed") });
    }
    parts.push(if *retire == 0 {
        "retire off (--exact)".to_owned()
    } else {
        let factor = settings.get("retire_factor").map(|f| format!("under {f}x probe cost"));
        let min_calls = settings.get("retire_min_calls").map(|n| format!("after {n} calls"));
        let quiet = settings.get("quiet_after").map(|n| match n {
            0 => "calls after it counted".to_owned(),
            n => format!("calls after it counted in {n} invocations (or one with 4096 of them), then estimated"),
        });
        let when: Vec<String> = factor.into_iter().chain(min_calls).chain(quiet).collect();
        if when.is_empty() {
            "retire on".to_owned()
        } else {
            format!("retire on ({})", when.join(", "))
        }
    });
    // Said only when it applied, as `--exact` turns it off with retirement.
    if let (Some(pct), true) = (settings.get("cost_budget_pct"), !trace.sampled.is_empty()) {
        parts.push(format!("invocations sampled to keep the probes' cost under {pct}% (--exact records all)"));
    }
    Some(format!("settings: {}", parts.join(", ")))
}

/// `tok::helper 95,012 calls (not timed; retired after 4,096 calls at 3ns/call)`: calls of a retired function
/// made after it retired, with what it showed before; `estimated` (a quiet function's, marked `~` in `calls`) says
/// the count is an estimate. `records_dropped`: the hourly byte cap dropped batches of the trace, which may have
/// held the function's `retire` and `quiet` records: without its `retire` record, its count is not known then.
pub fn retired_text(
    name: &str,
    calls: &str,
    retirement: Option<&Retirement>,
    estimated: bool,
    records_dropped: bool,
) -> String {
    let counted = if estimated { "; calls estimated: no longer counted" } else { "" };
    match retirement {
        None if records_dropped => format!(
            "{name}: calls after it retired not known (its retire record was dropped with trees by the hourly byte \
             cap; --max-size-per-hour raises the cap)"
        ),
        Some(r) => format!(
            "{name} {calls} (not timed; retired after {} calls at {}/call{counted})",
            thousands(r.calls),
            format_ns(r.mean_ns)
        ),
        None => format!("{name} {calls} (not timed: retired{counted})"),
    }
}

/// The `retire` record of `func`, if it retired.
pub fn retirement(trace: &Trace, func: u32) -> Option<&Retirement> {
    trace.retirements.iter().find(|r| r.func == func)
}

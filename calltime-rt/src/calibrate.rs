//! Start-up calibration: what each kind of probe costs on this machine, so the tool can subtract it (trace-format.md,
//! `calibration` line). The real probe code runs on an empty `#[inline(never)]` function, in a private recorder made
//! current for the purpose, against an unprobed twin; each figure is a low quantile of repeated batches (noise only
//! adds). About half a millisecond, once per process, before the first invocation records.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

use crate::clock::{clock, now};
use crate::invocation::set_current;
use crate::probe::enter;
use crate::recorder::{OwnerKind, Recorder};

/// Calls per batch, and batches per figure.
const BATCH: u32 = 32;
const BATCHES: usize = 24;
/// The quantile of the batches taken (of `BATCHES`, the third lowest).
const QUANTILE_AT: usize = 2;
/// The function index the calibration probes use. No invocation records while calibrating, so it is free.
const INDEX: u32 = 0;

/// The calibration of this process (trace-format.md, `calibration` line), in picoseconds, and the tick rate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Calibration {
    pub(crate) recorded_inner_ps: u64,
    pub(crate) recorded_outer_ps: u64,
    pub(crate) folded_outer_ps: u64,
    pub(crate) timed_inner_ps: u64,
    pub(crate) timed_outer_ps: u64,
    pub(crate) retired_outer_ps: u64,
    /// A retired function's call once it went quiet (no longer counted).
    pub(crate) quiet_outer_ps: u64,
    /// Nanoseconds per clock tick (1 with `Instant`).
    pub(crate) ns_per_tick: f64,
    /// The figures the runtime's own retirement rule uses, in ticks.
    pub(crate) recorded_inner_ticks: f64,
    pub(crate) recorded_outer_ticks: f64,
    pub(crate) timed_inner_ticks: f64,
}

static CALIBRATION: OnceLock<Calibration> = OnceLock::new();

/// The calibration, once `at_start_up` ran.
pub(crate) fn get() -> Option<&'static Calibration> {
    CALIBRATION.get()
}

/// Calibrates the probes (once per process; the first root entry calls it before its invocation records).
pub(crate) fn at_start_up() -> &'static Calibration {
    CALIBRATION.get_or_init(measure)
}

#[inline(never)]
fn probed_empty() {
    let _guard = enter(INDEX);
    black_box(());
}

#[inline(never)]
fn bare_empty() {
    black_box(());
}

/// Ticks for `BATCH` calls of `call`, as the caller sees them.
#[inline(always)]
fn batch(call: fn()) -> u64 {
    let start = now();
    for _ in 0..BATCH {
        call();
    }
    now().wrapping_sub(start)
}

/// Low quantile of `samples`.
fn low(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[QUANTILE_AT.min(samples.len() - 1)]
}

/// The probe kinds, as set up in the calibration recorder.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Recorded,
    FoldedUntimed,
    Timed,
    Retired,
    Quiet,
}

/// (inner, outer) per call of one probe kind, in ticks (inner is 0 for kinds that record no duration).
///
/// # Safety
/// `rec` is a live recorder that nothing else refers to; it is current on this thread only during the call.
unsafe fn measure_kind(rec: *mut Recorder, kind: Kind) -> (f64, f64) {
    let (mut inner, mut probed, mut bare) = ([0.0; BATCHES], [0.0; BATCHES], [0.0; BATCHES]);
    let folded = matches!(kind, Kind::FoldedUntimed | Kind::Timed);
    // The recorder is reached through `rec` only (the probes read it through `CURRENT`), so no reference to it is
    // held across a probed call.
    // SAFETY: the caller's contract.
    unsafe { (*rec).set_time_sample(if kind == Kind::Timed { 1 } else { 1 << 30 }) };
    let state = match kind {
        Kind::Retired => 1,
        Kind::Quiet => crate::retire::QUIET,
        _ => 0,
    };
    crate::retire::set_state_for_calibration(INDEX, state);
    let previous = set_current(rec);
    for round in 0..=BATCHES {
        if round == 0 || !folded {
            // SAFETY: as above.
            unsafe {
                (*rec).begin(OwnerKind::Task, 0, None);
                (*rec).push(INDEX, now());
                if folded {
                    (*rec).fold();
                }
            }
            // Warms up the probe (and creates the call path, so the batches take the steady path).
            probed_empty();
        }
        // SAFETY: as above.
        let before = unsafe { (*rec).calibration_totals() };
        let probed_ticks = batch(probed_empty);
        // SAFETY: as above.
        let after = unsafe { (*rec).calibration_totals() };
        let bare_ticks = batch(bare_empty);
        if round == 0 {
            continue; // warm-up
        }
        let i = round - 1;
        probed[i] = probed_ticks as f64 / f64::from(BATCH);
        bare[i] = bare_ticks as f64 / f64::from(BATCH);
        let (timed, ticks) = (after.0 - before.0, after.1.wrapping_sub(before.1));
        inner[i] = if timed == 0 { 0.0 } else { ticks as f64 / timed as f64 };
    }
    // Discarded before the calibration recorder is left, so that they are never settled (nor count towards a
    // function going quiet).
    crate::retire::discard_retired_calls();
    set_current(previous);
    crate::retire::set_state_for_calibration(INDEX, 0);
    (low(&mut inner), (low(&mut probed) - low(&mut bare)).max(0.0))
}

fn measure() -> Calibration {
    let base = clock();
    crate::retire::settings();
    let (ticks0, instant0) = (now(), Instant::now());
    let rec = Box::into_raw(Recorder::for_calibration());
    // SAFETY: `rec` is ours alone until it is freed below.
    let (recorded_inner, recorded_outer) = unsafe { measure_kind(rec, Kind::Recorded) };
    // SAFETY: as above.
    let (_, folded_outer) = unsafe { measure_kind(rec, Kind::FoldedUntimed) };
    // SAFETY: as above.
    let (timed_inner, timed_outer) = unsafe { measure_kind(rec, Kind::Timed) };
    // SAFETY: as above.
    let (_, retired_outer) = unsafe { measure_kind(rec, Kind::Retired) };
    // SAFETY: as above.
    let (_, quiet_outer) = unsafe { measure_kind(rec, Kind::Quiet) };
    // SAFETY: from Box::into_raw above; no longer current anywhere.
    drop(unsafe { Box::from_raw(rec) });
    let ns_per_tick = if base.is_tsc() {
        let ticks = now().wrapping_sub(ticks0).max(1);
        instant0.elapsed().as_nanos() as f64 / ticks as f64
    } else {
        1.0
    };
    let ps = |ticks: f64| (ticks * ns_per_tick * 1000.0).round() as u64;
    Calibration {
        recorded_inner_ps: ps(recorded_inner),
        recorded_outer_ps: ps(recorded_outer),
        folded_outer_ps: ps(folded_outer),
        timed_inner_ps: ps(timed_inner),
        timed_outer_ps: ps(timed_outer),
        retired_outer_ps: ps(retired_outer),
        quiet_outer_ps: ps(quiet_outer),
        ns_per_tick,
        recorded_inner_ticks: recorded_inner,
        recorded_outer_ticks: recorded_outer,
        timed_inner_ticks: timed_inner,
    }
}

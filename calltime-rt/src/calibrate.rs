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

/// Calls per batch, and batches per figure. 12 batches would halve the calibration's cost (0.44 M to 0.22 M
/// instructions on the first root's thread) but spread its figures (`folded_outer` 5.3-10.9 ns over ten processes
/// against 6.3-7.8 ns with 24; docs/truth-bench.md, "Eighth round").
const BATCH: u32 = 32;
const BATCHES: usize = 24;
/// The quantile of the batches taken (of `BATCHES`, the third lowest; `quiet_in_loop`'s too).
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
    /// The same quiet call of a tiny function inlined into a loop, as the rewrite's body written twice leaves it
    /// there (`quiet_in_loop`).
    pub(crate) quiet_inline_ps: u64,
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
    // The recorder is kept, not freed: its buffers (about 100 KB) would go back to the top of glibc's main heap,
    // which then stays above the 64 KB at which glibc consolidates its fast bins on every free that reaches the
    // top; serde_json, which frees a tree of small values per line, then ran `malloc_consolidate` once a line
    // (docs/performance.md, "Twelfth round"). `rec` is no longer current anywhere and is never used again.
    let _kept = rec;
    let quiet_inline = quiet_in_loop();
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
        quiet_inline_ps: ps(quiet_inline),
        ns_per_tick,
        recorded_inner_ticks: recorded_inner,
        recorded_outer_ticks: recorded_outer,
        timed_inner_ticks: timed_inner,
    }
}

/// Bytes of text the loops of `quiet_in_loop` scan per batch, and its batches (0.12 M instructions in all).
const LOOP_BYTES: usize = 256;
const LOOP_BATCHES: usize = 12;

/// Byte classes, as a lexer's table: 0 space, 1 letter, 2 digit, 3 anything else.
static LOOP_CLASSES: [u8; 256] = {
    let mut table = [3u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c == b' ' {
            0
        } else if c.is_ascii_alphabetic() {
            1
        } else if c.is_ascii_digit() {
            2
        } else {
            3
        };
        b += 1;
    }
    table
};

#[inline(always)]
fn class_of(byte: u8) -> u8 {
    LOOP_CLASSES[byte as usize]
}

/// A lexer's loop: runs of bytes of one class, the byte that ends a run examined again as the next one's start;
/// `class` is called once per byte examined. Returns the runs.
#[inline(always)]
fn runs_of(text: &[u8], class: impl Fn(u8) -> u8) -> u64 {
    let (mut pos, mut runs) = (0, 0u64);
    while pos < text.len() {
        let first = class(text[pos]);
        pos += 1;
        while pos < text.len() && class(text[pos]) == first {
            pos += 1;
        }
        runs += 1;
    }
    runs
}

#[inline(never)]
fn runs_bare(text: &[u8]) -> u64 {
    runs_of(text, class_of)
}

/// The calibration's own state table (never registered, so no retirement writes it): `quiet_in_loop` sets its one
/// byte quiet for the measurement.
static CALIBRATION_TABLE: crate::retire::States<1> = crate::retire::States::new();

/// `runs_bare` with the class function probed as the rewrite probes a small body that declares no item
/// (`quiet_in!` on its crate's table: the body written twice, the quiet copy in place with no closure), quiet.
/// Measured through `run_quiet_in` (one closure called from two places) it read 0.42-0.59 ns a call where the
/// tokenizer's `class_of`, written twice, costs its loop about 0.2 ns (docs/truth-bench.md, "Ninth round").
#[inline(never)]
fn runs_probed(text: &[u8]) -> u64 {
    runs_of(text, |byte| crate::__calltime_quiet_in!(&CALIBRATION_TABLE, 0, { class_of(byte) }))
}

/// What a quiet call of a tiny function costs inlined into a loop (ticks per call): the state byte's load, its test
/// and the branch, and what they do to the loop around them. `quiet_outer` times a call of an empty function out of
/// line, where they hide in the call's own cost (0-0.3 ns); in a lexer's loop of ten instructions a byte they are
/// half as many again (docs/truth-bench.md, "Seventh round"). The same low quantile of batches, probed against bare.
fn quiet_in_loop() -> f64 {
    let mut text = [0u8; LOOP_BYTES];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for byte in &mut text {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *byte = b"ab cd 12 ef(),;xy 3 "[(x % 20) as usize];
    }
    // Calls of `class` per scan: every byte once, and again for the byte that ended each run but the last.
    let runs = runs_bare(&text);
    let calls = (LOOP_BYTES as u64 + runs - 1) as f64;
    CALIBRATION_TABLE.set_for_calibration(0, crate::retire::QUIET);
    let (mut probed, mut bare) = ([0.0; LOOP_BATCHES], [0.0; LOOP_BATCHES]);
    for round in 0..=LOOP_BATCHES {
        let start = now();
        black_box(runs_probed(black_box(&text)));
        let middle = now();
        black_box(runs_bare(black_box(&text)));
        let end = now();
        if round > 0 {
            probed[round - 1] = middle.wrapping_sub(start) as f64;
            bare[round - 1] = end.wrapping_sub(middle) as f64;
        }
    }
    ((low(&mut probed) - low(&mut bare)) / calls).max(0.0)
}

//! The runtime clock: raw ticks on the hot path (the invariant TSC on x86_64, else `Instant`), converted to
//! nanoseconds since the trace epoch on the writer thread.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

static USE_TSC: AtomicBool = AtomicBool::new(false);
static CLOCK: OnceLock<ClockBase> = OnceLock::new();

/// The trace epoch: a (ticks, Instant, wall clock) triple taken together at the first use.
pub(crate) struct ClockBase {
    tsc: bool,
    ticks0: u64,
    instant0: Instant,
    epoch_unix_ns: u64,
    /// Ticks between the two TSC reads around `instant0` (see `tsc_with_instant`).
    bracket0: u64,
}

impl ClockBase {
    /// Wall-clock time of the epoch, in nanoseconds since the Unix epoch.
    pub(crate) fn epoch_unix_ns(&self) -> u64 {
        self.epoch_unix_ns
    }

    /// True when ticks are TSC cycles (else nanoseconds).
    pub(crate) fn is_tsc(&self) -> bool {
        self.tsc
    }

    /// Nanoseconds since the epoch, by `Instant` (whatever the tick source).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        self.instant0.elapsed().as_nanos() as u64
    }
}

/// Ticks of the runtime clock: TSC cycles where the TSC is invariant, else nanoseconds since the trace epoch.
#[inline(always)]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Relaxed) {
            // SAFETY: rdtsc has no preconditions on x86_64.
            #[allow(unused_unsafe)]
            return unsafe { std::arch::x86_64::_rdtsc() };
        }
    }
    instant_ticks()
}

/// The TSC when it is the clock, `None` on the `Instant` fallback: for a probe path that keeps the fallback's call
/// (and the register saves a call needs) out of line.
#[inline(always)]
pub(crate) fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Relaxed) {
            // SAFETY: `rdtsc` has no preconditions; USE_TSC is set only where the TSC is invariant.
            #[allow(unused_unsafe)]
            return Some(unsafe { std::arch::x86_64::_rdtsc() });
        }
    }
    None
}

#[inline(never)]
fn instant_ticks() -> u64 {
    match CLOCK.get() {
        Some(base) => base.instant0.elapsed().as_nanos() as u64,
        None => 0,
    }
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: cpuid exists on every x86_64 CPU; leaf 0x80000000 reports the highest extended leaf.
    #[allow(unused_unsafe)]
    unsafe {
        let max_extended = __cpuid(0x8000_0000).eax;
        max_extended >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

pub(crate) fn clock() -> &'static ClockBase {
    CLOCK.get_or_init(|| {
        let forced_instant = std::env::var("CALLTIME_CLOCK").map(|v| v.trim() == "instant").unwrap_or(false);
        let tsc = !forced_instant && invariant_tsc();
        let (ticks0, instant0, bracket0) = if tsc { tsc_with_instant() } else { (0, Instant::now(), 0) };
        let epoch_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        USE_TSC.store(tsc, Relaxed);
        ClockBase { tsc, ticks0, instant0, epoch_unix_ns, bracket0 }
    })
}

/// An `Instant` and the TSC at the same moment: the midpoint of the TSC reads on both sides of it, and their
/// distance (which bounds the error), the narrowest of a few tries. The first `Instant` of a process costs a fault on
/// the vDSO's page (8 us here, against 30 ns after): the first try warms it up.
fn tsc_with_instant() -> (u64, Instant, u64) {
    let mut best = (0, Instant::now(), u64::MAX);
    for _ in 0..3 {
        let before = tsc_now();
        let instant = Instant::now();
        let after = tsc_now();
        let bracket = after.wrapping_sub(before);
        if bracket < best.2 {
            best = (before / 2 + after / 2, instant, bracket);
        }
    }
    best
}

fn tsc_now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Ticks to nanoseconds since the trace epoch, as a 32.32 fixed-point factor.
#[derive(Clone, Copy)]
pub(crate) struct Scale {
    ticks0: u64,
    ns_per_tick_q32: u128,
    /// The span the factor was measured over, and a bound of its relative error (parts per million).
    span_ns: u64,
    error_ppm: u64,
}

impl Scale {
    /// Calibrates the TSC against `Instant` over everything since the epoch, so the factor gets more precise as the
    /// program runs. Never waits: its error is the TSC reads' distance around the two `Instant` reads (tens of ns)
    /// over the span, about 100 ppm 1 ms after the epoch (`error_ppm`; the trace header's `clock` line). A
    /// 10 ms minimum span, waited for, kept every program shorter than that alive until 10 ms at exit.
    pub(crate) fn current(base: &ClockBase) -> Scale {
        if !base.tsc {
            return Scale { ticks0: 0, ns_per_tick_q32: 1 << 32, span_ns: 0, error_ppm: 0 };
        }
        let (tsc, instant, bracket) = tsc_with_instant();
        let ticks = tsc.saturating_sub(base.ticks0).max(1);
        let ns = instant.duration_since(base.instant0).as_nanos().max(1);
        let uncertain = u128::from(bracket.saturating_add(base.bracket0));
        Scale {
            ticks0: base.ticks0,
            ns_per_tick_q32: (ns << 32) / ticks as u128,
            span_ns: ns as u64,
            error_ppm: (uncertain * 1_000_000).div_ceil(u128::from(ticks)) as u64,
        }
    }

    /// The span the factor was measured over (ns) and a bound of its relative error (ppm); 0 and 0 when ticks are
    /// nanoseconds.
    pub(crate) fn precision(&self) -> (u64, u64) {
        (self.span_ns, self.error_ppm)
    }

    /// The tick the epoch was taken at and the factor (32.32 fixed point), for a reader that converts (version 4's
    /// binary records).
    pub(crate) fn parts(&self) -> (u64, u128) {
        (self.ticks0, self.ns_per_tick_q32)
    }

    /// One tick a nanosecond, from tick 0 (tests).
    #[cfg(test)]
    pub(crate) fn identity() -> Scale {
        Scale { ticks0: 0, ns_per_tick_q32: 1 << 32, span_ns: 0, error_ppm: 0 }
    }

    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        self.span(ticks.saturating_sub(self.ticks0))
    }

    /// A duration in ticks, in nanoseconds.
    pub(crate) fn span(&self, ticks: u64) -> u64 {
        ((ticks as u128 * self.ns_per_tick_q32) >> 32) as u64
    }
}

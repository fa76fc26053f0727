//! A robust estimate of a function's time per call for the retirement rule: the mean without the slowest
//! `1 / TRIM_ONE_IN` of its calls. A mean lets one preempted call decide: httparse's 1-10 ns functions, one call of
//! which took a 5 ms pause, stayed probed for 13,000 calls (docs/performance.md, "Unseen programs"). A median would
//! retire a function whose few slow calls are most of its time, which the rule must keep probed; trimming a small
//! share keeps such a function (its slow calls are more than the share) and leaves out a rare pause.
//!
//! Fixed size, no allocation: calls by powers of two of their ticks, each bucket with its count and its sum, so the
//! trimmed mean is exact except in the one bucket the cut falls in, where the calls trimmed are taken at that
//! bucket's mean.

/// One call in this many is trimmed (rounded up: one call from the first).
pub(crate) const TRIM_ONE_IN: u64 = 50;
/// Buckets by powers of two of ticks; the last one holds every longer call (2^27 ticks: about 45 ms at 3 GHz).
const BUCKETS: usize = 28;

/// Calls and their compensated ticks, by powers of two of their ticks.
#[derive(Clone, Copy)]
pub(crate) struct Spread {
    counts: [u32; BUCKETS],
    sums: [f64; BUCKETS],
    calls: u64,
}

impl Default for Spread {
    fn default() -> Spread {
        Spread::new()
    }
}

impl Spread {
    pub(crate) const fn new() -> Spread {
        Spread { counts: [0; BUCKETS], sums: [0.0; BUCKETS], calls: 0 }
    }

    /// Adds one call of `ticks` (compensated, at least 0).
    pub(crate) fn add(&mut self, ticks: f64) {
        self.add_many(1, ticks.max(0.0));
    }

    /// Adds `calls` calls of `ticks` in all, each taken at their mean.
    pub(crate) fn add_many(&mut self, calls: u64, ticks: f64) {
        if calls == 0 {
            return;
        }
        let each = (ticks / calls as f64).max(0.0);
        let bucket = if each < 2.0 { 0 } else { (each.log2() as usize).min(BUCKETS - 1) };
        self.counts[bucket] = self.counts[bucket].saturating_add(calls.min(u64::from(u32::MAX)) as u32);
        self.sums[bucket] += ticks.max(0.0);
        self.calls += calls;
    }

    /// The mean of every call (0 with none).
    #[cfg(test)]
    pub(crate) fn mean(&self) -> f64 {
        self.sums.iter().sum::<f64>() / self.calls.max(1) as f64
    }

    /// The mean without the slowest `ceil(calls / TRIM_ONE_IN)` calls (0 with none).
    pub(crate) fn trimmed_mean(&self) -> f64 {
        let counted: u64 = self.counts.iter().map(|&c| u64::from(c)).sum();
        if counted == 0 {
            return 0.0;
        }
        let trim = counted.div_ceil(TRIM_ONE_IN).min(counted - 1);
        let (mut left, mut sum) = (trim, self.sums.iter().sum::<f64>());
        for bucket in (0..BUCKETS).rev() {
            if left == 0 {
                break;
            }
            let count = u64::from(self.counts[bucket]);
            let cut = count.min(left);
            if cut > 0 {
                sum -= self.sums[bucket] * cut as f64 / count as f64;
                left -= cut;
            }
        }
        (sum / (counted - trim) as f64).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pause_among_fast_calls_is_trimmed_and_a_slow_share_is_kept() {
        let mut fast = Spread::new();
        for i in 0..999 {
            fast.add(20.0 + f64::from(i % 5));
        }
        fast.add(15_000_000.0); // a 5 ms pause
        assert!(fast.mean() > 15_000.0, "the mean is the pause's: {}", fast.mean());
        assert!((fast.trimmed_mean() - 22.0).abs() < 0.5, "trimmed: {}", fast.trimmed_mean());
        // One call in ten is slow (above the share trimmed): the estimate keeps most of them.
        let mut tail = Spread::new();
        for i in 0..1000 {
            tail.add(if i % 10 == 0 { 10_000.0 } else { 20.0 });
        }
        assert!(tail.trimmed_mean() > 800.0, "kept: {}", tail.trimmed_mean());
        assert_eq!(Spread::new().trimmed_mean(), 0.0);
    }
}

//! The statistics behind `cargo calltime diff`, written out so that every number in a report can be reproduced:
//! medians and scaled MADs (dirty-run removal), the Mann-Whitney U test (normal approximation, tie correction,
//! continuity correction, two-sided) and a seeded percentile bootstrap for the relative change of medians.

/// Median of `values` (sorted in place); `None` when empty. Even lengths average the two middle values.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(median_sorted(values))
}

/// Median of already sorted, non-empty `values`.
fn median_sorted(values: &[f64]) -> f64 {
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Median of unsorted `values` by selection, reusing the buffer (the bootstrap's inner loop).
fn median_select(values: &mut [f64]) -> f64 {
    let n = values.len();
    let (_, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return upper;
    }
    let lower = values[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lower + upper) / 2.0
}

/// Which of `values` lie clearly apart from the rest: farther from their median than `k` scaled MADs
/// (1.4826 × MAD estimates the standard deviation of normal data) and farther than `min_relative` of the median,
/// so that runs agreeing to a fraction of a percent do not make a 1% difference an outlier. Needs 3 values or more;
/// with fewer, nothing is an outlier.
pub fn outliers(values: &[f64], k: f64, min_relative: f64) -> Vec<bool> {
    if values.len() < 3 {
        return vec![false; values.len()];
    }
    let mut sorted = values.to_vec();
    let center = median(&mut sorted).unwrap_or(0.0);
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    let mad = median(&mut deviations).unwrap_or(0.0);
    let limit = (k * 1.4826 * mad).max(min_relative * center.abs());
    values.iter().map(|v| (v - center).abs() > limit).collect()
}

/// Result of a two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U statistic of the first sample.
    pub u: f64,
    /// Standardised U (continuity corrected); positive when the second sample tends to be larger.
    pub z: f64,
    /// Two-sided p-value from the normal approximation.
    pub p: f64,
}

/// Mann-Whitney U test of `a` against `b`: average ranks for ties, tie-corrected variance, continuity correction,
/// two-sided p-value from the normal approximation (good from about 8 values per side). `p` is 1 when every value
/// is tied or a side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return MannWhitney { u: 0.0, z: 0.0, p: 1.0 };
    }
    let mut all: Vec<(f64, bool)> = a.iter().map(|&v| (v, true)).chain(b.iter().map(|&v| (v, false))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        // Ranks i+1..=j share their average.
        let average_rank = (i + 1 + j) as f64 / 2.0;
        let in_a = all[i..j].iter().filter(|x| x.1).count() as f64;
        rank_sum_a += average_rank * in_a;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let total = n1 + n2;
    let variance = n1 * n2 / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if variance <= 0.0 || !variance.is_finite() {
        return MannWhitney { u, z: 0.0, p: 1.0 };
    }
    let diff = u - mean;
    let corrected = if diff.abs() <= 0.5 { 0.0 } else { diff - 0.5 * diff.signum() };
    let z_a = corrected / variance.sqrt();
    let p = erfc(z_a.abs() / std::f64::consts::SQRT_2).min(1.0);
    // U of `a` is large when `a` is larger; report z from `b`'s point of view.
    MannWhitney { u, z: -z_a, p }
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, relative error below 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// A small, fast, seedable generator (SplitMix64): the bootstrap must give the same interval on every run.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift (bias below 2^-32 for the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// Settings of [`bootstrap_relative_change`].
#[derive(Debug, Clone, Copy)]
pub struct Bootstrap {
    pub resamples: usize,
    /// Largest resample drawn from one side: larger sides are resampled at this size (an m-out-of-n bootstrap,
    /// which widens the interval a little: conservative, and bounded in cost).
    pub max_resample: usize,
    /// Two-sided confidence level, e.g. 0.95.
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Bootstrap {
        Bootstrap { resamples: 1000, max_resample: 2000, level: 0.95 }
    }
}

/// Percentile bootstrap interval of the relative change of medians, `median(b) / median(a) - 1`. Each side comes
/// as groups (runs): a resample draws runs with replacement, then values with replacement within each drawn run,
/// so run-to-run differences (a busier runner) widen the interval as they should. Seeded by `seed`. `None` when a
/// side is empty; resamples whose `a` median is 0 are skipped (the ratio is undefined).
pub fn bootstrap_relative_change(a: &[&[f64]], b: &[&[f64]], settings: Bootstrap, seed: u64) -> Option<(f64, f64)> {
    let a: Vec<&[f64]> = a.iter().copied().filter(|g| !g.is_empty()).collect();
    let b: Vec<&[f64]> = b.iter().copied().filter(|g| !g.is_empty()).collect();
    if a.is_empty() || b.is_empty() || settings.resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut buf_a = Vec::new();
    let mut buf_b = Vec::new();
    let mut ratios = Vec::with_capacity(settings.resamples);
    for _ in 0..settings.resamples {
        resample(&a, settings.max_resample, &mut rng, &mut buf_a);
        resample(&b, settings.max_resample, &mut rng, &mut buf_b);
        let median_a = median_select(&mut buf_a);
        let median_b = median_select(&mut buf_b);
        if median_a > 0.0 {
            ratios.push(median_b / median_a - 1.0);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - settings.level) / 2.0;
    Some((quantile_sorted(&ratios, tail), quantile_sorted(&ratios, 1.0 - tail)))
}

/// One two-level resample of `groups` into `out`: as many groups as there are, drawn with replacement, and from
/// each as many values as it has (at most `max_total / groups`), drawn with replacement.
fn resample(groups: &[&[f64]], max_total: usize, rng: &mut SplitMix64, out: &mut Vec<f64>) {
    out.clear();
    let per_group = (max_total / groups.len()).max(1);
    for _ in 0..groups.len() {
        let group = groups[rng.below(groups.len())];
        for _ in 0..group.len().min(per_group) {
            out.push(group[rng.below(group.len())]);
        }
    }
}

/// Linear-interpolation quantile of sorted, non-empty `values`.
fn quantile_sorted(values: &[f64], q: f64) -> f64 {
    let position = q.clamp(0.0, 1.0) * (values.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    let fraction = position - low as f64;
    values[low] + (values[high] - values[low]) * fraction
}

/// FNV-1a of `text`: a stable seed per call path, so each path's bootstrap is reproducible on its own.
pub fn stable_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median_select(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median_select(&mut [5.0, 4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        assert!((erfc(2.5) - 0.000_406_952).abs() < 1e-8);
    }

    #[test]
    fn mann_whitney_matches_hand_computed_values() {
        // U = 0; variance 25 * 11 / 12, z = (0 - 12.5 + 0.5) / 4.787 = -2.507, p = 0.01219 (as scipy's asymptotic).
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert_eq!(r.u, 0.0);
        assert!((r.p - 0.012_185).abs() < 1e-4, "{r:?}");
        assert!(r.z > 0.0);
        // With ties: average ranks give U = 5 (ranks 1, 3, 3, 5.5, 7.5).
        let r = mann_whitney(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 4.0, 5.0, 5.0]);
        assert_eq!(r.u, 5.0);
        // Tie term 42, variance 25/12 * (11 - 42/90) = 21.94, z = (5 - 12.5 + 0.5) / 4.684 = -1.494, p = 0.135.
        assert!((r.p - 0.135).abs() < 0.002, "{r:?}");
        // Identical samples: nothing to see.
        let r = mann_whitney(&[1.0, 1.0, 1.0], &[1.0, 1.0]);
        assert_eq!(r.p, 1.0);
    }

    #[test]
    fn outliers_need_three_values_and_a_clear_gap() {
        assert_eq!(outliers(&[1.0, 100.0], 3.0, 0.05), [false, false]);
        assert_eq!(outliers(&[100.0, 101.0, 99.0, 100.5, 300.0], 3.0, 0.05), [false, false, false, false, true]);
        // Runs that agree closely do not make a 2% difference an outlier.
        assert_eq!(outliers(&[100.0, 100.0, 100.0, 102.0], 3.0, 0.05), [false; 4]);
    }

    #[test]
    fn bootstrap_is_seeded_and_covers_the_true_change() {
        let mut rng = SplitMix64::new(7);
        let a: Vec<f64> = (0..400).map(|_| 1000.0 + rng.below(100) as f64).collect();
        let b: Vec<f64> = (0..400).map(|_| 1500.0 + rng.below(150) as f64).collect();
        let first = bootstrap_relative_change(&[&a], &[&b], Bootstrap::default(), 1).unwrap();
        let again = bootstrap_relative_change(&[&a], &[&b], Bootstrap::default(), 1).unwrap();
        assert_eq!(first, again);
        assert!(first.0 < 0.5 && 0.5 < first.1 && first.1 - first.0 < 0.05, "{first:?}");
        // Split into runs, one of them 10% slower: the interval widens to cover the run-to-run spread.
        let slow: Vec<f64> = a[300..].iter().map(|v| v * 1.1).collect();
        let runs = [&a[..100], &a[100..200], &a[200..300], &slow[..]];
        let grouped = bootstrap_relative_change(&runs, &[&b], Bootstrap::default(), 1).unwrap();
        assert!(grouped.1 - grouped.0 > first.1 - first.0, "{grouped:?} vs {first:?}");
    }
}

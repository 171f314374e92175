//! Descriptive statistics of one series of samples.
//!
//! `stddev` is the *sample* standard deviation (divisor n − 1), not the
//! standard error; `cv` is `stddev / mean`; `mad` is the raw median absolute
//! deviation (not scaled by 1.4826). The confidence interval is the
//! distribution-free one for the median from [`super::ci`].

use serde::{Deserialize, Serialize};

use super::ci::median_ci;

/// Nominal level of every confidence interval in a [`Summary`].
pub const CI_LEVEL: f64 = 0.95;

/// Summary of one series; every field is in the series' unit except `cv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1 divisor); 0 when n = 1.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation, `stddev / |mean|` (a fraction, not a percentage; 0 if the mean is 0).
    pub cv: f64,
    /// Median absolute deviation from the median, unscaled.
    pub mad: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The level asked for (0.95).
    pub ci_level: f64,
    /// The exact coverage of the order-statistic interval actually reported;
    /// at least `ci_level` when n ≥ 6, less (and then the interval is min..max) below.
    pub ci_coverage: f64,
}

impl Summary {
    /// The same summary in another unit: every field in the series' unit
    /// multiplied by `factor` (positive); `n`, `cv` and the coverage stay.
    pub fn scaled(&self, factor: f64) -> Self {
        Self {
            median: self.median * factor,
            mean: self.mean * factor,
            stddev: self.stddev * factor,
            min: self.min * factor,
            max: self.max * factor,
            mad: self.mad * factor,
            ci_low: self.ci_low * factor,
            ci_high: self.ci_high * factor,
            ..self.clone()
        }
    }
}

/// Summarises `values`; `None` when there are none or any is not finite.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let sorted = sorted(values);
    let n = sorted.len();
    let med = median_of_sorted(&sorted);
    let mean = mean(&sorted);
    let stddev = stddev(&sorted, mean);
    let deviations: Vec<f64> = sorted.iter().map(|v| (v - med).abs()).collect();
    let ci = median_ci(&sorted, CI_LEVEL);
    Some(Summary {
        n,
        median: med,
        mean,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
        cv: if mean != 0.0 {
            stddev / mean.abs()
        } else {
            0.0
        },
        mad: median_of_sorted(&self::sorted(&deviations)),
        ci_low: ci.low,
        ci_high: ci.high,
        ci_level: CI_LEVEL,
        ci_coverage: ci.coverage,
    })
}

/// A sorted copy (total order, so the result never depends on input order).
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of already sorted values; the mean of the two middle ones when n is even.
/// Panics on no values: callers measure at least one sample, and documents
/// with an empty series are refused when read (`document::validate`), so no
/// document reaches it empty.
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    assert!(n > 0, "median of no values");
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Median of unsorted values.
pub fn median(values: &[f64]) -> f64 {
    median_of_sorted(&sorted(values))
}

/// Arithmetic mean.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation around `mean` (n − 1 divisor); 0 for one value.
pub fn stddev(values: &[f64], mean: f64) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (n - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn worked_example_odd() {
        // Worked by hand: 2 4 4 4 5 5 7 9 10 (n = 9).
        // mean = 50/9; median = 5; deviations from 5: 3 1 1 1 0 0 2 4 5 -> MAD = 1.
        // sum of squares = 332; about the mean: 332 - 50^2/9 = 488/9; variance = 488/72.
        let s = summarize(&[9.0, 2.0, 4.0, 5.0, 4.0, 10.0, 4.0, 7.0, 5.0]).unwrap();
        assert_eq!(s.n, 9);
        assert_eq!(s.median, 5.0);
        assert!(close(s.mean, 50.0 / 9.0));
        assert!(close(s.stddev, (488.0_f64 / 72.0).sqrt()));
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.mad, 1.0);
        assert!(close(s.cv, s.stddev / s.mean));
    }

    #[test]
    fn worked_example_even() {
        // 1 2 3 4: median 2.5, mean 2.5, sample variance 5/3.
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        assert!(close(s.stddev, (5.0_f64 / 3.0).sqrt()));
        assert_eq!(s.mad, 1.0); // deviations 1.5 .5 .5 1.5
    }

    #[test]
    fn single_value_has_zero_spread() {
        let s = summarize(&[3.0]).unwrap();
        assert_eq!((s.median, s.stddev, s.cv, s.mad), (3.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        assert!(summarize(&[f64::INFINITY]).is_none());
    }

    #[test]
    fn welford_style_reference() {
        // Known textbook value: sample sd of 1..=10 is sqrt(55/6) = 3.0276503540974917.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = summarize(&v).unwrap();
        assert!(close(s.stddev, 3.0276503540974917));
        assert_eq!(s.median, 5.5);
    }
}

//! Noise that a median hides: two clusters of samples (bimodality).
//!
//! On the development VM cross-CPU wake-ups flip between a fast and a slow
//! mode for seconds at a time, so a series can hold samples of both. The test
//! is a deliberately simple heuristic, documented so its verdicts can be
//! checked by hand: split the sorted samples at their widest gap; call it
//! bimodal when each side holds at least max(2, n/5) samples, the gap is at
//! least 10 % of the overall median, and the gap is wider than twice the sum of
//! the two sides' median absolute deviations (each side is tight compared with
//! the distance between them). A single outlier never qualifies.

use super::summary::{median_of_sorted, sorted};

/// The two clusters of a bimodal series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Modes {
    /// Median of the lower cluster and its size.
    pub low: f64,
    pub low_count: usize,
    /// Median of the upper cluster and its size.
    pub high: f64,
    pub high_count: usize,
}

/// The two modes of `values` if they are clearly bimodal (see the module doc).
pub fn bimodal(values: &[f64]) -> Option<Modes> {
    let v = sorted(values);
    let n = v.len();
    let min_side = (n / 5).max(2);
    if n < 2 * min_side {
        return None;
    }
    let (split, gap) = (min_side..=n - min_side)
        .map(|i| (i, v[i] - v[i - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lower, upper) = v.split_at(split);
    let mad = |side: &[f64]| {
        let m = median_of_sorted(side);
        median_of_sorted(&sorted(
            &side.iter().map(|x| (x - m).abs()).collect::<Vec<_>>(),
        ))
    };
    let overall = median_of_sorted(&v);
    if gap >= 0.10 * overall.abs() && gap > 2.0 * (mad(lower) + mad(upper)) {
        Some(Modes {
            low: median_of_sorted(lower),
            low_count: lower.len(),
            high: median_of_sorted(upper),
            high_count: upper.len(),
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_clusters_are_found() {
        // The shape seen on the VM: a fast mode near 164 and a slow one near 215.
        let v = [
            164.0, 165.0, 215.0, 164.5, 216.0, 163.8, 219.0, 164.2, 214.0, 165.1, 217.0,
        ];
        let m = bimodal(&v).unwrap();
        assert_eq!((m.low_count, m.high_count), (6, 5));
        assert_eq!((m.low, m.high), (164.35, 216.0));
    }

    #[test]
    fn one_outlier_is_not_a_mode() {
        let v = [
            164.0, 165.0, 164.5, 163.8, 300.0, 164.2, 165.1, 164.9, 164.4, 164.7, 164.1,
        ];
        assert_eq!(bimodal(&v), None);
    }

    #[test]
    fn a_smooth_spread_is_not_bimodal() {
        // Evenly spaced values: every gap equals the within-side spread.
        let v: Vec<f64> = (0..21).map(|i| 100.0 + i as f64).collect();
        assert_eq!(bimodal(&v), None);
    }

    #[test]
    fn tiny_differences_are_not_modes() {
        // Two tight clusters only 1 % apart: below the 10 % practical threshold.
        let v = [100.0, 100.0, 100.1, 100.0, 101.0, 101.1, 101.0, 101.0];
        assert_eq!(bimodal(&v), None);
    }

    #[test]
    fn too_few_samples() {
        assert_eq!(bimodal(&[1.0, 2.0, 3.0]), None);
    }
}

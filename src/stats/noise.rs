//! Noise that a median hides: two clusters of samples (bimodality), and
//! a shift that several cases share in run order (a host phase).
//!
//! On the development VM cross-CPU wake-ups flip between a fast and a slow
//! mode for seconds at a time, so a series can hold samples of both. The test
//! is a deliberately simple heuristic, documented so its verdicts can be
//! checked by hand: split the sorted samples at their widest gap; call it
//! bimodal when each side holds at least max(2, n/5) samples, the gap is at
//! least 10 % of the overall median, and the gap is wider than twice the sum of
//! the two sides' median absolute deviations (each side is tight compared with
//! the distance between them). A single outlier never qualifies.
//!
//! [`shared_shift`]: each measurement of a case (a round's median) as its
//! log deviation from that case's own median, taken in run order; when the
//! host slows down for a while, consecutive measurements of *different*
//! cases deviate alike, so their lag-one correlation is positive. Called a
//! shared shift when it is above 0.3 and above 2.33/√pairs (one-sided 1 %
//! under independence). Left out: phases shorter than one case.

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

/// Consecutive measurements of different cases moving together in run order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedShift {
    /// Lag-one correlation of the cases' log deviations from their own medians.
    pub correlation: f64,
    /// Consecutive pairs of different cases it rests on.
    pub pairs: usize,
}

/// Whether `steps` (case id, value) in run order shift together (see the
/// module doc); `None` when they do not, or with fewer than 8 pairs.
pub fn shared_shift(steps: &[(usize, f64)]) -> Option<SharedShift> {
    let mut by_case: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for &(case, v) in steps {
        if v > 0.0 && v.is_finite() {
            by_case.entry(case).or_default().push(v);
        }
    }
    let centre: std::collections::BTreeMap<usize, f64> = by_case
        .iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|(&c, v)| (c, median_of_sorted(&sorted(v))))
        .collect();
    let deviation = |&(case, v): &(usize, f64)| Some((v / centre.get(&case)?).ln());
    let d: Vec<Option<f64>> = steps.iter().map(deviation).collect();
    let all: Vec<f64> = d.iter().flatten().copied().collect();
    if all.is_empty() {
        return None;
    }
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    let variance = all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / all.len() as f64;
    let products: Vec<f64> = (1..steps.len())
        .filter(|&i| steps[i].0 != steps[i - 1].0)
        .filter_map(|i| Some((d[i - 1]? - mean) * (d[i]? - mean)))
        .collect();
    let pairs = products.len();
    if pairs < 8 || variance <= 0.0 {
        return None;
    }
    let correlation = products.iter().sum::<f64>() / pairs as f64 / variance;
    (correlation > 0.3 && correlation * (pairs as f64).sqrt() > 2.33)
        .then_some(SharedShift { correlation, pairs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Three cases measured in turn for 20 rounds with 2 % noise; with
    /// `phase`, the host is 20 % slower during rounds 5 to 12.
    fn run_order(rng: &mut SplitMix64, phase: bool) -> Vec<(usize, f64)> {
        let mut steps = Vec::new();
        for round in 0..20 {
            for case in 0..3 {
                let slow = if phase && (5..=12).contains(&round) {
                    1.2
                } else {
                    1.0
                };
                let noise = crate::rng::log_normal_sample(rng, 1, 1.0)[0].powf(0.4);
                steps.push((case, (case + 1) as f64 * 100.0 * slow * noise));
            }
        }
        steps
    }

    #[test]
    fn a_host_phase_shows_as_a_shared_shift_and_noise_does_not() {
        let mut rng = SplitMix64::new(5);
        let (trials, mut found, mut false_found) = (500, 0, 0);
        for _ in 0..trials {
            found += usize::from(shared_shift(&run_order(&mut rng, true)).is_some());
            false_found += usize::from(shared_shift(&run_order(&mut rng, false)).is_some());
        }
        assert!(found * 100 >= trials * 95, "found {found} of {trials}");
        assert!(
            false_found * 100 <= trials * 3,
            "false {false_found} of {trials}"
        );
        assert_eq!(shared_shift(&[(0, 1.0), (1, 2.0)]), None);
    }

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

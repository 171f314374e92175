//! Slow drift told from steps: a robust straight line through a stretch of
//! a history, the test of whether it rises or falls at all, and the cost of
//! a line against the cost of a step on the same values.
//!
//! The line is Theil–Sen's (Theil 1950, Sen 1968: the median of the slopes
//! between every pair of values, the intercept the median of what is left),
//! which one run in four may spoil without moving it; the test is
//! Mann–Kendall's (Mann 1945, Kendall 1975: the sign of every later value
//! against every earlier one, normal approximation with the tie
//! correction, two-sided). Costs are sums of absolute deviations, so that
//! outliers weigh as little here as in the medians of the change points.
//! Left out: seasonality, autocorrelated noise (nightly runs are taken as
//! independent), and stretches longer than [`MAX_PAIRS_RUNS`] runs, whose
//! pairs are thinned to every k-th run for the slope.

use super::summary::median;

/// Above this many runs the slope reads a thinned set of pairs (O(n²) pairs).
pub const MAX_PAIRS_RUNS: usize = 1500;

/// A straight line `intercept + slope · i` over positions 0, 1, … of a stretch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
}

impl Line {
    pub fn at(&self, i: usize) -> f64 {
        self.intercept + self.slope * i as f64
    }
}

/// Theil–Sen's line through `values` (at positions 0, 1, …); `None` with fewer than 3.
pub fn theil_sen(values: &[f64]) -> Option<Line> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let step = n.div_ceil(MAX_PAIRS_RUNS);
    let mut slopes = Vec::with_capacity((n / step) * (n / step) / 2);
    for i in (0..n).step_by(step) {
        for j in (i + step..n).step_by(step) {
            slopes.push((values[j] - values[i]) / (j - i) as f64);
        }
    }
    let slope = median(&slopes);
    let rests: Vec<f64> = values
        .iter()
        .enumerate()
        .map(|(i, v)| v - slope * i as f64)
        .collect();
    Some(Line {
        intercept: median(&rests),
        slope,
    })
}

/// Mann–Kendall's S of `values` (later values above earlier ones, less
/// those below) and its variance under no trend, with the tie correction.
fn kendall_s(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match values[j].total_cmp(&values[i]) {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ties: f64 = sorted
        .chunk_by(|a, b| a == b)
        .map(|g| {
            let t = g.len() as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let nf = n as f64;
    (s as f64, (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0)
}

/// The two-sided p-value of S with `variance` (continuity-corrected normal).
fn kendall_p(s: f64, variance: f64) -> f64 {
    if variance <= 0.0 {
        return 1.0;
    }
    let z = (s.abs() - 1.0).max(0.0) / variance.sqrt();
    super::unpaired::erfc(z / std::f64::consts::SQRT_2)
}

/// Mann–Kendall's two-sided p-value that `values` have no monotonic trend
/// (1 with fewer than 3 values or when all are tied).
pub fn mann_kendall_p(values: &[f64]) -> f64 {
    if values.len() < 3 {
        return 1.0;
    }
    let (s, variance) = kendall_s(values);
    kendall_p(s, variance)
}

/// Mann–Kendall's test pooled over stretches (their S and variances
/// summed): whether they share a trend, each about a level of its own.
pub fn pooled_mann_kendall_p(stretches: &[&[f64]]) -> f64 {
    let (s, variance) = stretches
        .iter()
        .filter(|v| v.len() >= 3)
        .map(|v| kendall_s(v))
        .fold((0.0, 0.0), |(s, var), (s1, v1)| (s + s1, var + v1));
    kendall_p(s, variance)
}

/// Σ|v − the line| over `values`.
pub fn line_cost(values: &[f64], line: &Line) -> f64 {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (v - line.at(i)).abs())
        .sum()
}

/// Whether one straight line through `values` explains them at least as
/// well as the steps at `cuts` (each a new level's first value) do, by the
/// Bayesian information criterion under Laplace noise: 2m·ln(cost/m) plus
/// ln(m) per parameter — two for the line; a level per segment and
/// [`CUT_PARAMETERS`] for each cut, whose place was searched for. A history
/// that drifts is cut into steps by a search for steps; this tells it back.
pub fn line_explains(values: &[f64], cuts: &[usize]) -> bool {
    let Some(line) = theil_sen(values) else {
        return false;
    };
    if cuts.is_empty() {
        return false;
    }
    let m = values.len() as f64;
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().copied())
        .chain(std::iter::once(values.len()))
        .collect();
    let steps_cost: f64 = bounds
        .windows(2)
        .map(|w| {
            let side = &values[w[0]..w[1]];
            let mid = median(side);
            side.iter().map(|v| (v - mid).abs()).sum::<f64>()
        })
        .sum();
    let k = cuts.len() as f64;
    let bic =
        |cost: f64, parameters: f64| 2.0 * m * (cost.max(1e-300) / m).ln() + parameters * m.ln();
    bic(line_cost(values, &line), 2.0) <= bic(steps_cost, k + 1.0 + k * CUT_PARAMETERS)
}

/// Parameters a searched-for cut counts for (its level is counted apart).
pub const CUT_PARAMETERS: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theil_sen_finds_the_line_through_a_spoiled_ramp() {
        let mut ramp: Vec<f64> = (0..20).map(|i| 100.0 + 0.5 * i as f64).collect();
        ramp[3] = 400.0;
        ramp[11] = -50.0;
        let line = theil_sen(&ramp).unwrap();
        assert!((line.slope - 0.5).abs() < 1e-9, "{line:?}");
        assert!((line.intercept - 100.0).abs() < 1e-9, "{line:?}");
        assert_eq!(theil_sen(&[1.0, 2.0]), None);
    }

    #[test]
    fn mann_kendall_tells_a_ramp_from_a_flat_line() {
        let ramp: Vec<f64> = (0..30)
            .map(|i| i as f64 + [0.0, 3.0, -2.0][i % 3])
            .collect();
        assert!(mann_kendall_p(&ramp) < 0.001);
        // A zig-zag with no trend.
        let flat: Vec<f64> = (0..30).map(|i| [1.0, 3.0, 2.0][i % 3]).collect();
        assert!(mann_kendall_p(&flat) > 0.5, "{}", mann_kendall_p(&flat));
        assert_eq!(mann_kendall_p(&[5.0; 10]), 1.0);
        // n = 10, strictly rising: S = 45, Var = 125, z = 44/√125 = 3.935.
        let rising: Vec<f64> = (0..10).map(f64::from).collect();
        let p = mann_kendall_p(&rising);
        assert!((p - 8.3e-5).abs() < 1e-5, "{p}");
    }

    #[test]
    fn a_ramp_is_a_line_and_a_staircase_of_sharp_steps_is_not() {
        let wobble = |i: usize| [0.0, 0.3, -0.3][i % 3];
        let ramp: Vec<f64> = (0..60)
            .map(|i| 100.0 + 0.1 * i as f64 + wobble(i))
            .collect();
        // A search for steps would cut it in two or three.
        assert!(line_explains(&ramp, &[30]));
        assert!(line_explains(&ramp, &[20, 40]));
        let steps: Vec<f64> = (0..60)
            .map(|i| {
                100.0
                    + if i < 20 {
                        0.0
                    } else if i < 40 {
                        4.0
                    } else {
                        8.0
                    }
                    + wobble(i)
            })
            .collect();
        assert!(!line_explains(&steps, &[20, 40]));
        // Without cuts there is nothing to explain away.
        assert!(!line_explains(&ramp, &[]));
    }
}

//! Comparing two independent series (separately saved runs): the ratio of
//! medians with a bootstrap confidence interval, a rank-test p-value, Holm's
//! correction for many comparisons, and an equivalence test.
//!
//! - Ratio: candidate median ÷ baseline median (above 1: the candidate takes
//!   longer). CI: percentile bootstrap, resampling each side independently
//!   (unpaired), seeded SplitMix64, so a document's numbers can be reproduced.
//! - p-value: two-sided Mann–Whitney U, normal approximation with tie and
//!   continuity corrections (scipy's `method="asymptotic"`); conservative for
//!   very small samples.
//! - Holm–Bonferroni step-down adjustment across all comparisons of a report.
//! - Equivalence: two one-sided tests at α = 0.05, done as "the 90 %
//!   bootstrap interval of the ratio lies within 1 ± margin".
//!
//! Left out: paired statistics for interleaved rounds (a later step).

use super::SplitMix64;
use super::summary::{median_of_sorted, sorted};

/// `erfc(x)`, Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Two-sided Mann–Whitney U p-value (normal approximation, tie- and
/// continuity-corrected). 1 when either side is empty or all values tie.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_sum_a, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let mid_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_a += mid_rank * all[i..=j].iter().filter(|(_, from_a)| *from_a).count() as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let nf = n as f64;
    let variance = n1 * n2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// Holm–Bonferroni adjusted p-values, in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// A ratio of medians with bootstrap intervals at 95 % and 90 %.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioCi {
    pub ratio: f64,
    pub ci95: (f64, f64),
    /// For the equivalence test (two one-sided tests at 5 %).
    pub ci90: (f64, f64),
}

impl RatioCi {
    /// Half the width of the 95 % interval as a fraction of the ratio: the
    /// smallest relative change the comparison could show.
    pub fn relative_half_width(&self) -> f64 {
        (self.ci95.1 - self.ci95.0) / 2.0 / self.ratio
    }
}

/// Candidate median ÷ baseline median, with percentile-bootstrap intervals
/// from `resamples` independent resamples of each side.
pub fn ratio_of_medians(
    baseline: &[f64],
    candidate: &[f64],
    seed: u64,
    resamples: usize,
) -> RatioCi {
    let (b, c) = (sorted(baseline), sorted(candidate));
    let ratio = median_of_sorted(&c) / median_of_sorted(&b);
    let mut rng = SplitMix64::new(seed);
    let mut scratch_b = vec![0.0; b.len()];
    let mut scratch_c = vec![0.0; c.len()];
    let mut ratios: Vec<f64> = (0..resamples)
        .map(|_| {
            let mb = resampled_median(&b, &mut scratch_b, &mut rng);
            let mc = resampled_median(&c, &mut scratch_c, &mut rng);
            mc / mb
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((q * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    RatioCi {
        ratio,
        ci95: (at(0.025), at(0.975)),
        ci90: (at(0.05), at(0.95)),
    }
}

fn resampled_median(values: &[f64], scratch: &mut [f64], rng: &mut SplitMix64) -> f64 {
    for slot in scratch.iter_mut() {
        *slot = values[rng.below(values.len())];
    }
    scratch.sort_by(f64::total_cmp);
    median_of_sorted(scratch)
}

/// Student t quantiles t(0.975, df) and t(0.95, df) for df = 1..=19.
const T975: [f64; 19] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
];
const T95: [f64; 19] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
    1.761, 1.753, 1.746, 1.740, 1.734, 1.729,
];

/// Most rounds a paired comparison takes (the exact sign-flip test enumerates 2^rounds).
pub const MAX_ROUNDS: usize = 20;

/// Paired comparison of per-round values (rounds 2..=20, same length): the
/// geometric mean of the per-round ratios candidate ÷ baseline, t intervals
/// on the log-ratios (95 % and 90 %), and the exact two-sided sign-flip
/// permutation p-value of their mean. Drift between rounds cancels because
/// each ratio compares values taken in the same round.
pub fn paired_log_ratio(baseline: &[f64], candidate: &[f64]) -> (RatioCi, f64) {
    let ci = paired_log_ratio_ci(baseline, candidate);
    let d = log_ratios(baseline, candidate);
    let n = d.len();
    // Exact sign-flip test: how many of the 2^n sign patterns give a sum at least as extreme.
    let observed = d.iter().sum::<f64>().abs() - 1e-12 * d.iter().map(|x| x.abs()).sum::<f64>();
    let extreme = (0u32..1 << n)
        .filter(|mask| {
            let sum: f64 = d
                .iter()
                .enumerate()
                .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
                .sum();
            sum.abs() >= observed
        })
        .count();
    (ci, extreme as f64 / (1u64 << n) as f64)
}

/// The interval part of [`paired_log_ratio`] alone (no test): cheap enough
/// to check a precision target after every round.
pub fn paired_log_ratio_ci(baseline: &[f64], candidate: &[f64]) -> RatioCi {
    let d = log_ratios(baseline, candidate);
    let n = d.len();
    let mean = d.iter().sum::<f64>() / n as f64;
    let sd = (d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
    let se = sd / (n as f64).sqrt();
    let interval = |t: f64| ((mean - t * se).exp(), (mean + t * se).exp());
    RatioCi {
        ratio: mean.exp(),
        ci95: interval(T975[n - 2]),
        ci90: interval(T95[n - 2]),
    }
}

/// The median of each of at most [`MAX_ROUNDS`] consecutive blocks of paired
/// values (as equal as possible), for [`paired_log_ratio`] when there are more
/// pairs than its exact test takes. Cutting every side at the same places
/// keeps the pairing: each block holds the same rounds on every side.
pub fn block_medians(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let k = n.min(MAX_ROUNDS);
    (0..k)
        .map(|b| super::summary::median(&values[b * n / k..(b + 1) * n / k]))
        .collect()
}

/// ln(candidate ÷ baseline) round by round, over the rounds both have (2..=20).
fn log_ratios(baseline: &[f64], candidate: &[f64]) -> Vec<f64> {
    let n = baseline.len().min(candidate.len());
    assert!(
        (2..=MAX_ROUNDS).contains(&n),
        "paired comparison needs 2 to {MAX_ROUNDS} rounds"
    );
    (0..n).map(|i| (candidate[i] / baseline[i]).ln()).collect()
}

/// What a comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Faster,
    Slower,
    NoChange,
    Equivalent,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no-change",
            Verdict::Equivalent => "equivalent",
        }
    }
}

/// The verdict for a time-like quantity (smaller is better). `slower` and
/// `faster` need significance (adjusted p below `alpha`, 95 % interval
/// excluding 1) *and* a practical size: the ratio beyond 1 ± `margin`.
/// Otherwise "equivalent" when the 90 % interval lies within 1 ± `margin`,
/// else "no-change" (not enough data to say either).
pub fn verdict(r: &RatioCi, adjusted_p: f64, alpha: f64, margin: f64) -> Verdict {
    let significant = adjusted_p < alpha;
    if significant && r.ci95.0 > 1.0 && r.ratio > 1.0 + margin {
        Verdict::Slower
    } else if significant && r.ci95.1 < 1.0 && r.ratio < 1.0 - margin {
        Verdict::Faster
    } else if r.ci90.0 >= 1.0 - margin && r.ci90.1 <= 1.0 + margin {
        Verdict::Equivalent
    } else {
        Verdict::NoChange
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn block_medians_keep_order_and_size() {
        let v: Vec<f64> = (0..50).map(f64::from).collect();
        let b = block_medians(&v);
        assert_eq!(b.len(), 20);
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(block_medians(&[1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn erfc_matches_reference_values() {
        // Python math.erfc: 1, 0.15729920705028513, 0.004677734981047265, 0.4795001221869535.
        assert!(close(erfc(0.0), 1.0, 1e-7));
        assert!(close(erfc(1.0), 0.157_299_207_050_285_13, 1e-7));
        assert!(close(erfc(2.0), 0.004_677_734_981_047_265, 1e-8));
        assert!(close(erfc(-0.5), 2.0 - 0.479_500_122_186_953_5, 1e-7));
    }

    #[test]
    fn mann_whitney_matches_the_asymptotic_formula() {
        // Worked with Python (normal approximation with continuity, as scipy's
        // asymptotic method): full separation of 5 vs 5 → 0.012185780355344818;
        // with ties, [1,2,2,3] vs [2,3,4,5] → 0.13665824773814753.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(
            mann_whitney_p(&a, &b),
            0.012_185_780_355_344_818,
            1e-6
        ));
        assert!(close(
            mann_whitney_p(&b, &a),
            0.012_185_780_355_344_818,
            1e-6
        ));
        assert!(close(
            mann_whitney_p(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0, 5.0]),
            0.136_658_247_738_147_53,
            1e-6
        ));
        assert_eq!(mann_whitney_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }

    #[test]
    fn holm_adjusts_step_down() {
        // Textbook example: p = 0.01, 0.04, 0.03 (m = 3) → 0.03, 0.06, 0.06.
        let adj = holm(&[0.01, 0.04, 0.03]);
        assert!(
            close(adj[0], 0.03, 1e-12) && close(adj[1], 0.06, 1e-12) && close(adj[2], 0.06, 1e-12),
            "{adj:?}"
        );
    }

    /// A log-normal-ish sample from the generator (Box–Muller on two uniforms).
    fn sample(rng: &mut SplitMix64, n: usize, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 + 1e-12;
                let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                scale * (0.05 * normal).exp()
            })
            .collect()
    }

    #[test]
    fn a_and_a_rarely_differ_and_the_interval_covers_one() {
        // Same distribution on both sides, n = 21: the rank test's false
        // positives stay near 5 %, and the 95 % interval covers the true ratio
        // (1) at least 94 % of the time.
        let mut rng = SplitMix64::new(42);
        let trials = 300;
        let (mut positives, mut covered) = (0, 0);
        for t in 0..trials {
            let (a, b) = (sample(&mut rng, 21, 100.0), sample(&mut rng, 21, 100.0));
            if mann_whitney_p(&a, &b) < 0.05 {
                positives += 1;
            }
            let r = ratio_of_medians(&a, &b, t, 2000);
            if r.ci95.0 <= 1.0 && 1.0 <= r.ci95.1 {
                covered += 1;
            }
        }
        assert!(
            positives <= trials * 9 / 100,
            "false positives {positives} of {trials}"
        );
        assert!(
            covered * 100 >= trials * 94,
            "coverage {covered} of {trials}"
        );
    }

    #[test]
    fn a_planted_five_percent_difference_is_found() {
        let mut rng = SplitMix64::new(7);
        let (a, b) = (sample(&mut rng, 21, 100.0), sample(&mut rng, 21, 105.0));
        let r = ratio_of_medians(&a, &b, 1, 5000);
        let p = mann_whitney_p(&a, &b);
        assert_eq!(verdict(&r, p, 0.05, 0.01), Verdict::Slower, "{r:?} p={p}");
        assert!(r.ci95.0 < 1.05 && 1.05 < r.ci95.1, "{r:?}");
    }

    #[test]
    fn paired_ratios_cancel_drift_between_rounds() {
        // The machine drifts by ±10 % between rounds, the candidate is always 5 % slower:
        // every per-round ratio is 1.05, so the interval collapses on it and the
        // sign-flip test finds only the two all-same-sign patterns: p = 2/2^8.
        let base = [100.0, 110.0, 90.0, 105.0, 95.0, 100.0, 108.0, 92.0];
        let cand: Vec<f64> = base.iter().map(|b| b * 1.05).collect();
        let (r, p) = paired_log_ratio(&base, &cand);
        assert!(
            (r.ratio - 1.05).abs() < 1e-12
                && (r.ci95.0 - 1.05).abs() < 1e-9
                && (r.ci95.1 - 1.05).abs() < 1e-9
        );
        assert!((p - 2.0 / 256.0).abs() < 1e-12, "{p}");
        assert_eq!(verdict(&r, p, 0.05, 0.01), Verdict::Slower);
    }

    #[test]
    fn paired_intervals_cover_the_true_ratio_under_drift() {
        // 10 rounds; each round the machine drifts by up to ±20 % (shared by both
        // sides), each side adds its own 2 % noise, and the candidate is truly 3 %
        // slower: the 95 % interval must cover 1.03 in at least 94 % of trials, and
        // with no true difference the test must rarely call one.
        let mut rng = SplitMix64::new(11);
        let (trials, mut covered, mut false_positives) = (1000, 0, 0);
        for _ in 0..trials {
            let drift: Vec<f64> = sample(&mut rng, 10, 1.0)
                .iter()
                .map(|d| d.powf(4.0))
                .collect();
            let noise = |rng: &mut SplitMix64| {
                sample(rng, 10, 1.0)
                    .iter()
                    .map(|n| n.powf(0.4))
                    .collect::<Vec<f64>>()
            };
            let base: Vec<f64> = drift
                .iter()
                .zip(noise(&mut rng))
                .map(|(d, n)| 100.0 * d * n)
                .collect();
            let cand: Vec<f64> = drift
                .iter()
                .zip(noise(&mut rng))
                .map(|(d, n)| 103.0 * d * n)
                .collect();
            let (r, _) = paired_log_ratio(&base, &cand);
            if r.ci95.0 <= 1.03 && 1.03 <= r.ci95.1 {
                covered += 1;
            }
            let same: Vec<f64> = drift
                .iter()
                .zip(noise(&mut rng))
                .map(|(d, n)| 100.0 * d * n)
                .collect();
            if paired_log_ratio(&base, &same).1 < 0.05 {
                false_positives += 1;
            }
        }
        assert!(
            covered * 100 >= trials * 94,
            "coverage {covered} of {trials}"
        );
        assert!(
            false_positives <= trials * 9 / 100,
            "false positives {false_positives} of {trials}"
        );
    }

    #[test]
    fn paired_interval_matches_a_hand_computed_t_interval() {
        // log-ratios ln(1.1), ln(0.9), ln(1.0): mean m, sd s by hand; t(0.975, 2) = 4.303.
        let (r, p) = paired_log_ratio(&[1.0, 1.0, 1.0], &[1.1, 0.9, 1.0]);
        let d = [1.1f64.ln(), 0.9f64.ln(), 0.0];
        let m = d.iter().sum::<f64>() / 3.0;
        let s = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((r.ci95.0 - (m - 4.303 * s / 3f64.sqrt()).exp()).abs() < 1e-12);
        assert!(p > 0.5, "no consistent direction: {p}");
    }

    #[test]
    fn a_significant_but_tiny_difference_is_not_a_verdict_of_change() {
        // 0.2 % slower with a very tight interval: real, but below the 1 % margin.
        let r = RatioCi {
            ratio: 1.002,
            ci95: (1.001, 1.003),
            ci90: (1.0012, 1.0028),
        };
        assert_eq!(verdict(&r, 0.001, 0.05, 0.01), Verdict::Equivalent);
        let r = RatioCi {
            ratio: 1.02,
            ci95: (1.01, 1.03),
            ci90: (1.012, 1.028),
        };
        assert_eq!(verdict(&r, 0.001, 0.05, 0.01), Verdict::Slower);
    }

    #[test]
    fn tight_equal_samples_are_equivalent() {
        let a: Vec<f64> = (0..21).map(|i| 100.0 + (i % 3) as f64 * 0.01).collect();
        let r = ratio_of_medians(&a, &a, 3, 2000);
        assert_eq!(
            verdict(&r, mann_whitney_p(&a, &a), 0.05, 0.01),
            Verdict::Equivalent
        );
    }
}

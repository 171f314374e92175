//! Comparing two independent series (separately saved runs): the ratio of
//! medians with a bootstrap confidence interval and a rank-test p-value.
//!
//! - Ratio: candidate median ÷ baseline median (above 1: the candidate takes
//!   longer). CI: percentile bootstrap, resampling each side independently
//!   (unpaired), seeded SplitMix64, so a document's numbers can be reproduced;
//!   a large-sample interval above [`BOOTSTRAP_MAX_SAMPLES`].
//! - p-value: two-sided Mann–Whitney U, normal approximation with tie and
//!   continuity corrections (scipy's `method="asymptotic"`); conservative for
//!   very small samples.
//!
//! Paired series (interleaved rounds) are `stats::paired`'s; what a ratio and
//! a p-value conclude is `stats::verdict`'s.

use super::ci::RatioCi;
use super::summary::{median_of_sorted, sorted};
use crate::rng::SplitMix64;

/// `erfc(x)`: the complementary error function from `libm` (a port of
/// musl's, accurate to about one unit in the last place).
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
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

/// Above this many samples on both sides together, [`ratio_of_medians`]
/// does not bootstrap (10,000 resamples of millions of samples would take
/// minutes) but takes the large-sample interval of `large_sample_ratio`.
pub const BOOTSTRAP_MAX_SAMPLES: usize = 100_000;

/// Candidate median ÷ baseline median, with percentile-bootstrap intervals
/// from `resamples` independent resamples of each side (large-sample
/// intervals above [`BOOTSTRAP_MAX_SAMPLES`]).
pub fn ratio_of_medians(
    baseline: &[f64],
    candidate: &[f64],
    seed: u64,
    resamples: usize,
) -> RatioCi {
    let (b, c) = (sorted(baseline), sorted(candidate));
    if b.len() + c.len() > BOOTSTRAP_MAX_SAMPLES {
        return large_sample_ratio(&b, &c);
    }
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

/// The ratio of medians of two large sorted samples (positive values) with
/// normal intervals on the log scale: each median's standard error is taken
/// from its distribution-free 95 % order-statistic interval (the sample
/// quantiles at ½ ∓ 1.96·√n/2 ranks, as the binomial's normal
/// approximation gives them), `se = (ln hi − ln lo) / (2 · 1.96)`, and the two
/// sides' add in quadrature. Asymptotically the same as the percentile
/// bootstrap of the ratio, in O(n) after the sort.
fn large_sample_ratio(b: &[f64], c: &[f64]) -> RatioCi {
    const Z95: f64 = 1.959_963_984_540_054;
    const Z90: f64 = 1.644_853_626_951_472_6;
    let log_se = |v: &[f64]| {
        let n = v.len() as f64;
        let half = Z95 * n.sqrt() / 2.0;
        let at = |rank: f64| v[(rank.round().max(0.0) as usize).min(v.len() - 1)];
        let (lo, hi) = (at(n / 2.0 - half), at(n / 2.0 + half - 1.0));
        (hi.ln() - lo.ln()) / (2.0 * Z95)
    };
    let ratio = median_of_sorted(c) / median_of_sorted(b);
    let se = log_se(b).hypot(log_se(c));
    let interval = |z: f64| (ratio * (-z * se).exp(), ratio * (z * se).exp());
    RatioCi {
        ratio,
        ci95: interval(Z95),
        ci90: interval(Z90),
    }
}

/// The median of one resample of `values`, drawn into `scratch` (same
/// length), found by selection: O(n) per resample instead of a sort's O(n log n).
fn resampled_median(values: &[f64], scratch: &mut [f64], rng: &mut SplitMix64) -> f64 {
    for slot in scratch.iter_mut() {
        *slot = values[rng.below(values.len())];
    }
    median_by_selection(scratch)
}

/// The median of `values` (reordered in place; non-empty), the mean of the two
/// middle ones when their number is even — the same value as
/// [`median_of_sorted`] of the sorted values.
pub fn median_by_selection(values: &mut [f64]) -> f64 {
    let n = values.len();
    assert!(n > 0, "median of no values");
    let (below, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return upper;
    }
    // The lower middle value is the largest of those placed below the upper one.
    let lower = below
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(upper);
    (lower + upper) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::verdict::{POWERFUL, Verdict, verdict};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn erfc_matches_published_values() {
        // erfc (DLMF §7.2, to 20 digits, rounded here to f64; Abramowitz & Stegun table 7.1 gives
        // erf to 15 decimals: erfc(0.5) = 1 − 0.520499877813047).
        let published = [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 2.0 - 0.157_299_207_050_285_13),
        ];
        for (x, want) in published {
            let got = erfc(x);
            assert!(
                (got - want).abs() <= 1e-15 * want,
                "erfc({x}) = {got:e}, not {want:e}"
            );
        }
    }

    #[test]
    fn selection_gives_the_sorted_median() {
        let mut rng = SplitMix64::new(5);
        for n in 1..40 {
            let v: Vec<f64> = (0..n).map(|_| (rng.below(20)) as f64).collect();
            let mut scratch = v.clone();
            assert_eq!(
                median_by_selection(&mut scratch),
                median_of_sorted(&sorted(&v))
            );
        }
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

    use crate::rng::log_normal_sample as sample;

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
        assert_eq!(
            verdict(&r, p, 0.05, 0.01, &POWERFUL),
            Verdict::Slower,
            "{r:?} p={p}"
        );
        assert!(r.ci95.0 < 1.05 && 1.05 < r.ci95.1, "{r:?}");
    }

    #[test]
    fn large_samples_get_an_interval_like_the_bootstrap_without_resampling() {
        // Two skewed samples of 60,000 (over the limit together), 2 % apart.
        let mut rng = SplitMix64::new(11);
        let mut draw = |scale: f64| -> Vec<f64> {
            (0..60_000)
                .map(|_| {
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    scale * (100.0 + 20.0 * -(u.max(1e-12)).ln())
                })
                .collect()
        };
        let (a, b) = (draw(1.0), draw(1.02));
        let large = ratio_of_medians(&a, &b, 1, 10_000);
        let boot = ratio_of_medians(&a[..30_000], &b[..30_000], 1, 2_000);
        assert!(large.ci95.0 < large.ratio && large.ratio < large.ci95.1);
        assert!(large.ci90.0 > large.ci95.0 && large.ci90.1 < large.ci95.1);
        assert!(large.ci95.0 > 1.0, "2% is resolved: {large:?}");
        // Half the samples: an interval about √2 wider than the large one.
        let widths = boot.relative_half_width() / large.relative_half_width();
        assert!(
            (1.1..1.8).contains(&widths),
            "{widths}: {boot:?} vs {large:?}"
        );
    }
}

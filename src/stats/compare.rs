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

/// Above this many samples on both sides together, [`ratio_of_medians`]
/// does not bootstrap (10,000 resamples of millions of samples would take
/// minutes) but takes the large-sample interval of [`large_sample_ratio`].
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

/// The `p` quantile of Student's t distribution with `df` degrees of freedom
/// (`statrs`' inverse of the regularized incomplete beta function: exact to
/// about 1e-14 for any `df`, checked against published tables in the tests).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df)
        .expect("t distribution with positive degrees of freedom")
        .inverse_cdf(p)
}

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
        ci95: interval(t_quantile(0.975, (n - 1) as f64)),
        ci90: interval(t_quantile(0.95, (n - 1) as f64)),
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

/// What a comparison concludes, for a time-like quantity (smaller is better).
/// `as_str` is the value documents and CSV carry; [`Verdict::words`] what people read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significant, and the ratio beyond the margin.
    Faster,
    Slower,
    /// Significant, but the ratio within the margin (and the 90 % interval not inside it).
    FasterWithinMargin,
    SlowerWithinMargin,
    /// The 90 % interval lies inside 1 ± margin: no change larger than the margin.
    Equivalent,
    /// Neither significant nor shown equivalent: more data would tell.
    Inconclusive,
    /// Inconclusive because the test cannot reach significance with this few
    /// rounds, runs or samples, however large the change.
    TooFew,
}

impl Verdict {
    /// Every verdict, in the order [`verdict`] considers them.
    pub const ALL: [Verdict; 7] = [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Equivalent,
        Verdict::FasterWithinMargin,
        Verdict::SlowerWithinMargin,
        Verdict::TooFew,
        Verdict::Inconclusive,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::FasterWithinMargin => "faster-within-margin",
            Verdict::SlowerWithinMargin => "slower-within-margin",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::TooFew => "too-few",
        }
    }

    /// The verdict in words, with what it rests on: "slower, +5.2%",
    /// "slower, +1.0%, within ±1%", "equivalent within ±1%", "inconclusive",
    /// "inconclusive: too few rounds for the test (p ≥ 0.0625 with 5 rounds); …".
    pub fn words(self, ratio: f64, margin: f64, power: &Power) -> String {
        let change = format!("{:+.1}%", (ratio - 1.0) * 100.0);
        let margin = format!("±{}%", margin * 100.0);
        match self {
            Verdict::Faster => format!("faster, {change}"),
            Verdict::Slower => format!("slower, {change}"),
            Verdict::FasterWithinMargin => format!("faster, {change}, within {margin}"),
            Verdict::SlowerWithinMargin => format!("slower, {change}, within {margin}"),
            Verdict::Equivalent => format!("equivalent within {margin}"),
            Verdict::Inconclusive => "inconclusive".into(),
            Verdict::TooFew => format!(
                "inconclusive: too few {0} for the test (p ≥ {1} with {2} {0}); \
                 run again with {3} {4} or more",
                power.what, power.min_p, power.n, power.flag, power.needs
            ),
        }
    }
}

/// How small a p-value the test of a comparison can give at all, and how
/// much data it would need to reach the significance level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Power {
    /// The smallest p-value the test can reach with this data (all signs
    /// alike for the sign-flip test; complete separation for the rank test).
    pub min_p: f64,
    /// Rounds, runs or samples the test had.
    pub n: usize,
    /// What `n` counts: "rounds", "runs", "samples".
    pub what: &'static str,
    /// The option that sets it: "--rounds", "--runs", "--samples".
    pub flag: &'static str,
    /// The fewest the test needs to be able to reach the level.
    pub needs: usize,
}

impl Power {
    /// The exact sign-flip test on `n` paired values: at best 2 of the 2ⁿ
    /// sign patterns are as extreme as the data.
    pub fn sign_flip(n: usize, alpha: f64, what: &'static str, flag: &'static str) -> Self {
        let min_p = |n: usize| 2.0 / (1u64 << n.min(62)) as f64;
        Power {
            min_p: min_p(n),
            n,
            what,
            flag,
            needs: (1..62).find(|&k| min_p(k) < alpha).unwrap_or(62),
        }
    }

    /// The Mann–Whitney test of `n1` against `n2` samples: the p-value of
    /// complete separation.
    pub fn rank_test(n1: usize, n2: usize, alpha: f64) -> Self {
        let separated = |n1: usize, n2: usize| {
            let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
            let b: Vec<f64> = (0..n2).map(|i| (n1 + i) as f64).collect();
            mann_whitney_p(&a, &b)
        };
        Power {
            min_p: separated(n1, n2),
            n: n1.min(n2),
            what: "samples",
            flag: "--samples",
            needs: (2..64).find(|&k| separated(k, k) < alpha).unwrap_or(64),
        }
    }
}

/// The verdict for a time-like quantity (smaller is better). Significant
/// means the adjusted p below `alpha` and the 95 % interval excluding 1.
/// In order: significant and the ratio beyond 1 ± `margin` → slower/faster;
/// the 90 % interval within 1 ± `margin` → equivalent; significant (within
/// the margin) → slower/faster within the margin; a test that cannot reach
/// `alpha` with this data (`power.min_p ≥ alpha`) → too few; else inconclusive.
pub fn verdict(r: &RatioCi, adjusted_p: f64, alpha: f64, margin: f64, power: &Power) -> Verdict {
    let (above, below) = (r.ci95.0 > 1.0, r.ci95.1 < 1.0);
    let significant = adjusted_p < alpha && (above || below);
    if significant && above && r.ratio > 1.0 + margin {
        Verdict::Slower
    } else if significant && below && r.ratio < 1.0 - margin {
        Verdict::Faster
    } else if r.ci90.0 >= 1.0 - margin && r.ci90.1 <= 1.0 + margin {
        Verdict::Equivalent
    } else if significant {
        if above {
            Verdict::SlowerWithinMargin
        } else {
            Verdict::FasterWithinMargin
        }
    } else if power.min_p >= alpha {
        Verdict::TooFew
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test that could have reached any p-value.
    const POWERFUL: Power = Power {
        min_p: 0.0,
        n: 20,
        what: "rounds",
        flag: "--rounds",
        needs: 6,
    };

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
    fn t_quantiles_match_published_tables_beyond_19_degrees_of_freedom() {
        // NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2
        // (upper critical values, three decimals): (df, t(0.975), t(0.95)).
        let table = [
            (1.0, 12.706, 6.314),
            (2.0, 4.303, 2.920),
            (5.0, 2.571, 2.015),
            (10.0, 2.228, 1.812),
            (19.0, 2.093, 1.729),
            (20.0, 2.086, 1.725),
            (25.0, 2.060, 1.708),
            (30.0, 2.042, 1.697),
            (40.0, 2.021, 1.684),
            (60.0, 2.000, 1.671),
            (100.0, 1.984, 1.660),
        ];
        for (df, t975, t95) in table {
            assert!((t_quantile(0.975, df) - t975).abs() < 5e-4, "df {df}");
            assert!((t_quantile(0.95, df) - t95).abs() < 5e-4, "df {df}");
        }
        // Closed forms give the exact values: df 1 is Cauchy (tan(π(p − ½))), and
        // for df 2, t = (2p − 1)·sqrt(2 / (4p(1 − p))).
        for p in [0.95, 0.975] {
            let cauchy = (std::f64::consts::PI * (p - 0.5)).tan();
            let df2 = (2.0 * p - 1.0) * (2.0 / (4.0 * p * (1.0 - p))).sqrt();
            assert!((t_quantile(p, 1.0) - cauchy).abs() < 1e-12);
            assert!((t_quantile(p, 2.0) - df2).abs() < 1e-12);
        }
        // 1000 degrees of freedom: the expansion z + (z³ + z)/4ν + (5z⁵ + 16z³ + 3z)/96ν²
        // (Abramowitz & Stegun 26.7.5) around z = 1.959963984540054 gives 1.9623391.
        assert!((t_quantile(0.975, 1000.0) - 1.962_339_1).abs() < 1e-6);
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
        assert_eq!(
            verdict(&r, p, 0.05, 0.01, &POWERFUL),
            Verdict::Slower,
            "{r:?} p={p}"
        );
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
        assert_eq!(verdict(&r, p, 0.05, 0.01, &POWERFUL), Verdict::Slower);
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
        // log-ratios ln(1.1), ln(0.9), ln(1.0): mean m, sd s by hand; t(0.975, 2) =
        // 0.95·sqrt(2 / 0.0975) = 4.302652729749464 (the closed form for 2 degrees of freedom).
        let (r, p) = paired_log_ratio(&[1.0, 1.0, 1.0], &[1.1, 0.9, 1.0]);
        let d = [1.1f64.ln(), 0.9f64.ln(), 0.0];
        let m = d.iter().sum::<f64>() / 3.0;
        let s = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((r.ci95.0 - (m - 4.302_652_729_749_464 * s / 3f64.sqrt()).exp()).abs() < 1e-12);
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
        assert_eq!(
            verdict(&r, 0.001, 0.05, 0.01, &POWERFUL),
            Verdict::Equivalent
        );
        let r = RatioCi {
            ratio: 1.02,
            ci95: (1.01, 1.03),
            ci90: (1.012, 1.028),
        };
        assert_eq!(verdict(&r, 0.001, 0.05, 0.01, &POWERFUL), Verdict::Slower);
    }

    #[test]
    fn tight_equal_samples_are_equivalent() {
        let a: Vec<f64> = (0..21).map(|i| 100.0 + (i % 3) as f64 * 0.01).collect();
        let r = ratio_of_medians(&a, &a, 3, 2000);
        assert_eq!(
            verdict(&r, mann_whitney_p(&a, &a), 0.05, 0.01, &POWERFUL),
            Verdict::Equivalent
        );
    }

    #[test]
    fn every_combination_gets_its_own_words() {
        let ci = |ratio: f64, lo: f64, hi: f64| RatioCi {
            ratio,
            ci95: (lo, hi),
            ci90: (lo + (ratio - lo) / 6.0, hi - (hi - ratio) / 6.0),
        };
        let judge = |r: &RatioCi, p: f64, power: &Power| {
            let v = verdict(r, p, 0.05, 0.01, power);
            (v, v.words(r.ratio, 0.01, power))
        };
        // The run: significant, interval excludes 1, but +1.0 % is not beyond ±1 %.
        let r = ci(1.010, 1.006, 1.014);
        assert_eq!(
            judge(&r, 0.0039, &POWERFUL),
            (
                Verdict::SlowerWithinMargin,
                "slower, +1.0%, within ±1%".into()
            )
        );
        let r = ci(0.992, 0.985, 0.999);
        assert_eq!(judge(&r, 0.01, &POWERFUL).0, Verdict::FasterWithinMargin);
        let r = ci(0.95, 0.93, 0.97);
        assert_eq!(
            judge(&r, 0.001, &POWERFUL),
            (Verdict::Faster, "faster, -5.0%".into())
        );
        // Wide interval, no significance, a test that could have been: inconclusive.
        let r = ci(1.02, 0.95, 1.09);
        assert_eq!(
            judge(&r, 0.4, &POWERFUL),
            (Verdict::Inconclusive, "inconclusive".into())
        );
        // The 5 blocks: far from 1, but the sign-flip test cannot go below 0.0625.
        let five = Power::sign_flip(5, 0.05, "rounds", "--rounds");
        assert_eq!((five.min_p, five.needs), (0.0625, 6));
        let r = ci(1.815, 1.772, 1.860);
        assert_eq!(
            judge(&r, 0.125, &five),
            (
                Verdict::TooFew,
                "inconclusive: too few rounds for the test (p ≥ 0.0625 with 5 rounds); \
                 run again with --rounds 6 or more"
                    .into()
            )
        );
        // Equivalence needs no power from the test.
        let r = ci(1.0, 0.995, 1.005);
        assert_eq!(judge(&r, 1.0, &five).0, Verdict::Equivalent);
    }

    #[test]
    fn the_rank_test_has_no_power_with_two_samples_a_side() {
        // Complete separation of 2 and 2 values: p = 0.2453 (normal approximation).
        let two = Power::rank_test(2, 2, 0.05);
        assert!(two.min_p > 0.05 && two.needs > 2, "{two:?}");
        assert!(Power::rank_test(11, 11, 0.05).min_p < 0.001);
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

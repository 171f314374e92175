//! Comparing paired series, values taken round by round in interleaved
//! rounds: the geometric mean of the per-round ratios with t intervals on the
//! log-ratios and the sign-flip permutation test (exact up to 20 rounds, from
//! random sign patterns beyond), and block medians to cut long series (a
//! `time` run's, a fleet's hosts) into 20 blocks. Drift between rounds
//! cancels because each ratio compares values taken in the same round.
//!
//! Independent series are `stats::unpaired`'s; what a ratio and a p-value
//! conclude is `stats::verdict`'s.

use super::ci::RatioCi;

/// The `p` quantile of Student's t distribution with `df` degrees of freedom
/// (`statrs`' inverse of the regularized incomplete beta function: exact to
/// about 1e-14 for any `df`, checked against published tables in the tests).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df)
        .expect("t distribution with positive degrees of freedom")
        .inverse_cdf(p)
}

/// Most rounds the sign-flip test enumerates exactly (2^rounds patterns);
/// beyond, it draws [`SIGN_FLIP_DRAWS`] patterns at random (fixed seed).
/// `time`'s blocks and a fleet's hosts are cut to this many.
pub const MAX_ROUNDS: usize = 20;

/// Most rounds a run with configurations takes (`--rounds`).
pub const MOST_ROUNDS: usize = 1000;

/// Random sign patterns of the sign-flip test beyond [`MAX_ROUNDS`] pairs:
/// the p-value's own error is then below ±0.004 at p = 0.05 (95 %), and
/// it cannot go below 1 ÷ (draws + 1).
pub const SIGN_FLIP_DRAWS: usize = 20_000;

/// Seed of those draws: the same data give the same p-value.
const SIGN_FLIP_SEED: u64 = 0x5169_f11b_0000_0025;

/// Paired comparison of per-round values (two rounds or more, same length):
/// the geometric mean of the per-round ratios candidate ÷ baseline, t
/// intervals on the log-ratios (95 % and 90 %), and the two-sided sign-flip
/// permutation p-value of their mean: exact up to [`MAX_ROUNDS`] rounds,
/// from [`SIGN_FLIP_DRAWS`] random sign patterns beyond. Drift between
/// rounds cancels because each ratio compares values taken in the same round.
pub fn paired_log_ratio(baseline: &[f64], candidate: &[f64]) -> (RatioCi, f64) {
    let ci = paired_log_ratio_ci(baseline, candidate);
    let d = log_ratios(baseline, candidate);
    (ci, sign_flip_p(&d))
}

/// The two-sided sign-flip p-value of the mean of `d`: the share of sign
/// patterns whose sum is at least as far from 0 as the observed one.
fn sign_flip_p(d: &[f64]) -> f64 {
    let n = d.len();
    if n > MAX_ROUNDS {
        return drawn_sign_flip_p(d, SIGN_FLIP_DRAWS);
    }
    let observed = observed_sum(d);
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
    extreme as f64 / (1u64 << n) as f64
}

/// |Σ d|, a hair smaller so that patterns equal to it up to rounding count as extreme.
fn observed_sum(d: &[f64]) -> f64 {
    d.iter().sum::<f64>().abs() - 1e-12 * d.iter().map(|x| x.abs()).sum::<f64>()
}

/// The sign-flip p-value from `draws` random sign patterns (fixed seed):
/// (1 + as extreme) ÷ (1 + draws), a valid p-value (the observed pattern
/// counts as one of the draws).
fn drawn_sign_flip_p(d: &[f64], draws: usize) -> f64 {
    let observed = observed_sum(d);
    let mut rng = crate::rng::SplitMix64::new(SIGN_FLIP_SEED);
    let mut extreme = 0usize;
    for _ in 0..draws {
        let mut sum = 0.0;
        for chunk in d.chunks(64) {
            let bits = rng.next_u64();
            for (i, x) in chunk.iter().enumerate() {
                sum += if bits >> i & 1 == 1 { -x } else { *x };
            }
        }
        extreme += usize::from(sum.abs() >= observed);
    }
    (1 + extreme) as f64 / (1 + draws) as f64
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

/// ln(candidate ÷ baseline) round by round, over the rounds both have (two or more).
fn log_ratios(baseline: &[f64], candidate: &[f64]) -> Vec<f64> {
    let n = baseline.len().min(candidate.len());
    assert!(n >= 2, "paired comparison needs two rounds or more");
    (0..n).map(|i| (candidate[i] / baseline[i]).ln()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::stats::verdict::{POWERFUL, Verdict, verdict};

    #[test]
    fn block_medians_keep_order_and_size() {
        let v: Vec<f64> = (0..50).map(f64::from).collect();
        let b = block_medians(&v);
        assert_eq!(b.len(), 20);
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(block_medians(&[1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]);
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

    use crate::rng::log_normal_sample as sample;

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
    fn beyond_twenty_rounds_the_sign_flip_test_keeps_its_false_positive_rate() {
        // A/A runs of 30 and 60 rounds with drift between rounds: p < 0.05 in
        // about 5 % of runs (fewer draws than the real test's, to keep the
        // test quick: the p-value is valid for any number of draws); a 3 %
        // difference over 30 rounds of 2 % noise is found.
        let mut rng = SplitMix64::new(2025);
        let trials = 400;
        for rounds in [30, 60] {
            let false_positives = (0..trials)
                .filter(|_| {
                    let drift = sample(&mut rng, rounds, 1.0);
                    let base: Vec<f64> = drift.iter().map(|d| 100.0 * d).collect();
                    let same: Vec<f64> = sample(&mut rng, rounds, 1.0)
                        .iter()
                        .zip(&drift)
                        .map(|(n, d)| 100.0 * d * n.powf(0.4))
                        .collect();
                    let d = log_ratios(&base, &same);
                    drawn_sign_flip_p(&d, 1000) < 0.05
                })
                .count();
            assert!(
                (trials * 2 / 100..=trials * 8 / 100).contains(&false_positives),
                "{rounds} rounds: {false_positives} of {trials}"
            );
        }
        let base = sample(&mut rng, 30, 100.0);
        let slower: Vec<f64> = base.iter().map(|b| b * 1.03).collect();
        let noisy: Vec<f64> = slower
            .iter()
            .zip(sample(&mut rng, 30, 1.0))
            .map(|(s, n)| s * n.powf(0.4))
            .collect();
        let (r, p) = paired_log_ratio(&base, &noisy);
        assert!(p <= 1.0 / 1000.0 && r.ci95.0 > 1.0, "{r:?} p = {p}");
        // The same data, the same p (the draws' seed is fixed).
        assert_eq!(paired_log_ratio(&base, &noisy).1, p);
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
}

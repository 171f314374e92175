//! Comparing paired series, values taken round by round in interleaved
//! rounds: the geometric mean of the per-round ratios with t intervals on the
//! log-ratios and the exact sign-flip permutation test, and block medians to
//! bring longer series within the exact test's reach. Drift between rounds
//! cancels because each ratio compares values taken in the same round.
//!
//! Independent series are `stats::unpaired`'s; what a ratio and a p-value
//! conclude is `stats::verdict`'s.

use super::verdict::RatioCi;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
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

    use crate::stats::rng::log_normal_sample as sample;

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
}

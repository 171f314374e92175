//! The power of the t-tests osbench makes on log values, so that an
//! undecided verdict can say what would decide it: the probability that a
//! test rejects at a given true change ([`power`]), the smallest change it
//! detects with a given probability ([`min_detectable`]) and the fewest
//! replicates that detect a given change ([`replicates_needed`]); and, from
//! data, the change a paired comparison ([`paired_detectable`]) or another
//! run like this one ([`unpaired_detectable`]) would detect, which
//! `--target-mde` adds rounds or invocations until.
//!
//! The tests are `stats::replicates`' two-sample Student t with pooled
//! variance (saved runs, [`Design::Unpaired`]) and the one-sample t on
//! per-round or per-block log ratios ([`Design::Paired`]). The power is the
//! exact noncentral t one (Cohen 1988, ch. 2; the integral form of Owen
//! 1965): P(|Z + δ| > t_crit·√(V/df)) with Z standard normal and V ~ χ²_df,
//! integrated numerically over ln V, not the shifted-central-t approximation.
//!
//! Left out: the power of the sign-flip and rank tests. The sign-flip
//! test's p-value, not the t's, decides paired verdicts; the t's power
//! stands in for it, except that
//! [`paired_detectable`] calls nothing detectable while the sign-flip test
//! has too few pairs to keep up with it (its p-value is at least 2/2ⁿ).
//! Also left out: unequal variances (Welch) and one-sided tests.

use statrs::function::erf::erfc;
use statrs::function::gamma::ln_gamma;

use super::paired::t_quantile;

/// The design of a t-test on log values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Design {
    /// Two-sample Student t, variance pooled (compare of saved runs): replicates per side.
    Unpaired { baseline: usize, candidate: usize },
    /// One-sample t on per-round (or per-block) log ratios: n pairs.
    Paired { n: usize },
}

impl Design {
    /// The standard error of the estimated log effect in units of one
    /// value's spread: √(1/a + 1/b) unpaired, √(1/n) paired (the spread is
    /// then that of one pair's log ratio). Infinite with an empty side.
    pub fn se_factor(&self) -> f64 {
        match *self {
            Design::Unpaired {
                baseline,
                candidate,
            } => (1.0 / baseline as f64 + 1.0 / candidate as f64).sqrt(),
            Design::Paired { n } => (1.0 / n as f64).sqrt(),
        }
    }

    /// The degrees of freedom of the design's own test: a + b − 2, or n − 1.
    pub fn df(&self) -> f64 {
        match *self {
            Design::Unpaired {
                baseline,
                candidate,
            } => (baseline + candidate).saturating_sub(2) as f64,
            Design::Paired { n } => n.saturating_sub(1) as f64,
        }
    }
}

/// Intervals of the integration over ln V (Simpson's rule; even).
const STEPS: usize = 2000;

/// Beyond this many degrees of freedom the variance estimate is taken as exact (a z-test).
const NORMAL_DF: f64 = 1e7;

/// Probability that the two-sided test at level `alpha` rejects when the true log effect is `log_effect`,
/// the spread of one replicate's log value is `log_sd` and the t statistic has `df` degrees of freedom.
/// Exact: noncentral t, computed by numerical integration over the chi-square of the variance estimate
/// (P(|Z + δ| > t_crit·sqrt(V/df)), V ~ χ²_df), not the shifted-central-t approximation.
///
/// For [`Design::Paired`], `log_sd` is the spread of one pair's log ratio.
/// Edge cases: no test (`df` not above 0, `alpha` not above 0, or an
/// input not a number or `log_sd` negative) has power 0; `alpha` of 1 or
/// more rejects always (1); with `log_sd` 0 the test rejects any effect but
/// 0 (power 1) and rejects no effect with probability `alpha`.
pub fn power(design: Design, df: f64, log_sd: f64, log_effect: f64, alpha: f64) -> f64 {
    let se = design.se_factor();
    if [df, log_sd, log_effect, alpha].iter().any(|x| x.is_nan())
        || df <= 0.0
        || alpha <= 0.0
        || log_sd < 0.0
        || !se.is_finite()
    {
        return 0.0;
    }
    if alpha >= 1.0 {
        return 1.0;
    }
    if log_effect == 0.0 {
        return alpha;
    }
    let delta = log_effect.abs() / (log_sd * se);
    if !delta.is_finite() {
        return 1.0;
    }
    standardized_power(df, delta, alpha)
}

/// The two-sided power at noncentrality `delta` (≥ 0, finite), `df` > 0, 0 < `alpha` < 1.
fn standardized_power(df: f64, delta: f64, alpha: f64) -> f64 {
    let crit = if df > NORMAL_DF {
        z_quantile(1.0 - alpha / 2.0)
    } else {
        t_quantile(1.0 - alpha / 2.0, df)
    };
    // Given V = v, the test rejects when |Z + δ| > s, s = crit·√(v/df).
    let reject = |s: f64| normal_upper(s - delta) + normal_upper(s + delta);
    if df > NORMAL_DF {
        return reject(crit).clamp(0.0, 1.0);
    }
    // x = ln V: its density v·f_χ²(v) = exp(k/2·x − v/2 − (k/2)·ln 2 − lnΓ(k/2))
    // is smooth on the whole line for any k > 0 and vanishes fast at both ends.
    let half = df / 2.0;
    let norm = half * std::f64::consts::LN_2 + ln_gamma(half);
    let density = |x: f64| (half * x - x.exp() / 2.0 - norm).exp();
    let (lo, hi) = (df.ln() + tail(df, -1.0), df.ln() + tail(df, 1.0));
    let h = (hi - lo) / STEPS as f64;
    let f = |i: usize| {
        let x = lo + h * i as f64;
        density(x) * reject(crit * (x.exp() / df).sqrt())
    };
    let inner: f64 = (1..STEPS)
        .map(|i| if i % 2 == 1 { 4.0 * f(i) } else { 2.0 * f(i) })
        .sum();
    ((f(0) + inner + f(STEPS)) * h / 3.0).clamp(0.0, 1.0)
}

/// Where to cut the integral over ln V, as y = ln(V/k) below 0 (`side` −1)
/// or above (+1): Chernoff's bound P(V ≤ or ≥ k·eʸ) ≤ exp(k/2·(1 + y − eʸ))
/// is then below e⁻³⁰ (1e-13), by bisection on y.
fn tail(k: f64, side: f64) -> f64 {
    let exponent = |y: f64| k / 2.0 * (1.0 + y - y.exp());
    let mut far = side;
    while exponent(far) > -30.0 {
        far *= 2.0;
    }
    let mut near = 0.0;
    for _ in 0..60 {
        let mid = (near + far) / 2.0;
        if exponent(mid) > -30.0 {
            near = mid;
        } else {
            far = mid;
        }
    }
    far
}

/// P(Z > x) for a standard normal Z.
fn normal_upper(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

/// The `p` quantile of the standard normal.
fn z_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// The smallest |log effect| detected with probability `power` (0.8 in osbench) — bisection on `power()`.
///
/// 0 when `power` is at most `alpha` (or `log_sd` is 0 and the test
/// exists); infinite when no effect is detected that often: no test (see
/// [`power()`]) or `power` of 1 or more.
pub fn min_detectable(design: Design, df: f64, log_sd: f64, alpha: f64, power: f64) -> f64 {
    let can_test = self::power(design, df, 1.0, 1.0, alpha) > 0.0;
    if !can_test || log_sd.is_nan() || log_sd < 0.0 || power.is_nan() || power >= 1.0 {
        return f64::INFINITY;
    }
    if power <= alpha.min(1.0) || log_sd == 0.0 {
        return 0.0;
    }
    // Bisection on the noncentrality δ; the effect is δ·sd·√(1/a + 1/b).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while standardized_power(df, hi, alpha) < power {
        (lo, hi) = (hi, hi * 2.0);
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if standardized_power(df, mid, alpha) < power {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    hi * log_sd * design.se_factor()
}

/// Fewest replicates a side (equal sides; Paired: pairs) whose test, with its own df (2n−2, or n−1 paired),
/// detects `log_effect` with probability `power`; None beyond `max`.
///
/// The smallest design considered has 2 (its test needs a degree of
/// freedom); power grows with n, so the answer is found by doubling then
/// bisection.
pub fn replicates_needed(
    paired: bool,
    log_sd: f64,
    log_effect: f64,
    alpha: f64,
    power: f64,
    max: usize,
) -> Option<usize> {
    let design = |n: usize| {
        if paired {
            Design::Paired { n }
        } else {
            Design::Unpaired {
                baseline: n,
                candidate: n,
            }
        }
    };
    let detects = |n: usize| {
        let d = design(n);
        self::power(d, d.df(), log_sd, log_effect, alpha) >= power
    };
    if max < 2 {
        return None;
    }
    // Doubling: the first power of two (from 2) that detects, capped at max.
    let (mut lo, mut hi) = (1usize, 2usize);
    while !detects(hi) {
        if hi >= max {
            return None;
        }
        (lo, hi) = (hi, (hi * 2).min(max));
    }
    // lo does not detect (or is 1), hi does: bisect.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if detects(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The smallest relative change (exp(effect) − 1: 0.02 is 2 %) that the
/// paired t on the per-round (or per-block) log ratios of `candidate` to
/// `baseline` detects with probability `power` at level `alpha`, their
/// spread taken from the values themselves; `None` with fewer than two
/// pairs or a value not positive.
///
/// Infinite while the sign-flip test that paired verdicts rest on has too
/// few pairs to keep the t's promise: until its smallest p-value, 2/2ⁿ, is a
/// quarter of `alpha` or less (8 pairs at 0.05). Simulated with normal log
/// ratios and the t's 80 % effect planted, it rejected in 61 % of trials with
/// 6 pairs, 78 % with 8, 79 % with 10 and 80 % with 12 (2000 trials each).
pub fn paired_detectable(
    baseline: &[f64],
    candidate: &[f64],
    alpha: f64,
    power: f64,
) -> Option<f64> {
    let n = baseline.len().min(candidate.len());
    let d: Vec<f64> = (0..n).map(|i| (candidate[i] / baseline[i]).ln()).collect();
    let sd = sample_sd(&d)?;
    if !sign_flip_keeps_promise(n, alpha) {
        return Some(f64::INFINITY);
    }
    let design = Design::Paired { n };
    Some(self::min_detectable(design, design.df(), sd, alpha, power).exp_m1())
}

/// Whether `n` pairs are enough for the sign-flip test that paired verdicts
/// rest on to keep the t's power promise at level `alpha`: its smallest
/// p-value, 2/2ⁿ, a quarter of `alpha` or less (see [`paired_detectable`]).
pub fn sign_flip_keeps_promise(n: usize, alpha: f64) -> bool {
    super::verdict::Power::sign_flip(n, alpha, "rounds", "--rounds").min_p <= alpha / 4.0
}

/// The fewest pairs for which [`sign_flip_keeps_promise`] holds (at most 62).
pub fn sign_flip_pairs_needed(alpha: f64) -> usize {
    (2..62)
        .find(|&n| sign_flip_keeps_promise(n, alpha))
        .unwrap_or(62)
}

/// The same for two separately saved runs of `k` replicates each, a
/// side's spread that of `values` (one run's invocation medians): the
/// change a comparison with another run like it would detect.
pub fn unpaired_detectable(values: &[f64], alpha: f64, power: f64) -> Option<f64> {
    let k = values.len();
    if values.iter().any(|&v| v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let design = Design::Unpaired {
        baseline: k,
        candidate: k,
    };
    Some(self::min_detectable(design, design.df(), sample_sd(&logs)?, alpha, power).exp_m1())
}

/// The sample standard deviation of `x`; `None` with fewer than two values
/// or one not finite (a ratio of a value not positive).
fn sample_sd(x: &[f64]) -> Option<f64> {
    if x.len() < 2 || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(super::summary::stddev(x, super::summary::mean(x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::stats::paired::paired_log_ratio_ci;
    use crate::stats::replicates::compare_replicates;

    use crate::rng::standard_normal as normal;

    fn unpaired(baseline: usize, candidate: usize) -> Design {
        Design::Unpaired {
            baseline,
            candidate,
        }
    }

    /// A unit design: `log_effect` ÷ `log_sd` is the noncentrality itself.
    const UNIT: Design = Design::Paired { n: 1 };

    #[test]
    fn power_matches_the_noncentral_t_distribution() {
        // scipy 1.17: t = stats.t.ppf(1 − α/2, df);
        // stats.nct.sf(t, df, δ) + stats.nct.cdf(−t, df, δ).
        let table = [
            (8.0, 2.0, 0.05, 0.421_051_938_048_382_1),
            (8.0, 3.0, 0.05, 0.748_017_092_229_476_7),
            (2.0, 3.0, 0.05, 0.387_400_128_525_971_05),
            (1.0, 10.0, 0.05, 0.567_306_566_401_922),
            (19.0, 2.5, 0.0167, 0.467_663_538_983_239),
            (30.0, 1.0, 0.01, 0.051_788_411_961_930_556),
            (8.0, -2.0, 0.05, 0.421_051_938_048_382_1),
        ];
        for (df, delta, alpha, expected) in table {
            let p = power(UNIT, df, 1.0, delta, alpha);
            assert!(
                (p - expected).abs() < 1e-7,
                "df {df} δ {delta}: {p} vs {expected}"
            );
        }
        // By hand: 5 against 5 runs, log sd 0.05, a true change of ln ratio 0.1:
        // δ = 0.1 / (0.05·√(1/5 + 1/5)) = 3.1623, df 8 → 0.79054 (scipy's nct).
        let p = power(unpaired(5, 5), 8.0, 0.05, 0.1, 0.05);
        assert!((p - 0.790_542_377_972_571_5).abs() < 1e-7, "{p}");
    }

    #[test]
    fn with_no_effect_the_integral_is_the_level() {
        // Not 1e5: statrs' t quantile, the tests' own critical value, is
        // 7e-6 off there (1.9599809 for scipy's 1.9599877 at 0.975).
        for df in [1.0, 2.0, 3.5, 5.0, 30.0, 1000.0, 1e8] {
            for alpha in [0.05, 0.0167, 0.5] {
                let p = standardized_power(df, 0.0, alpha);
                assert!((p - alpha).abs() < 1e-8, "df {df} α {alpha}: {p}");
            }
        }
    }

    #[test]
    fn min_detectable_matches_a_root_of_the_noncentral_t_power() {
        // scipy 1.17: brentq(lambda d: power(df, d, α) − 0.8) · sd · se_factor, sd = 0.05.
        let table = [
            (unpaired(5, 5), 8.0, 0.05, 0.101_221_966_969_227_14),
            (unpaired(3, 8), 9.0, 0.05, 0.106_615_577_208_455_1),
            (
                Design::Paired { n: 10 },
                9.0,
                0.0167,
                0.061_152_510_552_951_8,
            ),
            (Design::Paired { n: 6 }, 5.0, 0.05, 0.071_727_239_102_020_04),
            (UNIT, 2.0, 0.05, 0.282_674_463_309_856_35),
        ];
        for (design, df, alpha, expected) in table {
            let m = min_detectable(design, df, 0.05, alpha, 0.8);
            assert!((m - expected).abs() < 1e-7, "{design:?}: {m} vs {expected}");
            let p = power(design, df, 0.05, m, alpha);
            assert!((p - 0.8).abs() < 1e-9, "{design:?}: {p}");
        }
    }

    /// Rejection rate of `compare_replicates` at level `alpha` when the
    /// candidate is truly exp(±effect) times the baseline.
    fn unpaired_rate(
        rng: &mut SplitMix64,
        kb: usize,
        kc: usize,
        sd: f64,
        effect: f64,
        alpha: f64,
    ) -> f64 {
        let trials = 3000;
        let mut side = |k: usize, shift: f64| -> Vec<f64> {
            (0..k)
                .map(|_| 100.0 * (shift + sd * normal(rng)).exp())
                .collect()
        };
        let rejected = (0..trials)
            .filter(|i| {
                let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
                let b = side(kb, 0.0);
                let c = side(kc, sign * effect);
                compare_replicates(&b, &c, None).unwrap().p_value < alpha
            })
            .count();
        rejected as f64 / trials as f64
    }

    #[test]
    fn unpaired_tests_detect_the_min_detectable_effect_80_percent_of_the_time() {
        let mut rng = SplitMix64::new(0x9057);
        let sd = 0.04;
        for (kb, kc) in [(2, 2), (3, 3), (5, 5), (3, 8)] {
            for alpha in [0.05, 0.0167] {
                let design = unpaired(kb, kc);
                let mde = min_detectable(design, design.df(), sd, alpha, 0.8);
                let rate = unpaired_rate(&mut rng, kb, kc, sd, mde, alpha);
                assert!(
                    (0.75..=0.85).contains(&rate),
                    "{kb} v {kc}, α {alpha}: {rate}"
                );
            }
        }
    }

    /// Rejection rate of the paired t on `n` rounds' log ratios at level
    /// `alpha`: rounds drift by 10 %, each side adds noise `sd` (a pair's
    /// log ratio has spread sd·√2), the candidate is truly exp(effect) times.
    fn paired_rate(rng: &mut SplitMix64, n: usize, sd: f64, effect: f64, alpha: f64) -> f64 {
        let trials = 3000;
        let crit = t_quantile(1.0 - alpha / 2.0, (n - 1) as f64);
        let rejected = (0..trials)
            .filter(|_| {
                let drift: Vec<f64> = (0..n).map(|_| 0.1 * normal(rng)).collect();
                let b: Vec<f64> = drift
                    .iter()
                    .map(|d| 100.0 * (d + sd * normal(rng)).exp())
                    .collect();
                let c: Vec<f64> = drift
                    .iter()
                    .map(|d| 100.0 * (d + effect + sd * normal(rng)).exp())
                    .collect();
                let d: Vec<f64> = b.iter().zip(&c).map(|(b, c)| (c / b).ln()).collect();
                let mean = d.iter().sum::<f64>() / n as f64;
                let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                let reject = mean.abs() / (var / n as f64).sqrt() > crit;
                if alpha == 0.05 {
                    // The same decision as the interval osbench prints.
                    let ci = paired_log_ratio_ci(&b, &c).ci95;
                    assert_eq!(reject, ci.0 > 1.0 || ci.1 < 1.0);
                }
                reject
            })
            .count();
        rejected as f64 / trials as f64
    }

    #[test]
    fn paired_tests_detect_the_min_detectable_effect_80_percent_of_the_time() {
        let mut rng = SplitMix64::new(0x9058);
        let sd = 0.03;
        let pair_sd = sd * std::f64::consts::SQRT_2;
        for n in [6, 10, 20] {
            for alpha in [0.05, 0.0167] {
                let design = Design::Paired { n };
                let mde = min_detectable(design, design.df(), pair_sd, alpha, 0.8);
                let rate = paired_rate(&mut rng, n, sd, mde, alpha);
                assert!(
                    (0.75..=0.85).contains(&rate),
                    "{n} pairs, α {alpha}: {rate}"
                );
            }
        }
    }

    #[test]
    fn replicates_needed_is_the_first_n_whose_min_detectable_effect_is_small_enough() {
        let design = |paired: bool, n: usize| {
            if paired {
                Design::Paired { n }
            } else {
                unpaired(n, n)
            }
        };
        for paired in [false, true] {
            let mut last = 0;
            for effect in [0.2, 0.1, 0.05, 0.03, 0.02, 0.01] {
                let n = replicates_needed(paired, 0.04, effect, 0.05, 0.8, 10_000).unwrap();
                assert!(n >= last, "not monotone: {n} after {last}");
                last = n;
                let d = design(paired, n);
                assert!(min_detectable(d, d.df(), 0.04, 0.05, 0.8) <= effect);
                assert!(power(d, d.df(), 0.04, effect, 0.05) >= 0.8);
                if n > 2 {
                    let d = design(paired, n - 1);
                    assert!(min_detectable(d, d.df(), 0.04, 0.05, 0.8) > effect, "{n}");
                    assert!(power(d, d.df(), 0.04, effect, 0.05) < 0.8);
                }
            }
            // 0.01 with sd 0.04 needs dozens: not within 5.
            assert_eq!(replicates_needed(paired, 0.04, 0.01, 0.05, 0.8, 5), None);
        }
        // By hand: 5 against 5 detect 0.1 with probability 0.79 (above), 6 against 6 more.
        assert_eq!(replicates_needed(false, 0.05, 0.1, 0.05, 0.8, 100), Some(6));
    }

    #[test]
    fn detectable_changes_from_data() {
        // Log ratios ln 1.1, ln 0.9, ln 1.0, 0: their sd, 8 pairs.
        let (b, c) = ([1.0; 8], [1.1, 0.9, 1.0, 1.0, 1.1, 0.9, 1.0, 1.0]);
        let d: Vec<f64> = c.iter().map(|x: &f64| x.ln()).collect();
        let sd = sample_sd(&d).unwrap();
        let m = min_detectable(Design::Paired { n: 8 }, 7.0, sd, 0.05, 0.8);
        let got = paired_detectable(&b, &c, 0.05, 0.8).unwrap();
        assert!((got - m.exp_m1()).abs() < 1e-12, "{got}");
        // 7 pairs: the sign-flip test cannot go below p = 2/2⁷ = 0.0156 > 0.05/4.
        let seven = paired_detectable(&b[..7], &c[..7], 0.05, 0.8);
        assert_eq!(seven, Some(f64::INFINITY));
        // At 0.0167 (three comparisons), 9 pairs are needed (2/2⁹ ≤ 0.0167/4 < 2/2⁸).
        assert_eq!(paired_detectable(&b, &c, 0.0167, 0.8), Some(f64::INFINITY));
        assert_eq!(paired_detectable(&[1.0], &[1.0], 0.05, 0.8), None);
        assert_eq!(paired_detectable(&[1.0, 1.0], &[0.0, 1.0], 0.05, 0.8), None);
        // Three invocations: 3 against 3, df 4.
        let v = [100.0, 103.0, 98.0];
        let logs: Vec<f64> = v.iter().map(|x: &f64| x.ln()).collect();
        let m = min_detectable(unpaired(3, 3), 4.0, sample_sd(&logs).unwrap(), 0.05, 0.8);
        assert!((unpaired_detectable(&v, 0.05, 0.8).unwrap() - m.exp_m1()).abs() < 1e-12);
        assert_eq!(unpaired_detectable(&[100.0], 0.05, 0.8), None);
    }

    #[test]
    fn edge_cases_give_numbers_not_nan() {
        let d = unpaired(3, 3);
        // No spread: any effect is found, none is found as often as the level.
        assert_eq!(power(d, 4.0, 0.0, 0.01, 0.05), 1.0);
        assert_eq!(power(d, 4.0, 0.0, 0.0, 0.05), 0.05);
        assert_eq!(min_detectable(d, 4.0, 0.0, 0.05, 0.8), 0.0);
        assert_eq!(replicates_needed(false, 0.0, 0.01, 0.05, 0.8, 10), Some(2));
        // No degrees of freedom, no test.
        assert_eq!(power(d, 0.0, 0.05, 0.1, 0.05), 0.0);
        assert_eq!(min_detectable(d, 0.0, 0.05, 0.05, 0.8), f64::INFINITY);
        assert_eq!(power(Design::Paired { n: 0 }, 3.0, 0.05, 0.1, 0.05), 0.0);
        // Not numbers.
        assert_eq!(power(d, f64::NAN, 0.05, 0.1, 0.05), 0.0);
        assert_eq!(power(d, 4.0, f64::NAN, 0.1, 0.05), 0.0);
        assert_eq!(min_detectable(d, 4.0, f64::NAN, 0.05, 0.8), f64::INFINITY);
        assert_eq!(min_detectable(d, 4.0, 0.05, 0.05, f64::NAN), f64::INFINITY);
        // Promises the level already keeps, or none can.
        assert_eq!(min_detectable(d, 4.0, 0.05, 0.05, 0.04), 0.0);
        assert_eq!(min_detectable(d, 4.0, 0.05, 0.05, 1.0), f64::INFINITY);
        // No effect cannot be detected more often than the level.
        assert_eq!(replicates_needed(true, 0.05, 0.0, 0.05, 0.8, 100), None);
        assert_eq!(replicates_needed(true, 0.05, 0.1, 0.05, 0.8, 1), None);
        // Huge effects: power 1, no overflow.
        assert!((power(d, 4.0, 0.05, 50.0, 0.05) - 1.0).abs() < 1e-12);
        assert!(min_detectable(d, 1.0, 0.05, 0.001, 0.99).is_finite());
    }
}

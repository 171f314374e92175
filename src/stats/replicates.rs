//! Statistics at the level that is replicated: invocations (fresh osbench
//! processes) and separately stored runs, not the samples inside one of them.
//!
//! Samples of one invocation share everything fixed for that invocation (the
//! host's phase, the memory layout, the pages it got), so their spread says
//! nothing about where the next invocation lands. Following Kalibera & Jones
//! ("Rigorous Benchmarking in Reasonable Time", ISMM 2013), each replicate is
//! summarised by its median and the test is made on those values:
//!
//! - [`compare_replicates`]: two-sample Student t on the logs of the
//!   replicate values, with the variance pooled over both sides (the same case
//!   on the same host); when neither side has two replicates, the spread of
//!   earlier replicates of the same case ([`Prior`]), or no test at all.
//! - [`replicate_interval`]: the 95 % interval of one side's centre, a t
//!   interval on the logs of its replicate values (it covers both levels:
//!   each replicate's value carries its own within-replicate noise).
//! - [`round_interval`], [`geometric_centre`]: the same for one
//!   configuration of a run with rounds, the rounds' medians as replicates.
//! - [`spread_parts`]: how much of the spread is between replicates and how
//!   much within.
//!
//! Left out: a third level (boots). Invocations of one boot stand for the
//! boot; what a reboot changes is covered only when the sides' runs come
//! from several boots.

use super::ci::RatioCi;
use super::paired::t_quantile;
use super::summary::{mean, median, stddev};

/// The spread of single replicates known from elsewhere: log-scale sum of
/// squared deviations and its degrees of freedom (values of stored runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub sum_squares: f64,
    pub df: usize,
    /// How many stored runs it comes from, besides the ones compared.
    pub runs: usize,
}

impl Prior {
    /// The prior of `groups` of replicate values (each group a stored run's
    /// invocation medians), all taken as draws of one replicate of the case:
    /// the spread between runs is included, which errs on the wide side.
    /// `None` with fewer than two values or any not positive.
    pub fn from_runs(groups: &[Vec<f64>]) -> Option<Prior> {
        let all: Vec<f64> = groups.iter().flatten().copied().collect();
        let (ss, df) = log_sum_squares(&all)?;
        Some(Prior {
            sum_squares: ss,
            df,
            runs: groups.len(),
        })
    }

    /// The standard deviation of one replicate's log value.
    pub fn log_sd(&self) -> f64 {
        (self.sum_squares / self.df as f64).sqrt()
    }
}

/// Where the spread of a replicate test came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpreadSource {
    /// The sides' own replicates.
    Sides,
    /// Stored runs of the same case (one replicate a side).
    Prior(Prior),
}

/// A comparison of two sides' replicates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicateTest {
    /// Candidate ÷ baseline: the ratio of the geometric means of the replicate values.
    pub ci: RatioCi,
    /// Two-sided t-test p-value.
    pub p_value: f64,
    pub df: usize,
    /// Standard deviation of one replicate's log value (≈ its relative spread).
    pub log_sd: f64,
    pub source: SpreadSource,
}

/// Student's two-sample t-test on ln(values), variance pooled over both
/// sides; `prior` only when the sides have no degree of freedom of their
/// own (one replicate a side). `None` when no spread is known, or a value is
/// not positive.
pub fn compare_replicates(
    baseline: &[f64],
    candidate: &[f64],
    prior: Option<Prior>,
) -> Option<ReplicateTest> {
    if baseline.is_empty() || candidate.is_empty() {
        return None;
    }
    let (ssb, dfb) = log_sum_squares(baseline).unwrap_or((0.0, 0));
    let (ssc, dfc) = log_sum_squares(candidate).unwrap_or((0.0, 0));
    if [baseline, candidate]
        .iter()
        .any(|s| s.iter().any(|&v| v <= 0.0 || !v.is_finite()))
    {
        return None;
    }
    let (ss, df, source) = match (dfb + dfc, prior) {
        (0, Some(p)) if p.df > 0 => (p.sum_squares, p.df, SpreadSource::Prior(p)),
        (0, _) => return None,
        (df, _) => (ssb + ssc, df, SpreadSource::Sides),
    };
    let log_sd = (ss / df as f64).sqrt();
    let (kb, kc) = (baseline.len() as f64, candidate.len() as f64);
    let diff = log_mean(candidate) - log_mean(baseline);
    let se = log_sd * (1.0 / kb + 1.0 / kc).sqrt();
    let interval = |level: f64| {
        let t = t_quantile(0.5 + level / 2.0, df as f64);
        ((diff - t * se).exp(), (diff + t * se).exp())
    };
    let p_value = if se > 0.0 {
        2.0 * (1.0 - t_cdf((diff / se).abs(), df as f64))
    } else if diff == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(ReplicateTest {
        ci: RatioCi {
            ratio: diff.exp(),
            ci95: interval(0.95),
            ci90: interval(0.90),
        },
        p_value: p_value.clamp(0.0, 1.0),
        df,
        log_sd,
        source,
    })
}

/// The 95 % interval of `centre` (one side's estimate) from its `values`
/// (two or more replicates): exp(ln centre ± t·sd/√k) on the logs.
pub fn replicate_interval(centre: f64, values: &[f64]) -> Option<(f64, f64)> {
    let (ss, df) = log_sum_squares(values)?;
    let se = (ss / df as f64).sqrt() / (values.len() as f64).sqrt();
    let t = t_quantile(0.975, df as f64);
    let c = centre.ln();
    Some(((c - t * se).exp(), (c + t * se).exp()))
}

/// One configuration's round medians (or block medians) summed up as the
/// paired comparison sees them: their geometric mean and its 95 % t interval
/// on the logs. The ratio of two configurations' centres over the same
/// rounds is exactly the geometric mean of their per-round ratios, so the
/// centres printed beside a paired change agree with it. `None` with fewer
/// than two values or any not positive.
pub fn geometric_centre(values: &[f64]) -> Option<(f64, (f64, f64))> {
    log_sum_squares(values)?;
    let centre = log_mean(values).exp();
    Some((centre, replicate_interval(centre, values)?))
}

/// The 95 % interval of `centre` from per-round `values` (a run's round
/// medians of one configuration): [`replicate_interval`] on the logs, or a
/// plain t interval when some value is not positive (a cheap operation with
/// its overhead subtracted). Samples within a round share that round's
/// conditions, so the rounds, not the samples, are the replicates.
pub fn round_interval(centre: f64, values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    replicate_interval(centre, values).or_else(|| {
        let n = values.len() as f64;
        let half = t_quantile(0.975, n - 1.0) * stddev(values, mean(values)) / n.sqrt();
        Some((centre - half, centre + half))
    })
}

/// The spread between replicates and within them, as coefficients of
/// variation: of the replicates' medians, and the median of each
/// replicate's own CV. `groups` are the replicates' samples.
pub fn spread_parts(groups: &[&[f64]]) -> Option<(f64, f64)> {
    if groups.len() < 2 || groups.iter().any(|g| g.is_empty()) {
        return None;
    }
    let medians: Vec<f64> = groups.iter().map(|g| median(g)).collect();
    let cv = |v: &[f64]| {
        let m = mean(v);
        if v.len() < 2 || m == 0.0 {
            0.0
        } else {
            stddev(v, m) / m.abs()
        }
    };
    let within: Vec<f64> = groups.iter().map(|g| cv(g)).collect();
    Some((cv(&medians), median(&within)))
}

/// Sum of squared deviations of ln(values) and its degrees of freedom;
/// `None` with fewer than two values or any not positive.
fn log_sum_squares(values: &[f64]) -> Option<(f64, usize)> {
    if values.len() < 2 || values.iter().any(|&v| v <= 0.0 || !v.is_finite()) {
        return None;
    }
    let m = log_mean(values);
    let ss = values.iter().map(|v| (v.ln() - m).powi(2)).sum();
    Some((ss, values.len() - 1))
}

fn log_mean(values: &[f64]) -> f64 {
    values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64
}

/// Student's t cumulative distribution function (also the differential
/// profile's p-values, `stats::differential`).
pub(crate) fn t_cdf(t: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df)
        .expect("t distribution with positive degrees of freedom")
        .cdf(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    use crate::rng::standard_normal as normal;

    /// One invocation of a case whose true per-op cost is `truth`: an
    /// invocation-level random effect (sd `between`, log scale), then
    /// `samples` samples with noise `within`; its median is the replicate.
    fn invocation(rng: &mut SplitMix64, truth: f64, between: f64, within: f64) -> f64 {
        let effect = between * normal(rng);
        let samples: Vec<f64> = (0..11)
            .map(|_| truth * (effect + within * normal(rng)).exp())
            .collect();
        median(&samples)
    }

    fn side(rng: &mut SplitMix64, k: usize, truth: f64, between: f64) -> Vec<f64> {
        (0..k)
            .map(|_| invocation(rng, truth, between, 0.01))
            .collect()
    }

    #[test]
    fn the_ratio_interval_covers_the_true_ratio_over_invocation_effects() {
        // Known truth: the candidate is 3 % slower; invocations differ by
        // about 3 % (log sd), far more than the samples within one do.
        let mut rng = SplitMix64::new(24);
        for &(kb, kc) in &[(2, 2), (3, 3), (5, 5), (3, 8), (1, 4)] {
            let trials = 4000;
            let covered = (0..trials)
                .filter(|_| {
                    let b = side(&mut rng, kb, 100.0, 0.03);
                    let c = side(&mut rng, kc, 103.0, 0.03);
                    let t = compare_replicates(&b, &c, None).expect("spread known");
                    t.ci.ci95.0 <= 1.03 && 1.03 <= t.ci.ci95.1
                })
                .count();
            let rate = covered as f64 / trials as f64;
            assert!(rate >= 0.94, "{kb} vs {kc} invocations: coverage {rate}");
        }
    }

    #[test]
    fn a_a_comparisons_are_called_different_about_alpha_of_the_time() {
        let mut rng = SplitMix64::new(7);
        let trials = 4000;
        let false_calls = (0..trials)
            .filter(|_| {
                let b = side(&mut rng, 3, 100.0, 0.04);
                let c = side(&mut rng, 3, 100.0, 0.04);
                compare_replicates(&b, &c, None).unwrap().p_value < 0.05
            })
            .count();
        let rate = false_calls as f64 / trials as f64;
        assert!(
            (0.035..=0.065).contains(&rate),
            "false-positive rate {rate}"
        );
    }

    #[test]
    fn one_invocation_a_side_needs_a_prior_and_then_keeps_its_promise() {
        assert_eq!(compare_replicates(&[100.0], &[150.0], None), None);
        let mut rng = SplitMix64::new(99);
        let trials = 3000;
        let mut false_calls = 0;
        for _ in 0..trials {
            let history: Vec<Vec<f64>> = (0..8).map(|_| side(&mut rng, 1, 100.0, 0.05)).collect();
            let prior = Prior::from_runs(&history).unwrap();
            assert_eq!((prior.df, prior.runs), (7, 8));
            let (b, c) = (
                side(&mut rng, 1, 100.0, 0.05),
                side(&mut rng, 1, 100.0, 0.05),
            );
            let t = compare_replicates(&b, &c, Some(prior)).unwrap();
            assert!(matches!(t.source, SpreadSource::Prior(_)));
            false_calls += usize::from(t.p_value < 0.05);
        }
        let rate = false_calls as f64 / trials as f64;
        assert!(
            (0.035..=0.065).contains(&rate),
            "false-positive rate {rate}"
        );
    }

    #[test]
    fn the_sides_own_spread_wins_over_a_prior() {
        let prior = Prior::from_runs(&[vec![100.0, 200.0]]).unwrap();
        let t = compare_replicates(&[100.0, 101.0], &[110.0, 111.0], Some(prior)).unwrap();
        assert_eq!((t.source, t.df), (SpreadSource::Sides, 2));
        assert!(t.p_value < 0.01, "{t:?}");
    }

    #[test]
    fn matches_a_hand_worked_t_test() {
        // ln values: b = ln 100, ln 110; c = ln 120, ln 130. Pooled sd² =
        // (ss_b + ss_c) / 2; t = (mean_c − mean_b) / (sd · √(1/2 + 1/2)).
        let (b, c) = ([100.0f64, 110.0], [120.0f64, 130.0]);
        let t = compare_replicates(&b, &c, None).unwrap();
        let lb: Vec<f64> = b.iter().map(|v| v.ln()).collect();
        let lc: Vec<f64> = c.iter().map(|v| v.ln()).collect();
        let ss = |v: &[f64]| (v[0] - v[1]).powi(2) / 2.0;
        let sd = ((ss(&lb) + ss(&lc)) / 2.0).sqrt();
        let diff = (lc[0] + lc[1] - lb[0] - lb[1]) / 2.0;
        assert!((t.ci.ratio - diff.exp()).abs() < 1e-12);
        assert!((t.log_sd - sd).abs() < 1e-12);
        // t = diff / sd with df 2: p = 2·(1 − F(t)); scipy.stats.t.sf(x, 2)·2.
        let x = diff / sd;
        let p = 1.0 - x / (2.0 + x * x).sqrt(); // closed form for df = 2
        assert!((t.p_value - p).abs() < 1e-9, "{} vs {p}", t.p_value);
    }

    /// One configuration's samples in one round of an A/A run: the round's
    /// host phase (`round`, shared by every configuration of the round), the
    /// configuration's own block effect (sd 3 %: a phase hitting its block
    /// only), 11 samples with 1 % noise.
    fn round_block(rng: &mut SplitMix64, round: f64) -> Vec<f64> {
        let block = 0.03 * normal(rng);
        (0..11)
            .map(|_| 100.0 * (round + block + 0.01 * normal(rng)).exp())
            .collect()
    }

    /// One configuration of an A/A run of `rounds` rounds: (all samples, round medians).
    fn aa_config(rng: &mut SplitMix64, phases: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let blocks: Vec<Vec<f64>> = phases.iter().map(|&p| round_block(rng, p)).collect();
        let medians = blocks.iter().map(|b| median(b)).collect();
        (blocks.concat(), medians)
    }

    #[test]
    fn a_a_round_intervals_do_not_separate_more_often_than_nominal() {
        // Two identical configurations, 10 rounds with host phases of 5 %.
        // Intervals over the round medians overlap but in at most the nominal
        // 5 % of trials; the order-statistic interval over all samples (which
        // takes the 110 samples as independent) separates in over 15 % (18 % here).
        let mut rng = SplitMix64::new(25);
        let trials = 2000;
        let (mut apart, mut apart_by_samples, mut centre_ratio_error) = (0, 0, 0.0f64);
        for _ in 0..trials {
            let phases: Vec<f64> = (0..10).map(|_| 0.05 * normal(&mut rng)).collect();
            let (a, ra) = aa_config(&mut rng, &phases);
            let (b, rb) = aa_config(&mut rng, &phases);
            let ia = round_interval(median(&a), &ra).unwrap();
            let ib = round_interval(median(&b), &rb).unwrap();
            apart += usize::from(ia.1 < ib.0 || ib.1 < ia.0);
            let by_samples = |v: &[f64]| {
                let ci = crate::stats::median_ci(&crate::stats::summary::sorted(v), 0.95);
                (ci.low, ci.high)
            };
            let (sa, sb) = (by_samples(&a), by_samples(&b));
            apart_by_samples += usize::from(sa.1 < sb.0 || sb.1 < sa.0);
            // The centres' ratio is the paired ratio (geometric mean of per-round ratios).
            let (ca, _) = geometric_centre(&ra).unwrap();
            let (cb, _) = geometric_centre(&rb).unwrap();
            let paired = crate::stats::paired::paired_log_ratio_ci(&ra, &rb).ratio;
            centre_ratio_error = centre_ratio_error.max((cb / ca - paired).abs());
        }
        assert!(apart * 100 <= trials * 5, "apart in {apart} of {trials}");
        assert!(
            apart_by_samples * 100 > trials * 15,
            "the sample-level interval separated in only {apart_by_samples} of {trials}"
        );
        assert!(centre_ratio_error < 1e-12, "{centre_ratio_error}");
    }

    #[test]
    fn round_intervals_fall_back_to_a_plain_t_interval() {
        assert_eq!(round_interval(1.0, &[1.0]), None);
        // Values −1, 1, 3: mean 1, sd 2, t(0.975, 2) = 4.302652729749464.
        let (lo, hi) = round_interval(1.0, &[-1.0, 1.0, 3.0]).unwrap();
        let half = 4.302_652_729_749_464 * 2.0 / 3f64.sqrt();
        assert!((lo - (1.0 - half)).abs() < 1e-12 && (hi - (1.0 + half)).abs() < 1e-12);
        let (c, (lo, hi)) = geometric_centre(&[50.0, 200.0]).unwrap();
        assert!((c - 100.0).abs() < 1e-9 && lo < 50.0 && hi > 200.0);
    }

    #[test]
    fn replicate_intervals_and_spread_parts() {
        assert_eq!(replicate_interval(100.0, &[100.0]), None);
        let (lo, hi) = replicate_interval(100.0, &[98.0, 100.0, 102.0]).unwrap();
        assert!(lo < 98.0 && hi > 102.0 && (lo * hi).sqrt() - 100.0 < 1e-9);
        let a = [1.0, 1.0, 1.0];
        let b = [2.0, 2.0, 2.0];
        let (between, within) = spread_parts(&[&a, &b]).unwrap();
        assert!((between - (0.5f64).sqrt() / 1.5).abs() < 1e-12 && within == 0.0);
    }
}

//! What a comparison concludes: the ratio with its intervals ([`RatioCi`]),
//! Holm's correction for many comparisons, the power of a test with this much
//! data, and the [`Verdict`] — including an equivalence test, two one-sided
//! tests at α = 0.05 done as "the 90 % interval of the ratio lies within
//! 1 ± margin".
//!
//! The intervals and p-values come from `stats::unpaired` (separately saved
//! runs) and `stats::paired` (interleaved rounds).

pub use super::ci::RatioCi;
use super::unpaired::mann_whitney_p;

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

/// The interval at `level` (e.g. 0.983) of a ratio `ci` whose 95 % interval
/// is a t interval on the logs with `df` degrees of freedom: the same
/// centre, each half scaled by t(level) ÷ t(95 %). `df` 0 or a point
/// interval: the 95 % interval unchanged.
pub fn t_interval_at(ci: &RatioCi, level: f64, df: f64) -> (f64, f64) {
    if df <= 0.0 || ci.ci95.0 >= ci.ci95.1 {
        return ci.ci95;
    }
    let scale =
        super::paired::t_quantile(0.5 + level / 2.0, df) / super::paired::t_quantile(0.975, df);
    let centre = ci.ratio.ln();
    let low = centre - (centre - ci.ci95.0.ln()) * scale;
    let high = centre + (ci.ci95.1.ln() - centre) * scale;
    (low.exp(), high.exp())
}

/// For each p-value, the confidence level of an interval that agrees with
/// its Holm-adjusted p (in the input order): 1 − α·p/p̃ for raw p and
/// adjusted p̃, so that the interval of a t-test excludes the null exactly
/// when p̃ < α (Holm's factor p̃/p is at least 1, so every level is at
/// least 1 − α). A raw p of 0 takes its step's factor, m − rank + 1.
pub fn holm_levels(p: &[f64], alpha: f64) -> Vec<f64> {
    let adjusted = holm(p);
    let m = p.len();
    let mut rank = vec![0usize; m];
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    for (k, &i) in order.iter().enumerate() {
        rank[i] = k;
    }
    p.iter()
        .zip(&adjusted)
        .zip(&rank)
        .map(|((&raw, &adj), &k)| {
            let factor = if raw > 0.0 {
                (adj / raw).max(1.0)
            } else {
                (m - k) as f64
            };
            1.0 - alpha / factor
        })
        .collect()
}

/// What a comparison concludes, for a time-like quantity (smaller is better).
/// `as_str` is the value documents and CSV carry (serde writes the same);
/// [`Verdict::words`] what people read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
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
    /// Not significant, in documents written before the verdicts above
    /// existed; never concluded now (not in [`Verdict::ALL`]).
    NoChange,
}

impl Verdict {
    /// Whether a change with this verdict and `ratio` (candidate ÷ baseline)
    /// trips a gate at `pct` %: called slower, or slower within the
    /// equivalence margin when the gate lies inside it (the command line
    /// refuses such a gate; here it still trips rather than let the slowdown
    /// pass). A gate of 0 is no gate: only `slower` trips it.
    pub fn trips_gate(self, ratio: f64, pct: f64) -> bool {
        let slower = match self {
            Verdict::Slower => true,
            Verdict::SlowerWithinMargin => pct > 0.0,
            _ => false,
        };
        slower && ratio > 1.0 + pct / 100.0
    }

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
            Verdict::NoChange => "no-change",
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
            Verdict::NoChange => "no change".into(),
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
        // Beyond the exact test's reach its p-value comes from random draws.
        let min_p = |n: usize| {
            let exact = 2.0 / (1u64 << n.min(62)) as f64;
            if n > super::paired::MAX_ROUNDS {
                exact.max(1.0 / (1 + super::paired::SIGN_FLIP_DRAWS) as f64)
            } else {
                exact
            }
        };
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
/// means `p` below `alpha` and the interval `r.ci95` excluding 1 — with
/// several comparisons, each test's raw p, its own Holm level and the
/// interval widened to it ([`holm_levels`], [`t_interval_at`]), which is
/// the adjusted p below the family's α.
/// In order: significant and the ratio beyond 1 ± `margin` → slower/faster;
/// the 90 % interval within 1 ± `margin` → equivalent; significant (within
/// the margin) → slower/faster within the margin; a test that cannot reach
/// `alpha` with this data (`power.min_p ≥ alpha`) → too few; else inconclusive.
pub fn verdict(r: &RatioCi, p: f64, alpha: f64, margin: f64, power: &Power) -> Verdict {
    let (above, below) = (r.ci95.0 > 1.0, r.ci95.1 < 1.0);
    let significant = p < alpha && (above || below);
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

/// The verdict of one of several tests, judged at its own Holm `level`
/// ([`holm_levels`]) — its raw `p` against 1 − `level`, which is its
/// adjusted p against the family's α, on its 95 % interval `r` (a t
/// interval with `df` degrees of freedom) widened to `level`. A sign-flip
/// test's `power` (the only kind whose p has a floor) is recomputed at that
/// level, so that "too few" and the rounds it needs are this test's.
pub fn verdict_at_level(
    r: &RatioCi,
    df: f64,
    p: f64,
    level: f64,
    margin: f64,
    power: &mut Power,
) -> Verdict {
    let alpha = 1.0 - level;
    if power.min_p > 0.0 {
        *power = Power::sign_flip(power.n, alpha, power.what, power.flag);
    }
    let judged = RatioCi {
        ci95: t_interval_at(r, level, df),
        ..*r
    };
    verdict(&judged, p, alpha, margin, power)
}

/// A test that could have reached any p-value.
#[cfg(test)]
pub(crate) const POWERFUL: Power = Power {
    min_p: 0.0,
    n: 20,
    what: "rounds",
    flag: "--rounds",
    needs: 6,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::unpaired::ratio_of_medians;

    #[test]
    fn documents_spell_each_verdict_as_as_str_does() {
        for v in Verdict::ALL.into_iter().chain([Verdict::NoChange]) {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
        assert!(serde_json::from_str::<Verdict>("\"better\"").is_err());
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
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
    fn holm_consistent_intervals_agree_with_adjusted_p_and_cover() {
        // Six cases compared at once, true log effects known (two zero):
        // each interval widened to its Holm level excludes 1 exactly when
        // its adjusted p is below α, and covers the true ratio at least as
        // often as the 95 % one does.
        use crate::stats::replicates::compare_replicates;
        let mut rng = crate::rng::SplitMix64::new(36);
        let effects = [0.0, 0.0, 0.01, 0.03, 0.05, 0.10];
        let (trials, mut covered, mut total) = (2000, 0usize, 0usize);
        for _ in 0..trials {
            let tests: Vec<_> = effects
                .iter()
                .map(|&e| {
                    let mut side = |shift: f64| -> Vec<f64> {
                        (0..4)
                            .map(|_| (shift + 0.03 * crate::rng::standard_normal(&mut rng)).exp())
                            .collect()
                    };
                    let (b, c) = (side(0.0), side(e));
                    compare_replicates(&b, &c, None).unwrap()
                })
                .collect();
            let p: Vec<f64> = tests.iter().map(|t| t.p_value).collect();
            let (adjusted, levels) = (holm(&p), holm_levels(&p, 0.05));
            for ((t, &e), (adj, level)) in
                tests.iter().zip(&effects).zip(adjusted.iter().zip(&levels))
            {
                let (lo, hi) = t_interval_at(&t.ci, *level, t.df as f64);
                let excludes = lo > 1.0 || hi < 1.0;
                // Away from the boundary (rounding), the two always agree.
                if (adj - 0.05).abs() > 1e-9 {
                    assert_eq!(excludes, *adj < 0.05, "p {adj} interval {lo}–{hi}");
                }
                assert!(lo <= t.ci.ci95.0 + 1e-12 && hi >= t.ci.ci95.1 - 1e-12);
                covered += usize::from(lo <= e.exp() && e.exp() <= hi);
                total += 1;
            }
        }
        let rate = covered as f64 / total as f64;
        assert!(rate >= 0.95, "coverage {rate}");
    }
}

//! Confidence intervals: the distribution-free one of a median, and the
//! shape of a ratio's ([`RatioCi`]), which the paired and unpaired tests fill in.
//!
//! Method: the order-statistic interval [x₍ₗ₎, x₍ₙ₊₁₋ₗ₎] of the sorted sample. Whatever
//! the distribution (continuous), it covers the true median with probability
//! 1 − 2·P(B ≤ l − 1), B ~ Binomial(n, ½) (Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., §3.2; the same interval benchstat reports). We take
//! the largest l whose coverage is at least the level asked for, and report
//! that exact coverage. Below n = 6 no such l exists at 95 %: the interval is
//! then min..max and its (lower) coverage says so. No bootstrap, so no seed.

/// An interval for the median with its exact coverage probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianCi {
    pub low: f64,
    pub high: f64,
    /// Exact coverage of this interval (≥ the level asked for when achievable).
    pub coverage: f64,
    /// 1-based ranks of the bounds in the sorted sample.
    pub ranks: (usize, usize),
}

/// The order-statistic interval for the median of `sorted` (ascending, non-empty).
pub fn median_ci(sorted: &[f64], level: f64) -> MedianCi {
    let n = sorted.len();
    assert!(n > 0, "confidence interval of no values");
    let (l, coverage) = median_ci_rank(n, level);
    MedianCi {
        low: sorted[l - 1],
        high: sorted[n - l],
        coverage,
        ranks: (l, n + 1 - l),
    }
}

/// The lower rank l (1-based) and the coverage of [x₍ₗ₎, x₍ₙ₊₁₋ₗ₎] for n samples.
pub fn median_ci_rank(n: usize, level: f64) -> (usize, f64) {
    // cdf[k] = P(B <= k), accumulated from the pmf in log space so large n cannot underflow.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_pmf = ln_half_n; // P(B = 0)
    let mut cdf_below_l = 0.0; // P(B <= l - 1) for the current l
    let mut best = (1, 1.0 - 2.0 * ln_half_n.exp());
    for l in 1..=n.div_ceil(2) {
        // Coverage of rank l uses P(B <= l - 1).
        let k = l - 1;
        if k > 0 {
            ln_pmf += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        cdf_below_l += ln_pmf.exp();
        let coverage = 1.0 - 2.0 * cdf_below_l;
        if coverage >= level {
            best = (l, coverage);
        } else {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference ranks and coverages computed independently with exact rational
    // arithmetic (Python fractions + math.comb): 1 - 2*sum(C(n,k), k<l)/2^n.
    #[test]
    fn ranks_match_exact_binomial_tables() {
        let cases = [
            (6, 1, 0.96875),
            (10, 2, 0.978515625),
            (11, 2, 0.98828125),
            (20, 6, 0.9586105346679688),
            (21, 6, 0.9733963012695312),
            (50, 18, 0.9671608624357315),
        ];
        for (n, l, cov) in cases {
            let (got_l, got_cov) = median_ci_rank(n, 0.95);
            assert_eq!(got_l, l, "n = {n}");
            assert!((got_cov - cov).abs() < 1e-12, "n = {n}: {got_cov} vs {cov}");
        }
    }

    #[test]
    fn small_samples_fall_back_to_min_max_with_true_coverage() {
        let (l, cov) = median_ci_rank(5, 0.95);
        assert_eq!(l, 1);
        assert!((cov - 0.9375).abs() < 1e-15);
        let (l, cov) = median_ci_rank(1, 0.95);
        assert_eq!((l, cov), (1, 0.0));
    }

    #[test]
    fn large_n_does_not_underflow() {
        // For n = 10 000 the 95 % interval is about n/2 ± 0.98·sqrt(n) ranks.
        let (l, cov) = median_ci_rank(10_000, 0.95);
        assert!((4_890..4_910).contains(&l), "l = {l}");
        assert!((0.95..0.96).contains(&cov));
    }

    #[test]
    fn interval_uses_the_ranks() {
        let v: Vec<f64> = (1..=11).map(f64::from).collect();
        let ci = median_ci(&v, 0.95);
        assert_eq!((ci.low, ci.high, ci.ranks), (2.0, 10.0, (2, 10)));
    }
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

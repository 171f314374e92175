//! Latency distributions: an HDR histogram (3 significant digits) over every
//! recorded event, the quantiles reported from it, and the non-empty buckets
//! kept in the document so a distribution can be re-read or re-plotted.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The quantiles a latency table shows (same unit as the values recorded).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    pub max: f64,
}

impl Quantiles {
    /// Every quantile multiplied by `factor` (unit conversion).
    pub fn scaled(self, factor: f64) -> Self {
        Self {
            p50: self.p50 * factor,
            p90: self.p90 * factor,
            p99: self.p99 * factor,
            p99_9: self.p99_9 * factor,
            max: self.max * factor,
        }
    }
}

/// The non-empty buckets of an HDR histogram: `[highest value equivalent, count]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Buckets {
    /// Significant decimal digits of the histogram's resolution.
    pub sigfig: u8,
    /// `[value, count]` pairs, ascending, in nanoseconds.
    pub ns: Vec<[u64; 2]>,
}

/// Records `values` (nanoseconds, at least 1; above an hour counts as an hour).
pub fn histogram(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
    for &v in values {
        h.saturating_record(v.max(1));
    }
    h
}

/// p50, p90, p99, p99.9 and max of a histogram (its own unit); each is the
/// top of its bucket, as HdrHistogram reports (exact below 2048, else ≤ 0.1 % high).
pub fn quantiles(h: &Histogram<u64>) -> Quantiles {
    let q = |x: f64| h.value_at_quantile(x) as f64;
    Quantiles {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p99_9: q(0.999),
        max: h.max() as f64,
    }
}

/// The histogram's non-empty buckets.
pub fn buckets(h: &Histogram<u64>) -> Buckets {
    Buckets {
        sigfig: h.sigfig(),
        ns: h
            .iter_recorded()
            .map(|v| {
                [
                    h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                ]
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_distribution() {
        // 1..=1000 ns once each: below 2048 a 3-digit HDR histogram is exact,
        // so the value at quantile q is the ceil(q·1000)-th smallest.
        let values: Vec<u64> = (1..=1000).collect();
        let q = quantiles(&histogram(&values));
        assert_eq!(
            (q.p50, q.p90, q.p99, q.p99_9, q.max),
            (500.0, 900.0, 990.0, 999.0, 1000.0)
        );
    }

    #[test]
    fn a_long_tail_keeps_its_max_within_the_resolution() {
        // 0.2 % of 10 000 events in the tail: p99.9 (the 9 990th value) is in it.
        let mut values = vec![10_000u64; 9_980];
        values.extend([5_000_000u64; 20]);
        let q = quantiles(&histogram(&values));
        // Above 2048 a value stands for its bucket (0.1 % wide); HDR reports its top.
        let near = |got: f64, want: f64| got >= want && got <= want * 1.001;
        assert!(near(q.p50, 10_000.0) && near(q.p99, 10_000.0), "{q:?}");
        assert!(
            near(q.p99_9, 5_000_000.0) && near(q.max, 5_000_000.0),
            "{q:?}"
        );
    }

    #[test]
    fn buckets_count_every_event() {
        let values = [3u64, 3, 7, 1_000_000];
        let b = buckets(&histogram(&values));
        assert_eq!(b.ns.iter().map(|[_, c]| c).sum::<u64>(), 4);
        assert_eq!(b.ns[0], [3, 2]);
        assert!(b.ns.windows(2).all(|w| w[0][0] < w[1][0]));
    }

    #[test]
    fn scaling_converts_units() {
        let q = Quantiles {
            p50: 1000.0,
            p90: 2000.0,
            p99: 3000.0,
            p99_9: 4000.0,
            max: 5000.0,
        }
        .scaled(1e-3);
        assert_eq!((q.p50, q.max), (1.0, 5.0));
    }
}

//! Property tests of the statistics core: invariants that must hold for any data.

use osbench::rng::SplitMix64;
use osbench::stats::summarize;
use osbench::stats::summary::{median, sorted};
use proptest::prelude::*;

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1e-3f64..1e6, 1..60)
}

fn rel_close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}

proptest! {
    #[test]
    fn interval_contains_the_median(v in samples()) {
        let s = summarize(&v).unwrap();
        prop_assert!(s.ci_low <= s.median && s.median <= s.ci_high);
        prop_assert!(s.min <= s.ci_low && s.ci_high <= s.max);
        prop_assert!(s.min <= s.median && s.median <= s.max);
        prop_assert!(s.min <= s.mean && s.mean <= s.max);
    }

    #[test]
    fn order_does_not_matter(v in samples(), seed in any::<u64>()) {
        let mut shuffled = v.clone();
        SplitMix64::new(seed).shuffle(&mut shuffled);
        let (a, b) = (summarize(&v).unwrap(), summarize(&shuffled).unwrap());
        prop_assert_eq!(a.median, b.median);
        prop_assert_eq!((a.ci_low, a.ci_high, a.min, a.max, a.mad), (b.ci_low, b.ci_high, b.min, b.max, b.mad));
        prop_assert!(rel_close(a.mean, b.mean));
        prop_assert!((a.stddev - b.stddev).abs() <= 1e-9 * a.mean);
    }

    #[test]
    fn scaling_the_data_scales_the_result(v in samples(), k in 1e-3f64..1e3) {
        let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
        let (a, b) = (summarize(&v).unwrap(), summarize(&scaled).unwrap());
        for (x, y) in [(a.median, b.median), (a.mean, b.mean), (a.min, b.min), (a.max, b.max),
                       (a.ci_low, b.ci_low), (a.ci_high, b.ci_high), (a.mad, b.mad)] {
            prop_assert!(rel_close(x * k, y), "{} * {} vs {}", x, k, y);
        }
        prop_assert!((a.stddev * k - b.stddev).abs() <= 1e-9 * b.mean);
        prop_assert!((a.cv - b.cv).abs() <= 1e-9);
    }

    #[test]
    fn half_the_data_is_on_each_side_of_the_median(v in samples()) {
        let m = median(&v);
        let below = v.iter().filter(|&&x| x < m).count();
        let above = v.iter().filter(|&&x| x > m).count();
        prop_assert!(below <= v.len() / 2 && above <= v.len() / 2);
    }

    #[test]
    fn coverage_is_honest(n in 1usize..400) {
        let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let s = summarize(&v).unwrap();
        // Either the level is met, or no order-statistic interval could meet it
        // and the widest one (min..max) is reported.
        prop_assert!(s.ci_coverage >= s.ci_level || (s.ci_low == s.min && s.ci_high == s.max));
        prop_assert!(sorted(&v) == v);
    }
}

//! Change points in a history: where the level of a series of values (one
//! per stored run, in time order) changed, and how strong the evidence is.
//!
//! Method: E-divisive means — Matteson & James, "A Nonparametric Approach for
//! Multiple Change Point Analysis of Multivariate Data", JASA 109(505):334–345,
//! 2014 — as MongoDB (Daly et al., "Change Point Detection in Software
//! Performance Testing", ICPE 2020) and Apache Otava, formerly Hunter (Fleming
//! et al., ICPE 2023), use it on nightly benchmark results. For a segment
//! Z₁…Zₘ split after τ into X = Z₁…Z_τ and Y = Z_τ₊₁…Zₘ (sizes n and k), with
//! α = 1 (the "means" variant):
//!
//! Ê = 2/(nk)·Σ|Xᵢ−Yⱼ| − C(n,2)⁻¹·Σᵢ<ⱼ|Xᵢ−Xⱼ| − C(k,2)⁻¹·Σᵢ<ⱼ|Yᵢ−Yⱼ|,  Q̂(τ) = nk/(n+k)·Ê.
//!
//! The best split of a segment maximises Q̂ over τ (each side at least
//! [`Options::min_segment`] long; the second side always runs to the end of
//! the segment, κ = m, as in MongoDB's and Otava's implementations).
//! Bisection is hierarchical: the strongest split of all current segments is
//! kept if the permutation test (§3.2 of the paper) finds it significant — the
//! values are shuffled within each current segment, `permutations` times, with
//! the project's own seeded [`SplitMix64`], and p = (1 + #{max Q̂ of a
//! shuffle ≥ the observed Q̂}) / (permutations + 1) — and the search goes on in
//! the new segments; it stops at the first split that is not significant.
//!
//! Q̂ of every τ of a segment comes from running sums of pairwise distances
//! kept in a Fenwick tree over the values' ranks (in one dimension |x−y| sums
//! split at a rank), so one segment costs O(m log m), not O(m²): histories of
//! thousands of runs stay quick even with a thousand shuffles.
//!
//! Left out: α ≠ 1, multivariate series, the κ search of the paper's
//! estimator, Otava's Student-t replacement of the permutation test, and any
//! use of the per-run intervals (each run counts as one value, its median).

use super::summary::median;
use crate::rng::SplitMix64;

/// How the detection is run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// A split is a change point when its permutation p-value is at most this.
    pub alpha: f64,
    /// Shuffles per permutation test (p-values come in steps of 1/(this + 1)).
    pub permutations: usize,
    /// Fewest values on each side of a split (at least 2: each side needs a pair).
    pub min_segment: usize,
    /// Seed of the shuffles: the same history always gives the same answer.
    pub seed: u64,
}

impl Default for Options {
    /// The paper's significance level (0.05), 999 shuffles, sides of two runs
    /// or more, and a fixed seed.
    fn default() -> Self {
        Self {
            alpha: 0.05,
            permutations: 999,
            min_segment: 2,
            seed: 0x05BE_4C11,
        }
    }
}

/// One change point: the level of the series changed at `index`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// The first value (0-based) of the new level.
    pub index: usize,
    /// The median of the segment before it (from the previous change point).
    pub before: f64,
    /// The median of the segment from it (to the next change point).
    pub after: f64,
    /// `after / before − 1` (NaN when `before` is 0).
    pub relative: f64,
    /// The permutation p-value of the split when it was found.
    pub p_value: f64,
    /// Q̂ of the split when it was found, in the values' unit.
    pub statistic: f64,
}

/// The strongest split that was tested and not kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rejected {
    pub index: usize,
    pub p_value: f64,
    pub statistic: f64,
}

/// The change points of a series that was long enough to test.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes {
    /// In series order.
    pub points: Vec<ChangePoint>,
    /// Why the search stopped: the best remaining split and its p-value
    /// (`None` when every segment was too short to split again).
    pub rejected: Option<Rejected>,
    pub options: Options,
}

/// What the detection says about a series.
#[derive(Debug, Clone, PartialEq)]
pub enum Detection {
    /// Too few values for any split to reach significance.
    TooFew {
        n: usize,
        needed: usize,
    },
    Tested(Changes),
}

/// The change points of `values` (finite, in time order).
pub fn detect(values: &[f64], options: &Options) -> Detection {
    assert!(options.min_segment >= 2, "each side needs a pair of values");
    let needed = fewest_values(options);
    if values.len() < needed {
        return Detection::TooFew {
            n: values.len(),
            needed,
        };
    }
    let mut rng = SplitMix64::new(options.seed);
    // Segment bounds: 0, the change points found so far, n.
    let mut bounds = vec![0, values.len()];
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    let rejected = loop {
        let Some((index, statistic)) = strongest_split(values, &bounds, options.min_segment) else {
            break None;
        };
        let p_value = permutation_p(values, &bounds, statistic, options, &mut rng);
        if p_value > options.alpha {
            break Some(Rejected {
                index,
                p_value,
                statistic,
            });
        }
        found.push((index, p_value, statistic));
        let at = bounds.partition_point(|&b| b < index);
        bounds.insert(at, index);
    };
    found.sort_by_key(|f| f.0);
    let points = found
        .iter()
        .map(|&(index, p_value, statistic)| {
            let at = bounds.partition_point(|&b| b < index);
            let before = median(&values[bounds[at - 1]..index]);
            let after = median(&values[index..bounds[at + 1]]);
            ChangePoint {
                index,
                before,
                after,
                relative: after / before - 1.0,
                p_value,
                statistic,
            }
        })
        .collect();
    Detection::Tested(Changes {
        points,
        rejected,
        options: *options,
    })
}

/// The fewest values with which a split can be significant at all: an exact
/// permutation test cannot give a split of m distinct values a p-value below
/// 2/C(m, ⌊m/2⌋) (the split itself, both sides shuffled within themselves,
/// and its mirror image all have the same Q̂).
pub fn fewest_values(options: &Options) -> usize {
    let mut m = 2 * options.min_segment;
    while 2.0 / binomial(m, m / 2) > options.alpha {
        m += 1;
    }
    m
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// The split with the largest Q̂ over all segments between `bounds`.
fn strongest_split(values: &[f64], bounds: &[usize], min: usize) -> Option<(usize, f64)> {
    bounds
        .windows(2)
        .filter_map(|w| {
            let segment = Segment::new(&values[w[0]..w[1]]);
            segment
                .best_split(&segment.order(), min)
                .map(|(tau, q)| (w[0] + tau, q))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The share of shuffles (each value moved only within its segment) whose
/// strongest split is at least as strong as `observed`, counting the
/// observed order as one of them.
fn permutation_p(
    values: &[f64],
    bounds: &[usize],
    observed: f64,
    options: &Options,
    rng: &mut SplitMix64,
) -> f64 {
    let segments: Vec<Segment> = bounds
        .windows(2)
        .map(|w| Segment::new(&values[w[0]..w[1]]))
        .collect();
    let mut orders: Vec<Vec<usize>> = segments.iter().map(Segment::order).collect();
    // Sums taken in another order may differ in the last bits.
    let threshold = observed - observed.abs() * 1e-9;
    let mut at_least = 0usize;
    for _ in 0..options.permutations {
        let mut strongest = f64::NEG_INFINITY;
        for (segment, order) in segments.iter().zip(&mut orders) {
            rng.shuffle(order);
            if let Some((_, q)) = segment.best_split(order, options.min_segment) {
                strongest = strongest.max(q);
            }
        }
        if strongest >= threshold {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (options.permutations + 1) as f64
}

/// A segment's values with each one's rank among them (ties broken by position).
struct Segment<'a> {
    values: &'a [f64],
    ranks: Vec<usize>,
}

impl<'a> Segment<'a> {
    fn new(values: &'a [f64]) -> Self {
        let mut by_value: Vec<usize> = (0..values.len()).collect();
        by_value.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let mut ranks = vec![0; values.len()];
        for (rank, &i) in by_value.iter().enumerate() {
            ranks[i] = rank;
        }
        Self { values, ranks }
    }

    /// The values in their own order (positions 0, 1, …).
    fn order(&self) -> Vec<usize> {
        (0..self.values.len()).collect()
    }

    /// The τ (values `order[..τ]` against `order[τ..]`, each side at least
    /// `min` long) with the largest Q̂, and that Q̂; `None` if no τ fits.
    fn best_split(&self, order: &[usize], min: usize) -> Option<(usize, f64)> {
        let m = order.len();
        if m < 2 * min {
            return None;
        }
        // within_left[t]: Σ|Zᵢ−Zⱼ| over i<j<t; within_right[t]: over t≤i<j.
        let within_left = self.within_sums(order.iter().copied());
        let mut within_right = self.within_sums(order.iter().rev().copied());
        within_right.reverse();
        let all = within_left[m];
        (min..=m - min)
            .map(|tau| {
                let (n, k) = (tau as f64, (m - tau) as f64);
                let (left, right) = (within_left[tau], within_right[tau]);
                let cross = all - left - right;
                let energy = 2.0 * cross / (n * k)
                    - 2.0 * left / (n * (n - 1.0))
                    - 2.0 * right / (k * (k - 1.0));
                (tau, n * k / (n + k) * energy)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Sums of pairwise distances of the first t values taken in `order`,
    /// for t = 0..=m.
    fn within_sums(&self, order: impl Iterator<Item = usize>) -> Vec<f64> {
        let mut tree = Fenwick::new(self.values.len());
        let mut sums = vec![0.0];
        let (mut count, mut total) = (0usize, 0.0);
        for i in order {
            let (v, rank) = (self.values[i], self.ranks[i]);
            let (below, below_sum) = tree.below(rank);
            let above = count - below;
            let distances = v * below as f64 - below_sum + (total - below_sum) - v * above as f64;
            sums.push(sums.last().unwrap() + distances);
            tree.add(rank, v);
            count += 1;
            total += v;
        }
        sums
    }
}

/// Counts and sums of the values added so far, by rank, with prefix queries
/// in O(log m) (Fenwick, "A new data structure for cumulative frequency
/// tables", 1994).
struct Fenwick {
    count: Vec<usize>,
    sum: Vec<f64>,
}

impl Fenwick {
    fn new(size: usize) -> Self {
        Self {
            count: vec![0; size + 1],
            sum: vec![0.0; size + 1],
        }
    }

    fn add(&mut self, rank: usize, value: f64) {
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1;
            self.sum[i] += value;
            i += i & i.wrapping_neg();
        }
    }

    /// How many values of rank below `rank` were added, and their sum.
    fn below(&self, rank: usize) -> (usize, f64) {
        let (mut i, mut count, mut sum) = (rank, 0, 0.0);
        while i > 0 {
            count += self.count[i];
            sum += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        (count, sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q̂ of splitting `z` after `tau`, straight from the definition.
    fn q_naive(z: &[f64], tau: usize) -> f64 {
        let (x, y) = z.split_at(tau);
        let (n, k) = (x.len() as f64, y.len() as f64);
        let pairs = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .map(|p| b.iter().map(|q| (p - q).abs()).sum::<f64>())
                .sum()
        };
        let within = |a: &[f64]| pairs(a, a) / 2.0;
        let energy = 2.0 / (n * k) * pairs(x, y)
            - within(x) / (n * (n - 1.0) / 2.0)
            - within(y) / (k * (k - 1.0) / 2.0);
        n * k / (n + k) * energy
    }

    /// Gaussian noise by Box–Muller from the project's generator.
    fn noise(rng: &mut SplitMix64, sd: f64) -> f64 {
        let u = |r: &mut SplitMix64| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (a, b) = (u(rng), u(rng));
        sd * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    /// `levels` as (level, how many values), each value with noise of `sd`.
    fn series(seed: u64, sd: f64, levels: &[(f64, usize)]) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        levels
            .iter()
            .flat_map(|&(level, n)| vec![level; n])
            .map(|level| level + noise(&mut rng, sd))
            .collect()
    }

    fn tested(d: Detection) -> Changes {
        match d {
            Detection::Tested(c) => c,
            other => panic!("not tested: {other:?}"),
        }
    }

    fn indices(c: &Changes) -> Vec<usize> {
        c.points.iter().map(|p| p.index).collect()
    }

    #[test]
    fn q_hat_from_running_sums_equals_the_definition() {
        let z = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0];
        let segment = Segment::new(&z);
        let (tau, q) = segment.best_split(&segment.order(), 2).unwrap();
        let naive: Vec<f64> = (2..=z.len() - 2).map(|t| q_naive(&z, t)).collect();
        let best = naive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!((q - best).abs() < 1e-9, "{q} vs {best}");
        assert!((naive[tau - 2] - q).abs() < 1e-9);
        // A value worked out by hand: [1,1] | [10,10]: Ê = 2·36/4 − 0 − 0 = 18, Q̂ = 18·4/4 = 18.
        let step = [1.0, 1.0, 10.0, 10.0];
        let s = Segment::new(&step);
        assert_eq!(s.best_split(&s.order(), 2), Some((2, 18.0)));
        // A shuffled order is split as that sequence.
        let order = [2, 0, 3, 1]; // 10, 1, 10, 1
        let shuffled: Vec<f64> = order.iter().map(|&i| step[i]).collect();
        let (_, q) = s.best_split(&order, 2).unwrap();
        assert!((q - q_naive(&shuffled, 2)).abs() < 1e-12);
    }

    #[test]
    fn a_planted_step_is_found_at_its_first_run() {
        // 100 ns for 12 runs, then 108 ns (+8 %), noise of 1 ns.
        let values = series(1, 1.0, &[(100.0, 12), (108.0, 10)]);
        let c = tested(detect(&values, &Options::default()));
        assert_eq!(indices(&c), [12], "{c:?}");
        let p = &c.points[0];
        assert!(
            (p.before - 100.0).abs() < 1.0 && (p.after - 108.0).abs() < 1.0,
            "{p:?}"
        );
        assert!((p.relative - 0.08).abs() < 0.015, "{p:?}");
        assert!(p.p_value <= 0.002, "{p:?}");
        assert!(p.statistic > 0.0);
        // The search stopped on a split that is not significant.
        assert!(c.rejected.unwrap().p_value > 0.05, "{c:?}");
    }

    #[test]
    fn a_flat_noisy_history_has_no_change_point() {
        for seed in 0..5 {
            let values = series(seed, 2.0, &[(100.0, 40)]);
            let c = tested(detect(&values, &Options::default()));
            assert!(c.points.is_empty(), "seed {seed}: {c:?}");
            assert!(c.rejected.is_some());
        }
        // Over many flat histories, false alarms stay near the level asked for.
        let alarms = |alpha: f64| {
            let options = Options {
                alpha,
                ..Options::default()
            };
            (100..200)
                .filter(|&seed| {
                    let values = series(seed, 1.0, &[(100.0, 30)]);
                    !tested(detect(&values, &options)).points.is_empty()
                })
                .count()
        };
        let (at_5, at_1) = (alarms(0.05), alarms(0.01));
        eprintln!("false alarms in 100 flat histories: {at_5} at p ≤ 0.05, {at_1} at p ≤ 0.01");
        assert!(at_5 <= 10 && at_1 <= 4 && at_1 <= at_5, "{at_5}, {at_1}");
    }

    #[test]
    fn two_steps_are_both_found_with_their_segments_medians() {
        // Up by 10 %, then back down to 95: a regression and a partial fix.
        let values = series(2, 1.0, &[(100.0, 10), (110.0, 10), (95.0, 12)]);
        let c = tested(detect(&values, &Options::default()));
        assert_eq!(indices(&c), [10, 20], "{c:?}");
        let (a, b) = (&c.points[0], &c.points[1]);
        assert!((a.before - 100.0).abs() < 1.0 && (a.after - 110.0).abs() < 1.0);
        assert_eq!(a.after, b.before, "the middle segment is shared");
        assert!((b.after - 95.0).abs() < 1.0);
        assert!(a.relative > 0.08 && b.relative < -0.12, "{c:?}");
    }

    #[test]
    fn short_histories_cannot_tell() {
        let options = Options::default();
        assert_eq!(fewest_values(&options), 8);
        for n in 0..4 {
            let values = vec![1.0; n];
            assert_eq!(
                detect(&values, &options),
                Detection::TooFew { n, needed: 8 }
            );
        }
        // Even a huge step in 7 runs cannot reach p ≤ 0.05.
        let seven = [1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0];
        assert_eq!(
            detect(&seven, &options),
            Detection::TooFew { n: 7, needed: 8 }
        );
        // A stricter level needs more runs: 2/C(10,5) = 0.0079.
        let strict = Options {
            alpha: 0.01,
            ..options
        };
        assert_eq!(fewest_values(&strict), 10);
        // With 8, a clean step is found.
        let eight = [1.0, 1.1, 0.9, 1.0, 9.0, 9.1, 8.9, 9.0];
        assert_eq!(indices(&tested(detect(&eight, &options))), [4]);
    }

    #[test]
    fn outliers_are_not_change_points_and_do_not_hide_a_step() {
        // Lone spikes (an interrupted run, a lucky one) in flat histories:
        // change points no more often than the level asks for (5 %).
        let with_spikes = (0..40)
            .filter(|&seed| {
                let mut flat = series(seed, 1.0, &[(100.0, 30)]);
                flat[7] = 160.0;
                flat[21] = 45.0;
                !tested(detect(&flat, &Options::default())).points.is_empty()
            })
            .count();
        assert!(with_spikes <= 4, "{with_spikes} of 40 flat histories");
        // The same spikes around a step.
        let mut step = series(4, 1.0, &[(100.0, 15), (106.0, 15)]);
        step[5] = 170.0;
        step[24] = 40.0;
        let c = tested(detect(&step, &Options::default()));
        assert_eq!(indices(&c), [15], "{c:?}");
        assert!(
            (c.points[0].before - 100.0).abs() < 1.0,
            "medians resist the spikes"
        );
    }

    #[test]
    fn the_same_history_gives_the_same_answer_and_the_seed_is_used() {
        let values = series(5, 1.0, &[(100.0, 9), (103.0, 9)]);
        let options = Options::default();
        assert_eq!(detect(&values, &options), detect(&values, &options));
        let other = Options {
            seed: 99,
            ..options
        };
        let p = |d: Detection| tested(d).rejected.map(|r| r.p_value);
        // Another seed shuffles differently: the p-values (in steps of 1/1000) differ.
        assert_ne!(p(detect(&values, &options)), p(detect(&values, &other)));
    }

    #[test]
    fn identical_values_have_nothing_to_split() {
        let c = tested(detect(&[5.0; 12], &Options::default()));
        assert!(c.points.is_empty());
        assert_eq!(c.rejected.unwrap().p_value, 1.0);
    }
}

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
//! the segment, κ = m, as in MongoDB's and Otava's implementations). The
//! search is binary segmentation: a segment's best split is kept when the
//! permutation test (§3.2 of the paper, shuffling within the segment,
//! `permutations` times with the project's seeded [`SplitMix64`], p = (1 +
//! #{max Q̂ of a shuffle ≥ the observed Q̂}) / (permutations + 1), stopped
//! early once p cannot come out at or below α) finds it significant, and
//! both halves are searched again; unlike the paper's procedure, a segment
//! whose split is not significant does not stop the search of the others
//! (that stopped after the first of three steps).
//!
//! What nightly histories need beyond the paper, each chosen by its score on
//! a synthetic corpus against Apache Otava (scripts/score-changepoints.py,
//! docs/change-points.md):
//! - values bit-identical but for rounding are not split ([`detect`] on 600
//!   equal medians found 31 "changes" of 0.0 % before);
//! - a split is dropped when it leaves a level shorter than
//!   [`Options::confirm_runs`] before the last one (two unlucky runs at the
//!   start, a pair of outliers), when it is smaller than the runs' own
//!   intervals or [`MIN_EFFECT`] run-to-run spreads, and when a straight line
//!   explains the history (or, where the levels drift, the two levels
//!   around it) as well as the steps do ([`super::trend`]): drift is reported
//!   as [`Drift`], not as steps;
//! - the splits left are tested again between their neighbours (Otava's
//!   merge step), and a change point is *confirmed* only with
//!   [`Options::confirm_runs`] runs of its new level and p ≤
//!   [`Options::confirm_alpha`]; before that it is pending;
//! - a history whose runs' samples fell in two clusters, and whose values
//!   flip between two levels, is folded onto one level before the search.
//!
//! Q̂ of every τ of a segment comes from running sums of pairwise distances
//! kept in a Fenwick tree over the values' ranks (in one dimension |x−y| sums
//! split at a rank), so one segment costs O(m log m), not O(m²): histories of
//! thousands of runs stay quick even with a thousand shuffles.
//!
//! Left out: α ≠ 1, multivariate series, the κ search of the paper's
//! estimator, Otava's Student-t replacement of the permutation test.

use super::summary::median;
use super::trend;
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
    /// Runs of its new level a change point needs before it is confirmed;
    /// until then it is pending (it may be two unlucky runs).
    pub confirm_runs: usize,
    /// The p-value at most which confirms a change point: a history swept
    /// every night is tested every night, and the level that finds a change
    /// worth showing (`alpha`) would, night after night, announce chance ones.
    pub confirm_alpha: f64,
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
            confirm_runs: CONFIRM_RUNS,
            confirm_alpha: CONFIRM_ALPHA,
        }
    }
}

/// Runs of the new level that confirm a change point (see [`Options::confirm_runs`]).
pub const CONFIRM_RUNS: usize = 4;
/// The p-value that confirms one (see [`Options::confirm_alpha`]).
pub const CONFIRM_ALPHA: f64 = 0.005;

/// What osbench knows of a run besides its median.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunInfo {
    /// The relative half-width of its median's interval (0.01: ±1 %).
    pub spread: Option<f64>,
    /// Whether its samples fell in two clusters.
    pub two_clusters: bool,
}

/// A slow drift of the level over a stretch of runs, not a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// The first and one past the last value of the stretch.
    pub start: usize,
    pub end: usize,
    /// The trend's level at the stretch's first run (Theil–Sen's line).
    pub level: f64,
    /// The trend's change per run, relative to `level` (0.0005: +0.05 % a run).
    pub per_run: f64,
    /// The trend test's p-value.
    pub p_value: f64,
}

impl Drift {
    /// The change over the whole stretch, first run to last (relative).
    pub fn total(&self) -> f64 {
        self.per_run * (self.end - self.start - 1) as f64
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
    /// Whether [`Options::confirm_runs`] runs of the new level follow it
    /// and its p-value is at most [`Options::confirm_alpha`].
    pub confirmed: bool,
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
    /// Stretches whose level drifted rather than stepped, in series order.
    pub drifts: Vec<Drift>,
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

/// The change points of `values` (finite, in time order); `info` holds
/// what is known of each run (empty when nothing is).
pub fn detect(values: &[f64], info: &[RunInfo], options: &Options) -> Detection {
    assert!(options.min_segment >= 2, "each side needs a pair of values");
    let needed = fewest_values(options);
    if values.len() < needed {
        return Detection::TooFew {
            n: values.len(),
            needed,
        };
    }
    let folded = fold_two_levels(values, info);
    let z = folded.as_deref().unwrap_or(values);
    let (mut found, rejected) = search(z, options);
    let floor = noise_floor(info);
    prune(z, &mut found, floor, options.confirm_runs);
    if trend::line_explains(z, &found.iter().map(|s| s.index).collect::<Vec<_>>()) {
        found.clear();
    }
    drift_within_levels(z, &mut found, options.alpha);
    retest(z, &mut found, options);
    let bounds = bounds_of(&found, z.len());
    let points = found
        .iter()
        .zip(bounds.windows(3))
        .map(|(s, w)| {
            let before = median(&z[w[0]..w[1]]);
            let after = median(&z[w[1]..w[2]]);
            ChangePoint {
                index: s.index,
                before,
                after,
                relative: after / before - 1.0,
                p_value: s.p_value,
                statistic: s.statistic,
                confirmed: z.len() - s.index >= options.confirm_runs
                    && s.p_value <= options.confirm_alpha.min(options.alpha),
            }
        })
        .collect();
    Detection::Tested(Changes {
        points,
        drifts: drifts(z, &bounds, floor),
        rejected,
        options: *options,
    })
}

/// A split the search kept.
#[derive(Debug, Clone, Copy)]
struct Split {
    index: usize,
    p_value: f64,
    statistic: f64,
}

/// Binary segmentation: the strongest split of a segment is kept when its
/// own permutation test finds it significant, and both halves are searched
/// again; a segment whose split is not significant is left whole, while the
/// others are still searched (the paper's procedure stops at the first
/// split that is not significant, which misses a third step once two have
/// been found). The splits kept, in series order, and the strongest one
/// rejected.
fn search(z: &[f64], options: &Options) -> (Vec<Split>, Option<Rejected>) {
    let mut rng = SplitMix64::new(options.seed);
    let mut open = vec![(0, z.len())];
    let (mut found, mut rejected): (Vec<Split>, Option<Rejected>) = (Vec::new(), None);
    while let Some((lo, hi)) = open.pop() {
        let split = match test_segment(z, lo, hi, options.alpha, options, &mut rng) {
            Tested::Kept(split) => Some(split),
            Tested::Rejected(r) => {
                if rejected.is_none_or(|best| r.statistic > best.statistic) {
                    rejected = Some(r);
                }
                probe_sides(z, lo, hi, r.index, options, &mut rng)
            }
            Tested::Nothing => None,
        };
        if let Some(split) = split {
            found.push(split);
            open.extend([(lo, split.index), (split.index, hi)]);
        }
    }
    found.sort_by_key(|s| s.index);
    (found, rejected)
}

/// What testing a segment's best split gave.
enum Tested {
    Kept(Split),
    Rejected(Rejected),
    /// Nothing to test: tied values, or too short.
    Nothing,
}

/// The best split of `z[lo..hi]`, tested at `alpha`.
fn test_segment(
    z: &[f64],
    lo: usize,
    hi: usize,
    alpha: f64,
    options: &Options,
    rng: &mut SplitMix64,
) -> Tested {
    let values = &z[lo..hi];
    if all_tied(values) {
        return Tested::Nothing;
    }
    let segment = Segment::new(values);
    let Some((tau, statistic)) = segment.best_split(&segment.order(), options.min_segment) else {
        return Tested::Nothing;
    };
    let at_alpha = Options { alpha, ..*options };
    let p_value = permutation_p(&segment, statistic, &at_alpha, rng);
    let index = lo + tau;
    if p_value > alpha {
        Tested::Rejected(Rejected {
            index,
            p_value,
            statistic,
        })
    } else {
        Tested::Kept(Split {
            index,
            p_value,
            statistic,
        })
    }
}

/// A segment whose best split is not significant may hold a level that
/// came back (a bump, a dip: a|b|a, which one split with the second side
/// running to the segment's end weighs poorly): the two sides of that
/// split, each at α/2, are tried for a step of their own; the stronger kept.
fn probe_sides(
    z: &[f64],
    lo: usize,
    hi: usize,
    at: usize,
    options: &Options,
    rng: &mut SplitMix64,
) -> Option<Split> {
    [(lo, at), (at, hi)]
        .into_iter()
        .filter_map(
            |(a, b)| match test_segment(z, a, b, options.alpha / 2.0, options, rng) {
                Tested::Kept(split) => Some(split),
                _ => None,
            },
        )
        .max_by(|a, b| a.statistic.total_cmp(&b.statistic))
}

/// Where the levels between the splits drift themselves (Mann–Kendall
/// pooled over them, at the steps' `alpha`), takes out, the weakest first, the
/// splits that a line through their two neighbouring levels explains as
/// well ([`trend::line_explains`]): a drifting history with a real step has
/// its drift cut into more steps around it.
fn drift_within_levels(z: &[f64], found: &mut Vec<Split>, alpha: f64) {
    loop {
        let bounds = bounds_of(found, z.len());
        let levels: Vec<&[f64]> = bounds.windows(2).map(|w| &z[w[0]..w[1]]).collect();
        if found.is_empty() || trend::pooled_mann_kendall_p(&levels) > alpha {
            return;
        }
        let drift: Vec<bool> = (0..found.len())
            .map(|k| {
                let (lo, at, hi) = (bounds[k], bounds[k + 1], bounds[k + 2]);
                trend::line_explains(&z[lo..hi], &[at - lo])
            })
            .collect();
        if !remove_weakest(found, &drift) {
            return;
        }
    }
}

/// Tests each split again between its neighbours (the segment from the
/// split before it to the split after it), as Otava's merge step does, and
/// takes out the weakest one that is no longer significant until all are:
/// a split found inside a longer segment (a level that came back, say) was
/// weighed there against a poorer alternative than its neighbours now give.
/// The p-value and Q̂ each split keeps are its neighbours' ones.
fn retest(z: &[f64], found: &mut Vec<Split>, options: &Options) {
    loop {
        let bounds = bounds_of(found, z.len());
        for (k, split) in found.iter_mut().enumerate() {
            let (lo, hi) = (bounds[k], bounds[k + 2]);
            let segment = Segment::new(&z[lo..hi]);
            let tau = split.index - lo;
            let Some(statistic) = segment.q_at(tau, options.min_segment) else {
                continue;
            };
            let mut rng = SplitMix64::new(options.seed ^ split.index as u64);
            split.statistic = statistic;
            split.p_value = permutation_p(&segment, statistic, options, &mut rng);
        }
        let weak: Vec<bool> = found.iter().map(|s| s.p_value > options.alpha).collect();
        if !remove_weakest(found, &weak) {
            return;
        }
    }
}

/// Whether `values` are all equal but for the last bits (bit-identical
/// medians, or sums of them): there is no split to test, and the
/// rounding of the distance sums must not be taken for one.
fn all_tied(values: &[f64]) -> bool {
    let (low, high) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    high - low <= 1e-9 * low.abs().max(high.abs())
}

/// Takes out, one at a time (the weakest first), the splits that are not
/// steps: those smaller than `floor` (what the runs themselves resolve) or
/// than [`MIN_EFFECT`] run-to-run spreads, and those that leave a level of
/// fewer than `confirm_runs` runs before the last one (two unlucky runs at
/// the start, or a pair of outliers, are not a level).
fn prune(z: &[f64], found: &mut Vec<Split>, floor: f64, confirm_runs: usize) {
    loop {
        let bounds = bounds_of(found, z.len());
        let spread = run_to_run_spread(z, &bounds);
        let floor = floor.max(MIN_EFFECT * spread);
        let not_a_step = |k: usize| {
            let (lo, at, hi) = (bounds[k], bounds[k + 1], bounds[k + 2]);
            let change = median(&z[at..hi]) / median(&z[lo..at]) - 1.0;
            // A level of fewer runs than confirm one is not a level: two
            // unlucky runs at the start, or a pair of outliers inside.
            let short = at - lo < confirm_runs || (k + 1 < found.len() && hi - at < confirm_runs);
            change.is_nan() || change.abs() < floor.max(1e-9) || short
        };
        let not_steps: Vec<bool> = (0..found.len()).map(not_a_step).collect();
        if !remove_weakest(found, &not_steps) {
            return;
        }
    }
}

/// 0, the index of each split, `n`: the bounds of the segments between them.
fn bounds_of(found: &[Split], n: usize) -> Vec<usize> {
    std::iter::once(0)
        .chain(found.iter().map(|s| s.index))
        .chain(std::iter::once(n))
        .collect()
}

/// Removes the weakest split (the smallest Q̂) of those `picked` marks;
/// false when none is marked.
fn remove_weakest(found: &mut Vec<Split>, picked: &[bool]) -> bool {
    let weakest = (0..found.len())
        .filter(|&k| picked[k])
        .min_by(|&a, &b| found[a].statistic.total_cmp(&found[b].statistic));
    weakest.map(|k| found.remove(k)).is_some()
}

/// The smallest change, in run-to-run spreads, that is reported as a step:
/// a smaller one, however significant over many runs, is below what this
/// case resolves from one night to the next.
pub const MIN_EFFECT: f64 = 1.0;

/// How far runs stray from their level, relative to it: 1.4826 × the median
/// of |value / its segment's median − 1| (a robust standard deviation).
fn run_to_run_spread(z: &[f64], bounds: &[usize]) -> f64 {
    let deviations: Vec<f64> = bounds
        .windows(2)
        .flat_map(|w| {
            let level = median(&z[w[0]..w[1]]);
            z[w[0]..w[1]].iter().map(move |v| (v / level - 1.0).abs())
        })
        .filter(|d| d.is_finite())
        .collect();
    if deviations.is_empty() {
        0.0
    } else {
        1.4826 * median(&deviations)
    }
}

/// The smallest change a history of these runs resolves: the median
/// relative half-width of the runs' own intervals (runs whose samples fell
/// in two clusters left out: their interval spans the gap, not the noise);
/// 0 when no run tells.
fn noise_floor(info: &[RunInfo]) -> f64 {
    let spreads: Vec<f64> = info
        .iter()
        .filter(|r| !r.two_clusters)
        .filter_map(|r| r.spread)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .collect();
    if spreads.is_empty() {
        0.0
    } else {
        median(&spreads)
    }
}

/// Fewest runs of a stretch between steps in which drift is looked for.
pub const DRIFT_MIN_RUNS: usize = 12;
/// The trend test's level: stricter than the steps', as drift is looked
/// for in every stretch and is news only when it is plain.
pub const DRIFT_ALPHA: f64 = 0.01;
/// The least a stretch must drift over its length to be reported (2 %).
pub const DRIFT_MIN_TOTAL: f64 = 0.02;

/// The stretches between `bounds` whose level drifts: a Mann–Kendall trend
/// at [`DRIFT_ALPHA`] of at least [`DRIFT_MIN_TOTAL`] (and `floor`) over the stretch.
fn drifts(z: &[f64], bounds: &[usize], floor: f64) -> Vec<Drift> {
    bounds
        .windows(2)
        .filter(|w| w[1] - w[0] >= DRIFT_MIN_RUNS)
        .filter_map(|w| {
            let stretch = &z[w[0]..w[1]];
            let line = trend::theil_sen(stretch)?;
            let level = line.at(0);
            let drift = Drift {
                start: w[0],
                end: w[1],
                level,
                per_run: line.slope / level,
                p_value: trend::mann_kendall_p(stretch),
            };
            let plain = drift.total().abs() >= DRIFT_MIN_TOTAL.max(floor);
            (drift.p_value <= DRIFT_ALPHA && plain && level > 0.0).then_some(drift)
        })
        .collect()
}

/// Half-width of the window of runs around a run that tells which of two
/// levels it landed on.
const FOLD_WINDOW: usize = 8;

/// `values` folded onto one level where most runs' samples fell in two
/// clusters and the values themselves sit on two levels: each value is
/// moved by the history's typical half-gap towards the median of the runs
/// around it. A history that flips between two levels from run to run (as
/// unpinned cross-CPU wake-ups do) then shows a step as plainly as a
/// unimodal one. `None` where that does not apply.
fn fold_two_levels(values: &[f64], info: &[RunInfo]) -> Option<Vec<f64>> {
    let flagged = info.iter().filter(|r| r.two_clusters).count();
    if info.len() != values.len() || 2 * flagged < values.len() || values.iter().any(|v| *v <= 0.0)
    {
        return None;
    }
    let n = values.len();
    // The middle of the gap around each run: halfway between the window's
    // quartiles (its median is a value, on one level or the other).
    let ratios: Vec<f64> = (0..n)
        .map(|i| {
            let mut around =
                values[i.saturating_sub(FOLD_WINDOW)..(i + FOLD_WINDOW + 1).min(n)].to_vec();
            around.sort_by(f64::total_cmp);
            let quartile = |q: f64| around[((around.len() - 1) as f64 * q).round() as usize];
            (values[i] / ((quartile(0.25) + quartile(0.75)) / 2.0)).ln()
        })
        .collect();
    let half_gap = median(&ratios.iter().map(|r| r.abs()).collect::<Vec<_>>());
    Some(
        values
            .iter()
            .zip(&ratios)
            .map(|(v, r)| v * (-half_gap * r.signum()).exp())
            .collect(),
    )
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

/// The share of shuffles of `segment` whose strongest split is at least as
/// strong as `observed`, counting the observed order as one of them. The
/// shuffling stops as soon as the p-value cannot come out at or below
/// `alpha` any more (then the share so far is the estimate, as in Besag &
/// Clifford's sequential Monte Carlo p-values, Biometrika 78(2), 1991).
fn permutation_p(segment: &Segment, observed: f64, options: &Options, rng: &mut SplitMix64) -> f64 {
    let mut order = segment.order();
    // Sums taken in another order may differ in the last bits.
    let threshold = observed - observed.abs() * 1e-9;
    let enough = options.alpha * (options.permutations + 1) as f64;
    let mut at_least = 0usize;
    for done in 1..=options.permutations {
        rng.shuffle(&mut order);
        if segment
            .best_split(&order, options.min_segment)
            .is_some_and(|(_, q)| q >= threshold)
        {
            at_least += 1;
            if (1 + at_least) as f64 > enough {
                return (1 + at_least) as f64 / (done + 1) as f64;
            }
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
        self.splits(order, min)
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Q̂ of splitting the segment in its own order before `tau`.
    fn q_at(&self, tau: usize, min: usize) -> Option<f64> {
        self.splits(&self.order(), min)
            .into_iter()
            .find(|&(t, _)| t == tau)
            .map(|(_, q)| q)
    }

    /// Every τ with each side at least `min` long, and its Q̂.
    fn splits(&self, order: &[usize], min: usize) -> Vec<(usize, f64)> {
        let m = order.len();
        if m < 2 * min {
            return Vec::new();
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
            .collect()
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

    /// The detection knowing nothing of the runs but their medians.
    fn detect_plain(values: &[f64], options: &Options) -> Detection {
        detect(values, &[], options)
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
        let c = tested(detect_plain(&values, &Options::default()));
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
            let c = tested(detect_plain(&values, &Options::default()));
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
                    !tested(detect_plain(&values, &options)).points.is_empty()
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
        let c = tested(detect_plain(&values, &Options::default()));
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
                detect_plain(&values, &options),
                Detection::TooFew { n, needed: 8 }
            );
        }
        // Even a huge step in 7 runs cannot reach p ≤ 0.05.
        let seven = [1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0];
        assert_eq!(
            detect_plain(&seven, &options),
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
        assert_eq!(indices(&tested(detect_plain(&eight, &options))), [4]);
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
                !tested(detect_plain(&flat, &Options::default()))
                    .points
                    .is_empty()
            })
            .count();
        assert!(with_spikes <= 4, "{with_spikes} of 40 flat histories");
        // The same spikes around a step.
        let mut step = series(4, 1.0, &[(100.0, 15), (106.0, 15)]);
        step[5] = 170.0;
        step[24] = 40.0;
        let c = tested(detect_plain(&step, &Options::default()));
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
        assert_eq!(
            detect_plain(&values, &options),
            detect_plain(&values, &options)
        );
        let other = Options {
            seed: 99,
            ..options
        };
        let p = |d: Detection| tested(d).rejected.map(|r| r.p_value);
        // Another seed shuffles differently: the p-values (in steps of 1/1000) differ.
        assert_ne!(
            p(detect_plain(&values, &options)),
            p(detect_plain(&values, &other))
        );
    }

    #[test]
    fn identical_values_have_nothing_to_split() {
        let c = tested(detect_plain(&[5.0; 12], &Options::default()));
        assert!(c.points.is_empty());
        assert_eq!(c.rejected, None, "nothing was tested");
        // 600 bit-identical medians, and 600 that differ in the last bits
        // only: the rounding of the distance sums is not a change.
        let c = tested(detect_plain(&[123.456; 600], &Options::default()));
        assert!(c.points.is_empty() && c.drifts.is_empty(), "{c:?}");
        let last_bits: Vec<f64> = (0..600)
            .map(|i| 123.456 * (1.0 + f64::EPSILON * (i % 3) as f64))
            .collect();
        let c = tested(detect_plain(&last_bits, &Options::default()));
        assert!(c.points.is_empty() && c.drifts.is_empty(), "{c:?}");
    }

    #[test]
    fn a_change_at_the_end_is_pending_until_four_runs_confirm_it() {
        // 30 flat runs, then +10 %: two runs of it, then six.
        let all = series(11, 1.0, &[(100.0, 30), (110.0, 6)]);
        let two = tested(detect_plain(&all[..32], &Options::default()));
        assert_eq!(indices(&two), [30], "{two:?}");
        assert!(!two.points[0].confirmed, "two runs do not confirm a change");
        let six = tested(detect_plain(&all, &Options::default()));
        assert_eq!(indices(&six), [30]);
        assert!(six.points[0].confirmed, "{six:?}");
        // Two unlucky runs at the end are shown pending, never confirmed;
        // the next flat runs take them back.
        let mut unlucky = series(12, 1.0, &[(100.0, 40)]);
        unlucky.extend([150.0, 148.0]);
        let c = tested(detect_plain(&unlucky, &Options::default()));
        assert!(c.points.iter().all(|p| !p.confirmed), "{c:?}");
        unlucky.extend(series(13, 1.0, &[(100.0, 6)]));
        let c = tested(detect_plain(&unlucky, &Options::default()));
        assert!(
            c.points.is_empty(),
            "a pair of outliers inside is not a level: {c:?}"
        );
        // Nor are two unlucky runs at the start.
        let mut start = vec![150.0, 149.0];
        start.extend(series(14, 1.0, &[(100.0, 40)]));
        assert!(
            tested(detect_plain(&start, &Options::default()))
                .points
                .is_empty()
        );
    }

    #[test]
    fn slow_drift_is_a_drift_not_steps() {
        // +0.05 % a run over 120 runs (+6 % in all), noise of 1 %.
        let mut rng = SplitMix64::new(21);
        let ramp: Vec<f64> = (0..120)
            .map(|i| 100.0 * (1.0 + 0.0005 * i as f64) + noise(&mut rng, 1.0))
            .collect();
        let c = tested(detect_plain(&ramp, &Options::default()));
        assert!(c.points.is_empty(), "{c:?}");
        assert_eq!(c.drifts.len(), 1, "{c:?}");
        let d = &c.drifts[0];
        assert_eq!((d.start, d.end), (0, 120));
        assert!((d.per_run - 0.0005).abs() < 0.0002, "{d:?}");
        assert!(d.p_value < 0.001, "{d:?}");
        // A flat history does not drift.
        let flat = series(22, 1.0, &[(100.0, 120)]);
        assert!(
            tested(detect_plain(&flat, &Options::default()))
                .drifts
                .is_empty()
        );
        // A sharp step on a drifting history is still a step.
        let mut rng = SplitMix64::new(23);
        let stepped: Vec<f64> = (0..120)
            .map(|i| {
                let level = if i < 60 { 100.0 } else { 110.0 };
                level * (1.0 + 0.0005 * i as f64) + noise(&mut rng, 1.0)
            })
            .collect();
        let c = tested(detect_plain(&stepped, &Options::default()));
        assert_eq!(indices(&c), [60], "{c:?}");
    }

    #[test]
    fn every_step_of_several_is_found() {
        // Steps at 8, 21 and 32 (the paper's procedure stopped after the first).
        let values = series(
            31,
            1.0,
            &[(100.0, 8), (106.0, 13), (100.0, 11), (112.0, 12)],
        );
        let c = tested(detect_plain(&values, &Options::default()));
        assert_eq!(indices(&c), [8, 21, 32], "{c:?}");
        assert!(c.points.iter().all(|p| p.confirmed), "{c:?}");
    }

    #[test]
    fn a_history_on_two_levels_is_folded_when_its_runs_say_so() {
        // Each run lands 8 % above or below its level (unpinned wake-ups);
        // the level steps +5 % at run 40.
        let mut rng = SplitMix64::new(41);
        let values: Vec<f64> = (0..80)
            .map(|i| {
                let level = if i < 40 { 100.0 } else { 105.0 };
                let side = if rng.next_u64().is_multiple_of(2) {
                    0.92
                } else {
                    1.08
                };
                level * side + noise(&mut rng, 1.0)
            })
            .collect();
        let told = vec![
            RunInfo {
                spread: Some(0.08),
                two_clusters: true,
            };
            80
        ];
        let c = tested(detect(&values, &told, &Options::default()));
        assert_eq!(c.points.len(), 1, "{c:?}");
        assert!(c.points[0].index.abs_diff(40) <= 2, "{c:?}");
        assert!((c.points[0].relative - 0.05).abs() < 0.015, "{c:?}");
    }

    #[test]
    fn a_change_below_what_the_runs_resolve_is_not_reported() {
        // +1 % over 60 runs of 0.2 % noise is significant, but each run's
        // own interval is ±2 %.
        let values = series(51, 0.2, &[(100.0, 60), (101.0, 60)]);
        let c = tested(detect_plain(&values, &Options::default()));
        assert_eq!(indices(&c), [60], "found without the runs' intervals");
        let wide = vec![
            RunInfo {
                spread: Some(0.02),
                two_clusters: false,
            };
            120
        ];
        let c = tested(detect(&values, &wide, &Options::default()));
        assert!(c.points.is_empty(), "{c:?}");
    }
}

//! The differential profile: where a change of a case's time per op went,
//! function by function, from two sides' sampled profiles (issue 37, item 4).
//!
//! Each side brings its profiling passes — folded call stacks
//! ("outermost;…;innermost", leaf last) with their sample counts, and the
//! pass's total samples (stacks not kept by name included) — and its time
//! per op (the centre the comparison's ratio is of, in the series' unit).
//! For every function (a frame of a stack) and every pass: its *self*
//! count (stacks whose leaf it is) and its *inclusive* count (stacks it is
//! in, once per stack however often it recurs); the pass's time per op of
//! the function is count ÷ total × the side's time per op. A function's
//! value on a side is the mean over its passes; the difference candidate −
//! baseline has a Welch t interval over the passes, whose pass-to-pass
//! spread includes the sampling error, with its two-sided p-value.
//!
//! Significance takes the verdicts' discipline (`stats::verdict`): Holm
//! over every function tested — those whose self samples are at least
//! [`DEFAULT_FLOOR`] (0.5 %) of a side's samples on either side, which
//! keeps the family finite — each judged at its own Holm level
//! ([`crate::stats::verdict::holm_levels`]), its interval widened to it.
//! With fewer than two passes on a side there is no interval and nothing is
//! significant, and the result says so.
//!
//! Self times add up across functions (each sample has one leaf) and
//! inclusive ones overlap, so rows are ranked by the size of their self
//! difference (how much of the change each accounts for, significant or
//! not: a large row with a wide interval is still where the time went, and
//! its mark says it is not established) and the listed rows' self
//! differences are summed against the measured change; what they leave is
//! the unexplained remainder. Left out: where the profiles come from
//! (`measure::profile`), reading them out of documents (`compare::explain`),
//! off-CPU attribution, and the time per op's own uncertainty (each side's
//! time per op is taken as given; the comparison's verdict tests it).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::paired::t_quantile;
use super::replicates::t_cdf;
use super::summary::{mean, stddev};
use super::verdict::{holm, holm_levels};

/// A function is tested (in the Holm family) when its self samples are at
/// least this share of a side's samples on either side.
pub const DEFAULT_FLOOR: f64 = 0.005;

/// Rows a differential lists unless asked otherwise.
pub const DEFAULT_TOP: usize = 8;

/// One profiling pass: its folded stacks → samples, its total samples (the
/// stacks' and those not kept by name), and the time per op its shares are
/// of (the series' unit).
#[derive(Debug, Clone, Copy)]
pub struct PassCounts<'a> {
    pub stacks: &'a BTreeMap<String, u64>,
    pub total: u64,
    pub time_per_op: f64,
}

/// One side of a differential: its passes and its time per op.
#[derive(Debug, Clone)]
pub struct SideProfile<'a> {
    pub passes: Vec<PassCounts<'a>>,
    /// The side's time per op (its centre, in the series' unit): the
    /// measured change is the difference of the two sides'.
    pub time_per_op: f64,
}

impl<'a> SideProfile<'a> {
    /// A side whose passes each hold all their samples by name and weigh
    /// them by the side's one `time_per_op`.
    pub fn at_one_time(passes: &'a [BTreeMap<String, u64>], time_per_op: f64) -> Self {
        Self {
            passes: passes
                .iter()
                .map(|p| PassCounts {
                    stacks: p,
                    total: p.values().sum(),
                    time_per_op,
                })
                .collect(),
            time_per_op,
        }
    }
}

/// How to compute a differential.
#[derive(Debug, Clone, Copy)]
pub struct DifferentialOptions {
    /// The family-wise significance level of the Holm procedure.
    pub alpha: f64,
    /// How many rows to list.
    pub top: usize,
    /// The smallest self share (on either side) of a tested function.
    pub floor: f64,
}

impl Default for DifferentialOptions {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            top: DEFAULT_TOP,
            floor: DEFAULT_FLOOR,
        }
    }
}

/// Where a change went: the top rows, the measured change, what the rows
/// account for and what they leave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Differential {
    /// Each side's time per op (the series' unit).
    pub baseline_per_op: f64,
    pub candidate_per_op: f64,
    /// candidate − baseline per op: the change the verdict is about.
    pub measured_change: f64,
    /// Passes with samples, and their samples, on each side.
    pub baseline_passes: usize,
    pub candidate_passes: usize,
    pub baseline_samples: u64,
    pub candidate_samples: u64,
    /// Functions seen on either side.
    pub functions: usize,
    /// Functions tested (the Holm family: self share at least `floor` on a side).
    pub tested: usize,
    /// Functions called significant after Holm (listed or not).
    pub significant: usize,
    pub floor: f64,
    pub alpha: f64,
    /// The listed rows: significant ones first, then by the size of their
    /// self difference.
    pub rows: Vec<FunctionRow>,
    /// The sum of the listed rows' self differences.
    pub listed_change: f64,
    /// `measured_change` − `listed_change`.
    pub unexplained: f64,
    /// What limits the result (too few passes, a side without samples).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One function on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    pub function: String,
    pub presence: Presence,
    /// Its self difference, after Holm.
    pub significant: bool,
    /// Time per op with this function as the leaf.
    pub self_time: Difference,
    /// Time per op with this function anywhere on the stack.
    pub inclusive_time: Difference,
}

/// Whether a function is on both sides or one only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    /// In the candidate's profile only.
    Appeared,
    /// In the baseline's profile only.
    Vanished,
}

/// A function's time per op on each side and their difference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub baseline: f64,
    pub candidate: f64,
    /// candidate − baseline.
    pub difference: f64,
    /// The interval of the difference at `ci_level` (absent with fewer
    /// than two passes a side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    /// The row's level: its Holm level when tested, else 0.95.
    pub ci_level: f64,
    /// Raw and Holm-adjusted p-values of a tested self difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
}

impl FunctionRow {
    /// The share of `measured_change` this row's self difference accounts
    /// for (`None` when nothing changed).
    pub fn share_of(&self, measured_change: f64) -> Option<f64> {
        (measured_change != 0.0).then(|| self.self_time.difference / measured_change)
    }
}

/// Per function, per pass, its time per op on one side: (self, inclusive).
type PassValues = BTreeMap<String, (Vec<f64>, Vec<f64>)>;

/// One side's per-pass values of every function, its passes with samples
/// and its samples; self counts summed over passes too (for the floor).
struct SideValues {
    values: PassValues,
    self_counts: BTreeMap<String, u64>,
    passes: usize,
    samples: u64,
}

impl SideValues {
    fn of(side: &SideProfile) -> Self {
        let passes: Vec<&PassCounts> = side.passes.iter().filter(|p| p.total > 0).collect();
        let n = passes.len();
        let mut counts: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        for (i, pass) in passes.iter().enumerate() {
            for (stack, &count) in pass.stacks.iter() {
                let frames: Vec<&str> = stack.split(';').collect();
                let Some(leaf) = frames.last() else { continue };
                counts
                    .entry((*leaf).to_string())
                    .or_insert_with(|| (vec![0; n], vec![0; n]))
                    .0[i] += count;
                let unique: BTreeSet<&str> = frames.iter().copied().collect();
                for f in unique {
                    counts
                        .entry(f.to_string())
                        .or_insert_with(|| (vec![0; n], vec![0; n]))
                        .1[i] += count;
                }
            }
        }
        let per_op = |c: &[u64]| -> Vec<f64> {
            c.iter()
                .zip(&passes)
                .map(|(&c, p)| c as f64 / p.total as f64 * p.time_per_op)
                .collect()
        };
        let self_counts = counts
            .iter()
            .map(|(f, (s, _))| (f.clone(), s.iter().sum()))
            .collect();
        let values = counts
            .iter()
            .map(|(f, (s, i))| (f.clone(), (per_op(s), per_op(i))))
            .collect();
        Self {
            values,
            self_counts,
            passes: n,
            samples: passes.iter().map(|p| p.total).sum(),
        }
    }

    /// Function `f`'s per-pass values, zeros when the side never saw it.
    fn get(&self, f: &str) -> (Vec<f64>, Vec<f64>) {
        self.values
            .get(f)
            .cloned()
            .unwrap_or_else(|| (vec![0.0; self.passes], vec![0.0; self.passes]))
    }

    /// Whether `f`'s self samples reach `floor` of this side's.
    fn reaches(&self, f: &str, floor: f64) -> bool {
        let count = self.self_counts.get(f).copied().unwrap_or(0);
        self.samples > 0 && count as f64 >= floor * self.samples as f64
    }
}

/// Welch's t on two sides' per-pass values: the difference of their means,
/// its standard error and degrees of freedom (`None` with fewer than two
/// values on a side).
#[derive(Debug, Clone, Copy)]
struct Welch {
    difference: f64,
    se: f64,
    df: f64,
}

impl Welch {
    fn of(baseline: &[f64], candidate: &[f64]) -> Option<Self> {
        let (na, nb) = (baseline.len(), candidate.len());
        if na < 2 || nb < 2 {
            return None;
        }
        let (ma, mb) = (mean(baseline), mean(candidate));
        let va = stddev(baseline, ma).powi(2) / na as f64;
        let vb = stddev(candidate, mb).powi(2) / nb as f64;
        let se = (va + vb).sqrt();
        let df = if se > 0.0 {
            (va + vb).powi(2) / (va * va / (na - 1) as f64 + vb * vb / (nb - 1) as f64)
        } else {
            (na + nb - 2) as f64
        };
        Some(Self {
            difference: mb - ma,
            se,
            df,
        })
    }

    /// The two-sided p-value of no difference.
    fn p_value(&self) -> f64 {
        if self.se > 0.0 {
            (2.0 * (1.0 - t_cdf(self.difference.abs() / self.se, self.df))).clamp(0.0, 1.0)
        } else if self.difference == 0.0 {
            1.0
        } else {
            0.0
        }
    }

    /// The interval at `level`.
    fn interval(&self, level: f64) -> (f64, f64) {
        let half = t_quantile(0.5 + level / 2.0, self.df) * self.se;
        (self.difference - half, self.difference + half)
    }
}

/// A side's mean of `values` (0 with none).
fn side_mean(values: &[f64]) -> f64 {
    if values.is_empty() { 0.0 } else { mean(values) }
}

/// The difference of `f`'s per-pass values at `level`, with p-values when given.
fn difference(
    baseline: &[f64],
    candidate: &[f64],
    level: f64,
    p: Option<(f64, f64)>,
) -> Difference {
    let welch = Welch::of(baseline, candidate);
    let interval = welch.map(|w| w.interval(level));
    let (b, c) = (side_mean(baseline), side_mean(candidate));
    Difference {
        baseline: b,
        candidate: c,
        difference: c - b,
        ci_low: interval.map(|i| i.0),
        ci_high: interval.map(|i| i.1),
        ci_level: level,
        p_value: p.map(|p| p.0),
        p_adjusted: p.map(|p| p.1),
    }
}

/// Where the change from `baseline` to `candidate` went ([`Differential`]).
pub fn differential(
    baseline: &SideProfile,
    candidate: &SideProfile,
    options: DifferentialOptions,
) -> Differential {
    let (a, b) = (SideValues::of(baseline), SideValues::of(candidate));
    let names: BTreeSet<&String> = a.values.keys().chain(b.values.keys()).collect();
    let testable = a.passes >= 2 && b.passes >= 2;
    // The family: functions above the floor, tested by their self difference.
    let tested: Vec<(&String, Welch)> = names
        .iter()
        .filter(|f| testable && (a.reaches(f, options.floor) || b.reaches(f, options.floor)))
        .filter_map(|f| Some((*f, Welch::of(&a.get(f).0, &b.get(f).0)?)))
        .collect();
    let raw: Vec<f64> = tested.iter().map(|(_, w)| w.p_value()).collect();
    let (adjusted, levels) = (holm(&raw), holm_levels(&raw, options.alpha));
    let judged: BTreeMap<&String, (f64, f64, f64)> = tested
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (*f, (raw[i], adjusted[i], levels[i])))
        .collect();
    let mut rows: Vec<FunctionRow> = names
        .iter()
        .map(|f| {
            let ((sa, ia), (sb, ib)) = (a.get(f), b.get(f));
            let judgement = judged.get(f).copied();
            let level = judgement.map_or(0.95, |j| j.2);
            let self_time = difference(&sa, &sb, level, judgement.map(|j| (j.0, j.1)));
            let excludes_zero = self_time.ci_low.is_some_and(|lo| lo > 0.0)
                || self_time.ci_high.is_some_and(|hi| hi < 0.0);
            let significant = judgement.is_some_and(|j| j.1 < options.alpha) && excludes_zero;
            let presence = match (a.values.contains_key(*f), b.values.contains_key(*f)) {
                (false, true) => Presence::Appeared,
                (true, false) => Presence::Vanished,
                _ => Presence::Both,
            };
            FunctionRow {
                function: (*f).clone(),
                presence,
                significant,
                self_time,
                inclusive_time: difference(&ia, &ib, level, None),
            }
        })
        .filter(|r| r.self_time.baseline > 0.0 || r.self_time.candidate > 0.0)
        .collect();
    let significant = rows.iter().filter(|r| r.significant).count();
    rows.sort_by(|x, y| {
        y.self_time
            .difference
            .abs()
            .total_cmp(&x.self_time.difference.abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    rows.truncate(options.top);
    let measured_change = candidate.time_per_op - baseline.time_per_op;
    let listed_change: f64 = rows.iter().map(|r| r.self_time.difference).sum();
    Differential {
        baseline_per_op: baseline.time_per_op,
        candidate_per_op: candidate.time_per_op,
        measured_change,
        baseline_passes: a.passes,
        candidate_passes: b.passes,
        baseline_samples: a.samples,
        candidate_samples: b.samples,
        functions: names.len(),
        tested: tested.len(),
        significant,
        floor: options.floor,
        alpha: options.alpha,
        rows,
        listed_change,
        unexplained: measured_change - listed_change,
        notes: notes(&a, &b),
    }
}

/// What limits a differential of sides `a` and `b`, in words.
fn notes(a: &SideValues, b: &SideValues) -> Vec<String> {
    let mut notes = Vec::new();
    for (side, v) in [("baseline", a), ("candidate", b)] {
        if v.samples == 0 {
            notes.push(format!(
                "the {side}'s profile has no samples: nothing to attribute on that side"
            ));
        }
    }
    if a.passes < 2 || b.passes < 2 {
        notes.push(format!(
            "fewer than two profiling passes on a side ({} and {}): no interval, and no \
             function is called significant",
            a.passes, b.passes
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// A syscall's profile: stacks and their true shares (summing to 1).
    const STACKS: [(&str, f64); 10] = [
        (
            "main;loop;syscall;entry_SYSCALL_64;do_syscall_64;__x64_sys_getpid",
            0.22,
        ),
        (
            "main;loop;syscall;entry_SYSCALL_64;do_syscall_64;audit_filter_syscall",
            0.08,
        ),
        (
            "main;loop;syscall;entry_SYSCALL_64;do_syscall_64;syscall_trace_enter",
            0.06,
        ),
        (
            "main;loop;syscall;entry_SYSCALL_64;syscall_exit_to_user_mode",
            0.18,
        ),
        ("main;loop;syscall;entry_SYSCALL_64", 0.14),
        ("main;loop;syscall;entry_SYSCALL_64;do_syscall_64", 0.10),
        ("main;loop;syscall", 0.09),
        ("main;loop", 0.07),
        ("main;loop;syscall;srso_safe_ret", 0.05),
        (
            "main;loop;syscall;entry_SYSCALL_64;do_syscall_64;x64_sys_call",
            0.01,
        ),
    ];

    /// `passes` passes of `samples` samples each, drawn from `shares`.
    fn passes(
        rng: &mut SplitMix64,
        shares: &[(String, f64)],
        n: usize,
        samples: u64,
    ) -> Vec<BTreeMap<String, u64>> {
        let total: f64 = shares.iter().map(|(_, s)| s).sum();
        (0..n)
            .map(|_| {
                let mut stacks = BTreeMap::new();
                for _ in 0..samples {
                    let mut u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
                    let pick = shares
                        .iter()
                        .find(|(_, s)| {
                            u -= s;
                            u < 0.0
                        })
                        .unwrap_or(&shares[shares.len() - 1]);
                    *stacks.entry(pick.0.clone()).or_insert(0) += 1;
                }
                stacks
            })
            .collect()
    }

    fn shares() -> Vec<(String, f64)> {
        STACKS.iter().map(|(s, p)| (s.to_string(), *p)).collect()
    }

    /// The baseline's shares with the stack ending in `leaf` taking `extra`
    /// more time per op (of `t`): the candidate's shares and time per op.
    fn planted(leaf: &str, t: f64, extra: f64) -> (Vec<(String, f64)>, f64) {
        let t_b = t + extra;
        let shares = shares()
            .into_iter()
            .map(|(s, p)| {
                let ns = p * t + if s.ends_with(leaf) { extra } else { 0.0 };
                (s, ns / t_b)
            })
            .collect();
        (shares, t_b)
    }

    fn side(passes: &[BTreeMap<String, u64>], time_per_op: f64) -> SideProfile<'_> {
        SideProfile::at_one_time(passes, time_per_op)
    }

    fn row<'a>(d: &'a Differential, f: &str) -> &'a FunctionRow {
        d.rows.iter().find(|r| r.function == f).unwrap()
    }

    #[test]
    fn the_interval_of_a_known_difference_covers_it_about_95_percent_of_the_time() {
        // audit_filter_syscall takes 30 ns more per op of 200: its true self
        // difference is 30 ns; the plain 95 % Welch interval over 5 passes a
        // side (2000 samples each) should cover it about 95 % of the time.
        let mut rng = SplitMix64::new(37);
        let (b_shares, t_b) = planted("audit_filter_syscall", 200.0, 30.0);
        let (trials, mut covered, mut covered_judged) = (400, 0, 0);
        for _ in 0..trials {
            let pa = passes(&mut rng, &shares(), 5, 2000);
            let pb = passes(&mut rng, &b_shares, 5, 2000);
            let (a, b) = (
                SideValues::of(&side(&pa, 200.0)),
                SideValues::of(&side(&pb, t_b)),
            );
            let w = Welch::of(
                &a.get("audit_filter_syscall").0,
                &b.get("audit_filter_syscall").0,
            )
            .unwrap();
            let (lo, hi) = w.interval(0.95);
            covered += usize::from(lo <= 30.0 && 30.0 <= hi);
            let d = differential(&side(&pa, 200.0), &side(&pb, t_b), Default::default());
            let r = &row(&d, "audit_filter_syscall").self_time;
            covered_judged += usize::from(r.ci_low.unwrap() <= 30.0 && 30.0 <= r.ci_high.unwrap());
        }
        let rate = covered as f64 / trials as f64;
        assert!(
            (0.91..=0.985).contains(&rate),
            "95 % interval coverage {rate}"
        );
        let judged = covered_judged as f64 / trials as f64;
        assert!(
            judged >= rate && judged >= 0.93,
            "Holm-level coverage {judged}"
        );
    }

    #[test]
    fn the_same_profile_twice_rarely_calls_any_function_significant() {
        // A/A: the target is no function significant in at least 19
        // of 20 comparisons; over 300 the rate of any must stay near α.
        let mut rng = SplitMix64::new(2037);
        let trials = 300;
        let mut flagged = 0;
        for _ in 0..trials {
            let pa = passes(&mut rng, &shares(), 5, 1000);
            let pb = passes(&mut rng, &shares(), 5, 1000);
            let d = differential(&side(&pa, 150.0), &side(&pb, 150.0), Default::default());
            assert!(d.tested >= 10, "{d:?}");
            flagged += usize::from(d.significant > 0);
        }
        let rate = flagged as f64 / trials as f64;
        assert!(
            rate <= 0.10,
            "A/A comparisons with a significant function: {rate}"
        );
    }

    #[test]
    fn a_planted_shift_is_the_top_row_and_leaves_little_unexplained() {
        let mut rng = SplitMix64::new(7);
        let (b_shares, t_b) = planted("audit_filter_syscall", 191.0, 26.0);
        let pa = passes(&mut rng, &shares(), 5, 3000);
        let pb = passes(&mut rng, &b_shares, 5, 3000);
        let d = differential(&side(&pa, 191.0), &side(&pb, t_b), Default::default());
        let top = &d.rows[0];
        assert_eq!(top.function, "audit_filter_syscall", "{d:#?}");
        assert!(top.significant && top.presence == Presence::Both);
        assert!((top.self_time.difference - 26.0).abs() < 4.0, "{top:?}");
        assert!((top.share_of(d.measured_change).unwrap() - 1.0).abs() < 0.15);
        // Its callers' inclusive times grow by as much.
        let caller = row(&d, "do_syscall_64");
        assert!(caller.inclusive_time.difference > 20.0, "{caller:?}");
        assert!((d.measured_change - 26.0).abs() < 1e-9);
        assert!(d.unexplained.abs() < 0.15 * 26.0, "{d:#?}");
        assert!((d.listed_change + d.unexplained - d.measured_change).abs() < 1e-9);
        assert!(d.rows.len() <= DEFAULT_TOP && d.notes.is_empty());
        // The other rows' intervals sit around 0: none significant.
        assert_eq!(d.significant, 1, "{d:#?}");
    }

    #[test]
    fn functions_on_one_side_only_are_named_as_appeared_or_vanished() {
        let mut rng = SplitMix64::new(11);
        let mut b_shares: Vec<(String, f64)> = shares()
            .into_iter()
            .filter(|(s, _)| !s.ends_with("audit_filter_syscall"))
            .collect();
        b_shares.push((
            "main;loop;syscall;entry_SYSCALL_64;do_syscall_64;__seccomp_filter".into(),
            0.3,
        ));
        let pa = passes(&mut rng, &shares(), 5, 2000);
        let pb = passes(&mut rng, &b_shares, 5, 2000);
        let d = differential(&side(&pa, 100.0), &side(&pb, 140.0), Default::default());
        let seccomp = row(&d, "__seccomp_filter");
        assert_eq!(seccomp.presence, Presence::Appeared);
        assert!(seccomp.significant && seccomp.self_time.baseline == 0.0);
        let audit = row(&d, "audit_filter_syscall");
        assert_eq!(audit.presence, Presence::Vanished);
        assert!(audit.significant && audit.self_time.candidate == 0.0);
        assert_eq!(row(&d, "do_syscall_64").presence, Presence::Both);
    }

    #[test]
    fn fewer_than_two_passes_a_side_give_no_interval_and_no_significance() {
        let mut rng = SplitMix64::new(5);
        let (b_shares, t_b) = planted("audit_filter_syscall", 200.0, 100.0);
        let pa = passes(&mut rng, &shares(), 1, 5000);
        let pb = passes(&mut rng, &b_shares, 5, 5000);
        let d = differential(&side(&pa, 200.0), &side(&pb, t_b), Default::default());
        assert_eq!((d.tested, d.significant), (0, 0));
        assert!(d.rows.iter().all(|r| !r.significant
            && r.self_time.ci_low.is_none()
            && r.self_time.p_value.is_none()));
        assert_eq!(d.rows[0].function, "audit_filter_syscall");
        assert!(
            d.notes[0].contains("fewer than two profiling passes"),
            "{:?}",
            d.notes
        );
        // A side without samples: said, nothing attributed to it.
        let empty: Vec<BTreeMap<String, u64>> = Vec::new();
        let d = differential(&side(&empty, 200.0), &side(&pb, t_b), Default::default());
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("baseline's profile has no samples"))
        );
    }

    #[test]
    fn recursion_counts_once_inclusive_and_other_samples_dilute_the_shares() {
        let stacks: BTreeMap<String, u64> =
            [("a;b;a".to_string(), 2), ("a;c".to_string(), 2)].into();
        // Four samples by name and four beyond the limit: shares of eight.
        let pass = PassCounts {
            stacks: &stacks,
            total: 8,
            time_per_op: 80.0,
        };
        let one = SideProfile {
            passes: vec![pass, pass],
            time_per_op: 80.0,
        };
        let d = differential(&one, &one, Default::default());
        let a = row(&d, "a");
        assert_eq!(
            (a.self_time.baseline, a.inclusive_time.baseline),
            (20.0, 40.0)
        );
        assert_eq!(row(&d, "c").self_time.candidate, 20.0);
        assert_eq!(d.significant, 0);
        assert!((d.listed_change - 0.0).abs() < 1e-12 && d.unexplained == 0.0);
    }
}

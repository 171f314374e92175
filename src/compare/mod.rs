//! Turning result documents into comparisons and verdicts.
//!
//! Separately saved runs ([`compare_sides`]): the first side is the baseline;
//! a side is one document or several (the stored runs that share a label,
//! which are replicates of each other). Every case present on every side
//! (matched by benchmark, case and configuration) is compared, each later side
//! against the baseline, at the level that is replicated: the invocation
//! (`stats::replicates`) — each invocation's median is one value, a run of one
//! invocation is one. One invocation a side says nothing about how far
//! separate invocations land, so the spread then comes from stored runs of
//! the same case ([`Priors`]), or there is no test (too few). p-values are
//! Holm-adjusted across all comparisons; verdicts have an equivalence
//! margin. Cases missing from some side are listed, environment keys that
//! differ are shown, and so is a change of the machine's own speed that the
//! drift sentinels saw, and sides measured in different conditions (other
//! processes busy on one, [`conditions`]), which also qualify the verdicts'
//! words ([`Comparison::verdict_words`]). A case with a sample that is not positive (possible
//! when a cheap operation's overhead was subtracted) is listed as not
//! compared, with the reason. [`paired`] compares the configurations of one
//! run round by round instead; [`history`] looks for changes over time in a
//! case's stored runs.

pub mod case_query;
pub mod conditions;
pub mod decide;
pub mod explain;
pub mod history;
pub mod regressions;

pub mod fleet;
pub mod gate;

use std::collections::BTreeMap;

use crate::document::{
    COMMAND_BENCH, ComparisonRecord, DEFAULT_CONFIG, Document, ReplicateUnit, Replication, Series,
    Unit,
};
use crate::error::{Error, Result};
use crate::stats::paired::{MAX_ROUNDS, SIGN_FLIP_DRAWS, block_medians, paired_log_ratio};
use crate::stats::replicates::{Prior, SpreadSource, compare_replicates, geometric_centre};
use crate::stats::verdict::{
    Power, RatioCi, Verdict, holm, holm_levels, t_interval_at, verdict_at_level,
};
use crate::stats::{Summary, summarize};

/// One side of a comparison of saved runs: a name and its runs (replicates).
#[derive(Debug, Clone)]
pub struct Side<'a> {
    pub label: String,
    pub docs: Vec<&'a Document>,
}

use crate::document::CaseKey;

/// The spread of single invocations of each case, from stored runs of it on
/// the same host and kernel ([`Prior::from_runs`]), for comparisons whose
/// sides hold one invocation each.
pub type Priors = BTreeMap<CaseKey, Prior>;

/// A relative change of a drift sentinel beyond this, significant, is flagged.
pub const DRIFT_FLAG: f64 = 0.03;

/// How to compare.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Equivalence margin as a fraction (0.01 = ±1 %).
    pub equivalence: f64,
    /// Significance level of the adjusted p-values.
    pub alpha: f64,
    /// Seed of the bootstrap (recorded so results can be reproduced).
    pub seed: u64,
    pub resamples: usize,
    /// Explain every compared change by its profiles (`compare --explain`),
    /// not only the significant ones ([`Comparison::explanation`]).
    pub explain: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            equivalence: 0.01,
            alpha: 0.05,
            seed: 0,
            resamples: 10_000,
            explain: false,
        }
    }
}

/// One case as seen in every document, in document order.
#[derive(Debug, Clone)]
pub struct CaseRow {
    pub key: CaseKey,
    pub unit: Unit,
    /// Bandwidth cases: the bytes one operation moves (the sides' medians
    /// are shown as MB/s too; the ratio stays one of times, so a higher
    /// bandwidth is a ratio below 1 and called faster).
    pub bytes_per_op: Option<f64>,
    pub summaries: Vec<Summary>,
    /// One change per document after the first.
    pub changes: Vec<Change>,
    /// Where each change went, by the sides' profiles, one per change
    /// ([`explain::explain_change`]); empty where profiles are not looked
    /// at (commands of `osbench time`).
    pub explanations: Vec<crate::document::Explanation>,
    /// Per side, the background loads its series ran beside: (spec, what
    /// they count, count per second over all its runs), so that a faster
    /// case under a slower load shows; empty where no side ran one.
    pub loads: Vec<Vec<(String, String, f64)>>,
}

/// Per side, the loads of its series and their throughput (empty when no
/// side ran a load).
fn side_loads<'s>(sides: impl Iterator<Item = Vec<&'s Series>>) -> Vec<Vec<(String, String, f64)>> {
    let per_side: Vec<Vec<(String, String, f64)>> = sides
        .map(|series| {
            let runs: Vec<crate::document::LoadRun> = series
                .iter()
                .flat_map(|s| s.loads.iter().cloned())
                .collect();
            crate::document::load_rates(&runs)
        })
        .collect();
    match per_side.iter().all(Vec::is_empty) {
        true => Vec::new(),
        false => per_side,
    }
}

/// A candidate against the baseline for one case.
#[derive(Debug, Clone, Copy)]
pub struct Change {
    /// Candidate ÷ baseline (above 1: the candidate takes longer), with its
    /// unadjusted 95 % interval and the 90 % one the equivalence test uses.
    pub ci: RatioCi,
    /// The confidence level of the interval the verdict was judged on
    /// ([`Change::judged`]; 0.95 with one comparison).
    pub judged_level: f64,
    /// Degrees of freedom of the t interval on the logs (0: no interval).
    pub df: f64,
    pub p_value: f64,
    /// After Holm's adjustment over every change of the comparison.
    pub p_adjusted: f64,
    pub verdict: Verdict,
    /// How small a p-value the test could give with this data.
    pub power: Power,
    /// What the test was replicated over.
    pub replication: Replication,
    /// False when no spread between replicates is known (one invocation a
    /// side, no stored runs): no interval, no test, the verdict too-few.
    pub testable: bool,
    /// About how long one more replicate takes (an invocation of the runs
    /// compared, a round of the run), from the documents' start and end
    /// times; `None` where they do not tell.
    pub seconds_per_replicate: Option<f64>,
}

impl Change {
    /// A change before the multiple-comparison adjustment and the verdict.
    fn unjudged(
        ci: RatioCi,
        df: f64,
        p_value: f64,
        power: Power,
        replication: Replication,
    ) -> Self {
        Self {
            ci,
            judged_level: 0.95,
            df,
            p_value,
            p_adjusted: p_value,
            verdict: Verdict::Inconclusive,
            power,
            replication,
            testable: true,
            seconds_per_replicate: None,
        }
    }

    /// One invocation a side and no spread known: the ratio alone.
    fn untestable(ratio: f64, replication: Replication, kind: ReplicateKind) -> Self {
        let point = RatioCi {
            ratio,
            ci95: (ratio, ratio),
            ci90: (ratio, ratio),
        };
        let power = Power {
            min_p: 1.0,
            n: 1,
            what: kind.what,
            flag: kind.flag,
            needs: 2,
        };
        Self {
            testable: false,
            ..Self::unjudged(point, 0.0, 1.0, power, replication)
        }
    }

    /// The interval the verdict was judged on: the 95 % one widened to
    /// [`Change::judged_level`], which agrees with the Holm-adjusted p
    /// ([`holm_levels`]): it excludes 1 exactly when the adjusted p of the t
    /// test is below α. Every rendering shows this one beside the verdict.
    pub fn judged(&self) -> (f64, f64) {
        t_interval_at(&self.ci, self.judged_level, self.df)
    }

    /// Whether this change trips a gate at `pct` % ([`Verdict::trips_gate`]).
    pub fn trips_gate(&self, pct: f64) -> bool {
        self.verdict.trips_gate(self.ci.ratio, pct)
    }

    /// The verdict in words ([`Verdict::words`]) with what it was
    /// replicated over and, when undecided, what would decide it; the same
    /// in every rendering.
    pub fn words(&self, options: &Options) -> String {
        join_decider(self.words_and_decider(options))
    }

    /// [`Change::words`] in its two parts: the verdict, and what would
    /// decide it ([`Change::decider`]) when it is undecided and that is known.
    pub fn words_and_decider(&self, options: &Options) -> (String, Option<String>) {
        if !self.testable {
            return (
                decide::untestable_words(self.ci.ratio, self.power.flag),
                None,
            );
        }
        let words = self
            .verdict
            .words(self.ci.ratio, options.equivalence, &self.power);
        let words = format!("{words} {}", self.replication.words());
        let decider = match self.verdict {
            Verdict::Inconclusive | Verdict::TooFew => self.decider().map(|d| d.words()),
            _ => None,
        };
        (words, decider.filter(|d| !d.is_empty()))
    }
}

/// A verdict and what would decide it in one sentence.
fn join_decider((words, decider): (String, Option<String>)) -> String {
    match decider {
        Some(decider) => format!("{words}; {decider}"),
        None => words,
    }
}

/// Everything `osbench compare` reports.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub labels: Vec<String>,
    pub rows: Vec<CaseRow>,
    /// Cases not present in every document: "bench case \[config\]" and the labels lacking it.
    pub missing: Vec<(String, Vec<String>)>,
    /// Cases in every document that have no ratio: "bench case \[config\]" and why.
    pub not_compared: Vec<(String, String)>,
    /// Environment keys whose values differ between the documents, with each value.
    pub env_diff: Vec<(String, Vec<String>)>,
    /// The declared factor: environment keys (or prefixes, see [`crate::env::is_factor`])
    /// whose differences are the change being tested; other differences are possible confounders.
    pub factors: Vec<String>,
    /// How ratios, intervals and p-values were computed, in words.
    pub method: String,
    /// What each side's value in `rows[].summaries` (`median`, `ci_low`,
    /// `ci_high`) is — the statistic whose ratio is the change:
    /// [`INVOCATION_CENTRE`] (saved runs), [`ROUND_CENTRE`] or [`BLOCK_CENTRE`].
    pub centre: &'static str,
    pub options: Options,
    /// What the drift sentinels say of the machine's own speed on each side
    /// against the baseline, where it changed ("the machine itself ran …").
    pub drift: Vec<String>,
    /// Kernel warnings and oopses a later side's log has that the baseline's
    /// has not, in words ([`crate::env::new_kernel_problems`]).
    pub kernel_log: Vec<String>,
    /// The conditions the sides were measured in, where a side was
    /// contended (other processes busy), in words ([`conditions::findings`]),
    /// and the cases whose samples formed two clusters on some sides only
    /// ([`conditions::mode_finding`]).
    pub conditions: Vec<String>,
    /// For each candidate (`labels[1..]`), how its conditions differ from the
    /// baseline's, short ("B measured while other processes used 1.0 of 2
    /// CPUs (python3 99 %); A quiet"), or `None` when they do not: its
    /// faster and slower verdicts are qualified ([`Comparison::verdict_words`]).
    pub differing_conditions: Vec<Option<String>>,
}

/// Compares `docs` (label, document), the first being the baseline, each
/// document a side of its own, with no stored runs to draw on.
pub fn compare(docs: &[(String, Document)], options: Options) -> Result<Comparison> {
    let sides: Vec<Side> = docs
        .iter()
        .map(|(label, doc)| Side {
            label: label.clone(),
            docs: vec![doc],
        })
        .collect();
    compare_sides(&sides, &Priors::new(), options)
}

/// One side's series of a case (one per run that has it), its summary and
/// its replicates.
struct SideCase<'a> {
    series: Vec<&'a Series>,
    summary: Summary,
    replicates: Vec<f64>,
    /// How long the side's runs took per invocation ([`seconds_per_invocation`]).
    seconds_per_invocation: Option<f64>,
}

impl<'a> SideCase<'a> {
    fn of(side: &Side<'a>, k: &CaseKey) -> Option<Self> {
        let series: Vec<&Series> = side
            .docs
            .iter()
            .filter_map(|d| d.series.iter().find(|t| t.key == *k))
            .collect();
        let replicates: Vec<f64> = series.iter().flat_map(|s| s.replicates()).collect();
        let mut summary = match &series[..] {
            [] => return None,
            [one] => one.summary.clone(),
            many => {
                let all: Vec<f64> = many
                    .iter()
                    .flat_map(|s| s.samples.iter().copied())
                    .collect();
                summarize(&all)?
            }
        };
        // The side's centre is what the ratio is of: the geometric mean of
        // its replicates (one invocation: its median), with their interval.
        if let Some((centre, (lo, hi))) = geometric_centre(&replicates) {
            (summary.median, summary.ci_low, summary.ci_high) = (centre, lo, hi);
            summary.ci_coverage = summary.ci_level;
        }
        let with_case: Vec<&Document> = side
            .docs
            .iter()
            .copied()
            .filter(|d| d.series.iter().any(|t| t.key == *k))
            .collect();
        Some(Self {
            series,
            summary,
            replicates,
            seconds_per_invocation: seconds_per_invocation(&with_case),
        })
    }
}

/// The runs' wall time from start to end over their invocations (a run
/// of one invocation is one); `None` when a run's times cannot be read.
fn seconds_per_invocation(docs: &[&Document]) -> Option<f64> {
    let mut seconds = 0.0;
    let mut invocations = 0;
    for d in docs {
        seconds += d.run.wall_seconds()?;
        invocations += d.run.invocations.len().max(1);
    }
    (invocations > 0 && seconds > 0.0).then(|| seconds / invocations as f64)
}

/// What became of one case of a comparison of saved runs.
enum CaseOutcome {
    Row(CaseRow),
    /// Absent from these sides.
    Missing(Vec<String>),
    /// In every side, but with no ratio, and why.
    NotCompared(String),
}

/// Compares `sides`, the first being the baseline, by invocation; `priors`
/// gives the spread of cases whose sides hold one invocation each.
pub fn compare_sides(sides: &[Side], priors: &Priors, options: Options) -> Result<Comparison> {
    if sides.len() < 2 {
        return Err(Error::Measure(
            "compare needs at least two documents".into(),
        ));
    }
    let labels: Vec<String> = sides.iter().map(|s| s.label.clone()).collect();
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    let mut not_compared = Vec::new();
    let mut seen: Vec<&CaseKey> = Vec::new();
    let all_series = sides
        .iter()
        .flat_map(|side| &side.docs)
        .flat_map(|d| &d.series);
    for s in all_series {
        if seen.contains(&&s.key) {
            continue;
        }
        seen.push(&s.key);
        let k = s.key.clone();
        let name = k.to_string();
        match compare_case(sides, &labels, &name, k, priors)? {
            CaseOutcome::Row(row) => rows.push(row),
            CaseOutcome::Missing(lacking) => missing.push((name, lacking)),
            CaseOutcome::NotCompared(why) => not_compared.push((name, why)),
        }
    }
    if rows.is_empty() {
        return Err(nothing_compared(&labels, &not_compared));
    }
    apply_verdicts(&mut rows, options);
    for row in &mut rows {
        row.explanations = explain_row(sides, row, options.alpha);
    }
    let firsts: Vec<&Document> = sides.iter().map(|s| s.docs[0]).collect();
    let envs: Vec<&crate::env::Environment> = firsts.iter().map(|d| &d.env).collect();
    let env_diff = crate::env::diff(&envs);
    let kernel_log = crate::env::new_kernel_problems(&envs, &labels);
    let keys: Vec<&CaseKey> = rows.iter().map(|r| &r.key).collect();
    let (condition_findings, differing_conditions) = conditions::of_sides(sides, &keys);
    let method = "Unpaired, by invocation (each invocation's median one replicate; a run of one \
                  invocation is one): ratios of geometric means (candidate ÷ A, above 1: slower) \
                  with Student t 95% intervals on their logs, variance pooled over both sides \
                  (one invocation a side: the spread of stored runs of the case on the same host \
                  and kernel), two-sided t p"
        .to_string();
    Ok(Comparison {
        labels,
        rows,
        missing,
        not_compared,
        env_diff,
        factors: Vec::new(),
        method,
        centre: INVOCATION_CENTRE,
        options,
        drift: drift_findings(sides),
        kernel_log,
        conditions: condition_findings,
        differing_conditions,
    })
}

/// Where each change of `row` (compared across `sides`) went, by the
/// sides' profiles: each side's series of the case from every run that has
/// it, and its centre from the row's summaries.
fn explain_row(sides: &[Side], row: &CaseRow, alpha: f64) -> Vec<crate::document::Explanation> {
    let series: Vec<Vec<&Series>> = sides
        .iter()
        .map(|side| {
            side.docs
                .iter()
                .filter_map(|d| d.series.iter().find(|t| t.key == row.key))
                .collect()
        })
        .collect();
    let side = |i: usize| explain::ChangeSide {
        label: &sides[i].label,
        series: &series[i],
        centre: row.summaries[i].median,
    };
    (1..sides.len())
        .map(|i| explain::explain_change(side(0), side(i), alpha))
        .collect()
}

/// Case `k` (shown as `name`) on every side: its row, or why it has none.
/// Units that differ between the sides are an error.
fn compare_case(
    sides: &[Side],
    labels: &[String],
    name: &str,
    k: CaseKey,
    priors: &Priors,
) -> Result<CaseOutcome> {
    let found: Vec<Option<SideCase>> = sides.iter().map(|side| SideCase::of(side, &k)).collect();
    if found.iter().any(Option::is_none) {
        let lacking = labels.iter().zip(&found).filter(|(_, f)| f.is_none());
        return Ok(CaseOutcome::Missing(
            lacking.map(|(l, _)| l.clone()).collect(),
        ));
    }
    let found: Vec<SideCase> = found.into_iter().flatten().collect();
    let first_unit = found[0].series[0].unit;
    if let Some(other) = found
        .iter()
        .flat_map(|f| &f.series)
        .find(|t| t.unit != first_unit)
    {
        return Err(Error::Measure(format!(
            "{name} is in {first_unit} in one document and {} in another; they cannot be compared",
            other.unit
        )));
    }
    // A ratio needs positive times; documents are checked when read, so
    // the samples are there and finite.
    if let Some((label, s)) = labels.iter().zip(&found).find_map(|(label, f)| {
        f.series
            .iter()
            .find(|s| s.samples.iter().any(|&v| v <= 0.0))
            .map(|s| (label, s))
    }) {
        let v = s.samples.iter().copied().fold(f64::INFINITY, f64::min);
        return Ok(CaseOutcome::NotCompared(format!(
            "a sample in {label} is {v} {}, not positive (the overhead subtracted \
             exceeds the operation), so there is no ratio",
            s.unit.symbol()
        )));
    }
    let prior = priors.get(&k).copied();
    let changes: Vec<Change> = found[1..]
        .iter()
        .map(|cand| {
            let kind = if k.bench == COMMAND_BENCH {
                LABELLED_RUNS
            } else {
                INVOCATIONS
            };
            let mut change = replicate_change(&found[0].replicates, &cand.replicates, prior, kind);
            change.seconds_per_replicate =
                match (found[0].seconds_per_invocation, cand.seconds_per_invocation) {
                    (Some(a), Some(b)) => Some((a + b) / 2.0),
                    (a, b) => a.or(b),
                };
            change
        })
        .collect();
    if let Some(ch) = changes.iter().find(|ch| {
        let r = &ch.ci;
        ![r.ratio, r.ci95.0, r.ci95.1, r.ci90.0, r.ci90.1]
            .into_iter()
            .all(|x| x.is_finite() && x > 0.0)
    }) {
        return Ok(CaseOutcome::NotCompared(format!(
            "the ratio ({:e}) or its interval is not a finite positive number",
            ch.ci.ratio
        )));
    }
    Ok(CaseOutcome::Row(CaseRow {
        key: k,
        unit: first_unit,
        bytes_per_op: found[0].series[0].bytes_per_op,
        summaries: found.iter().map(|f| f.summary.clone()).collect(),
        changes,
        explanations: Vec::new(),
        loads: side_loads(found.iter().map(|f| f.series.clone())),
    }))
}

/// The error of a comparison with no row: why no case could be compared,
/// or that the sides share none.
fn nothing_compared(labels: &[String], not_compared: &[(String, String)]) -> Error {
    if not_compared.is_empty() {
        return Error::Measure(format!(
            "the documents have no case in common ({}); nothing to compare",
            labels.join(", ")
        ));
    }
    let why: Vec<String> = not_compared
        .iter()
        .map(|(case, why)| format!("{case}: {why}"))
        .collect();
    Error::Measure(format!("no case could be compared ({})", why.join("; ")))
}

/// What a replicate of a saved run is, and what sets it: an invocation of
/// `run` (`--invocations`), or a whole `time` run kept under one label (no option).
#[derive(Debug, Clone, Copy)]
struct ReplicateKind {
    what: &'static str,
    flag: &'static str,
}

const INVOCATIONS: ReplicateKind = ReplicateKind {
    what: "invocations",
    flag: "--invocations",
};
const LABELLED_RUNS: ReplicateKind = ReplicateKind {
    what: "`time` runs under one label",
    flag: "",
};

/// The change of one candidate side's replicates (of `kind`) against the baseline's.
fn replicate_change(
    baseline: &[f64],
    candidate: &[f64],
    prior: Option<Prior>,
    kind: ReplicateKind,
) -> Change {
    let mut replication = Replication {
        unit: ReplicateUnit::Invocations,
        baseline: baseline.len(),
        candidate: candidate.len(),
        prior_runs: None,
    };
    match compare_replicates(baseline, candidate, prior) {
        Some(t) => {
            if let SpreadSource::Prior(p) = t.source {
                replication.prior_runs = Some(p.runs);
            }
            let power = Power {
                min_p: 0.0,
                n: baseline.len().min(candidate.len()),
                what: kind.what,
                flag: kind.flag,
                needs: 2,
            };
            Change::unjudged(t.ci, t.df as f64, t.p_value, power, replication)
        }
        None => {
            let gm = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
            Change::untestable(gm(candidate) / gm(baseline), replication, kind)
        }
    }
}

/// Each candidate side's drift sentinels against the baseline's: a change of
/// the machine's own speed beyond [`DRIFT_FLAG`], significant, in words.
fn drift_findings(sides: &[Side]) -> Vec<String> {
    let readings = |side: &Side, name: &str| -> Vec<f64> {
        side.docs
            .iter()
            .flat_map(|d| &d.run.invocations)
            .flat_map(|i| i.sentinels_before.iter().chain(&i.sentinels_after))
            .filter(|r| r.name == name)
            .map(|r| r.ns_per_step)
            .collect()
    };
    let mut findings = Vec::new();
    for cand in &sides[1..] {
        for name in ["register-loop", "pointer-chase"] {
            let (a, b) = (readings(&sides[0], name), readings(cand, name));
            let Some(t) = compare_replicates(&a, &b, None) else {
                continue;
            };
            let change = t.ci.ratio - 1.0;
            if t.p_value < 0.05 && change.abs() > DRIFT_FLAG {
                findings.push(format!(
                    "the machine itself ran {:.1}% {} during {} than during {} (the {name} \
                     sentinel, timed outside every case, took {:.2} vs {:.2} ns per step): \
                     differences of that size may be the machine's, not the change's; \
                     re-run both sides",
                    change.abs() * 100.0,
                    if change > 0.0 { "slower" } else { "faster" },
                    cand.label,
                    sides[0].label,
                    crate::stats::summary::median(&b),
                    crate::stats::summary::median(&a),
                ));
            }
        }
    }
    findings
}

/// Compares the configurations of one run round by round (paired): the
/// first configuration is the baseline; each case's per-round medians give the
/// ratios ([`crate::stats::paired::paired_log_ratio`]); p-values are
/// Holm-adjusted across all comparisons, as for saved documents.
pub fn paired(doc: &Document, options: Options) -> Result<Comparison> {
    let names: Vec<String> = doc.run.configs.iter().map(|c| c.name.clone()).collect();
    if names.len() < 2 {
        return Err(Error::Measure(
            "a paired comparison needs at least two configurations".into(),
        ));
    }
    let mut rows: Vec<CaseRow> = doc
        .series
        .iter()
        .filter(|s| s.key.config == names[0])
        .filter_map(|base| paired_row(doc, &names, base, &options))
        .collect();
    if rows.is_empty() {
        return Err(Error::Measure(
            "no case has two complete rounds in every configuration".into(),
        ));
    }
    apply_verdicts(&mut rows, options);
    let method = paired_method(doc.run.schedule.len());
    Ok(Comparison {
        labels: names,
        rows,
        missing: Vec::new(),
        not_compared: Vec::new(),
        // One environment for the whole run; what each configuration's set-up
        // changed in it is the factor itself.
        factors: doc
            .run
            .config_env_diff
            .iter()
            .map(|(k, _)| k.clone())
            .collect(),
        env_diff: doc.run.config_env_diff.clone(),
        method,
        centre: ROUND_CENTRE,
        options,
        drift: Vec::new(),
        kernel_log: Vec::new(),
        conditions: Vec::new(),
        differing_conditions: Vec::new(),
    })
}

/// Case `base` (of the baseline configuration `names[0]`) compared round by
/// round with the same selected case in every other configuration; `None`
/// when a configuration lacks it or has fewer than two rounds of it.
fn paired_row(
    doc: &Document,
    names: &[String],
    base: &Series,
    options: &Options,
) -> Option<CaseRow> {
    // The same selected case in every configuration (by slot: a configuration
    // may have changed its parameters, and so its name).
    let same_case = |s: &&Series| match (s.slot, base.slot) {
        (Some(a), Some(b)) => a == b,
        _ => s.key.bench == base.key.bench && s.key.case == base.key.case,
    };
    let sides: Vec<&Series> = names
        .iter()
        .filter_map(|n| {
            doc.series
                .iter()
                .filter(|s| s.key.config == *n)
                .find(same_case)
        })
        .collect();
    let rounds = sides.iter().map(|s| s.rounds.len()).min().unwrap_or(0);
    if sides.len() < names.len() || rounds < 2 {
        return None; // interrupted before every configuration had two rounds of this case
    }
    let changes = sides[1..]
        .iter()
        .map(|cand| {
            let (r, p) = paired_log_ratio(&base.rounds[..rounds], &cand.rounds[..rounds]);
            let power = Power::sign_flip(rounds, options.alpha, "rounds", "--rounds");
            Change {
                seconds_per_replicate: doc
                    .run
                    .wall_seconds()
                    .map(|s| s / doc.run.schedule.len().max(1) as f64),
                ..Change::unjudged(
                    r,
                    (rounds - 1) as f64,
                    p,
                    power,
                    paired_replication(ReplicateUnit::Rounds, rounds),
                )
            }
        })
        .collect();
    let summaries: Vec<Summary> = sides
        .iter()
        .map(|s| centred(&s.summary, &s.rounds[..rounds]))
        .collect();
    Some(CaseRow {
        key: CaseKey::new(
            base.key.bench.clone(),
            base.key.case.clone(),
            DEFAULT_CONFIG,
        ),
        unit: base.unit,
        bytes_per_op: base.bytes_per_op,
        summaries: summaries.clone(),
        changes,
        loads: side_loads(sides.iter().map(|s| vec![*s])),
        explanations: (1..sides.len())
            .map(|k| {
                let side = |i: usize| explain::ChangeSide {
                    label: &names[i],
                    series: std::slice::from_ref(&sides[i]),
                    centre: summaries[i].median,
                };
                explain::explain_change(side(0), side(k), options.alpha)
            })
            .collect(),
    })
}

/// How [`paired`] compares `rounds` rounds, in words.
fn paired_method(rounds: usize) -> String {
    format!(
        "Paired over {rounds} rounds: geometric means of per-round ratios of medians (candidate ÷ A, \
         above 1: slower), t intervals on their logs, {}",
        if rounds > MAX_ROUNDS {
            format!("sign-flip p from {SIGN_FLIP_DRAWS} random sign patterns")
        } else {
            "exact sign-flip p".to_string()
        }
    )
}

/// Compares the commands of one `osbench time` run, paired by round: the
/// first command is the baseline; each command's wall times are cut into the
/// same consecutive blocks of rounds ([`block_medians`],
/// at most 20), and the blocks' medians are compared as rounds are.
pub fn commands(doc: &Document, options: Options) -> Result<Comparison> {
    let sides: Vec<&Series> = doc
        .series
        .iter()
        .filter(|s| s.key.bench == COMMAND_BENCH)
        .collect();
    let rounds = sides.iter().map(|s| s.samples.len()).min().unwrap_or(0);
    if sides.len() < 2 || rounds < 2 {
        return Err(Error::Measure(
            "comparing commands needs two commands with at least two runs each".into(),
        ));
    }
    let blocks = |s: &Series| block_medians(&s.samples[..rounds]);
    let base = blocks(sides[0]);
    let changes = sides[1..]
        .iter()
        .map(|cand| {
            let (r, p) = paired_log_ratio(&base, &blocks(cand));
            Change {
                seconds_per_replicate: doc.run.wall_seconds().map(|s| s / rounds as f64),
                ..Change::unjudged(
                    r,
                    (base.len() - 1) as f64,
                    p,
                    Power::sign_flip(base.len(), options.alpha, "runs", "--runs"),
                    paired_replication(ReplicateUnit::Blocks, base.len()),
                )
            }
        })
        .collect();
    let mut rows = vec![CaseRow {
        key: CaseKey::new(COMMAND_BENCH, "wall time", DEFAULT_CONFIG),
        unit: sides[0].unit,
        bytes_per_op: None,
        summaries: sides
            .iter()
            .map(|s| centred(&s.summary, &blocks(s)))
            .collect(),
        changes,
        explanations: Vec::new(),
        loads: Vec::new(),
    }];
    apply_verdicts(&mut rows, options);
    let method = format!(
        "Paired over {rounds} interleaved rounds{}: geometric means of per-block ratios of \
         medians (candidate ÷ A, above 1: slower), t intervals on their logs, exact sign-flip p",
        if base.len() == rounds {
            " (each round one block)".to_string()
        } else {
            format!(
                ", grouped into {} blocks of consecutive rounds (the exact test takes at most {MAX_ROUNDS})",
                base.len()
            )
        }
    );
    Ok(Comparison {
        labels: sides.iter().map(|s| s.key.case.clone()).collect(),
        rows,
        missing: Vec::new(),
        not_compared: Vec::new(),
        factors: Vec::new(),
        env_diff: Vec::new(),
        method,
        centre: BLOCK_CENTRE,
        options,
        drift: Vec::new(),
        kernel_log: Vec::new(),
        conditions: Vec::new(),
        differing_conditions: Vec::new(),
    })
}

/// What a comparison of saved runs shows for each side ([`Comparison::centre`]).
pub const INVOCATION_CENTRE: &str = "geometric mean of invocation medians";
/// What a paired comparison shows for each configuration ([`Comparison::centre`]).
pub const ROUND_CENTRE: &str = "geometric mean of round medians";
/// The same for the commands of `osbench time`, compared by blocks of runs.
pub const BLOCK_CENTRE: &str = "geometric mean of block medians";

/// `summary` with its centre and 95 % interval those of the paired values
/// (round or block medians) a paired ratio compares: the ratio of two
/// sides' centres is then the change itself. Unchanged when a value is not
/// positive (no geometric mean).
fn centred(summary: &Summary, paired_values: &[f64]) -> Summary {
    let mut s = summary.clone();
    if let Some((centre, (lo, hi))) = geometric_centre(paired_values) {
        (s.median, s.ci_low, s.ci_high) = (centre, lo, hi);
        s.ci_coverage = s.ci_level;
    }
    s
}

/// `n` paired replicates a side.
fn paired_replication(unit: ReplicateUnit, n: usize) -> Replication {
    Replication {
        unit,
        baseline: n,
        candidate: n,
        prior_runs: None,
    }
}

/// Holm-adjusts every change's p-value, widens its interval to agree with
/// it ([`holm_levels`]), and gives each its verdict, judged on that interval.
fn apply_verdicts(rows: &mut [CaseRow], options: Options) {
    let raw: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.changes.iter().map(|c| c.p_value))
        .collect();
    let mut adjusted = holm(&raw).into_iter();
    let mut levels = holm_levels(&raw, options.alpha).into_iter();
    for change in rows.iter_mut().flat_map(|r| r.changes.iter_mut()) {
        change.p_adjusted = adjusted.next().expect("one adjusted p per change");
        let level = levels.next().expect("one level per change");
        if !change.testable {
            change.verdict = Verdict::TooFew;
            continue;
        }
        change.judged_level = level;
        change.verdict = verdict_at_level(
            &change.ci,
            change.df,
            change.p_value,
            level,
            options.equivalence,
            &mut change.power,
        );
    }
}

impl Comparison {
    /// The verdict in words of `change`, a change of candidate `k` (of
    /// `labels[k + 1]`) — [`Change::words`], qualified when that candidate's
    /// conditions differ from the baseline's ([`Comparison::differing_conditions`])
    /// and the verdict says faster or slower: "slower, +4398.6% (…) — but the
    /// runs' conditions differ (B measured while other processes used 1.0 of
    /// 2 CPUs (python3 99 %); A quiet); re-run both quiet". The verdict itself
    /// is unchanged (gates and bisection still see it). Every rendering says
    /// a verdict through this.
    pub fn verdict_words(&self, k: usize, change: &Change) -> String {
        join_decider(self.verdict_and_decider(k, change))
    }

    /// [`Comparison::verdict_words`] in its two parts, as
    /// [`Change::words_and_decider`] gives them.
    pub fn verdict_and_decider(&self, k: usize, change: &Change) -> (String, Option<String>) {
        let (words, decider) = change.words_and_decider(&self.options);
        let qualified = matches!(
            change.verdict,
            Verdict::Faster
                | Verdict::Slower
                | Verdict::FasterWithinMargin
                | Verdict::SlowerWithinMargin
        );
        let words = match self.differing_conditions.get(k) {
            Some(Some(how)) if qualified => {
                format!("{words} — but the runs' conditions differ ({how}); re-run both quiet")
            }
            _ => words,
        };
        (words, decider)
    }

    /// The explanation of change `k` of `row` that renderings show, when
    /// one is: under every change with [`Options::explain`]; else under a
    /// significant change (faster or slower, within the margin or not)
    /// when profiling was asked for on a side
    /// ([`crate::document::Explanation::profiling_asked`]).
    pub fn explanation<'r>(
        &self,
        row: &'r CaseRow,
        k: usize,
    ) -> Option<&'r crate::document::Explanation> {
        let explanation = row.explanations.get(k)?;
        let significant = row.changes.get(k).is_some_and(|ch| {
            matches!(
                ch.verdict,
                Verdict::Faster
                    | Verdict::Slower
                    | Verdict::FasterWithinMargin
                    | Verdict::SlowerWithinMargin
            )
        });
        (self.options.explain || significant && explanation.profiling_asked())
            .then_some(explanation)
    }

    /// The changes as document records (candidate labels against the
    /// first), each with its differential wherever both sides were profiled.
    pub fn records(&self) -> Vec<ComparisonRecord> {
        self.rows
            .iter()
            .flat_map(|row| {
                row.changes
                    .iter()
                    .zip(&self.labels[1..])
                    .enumerate()
                    .map(|(k, (ch, candidate))| ComparisonRecord {
                        bench: row.key.bench.clone(),
                        case: row.key.case.clone(),
                        baseline: self.labels[0].clone(),
                        candidate: candidate.clone(),
                        ratio: ch.ci.ratio,
                        ci_low: ch.judged().0,
                        ci_high: ch.judged().1,
                        ci_level: Some(ch.judged_level),
                        p_value: ch.p_adjusted,
                        verdict: ch.verdict,
                        verdict_words: self.verdict_words(k, ch),
                        replicated: Some(ch.replication),
                        // Every differential is data worth keeping; a
                        // missing profile only where it is said.
                        explanation: row
                            .explanations
                            .get(k)
                            .filter(|e| matches!(e, crate::document::Explanation::Differential(_)))
                            .or_else(|| self.explanation(row, k))
                            .cloned(),
                    })
            })
            .collect()
    }

    /// Whether any case trips the gate at `pct` % ([`Change::trips_gate`]).
    pub fn gate_tripped(&self, pct: f64) -> bool {
        self.rows
            .iter()
            .flat_map(|r| &r.changes)
            .any(|c| c.trips_gate(pct))
    }

    /// What `git bisect` should make of a candidate judged by this
    /// comparison: bad when a case trips the gate at `gate_pct` % (0: any
    /// significant slowdown beyond the margin), else skip when a case could
    /// not be decided (too few, inconclusive), else good.
    pub fn bisect_step(&self, gate_pct: f64) -> BisectStep {
        let changes = || self.rows.iter().flat_map(|r| &r.changes);
        if changes().any(|c| c.trips_gate(gate_pct)) {
            BisectStep::Bad
        } else if self.rows.is_empty()
            || changes().any(|c| {
                matches!(
                    c.verdict,
                    Verdict::Inconclusive | Verdict::TooFew | Verdict::NoChange
                )
            })
        {
            BisectStep::Skip
        } else {
            BisectStep::Good
        }
    }

    /// How many changes were tested (for the Holm note).
    pub fn tests(&self) -> usize {
        self.rows.iter().map(|r| r.changes.len()).sum()
    }
}

/// The letter of side `i` in every rendering: A, B, …, Z, AA, AB, …
pub fn letter(i: usize) -> String {
    let a = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        a.to_string()
    } else {
        format!("{}{a}", letter(i / 26 - 1))
    }
}

/// A bisection step's outcome ([`Comparison::bisect_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BisectStep {
    Good,
    Bad,
    Skip,
}

impl BisectStep {
    /// The status `git bisect run` reads: 0 good, 1 bad, 125 skip.
    pub const fn exit_status(self) -> u8 {
        match self {
            BisectStep::Good => 0,
            BisectStep::Bad => 1,
            BisectStep::Skip => 125,
        }
    }

    /// What `git bisect` is told: good, bad, skip.
    pub fn as_str(self) -> &'static str {
        match self {
            BisectStep::Good => "good",
            BisectStep::Bad => "bad",
            BisectStep::Skip => "skip",
        }
    }

    /// The outcome in words, with its status.
    pub fn words(self) -> &'static str {
        match self {
            BisectStep::Good => "good (exit 0): no case is slower beyond the margin",
            BisectStep::Bad => "bad (exit 1): a case is slower beyond the margin",
            BisectStep::Skip => {
                "cannot decide (exit 125, skip): nothing compared, or a case inconclusive or \
                 with too few replicates"
            }
        }
    }
}

/// Test documents as if measured in `k` invocations: each series' samples
/// cut into `k` consecutive invocations, each with its median.
#[cfg(test)]
pub(crate) fn split_into_invocations(doc: &mut Document, k: usize) {
    for s in &mut doc.series {
        let n = s.samples.len();
        let bounds: Vec<(usize, usize)> = (0..k).map(|i| (i * n / k, (i + 1) * n / k)).collect();
        s.invocations = bounds
            .iter()
            .map(|&(a, b)| crate::stats::summary::median(&s.samples[a..b]))
            .collect();
        s.invocation_samples = bounds.iter().map(|&(a, b)| b - a).collect();
    }
}

#[cfg(test)]
mod tests {
    use crate::report::markdown::tests::fixed_comparison;
    use crate::stats::verdict::Verdict;

    #[test]
    fn the_gate_trips_on_a_significant_slowdown_inside_the_margin() {
        // --gate 3 --equivalence 5: a significant 4 % slowdown is "slower, within ±5%".
        let mut c = fixed_comparison();
        c.rows[0].changes[0].ci.ratio = 1.04;
        c.rows[0].changes[0].verdict = Verdict::SlowerWithinMargin;
        assert!(c.gate_tripped(3.0) && !c.gate_tripped(5.0));
        c.rows[0].changes[0].verdict = Verdict::Slower;
        assert!(c.gate_tripped(3.0) && !c.gate_tripped(5.0));
        for not_significant in [Verdict::Inconclusive, Verdict::Equivalent, Verdict::TooFew] {
            c.rows[0].changes[0].verdict = not_significant;
            assert!(!c.gate_tripped(3.0));
        }
    }

    #[test]
    fn an_untestable_change_says_what_would_decide_it_and_names_an_extreme_one() {
        let words = super::decide::untestable_words(2.47, "--invocations");
        assert!(
            words.starts_with("2.47× slower in one invocation a side"),
            "{words}"
        );
        assert!(words.contains("replicate to confirm"), "{words}");
        assert!(super::decide::untestable_words(0.5, "--invocations").starts_with("2.00× faster"));
        let commands = super::decide::untestable_words(1.1, "");
        assert!(commands.contains("osbench time --label NAME"), "{commands}");
        let plain = super::decide::untestable_words(1.52, "--invocations");
        assert!(
            plain.starts_with("inconclusive: one invocation a side"),
            "{plain}"
        );
        assert!(plain.contains("--invocations 5"), "{plain}");
    }

    #[test]
    fn the_decider_is_the_power_of_the_test_the_verdict_was_judged_by() {
        use crate::stats::power::{Design, min_detectable, power};
        // Five invocations a side, about 4 % apart: undecided.
        let (b, c) = (
            [100.0, 104.0, 97.0, 101.0, 99.0],
            [103.0, 99.0, 106.0, 102.0, 101.0],
        );
        let mut change = super::replicate_change(&b, &c, None, super::INVOCATIONS);
        change.seconds_per_replicate = Some(45.0);
        let mut rows = vec![super::CaseRow {
            key: crate::document::CaseKey::new("x", "y", crate::document::DEFAULT_CONFIG),
            unit: crate::document::Unit::Ns,
            bytes_per_op: None,
            summaries: Vec::new(),
            changes: vec![change],
            explanations: Vec::new(),
            loads: Vec::new(),
        }];
        super::apply_verdicts(&mut rows, super::Options::default());
        let change = rows[0].changes[0];
        assert_eq!(change.verdict, Verdict::Inconclusive);
        let d = change.decider().expect("an interval, so a decider");
        let log_sd = crate::stats::replicates::compare_replicates(&b, &c, None)
            .unwrap()
            .log_sd;
        let design = Design::Unpaired {
            baseline: 5,
            candidate: 5,
        };
        let mde = min_detectable(design, 8.0, log_sd, 0.05, 0.8);
        assert!((d.detectable - mde.exp_m1()).abs() < 1e-9, "{d:?} vs {mde}");
        // The replicates it names detect the observed change; one fewer does not.
        let n = d.needed.expect("a change that more replicates tell");
        let observed = change.ci.ratio.ln();
        let at = |n: usize| {
            let design = Design::Unpaired {
                baseline: n,
                candidate: n,
            };
            power(design, design.df(), log_sd, observed, 0.05)
        };
        assert!(
            at(n) >= 0.8 && at(n - 1) < 0.8,
            "{n}: {} {}",
            at(n),
            at(n - 1)
        );
        let words = change.words(&super::Options::default());
        assert!(
            words.contains("this evidence could detect ±")
                && words.contains(&format!(
                    "about {n} invocations a side (--invocations {n}), ~45 s each"
                )),
            "{words}"
        );
    }

    #[test]
    fn too_few_rounds_for_the_sign_flip_test_at_the_adjusted_level_detect_nothing() {
        use crate::stats::verdict::{Power, RatioCi};
        let ci = RatioCi {
            ratio: 1.03,
            ci95: (0.98, 1.08),
            ci90: (0.99, 1.07),
        };
        let replication = super::paired_replication(crate::document::ReplicateUnit::Rounds, 6);
        let power = Power::sign_flip(6, 0.05, "rounds", "--rounds");
        let mut change = super::Change::unjudged(ci, 5.0, 0.2, power, replication);
        // One of six comparisons: Holm's strictest level, which 2/2⁶ cannot reach.
        change.judged_level = 1.0 - 0.05 / 6.0;
        let d = change.decider().unwrap();
        assert!(d.detectable.is_infinite(), "{d:?}");
        assert!(
            d.words()
                .contains("6 rounds are too few for the sign-flip test"),
            "{}",
            d.words()
        );
        // Enough rounds for the sign-flip test at that level (2/2ⁿ ≤ α/24: ten), whatever the t says.
        assert_eq!(d.too_coarse, Some((6, 10)));
        assert!(d.needed.unwrap() >= 10, "{d:?}");
        // At the plain 5 % level six rounds are not enough either (2/2⁶ > 0.05/4); eight are.
        change.judged_level = 0.95;
        assert!(change.decider().unwrap().detectable.is_infinite());
        let replication = super::paired_replication(crate::document::ReplicateUnit::Rounds, 8);
        let eight = super::Change::unjudged(ci, 7.0, 0.2, power, replication);
        assert!(eight.decider().unwrap().detectable.is_finite());
    }
}

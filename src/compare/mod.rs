//! Turning result documents into comparisons and verdicts.
//!
//! The first document is the baseline; every case present in all documents
//! (matched by benchmark, case and configuration) is compared, each later
//! document against the baseline, with the unpaired statistics of
//! [`crate::stats::compare`]: ratio of medians with a bootstrap 95 % interval,
//! a Mann–Whitney p-value adjusted across all comparisons (Holm), and a
//! verdict with an equivalence margin. Cases missing from some document are
//! listed, not dropped silently, and environment keys that differ are shown.
//! A case with a sample that is not positive (possible when a cheap
//! operation's overhead was subtracted) has no ratio of medians: it is listed
//! as not compared, with the reason, as is one whose ratio would overflow.
//! [`paired`] compares the configurations of one run round by round instead;
//! [`history`] looks for changes over time in a case's stored runs.

pub mod history;

pub mod fleet;

use crate::document::{COMMAND_BENCH, ComparisonRecord, DEFAULT_CONFIG, Document, Series, Unit};
use crate::error::{Error, Result};
use crate::stats::Summary;
use crate::stats::compare::{
    BOOTSTRAP_MAX_SAMPLES, Power, RatioCi, Verdict, block_medians, holm, mann_whitney_p,
    paired_log_ratio, ratio_of_medians, verdict,
};

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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            equivalence: 0.01,
            alpha: 0.05,
            seed: 0,
            resamples: 10_000,
        }
    }
}

/// One case as seen in every document, in document order.
#[derive(Debug, Clone)]
pub struct CaseRow {
    pub bench: String,
    pub case: String,
    pub config: String,
    pub unit: Unit,
    /// Bandwidth cases: the bytes one operation moves (the sides' medians
    /// are shown as MB/s too; the ratio stays one of times, so a higher
    /// bandwidth is a ratio below 1 and called faster).
    pub bytes_per_op: Option<f64>,
    pub summaries: Vec<Summary>,
    /// One change per document after the first.
    pub changes: Vec<Change>,
}

/// A candidate against the baseline for one case.
#[derive(Debug, Clone, Copy)]
pub struct Change {
    /// Candidate ÷ baseline (above 1: the candidate takes longer), with its
    /// 95 % interval and the 90 % one the equivalence test uses.
    pub ci: RatioCi,
    pub p_value: f64,
    /// After Holm's adjustment over every change of the comparison.
    pub p_adjusted: f64,
    pub verdict: Verdict,
    /// How small a p-value the test could give with this data.
    pub power: Power,
}

impl Change {
    /// A change before the multiple-comparison adjustment and the verdict.
    fn unjudged(ci: RatioCi, p_value: f64, power: Power) -> Self {
        Self {
            ci,
            p_value,
            p_adjusted: p_value,
            verdict: Verdict::Inconclusive,
            power,
        }
    }

    /// The verdict in words ([`Verdict::words`]), the same in every rendering.
    pub fn words(&self, options: &Options) -> String {
        self.verdict
            .words(self.ci.ratio, options.equivalence, &self.power)
    }
}

/// Everything `osbench compare` reports.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub labels: Vec<String>,
    pub rows: Vec<CaseRow>,
    /// Cases not present in every document: "bench case [config]" and the labels lacking it.
    pub missing: Vec<(String, Vec<String>)>,
    /// Cases in every document that have no ratio: "bench case [config]" and why.
    pub not_compared: Vec<(String, String)>,
    /// Environment keys whose values differ between the documents, with each value.
    pub env_diff: Vec<(String, Vec<String>)>,
    /// The declared factor: environment keys (or prefixes, see [`crate::env::is_factor`])
    /// whose differences are the change being tested; other differences are possible confounders.
    pub factors: Vec<String>,
    /// How ratios, intervals and p-values were computed, in words.
    pub method: String,
    pub options: Options,
}

fn key(s: &Series) -> (String, String, String) {
    (s.bench.clone(), s.case.clone(), s.config.clone())
}

/// Compares `docs` (label, document), the first being the baseline.
pub fn compare(docs: &[(String, Document)], options: Options) -> Result<Comparison> {
    if docs.len() < 2 {
        return Err(Error::Measure(
            "compare needs at least two documents".into(),
        ));
    }
    let labels: Vec<String> = docs.iter().map(|(l, _)| l.clone()).collect();
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    let mut not_compared = Vec::new();
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for (_, doc) in docs {
        for s in &doc.series {
            let k = key(s);
            if seen.contains(&k) {
                continue;
            }
            seen.push(k.clone());
            let found: Vec<Option<&Series>> = docs
                .iter()
                .map(|(_, d)| d.series.iter().find(|t| key(t) == k))
                .collect();
            let name = if k.2 == DEFAULT_CONFIG {
                format!("{} {}", k.0, k.1)
            } else {
                format!("{} {} [{}]", k.0, k.1, k.2)
            };
            if found.iter().any(Option::is_none) {
                let lacking = labels
                    .iter()
                    .zip(&found)
                    .filter(|(_, f)| f.is_none())
                    .map(|(l, _)| l.clone())
                    .collect();
                missing.push((name, lacking));
                continue;
            }
            let sides: Vec<&Series> = found.into_iter().flatten().collect();
            if let Some(other) = sides.iter().find(|t| t.unit != sides[0].unit) {
                return Err(Error::Measure(format!(
                    "{name} is in {} in one document and {} in another; they cannot be compared",
                    sides[0].unit, other.unit
                )));
            }
            // A ratio of medians needs positive times (and bootstrap medians of
            // positive samples are positive); documents are checked when read,
            // so the samples are there and finite.
            if let Some((label, s)) = labels
                .iter()
                .zip(&sides)
                .find(|(_, s)| s.samples.iter().any(|&v| v <= 0.0))
            {
                let v = s.samples.iter().copied().fold(f64::INFINITY, f64::min);
                not_compared.push((
                    name,
                    format!(
                        "a sample in {label} is {v} {}, not positive (the overhead subtracted \
                         exceeds the operation), so there is no ratio of medians",
                        s.unit.symbol()
                    ),
                ));
                continue;
            }
            let case_seed = options.seed ^ (rows.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let changes: Vec<Change> = sides[1..]
                .iter()
                .enumerate()
                .map(|(i, cand)| {
                    let seed = case_seed.wrapping_add(i as u64);
                    let r =
                        ratio_of_medians(&sides[0].samples, &cand.samples, seed, options.resamples);
                    let p = mann_whitney_p(&sides[0].samples, &cand.samples);
                    let (n1, n2) = (sides[0].samples.len(), cand.samples.len());
                    Change::unjudged(r, p, Power::rank_test(n1, n2, options.alpha))
                })
                .collect();
            let usable = |x: f64| x.is_finite() && x > 0.0;
            if let Some(ch) = changes.iter().find(|ch| {
                let r = &ch.ci;
                ![r.ratio, r.ci95.0, r.ci95.1, r.ci90.0, r.ci90.1]
                    .into_iter()
                    .all(usable)
            }) {
                not_compared.push((
                    name,
                    format!(
                        "the ratio of medians ({:e}) or its interval is not a finite positive number",
                        ch.ci.ratio
                    ),
                ));
                continue;
            }
            rows.push(CaseRow {
                bench: k.0,
                case: k.1,
                config: k.2,
                unit: sides[0].unit,
                bytes_per_op: sides[0].bytes_per_op,
                summaries: sides.iter().map(|s| s.summary.clone()).collect(),
                changes,
            });
        }
    }
    if rows.is_empty() && !not_compared.is_empty() {
        let why: Vec<String> = not_compared
            .iter()
            .map(|(case, why)| format!("{case}: {why}"))
            .collect();
        return Err(Error::Measure(format!(
            "no case could be compared ({})",
            why.join("; ")
        )));
    }
    if rows.is_empty() {
        return Err(Error::Measure(format!(
            "the documents have no case in common ({}); nothing to compare",
            labels.join(", ")
        )));
    }
    apply_verdicts(&mut rows, options);
    let env_diff = crate::env::diff(&docs.iter().map(|(_, d)| &d.env).collect::<Vec<_>>());
    let large = rows.iter().any(|r| {
        let n = |i: usize| r.summaries[i].n;
        (1..r.summaries.len()).any(|i| n(0) + n(i) > BOOTSTRAP_MAX_SAMPLES)
    });
    let method = format!(
        "Unpaired: ratios of medians (candidate ÷ A, above 1: slower) with 95% percentile-bootstrap \
         intervals{}, two-sided Mann–Whitney U p",
        if large {
            format!(
                " (large-sample intervals from the medians' order statistics where two sides hold \
                 over {BOOTSTRAP_MAX_SAMPLES} samples)"
            )
        } else {
            String::new()
        }
    );
    Ok(Comparison {
        labels,
        rows,
        missing,
        not_compared,
        env_diff,
        factors: Vec::new(),
        method,
        options,
    })
}

/// Compares the configurations of one run round by round (paired): the
/// first configuration is the baseline; each case's per-round medians give the
/// ratios ([`crate::stats::compare::paired_log_ratio`]); p-values are
/// Holm-adjusted across all comparisons, as for saved documents.
pub fn paired(doc: &Document, options: Options) -> Result<Comparison> {
    let names: Vec<String> = doc.run.configs.iter().map(|c| c.name.clone()).collect();
    if names.len() < 2 {
        return Err(Error::Measure(
            "a paired comparison needs at least two configurations".into(),
        ));
    }
    let mut rows = Vec::new();
    for base in doc.series.iter().filter(|s| s.config == names[0]) {
        // The same selected case in every configuration (by slot: a configuration
        // may have changed its parameters, and so its name).
        let same_case = |s: &&Series| match (s.slot, base.slot) {
            (Some(a), Some(b)) => a == b,
            _ => s.bench == base.bench && s.case == base.case,
        };
        let sides: Vec<&Series> = names
            .iter()
            .filter_map(|n| doc.series.iter().filter(|s| s.config == *n).find(same_case))
            .collect();
        let rounds = sides.iter().map(|s| s.rounds.len()).min().unwrap_or(0);
        if sides.len() < names.len() || rounds < 2 {
            continue; // interrupted before every configuration had two rounds of this case
        }
        let changes = sides[1..]
            .iter()
            .map(|cand| {
                let (r, p) = paired_log_ratio(&base.rounds[..rounds], &cand.rounds[..rounds]);
                let power = Power::sign_flip(rounds, options.alpha, "rounds", "--rounds");
                Change::unjudged(r, p, power)
            })
            .collect();
        rows.push(CaseRow {
            bench: base.bench.clone(),
            case: base.case.clone(),
            config: DEFAULT_CONFIG.into(),
            unit: base.unit,
            bytes_per_op: base.bytes_per_op,
            summaries: sides.iter().map(|s| s.summary.clone()).collect(),
            changes,
        });
    }
    if rows.is_empty() {
        return Err(Error::Measure(
            "no case has two complete rounds in every configuration".into(),
        ));
    }
    apply_verdicts(&mut rows, options);
    let method = format!(
        "Paired over {} rounds: geometric means of per-round ratios of medians (candidate ÷ A, above 1: \
         slower), t intervals on their logs, exact sign-flip p",
        doc.run.schedule.len()
    );
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
        options,
    })
}

/// Compares the commands of one `osbench time` run, paired by round: the
/// first command is the baseline; each command's wall times are cut into the
/// same consecutive blocks of rounds ([`block_medians`],
/// at most 20), and the blocks' medians are compared as rounds are.
pub fn commands(doc: &Document, options: Options) -> Result<Comparison> {
    let sides: Vec<&Series> = doc
        .series
        .iter()
        .filter(|s| s.bench == COMMAND_BENCH)
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
            Change::unjudged(
                r,
                p,
                Power::sign_flip(base.len(), options.alpha, "runs", "--runs"),
            )
        })
        .collect();
    let mut rows = vec![CaseRow {
        bench: COMMAND_BENCH.into(),
        case: "wall time".into(),
        config: DEFAULT_CONFIG.into(),
        unit: sides[0].unit,
        bytes_per_op: None,
        summaries: sides.iter().map(|s| s.summary.clone()).collect(),
        changes,
    }];
    apply_verdicts(&mut rows, options);
    let method = format!(
        "Paired over {rounds} interleaved rounds in {} blocks: geometric means of per-block ratios of \
         medians (candidate ÷ A, above 1: slower), t intervals on their logs, exact sign-flip p",
        base.len()
    );
    Ok(Comparison {
        labels: sides.iter().map(|s| s.case.clone()).collect(),
        rows,
        missing: Vec::new(),
        not_compared: Vec::new(),
        factors: Vec::new(),
        env_diff: Vec::new(),
        method,
        options,
    })
}

/// Holm-adjusts every change's p-value and gives each its verdict.
fn apply_verdicts(rows: &mut [CaseRow], options: Options) {
    let raw: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.changes.iter().map(|c| c.p_value))
        .collect();
    let mut adjusted = holm(&raw).into_iter();
    for change in rows.iter_mut().flat_map(|r| r.changes.iter_mut()) {
        change.p_adjusted = adjusted.next().expect("one adjusted p per change");
        change.verdict = verdict(
            &change.ci,
            change.p_adjusted,
            options.alpha,
            options.equivalence,
            &change.power,
        );
    }
}

impl Comparison {
    /// The changes as document records (candidate labels against the first).
    pub fn records(&self) -> Vec<ComparisonRecord> {
        self.rows
            .iter()
            .flat_map(|row| {
                row.changes
                    .iter()
                    .zip(&self.labels[1..])
                    .map(|(ch, candidate)| ComparisonRecord {
                        bench: row.bench.clone(),
                        case: row.case.clone(),
                        baseline: self.labels[0].clone(),
                        candidate: candidate.clone(),
                        ratio: ch.ci.ratio,
                        ci_low: ch.ci.ci95.0,
                        ci_high: ch.ci.ci95.1,
                        p_value: ch.p_adjusted,
                        verdict: ch.verdict.as_str().to_string(),
                        verdict_words: ch.words(&self.options),
                    })
            })
            .collect()
    }

    /// Whether any case is significantly slower than the baseline by more than `pct` %.
    pub fn gate_tripped(&self, pct: f64) -> bool {
        self.rows
            .iter()
            .flat_map(|r| &r.changes)
            .any(|c| c.verdict == Verdict::Slower && c.ci.ratio > 1.0 + pct / 100.0)
    }

    /// How many changes were tested (for the Holm note).
    pub fn tests(&self) -> usize {
        self.rows.iter().map(|r| r.changes.len()).sum()
    }
}

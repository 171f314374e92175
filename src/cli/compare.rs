//! `osbench compare`: two or more stored runs or document files, the first
//! the baseline, compared unpaired; the table on stdout, the comparison
//! record in the export files, the gate's status (`VerdictArgs::exit_code`). The statistics
//! are `osbench::compare`'s, the text `report::compare`'s.

use std::process::ExitCode;

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use clap::Args;

use osbench::compare::{Priors, Side};
use osbench::document::Document;
use osbench::report;
use osbench::store::{Filter, Store};

use super::ingest::{IngestArgs, Source};
use super::save::{ExportArgs, StoreArgs};
use super::{Console, QuietArg, VerdictArgs};

#[derive(Args)]
pub struct CompareArgs {
    /// Runs to compare, the first being the baseline: each a result document file, a
    /// stored run id, or a label (the latest stored run with it); with --by host, one fleet
    /// run with configurations compares them within each host
    #[arg(value_name = "RUN", num_args = 1.., required = true)]
    runs: Vec<String>,
    #[command(flatten)]
    pub(super) verdict: VerdictArgs,
    #[command(flatten)]
    quiet: QuietArg,
    #[command(flatten)]
    ingest: IngestArgs,
    /// Seed of the bootstrap resampling
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    exports: ExportArgs,
    #[command(flatten)]
    store: StoreArgs,
    /// The environment key that is the change being tested (e.g. `cmdline`, `kernel`,
    /// `vulnerabilities`, `cpuidle.haltpoll.guest_halt_poll_ns`; a key covers its nested keys;
    /// repeat for several). Other differing keys are flagged as possible confounders
    #[arg(long = "factor", value_name = "KEY")]
    factors: Vec<String>,
    /// Pair the runs by host (`fleet run`): BEFORE and AFTER are labels (the latest run with
    /// it on each host), run ids (their label) or directories of documents (`fleet run
    /// --out`); each host is compared, and the fleet judged with the hosts as replicates.
    /// One RUN (a fleet run with --config/--experiment): its configurations, within each host
    #[arg(long, value_name = "WHAT", value_parser = ["host"])]
    by: Option<String>,
    /// Under every compared case, where its change went by the sides' profiles (`run
    /// --profile`): the functions that account for it, each side's time per op, the
    /// difference with its interval, and the unexplained remainder [default: under
    /// significant changes of profiled runs only]
    #[arg(long)]
    pub(super) explain: bool,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

impl CompareArgs {
    /// Whether an output file is standard output (the table then goes to stderr).
    pub fn stdout_taken(&self) -> bool {
        self.outputs_to_stdout().unwrap_or(true)
    }

    /// Whether an output file is `-`; an error when several are.
    fn outputs_to_stdout(&self) -> anyhow::Result<bool> {
        super::save::one_stdout(self.exports.paths().into_iter().chain(self.ingest.paths()))
    }
}

pub fn compare(args: CompareArgs, console: Console) -> anyhow::Result<ExitCode> {
    args.quiet.apply();
    args.verdict.refuse_gate_inside_margin()?;
    if args.by.is_some() {
        return compare_by_host(&args, console);
    }
    if args.runs.len() < 2 {
        bail!(
            "compare takes two or more runs, the first the baseline (one run's configurations \
             are compared by `run` itself, and a fleet run's by `compare RUN --by host`)"
        );
    }
    args.outputs_to_stdout()?;
    let pending = args.exports.prepare()?;
    let ingest = args.ingest.prepare()?;
    let options = osbench::compare::Options {
        explain: args.explain,
        ..args.verdict.options(args.seed)
    };
    let saved = saved_comparison(&args.runs, args.store.location().as_ref(), options)?;
    let mut comparison = saved.comparison;
    comparison.factors = args.factors.clone();
    console.print(&report::compare::render(&comparison, console.colour));
    if args.explain {
        for warning in unexplained_sides(&comparison) {
            super::warn(&warning);
        }
    }
    for finding in &comparison.kernel_log {
        super::warn(finding);
    }
    pending.commit(
        || json_record(&comparison),
        || report::markdown::comparison(&comparison),
        || report::csv::comparison(&comparison),
    )?;
    let hosts: Vec<String> = saved.hosts;
    let source = Source::Saved(&comparison, &hosts);
    ingest.commit(source, args.verdict.gate.unwrap_or(0.0), false)?;
    Ok(args.verdict.exit_code(Some(&comparison)))
}

/// With `--explain`: each side none of whose compared cases has a profile,
/// and how to get one (`MissingProfile::words`), a line each.
fn unexplained_sides(comparison: &osbench::compare::Comparison) -> Vec<String> {
    use osbench::document::Explanation;
    let mut lines = Vec::new();
    for (i, label) in comparison.labels.iter().enumerate() {
        // The explanations side i takes part in: every one for the baseline.
        let involved: Vec<&Explanation> = comparison
            .rows
            .iter()
            .flat_map(|r| r.explanations.iter().enumerate())
            .filter(|(k, _)| i == 0 || *k + 1 == i)
            .map(|(_, e)| e)
            .collect();
        let missing: Vec<&osbench::document::MissingProfile> = involved
            .iter()
            .filter_map(|e| match e {
                Explanation::NoProfile(m) => m.iter().find(|m| m.label == *label),
                Explanation::Differential(_) => None,
            })
            .collect();
        if !involved.is_empty() && missing.len() == involved.len() {
            let letter = osbench::compare::letter(i);
            lines.push(format!(
                "{letter} ({label}) {}; none of its cases can be explained",
                missing[0].words()
            ));
        }
    }
    lines
}

/// A comparison of saved runs as every command makes it (`compare`,
/// `report`): each argument a document file, a run id, or a label — every
/// stored run with it, replicates of one side ([`osbench::store::resolve_side`]);
/// the stored spread for cases held in one invocation a side; the first side
/// the baseline. One engine, so that the same question gets the same numbers
/// wherever it is asked.
pub(super) struct SavedComparison {
    pub comparison: osbench::compare::Comparison,
    /// Each side's documents, the order the store lists them in.
    pub sides: Vec<osbench::store::ResolvedSide>,
    /// Each side's host (its first run's).
    pub hosts: Vec<String>,
}

/// Resolves `runs` in the store at `location` and compares them ([`SavedComparison`]).
pub(super) fn saved_comparison(
    runs: &[String],
    location: Option<&osbench::store::Location>,
    options: osbench::compare::Options,
) -> anyhow::Result<SavedComparison> {
    let resolved = runs
        .iter()
        .map(|r| osbench::store::resolve_side(r, location))
        .collect::<Result<Vec<_>, _>>()?;
    flag_same_runs(runs, &resolved);
    let sides: Vec<Side> = resolved
        .iter()
        .map(|(label, docs)| Side {
            label: label.clone(),
            docs: docs.iter().map(|(_, d)| d).collect(),
        })
        .collect();
    let priors = priors(&sides, &resolved, location)?;
    let comparison = osbench::compare::compare_sides(&sides, &priors, options)?;
    let hosts = sides.iter().map(|s| s.docs[0].host().to_string()).collect();
    Ok(SavedComparison {
        comparison,
        sides: resolved,
        hosts,
    })
}

/// The comparison record `--json` writes: the documents, the method, each
/// change, and the kernel log's and the conditions' findings when there are any.
fn json_record(comparison: &osbench::compare::Comparison) -> Vec<u8> {
    let mut record = serde_json::json!({
        "schema": osbench::document::SCHEMA,
        "tool": osbench::document::Tool::this(),
        "documents": comparison.labels,
        "method": comparison.method,
        "comparisons": comparison.records(),
    });
    if !comparison.kernel_log.is_empty() {
        record["kernel_log"] = comparison.kernel_log.clone().into();
    }
    if !comparison.conditions.is_empty() {
        record["conditions"] = comparison.conditions.clone().into();
    }
    let mut bytes = serde_json::to_vec_pretty(&record).expect("a comparison always serialises");
    bytes.push(b'\n');
    bytes
}

/// A warning when two sides hold the same run (a stored id, or the same
/// document twice): a run against itself shows no change by construction.
/// Flagged, not refused: comparing a run with itself is also how to look at
/// the comparison's own layout.
fn flag_same_runs(args: &[String], resolved: &[osbench::store::ResolvedSide]) {
    for (j, (_, later)) in resolved.iter().enumerate() {
        for (i, (_, earlier)) in resolved[..j].iter().enumerate() {
            let shared = later.iter().find(|(id, doc)| {
                earlier
                    .iter()
                    .any(|(e_id, e_doc)| (id.is_some() && id == e_id) || doc == e_doc)
            });
            if let Some((id, _)) = shared {
                let which = id.map_or("the same document".to_string(), |id| format!("run {id}"));
                eprintln!(
                    "osbench: warning: '{}' and '{}' both hold {which}: a run compared with \
                     itself shows no change by construction; to judge the noise of identical \
                     set-ups, run the same set-up twice, or one run with --config a= --config b=",
                    args[i], args[j]
                );
            }
        }
    }
}

/// The stored spread of single invocations for the cases that every side
/// holds in one invocation, when all sides ran on one host and kernel.
fn priors(
    sides: &[Side],
    resolved: &[osbench::store::ResolvedSide],
    location: Option<&osbench::store::Location>,
) -> anyhow::Result<Priors> {
    let Some(location) = location.filter(|l| l.exists()) else {
        return Ok(Priors::new());
    };
    let docs: Vec<&Document> = sides.iter().flat_map(|s| s.docs.iter().copied()).collect();
    let (host, kernel) = (docs[0].host(), docs[0].env.kernel.as_str());
    if docs
        .iter()
        .any(|d| d.host() != host || d.env.kernel != kernel)
    {
        return Ok(Priors::new()); // the stored spread of one host says nothing of another
    }
    let single = |k: &osbench::document::CaseKey| {
        sides.iter().all(|side| {
            let series = side.docs.iter().flat_map(|d| &d.series);
            series
                .filter(|s| s.key == *k)
                .map(|s| s.replicates().len())
                .sum::<usize>()
                == 1
        })
    };
    let mut keys: Vec<osbench::document::CaseKey> = docs[0]
        .series
        .iter()
        .map(|s| s.key.clone())
        .filter(single)
        .collect();
    keys.dedup();
    if keys.is_empty() {
        return Ok(Priors::new());
    }
    let exclude: Vec<i64> = resolved
        .iter()
        .flat_map(|(_, d)| d.iter().filter_map(|(id, _)| *id))
        .collect();
    let db = Store::open_existing(location)?;
    Ok(osbench::store::invocation_priors(
        &db, &keys, host, kernel, &exclude, &docs,
    )?)
}

/// `compare BEFORE AFTER --by host`.
fn compare_by_host(args: &CompareArgs, console: Console) -> anyhow::Result<ExitCode> {
    if args.exports.markdown.is_some() || args.exports.csv.is_some() || !args.factors.is_empty() {
        bail!("--by host writes no Markdown or CSV and takes no --factor; use --json");
    }
    if args.ingest.paths().iter().any(Option::is_some) || args.verdict.bisect_exit {
        bail!(
            "--by host writes no OpenMetrics, JUnit or BMF file and has no --bisect-exit; \
             compare one host's runs without --by host for those"
        );
    }
    let options = args.verdict.options(args.seed);
    let pending = args.exports.prepare()?;
    let (fleets, record) = match &args.runs[..] {
        [run] => {
            let fleets = osbench::compare::fleet::configs_by_host(
                &runs_by_host(run, &args.store)?,
                options,
            )?;
            let records: Vec<_> = fleets.iter().map(report::compare::fleet_record).collect();
            let record = serde_json::json!({ "configurations": records });
            (fleets, record)
        }
        [before, after] => {
            let fleet = osbench::compare::fleet::compare_by_host(
                (before, after),
                runs_by_host(before, &args.store)?,
                runs_by_host(after, &args.store)?,
                options,
            )?;
            let record = report::compare::fleet_record(&fleet);
            (vec![fleet], record)
        }
        runs => bail!(
            "--by host compares two sides, BEFORE and AFTER, or one fleet run's \
             configurations; {} runs were given",
            runs.len()
        ),
    };
    let texts: Vec<String> = fleets
        .iter()
        .map(|f| report::compare::render_fleet(f, console.colour))
        .collect();
    console.print(&texts.join("\n"));
    pending.commit(
        || {
            let mut bytes =
                serde_json::to_vec_pretty(&record).expect("a comparison always serialises");
            bytes.push(b'\n');
            bytes
        },
        String::new,
        String::new,
    )?;
    Ok(args.verdict.fleet_exit_code(&fleets))
}

/// One side of a comparison by host: (host, document) for each host.
fn runs_by_host(side: &str, store: &StoreArgs) -> anyhow::Result<Vec<(String, Document)>> {
    let dir = Path::new(side);
    if dir.is_dir() {
        let mut docs = Vec::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {side}"))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "json") {
                let doc = osbench::store::read_document(&path)?;
                docs.push((doc.host().to_string(), doc));
            }
        }
        docs.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(docs);
    }
    let path = osbench::store::location(store.store.as_deref())?;
    let db = Store::open_existing(&path)?;
    let label = if side.chars().all(|c| c.is_ascii_digit()) {
        let id: i64 = side.parse().with_context(|| format!("run id {side}"))?;
        let doc = db
            .document(id)?
            .ok_or_else(|| anyhow!("no run {id} in {}", path.display()))?;
        doc.run.label.ok_or_else(|| {
            anyhow!("run {id} has no label; --by host finds each host's run by label")
        })?
    } else {
        side.to_string()
    };
    let rows = db.list(&Filter {
        label: Some(label.clone()),
        ..Filter::default()
    })?;
    let latest = osbench::store::latest_per_host(&rows);
    if latest.is_empty() {
        bail!(
            "no stored run is labelled '{label}' (in {})",
            path.display()
        );
    }
    latest
        .into_iter()
        .map(|r| {
            let doc = db
                .document(r.id)?
                .ok_or_else(|| anyhow!("run {} vanished", r.id))?;
            Ok((r.hostname.clone(), doc))
        })
        .collect()
}

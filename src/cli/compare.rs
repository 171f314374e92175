//! `osbench compare`: two or more stored runs or document files, the first
//! the baseline, compared unpaired; the table on stdout, the comparison
//! record in the export files, status 1 when `--gate` trips. The statistics
//! are `osbench::compare`'s, the text `report::compare`'s.

use std::process::ExitCode;

use clap::Args;

use osbench::report;

use super::save::{self, ExportArgs, StoreArgs};
use super::{Console, VerdictArgs};

#[derive(Args)]
pub struct CompareArgs {
    /// Runs to compare, the first being the baseline: each a result document file, a
    /// stored run id, or a label (the latest stored run with it)
    #[arg(value_name = "RUN", num_args = 2.., required = true)]
    runs: Vec<String>,
    #[command(flatten)]
    verdict: VerdictArgs,
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
}

impl CompareArgs {
    /// Whether an output file is standard output (the table then goes to stderr).
    pub fn stdout_taken(&self) -> bool {
        self.exports.stdout_taken()
    }
}

pub fn compare(args: CompareArgs, console: Console) -> anyhow::Result<ExitCode> {
    let pending = args.exports.prepare()?;
    let docs = save::resolve_all(&args.runs, &args.store)?;
    let options = args.verdict.options(args.seed);
    let mut comparison = osbench::compare::compare(&docs, options)?;
    comparison.factors = args.factors.clone();
    console.print(&report::compare::render(&comparison, console.colour));
    pending.commit(
        || {
            let record = serde_json::json!({
                "schema": osbench::document::SCHEMA,
                "tool": osbench::document::Tool::this(),
                "documents": comparison.labels,
                "method": comparison.method,
                "comparisons": comparison.records(),
            });
            let mut bytes =
                serde_json::to_vec_pretty(&record).expect("a comparison always serialises");
            bytes.push(b'\n');
            bytes
        },
        || report::markdown::comparison(&comparison),
        || report::csv::comparison(&comparison),
    )?;
    Ok(args.verdict.exit_code(Some(&comparison)))
}

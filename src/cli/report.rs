//! `osbench report`: one self-contained HTML page for stored runs or
//! document files, with their comparison when there are several, and with
//! `--history BENCH:CASE` that case's stored runs and change points. The page is
//! `report::html`'s; this finds the documents, compares them when it can
//! (a comparison that cannot be made is a warning, not an error) and writes
//! the file atomically.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use osbench::compare::Comparison;
use osbench::report;
use osbench::store::PendingFile;

use super::parse_pct;
use super::plot::HistoryPlotArgs;
use super::save::{self, StoreArgs};

#[derive(Args)]
pub struct ReportArgs {
    /// Stored runs (ids or labels) or result document files; given several, they are also
    /// compared, the first being the baseline
    #[arg(value_name = "RUN", num_args = 1.., required_unless_present = "history")]
    runs: Vec<String>,
    /// Write the report to FILE, atomically; `-`: standard output
    #[arg(long, value_name = "FILE")]
    html: PathBuf,
    /// Several documents: call a change "equivalent" when its 90% interval lies within ±PCT %
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = parse_pct)]
    equivalence: f64,
    #[command(flatten)]
    history: HistoryPlotArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    quiet: super::QuietArg,
}

pub fn html_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    args.quiet.apply();
    let histories = args.history.load(&args.store)?;
    let pending = PendingFile::create(&args.html)?;
    let (docs, comparison) = if args.runs.len() >= 2 {
        documents_and_comparison(&args)?
    } else {
        (save::resolve_all(&args.runs, &args.store)?, None)
    };
    let html = report::html::render_with_history(&docs, comparison.as_ref(), &histories)?;
    pending.commit(html.as_bytes())?;
    super::note(&format!("osbench: wrote {}", save::shown(&args.html)));
    Ok(ExitCode::SUCCESS)
}

/// Documents named for the page, and their comparison when one could be made.
type Compared = (
    Vec<(String, osbench::document::Document)>,
    Option<Comparison>,
);

/// The page's documents (each side's latest run, named as `compare` names
/// the side) and their comparison, made as `compare` makes it
/// ([`super::compare::saved_comparison`]): labels are every run with them.
/// A comparison that cannot be made is a warning; the documents are still
/// reported, each on its own.
fn documents_and_comparison(args: &ReportArgs) -> anyhow::Result<Compared> {
    let options = osbench::compare::Options {
        equivalence: args.equivalence / 100.0,
        ..Default::default()
    };
    let location = args.store.location();
    match super::compare::saved_comparison(&args.runs, location.as_ref(), options) {
        Ok(saved) => {
            let docs = saved
                .sides
                .into_iter()
                .filter_map(|(name, mut docs)| docs.pop().map(|(_, doc)| (name, doc)))
                .collect();
            Ok((docs, Some(saved.comparison)))
        }
        Err(e) => {
            super::note(&format!(
                "osbench: warning: no comparison in the report: {e}"
            ));
            Ok((save::resolve_all(&args.runs, &args.store)?, None))
        }
    }
}

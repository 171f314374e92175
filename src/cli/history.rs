//! `osbench history`: the stored runs as a list, or a case × host table of
//! each host's latest run; a case's history over time is `history_changes`'s.

use std::process::ExitCode;

use clap::Args;

use osbench::compare::history::order_runs;
use osbench::document::Document;
use osbench::report;
use osbench::store::{self, Filter, Store};

use super::save::StoreArgs;

/// `osbench history`.
#[derive(Args)]
pub struct HistoryArgs {
    /// Only runs with a case of this benchmark
    #[arg(long, value_name = "BENCH")]
    bench: Option<String>,
    /// Only runs with exactly this label
    #[arg(long, value_name = "NAME")]
    label: Option<String>,
    /// Only runs on a kernel whose release contains TEXT (e.g. 6.18)
    #[arg(long, value_name = "TEXT")]
    kernel: Option<String>,
    /// A case × host table of the medians of each host's latest (matching) run
    #[arg(long, value_name = "WHAT", value_parser = ["host"])]
    by: Option<String>,
    #[command(flatten)]
    case: super::history_changes::CaseArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    quiet: super::QuietArg,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

pub fn history(args: HistoryArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    args.quiet.apply();
    if let Some(done) = super::history_changes::history(&args.case, &args.store, console) {
        return done;
    }
    let location = store::location(args.store.store.as_deref())?;
    if !location.exists() {
        console.print(&format!(
            "No runs stored yet ({location} does not exist; osbench run saves every run there).\n"
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let filter = Filter {
        bench: args.bench,
        label: args.label,
        kernel: args.kernel,
        host: args.case.only.host.clone(),
        meta: args.case.only.meta.clone(),
        min_samples: args.case.only.min_samples.map(i64::from),
    };
    let db = Store::open_existing(&location)?;
    let mut rows = db.list(&filter)?;
    if let Some(order) = &args.case.only.order_by {
        let (ordered, left_out) = order_runs(
            rows,
            order,
            |r, k| r.meta.get(k).cloned(),
            |r| r.started.clone(),
        );
        if left_out > 0 {
            super::warn(&format!(
                "{left_out} run(s) without the --order-by key left out"
            ));
        }
        rows = ordered;
    }
    if rows.is_empty() {
        console.print(&format!("No stored run matches (store: {location}).\n"));
    } else if args.by.is_some() {
        let mut runs = Vec::new();
        for row in store::latest_per_host(&rows) {
            if let Some(doc) = db.document(row.id)? {
                runs.push((row.hostname.as_str(), doc));
            }
        }
        let runs: Vec<(&str, &Document)> = runs.iter().map(|(h, d)| (*h, d)).collect();
        console.print(&report::history::by_host_within(&runs, console.width));
    } else {
        console.print(&report::history::render_within(&rows, console.width));
    }
    Ok(ExitCode::SUCCESS)
}

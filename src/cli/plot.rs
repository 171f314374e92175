//! `osbench plot`: one stored run or document file drawn as SVG and PNG
//! files in a directory, and with `--history BENCH:CASE` that case's stored
//! runs with their change points. Drawing is `report::plot`'s; this only finds
//! the document and the histories and writes the files (atomically).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use osbench::report;
use osbench::store::PendingFile;

use osbench::compare::history::CaseHistory;

use super::history_changes::{self, CaseName, OnlyArgs, parse_case};
use super::save::{self, StoreArgs};

#[derive(Args)]
pub struct PlotArgs {
    /// A stored run (id or label) or a result document file
    #[arg(value_name = "RUN", required_unless_present = "history")]
    run: Option<String>,
    /// Directory for the NAME.svg and NAME.png files (created if missing)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    history: HistoryPlotArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    quiet: super::QuietArg,
}

/// `--history BENCH:CASE` with its `--host` and `--config`: shared by `plot` and `report`.
#[derive(Args)]
pub struct HistoryPlotArgs {
    /// Also draw this case's history from the results store: each stored run's median and
    /// interval, oldest first, with its change points (repeatable; BENCH:CASE as in history)
    #[arg(long = "history", value_name = "BENCH:CASE", value_parser = parse_case)]
    pub history: Vec<CaseName>,
    #[command(flatten)]
    pub only: OnlyArgs,
}

impl HistoryPlotArgs {
    /// Every history asked for, read from the store.
    pub fn load(&self, store: &StoreArgs) -> anyhow::Result<Vec<CaseHistory>> {
        self.only
            .check(!self.history.is_empty(), "--history BENCH:CASE")?;
        let mut histories = Vec::new();
        for case in &self.history {
            histories.extend(history_changes::load(case, &self.only, store)?);
        }
        Ok(histories)
    }
}

pub fn plot(args: PlotArgs) -> anyhow::Result<ExitCode> {
    args.quiet.apply();
    let histories = args.history.load(&args.store)?;
    let mut plots = Vec::new();
    if let Some(run) = &args.run {
        let (name, doc) = save::resolve_all(std::slice::from_ref(run), &args.store)?
            .pop()
            .expect("one document per argument");
        plots = report::plot::document_plots(&doc)?;
        if plots.is_empty() && histories.is_empty() {
            anyhow::bail!("{name} has no series to plot");
        }
    }
    for h in &histories {
        plots.push(report::plot::history_plot(h)?);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the directory {}", args.out.display()))?;
    for p in &plots {
        let png = report::plot::png(p)?;
        for (ext, bytes) in [("svg", p.svg.as_bytes()), ("png", &png[..])] {
            let path = args.out.join(format!("{}.{ext}", p.name));
            PendingFile::create(&path)?.commit(bytes)?;
            println!("{}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

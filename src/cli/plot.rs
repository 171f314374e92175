//! `osbench plot`: one stored run or document file drawn as SVG and PNG
//! files in a directory. Drawing is `report::plot`'s; this only finds the
//! document and writes the files (atomically).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use osbench::report;
use osbench::store::PendingFile;

use super::save::{self, StoreArgs};

#[derive(Args)]
pub struct PlotArgs {
    /// A stored run (id or label) or a result document file
    #[arg(value_name = "RUN")]
    run: String,
    /// Directory for the NAME.svg and NAME.png files (created if missing)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    store: StoreArgs,
}

pub fn plot(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let (name, doc) = save::resolve_all(std::slice::from_ref(&args.run), &args.store)?
        .pop()
        .expect("one document per argument");
    let plots = report::plot::document_plots(&doc)?;
    if plots.is_empty() {
        anyhow::bail!("{name} has no series to plot");
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

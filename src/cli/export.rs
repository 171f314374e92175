//! `osbench export`: a stored run (or a document file) written out again as
//! JSON, Markdown or CSV.

use std::process::ExitCode;

use clap::Args;

use super::save::{ExportArgs, StoreArgs, shown};

/// `osbench export`.
#[derive(Args)]
pub struct ExportCmd {
    /// A stored run: its id or label (the latest run with it), or a document file
    #[arg(value_name = "RUN")]
    run: String,
    #[command(flatten)]
    exports: ExportArgs,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    quiet: super::QuietArg,
}

pub fn export(args: ExportCmd) -> anyhow::Result<ExitCode> {
    args.quiet.apply();
    if args.exports.is_empty() {
        anyhow::bail!("nothing to export to: give --json FILE, --markdown FILE or --csv FILE");
    }
    let pending = args.exports.prepare()?;
    let (name, doc) = super::save::resolve_all(std::slice::from_ref(&args.run), &args.store)?
        .pop()
        .expect("one document per argument");
    for f in super::save::commit_document(pending, &doc)? {
        super::note(&format!("osbench: wrote {} ({name})", shown(&f)));
    }
    Ok(ExitCode::SUCCESS)
}

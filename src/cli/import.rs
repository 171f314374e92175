//! `osbench import`: result documents from files (or standard input) into the
//! results store, all in one transaction. Documents whose label or host
//! names hold control characters are refused, as `--label` refuses them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use osbench::document::Document;
use osbench::store::{self, Inserted, Store};

use super::save::StoreArgs;

/// `osbench import`.
#[derive(Args)]
pub struct ImportCmd {
    /// Result documents (written by `run --json` or `export --json`, here or on another
    /// machine); `-`: standard input
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// The files are LAVA job logs (`log.yaml`, or a console as text) of jobs `osbench lava`
    /// wrote: each boot's document is cut from its console and stored once (by its boot's
    /// id), a kernel A/B's merged too; a boot cut short or never started is said, status 2
    #[arg(long)]
    lava: bool,
    #[command(flatten)]
    store: StoreArgs,
}

pub fn import(args: ImportCmd) -> anyhow::Result<ExitCode> {
    // Every file is read and checked before anything is stored; then all are
    // stored in one transaction (all or, on an error, none).
    if args.lava {
        return import_lava(&args);
    }
    let stdin = Path::new(STDIN);
    if args.files.iter().filter(|f| *f == stdin).count() > 1 {
        anyhow::bail!("'-' (standard input) is given more than once; it holds one document");
    }
    let docs = args
        .files
        .iter()
        .map(|f| read_input(f))
        .collect::<osbench::Result<Vec<_>>>()?;
    for (file, (_, doc)) in args.files.iter().zip(&docs) {
        osbench::document::validate::names(doc)
            .map_err(|e| anyhow::anyhow!("{} is not imported: {e}", input_name(file)))?;
    }
    let mut db = Store::open(store::location(args.store.store.as_deref())?)?;
    let stored = db.import_all(docs.iter().map(|(text, doc)| (doc, text.as_str())))?;
    for ((file, (_, doc)), inserted) in args.files.iter().zip(&docs).zip(stored) {
        let label = doc.run.label.as_deref().map_or_else(String::new, |l| {
            format!(" '{}'", osbench::text::printable(l))
        });
        match inserted {
            Inserted::New(id) => println!("{}: stored as run {id}{label}", shown(file)),
            Inserted::Existing(id) => println!(
                "{}: already stored as run {id}{label}; not added again",
                shown(file)
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `import --lava`: every log's boots, stored once each; what is missing said.
fn import_lava(args: &ImportCmd) -> anyhow::Result<ExitCode> {
    use osbench::lab::{console, lava};
    let mut results = Vec::new();
    for file in &args.files {
        let (text, name) = if file == Path::new(STDIN) {
            let text = store::read_capped(std::io::stdin().lock(), "standard input")?;
            (text, "standard input".to_string())
        } else {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("cannot read the LAVA log {}: {e}", shown(file)))?;
            (text, shown(file))
        };
        let found =
            lava::results(console::cut(&text)).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        results.push((name, found));
    }
    let mut db = Store::open(store::location(args.store.store.as_deref())?)?;
    let mut missing = 0;
    for (name, found) in &results {
        for kept in lava::keep(&mut db, found)? {
            match kept.inserted {
                Inserted::New(id) => println!("{name}: {}: stored as run {id}", kept.what),
                Inserted::Existing(id) => println!(
                    "{name}: {}: already stored as run {id}; not added again",
                    kept.what
                ),
            }
        }
        for (boot, why) in &found.missing {
            eprintln!("osbench: {name}: boot {boot} is missing, its cases not measured: {why}");
        }
        if let Some(why) = &found.unmerged {
            eprintln!("osbench: {name}: the kernels' boots are not merged: {why}");
        }
        missing += found.missing.len();
    }
    if missing > 0 {
        eprintln!(
            "osbench: {missing} boot(s) missing; run the job again: boots stored already are \
             not stored twice"
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// The input file that means standard input.
const STDIN: &str = "-";

/// How an input file is named in messages: `-` is "standard input".
fn input_name(file: &Path) -> String {
    if file == Path::new(STDIN) {
        "standard input".into()
    } else {
        file.display().to_string()
    }
}

/// [`input_name`] with control characters escaped.
fn shown(file: &Path) -> String {
    osbench::text::printable(&input_name(file)).into_owned()
}

/// A document's text and the document, from a file or (`-`) standard input.
fn read_input(file: &Path) -> osbench::Result<(String, Document)> {
    if file != Path::new(STDIN) {
        return store::read_document_text(file);
    }
    let text = store::read_capped(std::io::stdin().lock(), "standard input")?;
    let doc = store::parse_document(&text, "standard input")?;
    Ok((text, doc))
}

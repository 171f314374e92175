//! Where results go besides the terminal, on the command line: the results
//! store (`--store`, `--no-store`, `--label`) and the export files (`--json`,
//! `--markdown`, `--csv`). The commands that work on the store are
//! `history`, `export` and `import`, each in its own file. [`SaveArgs`] is flattened into every
//! command that measures: `prepare` before measuring (bad paths fail before
//! anything is measured), `finish` after. Any output file may be `-`,
//! standard output (at most one of them per command). A store that cannot be opened or
//! written never loses a run: the document then goes to a JSON file and the
//! warning says which.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use osbench::document::Document;
use osbench::report;
use osbench::store::{self, Location, PendingFile, Store};

/// `--store PATH|URL`.
#[derive(Args, Clone)]
pub struct StoreArgs {
    /// The results store: an SQLite file, or a PostgreSQL database
    /// (postgresql://USER@HOST[:PORT]/DB[?sslmode=require]). Default: $OSBENCH_STORE, else
    /// $XDG_DATA_HOME/osbench/results.sqlite, else ~/.local/share/osbench/results.sqlite
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

impl StoreArgs {
    /// The store's location, `None` when none can be determined (no HOME).
    pub fn location(&self) -> Option<Location> {
        store::location(self.store.as_deref()).ok()
    }
}

/// `--json`, `--markdown`, `--csv`.
#[derive(Args)]
pub struct ExportArgs {
    /// Also write JSON to FILE (run, time, export: the result document with every raw
    /// sample; compare: the comparisons; regressions: the change points reported); `-`:
    /// standard output
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write Markdown tables to FILE; `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write tidy CSV to FILE (run, time, export: one row per sample with bench, case,
    /// config, round, sample, value, unit; time adds each run's user, sys, max RSS, exit
    /// status and parameters; compare: one row per change; regressions: one row per change
    /// point); `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// How a destination is named in messages: `-` is "standard output".
pub fn shown(path: &Path) -> String {
    if path == Path::new(store::STDOUT) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Fails when more than one of `outputs` is `-`: standard output holds one file.
pub fn one_stdout<'a>(outputs: impl IntoIterator<Item = Option<&'a Path>>) -> anyhow::Result<bool> {
    let to_stdout = outputs
        .into_iter()
        .flatten()
        .filter(|p| *p == Path::new(store::STDOUT))
        .count();
    if to_stdout > 1 {
        anyhow::bail!(
            "{to_stdout} output files are '-' (standard output), which can hold only one; \
             write the others to files"
        );
    }
    Ok(to_stdout == 1)
}

/// The export files, created (empty, hidden) and waiting for their content.
pub struct PendingExports {
    json: Option<PendingFile>,
    markdown: Option<PendingFile>,
    csv: Option<PendingFile>,
}

impl ExportArgs {
    /// Creates the files' temporaries now, so a bad path fails before any work.
    pub fn prepare(&self) -> anyhow::Result<PendingExports> {
        one_stdout(self.paths())?;
        let create = |p: &Option<PathBuf>| p.as_deref().map(PendingFile::create).transpose();
        Ok(PendingExports {
            json: create(&self.json)?,
            markdown: create(&self.markdown)?,
            csv: create(&self.csv)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.json.is_none() && self.markdown.is_none() && self.csv.is_none()
    }

    /// The requested files, in the order they are written.
    pub fn paths(&self) -> [Option<&Path>; 3] {
        [&self.json, &self.markdown, &self.csv].map(Option::as_deref)
    }

    /// Whether one of them is standard output (an error when several are).
    pub fn stdout_taken(&self) -> bool {
        one_stdout(self.paths()).unwrap_or(true)
    }
}

impl PendingExports {
    /// Writes each requested file (atomically); returns the paths written.
    pub fn commit(
        self,
        json: impl FnOnce() -> Vec<u8>,
        markdown: impl FnOnce() -> String,
        csv: impl FnOnce() -> String,
    ) -> osbench::Result<Vec<PathBuf>> {
        let put = |file: PendingFile, bytes: &[u8]| {
            let dest = file.dest().to_path_buf();
            file.commit(bytes).map(|()| dest)
        };
        let mut written = Vec::new();
        if let Some(f) = self.json {
            written.push(put(f, &json())?);
        }
        if let Some(f) = self.markdown {
            written.push(put(f, markdown().as_bytes())?);
        }
        if let Some(f) = self.csv {
            written.push(put(f, csv().as_bytes())?);
        }
        Ok(written)
    }

    /// Writes a run's document, Markdown and CSV to the requested files.
    pub fn commit_document(self, doc: &Document) -> osbench::Result<Vec<PathBuf>> {
        self.commit(
            || store::to_json(doc),
            || report::markdown::run(doc),
            || report::csv::run(doc),
        )
    }
}

/// Everything that says where a measured run is saved.
#[derive(Args)]
pub struct SaveArgs {
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Name the run; history, compare and export accept the name (not only digits:
    /// numbers are run ids)
    #[arg(long, value_name = "NAME", value_parser = parse_label)]
    pub label: Option<String>,
    #[command(flatten)]
    pub meta: MetaArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Do not save the run in the results store
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    #[command(flatten)]
    pub logs: LogsArgs,
}

/// `--logs` / `--no-logs`: whether the system logs go with the run.
#[derive(Args, Clone, Default)]
pub struct LogsArgs {
    /// Keep the system logs with the run (the default): the kernel configuration and its
    /// SHA-256, the kernel log with its warnings and oopses counted, loaded modules, sysctls
    /// under kernel/, vm/ and net.core/, DMI, PCI devices; compressed, at most 1 MiB before
    /// compression. A guest's or a fleet host's are its own, read by its agent
    #[arg(long, overrides_with = "no_logs")]
    pub logs: bool,
    /// Do not keep the system logs with the run
    #[arg(long = "no-logs", overrides_with = "logs")]
    pub no_logs: bool,
}

impl LogsArgs {
    /// Whether the logs are kept: unless `--no-logs`.
    pub fn wanted(&self) -> bool {
        !self.no_logs
    }
}

/// Where the system logs are read: `/`, or for tests the tree `$OSBENCH_LOGS_ROOT`
/// (its `proc/config.gz`, `boot/`, `dev/kmsg`, `proc/modules`, `proc/sys/`, `sys/class/dmi/id/`,
/// `sys/bus/pci/devices/`).
const LOGS_ROOT_ENV: &str = "OSBENCH_LOGS_ROOT";

/// `--meta KEY=VALUE`: what the run measured (the revision under test).
#[derive(Args, Clone, Default)]
pub struct MetaArgs {
    /// Record what the run measured, KEY=VALUE (repeat): commit, branch and build are shown
    /// by history, and history and regressions filter (--meta commit=abc) and order by them
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = osbench::document::meta::parse_pair)]
    pub pairs: Vec<(String, String)>,
}

impl MetaArgs {
    /// The pairs as the document stores them; a key given twice is an error.
    pub fn map(&self) -> anyhow::Result<BTreeMap<String, String>> {
        osbench::document::meta::collect(&self.pairs).map_err(anyhow::Error::msg)
    }
}

pub(super) fn parse_label(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        Err("a label cannot be empty".into())
    } else if s.chars().all(|c| c.is_ascii_digit()) {
        Err(format!(
            "'{s}' is only digits, which name stored runs by id; add a letter"
        ))
    } else if s.chars().any(char::is_control) {
        Err("a label cannot contain control characters (line breaks, tabs)".into())
    } else {
        Ok(s.to_string())
    }
}

/// The store as prepared before a run.
enum StoreState {
    Off,
    /// Opened (created, migrated) before the run; closed while measuring.
    Ready(Location),
    /// Why it cannot be used (the run then goes to a JSON file).
    Failed(osbench::Error),
}

/// The outputs of one run, prepared before measuring.
pub struct Saving {
    exports: PendingExports,
    store: StoreState,
    quiet: bool,
}

/// What [`Saving::finish`] saved.
#[derive(Debug, Default, Clone)]
pub struct Saved {
    /// The run's id in the store.
    pub run_id: Option<i64>,
    /// Files holding the whole document (`--json`, or the fallback file).
    pub documents: Vec<PathBuf>,
}

/// The tree the system logs are read from: `$OSBENCH_LOGS_ROOT` when set, else `/`.
pub fn logs_tree() -> osbench::env::probe::Sys {
    std::env::var_os(LOGS_ROOT_ENV)
        .map_or_else(osbench::env::probe::Sys::real, osbench::env::probe::Sys::at)
}

impl SaveArgs {
    /// This machine's environment now, with the system logs unless `--no-logs`.
    pub fn environment(&self) -> osbench::env::Environment {
        osbench::env::environment(self.logs.wanted().then(logs_tree).as_ref())
    }

    /// Before measuring: creates the export files' temporaries (a bad path is an
    /// error now) and opens the store (a store that cannot be used is a warning).
    pub fn prepare(&self, quiet: bool) -> anyhow::Result<Saving> {
        if let (true, Some(label), None) = (self.no_store, &self.label, &self.exports.json) {
            anyhow::bail!(
                "--label {label} names the stored run, and --no-store stores none: the label \
                 would be lost; drop --no-store, or add --json FILE to keep it in the document"
            );
        }
        let exports = self.exports.prepare()?;
        let store = if self.no_store {
            StoreState::Off
        } else {
            match store::location(self.store.store.as_deref())
                .and_then(|l| Store::open(&l).map(|_| l))
            {
                Ok(p) => StoreState::Ready(p),
                // Stopped while waiting for the store: nothing is measured.
                Err(osbench::Error::Interrupted) => {
                    return Err(osbench::Error::Interrupted)
                        .context("stopped while opening the results store");
                }
                Err(e) => {
                    eprintln!(
                        "osbench: warning: {e}; this run will be saved to a JSON file instead"
                    );
                    StoreState::Failed(e)
                }
            }
        };
        Ok(Saving {
            exports,
            store,
            quiet,
        })
    }
}

impl Saving {
    /// After measuring: writes the export files, then stores the run (so a
    /// store that fails, hangs or is interrupted never holds the only copy).
    /// With `keep` false (nothing was measured) nothing is saved and the
    /// temporaries go. A stop signal while the store is written leaves the
    /// run in a file and is an `Interrupted` error (status 130).
    pub fn finish(self, doc: &Document, keep: bool) -> anyhow::Result<Saved> {
        let mut saved = Saved::default();
        if !keep {
            return Ok(saved);
        }
        let json_dest = self.exports.json.as_ref().map(|f| f.dest().to_path_buf());
        let written = self.exports.commit_document(doc);
        if let Ok(files) = &written
            && !self.quiet
        {
            say_written(files, json_dest.as_deref(), doc);
        }
        if written.is_ok() {
            saved.documents.extend(json_dest.clone());
        }
        // A signal from here on (not one that stopped the measuring) stops storing.
        let _watch = osbench::stop::Watch::new();
        let stored = match self.store {
            StoreState::Off => None,
            StoreState::Ready(location) => Some(
                Store::open(&location)
                    .and_then(|mut s| s.insert(doc))
                    .map(|i| (i.id(), location)),
            ),
            StoreState::Failed(e) => Some(Err(e)),
        };
        let mut interrupted = false;
        let mut fell_back = false;
        match stored {
            Some(Ok((id, path))) => {
                saved.run_id = Some(id);
                if !self.quiet {
                    eprintln!("osbench: saved as run {id} in {}", path.display());
                }
            }
            Some(Err(e)) => {
                interrupted = matches!(e, osbench::Error::Interrupted);
                // Said even with --quiet: it is about where the results are.
                // A document sent to standard output is not kept: write a file too.
                let file = match (&written, json_dest) {
                    (Ok(_), Some(json)) if json != Path::new(store::STDOUT) => json,
                    _ => {
                        let file = fallback_file(doc)?;
                        saved.documents.push(file.clone());
                        fell_back = true;
                        file
                    }
                };
                eprintln!(
                    "osbench: warning: the run is not in the results store ({e}); it is in {} \
                     (`osbench import {}` stores it later)",
                    file.display(),
                    file.display()
                );
            }
            None => {}
        }
        if let Err(e) = &written
            && saved.run_id.is_none()
            && !fell_back
        {
            // Neither the requested files nor the store hold the run: a file of its own does.
            let file = fallback_file(doc)?;
            eprintln!(
                "osbench: warning: {e:#}; the run is in {} instead",
                file.display()
            );
            saved.documents.push(file);
        }
        written?;
        if interrupted {
            return Err(osbench::Error::Interrupted).context("stopped while storing the run");
        }
        Ok(saved)
    }
}

/// "wrote FILE" for each file written (with the series count for the document).
fn say_written(files: &[PathBuf], json: Option<&Path>, doc: &Document) {
    for f in files {
        if Some(f.as_path()) == json {
            eprintln!("osbench: wrote {} ({} series)", shown(f), doc.series.len());
        } else {
            eprintln!("osbench: wrote {}", shown(f));
        }
    }
}

/// Writes the document to a new file `osbench-<start time>-<pid>.json` (a
/// counter is added if even that exists: no file is ever replaced) in the
/// current directory, or else in the temporary directory; returns where.
fn fallback_file(doc: &Document) -> anyhow::Result<PathBuf> {
    let stem = format!(
        "osbench-{}-{}",
        doc.run.started.replace(':', ""),
        std::process::id()
    );
    let bytes = store::to_json(doc);
    let mut last = None;
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        match store::write_new(&dir, &stem, "json", &bytes) {
            Ok(path) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("two attempts")).context("the run could not be saved in a file either")
}

/// The documents `compare` was given (files, run ids or labels), with their names.
pub fn resolve_all(runs: &[String], store: &StoreArgs) -> anyhow::Result<Vec<(String, Document)>> {
    let location = store.location();
    runs.iter()
        .map(|r| Ok(store::resolve_document(r, location.as_ref())?))
        .collect()
}

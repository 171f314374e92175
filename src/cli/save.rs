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
pub use osbench::store::keep::Saved;
use osbench::store::keep::{KeepError, Keeping, Notice, PendingExports, StoreState};
use osbench::store::{self, Location, PendingFile};

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

/// How a run's Markdown and CSV export files are rendered (report/'s).
pub const RENDERERS: store::keep::Renderers = store::keep::Renderers {
    markdown: report::markdown::run,
    csv: report::csv::run,
};

/// Writes a run's document, Markdown and CSV to the requested files.
pub fn commit_document(exports: PendingExports, doc: &Document) -> osbench::Result<Vec<PathBuf>> {
    exports.commit(
        || store::to_json(doc),
        || (RENDERERS.markdown)(doc),
        || (RENDERERS.csv)(doc),
    )
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

/// The outputs of one run, prepared before measuring: the library's keep
/// policy ([`Keeping`]), and whether to say what it wrote.
pub struct Saving {
    keeping: Keeping,
    quiet: bool,
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
        let location = (!self.no_store).then(|| store::location(self.store.store.as_deref()));
        // Stopped while waiting for the store: nothing is measured.
        let store =
            StoreState::open(location).context("stopped while opening the results store")?;
        if let StoreState::Failed(e) = &store {
            eprintln!("osbench: warning: {e}; this run will be saved to a JSON file instead");
        }
        Ok(Saving {
            keeping: Keeping {
                exports,
                store,
                render: RENDERERS,
            },
            quiet,
        })
    }
}

impl Saving {
    /// Ends a measured run in the library's envelope
    /// ([`osbench::envelope::keep_run`]): stamped, compared, shown, kept;
    /// what it tells said on stderr (a comparison that cannot be made is a
    /// warning).
    pub fn keep<E>(
        self,
        outcome: osbench::experiment::Outcome,
        identity: &osbench::document::RunIdentity,
        compare: osbench::envelope::Compare,
        show: impl FnOnce(&Document, Option<&osbench::compare::Comparison>) -> Result<(), E>,
    ) -> Result<osbench::envelope::Kept, E> {
        use osbench::envelope::Told;
        let quiet = self.quiet;
        osbench::envelope::keep_run(
            outcome,
            identity,
            compare,
            show,
            self.keeping,
            &mut |t| match t {
                Told::NoComparison(e) => super::warn(&format!("no comparison: {e}")),
                Told::Kept(n) => say(&n, quiet),
            },
        )
    }
}

/// A failure to keep a run, for the command's error: an interrupt stays
/// one (status 130).
pub fn kept_error(e: KeepError) -> anyhow::Error {
    match e {
        KeepError::Interrupted => {
            anyhow::Error::new(osbench::Error::Interrupted).context("stopped while storing the run")
        }
        e => e.into(),
    }
}

/// What keeping a run did, on stderr.
fn say(notice: &Notice, quiet: bool) {
    match notice {
        Notice::Wrote { path, series } if !quiet => match series {
            Some(n) => eprintln!("osbench: wrote {} ({n} series)", shown(path)),
            None => eprintln!("osbench: wrote {}", shown(path)),
        },
        Notice::Stored { id, location } if !quiet => {
            eprintln!("osbench: saved as run {id} in {}", location.display())
        }
        Notice::NotStored { error, file } => eprintln!(
            "osbench: warning: the run is not in the results store ({error}); it is in {} \
             (`osbench import {}` stores it later)",
            file.display(),
            file.display()
        ),
        Notice::FilesFailed { error, file } => eprintln!(
            "osbench: warning: {error:#}; the run is in {} instead",
            file.display()
        ),
        _ => {}
    }
}

/// One document for each of `runs` (files, run ids or labels), with its
/// name, for commands that show documents one by one (`plot`, `report`): a
/// label is its latest run, and when it names several the note says so —
/// `compare` and the comparison in `report` take them all as replicates.
pub fn resolve_all(runs: &[String], store: &StoreArgs) -> anyhow::Result<Vec<(String, Document)>> {
    let location = store.location();
    let mut docs = Vec::new();
    for r in runs {
        let (name, doc) = store::resolve_document(r, location.as_ref())?;
        let label_runs = match location.as_ref().filter(|_| is_label(r)) {
            Some(l) if l.exists() => store::Store::open_existing(l)?
                .list(&store::Filter {
                    label: Some(r.clone()),
                    ..store::Filter::default()
                })?
                .len(),
            _ => 0,
        };
        if label_runs > 1 {
            super::note(&format!(
                "osbench: '{r}' names {label_runs} stored runs; this shows the latest, {name} \
                 (`osbench compare` takes every run with a label as a replicate; give a run id \
                 for another)"
            ));
        }
        docs.push((name, doc));
    }
    Ok(docs)
}

/// Whether a RUN argument names a label: neither an existing file nor a run id.
fn is_label(arg: &str) -> bool {
    !std::path::Path::new(arg).exists() && arg.parse::<i64>().is_err()
}

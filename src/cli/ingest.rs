//! The files other systems read without glue, on the command line of `run`,
//! `time` and `compare`: `--openmetrics` (Prometheus/GitLab), `--junit` (CI
//! test reports; only where something is compared) and `--bmf` (Bencher).
//! Like the export files they are created before any work (a bad path fails
//! first) and written atomically at the end; the renderings are
//! `osbench::report`'s.

use std::path::{Path, PathBuf};

use clap::Args;

use osbench::compare::Comparison;
use osbench::document::Document;
use osbench::report;
use osbench::store::PendingFile;

use super::save::shown;

/// `--openmetrics`, `--junit`, `--bmf`.
#[derive(Args)]
pub struct IngestArgs {
    /// Also write OpenMetrics text to FILE (for node_exporter's textfile collector, GitLab's
    /// metrics reports): each series' median and 95% interval as gauges, each comparison's
    /// ratio and verdict; `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,
    /// Also write JUnit XML to FILE (compare, and run or time with something compared): one
    /// testcase per case, failing when it is slower beyond --gate; `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write Bencher Metric Format JSON to FILE: each series' median as value, its 95%
    /// interval as lower_value/upper_value; `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub bmf: Option<PathBuf>,
    /// Also write KCIDB I/O JSON to FILE (KernelCI's results): the kernel as checkout and
    /// build, each case a test with its median and unit; compared, the verdict as status (FAIL
    /// slower beyond --gate, DONE inconclusive, PASS); `-`: standard output
    #[arg(long, value_name = "FILE")]
    pub kcidb: Option<PathBuf>,
}

/// The files, created (empty, hidden) and waiting for their content.
pub struct PendingIngest {
    openmetrics: Option<PendingFile>,
    junit: Option<PendingFile>,
    bmf: Option<PendingFile>,
    kcidb: Option<PendingFile>,
}

/// What the files are made of: a run's document, or a comparison of saved
/// runs (with each side's host), and what was compared, if anything.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Run(&'a Document, Option<&'a Comparison>),
    Saved(&'a Comparison, &'a [String]),
}

impl IngestArgs {
    /// The requested files.
    pub fn paths(&self) -> [Option<&Path>; 4] {
        [&self.openmetrics, &self.junit, &self.bmf, &self.kcidb].map(Option::as_deref)
    }

    /// An error when `--junit` is given where nothing is compared (`why` says why not).
    pub fn refuse_without_comparison(&self, why: &str) -> anyhow::Result<()> {
        if self.junit.is_some() {
            anyhow::bail!(
                "--junit writes one testcase per compared case, and {why}: nothing is compared"
            );
        }
        Ok(())
    }

    /// Creates the files' temporaries now, so a bad path fails before any work.
    pub fn prepare(&self) -> anyhow::Result<PendingIngest> {
        let create = |p: &Option<PathBuf>| p.as_deref().map(PendingFile::create).transpose();
        Ok(PendingIngest {
            openmetrics: create(&self.openmetrics)?,
            junit: create(&self.junit)?,
            bmf: create(&self.bmf)?,
            kcidb: create(&self.kcidb)?,
        })
    }
}

impl PendingIngest {
    /// Writes each requested file from `source`; says which unless `quiet`.
    /// JUnit cases fail beyond `gate_pct` %. Without a comparison no JUnit
    /// file is written (its temporary goes), and that is said.
    pub fn commit(self, source: Source, gate_pct: f64, quiet: bool) -> anyhow::Result<()> {
        let put = |file: PendingFile, bytes: &[u8], what: &str| -> anyhow::Result<()> {
            let dest = shown(file.dest());
            file.commit(bytes)?;
            if !quiet {
                eprintln!("osbench: wrote {dest} ({what})");
            }
            Ok(())
        };
        if let Some(file) = self.openmetrics {
            let text = match source {
                Source::Run(doc, c) => report::openmetrics::run(doc, c),
                Source::Saved(c, hosts) => report::openmetrics::comparison(c, hosts),
            };
            put(file, text.as_bytes(), "OpenMetrics")?;
        }
        if let Some(file) = self.junit {
            let (comparison, suite) = match source {
                Source::Run(doc, c) if doc.run.time.is_some() => (c, "osbench time"),
                Source::Run(_, c) => (c, "osbench run"),
                Source::Saved(c, _) => (Some(c), "osbench compare"),
            };
            match comparison {
                Some(c) => {
                    let xml = report::junit::comparison(c, suite, gate_pct);
                    put(file, xml.as_bytes(), "JUnit XML")?;
                }
                None => eprintln!(
                    "osbench: warning: no JUnit file written to {}: nothing was compared",
                    shown(file.dest())
                ),
            }
        }
        if let Some(file) = self.bmf {
            let bytes = match source {
                Source::Run(doc, _) => report::bmf::run(doc),
                Source::Saved(c, _) => report::bmf::comparison(c),
            };
            put(file, &bytes, "Bencher Metric Format")?;
        }
        if let Some(file) = self.kcidb {
            let bytes = match source {
                Source::Run(doc, c) => report::kcidb::run(doc, c, gate_pct),
                Source::Saved(c, _) => report::kcidb::comparison(c, gate_pct),
            };
            put(file, &bytes, "KCIDB I/O JSON")?;
        }
        Ok(())
    }
}

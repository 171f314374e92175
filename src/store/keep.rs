//! The keep policy of a measured run: its export files first, then the
//! results store, and a fallback file when the store (or the files) cannot
//! hold it — so a store that fails, hangs or is interrupted never holds the
//! only copy. [`Keeping`] is prepared before measuring (a bad path fails
//! before anything is measured; a store that cannot be opened is a
//! [`Notice`], the run then goes to a file) and finished after. What is
//! written is told as [`Notice`]s; wording them, and rendering the Markdown
//! and CSV exports, are the caller's.

use std::path::{Path, PathBuf};

use crate::document::Document;
use crate::error::{Error, Result};

use super::{Location, PendingFile, STDOUT, Store, to_json, write_new};

/// The export files, created (empty, hidden) and waiting for their content.
#[derive(Default)]
pub struct PendingExports {
    pub json: Option<PendingFile>,
    pub markdown: Option<PendingFile>,
    pub csv: Option<PendingFile>,
}

impl PendingExports {
    /// Writes each requested file (atomically); returns the paths written.
    pub fn commit(
        self,
        json: impl FnOnce() -> Vec<u8>,
        markdown: impl FnOnce() -> String,
        csv: impl FnOnce() -> String,
    ) -> Result<Vec<PathBuf>> {
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
}

/// How a run's Markdown and CSV exports are rendered (report/'s, given by
/// the caller: the store does not format).
#[derive(Clone, Copy)]
pub struct Renderers {
    pub markdown: fn(&Document) -> String,
    pub csv: fn(&Document) -> String,
}

/// The store as prepared before a run.
pub enum StoreState {
    Off,
    /// Opened (created, migrated) before the run; closed while measuring.
    Ready(Location),
    /// A PostgreSQL store being opened by another thread while the run
    /// measures (a server that does not answer must not delay the first
    /// sample by its connect timeout); the run is kept once it has opened.
    Opening(Location, std::thread::JoinHandle<Result<()>>),
    /// Why it cannot be used (the run then goes to a JSON file).
    Failed(Error),
}

impl StoreState {
    /// Opens the store at `location` (`None`: `--no-store`): a file store
    /// now, a PostgreSQL store while the run measures. An interrupt while a
    /// file store opens (waiting for another run's lock) is an error; any
    /// other failure is kept, to send the run to a file after measuring.
    pub fn open(location: Option<Result<Location>>) -> Result<Self> {
        let Some(location) = location else {
            return Ok(StoreState::Off);
        };
        let location = match location {
            Ok(l) => l,
            Err(e) => return Ok(StoreState::Failed(e)),
        };
        if let Location::Postgres(_) = &location {
            let at = location.clone();
            let opening = std::thread::spawn(move || Store::open(&at).map(drop));
            return Ok(StoreState::Opening(location, opening));
        }
        match Store::open(&location) {
            Ok(_) => Ok(StoreState::Ready(location)),
            Err(Error::Interrupted) => Err(Error::Interrupted),
            Err(e) => Ok(StoreState::Failed(e)),
        }
    }

    /// The store once it has opened (waited for, if another thread opens it).
    fn opened(self) -> Self {
        let StoreState::Opening(location, opening) = self else {
            return self;
        };
        let opened = opening.join().unwrap_or_else(|_| {
            Err(Error::Store {
                path: location.to_string(),
                message: "opening it failed unexpectedly".into(),
            })
        });
        match opened {
            Ok(()) => StoreState::Ready(location),
            Err(e) => StoreState::Failed(e),
        }
    }
}

/// The outputs of one run, prepared before measuring.
pub struct Keeping {
    pub exports: PendingExports,
    pub store: StoreState,
    pub render: Renderers,
}

/// What [`Keeping::finish`] saved.
#[derive(Debug, Default, Clone)]
pub struct Saved {
    /// The run's id in the store.
    pub run_id: Option<i64>,
    /// Files holding the whole document (`--json`, or the fallback file).
    pub documents: Vec<PathBuf>,
}

/// What keeping a run did, for the caller to say.
#[derive(Debug)]
pub enum Notice<'a> {
    /// An export file was written; `series` for the document.
    Wrote {
        path: &'a Path,
        series: Option<usize>,
    },
    /// The run was stored.
    Stored { id: i64, location: &'a Location },
    /// The store could not take the run: it is in `file`.
    NotStored { error: &'a Error, file: &'a Path },
    /// The export files could not be written (and the store did not take
    /// the run): it is in `file`.
    FilesFailed { error: &'a Error, file: &'a Path },
}

/// Why keeping a run failed (what was kept is said by the notices before).
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The export files could not be written.
    #[error(transparent)]
    Files(Error),
    /// Not even a fallback file could be written.
    #[error("the run could not be saved in a file either: {0}")]
    NoFile(Error),
    /// A stop signal came while the store was written (the run is in a file).
    #[error("stopped while storing the run: {}", Error::Interrupted)]
    Interrupted,
}

impl Keeping {
    /// After measuring: writes the export files, then stores the run. With
    /// `keep` false (nothing was measured) nothing is saved and the
    /// temporaries go. A stop signal from the moment the store is written
    /// (not one that stopped the measuring) stops the storing
    /// ([`crate::stop::Watch`]); `tell` hears what was written where.
    pub fn finish(
        self,
        doc: &Document,
        keep: bool,
        tell: &mut dyn FnMut(Notice),
    ) -> std::result::Result<Saved, KeepError> {
        let mut saved = Saved::default();
        if !keep {
            return Ok(saved);
        }
        let json_dest = self.exports.json.as_ref().map(|f| f.dest().to_path_buf());
        let render = self.render;
        let written = self.exports.commit(
            || to_json(doc),
            || (render.markdown)(doc),
            || (render.csv)(doc),
        );
        if let Ok(files) = &written {
            for f in files {
                let series = (Some(f) == json_dest.as_ref()).then_some(doc.series.len());
                tell(Notice::Wrote { path: f, series });
            }
            saved.documents.extend(json_dest.clone());
        }
        let _watch = crate::stop::Watch::new();
        let (interrupted, fell_back) =
            store_it(self.store, doc, &written, json_dest, &mut saved, tell)?;
        if let Err(e) = &written
            && saved.run_id.is_none()
            && !fell_back
        {
            // Neither the requested files nor the store hold the run: a file of its own does.
            let file = fallback_file(doc)?;
            tell(Notice::FilesFailed {
                error: e,
                file: &file,
            });
            saved.documents.push(file);
        }
        written.map_err(KeepError::Files)?;
        if interrupted {
            return Err(KeepError::Interrupted);
        }
        Ok(saved)
    }
}

/// Stores `doc` as `store` allows, a fallback file when it fails; whether
/// a stop signal interrupted it, and whether the fallback file was written.
fn store_it(
    store: StoreState,
    doc: &Document,
    written: &Result<Vec<PathBuf>>,
    json_dest: Option<PathBuf>,
    saved: &mut Saved,
    tell: &mut dyn FnMut(Notice),
) -> std::result::Result<(bool, bool), KeepError> {
    let stored = match store.opened() {
        StoreState::Off => return Ok((false, false)),
        StoreState::Ready(location) => Store::open(&location)
            .and_then(|mut s| s.insert(doc))
            .map(|i| (i.id(), location)),
        StoreState::Failed(e) => Err(e),
        StoreState::Opening(..) => unreachable!("opened() waited for it"),
    };
    match stored {
        Ok((id, location)) => {
            saved.run_id = Some(id);
            tell(Notice::Stored {
                id,
                location: &location,
            });
            Ok((false, false))
        }
        Err(e) => {
            let interrupted = matches!(e, Error::Interrupted);
            // A document sent to standard output is not kept: write a file too.
            let (file, fell_back) = match (written, json_dest) {
                (Ok(_), Some(json)) if json != Path::new(STDOUT) => (json, false),
                _ => {
                    let file = fallback_file(doc)?;
                    saved.documents.push(file.clone());
                    (file, true)
                }
            };
            tell(Notice::NotStored {
                error: &e,
                file: &file,
            });
            Ok((interrupted, fell_back))
        }
    }
}

/// Writes the document to a new file `osbench-<start time>-<pid>.json` (a
/// counter is added if even that exists: no file is ever replaced) in the
/// current directory, or else in the temporary directory; returns where.
fn fallback_file(doc: &Document) -> std::result::Result<PathBuf, KeepError> {
    let stem = format!(
        "osbench-{}-{}",
        doc.run.started.replace(':', ""),
        std::process::id()
    );
    let bytes = to_json(doc);
    let mut last = None;
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        match write_new(&dir, &stem, "json", &bytes) {
            Ok(path) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(KeepError::NoFile(last.expect("two attempts")))
}

//! Document files: atomic writes and reads.
//!
//! A [`PendingFile`] is created *before* measuring, as a hidden temporary file
//! in the destination's directory, so a bad path fails at once and nothing is
//! measured for nothing; `commit` writes, syncs and renames it into place, so a
//! reader never sees a half-written document. Dropping an uncommitted one
//! removes it. The results history (SQLite) is in [`db`]; [`resolve_document`]
//! finds a document by file, run id or label.

pub mod db;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::document::{Document, SCHEMA};
use crate::error::{Error, Result};
pub use db::{Filter, Inserted, RunRow, Store, location};

/// A destination file that will be replaced atomically.
#[derive(Debug)]
pub struct PendingFile {
    dest: PathBuf,
    temp: NamedTempFile,
}

impl PendingFile {
    /// Prepares to write `dest`; fails now if its directory is missing or not writable.
    pub fn create(dest: &Path) -> Result<Self> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let refuse = |why: String| {
            Error::io(
                format!("cannot write {}", dest.display()),
                std::io::Error::other(why),
            )
        };
        if !dir.is_dir() {
            return Err(refuse(format!(
                "directory {} does not exist",
                dir.display()
            )));
        }
        if dest.is_dir() {
            return Err(refuse("it is a directory".into()));
        }
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".osbench-tmp")
            .tempfile_in(dir)
            .map_err(|e| {
                refuse(format!(
                    "cannot create a file in {}: {}",
                    dir.display(),
                    e.kind()
                ))
            })?;
        Ok(Self {
            dest: dest.to_path_buf(),
            temp,
        })
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Writes `bytes`, flushes them to disk and renames the file into place.
    pub fn commit(mut self, bytes: &[u8]) -> Result<()> {
        let ctx = || format!("writing {}", self.dest.display());
        self.temp
            .write_all(bytes)
            .map_err(|e| Error::io(ctx(), e))?;
        // The temporary file was created 0600; results are ordinary files.
        use std::os::unix::fs::PermissionsExt;
        self.temp
            .as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(ctx(), e))?;
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| Error::io(ctx(), e))?;
        let dest = self.dest.clone();
        self.temp
            .persist(&dest)
            .map_err(|e| Error::io(format!("renaming into {}", dest.display()), e.error))?;
        Ok(())
    }
}

/// Serialises a document as pretty JSON with a trailing newline.
pub fn to_json(doc: &Document) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).expect("a Document always serialises");
    bytes.push(b'\n');
    bytes
}

/// Reads a document and checks its schema.
pub fn read_document(path: &Path) -> Result<Document> {
    read_document_text(path).map(|(_, doc)| doc)
}

/// Reads a document and checks its schema; also returns the text as read.
pub fn read_document_text(path: &Path) -> Result<(String, Document)> {
    let text = fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let doc = parse_document(&text, &path.display().to_string())?;
    Ok((text, doc))
}

/// Parses a document's JSON `text` (from `origin`, named in errors) and checks its schema.
pub fn parse_document(text: &str, origin: &str) -> Result<Document> {
    let bad = |message: String| Error::BadDocument {
        path: origin.to_string(),
        what: "an osbench result document",
        message,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(bad(format!(
                "schema '{other}', this osbench reads '{SCHEMA}'"
            )));
        }
        None => return Err(bad("no \"schema\" field".into())),
    }
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}

/// A document named on the command line: an existing file, else a run id in
/// the store at `store` (an integer), else the latest stored run with that
/// label. Returns a name for tables (the path, "run 3 (label)" or
/// "label (run 3)") and the document. `store` is `None` when no store location
/// could be determined.
pub fn resolve_document(arg: &str, store: Option<&Path>) -> Result<(String, Document)> {
    let path = Path::new(arg);
    if path.exists() {
        return Ok((arg.to_string(), read_document(path)?));
    }
    let unknown = |where_: String| Error::UnknownRun {
        arg: arg.to_string(),
        store: where_,
    };
    let Some(store_path) = store else {
        return Err(unknown(
            "(no results store: set OSBENCH_STORE or give --store)".into(),
        ));
    };
    if !store_path.exists() {
        return Err(unknown(store_path.display().to_string()));
    }
    let db = Store::open_existing(store_path)?;
    let (id, name) = match arg.parse::<i64>() {
        Ok(id) => (id, None),
        Err(_) => match db.latest_with_label(arg)? {
            Some(id) => (id, Some(format!("{arg} (run {id})"))),
            None => return Err(unknown(store_path.display().to_string())),
        },
    };
    let doc = db
        .document(id)?
        .ok_or_else(|| unknown(store_path.display().to_string()))?;
    let name = name.unwrap_or_else(|| match &doc.run.label {
        Some(label) => format!("run {id} ({label})"),
        None => format!("run {id}"),
    });
    Ok((name, doc))
}

/// A small fixed document (two configurations, a sampled and a distribution
/// case, comparisons, a label with markup) for tests and snapshots.
#[cfg(test)]
pub(crate) fn fixture() -> (&'static str, Document) {
    let text = include_str!("../../tests/data/small-run.json");
    (
        text,
        parse_document(text, "tests/data/small-run.json").unwrap(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directory_fails_before_anything_is_written() {
        let err = PendingFile::create(Path::new("/nonexistent/dir/x.json")).unwrap_err();
        assert!(
            err.to_string()
                .contains("directory /nonexistent/dir does not exist"),
            "{err}"
        );
    }

    #[test]
    fn uncommitted_file_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        drop(PendingFile::create(&dest).unwrap());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_replaces_the_destination() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        fs::write(&dest, "old").unwrap();
        PendingFile::create(&dest).unwrap().commit(b"new").unwrap();
        assert_eq!(fs::read_to_string(&dest).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o644,
            "an ordinary file, not the temp file's 0600"
        );
    }
}

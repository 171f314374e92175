//! Document files: atomic writes and reads.
//!
//! A [`PendingFile`] is created *before* measuring, as a hidden temporary file
//! in the destination's directory, so a bad path fails at once and nothing is
//! measured for nothing; `commit` writes, syncs and renames it into place, so a
//! reader never sees a half-written document. Dropping an uncommitted one
//! removes it. Left out: the results history (a later issue).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::document::{Document, SCHEMA};
use crate::error::{Error, Result};

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
    let text = fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let bad = |message: String| Error::BadDocument {
        path: path.display().to_string(),
        what: "an osbench result document",
        message,
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
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
    }
}

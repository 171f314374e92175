//! Document files: atomic writes and reads.
//!
//! A [`PendingFile`] is created *before* measuring, so a bad path fails at
//! once and nothing is measured for nothing. A regular file (or a path that
//! does not exist yet) gets a hidden temporary file in its directory, which
//! `commit` writes, syncs and renames into place, so a reader never sees a
//! half-written document; dropping an uncommitted one removes it. Anything
//! else that is not a directory — a FIFO, a character device, `/dev/stdout`
//! or a shell's `>(cmd)` — is opened and written in place at `commit`, never
//! replaced. A symlink is followed: the file it points to is replaced, the
//! link stays. The name `-` ([`STDOUT`]) is standard output, written
//! through osbench's own handle at `commit`. Documents are checked when read
//! ([`parse_document`], the rules of [`crate::document::validate`]).

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::document::{Document, SCHEMA};
use crate::error::{Error, Result};

/// The destination that means standard output, as in most Unix tools.
pub const STDOUT: &str = "-";

/// Most symlinks followed from a destination (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// A destination: replaced atomically when it is (or will be) a regular
/// file, written in place when it is a FIFO, a device or a pipe.
#[derive(Debug)]
pub struct PendingFile {
    dest: PathBuf,
    how: Target,
}

#[derive(Debug)]
enum Target {
    /// A temporary file in `path`'s directory, renamed over `path` (the
    /// destination, or the file its symlinks lead to).
    Replace { path: PathBuf, temp: NamedTempFile },
    /// Opened (appending) and written at `commit`: a FIFO, a character or
    /// block device, a socket, or whatever `/dev/stdout`, `/dev/fd/N` and
    /// `/proc/…/fd/N` stand for (a pipe, a terminal, a redirected file).
    Stream,
    /// `-`: osbench's standard output, written and flushed at `commit`.
    Stdout,
}

/// What a destination path turned out to be once its symlinks were followed.
enum Found {
    /// No such file (yet): create it at this path.
    Missing(PathBuf),
    /// A regular file at this path.
    Regular(PathBuf),
    Directory,
    /// Not a regular file or a directory, or a link through /proc (whose
    /// targets are open files, not paths).
    Other,
}

/// Follows `dest`'s symlinks (not through /proc, whose links name open
/// files) to what they lead to.
fn follow(dest: &Path) -> std::io::Result<Found> {
    let mut path = dest.to_path_buf();
    for _ in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing(path)),
            Err(e) => return Err(e),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            // A link in /proc (reached as /dev/stdout, /dev/fd/N, /proc/self/fd/N)
            // names an open file, perhaps a pipe with no path at all.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if fs::canonicalize(dir)?.starts_with("/proc") {
                return Ok(Found::Other);
            }
            let target = fs::read_link(&path)?;
            path = match path.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
        } else if kind.is_file() {
            return Ok(Found::Regular(path));
        } else if kind.is_dir() {
            return Ok(Found::Directory);
        } else {
            return Ok(Found::Other);
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symlinks (a loop?)"
    )))
}

impl PendingFile {
    /// Prepares to write `dest`; fails now if its directory is missing or not
    /// writable, or (a FIFO, a device) it cannot be written.
    pub fn create(dest: &Path) -> Result<Self> {
        if dest == Path::new(STDOUT) {
            return Ok(Self {
                dest: dest.to_path_buf(),
                how: Target::Stdout,
            });
        }
        let refuse = |why: String| {
            Error::io(
                format!("cannot write {}", dest.display()),
                std::io::Error::other(why),
            )
        };
        let path = match follow(dest).map_err(|e| refuse(e.to_string()))? {
            Found::Directory => return Err(refuse("it is a directory".into())),
            Found::Other => {
                let c = CString::new(dest.as_os_str().as_bytes())
                    .map_err(|_| refuse("the path contains a NUL byte".into()))?;
                // SAFETY: `c` is a valid NUL-terminated path.
                if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                    return Err(refuse(format!(
                        "it is not writable ({}); choose another file",
                        std::io::Error::last_os_error().kind()
                    )));
                }
                return Ok(Self {
                    dest: dest.to_path_buf(),
                    how: Target::Stream,
                });
            }
            Found::Missing(path) | Found::Regular(path) => path,
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(refuse(format!(
                "directory {} does not exist",
                dir.display()
            )));
        }
        let name = path
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
            how: Target::Replace { path, temp },
        })
    }

    /// The destination as given.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Whether this is standard output (`-`).
    pub fn is_stdout(&self) -> bool {
        matches!(self.how, Target::Stdout)
    }

    /// Writes `bytes`: into the temporary file, flushed to disk and renamed
    /// into place; or, for a FIFO or a device, straight into it.
    pub fn commit(self, bytes: &[u8]) -> Result<()> {
        let ctx = || format!("writing {}", self.dest.display());
        let (path, mut temp) = match self.how {
            Target::Replace { path, temp } => (path, temp),
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                return out
                    .write_all(bytes)
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::io("writing to standard output".to_string(), e));
            }
            Target::Stream => {
                let mut file = fs::OpenOptions::new()
                    .append(true)
                    .custom_flags(libc::O_NOCTTY)
                    .open(&self.dest)
                    .map_err(|e| Error::io(ctx(), e))?;
                return file
                    .write_all(bytes)
                    .and_then(|()| file.flush())
                    .map_err(|e| Error::io(ctx(), e));
            }
        };
        temp.write_all(bytes).map_err(|e| Error::io(ctx(), e))?;
        // The temporary file was created 0600; results are ordinary files.
        use std::os::unix::fs::PermissionsExt;
        temp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(ctx(), e))?;
        temp.as_file().sync_all().map_err(|e| Error::io(ctx(), e))?;
        temp.persist(&path)
            .map_err(|e| Error::io(format!("renaming into {}", path.display()), e.error))?;
        Ok(())
    }
}

/// Most names [`write_new`] tries before giving up.
const MAX_NEW_NAMES: usize = 1000;

/// Writes `bytes` to a new file in `dir`: `{stem}.{ext}`, or `{stem}-2.{ext}`,
/// `{stem}-3.{ext}`, … when that name is taken. An existing file is never
/// replaced (the name is claimed with an exclusive rename, `RENAME_NOREPLACE`
/// or a hard link), and the file is complete and synced before it appears.
/// Returns its path.
pub fn write_new(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> Result<PathBuf> {
    let ctx = || format!("writing a new file {stem}*.{ext} in {}", dir.display());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{stem}."))
        .suffix(".osbench-tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io(ctx(), e))?;
    temp.write_all(bytes).map_err(|e| Error::io(ctx(), e))?;
    use std::os::unix::fs::PermissionsExt;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(|e| Error::io(ctx(), e))?;
    temp.as_file().sync_all().map_err(|e| Error::io(ctx(), e))?;
    for i in 1..=MAX_NEW_NAMES {
        let name = match i {
            1 => format!("{stem}.{ext}"),
            _ => format!("{stem}-{i}.{ext}"),
        };
        let dest = dir.join(name);
        match temp.persist_noclobber(&dest) {
            Ok(_) => return Ok(dest),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => temp = e.file,
            Err(e) => return Err(Error::io(ctx(), e.error)),
        }
    }
    Err(Error::io(
        ctx(),
        std::io::Error::other(format!(
            "{MAX_NEW_NAMES} names are taken; move the old files away"
        )),
    ))
}

/// Serialises a document as pretty JSON with a trailing newline.
pub fn to_json(doc: &Document) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).expect("a Document always serialises");
    bytes.push(b'\n');
    bytes
}

/// Reads a document and checks its schema and contents.
pub fn read_document(path: &Path) -> Result<Document> {
    read_document_text(path).map(|(_, doc)| doc)
}

/// The largest document read (a million samples take about 60 MB): what
/// is larger is no document (`/dev/zero`, a FIFO that never ends), and is
/// not read to the end of memory.
pub const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// Reads a document and checks its schema and contents; also returns the text as read.
pub fn read_document_text(path: &Path) -> Result<(String, Document)> {
    let file =
        fs::File::open(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let origin = path.display().to_string();
    let text = read_capped(file, &origin)?;
    let doc = parse_document(&text, &origin)?;
    Ok((text, doc))
}

/// The text `input` (`origin`, named in errors) holds, refused beyond
/// `MAX_DOCUMENT_BYTES` (256 MiB) as soon as it is read that far.
pub fn read_capped(input: impl std::io::Read, origin: &str) -> Result<String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut input.take(MAX_DOCUMENT_BYTES + 1), &mut bytes)
        .map_err(|e| Error::io(format!("reading {origin}"), e))?;
    let bad = |message: String| Error::BadDocument {
        path: origin.to_string(),
        what: "an osbench result document",
        message,
    };
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(bad(format!(
            "it holds more than {} MiB, more than any document (is it one? a device or a \
             stream that never ends is not); nothing of it was used",
            MAX_DOCUMENT_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| bad(format!("it is not UTF-8 text: {e}")))
}

/// Parses a document's JSON `text` (from `origin`, named in errors), checks
/// its schema and its contents ([`crate::document::validate`]). Every reader
/// of documents (files and stored runs) comes through here.
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
        None if is_hyperfine_export(&value) => {
            return Err(bad(
                "this is hyperfine's --export-json layout (results[].command, times), which has \
                 no environment, run order or per-run rusage to compare by; time the commands \
                 with `osbench time` (it takes hyperfine's options, and --export-json writes \
                 this layout too) to store and compare them"
                    .into(),
            ));
        }
        None => return Err(bad("no \"schema\" field".into())),
    }
    let doc = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    crate::document::validate::validate(&doc).map_err(|problem| Error::InvalidDocument {
        path: origin.to_string(),
        problem,
    })?;
    Ok(doc)
}

/// Whether `value` is a hyperfine `--export-json` file: `results`, each with
/// a `command` and its `times`.
fn is_hyperfine_export(value: &serde_json::Value) -> bool {
    value
        .get("results")
        .and_then(|r| r.as_array())
        .is_some_and(|results| {
            !results.is_empty()
                && results
                    .iter()
                    .all(|r| r.get("command").is_some() && r.get("times").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

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

    #[test]
    fn a_symlink_is_followed_and_its_target_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        fs::write(&target, "old").unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        // A relative link, resolved from the link's own directory.
        let link = sub.join("link.json");
        std::os::unix::fs::symlink("../real.json", &link).unwrap();
        PendingFile::create(&link).unwrap().commit(b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link is still a link"
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temp left");

        // A dangling link: the file it names is created, the link kept.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("later.json"), &dangling).unwrap();
        PendingFile::create(&dangling)
            .unwrap()
            .commit(b"x")
            .unwrap();
        assert!(
            fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("later.json")).unwrap(),
            "x"
        );
    }

    #[test]
    fn a_fifo_is_written_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(made, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let reader_path = fifo.clone();
        std::thread::spawn(move || tx.send(fs::read_to_string(reader_path).unwrap()));
        let pending = PendingFile::create(&fifo).unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file");
        pending.commit(b"through the fifo").unwrap();
        assert!(
            fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
            "the FIFO was replaced by a file"
        );
        let read = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the reader got the bytes");
        assert_eq!(read, "through the fifo");
    }

    #[test]
    fn a_dash_is_standard_output_not_a_file() {
        let pending = PendingFile::create(Path::new(STDOUT)).unwrap();
        assert!(pending.is_stdout());
        assert_eq!(pending.dest(), Path::new("-"));
        // A path that merely ends in a dash is a file as usual.
        let dir = tempfile::tempdir().unwrap();
        let file = PendingFile::create(&dir.path().join("-")).unwrap();
        assert!(!file.is_stdout());
        file.commit(b"x").unwrap();
        assert_eq!(fs::read(dir.path().join("-")).unwrap(), b"x");
    }

    #[test]
    fn a_directory_or_a_symlink_loop_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = PendingFile::create(dir.path()).unwrap_err();
        assert!(err.to_string().contains("it is a directory"), "{err}");
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = PendingFile::create(&a).unwrap_err();
        assert!(err.to_string().contains("symlinks (a loop?)"), "{err}");
    }

    #[test]
    fn write_new_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("run.json"), "precious").unwrap();
        let a = write_new(dir.path(), "run", "json", b"a").unwrap();
        let b = write_new(dir.path(), "run", "json", b"b").unwrap();
        assert_eq!(a, dir.path().join("run-2.json"));
        assert_eq!(b, dir.path().join("run-3.json"));
        assert_eq!(
            fs::read_to_string(dir.path().join("run.json")).unwrap(),
            "precious"
        );
        assert_eq!(fs::read_to_string(&a).unwrap(), "a");
        assert_eq!(fs::read_to_string(&b).unwrap(), "b");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3, "no temp left");
        // Many writers at once each get their own file.
        let paths: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let dir = dir.path();
                    s.spawn(move || write_new(dir, "many", "json", &[b'0' + i]).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut contents: Vec<String> = paths
            .iter()
            .map(|p| fs::read_to_string(p).unwrap())
            .collect();
        contents.sort();
        assert_eq!(contents, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    }

    #[test]
    fn a_hyperfine_export_is_named_with_what_to_do() {
        let export = r#"{"results": [{"command": "sleep 0.1", "mean": 0.1, "times": [0.1, 0.1]}]}"#;
        let e = parse_document(export, "bench.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hyperfine's --export-json"), "{e}");
        assert!(e.contains("osbench time"), "{e}");
        let e = parse_document(r#"{"results": []}"#, "x.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no \"schema\" field"), "{e}");
    }
}

#[cfg(test)]
mod capped_tests {
    use super::*;

    #[test]
    fn an_endless_input_is_refused_at_the_cap() {
        let e = read_capped(std::io::repeat(0), "/dev/zero")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("more than 256 MiB"),
            "{e}"
        );
        assert_eq!(read_capped(&b"{}"[..], "x").unwrap(), "{}");
    }
}

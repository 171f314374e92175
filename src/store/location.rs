//! Where the results store lives: an SQLite file or a PostgreSQL database
//! ([`Location`]), from `--store`, `$OSBENCH_STORE` or the XDG data directory.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::postgres::PgUrl;

/// The environment variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "OSBENCH_STORE";

/// Where a store lives: an SQLite file, or a PostgreSQL database named by a
/// `postgresql://` (or `postgres://`) URL. Shown, the URL has no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(PgUrl),
}

impl Location {
    /// A store path or URL as given on the command line or in `OSBENCH_STORE`.
    pub fn new(given: &Path) -> Self {
        match given.to_str().and_then(PgUrl::recognise) {
            Some(url) => Location::Postgres(url),
            None => Location::File(given.to_path_buf()),
        }
    }

    /// Whether there may be runs stored here: the file exists, or (a
    /// server) always — connecting tells.
    pub fn exists(&self) -> bool {
        match self {
            Location::File(path) => path.exists(),
            Location::Postgres(_) => true,
        }
    }

    /// For messages: the path, or the URL without its password.
    pub fn display(&self) -> &Self {
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location::new(path)
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::new(path)
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::new(&path)
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

/// Where the store is: `explicit` (`--store`), else `$OSBENCH_STORE`, else
/// `$XDG_DATA_HOME/osbench/results.sqlite`, else
/// `~/.local/share/osbench/results.sqlite`. A `postgresql://` URL in either
/// of the first two names a PostgreSQL database.
pub fn location(explicit: Option<&Path>) -> Result<Location> {
    if let Some(p) = explicit {
        return Ok(Location::new(p));
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var(STORE_ENV) {
        return Ok(Location::new(Path::new(&p)));
    }
    // The XDG base directory spec ignores relative values.
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    match data_home {
        Some(dir) => Ok(Location::File(dir.join("osbench").join("results.sqlite"))),
        None => Err(Error::Store {
            path: "(none)".into(),
            message: format!(
                "neither HOME nor XDG_DATA_HOME is set; give --store PATH, set {STORE_ENV}, or use --no-store"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_tell_urls_from_paths_and_hide_passwords() {
        let file = Location::new(Path::new("results.sqlite"));
        assert_eq!(file, Location::File("results.sqlite".into()));
        let pg = Location::new(Path::new("postgresql://me:s3cret@db.example:5433/osbench"));
        assert!(matches!(pg, Location::Postgres(_)));
        assert_eq!(pg.to_string(), "postgresql://me@db.example:5433/osbench");
        assert!(Location::new(Path::new("POSTGRES://h/db")).exists());
        let typo = Location::new(Path::new("postgresql:/h/db"));
        assert!(matches!(typo, Location::Postgres(_)), "{typo:?}");
        // A relative directory that happens to be called postgres is a path.
        assert!(matches!(
            Location::new(Path::new("postgres/results.sqlite")),
            Location::File(_)
        ));
    }
}

//! Where results are kept: document files written atomically
//! (`document_file`) and the results store ([`Store`], in `queries`),
//! one interface over the SQLite and PostgreSQL back ends, with its location
//! (`location`), the SQL layer both share (`sql`) and the schema's
//! migrations (`migrations`), the change points regressions found
//! (`change_points`), the job queue's rows (`jobs`, and `boot_jobs` for
//! jobs that boot a kernel); [`resolve_document`]
//! finds a document by file, run id or label.

mod boot_jobs;
mod change_points;
mod document_file;
mod index;
mod jobs;
pub mod keep;
mod location;
mod migrations;
mod pinned;
mod postgres;
mod queries;
mod resolve;
mod sql;
mod sqlite;

#[cfg(test)]
use crate::document::Document;
pub use boot_jobs::BootWait;
pub use change_points::{FoundPoint, PointState, StoredPoint};
pub use document_file::{
    PendingFile, STDOUT, parse_document, read_capped, read_document, read_document_text, to_json,
    write_new,
};
pub use jobs::{Finish, JobRow, JobState, NewJob, WorkerId, WorkerRow, queue_needs_postgres};
pub use location::{Location, STORE_ENV, location};
pub use migrations::SCHEMA_VERSION;
pub use queries::{CaseRun, Filter, Inserted, RunRow, Store};
pub use resolve::{
    PRIOR_RUNS, ResolvedSide, invocation_priors, latest_per_host, resolve_document, resolve_side,
};
pub use sqlite::BUSY_TIMEOUT;

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

//! The one envelope of a measured run: `run`, `time`, `fleet run` (each
//! host), the worker's jobs and the boots of boot rounds (both through
//! `run` and `time`) all end here. [`keep_run`] stamps who ran the run
//! ([`RunIdentity`]), attaches its comparison, lets the caller show it, and
//! keeps the document as the store's keep policy says ([`Keeping`]: files,
//! the store, a fallback file). Running the plan (experiment::run,
//! experiment::time::run, fleet::run), progress, and wording what happened
//! are the callers'.

use crate::compare::Comparison;
use crate::document::{Document, RunIdentity};
use crate::error::{Error, Result};
use crate::experiment::Outcome;
use crate::store::keep::{KeepError, Keeping, Notice, Saved};

/// What the envelope tells its caller as it goes.
#[derive(Debug)]
pub enum Told<'a> {
    /// A comparison was wanted and could not be made (the run goes on without).
    NoComparison(&'a Error),
    /// What keeping the run wrote, where.
    Kept(Notice<'a>),
}

/// A run after its envelope: its document (stamped, the comparison
/// attached), the comparison, what was kept, and the error that stopped
/// the run early, if any.
#[derive(Debug)]
pub struct Kept {
    pub document: Document,
    pub comparison: Option<Comparison>,
    /// Whether there was anything to keep: something was measured, or the
    /// run ended well (a run that stopped before measuring keeps nothing).
    pub kept: bool,
    pub saved: std::result::Result<Saved, KeepError>,
    pub error: Option<Error>,
}

/// How a run's document is compared, when it is (`None`: it is not).
pub type Compare<'a> = Option<&'a dyn Fn(&Document) -> Result<Comparison>>;

/// Ends a run: stamps `identity` on `outcome`'s document, attaches
/// `compare`'s comparison (a failure is told, not an error), calls `show`
/// (its error stops here, before anything is kept), and keeps the document
/// with `keeping` (a stop signal while the store is written stops it; see
/// [`Keeping::finish`]).
pub fn keep_run<E>(
    mut outcome: Outcome,
    identity: &RunIdentity,
    compare: Compare,
    show: impl FnOnce(&Document, Option<&Comparison>) -> std::result::Result<(), E>,
    keeping: Keeping,
    tell: &mut dyn FnMut(Told),
) -> std::result::Result<Kept, E> {
    outcome.document.run.stamp(identity);
    let measured = !outcome.document.series.is_empty();
    let comparison = compare.filter(|_| measured).and_then(|c| {
        attach_comparison(&mut outcome.document, c)
            .inspect_err(|e| tell(Told::NoComparison(e)))
            .ok()
    });
    let doc = outcome.document;
    show(&doc, comparison.as_ref())?;
    let kept = !doc.series.is_empty() || outcome.error.is_none();
    let saved = keeping.finish(&doc, kept, &mut |n| tell(Told::Kept(n)));
    Ok(Kept {
        document: doc,
        comparison,
        kept,
        saved,
        error: outcome.error,
    })
}

/// `compare(doc)`, its records written into `doc`, when something was
/// measured (`Err` when the comparison cannot be made; nothing measured:
/// an error that says so).
pub fn attach_comparison(
    doc: &mut Document,
    compare: &dyn Fn(&Document) -> Result<Comparison>,
) -> Result<Comparison> {
    if doc.series.is_empty() {
        return Err(Error::Measure("nothing was measured to compare".into()));
    }
    let comparison = compare(doc)?;
    doc.comparisons = comparison.records();
    Ok(comparison)
}

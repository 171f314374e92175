//! Finding documents from what the command line names: a file, a run id or
//! a label ([`resolve_document`], [`resolve_side`]), the stored runs that give
//! a case its prior spread ([`invocation_priors`]), and each host's latest run.

use std::path::Path;

use crate::document::{CaseKey, Document};
use crate::error::{Error, Result};

use super::document_file::read_document;
use super::location::Location;
use super::queries::{Filter, RunRow, Store};

/// A document named on the command line: an existing file, else a run id in
/// the store at `store` (an integer), else the latest stored run with that
/// label. Returns a name for tables (the path, "run 3 (label)" or
/// "label (run 3)") and the document. `store` is `None` when no store location
/// could be determined.
pub fn resolve_document(arg: &str, store: Option<&Location>) -> Result<(String, Document)> {
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

/// A side of a comparison: its name and its documents, each with its run id.
pub type ResolvedSide = (String, Vec<(Option<i64>, Document)>);

/// One side of a comparison named on the command line: an existing file,
/// a run id, or a label — every stored run with that label, the replicates
/// of one side. Returns a name for tables and each document with its run id
/// (none for a file).
pub fn resolve_side(arg: &str, store: Option<&Location>) -> Result<ResolvedSide> {
    let labelled = store.filter(|s| s.exists()).and_then(|s| {
        if Path::new(arg).exists() || arg.parse::<i64>().is_ok() {
            return None;
        }
        Some(s)
    });
    let Some(location) = labelled else {
        let (name, doc) = resolve_document(arg, store)?;
        let id = (!Path::new(arg).exists())
            .then(|| arg.parse::<i64>().ok())
            .flatten();
        return Ok((name, vec![(id, doc)]));
    };
    let db = Store::open_existing(location)?;
    let rows = db.list(&Filter {
        label: Some(arg.to_string()),
        ..Filter::default()
    })?;
    if rows.len() < 2 {
        let (name, doc) = resolve_document(arg, store)?;
        return Ok((name, vec![(rows.first().map(|r| r.id), doc)]));
    }
    let mut docs = Vec::new();
    for row in &rows {
        if let Some(doc) = db.document(row.id)? {
            docs.push((Some(row.id), doc));
        }
    }
    let ids: Vec<String> = rows.iter().map(|r| r.id.to_string()).collect();
    Ok((format!("{arg} (runs {})", ids.join(", ")), docs))
}

/// Most stored runs a prior spread is taken from (the latest ones).
pub const PRIOR_RUNS: usize = 20;

/// The spread of single invocations of each case in `keys` (benchmark,
/// case, configuration) on `host` with `kernel`: the latest [`PRIOR_RUNS`]
/// stored runs of it other than the `compared` ones (by id in `exclude`, or
/// started at the same instant with the same seed), together with the
/// compared runs themselves — all taken as draws of one invocation, as they
/// are if nothing changed, so that an outlier among the compared widens the
/// spread instead of being measured against a spread it is not part of.
/// Other stored runs measured while other processes kept CPUs busy
/// ([`crate::env::Conditions::contended`]) are left out: a busy machine's
/// runs can lie far from a quiet one's (on a 2-vCPU guest, a cross-CPU
/// wake-up 45 times faster when the other CPU never halts), and one of them
/// would widen the spread of every later comparison of the case. The
/// compared runs stay in, contended or not (the comparison says when their
/// conditions differ). Cases with fewer than two other stored runs get none.
pub fn invocation_priors(
    db: &Store,
    keys: &[CaseKey],
    host: &str,
    kernel: &str,
    exclude: &[i64],
    compared: &[&Document],
) -> Result<std::collections::BTreeMap<CaseKey, crate::stats::replicates::Prior>> {
    let mut priors = std::collections::BTreeMap::new();
    for key in keys {
        let runs = db.case_history(&key.bench, &key.case, Some(&key.config), Some(host), None)?;
        let mut groups = Vec::new();
        for run in runs
            .iter()
            .rev()
            .filter(|r| r.kernel == kernel && !exclude.contains(&r.run_id))
        {
            if groups.len() == PRIOR_RUNS {
                break;
            }
            // A stored document that fails its checks gives no prior: it is
            // refused by name where it is itself asked for, never here.
            let doc = match db.document(run.run_id) {
                Ok(Some(doc)) => doc,
                Ok(None) | Err(Error::InvalidDocument { .. } | Error::BadDocument { .. }) => {
                    continue;
                }
                Err(e) => return Err(e),
            };
            if crate::env::Conditions::of(&doc.env).contended() {
                continue;
            }
            let same =
                |d: &&Document| d.run.started == doc.run.started && d.run.seed == doc.run.seed;
            if compared.iter().any(same) {
                continue;
            }
            let series = doc.series.iter().find(|s| s.key == *key);
            if let Some(s) = series {
                groups.push(s.replicates());
            }
        }
        if groups.len() < 2 {
            continue;
        }
        let others = groups.len();
        for doc in compared {
            let series = doc.series.iter().filter(|s| s.key == *key);
            groups.extend(series.map(|s| s.replicates()));
        }
        if let Some(mut prior) = crate::stats::replicates::Prior::from_runs(&groups) {
            prior.runs = others;
            priors.insert(key.clone(), prior);
        }
    }
    Ok(priors)
}

/// The latest of `rows` on each host (by start time, then id), by host name.
pub fn latest_per_host(rows: &[RunRow]) -> Vec<&RunRow> {
    let mut latest: Vec<&RunRow> = Vec::new();
    for row in rows {
        match latest.iter_mut().find(|r| r.hostname == row.hostname) {
            Some(r) if (&row.started, row.id) > (&r.started, r.id) => *r = row,
            Some(_) => {}
            None => latest.push(row),
        }
    }
    latest.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    latest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::conditions::tests::env_with;
    use crate::stats::replicates::Prior;

    /// The fixture as run `i`, its first case's one invocation at `median`, with a
    /// process using `busy` of a CPU at the start (none: 0).
    fn run(i: usize, median: f64, busy: f64) -> Document {
        let mut doc = super::super::fixture().1;
        doc.run.started = format!("2026-11-30T09:{i:02}:00Z");
        doc.run.label = Some(format!("r{i}"));
        let others: &[(&str, f64)] = if busy > 0.0 {
            &[("python3", busy)]
        } else {
            &[]
        };
        doc.env = env_with(others, Some(&[]));
        // One invocation of all its samples, with that median.
        let s = &mut doc.series[0];
        (s.invocations, s.invocation_samples) = (vec![median], vec![s.samples.len()]);
        doc
    }

    /// Stores `runs` and returns the store (in `dir`) and the first case's key.
    fn store_of(dir: &tempfile::TempDir, runs: &[Document]) -> (Store, CaseKey) {
        let mut db = Store::open(dir.path().join("results.sqlite")).unwrap();
        for doc in runs {
            db.insert(doc).unwrap();
        }
        (db, runs[0].series[0].key.clone())
    }

    /// A simulated A/A: five quiet stored runs near 100 ns, one measured
    /// while another process used a CPU, 45 times faster (the 2-vCPU
    /// guest's wake-ups when its other CPU never halts), then two quiet runs
    /// compared. The contended run is left out of the spread they borrow.
    #[test]
    fn a_contended_stored_run_does_not_widen_later_priors() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs: Vec<Document> = [100.0, 102.0, 98.0, 101.0, 99.0]
            .iter()
            .enumerate()
            .map(|(i, &m)| run(i, m, 0.0))
            .collect();
        runs.push(run(5, 2.2, 0.99));
        runs.push(run(6, 100.5, 0.0));
        runs.push(run(7, 99.5, 0.0));
        let (db, key) = store_of(&dir, &runs);
        let compared = [&runs[6], &runs[7]];
        let priors = invocation_priors(
            &db,
            std::slice::from_ref(&key),
            "testhost",
            "6.18.44-test",
            &[7, 8],
            &compared,
        )
        .unwrap();
        let prior = priors[&key];
        assert_eq!(
            prior.runs, 5,
            "the five quiet stored runs, not the busy one"
        );
        assert!(prior.log_sd() < 0.02, "{}", prior.log_sd());
        // The same runs with the busy one in: the spread it would have given.
        let all: Vec<Vec<f64>> = runs.iter().map(|d| d.series[0].replicates()).collect();
        let widened = Prior::from_runs(&all).unwrap();
        assert!(widened.log_sd() > 1.0, "{}", widened.log_sd());
    }

    /// A compared run stays in the spread even when it was contended (it is
    /// there so that an outlier among the compared widens it).
    #[test]
    fn a_contended_compared_run_stays_in_the_spread() {
        let dir = tempfile::tempdir().unwrap();
        let runs: Vec<Document> = (0..4)
            .map(|i| run(i, 100.0 + i as f64, 0.0))
            .chain([run(4, 2.2, 0.99), run(5, 100.0, 0.0)])
            .collect();
        let (db, key) = store_of(&dir, &runs);
        let priors = invocation_priors(
            &db,
            std::slice::from_ref(&key),
            "testhost",
            "6.18.44-test",
            &[5, 6],
            &[&runs[4], &runs[5]],
        )
        .unwrap();
        let prior = priors[&key];
        assert_eq!(prior.runs, 4);
        assert!(prior.log_sd() > 1.0, "{}", prior.log_sd());
    }
}

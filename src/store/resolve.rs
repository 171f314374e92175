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
/// Cases with fewer than two other stored runs get none.
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

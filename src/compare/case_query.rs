//! A case's histories read from the store: the query `osbench history
//! BENCH:CASE`, `plot --history` and `report --history` make ([`CaseQuery`]:
//! which cases, configuration, host, meta, order, least samples), its runs
//! filtered and ordered ([`super::history`]) into [`CaseHistory`]s with their
//! change points, and why a case has none ([`nothing_stored`]). Parsing the
//! arguments and printing are the command line's; rendering is report/'s.

use crate::error::{Error, Result};
use crate::stats::changepoint::Options;
use crate::store::{Filter, Store};

use super::history::{
    CaseHistory, RunOrder, case_histories, ordered_case_runs, plausible_runs, with_meta,
};

/// Which stored runs make the histories of one benchmark's cases.
#[derive(Debug, Clone, Default)]
pub struct CaseQuery {
    pub bench: String,
    /// The cases, each a history of its own (per host and configuration).
    pub cases: Vec<String>,
    /// The configuration the case named (`syscall:null [a]`).
    pub case_config: Option<String>,
    /// `--config`.
    pub config: Option<String>,
    /// `--host`.
    pub host: Option<String>,
    /// `--meta KEY=VALUE`: runs with all of them.
    pub meta: Vec<(String, String)>,
    /// `--order-by`.
    pub order_by: Option<RunOrder>,
    /// `--min-samples`.
    pub min_samples: Option<u32>,
}

impl CaseQuery {
    /// The configuration asked for: the case's tag or `--config`; an error
    /// when both name different ones.
    fn config(&self) -> Result<Option<&str>> {
        match (&self.case_config, &self.config) {
            (Some(tag), Some(flag)) if tag != flag => Err(Error::Usage(format!(
                "the case names configuration '{tag}' and --config '{flag}': give one of them"
            ))),
            (tag, flag) => Ok(tag.as_deref().or(flag.as_deref())),
        }
    }
}

/// The histories `query` asks for in `db`, each with its change points
/// when `options` is given; `note` hears each case's runs left out and why
/// (as "CASE: WHY").
pub fn read(
    db: &Store,
    query: &CaseQuery,
    options: Option<&Options>,
    note: &mut dyn FnMut(&str, &str),
) -> Result<Vec<CaseHistory>> {
    let config = query.config()?;
    let mut histories = Vec::new();
    for name in &query.cases {
        let runs = db.case_history(
            &query.bench,
            name,
            config,
            query.host.as_deref(),
            query.min_samples.map(i64::from),
        )?;
        let (runs, mut notes) = plausible_runs(with_meta(runs, &query.meta));
        let (runs, left_out) = ordered_case_runs(runs, &query.order_by.clone().unwrap_or_default());
        notes.extend(left_out);
        for n in notes {
            note(name, &n);
        }
        histories.extend(case_histories(&query.bench, name, runs, options));
    }
    Ok(histories)
}

/// Why `query` has no history in `db` (`case` as the user named it), and
/// the cases of its benchmark that are stored.
pub fn nothing_stored(db: &Store, query: &CaseQuery, case: &str) -> Result<String> {
    let bench = &query.bench;
    let mut which = format!("{bench}:{case}");
    if let Some(host) = &query.host {
        which.push_str(&format!(" on host {host}"));
    }
    if let Some(config) = query.case_config.as_ref().or(query.config.as_ref()) {
        which.push_str(&format!(" in configuration {config}"));
    }
    for (key, value) in &query.meta {
        which.push_str(&format!(" with --meta {key}={value}"));
    }
    let filter = Filter {
        bench: Some(bench.clone()),
        ..Filter::default()
    };
    let mut stored: Vec<String> = Vec::new();
    for row in db.list(&filter)? {
        for name in row.cases {
            // "bench case [config]" → "bench:case"
            let Some(rest) = name.strip_prefix(&format!("{bench} ")) else {
                continue;
            };
            let bare = rest.split(" [").next().unwrap_or(rest);
            let name = format!("{bench}:{bare}");
            if !stored.contains(&name) {
                stored.push(name);
            }
        }
    }
    Ok(if stored.is_empty() {
        format!(
            "No stored run has {which} (no run of {bench} is stored at {}).",
            db.location()
        )
    } else {
        format!(
            "No stored run has {which}; stored cases of {bench}: {}.",
            stored.join(", ")
        )
    })
}

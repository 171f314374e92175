//! `osbench rm RUN…` and `osbench relabel RUN NEW`: keeping the results
//! store clean. A RUN is a stored run's id or a label (every run with it).
//! Both list what they will change and ask before doing it (`--yes` skips
//! the question; off a terminal it is required). The store does the work,
//! in either back end; this finds the runs and asks. Left out: document
//! files (they are the user's own files).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;

use osbench::store::{Filter, RunRow, Store};

use super::save::{StoreArgs, parse_label};

/// `osbench rm`.
#[derive(Args)]
pub struct RmArgs {
    /// Stored runs to remove: run ids, or labels (every run with the label)
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<String>,
    /// Remove without asking (needed when standard input is not a terminal)
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// `osbench relabel`.
#[derive(Args)]
pub struct RelabelArgs {
    /// A stored run's id, or a label (every run with it gets the new one)
    #[arg(value_name = "RUN")]
    run: String,
    /// The new label (not only digits: numbers are run ids)
    #[arg(value_name = "NEW", value_parser = parse_label)]
    label: String,
    /// Relabel without asking (needed when standard input is not a terminal)
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    store: StoreArgs,
}

pub fn rm(args: RmArgs) -> anyhow::Result<ExitCode> {
    let mut db = open(&args.store)?;
    let mut rows: Vec<RunRow> = Vec::new();
    for run in &args.runs {
        for row in find(&db, run)? {
            if !rows.iter().any(|r| r.id == row.id) {
                rows.push(row);
            }
        }
    }
    let question = format!("Remove {} from {}?", listed(&rows), db.location());
    if !confirmed(&question, args.yes)? {
        eprintln!("osbench: nothing removed");
        return Ok(ExitCode::SUCCESS);
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    db.remove(&ids)?;
    eprintln!("osbench: removed {}", listed(&rows));
    Ok(ExitCode::SUCCESS)
}

pub fn relabel(args: RelabelArgs) -> anyhow::Result<ExitCode> {
    let mut db = open(&args.store)?;
    let rows = find(&db, &args.run)?;
    let question = format!("Label {} '{}'?", listed(&rows), args.label);
    if !confirmed(&question, args.yes)? {
        eprintln!("osbench: nothing relabelled");
        return Ok(ExitCode::SUCCESS);
    }
    for row in &rows {
        db.relabel(row.id, Some(&args.label))?;
    }
    eprintln!("osbench: labelled {} '{}'", listed(&rows), args.label);
    Ok(ExitCode::SUCCESS)
}

/// The store, which must exist.
fn open(store: &StoreArgs) -> anyhow::Result<Store> {
    let location = osbench::store::location(store.store.as_deref())?;
    if !location.exists() {
        bail!("no runs stored yet ({location} does not exist)");
    }
    Ok(Store::open_existing(&location)?)
}

/// The stored runs `run` names: the run with that id, or every run with that label.
fn find(db: &Store, run: &str) -> anyhow::Result<Vec<RunRow>> {
    let all = db.list(&Filter::default())?;
    let found: Vec<RunRow> = match run.parse::<i64>() {
        Ok(id) => all.into_iter().filter(|r| r.id == id).collect(),
        Err(_) => all
            .into_iter()
            .filter(|r| r.label.as_deref() == Some(run))
            .collect(),
    };
    if found.is_empty() {
        bail!(
            "no stored run is {} (in {}); `osbench history` lists the runs",
            match run.parse::<i64>() {
                Ok(id) => format!("run {id}"),
                Err(_) => format!("labelled '{run}'"),
            },
            db.location()
        );
    }
    Ok(found)
}

/// "run 3 (label x, host h, 2026-12-01T02:00:00Z)" or "3 runs: 3, 4, 7".
fn listed(rows: &[RunRow]) -> String {
    // Labels and host names from the store: shown, never obeyed.
    let text = listed_raw(rows);
    osbench::text::printable(&text).into_owned()
}

fn listed_raw(rows: &[RunRow]) -> String {
    match rows {
        [one] => format!(
            "run {} ({}host {}, {})",
            one.id,
            one.label
                .as_ref()
                .map_or(String::new(), |l| format!("label '{l}', ")),
            one.hostname,
            one.started
        ),
        many => format!(
            "{} runs: {}",
            many.len(),
            many.iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether to go ahead: `yes`, or "y" typed on a terminal; off a terminal
/// without `yes`, an error (a script must say so).
fn confirmed(question: &str, yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!("{question} Standard input is not a terminal to ask on: give --yes to go ahead");
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

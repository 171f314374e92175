//! A case's history on the command line: `osbench history BENCH:CASE
//! [--changes] [--host H] [--config C]` (its stored runs in time order, and
//! where its level changed), and the `--history BENCH:CASE` of `plot` and
//! `report`. The query is the library's (`compare::case_query`: the store
//! reads the runs, `compare::history` finds the change points),
//! `report::case_history` lays them out; this parses the arguments and
//! prints. Left out: the run list of plain `osbench history`
//! (in `history`).

use std::process::ExitCode;

use clap::Args;

use osbench::bench::util::select::{Selector, config_tag, resolve};
use osbench::compare::case_query::{self, CaseQuery};
use osbench::compare::history::{CaseHistory, RunOrder};
use osbench::report;
use osbench::stats::changepoint::Options;
use osbench::store::{self, Store};

use super::save::StoreArgs;

/// Stored cases of one benchmark, by their names as tables show them, and
/// the configuration a tag named (`syscall:null [a]`).
#[derive(Debug, Clone)]
pub struct CaseName {
    pub bench: String,
    pub case: String,
    /// Every case the argument names: `case` alone, or each case of a
    /// selector (`syscall`: its default cases, as `run syscall` runs them).
    pub cases: Vec<String>,
    pub config: Option<String>,
}

/// A case as osbench prints it (`syscall:null`, `ctx 2p/0K [a]`), or any
/// selector `run` takes (`syscall`, `ctx:procs=2`): its cases by name; a
/// name the registry does not know (a case of an older osbench) as it is.
pub fn parse_case(s: &str) -> Result<CaseName, String> {
    let (text, tag) = config_tag(s);
    let config = tag.map(str::to_string);
    if let Ok(sel) = text.parse::<Selector>()
        && let Ok(cases) = resolve(std::slice::from_ref(&sel))
        && cases.iter().all(|c| c.def.name == sel.bench)
    {
        let names: Vec<String> = cases.iter().map(|c| c.name()).collect();
        return Ok(CaseName {
            bench: sel.bench,
            case: names.join(", "),
            cases: names,
            config,
        });
    }
    match text.split_once(':') {
        Some((bench, case)) if !bench.is_empty() && !case.is_empty() => Ok(CaseName {
            bench: bench.to_string(),
            case: case.to_string(),
            cases: vec![case.to_string()],
            config,
        }),
        _ => Err(format!(
            "'{s}' is not BENCH:CASE (a case as history and the tables name it, e.g. \
             syscall:null or ctx:2p/0K) nor a benchmark osbench knows"
        )),
    }
}

pub(super) fn parse_p(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!("'{s}' is not a p-value between 0 and 1")),
    }
}

/// Which runs make a case's history: flattened into `history`.
#[derive(Args)]
pub struct CaseArgs {
    /// Show one case's history instead of the run list: its stored runs in time order, with
    /// the median and 95% interval of each (BENCH:CASE as tables name it, e.g. syscall:null or
    /// `syscall:null [a]`, or a selector as run takes, e.g. syscall: each of its cases)
    #[arg(value_name = "BENCH:CASE", value_parser = super::with_bench_names(parse_case),
          hide_possible_values = true, conflicts_with_all = ["bench", "label", "kernel"])]
    pub case: Option<CaseName>,
    /// With BENCH:CASE: find the runs where its level changed (E-divisive means with a
    /// permutation test), per host and configuration
    #[arg(long, requires = "case")]
    pub changes: bool,
    #[command(flatten)]
    pub only: OnlyArgs,
    /// With --changes: the largest p-value that makes a change point
    #[arg(long, value_name = "P", default_value_t = Options::default().alpha,
          value_parser = parse_p, requires = "changes")]
    pub max_p: f64,
}

/// `--host`, `--config`: which host's runs, which configuration.
#[derive(Args)]
pub struct OnlyArgs {
    /// Only runs on this host (its name as history lists it); in a case history, without it
    /// each host is a history of its own
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Case histories: only this configuration; without it each configuration is a history
    /// of its own
    #[arg(long, value_name = "NAME")]
    pub config: Option<String>,
    /// Only runs recorded with this --meta KEY=VALUE (repeat: all of them), e.g. commit=ab12cd
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = osbench::document::meta::parse_pair)]
    pub meta: Vec<(String, String)>,
    /// The order of the runs: start (their start times; case histories' default) or meta:KEY
    /// (the order each value of --meta KEY first appears in, e.g. meta:commit: a revision
    /// axis; runs without the key are left out)
    #[arg(long, value_name = "start|meta:KEY")]
    pub order_by: Option<RunOrder>,
    /// Leave out runs that took fewer than N samples (in a case history, of the case; in the
    /// run list, in every series), e.g. a quick `--samples 1` try beside n = 11 runs
    #[arg(long = "min-samples", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub min_samples: Option<u32>,
}

impl OnlyArgs {
    /// An error when `--host` or `--config` is given without a case (`flag`) to apply to.
    pub fn check(&self, has_case: bool, flag: &str) -> anyhow::Result<()> {
        if !has_case && (self.host.is_some() || self.config.is_some()) {
            anyhow::bail!("--host and --config choose the runs of a case history: give {flag}");
        }
        Ok(())
    }
}

/// `osbench history BENCH:CASE …`; `None` when no case was given (the run list then).
pub fn history(
    args: &CaseArgs,
    store: &StoreArgs,
    console: super::Console,
) -> Option<anyhow::Result<ExitCode>> {
    // --host also filters the run list; --config only chooses in a case history.
    if args.case.is_none() && args.only.config.is_some() {
        return Some(Err(anyhow::anyhow!(
            "--config chooses the runs of a case history: give BENCH:CASE"
        )));
    }
    let case = args.case.as_ref()?;
    Some(print_history(args, case, store, console))
}

fn print_history(
    args: &CaseArgs,
    case: &CaseName,
    store: &StoreArgs,
    console: super::Console,
) -> anyhow::Result<ExitCode> {
    let path = store::location(store.store.as_deref())?;
    if !path.exists() {
        anyhow::bail!(
            "no runs stored yet, so no history of {}:{} ({} does not exist; osbench run saves \
             every run there)",
            case.bench,
            case.case,
            path.display()
        );
    }
    let db = Store::open_existing(&path)?;
    let options = Options {
        alpha: args.max_p,
        ..Options::default()
    };
    let histories = read(&db, case, &args.only, args.changes.then_some(&options))?;
    if histories.is_empty() {
        // A case with no stored run is an error (status 2), as in `plot --history`.
        anyhow::bail!("{}", nothing_stored(&db, case, &args.only)?);
    }
    console.print(&report::case_history::render_within(
        &histories,
        console.width,
    ));
    Ok(ExitCode::SUCCESS)
}

/// The histories of `case` in the store at `store` (for `plot` and
/// `report`), each with its change points; an error when it has no run.
pub fn load(
    case: &CaseName,
    only: &OnlyArgs,
    store: &StoreArgs,
) -> anyhow::Result<Vec<CaseHistory>> {
    let path = store::location(store.store.as_deref())?;
    let db = Store::open_existing(&path)?;
    let histories = read(&db, case, only, Some(&Options::default()))?;
    if histories.is_empty() {
        anyhow::bail!("{}", nothing_stored(&db, case, only)?);
    }
    Ok(histories)
}

/// The query `case` and `only` make ([`osbench::compare::case_query`]).
fn query(case: &CaseName, only: &OnlyArgs) -> CaseQuery {
    CaseQuery {
        bench: case.bench.clone(),
        cases: case.cases.clone(),
        case_config: case.config.clone(),
        config: only.config.clone(),
        host: only.host.clone(),
        meta: only.meta.clone(),
        order_by: only.order_by.clone(),
        min_samples: only.min_samples,
    }
}

/// The histories of `case` (the library's query), the runs left out said
/// as warnings.
fn read(
    db: &Store,
    case: &CaseName,
    only: &OnlyArgs,
    options: Option<&Options>,
) -> anyhow::Result<Vec<CaseHistory>> {
    let mut note = |name: &str, why: &str| {
        super::note(&format!("osbench: warning: {}:{name}: {why}", case.bench));
    };
    Ok(case_query::read(
        db,
        &query(case, only),
        options,
        &mut note,
    )?)
}

/// Why `case` has no history here, and the cases of its benchmark that are stored.
fn nothing_stored(db: &Store, case: &CaseName, only: &OnlyArgs) -> anyhow::Result<String> {
    Ok(case_query::nothing_stored(
        db,
        &query(case, only),
        &case.case,
    )?)
}

//! `osbench regressions`: the nightly sweep. Reads every stored case ×
//! host × configuration, finds change points as `history --changes` does,
//! keeps those of a recent window (`--since`, `--last`) that are large
//! enough and not yet dismissed in the store, records the confirmed ones in
//! the store's `change_points` (a change found again a run or two apart
//! keeps its record: its id and what was said of it), adds the environment
//! keys that changed with the level, prints them with the pending ones and
//! the drifting stretches (and `--json`, `--markdown`, `--csv`), posts the
//! Markdown to `--webhook`, and exits 1 when a confirmed one is a slowdown
//! (a pending one too with `--pending`). `--ack ID`, `--expect ID`
//! and `--fixed ID` dismiss one. The work is the library's
//! (`compare::regressions`, `report::regressions`); left out: any schedule
//! (cron runs it).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Args;

use osbench::compare::history::{
    CaseHistory, RunOrder, case_histories, ordered_case_runs, plausible_runs, with_meta,
};
use osbench::compare::regressions::{Regression, Sweep, SweepOptions, Window, drifts, sweep};
use osbench::document::{rfc3339, span_secs};
use osbench::report::regressions::{self as render, Scope};
use osbench::stats::changepoint::Options;
use osbench::store::PendingFile;
use osbench::store::{self, CaseRun, FoundPoint, PointState, Store, StoredPoint};

use super::save::{ExportArgs, StoreArgs};

/// `osbench regressions`.
#[derive(Args)]
pub struct RegressionsArgs {
    /// Only runs on this host
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Only cases of this benchmark
    #[arg(long, value_name = "BENCH")]
    bench: Option<String>,
    /// Only runs with exactly this label
    #[arg(long, value_name = "NAME")]
    label: Option<String>,
    /// Only runs recorded with this --meta KEY=VALUE (repeat: all of them)
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = osbench::document::meta::parse_pair)]
    meta: Vec<(String, String)>,
    /// The window: change points whose new level starts in it (and each history's current
    /// level, while it reaches into it and is not dismissed). A duration back from now
    /// (90m, 24h, 7d), a run (id or label: runs started since it) or an RFC 3339 time
    /// [default: 24h]
    #[arg(long, value_name = "24h|RUN|TIME", conflicts_with = "last")]
    since: Option<String>,
    /// The window: the last N runs of each history
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    last: Option<u32>,
    /// Only changes of at least PCT percent either way
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_pct)]
    min_change: f64,
    /// The largest permutation p-value that makes a change point
    #[arg(long, value_name = "P", default_value_t = Options::default().alpha,
          value_parser = super::history_changes::parse_p)]
    max_p: f64,
    /// The order of each history's runs: start (default) or meta:KEY (a revision axis); the
    /// revisions shown are those of KEY (default: commit)
    #[arg(long, value_name = "start|meta:KEY")]
    order_by: Option<RunOrder>,
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Also write KCIDB I/O JSON to FILE (KernelCI's results): each change point a test, the
    /// level after it as its measurement; a confirmed slowdown FAIL, a pending one DONE, a
    /// confirmed speed-up PASS; `-`: standard output
    #[arg(long, value_name = "FILE")]
    kcidb: Option<PathBuf>,
    /// Also post the Markdown report to URL as {"text": …} (Slack and Mattermost incoming
    /// webhooks), when something is reported
    #[arg(long, value_name = "URL", value_parser = super::webhook::parse_url)]
    webhook: Option<String>,
    /// Also alert on pending change points (those too few runs confirm yet): exit 1 and post
    /// to --webhook for a pending slowdown too. The early warning, with the false alarms of
    /// two unlucky runs
    #[arg(long)]
    pending: bool,
    /// Mark change point ID acknowledged (looked at): later sweeps do not report it
    #[arg(long, value_name = "ID", conflicts_with_all = ["expect", "fixed"])]
    ack: Option<i64>,
    /// Mark change point ID expected (meant to happen): later sweeps do not report it
    #[arg(long, value_name = "ID", conflicts_with = "fixed")]
    expect: Option<i64>,
    /// Mark change point ID fixed: later sweeps do not report it
    #[arg(long, value_name = "ID")]
    fixed: Option<i64>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..1000.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "'{s}' is not a percentage between 0 and 1000 (e.g. 5 for 5%)"
        )),
    }
}

/// How many runs on each side of a change the environment diff reads.
const ENV_RUNS: usize = 5;

pub fn regressions(args: RegressionsArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    let location = store::location(args.store.store.as_deref())?;
    if let Some((id, state)) = dismissal(&args) {
        let db = Store::open_existing(&location)?;
        db.set_change_point_state(id, state)?;
        println!("change point {id}: {}", state.as_str());
        return Ok(ExitCode::SUCCESS);
    }
    let kcidb = kcidb_file(&args)?;
    let exports = args.exports.prepare()?;
    if !location.exists() {
        console.print(&format!(
            "No runs stored yet ({location} does not exist; osbench run saves every run there).\n"
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let db = Store::open_existing(&location)?;
    let window = window(&args, &db)?;
    let histories = histories(&args, &db)?;
    let revision_key = match &args.order_by {
        Some(RunOrder::Meta(key)) => key.clone(),
        _ => "commit".to_string(),
    };
    let options = SweepOptions {
        window: window.clone(),
        min_change: args.min_change,
        revision_key,
    };
    let stored = db.change_points()?;
    let (mut found, mut pending) = (Vec::new(), Vec::new());
    for mut r in sweep(&histories, &options) {
        if r.confirmed {
            let Some(kept) = keep(&db, &stored, &r)? else {
                continue;
            };
            r.id = kept.id;
        }
        r.env = env_changes(&db, &r);
        if r.confirmed {
            found.push(r);
        } else {
            pending.push(r);
        }
    }
    let drifts = drifts(&histories, &options);
    let scope = Scope {
        window: match &window {
            Window::Since(t) => format!("levels since {t}"),
            Window::Last(n) => format!("the last {n} runs of each history"),
        },
        histories: histories.len(),
        min_change: args.min_change,
        max_p: args.max_p,
    };
    let sweep = Sweep {
        confirmed: found,
        pending,
        drifts,
    };
    console.print(&render::text_within(&sweep, &scope, console.width));
    exports.commit(
        || render::json(&sweep, &scope),
        || render::markdown(&sweep, &scope),
        || render::csv(&sweep),
    )?;
    write_kcidb(kcidb, &sweep, &scope)?;
    let alerts = |r: &&Regression| r.confirmed || args.pending;
    let alerted: Vec<&Regression> = sweep.changes().filter(alerts).collect();
    if let (Some(url), false) = (&args.webhook, alerted.is_empty()) {
        super::webhook::post_text(url, &render::markdown(&sweep, &scope))
            .with_context(|| format!("the report was not posted to --webhook {url}"))?;
    }
    Ok(if alerted.iter().any(|r| r.slower) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--kcidb`'s file, created now (a bad path fails before the sweep);
/// refused when it and an export both want standard output.
fn kcidb_file(args: &RegressionsArgs) -> anyhow::Result<Option<PendingFile>> {
    let paths = args.exports.paths().into_iter();
    super::save::one_stdout(paths.chain([args.kcidb.as_deref()]))?;
    Ok(args.kcidb.as_deref().map(PendingFile::create).transpose()?)
}

/// Writes the sweep as KCIDB I/O JSON into `file`, if given.
fn write_kcidb(file: Option<PendingFile>, sweep: &Sweep, scope: &Scope) -> anyhow::Result<()> {
    if let Some(file) = file {
        let dest = super::save::shown(file.dest());
        file.commit(&osbench::report::kcidb::regressions(sweep, &scope.window))?;
        eprintln!("osbench: wrote {dest} (KCIDB I/O JSON)");
    }
    Ok(())
}

/// The stored record `r` is (the same change found earlier, moved to where
/// the detection now places it, keeping its id and what was said of it, or
/// a new one); `None` when it was dismissed (`--ack`, `--expect`, `--fixed`).
fn keep(db: &Store, stored: &[StoredPoint], r: &Regression) -> anyhow::Result<Option<StoredPoint>> {
    let same: Vec<&StoredPoint> = stored
        .iter()
        .filter(|p| r.is_same_change(&p.point))
        .collect();
    if same.iter().any(|p| p.state != PointState::New) {
        return Ok(None);
    }
    let point = found_point(r);
    let kept = match same.first() {
        Some(earlier) => db.move_change_point(earlier.id, &point)?,
        None => db.record_change_point(&point)?,
    };
    Ok((kept.state == PointState::New).then_some(kept))
}

/// `--ack`, `--expect` or `--fixed`: the change point and its new state.
fn dismissal(args: &RegressionsArgs) -> Option<(i64, PointState)> {
    args.ack
        .map(|id| (id, PointState::Acknowledged))
        .or(args.expect.map(|id| (id, PointState::Expected)))
        .or(args.fixed.map(|id| (id, PointState::Fixed)))
}

/// The window `--since` or `--last` asks for (default: the last 24 hours).
fn window(args: &RegressionsArgs, db: &Store) -> anyhow::Result<Window> {
    if let Some(n) = args.last {
        return Ok(Window::Last(n as usize));
    }
    let since = args.since.as_deref().unwrap_or("24h");
    if let Some(secs) = span_secs(since) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        return Ok(Window::Since(rfc3339(now.saturating_sub(secs))));
    }
    if looks_like_time(since) {
        return Ok(Window::Since(since.to_string()));
    }
    let id = match since.parse::<i64>() {
        Ok(id) => id,
        Err(_) => db.latest_with_label(since)?.ok_or_else(|| {
            anyhow!(
                "--since '{since}' is not a duration (24h, 7d, 90m), an RFC 3339 time or a \
                 stored run (id or label) in {}",
                db.location()
            )
        })?,
    };
    let doc = db
        .document(id)?
        .ok_or_else(|| anyhow!("--since {id}: no run {id} is stored in {}", db.location()))?;
    Ok(Window::Since(doc.run.started))
}

/// "2026-12-01" or "2026-12-01T02:00:00Z".
fn looks_like_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && b[..4].iter().all(u8::is_ascii_digit)
}

/// Every stored case × host × configuration the filters select, each tested.
fn histories(args: &RegressionsArgs, db: &Store) -> anyhow::Result<Vec<CaseHistory>> {
    let mut cases: Vec<((String, String), Vec<CaseRun>)> = Vec::new();
    for (bench, case, run) in db.all_case_runs(args.bench.as_deref(), args.host.as_deref())? {
        if args.label.is_some() && run.label != args.label {
            continue;
        }
        let key = (bench, case);
        match cases.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => runs.push(run),
            None => cases.push((key, vec![run])),
        }
    }
    let options = Options {
        alpha: args.max_p,
        ..Options::default()
    };
    let order = args.order_by.clone().unwrap_or_default();
    let mut histories = Vec::new();
    for ((bench, case), runs) in cases {
        let (runs, mut notes) = plausible_runs(with_meta(runs, &args.meta));
        let (runs, left_out) = ordered_case_runs(runs, &order);
        notes.extend(left_out);
        for note in notes {
            super::warn(&format!("{bench}:{case}: {note}"));
        }
        histories.extend(case_histories(&bench, &case, runs, Some(&options)));
    }
    Ok(histories)
}

fn found_point(r: &Regression) -> FoundPoint {
    FoundPoint {
        key: r.key.clone(),
        host: r.host.clone(),
        unit: r.unit.clone(),
        run_id: r.after.runs[0],
        before_run_id: *r.before.runs.last().unwrap_or(&r.after.runs[0]),
        before_median: r.before.median,
        after_median: r.after.median,
        relative: r.change,
        p_value: r.p_value,
        direction: osbench::document::Direction::of(r.slower),
    }
}

/// The environment keys that changed with the level, from the documents of
/// up to [`ENV_RUNS`] runs on each side of the change.
fn env_changes(db: &Store, r: &Regression) -> Vec<osbench::env::SideChange> {
    let read = |ids: &[i64]| -> Vec<osbench::env::Environment> {
        let mut envs = Vec::new();
        for &id in ids {
            // A document that cannot be read leaves the diff, not the sweep.
            match db.document(id) {
                Ok(Some(doc)) => envs.push(doc.env),
                Ok(None) => {}
                Err(e) => super::warn(&format!("environment of run {id} left out: {e}")),
            }
        }
        envs
    };
    let before = &r.before.runs[r.before.runs.len().saturating_sub(ENV_RUNS)..];
    let after = &r.after.runs[..r.after.runs.len().min(ENV_RUNS)];
    let (before, after) = (read(before), read(after));
    let (before, after): (Vec<_>, Vec<_>) = (before.iter().collect(), after.iter().collect());
    osbench::env::between_sides(&before, &after)
}

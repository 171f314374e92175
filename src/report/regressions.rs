//! `osbench regressions` as text, Markdown (also what `--webhook` posts),
//! CSV and JSON: each change point kept with its runs and revisions on both
//! sides, the medians, the change, p, and the environment keys that changed.
//! Left out: finding them ([`crate::compare::regressions`]) and the store's
//! record of what was dismissed.

use super::layout::Table;
use super::{fmt_pct, fmt_sig};
use crate::compare::regressions::{DriftFinding, Level, Regression, Sweep};
use crate::document::Unit;

/// What was swept, for the headline.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// "the last 2 runs of each history", "runs since 2026-12-01T00:00:00Z".
    pub window: String,
    pub histories: usize,
    /// The smallest |change| kept (fraction) and the largest p.
    pub min_change: f64,
    pub max_p: f64,
}

/// "syscall null [patched]".
fn case_name(r: &Regression) -> String {
    r.key.to_string()
}

/// A median with its unit as people read it ("10.2 ms" stays "10.2 ms").
fn median(value: f64, unit: &str) -> String {
    let symbol = serde_json::from_value::<Unit>(serde_json::Value::String(unit.into()))
        .map_or_else(|_| unit.to_string(), |u| u.symbol().to_string());
    format!("{} {symbol}", fmt_sig(value))
}

fn p(value: f64) -> String {
    super::compare::fmt_p(value)
}

/// The headline: how many confirmed slowdowns and improvements, pending
/// changes and drifting stretches, over what.
pub fn headline(sweep: &Sweep, scope: &Scope) -> String {
    let slower = sweep.confirmed.iter().filter(|r| r.slower).count();
    let faster = sweep.confirmed.len() - slower;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut waiting = Vec::new();
    if !sweep.pending.is_empty() {
        waiting.push(format!("{} pending", sweep.pending.len()));
    }
    if !sweep.drifts.is_empty() {
        waiting.push(format!("{} drifting", sweep.drifts.len()));
    }
    format!(
        "{}, {} in {}{} (window: {}; |change| ≥ {}, p ≤ {})",
        plural(slower, "slowdown", "slowdowns"),
        plural(faster, "improvement", "improvements"),
        plural(scope.histories, "history", "histories"),
        if waiting.is_empty() {
            String::new()
        } else {
            format!("; {}", waiting.join(", "))
        },
        scope.window,
        fmt_pct(scope.min_change),
        scope.max_p
    )
}

/// Why pending and drifting ones are not alerted on, for the footnote.
fn waiting_note(sweep: &Sweep) -> Option<String> {
    let mut parts = Vec::new();
    if !sweep.pending.is_empty() {
        parts.push(format!(
            "pending: not yet confirmed ({} runs of the new level and p ≤ {} confirm one; two \
             unlucky runs look like a change), not alerted on unless --pending",
            crate::stats::changepoint::CONFIRM_RUNS,
            crate::stats::changepoint::CONFIRM_ALPHA
        ));
    }
    if !sweep.drifts.is_empty() {
        parts.push(
            "drifting: the level moves run by run rather than in a step; not alerted on".into(),
        );
    }
    (!parts.is_empty()).then(|| parts.join("; ") + ".")
}

/// One line per drifting stretch.
fn drift_lines(drifts: &[DriftFinding], escape: impl Fn(&str) -> String) -> String {
    drifts
        .iter()
        .map(|d| {
            let revisions = d
                .runs
                .revisions()
                .map_or_else(String::new, |r| format!(", revisions {r}"));
            format!(
                "- {} on {}: drifting {}/run over runs {}{} ({} in all, p {})\n",
                escape(&d.key.to_string()),
                escape(&d.host),
                super::case_history::per_run_pct(d.per_run),
                d.runs.run_range(),
                escape(&revisions),
                super::case_history::signed_pct(d.total),
                p(d.p_value)
            )
        })
        .collect()
}

const HEADER: [&str; 12] = [
    "id",
    "change",
    "case",
    "host",
    "runs before",
    "revisions before",
    "median before",
    "runs after",
    "revisions after",
    "median after",
    "p",
    "env changed",
];

fn revisions(level: &Level) -> String {
    level.revisions().unwrap_or_else(|| "-".into())
}

fn row(r: &Regression) -> Vec<String> {
    let keys: Vec<&str> = r.env.iter().map(|c| c.key.as_str()).collect();
    vec![
        if r.confirmed {
            r.id.to_string()
        } else {
            "pending".into()
        },
        format!(
            "{} {}",
            crate::document::Direction::of(r.slower),
            super::case_history::signed_pct(r.change)
        ),
        case_name(r),
        r.host.clone(),
        r.before.run_range(),
        revisions(&r.before),
        median(r.before.median, &r.unit),
        r.after.run_range(),
        revisions(&r.after),
        median(r.after.median, &r.unit),
        p(r.p_value),
        if keys.is_empty() {
            "-".into()
        } else {
            keys.join(", ")
        },
    ]
}

/// One line per environment key that changed at a change point.
fn env_lines(sweep: &Sweep, escape: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    for r in sweep.changes() {
        let which = if r.confirmed {
            format!("#{}", r.id)
        } else {
            format!("pending {} at run {}", r.key, r.after.runs[0])
        };
        for c in &r.env {
            out.push_str(&format!(
                "- {} {}: {} → {}\n",
                escape(&which),
                escape(&c.key),
                escape(&c.before.join(", ")),
                escape(&c.after.join(", "))
            ));
        }
    }
    out
}

/// For the terminal.
pub fn text(sweep: &Sweep, scope: &Scope) -> String {
    text_within(sweep, scope, None)
}

/// [`text`] fitted to `width` columns: the table by [`super::fit`], the
/// sentences wrapped at words (`None`: one line per change point).
pub fn text_within(sweep: &Sweep, scope: &Scope, width: Option<usize>) -> String {
    let prose = |text: &str| super::fit::wrap_prose(text, width);
    let mut out = prose(&format!(
        "osbench regressions: {}\n",
        headline(sweep, scope)
    ));
    if sweep.changes().next().is_some() {
        out.push('\n');
        let mut numeric = vec![false; HEADER.len()];
        for i in [0, 6, 9, 10] {
            numeric[i] = true;
        }
        let table = Table {
            header: HEADER.to_vec(),
            numeric,
            rows: sweep.changes().map(row).collect(),
            cases: Vec::new(),
        };
        out.push_str(&table.to_text_within(width));
    }
    let env = env_lines(sweep, str::to_string);
    if !env.is_empty() {
        out.push_str("\nEnvironment keys that changed with the level:\n");
        out.push_str(&prose(&env));
    }
    if !sweep.drifts.is_empty() {
        out.push_str("\nDrifting, not stepping:\n");
        out.push_str(&prose(&drift_lines(&sweep.drifts, str::to_string)));
    }
    if let Some(note) = waiting_note(sweep) {
        out.push_str(&prose(&format!("\n{note}\n")));
    }
    if !sweep.confirmed.is_empty() {
        out.push_str(&prose(
            "\nDismiss one with osbench regressions --ack ID (looked at) or --expect ID (meant \
             to happen).\n",
        ));
    }
    out
}

/// Markdown: a heading, the table, the environment changes and the
/// drifting stretches (what the webhook posts).
pub fn markdown(sweep: &Sweep, scope: &Scope) -> String {
    let esc = super::markdown::escape;
    let mut out = format!(
        "**osbench regressions**: {}\n",
        esc(&headline(sweep, scope))
    );
    if sweep.changes().next().is_some() {
        out.push('\n');
        let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
        let rows: Vec<Vec<String>> = sweep
            .changes()
            .map(|r| row(r).iter().map(|c| esc(c)).collect())
            .collect();
        let mut numeric = vec![false; HEADER.len()];
        numeric[0] = true;
        out.push_str(&super::markdown::table(&header, &numeric, &rows));
    }
    let env = env_lines(sweep, esc);
    if !env.is_empty() {
        out.push_str("\nEnvironment keys that changed with the level:\n\n");
        out.push_str(&env);
    }
    if !sweep.drifts.is_empty() {
        out.push_str("\nDrifting, not stepping:\n\n");
        out.push_str(&drift_lines(&sweep.drifts, esc));
    }
    if let Some(note) = waiting_note(sweep) {
        out.push_str(&format!("\n{}\n", esc(&note)));
    }
    out
}

/// One row per change point, confirmed or pending (`status`).
pub fn csv(sweep: &Sweep) -> String {
    let mut w = super::csv::writer();
    super::csv::write(
        &mut w,
        &[
            "id",
            "bench",
            "case",
            "config",
            "host",
            "unit",
            "direction",
            "change",
            "p_value",
            "before_first_run",
            "before_last_run",
            "before_first_revision",
            "before_last_revision",
            "before_median",
            "after_first_run",
            "after_last_run",
            "after_first_revision",
            "after_last_revision",
            "after_median",
            "env_changed",
            "status",
        ],
    );
    for r in sweep.changes() {
        let run = |l: &Level, last: bool| {
            let id = if last { l.runs.last() } else { l.runs.first() };
            id.map_or_else(String::new, i64::to_string)
        };
        let rev = |v: &Option<String>| v.clone().unwrap_or_default();
        let keys: Vec<&str> = r.env.iter().map(|c| c.key.as_str()).collect();
        let cells = [
            r.id.to_string(),
            r.key.bench.clone(),
            r.key.case.clone(),
            r.key.config.clone(),
            r.host.clone(),
            r.unit.clone(),
            crate::document::Direction::of(r.slower).to_string(),
            r.change.to_string(),
            r.p_value.to_string(),
            run(&r.before, false),
            run(&r.before, true),
            rev(&r.before.first_revision),
            rev(&r.before.last_revision),
            r.before.median.to_string(),
            run(&r.after, false),
            run(&r.after, true),
            rev(&r.after.first_revision),
            rev(&r.after.last_revision),
            r.after.median.to_string(),
            keys.join(" "),
            if r.confirmed { "confirmed" } else { "pending" }.to_string(),
        ];
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        super::csv::write(&mut w, &cells);
    }
    super::csv::finish(w)
}

/// `{"window": …, "regressions": [confirmed…], "pending": […], "drifts": […]}`.
pub fn json(sweep: &Sweep, scope: &Scope) -> Vec<u8> {
    let value = serde_json::json!({
        "window": scope.window,
        "histories": scope.histories,
        "min_change": scope.min_change,
        "max_p": scope.max_p,
        "regressions": sweep.confirmed,
        "pending": sweep.pending,
        "drifts": sweep.drifts,
    });
    let mut bytes = serde_json::to_vec_pretty(&value).expect("plain data serialises");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::history::case_histories;
    use crate::compare::history::tests::stepped;
    use crate::compare::regressions::{SweepOptions, Window, sweep};
    use crate::env::SideChange;
    use crate::stats::changepoint::Options;

    fn found() -> Sweep {
        let mut runs = stepped();
        for r in &mut runs {
            r.meta.insert("commit".into(), format!("c{:02}", r.run_id));
        }
        let h = case_histories("syscall", "null", runs, Some(&Options::default()));
        let options = SweepOptions {
            window: Window::Last(2),
            min_change: 0.0,
            revision_key: "commit".into(),
        };
        let mut found = sweep(&h, &options);
        found[0].id = 7;
        found[0].env.push(SideChange {
            key: "kernel".into(),
            before: vec!["6.1".into()],
            after: vec!["6.2 | rc".into()],
        });
        Sweep {
            confirmed: found,
            ..Sweep::default()
        }
    }

    fn scope() -> Scope {
        Scope {
            window: "the last 2 runs of each history".into(),
            histories: 1,
            min_change: 0.0,
            max_p: 0.05,
        }
    }

    #[test]
    fn each_format_names_the_runs_revisions_and_change() {
        let found = found();
        let text = text(&found, &scope());
        assert!(
            text.starts_with("osbench regressions: 1 slowdown, 0 improvements in 1 history"),
            "{text}"
        );
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("7 "))
            .unwrap();
        for want in [
            "slower +10.0%",
            "syscall null",
            "1..12",
            "c01..c12",
            "13..20",
            "c13..c20",
        ] {
            assert!(line.contains(want), "{want}: {line}");
        }
        assert!(text.contains("- #7 kernel: 6.1 → 6.2 | rc"), "{text}");
        let md = markdown(&found, &scope());
        assert!(md.contains("| 7 | slower +10.0% |"), "{md}");
        assert!(md.contains("6.2 \\| rc"), "{md}");
        let csv = csv(&found);
        let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<::csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(&rows[0][6], "slower");
        assert_eq!((&rows[0][11], &rows[0][17]), ("c01", "c20"));
        let json: serde_json::Value =
            serde_json::from_slice(&super::json(&found, &scope())).unwrap();
        assert_eq!(json["regressions"][0]["after"]["first_revision"], "c13");
        assert_eq!(json["regressions"][0]["slower"], true);
        let none = super::text(&Sweep::default(), &scope());
        assert_eq!(none.lines().count(), 1, "{none}");
    }

    #[test]
    fn pending_and_drifting_are_shown_apart_from_confirmed() {
        let mut sweep = found();
        let mut pending = sweep.confirmed[0].clone();
        pending.confirmed = false;
        pending.id = 0;
        pending.env.clear();
        sweep.pending.push(pending);
        sweep.drifts.push(DriftFinding {
            key: crate::document::CaseKey::new("syscall", "getpid", "default"),
            host: "vm".into(),
            unit: "ns".into(),
            runs: sweep.confirmed[0].after.clone(),
            per_run: 0.0005,
            total: 0.0035,
            p_value: 0.004,
        });
        let text = text(&sweep, &scope());
        assert!(
            text.starts_with(
                "osbench regressions: 1 slowdown, 0 improvements in 1 history; 1 pending, 1 drifting"
            ),
            "{text}"
        );
        let pending_row = text
            .lines()
            .find(|l| l.trim_start().starts_with("pending"))
            .unwrap();
        assert!(pending_row.contains("slower +10.0%"), "{pending_row}");
        assert!(
            text.contains("- syscall getpid on vm: drifting +0.050%/run over runs 13..20"),
            "{text}"
        );
        assert!(text.contains("not alerted on unless --pending"), "{text}");
        let csv = csv(&sweep);
        let statuses: Vec<&str> = csv
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap())
            .collect();
        assert_eq!(statuses, ["confirmed", "pending"]);
        let json: serde_json::Value = serde_json::from_slice(&json(&sweep, &scope())).unwrap();
        assert_eq!(json["regressions"].as_array().unwrap().len(), 1);
        assert_eq!(json["pending"][0]["confirmed"], false);
        assert_eq!(json["drifts"][0]["per_run"], 0.0005);
        let md = markdown(&sweep, &scope());
        assert!(md.contains("| pending | slower +10.0% |"), "{md}");
        assert!(md.contains("Drifting, not stepping"), "{md}");
    }
}

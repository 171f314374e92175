//! Results as KCIDB I/O JSON (KernelCI's reporting format, schema 5.3 of
//! the `kcidb-io` package): one checkout and one build for the kernel that
//! was measured, and one test per case — a run's series each with its
//! median and unit (status `DONE`: a measurement, no judgement), or a
//! comparison's candidates each with the candidate's median and unit and
//! the verdict as status: `FAIL` when it trips the gate (slower beyond
//! `--gate`, or slower at all without one), `DONE` when the test could not
//! decide (inconclusive is not a pass), `PASS` otherwise. The ratio, its
//! interval, the p-value and the verdict in words go in `misc`. A sweep
//! of `regressions`: each change point a test ([`regressions`]).
//!
//! Left out: the git fields of a checkout and the build's configuration
//! (osbench measures a kernel it did not build; a CI that built it merges
//! its own checkout and build objects by id), `issues` and `incidents`, and
//! submitting (`kcidb-submit` does that).

use serde_json::{Value, json};

use crate::compare::Comparison;
use crate::compare::regressions::Sweep;
use crate::document::Document;
use crate::stats::verdict::Verdict;

/// The schema version written.
const VERSION: (u32, u32) = (5, 3);
/// The origin of every object: osbench.
const ORIGIN: &str = "osbench";

/// A run's document (with its comparison, when it compared configurations).
pub fn run(doc: &Document, comparison: Option<&Comparison>, gate_pct: f64) -> Vec<u8> {
    let kernel = &doc.env.kernel;
    let build = format!("{ORIGIN}:{}:{}", id_part(kernel), id_part(&doc.env.arch));
    let started = &doc.run.started;
    let run_id = format!("{}:{}", id_part(doc.host()), id_part(started));
    let tests: Vec<Value> = match comparison {
        Some(c) => changes(c, &build, &run_id, gate_pct),
        None => doc
            .series
            .iter()
            .map(|s| {
                json!({
                    "id": format!("{ORIGIN}:{run_id}:{}", id_part(&s.key.to_string())),
                    "build_id": build,
                    "origin": ORIGIN,
                    "path": path(&s.key.bench, &s.key.case),
                    "status": "DONE",
                    "number": {"value": s.summary.median, "unit": s.unit.as_str()},
                    "start_time": started,
                    "environment": {"comment": doc.host()},
                    "misc": {
                        "config": s.key.config,
                        "op": s.op,
                        "ci_low": s.summary.ci_low,
                        "ci_high": s.summary.ci_high,
                        "samples": s.summary.n,
                    },
                })
            })
            .collect(),
    };
    let checkout = json!({
        "id": format!("{ORIGIN}:{}", id_part(kernel)),
        "origin": ORIGIN,
        "comment": format!("Linux {kernel} ({})", doc.env.kernel_version),
        "misc": {"cmdline": doc.env.cmdline},
    });
    let build_obj = json!({
        "id": build,
        "checkout_id": checkout["id"],
        "origin": ORIGIN,
        "architecture": doc.env.arch,
        "comment": format!("the kernel {kernel} as running on {}", doc.host()),
    });
    write(checkout, build_obj, tests)
}

/// A comparison of saved runs: the candidates' changes against the baseline.
pub fn comparison(c: &Comparison, gate_pct: f64) -> Vec<u8> {
    let what = c.labels.join(" vs ");
    let checkout = json!({
        "id": format!("{ORIGIN}:compare:{}", id_part(&what)),
        "origin": ORIGIN,
        "comment": format!("osbench compare {what}"),
    });
    let build = format!("{ORIGIN}:compare:{}", id_part(&what));
    let build_obj = json!({
        "id": build,
        "checkout_id": checkout["id"],
        "origin": ORIGIN,
        "comment": format!("the runs {what}, the first the baseline"),
    });
    let tests = changes(c, &build, &id_part(&what), gate_pct);
    write(checkout, build_obj, tests)
}

/// One test per case and candidate, the verdict as status.
fn changes(c: &Comparison, build: &str, run_id: &str, gate_pct: f64) -> Vec<Value> {
    let mut tests = Vec::new();
    for row in &c.rows {
        for (k, (ch, candidate)) in row.changes.iter().zip(&c.labels[1..]).enumerate() {
            let status = if ch.trips_gate(gate_pct) {
                "FAIL"
            } else if matches!(
                ch.verdict,
                Verdict::Inconclusive | Verdict::TooFew | Verdict::NoChange
            ) {
                "DONE"
            } else {
                "PASS"
            };
            let side = row.summaries.get(k + 1);
            let mut test = json!({
                "id": format!(
                    "{ORIGIN}:{run_id}:{}:{}",
                    id_part(&row.key.to_string()),
                    id_part(candidate)
                ),
                "build_id": build,
                "origin": ORIGIN,
                "path": path(&row.key.bench, &row.key.case),
                "status": status,
                "comment": format!("{}: {candidate} vs {}", row.key.short(), c.labels[0]),
                "misc": {
                    "baseline": c.labels[0],
                    "candidate": candidate,
                    "config": row.key.config,
                    "ratio": finite(ch.ci.ratio),
                    "ci_low": finite(ch.judged().0),
                    "ci_high": finite(ch.judged().1),
                    "p_value": finite(ch.p_adjusted),
                    "verdict": ch.verdict.as_str(),
                    "verdict_words": c.verdict_words(k, ch),
                    "gate_pct": gate_pct,
                },
            });
            if let Some(s) = side.filter(|s| s.median.is_finite()) {
                test["number"] = json!({"value": s.median, "unit": row.unit.as_str()});
            }
            tests.push(test);
        }
    }
    tests
}

/// A sweep of the store's histories (`regressions`): one test per change
/// point, the level after it as the measurement; a confirmed slowdown
/// `FAIL` (what makes `regressions` exit 1), a pending one `DONE` (too few
/// runs confirm it yet), a confirmed speed-up `PASS`. The checkout and
/// build stand for the store's histories, whose kernels each history's
/// runs name.
pub fn regressions(sweep: &Sweep, window: &str) -> Vec<u8> {
    let checkout = json!({
        "id": format!("{ORIGIN}:regressions"),
        "origin": ORIGIN,
        "comment": format!("osbench regressions over {window}"),
    });
    let build = format!("{ORIGIN}:regressions");
    let build_obj = json!({
        "id": build,
        "checkout_id": checkout["id"],
        "origin": ORIGIN,
        "comment": "the runs of the store's histories",
    });
    let tests = sweep
        .changes()
        .map(|r| {
            let status = match (r.confirmed, r.slower) {
                (false, _) => "DONE",
                (true, true) => "FAIL",
                (true, false) => "PASS",
            };
            let first_run = r.after.runs.first().copied().unwrap_or_default();
            json!({
                "id": format!(
                    "{ORIGIN}:change:{}:{}:{first_run}",
                    id_part(&r.host),
                    id_part(&r.key.to_string())
                ),
                "build_id": build,
                "origin": ORIGIN,
                "path": path(&r.key.bench, &r.key.case),
                "status": status,
                "number": {"value": r.after.median, "unit": r.unit},
                "start_time": r.after.first_started,
                "environment": {"comment": r.host},
                "comment": format!(
                    "{}: {:+.1}% from run {first_run} on",
                    r.key.short(),
                    r.change * 100.0
                ),
                "misc": {
                    "change_point": r.id,
                    "before_median": finite(r.before.median),
                    "change": finite(r.change),
                    "p_value": finite(r.p_value),
                    "confirmed": r.confirmed,
                    "first_revision": r.after.first_revision,
                },
            })
        })
        .collect();
    write(checkout, build_obj, tests)
}

fn write(checkout: Value, build: Value, tests: Vec<Value>) -> Vec<u8> {
    let doc = json!({
        "version": {"major": VERSION.0, "minor": VERSION.1},
        "checkouts": [checkout],
        "builds": [build],
        "tests": tests,
    });
    let mut bytes = serde_json::to_vec_pretty(&doc).expect("KCIDB JSON always serialises");
    bytes.push(b'\n');
    bytes
}

/// A number JSON can hold (NaN and infinities become null).
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// Text fit for the part of an id after the origin (no NUL).
fn id_part(s: &str) -> String {
    s.replace('\0', "")
}

/// The test's path: `osbench.BENCH.CASE`, each part of letters, digits, `_` and `-`.
fn path(bench: &str, case: &str) -> String {
    let part = |s: &str| -> String {
        let p: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if p.is_empty() { "_".into() } else { p }
    };
    format!("{ORIGIN}.{}.{}", part(bench), part(case))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_dotted_parts_of_the_schema_s_characters() {
        assert_eq!(path("ctx", "2p/0K"), "osbench.ctx.2p_0K");
        assert_eq!(path("time", ""), "osbench.time._");
        assert_eq!(finite(f64::NAN), Value::Null);
    }
}

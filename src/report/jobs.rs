//! `osbench jobs` as text: the queue's jobs (id, host, state, attempts,
//! times, result run, label) with each job's command line and
//! configurations (set-ups, knobs: what it makes its worker do), error and
//! pending reboot under the table, or the registered workers. Every text
//! from the store is shown with its control characters escaped
//! ([`crate::text::printable`]). Fitted to a width by
//! [`super::fit`]; without one, one line per job as pipes read it. Left
//! out: the JSON form (the command line's) and the queue itself.

use super::fit::wrap_prose;
use super::layout::Table;
use crate::store::{JobRow, JobState, WorkerRow};
use crate::text::printable;

/// What job `j` runs: its command line, each line of its configurations,
/// and whether it boots a kernel. The plan is read as the JSON it is stored
/// as (`queue::JobPlan`'s fields; `report` stands below `queue`).
fn plan_lines(j: &JobRow) -> String {
    let plan: Option<serde_json::Value> = serde_json::from_str(&j.plan).ok();
    let words = |v: &serde_json::Value| -> Option<Vec<String>> {
        let args = v.get("args")?.as_array()?;
        let mut words = vec![v.get("command")?.as_str()?.to_string()];
        words.extend(
            args.iter()
                .map(|a| a.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()?,
        );
        Some(words)
    };
    let Some((plan, words)) = plan.and_then(|p| words(&p).map(|w| (p, w))) else {
        return format!("job {}: a plan this osbench cannot read\n", j.id);
    };
    let mut out = format!("job {}: osbench {}\n", j.id, printable(&words.join(" ")));
    let experiment = plan.get("experiment").and_then(|e| e.as_str());
    for line in experiment.iter().flat_map(|t| t.lines()) {
        out.push_str(&format!("job {}:   {}\n", j.id, printable(line)));
    }
    if let Some(kernel) = &j.kernel {
        out.push_str(&format!("job {}: boots {}\n", j.id, printable(kernel)));
    }
    out
}

/// Columns of text, left-aligned.
fn table(header: Vec<&'static str>, rows: Vec<Vec<String>>) -> Table {
    Table {
        numeric: vec![false; header.len()],
        header,
        rows,
        cases: Vec::new(),
    }
}

/// The jobs, one row each, then a line per job that failed or is rebooting.
pub fn jobs(jobs: &[JobRow], width: Option<usize>) -> String {
    if jobs.is_empty() {
        return "no jobs\n".into();
    }
    let dash = |t: &Option<String>| t.clone().unwrap_or_else(|| "-".into());
    let header = vec![
        "id",
        "host",
        "state",
        "try",
        "submitted",
        "started",
        "finished",
        "run",
        "label",
    ];
    let mut rows = Vec::new();
    let mut errors = String::new();
    for j in jobs {
        rows.push(vec![
            j.id.to_string(),
            printable(&j.host).into_owned(),
            j.state.to_string(),
            format!("{}/{}", j.attempts, j.max_attempts),
            j.submitted.clone(),
            dash(&j.started),
            dash(&j.finished),
            j.run_id.map_or("-".into(), |r| r.to_string()),
            printable(&dash(&j.label)).into_owned(),
        ]);
        errors.push_str(&plan_lines(j));
        if let Some(e) = &j.error {
            let e = crate::text::capped(e, crate::text::MESSAGE_CAP);
            errors.push_str(&format!("job {}: {}\n", j.id, printable(&e)));
        }
        if let Some(e) = &j.meta_unreadable {
            errors.push_str(&format!("job {}: unreadable: {e}\n", j.id));
        }
        if let (JobState::Rebooting, Some(into), Some(deadline)) =
            (j.state, &j.boot_into, &j.boot_deadline)
        {
            errors.push_str(&format!(
                "job {}: booting into {into}; lost unless its host is back by {deadline}\n",
                j.id
            ));
        }
    }
    let mut out = table(header, rows).to_text_within(width);
    if !errors.is_empty() {
        out.push('\n');
        out.push_str(&wrap_prose(&errors, width));
    }
    out
}

/// The registered workers, one row each.
pub fn workers(workers: &[WorkerRow], width: Option<usize>) -> String {
    if workers.is_empty() {
        return "no workers have registered\n".into();
    }
    let header = vec![
        "name",
        "tags",
        "machine",
        "pid",
        "osbench",
        "state",
        "last seen",
    ];
    let rows = workers
        .iter()
        .map(|w| {
            vec![
                printable(&w.name).into_owned(),
                printable(&w.tags.join(",")).into_owned(),
                printable(&w.machine).into_owned(),
                w.pid.to_string(),
                w.osbench_version.clone(),
                if w.live { "live" } else { "stopped" }.into(),
                w.last_seen.clone(),
            ]
        })
        .collect();
    table(header, rows).to_text_within(width)
}

//! `osbench jobs` as text: the queue's jobs (id, host, state, attempts,
//! times, result run, label) with each job's error and pending reboot
//! under the table, or the registered workers. Fitted to a width by
//! [`super::fit`]; without one, one line per job as pipes read it. Left
//! out: the JSON form (the command line's) and the queue itself.

use super::fit::wrap_prose;
use super::layout::Table;
use crate::store::{JobRow, JobState, WorkerRow};

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
            j.host.clone(),
            j.state.to_string(),
            format!("{}/{}", j.attempts, j.max_attempts),
            j.submitted.clone(),
            dash(&j.started),
            dash(&j.finished),
            j.run_id.map_or("-".into(), |r| r.to_string()),
            dash(&j.label),
        ]);
        if let Some(e) = &j.error {
            errors.push_str(&format!("job {}: {e}\n", j.id));
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
                w.name.clone(),
                w.tags.join(","),
                w.machine.clone(),
                w.pid.to_string(),
                w.osbench_version.clone(),
                if w.live { "live" } else { "stopped" }.into(),
                w.last_seen.clone(),
            ]
        })
        .collect();
    table(header, rows).to_text_within(width)
}

//! An `osbench time` document in hyperfine's `--export-json` layout, so the
//! scripts and `jq` one-liners written for hyperfine read osbench's runs as
//! they are (`.results[0].mean`, `.times`, `.parameters.n`, …).
//!
//! Per command, as hyperfine 1.15 writes them: `command`, `mean`, `stddev`
//! (null for one run), `median`, `user` and `system` (means), `min`, `max`,
//! `times`, `exit_codes` (null for a run a signal ended), and `parameters`
//! when a scan made the command; plus `memory_usage_byte` per run, as later
//! hyperfine versions add. Left out: everything hyperfine does not have
//! (intervals, the floor, the comparison); those are in osbench's own JSON.

use serde::Serialize;
use serde_json::Value;

use crate::document::COMMAND_BENCH;
use crate::document::{Document, Series};

/// One command, fields in hyperfine's order.
#[derive(Serialize)]
struct CommandResult<'a> {
    command: &'a str,
    mean: f64,
    stddev: Option<f64>,
    median: f64,
    user: f64,
    system: f64,
    min: f64,
    max: f64,
    times: &'a [f64],
    memory_usage_byte: Vec<u64>,
    exit_codes: Vec<Option<i32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a Value>,
}

#[derive(Serialize)]
struct Export<'a> {
    results: Vec<CommandResult<'a>>,
}

/// The document's command series as hyperfine's JSON (pretty-printed).
pub fn render(doc: &Document) -> Vec<u8> {
    let results = doc
        .series
        .iter()
        .filter(|s| s.key.bench == COMMAND_BENCH)
        .map(result)
        .collect();
    let mut bytes = serde_json::to_vec_pretty(&Export { results })
        .expect("plain numbers and strings serialise");
    bytes.push(b'\n');
    bytes
}

fn result(s: &Series) -> CommandResult<'_> {
    let m = &s.summary;
    let runs = s.runs.len().max(1) as f64;
    CommandResult {
        command: &s.key.case,
        mean: m.mean,
        stddev: (s.samples.len() > 1).then_some(m.stddev),
        median: m.median,
        user: s.runs.iter().map(|r| r.user_s).sum::<f64>() / runs,
        system: s.runs.iter().map(|r| r.sys_s).sum::<f64>() / runs,
        min: m.min,
        max: m.max,
        times: &s.samples,
        memory_usage_byte: s.runs.iter().map(|r| r.max_rss_kb * 1024).collect(),
        // A run a signal ended has no exit code (hyperfine writes null).
        exit_codes: s
            .runs
            .iter()
            .map(|r| r.signal.is_none().then_some(r.exit_status))
            .collect(),
        parameters: s.params.get("parameters"),
    }
}

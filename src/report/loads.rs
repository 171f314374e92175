//! The "background loads" section of a run (issue 42, item 1): per case
//! and configuration, each load that ran beside it and its own throughput
//! over the case's rounds (its count over the time it ran), so that a case
//! that got faster while its load got slower shows as such; and the loads
//! that did not run throughout. One section of [`super::sections`]. Left
//! out: each round's count and window (in the document).

use super::fmt_sig;
use super::layout::{Block, Body, Table};
use crate::document::{Document, load_rates};

/// The loads section of `doc`, when a case ran beside a load.
pub fn section(doc: &Document) -> Option<Body> {
    let loaded: Vec<_> = doc.series.iter().filter(|s| !s.loads.is_empty()).collect();
    if loaded.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    let mut cases = Vec::new();
    for s in &loaded {
        for (spec, unit, rate) in load_rates(&s.loads) {
            let runs: Vec<_> = s.loads.iter().filter(|r| r.spec == spec).collect();
            let failed = runs.iter().filter(|r| r.failed.is_some()).count();
            let killed = runs.iter().filter(|r| r.killed.is_some()).count();
            let mut problems = Vec::new();
            if failed > 0 {
                problems.push(format!("{failed} not throughout"));
            }
            if killed > 0 {
                problems.push(format!("{killed} SIGKILLed"));
            }
            rows.push(vec![
                s.key.bench.clone(),
                s.key.short().to_string(),
                spec,
                fmt_sig(rate),
                format!("{unit}/s"),
                runs.len().to_string(),
                problems.join(", "),
            ]);
            cases.push((s.key.case.clone(), s.key.config.clone()));
        }
    }
    let caption = "Background loads (each load's own throughput while it ran beside the case: \
                   its operations counted in shared memory, or a command's CPU time; over all \
                   rounds):\n";
    Some(Body::Blocks(vec![
        Block::Text(caption.into()),
        Block::Table(Table {
            header: vec!["load", "case", "spec", "rate", "unit", "runs", "problems"],
            numeric: vec![false, false, false, true, false, true, false],
            rows,
            cases,
        }),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::LoadRun;

    fn run(spec: &str, count: f64, failed: bool) -> LoadRun {
        LoadRun {
            spec: spec.into(),
            unit: "messages".into(),
            count,
            seconds: 2.0,
            started_unix_ns: 1,
            stopped_unix_ns: 4,
            measured_from_unix_ns: 2,
            measured_to_unix_ns: 3,
            failed: failed.then(|| "it exited".into()),
            killed: None,
        }
    }

    #[test]
    fn each_load_of_each_case_gets_its_rate_over_the_rounds_and_its_problems() {
        let (_, mut doc) = crate::store::fixture();
        assert!(section(&doc).is_none(), "no load, no section");
        doc.series[0].loads = vec![
            run("hackbench:2", 10.0, false),
            run("hackbench:2", 30.0, true),
        ];
        let Some(Body::Blocks(blocks)) = section(&doc) else {
            panic!("a section of blocks");
        };
        let Block::Table(t) = &blocks[1] else {
            panic!("a table after the caption");
        };
        assert_eq!(t.rows.len(), 1);
        let row = &t.rows[0];
        assert_eq!((row[2].as_str(), row[3].as_str()), ("hackbench:2", "10.00"));
        assert_eq!((row[4].as_str(), row[5].as_str()), ("messages/s", "2"));
        assert_eq!(row[6], "1 not throughout");
    }
}

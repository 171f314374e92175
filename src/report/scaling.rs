//! The scaling of swept cases (`run --tasks`) in will-it-scale's layout
//! (runtest.py's `tasks,processes,threads,linear`, totals in operations per
//! second), with each mode's per-task throughput and efficiency beside it
//! and where scaling stops; and the lines the scaling plot draws. The
//! arithmetic is `stats::scaling`'s; this groups series and lays out.
//! Left out: will-it-scale's `_idle` columns (osbench does not sample
//! /proc/stat around a window).

use std::fmt::Write as _;

use serde_json::Value;

use super::layout::{Block, Body, Table};
use crate::document::number::fmt_sig;
use crate::document::{Document, Series};
use crate::stats::scaling::{STOP_EFFICIENCY, Scaling, scaling};

/// A swept case's line: benchmark, case (without its copies), mode,
/// placement, configuration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineKey {
    pub bench: String,
    pub case: String,
    pub mode: String,
    pub place: String,
    pub config: String,
}

impl LineKey {
    /// The line's legend: `syscall null threads`, with placement and
    /// configuration where given.
    pub fn label(&self, with_place: bool, with_config: bool) -> String {
        let mut text = format!("{} {} {}", self.bench, self.case, self.mode);
        if with_place {
            let _ = write!(text, " {}", self.place);
        }
        if with_config {
            let _ = write!(text, " [{}]", self.config);
        }
        text
    }
}

/// The task count of a swept series and its key, if it is one.
fn swept(s: &Series) -> Option<(usize, LineKey)> {
    let tasks = s.params.get("tasks").and_then(Value::as_u64)? as usize;
    let text = |k: &str| {
        s.params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let case = s
        .key
        .case
        .rsplit_once('@')
        .map_or(s.key.case.as_str(), |(c, _)| c);
    Some((
        tasks,
        LineKey {
            bench: s.key.bench.clone(),
            case: case.to_string(),
            mode: text("tasks_mode"),
            place: text("tasks_place"),
            config: s.key.config.clone(),
        },
    ))
}

/// Every swept line of `doc` with its scaling, sorted by key.
pub fn lines(doc: &Document) -> Vec<(LineKey, Scaling)> {
    let mut points: Vec<(LineKey, Vec<(usize, f64)>)> = Vec::new();
    for s in &doc.series {
        let Some((tasks, key)) = swept(s) else {
            continue;
        };
        let ns = s.summary.median * s.unit.ns();
        match points.iter_mut().find(|(k, _)| *k == key) {
            Some((_, p)) => p.push((tasks, ns)),
            None => points.push((key, vec![(tasks, ns)])),
        }
    }
    let mut out: Vec<(LineKey, Scaling)> = points
        .into_iter()
        .filter_map(|(k, p)| Some((k, scaling(&p)?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The section: per case, placement and configuration, one table with a row
/// per task count and a column group per mode, then where each mode stops.
pub fn section(doc: &Document) -> Option<Body> {
    let lines = lines(doc);
    let mut groups: Vec<(LineKey, Vec<&(LineKey, Scaling)>)> = Vec::new();
    for line in &lines {
        let group = LineKey {
            mode: String::new(),
            ..line.0.clone()
        };
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, l)) => l.push(line),
            None => groups.push((group, vec![line])),
        }
    }
    let mut blocks = Vec::new();
    for (g, modes) in &groups {
        let tag = if g.config.is_empty() || g.config == crate::document::DEFAULT_CONFIG {
            String::new()
        } else {
            format!(" [{}]", g.config)
        };
        let ladder: Vec<String> = ladder_of(modes).iter().map(usize::to_string).collect();
        let online = online_of(doc, g).map_or(String::new(), |n| format!(" ({n} CPUs online)"));
        blocks.push(Block::Text(format!(
            "{} {}{tag}, tasks placed {} (ladder {}{online}; ops/s: total of all tasks; per \
             task; efficiency = total / (tasks × the one-task total)):\n",
            g.bench,
            g.case,
            g.place,
            ladder.join(", ")
        )));
        blocks.push(Block::Table(table(modes)));
        blocks.push(Block::Text(stops(modes)));
    }
    (!blocks.is_empty()).then_some(Body::Blocks(blocks))
}

/// The task counts of a case's lines, ascending.
fn ladder_of(modes: &[&(LineKey, Scaling)]) -> Vec<usize> {
    let mut counts: Vec<usize> = modes
        .iter()
        .flat_map(|(_, s)| s.rungs.iter().map(|r| r.tasks))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The CPUs online when the group's series ran, as they recorded it.
fn online_of(doc: &Document, group: &LineKey) -> Option<u64> {
    doc.series
        .iter()
        .filter(|s| {
            swept(s).is_some_and(|(_, k)| {
                LineKey {
                    mode: String::new(),
                    ..k
                } == *group
            })
        })
        .find_map(|s| s.params.get("tasks_online_cpus").and_then(Value::as_u64))
}

/// will-it-scale's columns for the modes of one case: tasks, then per mode
/// total, per task and efficiency, then linear (the larger one-task total × tasks).
fn table(modes: &[&(LineKey, Scaling)]) -> Table {
    let counts = ladder_of(modes);
    let best_one = modes
        .iter()
        .filter_map(|(_, s)| s.rungs.first().map(|r| r.per_task))
        .fold(0.0, f64::max);
    let mut header: Vec<&'static str> = vec!["tasks"];
    for (k, _) in modes {
        header.extend(match k.mode.as_str() {
            "threads" => ["threads", "threads/task", "threads eff"],
            _ => ["processes", "processes/task", "processes eff"],
        });
    }
    header.push("linear");
    let rows = counts
        .iter()
        .map(|&n| {
            let mut row = vec![n.to_string()];
            for (_, s) in modes {
                match s.rungs.iter().find(|r| r.tasks == n) {
                    Some(r) => row.extend([
                        fmt_sig(r.total),
                        fmt_sig(r.per_task),
                        format!("{:.0}%", r.efficiency * 100.0),
                    ]),
                    None => row.extend(["-".to_string(), "-".into(), "-".into()]),
                }
            }
            row.push(fmt_sig(best_one * n as f64));
            row
        })
        .collect();
    Table {
        numeric: vec![true; header.len()],
        header,
        rows,
        cases: Vec::new(),
    }
}

/// Where each mode stops scaling, in a sentence per mode.
fn stops(modes: &[&(LineKey, Scaling)]) -> String {
    let mut out = String::new();
    for (k, s) in modes {
        let top = s.rungs.last().map_or(0, |r| r.tasks);
        let _ = match s.stops_at {
            Some(n) => writeln!(
                out,
                "{}: stops scaling at {n} tasks (efficiency below {:.0}%)",
                k.mode,
                STOP_EFFICIENCY * 100.0
            ),
            None => writeln!(
                out,
                "{}: scales to {top} tasks (efficiency at or above {:.0}% at every count)",
                k.mode,
                STOP_EFFICIENCY * 100.0
            ),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Series, Unit};
    use crate::measure::copies::{Copies, Mode, Place, default_ladder};
    use crate::stats::summarize;

    /// A fake swept series: per-task `ns` at `n` copies of `mode`, under `config`.
    fn fake(n: usize, mode: Mode, config: &str, ns: f64) -> Series {
        let copies = Copies {
            n,
            mode,
            place: Place::Spread,
        };
        let samples = vec![ns, ns * 1.01, ns * 0.99];
        let summary = summarize(&samples).unwrap();
        let mut s = Series::new(
            "fault",
            format!("anon{}", copies.suffix()),
            Unit::Ns,
            samples,
            summary,
        );
        s.key.config = config.into();
        s.params.extend(
            copies
                .recorded()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
        );
        s
    }

    /// A document of fake series over the 512-CPU ladder: processes scale,
    /// threads share one mm (per-task time grows with the count), in two configurations.
    fn doc_512() -> Document {
        let mut doc = crate::report::fixture();
        doc.series.clear();
        for config in ["base", "patched"] {
            for &n in &default_ladder(512) {
                doc.series.push(fake(n, Mode::Processes, config, 100.0));
                doc.series
                    .push(fake(n, Mode::Threads, config, 100.0 * n as f64));
            }
        }
        doc
    }

    #[test]
    fn a_512_task_ladder_has_a_row_per_count_and_says_where_threads_stop() {
        let doc = doc_512();
        let lines = lines(&doc);
        assert_eq!(lines.len(), 4, "two modes × two configurations");
        let Some(Body::Blocks(blocks)) = section(&doc) else {
            panic!("a section of blocks");
        };
        let tables: Vec<&Table> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                Block::Text(_) => None,
            })
            .collect();
        assert_eq!(tables.len(), 2, "one table per configuration");
        let t = tables[0];
        assert_eq!(t.rows.len(), default_ladder(512).len());
        let last = t.rows.last().unwrap();
        assert_eq!(last[0], "1024");
        assert_eq!(last[3], "100%", "processes keep their efficiency: {last:?}");
        assert_eq!(t.header[4], "threads");
        let text: String = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                Block::Table(_) => None,
            })
            .collect();
        assert!(text.contains("threads: stops scaling at 2 tasks"), "{text}");
        assert!(text.contains("processes: scales to 1024 tasks"), "{text}");
        assert!(text.contains("[patched]"), "{text}");
        assert!(
            text.contains("ladder 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024"),
            "{text}"
        );
    }

    #[test]
    fn the_scaling_plots_draw_a_line_per_configuration() {
        let plots = crate::report::plot::scaling_plots(&doc_512()).unwrap();
        assert_eq!(plots.len(), 2);
        for p in &plots {
            for label in [
                "fault anon processes [base]",
                "fault anon threads [base]",
                "fault anon processes [patched]",
                "fault anon threads [patched]",
            ] {
                assert!(p.svg.contains(label), "{}: {label}", p.name);
            }
        }
        let mut unswept = doc_512();
        unswept.series.iter_mut().for_each(|s| s.params.clear());
        assert!(
            crate::report::plot::scaling_plots(&unswept)
                .unwrap()
                .is_empty()
        );
        assert!(section(&unswept).is_none());
    }
}

//! The "counters per op" and energy section of a run: per case the means of
//! user and system CPU time (in the case's unit), the system share, rusage's
//! switches and faults, perf's context switches and migrations (counted in a
//! pass after the timed samples); what could not be counted, and why, once
//! for all cases; joules per op and watts per RAPL zone. Means, not medians:
//! CPU time is sampled at each tick and rare events have a median of 0
//! (getppid: 5 % user by the medians of 10 ms samples, 26 % with 200 ms
//! ones); the mean is what `time` and `perf stat` report. One section of
//! [`super::sections`], its tables and lines as blocks. Left out: the medians and per-sample values (both in
//! the document).

use std::collections::BTreeMap;

use super::fmt_sig;
use super::layout::{Block, Body, Table};
use crate::document::{Document, Series};

/// The counters section of `doc`, if anything was counted or found
/// unavailable: the counters table with its caption, one line per reason a
/// counter was not counted, the energy line or table.
pub fn section(doc: &Document) -> Option<Body> {
    let series = &doc.series;
    let mut blocks = Vec::new();
    let counted: Vec<&Series> = series.iter().filter(|s| !s.counters.is_empty()).collect();
    if !counted.is_empty() {
        // The TLB column only when a case counted TLB shootdowns (`tlb`).
        let tlb = counted
            .iter()
            .any(|s| s.counters.contains_key("tlb_shootdowns"));
        let mut header = vec![
            "counters/op",
            "case",
            "user",
            "sys",
            "sys %",
            "unit",
            "vol sw",
            "invol sw",
            "min flt",
            "maj flt",
            "ctx sw",
            "migr",
        ];
        if tlb {
            header.push("tlb sd");
        }
        // Whole commands' seconds (`time`) in one readable unit for the table.
        let seconds = super::readable_scale(
            crate::document::Unit::S,
            counted
                .iter()
                .filter(|s| s.unit == crate::document::Unit::S)
                .map(|s| s.summary.median),
        );
        let mut numeric = vec![true; header.len()];
        numeric[0] = false;
        numeric[1] = false;
        numeric[5] = false;
        blocks.push(Block::Text(format!(
            "Counters per op (means over the samples; user/sys: CPU time of every task of the case, in \
             its unit; switches and faults from rusage; ctx sw and migr from perf, counted in a separate \
             pass after the timed samples{}):\n",
            if tlb {
                "; tlb sd: TLB shootdown interrupts of the whole machine, /proc/interrupts"
            } else {
                ""
            }
        )));
        blocks.push(Block::Table(Table {
            header,
            numeric,
            rows: counted.iter().map(|s| row(s, tlb, seconds)).collect(),
            cases: counted
                .iter()
                .map(|s| (s.key.case.clone(), s.key.config.clone()))
                .collect(),
        }));
    }
    // Reasons are the same for every case of a run: say each once.
    let mut reasons: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    if let Some(s) = series.iter().find(|s| !s.counters_unavailable.is_empty()) {
        for (name, why) in &s.counters_unavailable {
            reasons.entry(why.as_str()).or_default().push(name);
        }
    }
    for (why, names) in reasons {
        blocks.push(Block::Text(format!(
            "Not counted: {}: {why}\n",
            names.join(", ")
        )));
    }
    if let Some(why) = series.iter().find_map(|s| s.energy_unavailable.as_deref()) {
        blocks.push(Block::Text(format!("Energy: {why}\n")));
    }
    blocks.extend(energy(series));
    (!blocks.is_empty()).then_some(Body::Blocks(blocks))
}

/// RAPL energy per case and zone, a caption and a table, where measured.
fn energy(series: &[Series]) -> Vec<Block> {
    let with_energy: Vec<&Series> = series.iter().filter(|s| !s.energy.is_empty()).collect();
    if with_energy.is_empty() {
        return Vec::new();
    }
    let (rows, cases): (Vec<Vec<String>>, Vec<(String, String)>) = with_energy
        .iter()
        .flat_map(|s| {
            s.energy.iter().map(|(zone, e)| {
                let row = vec![
                    s.key.bench.clone(),
                    s.key.short().to_string(),
                    zone.clone(),
                    fmt_sig(e.joules_per_op.mean),
                    fmt_sig(e.watts.mean),
                ];
                (row, (s.key.case.clone(), s.key.config.clone()))
            })
        })
        .unzip();
    vec![
        Block::Text("Energy (RAPL, whole machine during each sample; means):\n".into()),
        Block::Table(Table {
            header: vec!["energy", "case", "zone", "J/op", "W"],
            numeric: vec![false, false, false, true, true],
            rows,
            cases,
        }),
    ]
}

/// One case's cells; with `tlb`, its TLB shootdowns last. CPU times are in
/// the case's unit, or for seconds in the table's `seconds` scale (factor, symbol).
fn row(s: &Series, tlb: bool, seconds: (f64, &str)) -> Vec<String> {
    let mean = |name: &str| s.counters.get(name).map(|c| c.mean);
    let (factor, symbol) = match s.unit {
        crate::document::Unit::S => seconds,
        unit => (1.0, unit.symbol()),
    };
    let unit_ns = s.unit.ns() / factor;
    let cell = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), fmt_sig);
    let (user, sys) = (mean("user_ns"), mean("sys_ns"));
    let share = match (user, sys) {
        (Some(u), Some(k)) if u + k > 0.0 => format!("{:.0}%", k / (u + k) * 100.0),
        _ => "n/a".to_string(),
    };
    let case = s.key.short().to_string();
    let mut cells = vec![
        s.key.bench.clone(),
        case,
        cell(user.map(|v| v / unit_ns)),
        cell(sys.map(|v| v / unit_ns)),
        share,
        symbol.to_string(),
        cell(mean("voluntary_switches")),
        cell(mean("involuntary_switches")),
        cell(mean("minor_faults")),
        cell(mean("major_faults")),
        cell(mean("context_switches")),
        cell(mean("cpu_migrations")),
    ];
    if tlb {
        cells.push(cell(mean("tlb_shootdowns")));
    }
    cells
}

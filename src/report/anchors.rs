//! The anchors' own layouts, so osbench's numbers sit beside theirs:
//! lmbench's "Processor, Processes" terms, its "File & VM system
//! latencies" and context-switch tables,
//! hackbench's `Time:` lines, and the LOCK-prefix answer line. Each is a
//! block of text, registered once in [`super::sections::SECTIONS`]. Left out:
//! anything not read off the series' medians (lmbench's "null I/O", the mean
//! of the read and write medians, is lmbench's own definition).

use std::fmt::Write;

use super::sections::Body;
use super::{ctx_mode, fmt_sig};
use crate::document::{DEFAULT_CONFIG, Document, Series};

/// The median of the first series of `bench` / `case` (not a threads or
/// processes variant) in µs.
fn median_us(doc: &Document, bench: &str, case: &str) -> Option<f64> {
    median_in(doc, None, bench, case)
}

/// As [`median_us`], in configuration `config` when one is given.
fn median_in(doc: &Document, config: Option<&str>, bench: &str, case: &str) -> Option<f64> {
    let s = doc.series.iter().find(|s| {
        s.bench == bench
            && s.case == case
            && s.params.get("mode").is_none()
            && config.is_none_or(|c| s.config == c)
    })?;
    Some(s.summary.median * s.unit.ns() / 1e3)
}

/// lmbench's `sig hndl`: osbench's catch less its send (lmbench's kill(pid, 0)).
fn sig_handler_us(doc: &Document, config: Option<&str>) -> Option<f64> {
    Some(median_in(doc, config, "signal", "catch")? - median_in(doc, config, "signal", "send")?)
}

/// lmbench's "Processor, Processes" columns for the syscall, signal and proc
/// cases present, in µs (lmbench's `null I/O` is the mean of read and write,
/// its `sig hndl` the catch less the send).
pub fn lmbench_processor(doc: &Document) -> Option<Body> {
    let median_us = |bench: &str, case: &str| median_us(doc, bench, case);
    let null_io = match (median_us("syscall", "read"), median_us("syscall", "write")) {
        (Some(r), Some(w)) => Some((r + w) / 2.0),
        _ => None,
    };
    let terms: Vec<String> = [
        ("null call", median_us("syscall", "null")),
        ("null I/O", null_io),
        ("stat", median_us("syscall", "stat")),
        ("open clos", median_us("syscall", "open")),
        ("sig inst", median_us("signal", "install")),
        ("sig hndl", sig_handler_us(doc, None)),
        ("fork proc", median_us("proc", "fork")),
        ("exec proc", median_us("proc", "exec")),
        ("sh proc", median_us("proc", "sh")),
    ]
    .into_iter()
    .filter_map(|(label, v)| v.map(|v| format!("{label} {}", fmt_sig(v))))
    .collect();
    (!terms.is_empty()).then(|| {
        Body::Text(format!(
            "lmbench terms (µs, medians): {}\n",
            terms.join("   ")
        ))
    })
}

/// The case lmbench's `Mmap Latency` column reads: `lat_mmap` at its
/// default `$MB` (8 MiB).
const MMAP_LATENCY_CASE: &str = "lat_mmap/2048p";
/// The file lmbench's `Page Fault` column faults on: its `$MB`-sized `$FILE`.
const PAGE_FAULT_CASE: &str = "file/2048p";

/// lmbench's "File & VM system latencies" table (µs), a row per
/// configuration, filled from the mmap, signal and fault medians present;
/// osbench has no file-create or select cases yet, so those columns stay
/// blank. The footnote says how each cell is made from osbench's series.
pub fn lmbench_vm(doc: &Document) -> Option<Body> {
    let mut configs: Vec<&str> = Vec::new();
    for s in doc
        .series
        .iter()
        .filter(|s| ["mmap", "signal", "fault"].contains(&s.bench.as_str()))
    {
        if !configs.contains(&s.config.as_str()) {
            configs.push(&s.config);
        }
    }
    let host: String = doc.env.hostname.chars().take(9).collect();
    let os: String = format!("Linux {}", doc.env.kernel)
        .chars()
        .take(13)
        .collect();
    let mut rows = String::new();
    for config in configs {
        let at = Some(config);
        let mmap = median_in(doc, at, "mmap", MMAP_LATENCY_CASE);
        // lmbench's prot subtracts its catch (catch − send).
        let prot = median_in(doc, at, "signal", "prot")
            .zip(sig_handler_us(doc, at))
            .map(|(p, h)| p - h);
        let fault = median_in(doc, at, "fault", PAGE_FAULT_CASE);
        if mmap.is_none() && prot.is_none() && fault.is_none() {
            continue;
        }
        let cell = |v: Option<f64>, width: usize| {
            let text = v.map_or_else(String::new, fmt_sig);
            format!("{text:>width$.width$}")
        };
        let blank = "";
        let _ = writeln!(
            rows,
            "{host:<9} {os:>13} {blank:>6} {blank:>6} {blank:>6} {blank:>6} {} {} {} {blank:>5}{}",
            cell(mmap, 7),
            cell(prot, 5),
            cell(fault, 7),
            if config == DEFAULT_CONFIG {
                String::new()
            } else {
                format!("  {config}")
            }
        );
    }
    if rows.is_empty() {
        return None;
    }
    Some(Body::Text(format!(
        "File & VM system latencies in microseconds - smaller is better\n\
         -------------------------------------------------------------------------------\n\
         Host                 OS   0K File      10K File     Mmap    Prot   Page   100fd\n\
         \x20                       Create Delete Create Delete Latency Fault  Fault  selct\n\
         --------- ------------- ------ ------ ------ ------ ------- ----- ------- -----\n\
         {rows}\
         Mmap Latency: mmap {MMAP_LATENCY_CASE} (lmbench's lat_mmap at its default 8 MiB); \
         Prot Fault: signal prot − (catch − send), lmbench's subtraction; Page Fault: fault \
         {PAGE_FAULT_CASE} (lat_pagefault's 8 MiB file; osbench maps afresh untimed where \
         lmbench subtracts a separately timed remap).\n"
    )))
}

/// The seed's question answered from the atomic medians: what the LOCK
/// prefix adds to an uncontended add, against a plain add and a system call.
pub fn lock_prefix(doc: &Document) -> Option<Body> {
    let median = |bench: &str, case: &str| {
        doc.series
            .iter()
            .find(|s| s.bench == bench && s.case == case)
            .map(|s| s.summary.median)
    };
    let (plain, locked) = (median("atomic", "plain")?, median("atomic", "locked")?);
    let extra = locked - plain;
    let syscall = median("atomic", "getppid").or_else(|| median("syscall", "null"));
    let versus_syscall = syscall.map_or_else(String::new, |g| {
        format!(", {:.1} % of a getppid() call", extra / g * 100.0)
    });
    Some(Body::Text(format!(
        "LOCK prefix, uncontended, on this CPU: a locked add costs {extra:.2} ns more than a plain add \
         ({:.1} × a plain add{versus_syscall})\n",
        locked / plain
    )))
}

/// hackbench's `Time:` line for each messaging series (the median run,
/// milliseconds truncated as hackbench prints them).
pub fn hackbench(doc: &Document) -> Option<Body> {
    let mut out = String::new();
    for s in doc.series.iter().filter(|s| s.bench == "messaging") {
        let m = &s.summary;
        let time = (m.median * 1000.0).floor() / 1000.0;
        let _ = writeln!(
            out,
            "{:<24} Time: {time:.3}   (median of {} runs; mean {:.3} ± {:.3} s)",
            s.anchor, m.n, m.mean, m.stddev
        );
    }
    (!out.is_empty()).then_some(Body::Text(out))
}

/// lmbench's context-switch columns (`scripts/getsummary`).
const CTX_COLUMNS: [(i64, i64); 7] = [
    (2, 0),
    (2, 16),
    (2, 64),
    (8, 16),
    (8, 64),
    (16, 16),
    (16, 64),
];

/// One row of the context-switch table: configuration, mode, placement and
/// the seven cells.
type CtxRow = (String, String, String, [Option<f64>; 7]);

/// lmbench's "Context switching" table: one row per configuration, mode and
/// placement, the seven classic cells (ctx medians, µs), blank where not run.
pub fn lmbench_ctx(doc: &Document) -> Option<Body> {
    let rows = ctx_rows(&doc.series);
    if rows.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Context switching - times in microseconds - smaller is better\n\
         -------------------------------------------------------------\n\
         Host                 OS  2p/0K 2p/16K 2p/64K 8p/16K 8p/64K 16p/16K 16p/64K\n\
         \x20                        ctxsw  ctxsw  ctxsw  ctxsw  ctxsw   ctxsw   ctxsw\n\
         --------- ------------- ------ ------ ------ ------ ------ ------- -------\n",
    );
    let host: String = doc.env.hostname.chars().take(9).collect();
    let os: String = format!("Linux {}", doc.env.kernel)
        .chars()
        .take(13)
        .collect();
    for (config, mode, pin, cells) in rows {
        let _ = write!(out, "{host:<9} {os:<13}");
        for (i, cell) in cells.iter().enumerate() {
            let width = if i < 5 { 6 } else { 7 };
            let text = cell.map_or_else(String::new, |v| format!("{v:.2}"));
            let _ = write!(out, " {text:>width$}");
        }
        let _ = writeln!(
            out,
            "  {mode}, pin {pin}{}",
            if config == DEFAULT_CONFIG {
                String::new()
            } else {
                format!(", {config}")
            }
        );
    }
    Some(Body::Text(out))
}

/// The ctx medians in lmbench's cells, a row per configuration, mode and
/// placement, in order of first appearance.
fn ctx_rows(series: &[Series]) -> Vec<CtxRow> {
    let param = |s: &Series, k: &str| s.params.get(k).and_then(|v| v.as_i64());
    let cell_of = |s: &Series| {
        CTX_COLUMNS
            .iter()
            .position(|&(p, k)| param(s, "procs") == Some(p) && param(s, "size") == Some(k))
    };
    let mut rows: Vec<CtxRow> = Vec::new();
    for s in series.iter().filter(|s| s.bench == "ctx") {
        let Some(cell) = cell_of(s) else { continue };
        let mode = ctx_mode(s);
        let i = match rows
            .iter()
            .position(|r| (&r.0, r.1.as_str(), &r.2) == (&s.config, mode, &s.pin))
        {
            Some(i) => i,
            None => {
                rows.push((s.config.clone(), mode.to_string(), s.pin.clone(), [None; 7]));
                rows.len() - 1
            }
        };
        rows[i].3[cell] = Some(s.summary.median);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Unit;

    /// The fixture with signal, mmap and fault series of these medians (µs) added.
    fn with(medians: &[(&str, &str, f64)]) -> Document {
        let mut doc = crate::report::fixture();
        let template = doc.series[0].clone();
        doc.series.retain(|s| s.bench != "syscall");
        for &(bench, case, median) in medians {
            let mut s = template.clone();
            (s.bench, s.case, s.config) = (bench.into(), case.into(), DEFAULT_CONFIG.into());
            s.params.clear();
            s.unit = Unit::Us;
            s.summary.median = median;
            doc.series.push(s);
        }
        doc
    }

    fn text(body: Option<Body>) -> String {
        match body {
            Some(Body::Text(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_vm_table_fills_lmbench_columns_with_its_subtractions() {
        let doc = with(&[
            ("signal", "send", 0.5),
            ("signal", "catch", 2.0),
            ("signal", "prot", 3.0),
            ("mmap", MMAP_LATENCY_CASE, 40.0),
            ("fault", PAGE_FAULT_CASE, 0.25),
        ]);
        let table = text(lmbench_vm(&doc));
        let row = table.lines().nth(5).unwrap();
        // Prot Fault = 3.0 − (2.0 − 0.5).
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells.ends_with(&["40.00", "1.500", "0.2500"]), "{row}");
        assert!(
            table.contains("Prot Fault: signal prot − (catch − send)"),
            "{table}"
        );
        let terms = text(lmbench_processor(&doc));
        assert!(terms.contains("sig hndl 1.500"), "{terms}");
        assert!(lmbench_vm(&with(&[("signal", "send", 0.5)])).is_none());
    }
}

//! The anchors' own layouts, so osbench's numbers sit beside theirs:
//! lmbench's "Processor, Processes" terms, its context-switch table, its
//! local communication latency and bandwidth tables and its "File & VM
//! system latencies", hackbench's `Time:` lines, and the LOCK-prefix answer
//! line. Each is a block of text, registered once in
//! [`super::sections::SECTIONS`]. Left out: anything not read off the
//! series' medians (lmbench's "null I/O", the mean of the read and write
//! medians, and its `sig hndl` and `Prot Fault` subtractions are lmbench's
//! own definitions).

use std::fmt::Write;

use super::layout::Body;
use super::{ctx_mode, fmt_sig};
use crate::document::{DEFAULT_CONFIG, Document, NoiseFlag, Series};

/// The median of the first series of `bench` / `case` among `series` (not
/// a threads or processes variant) in µs.
fn case_us(series: &[&Series], bench: &str, case: &str) -> Option<f64> {
    let s = series
        .iter()
        .find(|s| s.key.bench == bench && s.key.case == case && s.params.get("mode").is_none())?;
    Some(s.summary.median * s.unit.ns() / 1e3)
}

/// lmbench's `sig hndl`: osbench's catch less its send (lmbench's kill(pid, 0)).
fn sig_handler_us(series: &[&Series]) -> Option<f64> {
    Some(case_us(series, "signal", "catch")? - case_us(series, "signal", "send")?)
}

/// lmbench's "Processor, Processes" columns for the syscall, poll, signal
/// and proc cases present, in µs (lmbench's `null I/O` is the mean of read
/// and write, its `sig hndl` the catch less the send).
pub fn lmbench_processor(doc: &Document) -> Option<Body> {
    let all: Vec<&Series> = doc.series.iter().collect();
    let median_us = |bench: &str, case: &str| case_us(&all, bench, case);
    let null_io = match (median_us("syscall", "read"), median_us("syscall", "write")) {
        (Some(r), Some(w)) => Some((r + w) / 2.0),
        _ => None,
    };
    let terms: Vec<String> = [
        ("null call", median_us("syscall", "null")),
        ("null I/O", null_io),
        ("stat", median_us("syscall", "stat")),
        ("open clos", median_us("syscall", "open")),
        ("slct TCP", median_us("poll", "select/tcp/100")),
        ("sig inst", median_us("signal", "install")),
        ("sig hndl", sig_handler_us(&all)),
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

/// The seed's question answered from the atomic medians: what the LOCK
/// prefix adds to an uncontended add, against a plain add and a system call.
pub fn lock_prefix(doc: &Document) -> Option<Body> {
    let median = |bench: &str, case: &str| {
        doc.series
            .iter()
            .find(|s| s.key.bench == bench && s.key.case == case)
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

/// hackbench's `Time:` line for each messaging series: the median run, in
/// the results table's digits (hackbench truncates to milliseconds, which
/// put a different last digit beside the table's median), and why the
/// quick suite took fewer runs than the policy's samples.
pub fn hackbench(doc: &Document) -> Option<Body> {
    let mut out = String::new();
    for s in doc.series.iter().filter(|s| s.key.bench == "messaging") {
        let m = &s.summary;
        let fewer = m.n < doc.run.policy.samples && !s.noise.contains(&NoiseFlag::Interrupted);
        let why = if fewer {
            format!(
                ", not {}: the quick suite runs hackbench fewer times; --samples N for more",
                doc.run.policy.samples
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<24} Time: {}   (median of {} runs{why}; mean {} ± {} s)",
            s.anchor,
            fmt_sig(m.median),
            m.n,
            fmt_sig(m.mean),
            fmt_sig(m.stddev)
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
    for s in series.iter().filter(|s| s.key.bench == "ctx") {
        let Some(cell) = cell_of(s) else { continue };
        let mode = ctx_mode(s);
        let i = match rows.iter().position(|r| {
            (&r.0, r.1.as_str(), r.2.as_str()) == (&s.key.config, mode, s.pin.as_str())
        }) {
            Some(i) => i,
            None => {
                rows.push((
                    s.key.config.clone(),
                    mode.to_string(),
                    s.pin.to_string(),
                    [None; 7],
                ));
                rows.len() - 1
            }
        };
        rows[i].3[cell] = Some(s.summary.median);
    }
    rows
}

/// One column of an lmbench summary table (`scripts/getsummary`): its two
/// header words, its width, and its value in one configuration's series
/// (`None`: blank, as lmbench leaves a benchmark it did not run).
struct Column {
    top: &'static str,
    bottom: &'static str,
    width: usize,
    /// `None`: a column osbench leaves blank (no family measures it).
    value: CellValue,
}

/// The series of `bench` whose parameters include every `(key, value)`
/// (values as they are written in the document: numbers or words).
fn find<'a>(series: &[&'a Series], bench: &str, params: &[(&str, &str)]) -> Option<&'a Series> {
    series.iter().copied().find(|s| is(s, bench, params))
}

/// Whether `s` is a series of `bench` with every `(key, value)` of `params`.
fn is(s: &Series, bench: &str, params: &[(&str, &str)]) -> bool {
    s.key.bench == bench
        && params.iter().all(|(k, v)| {
            s.params.get(*k).is_some_and(|p| match p {
                serde_json::Value::String(text) => text == v,
                other => other.as_i64().is_some_and(|n| v.parse() == Ok(n)),
            })
        })
}

/// The median of that series in µs.
fn param_median_us(series: &[&Series], bench: &str, params: &[(&str, &str)]) -> Option<f64> {
    let s = find(series, bench, params)?;
    Some(s.summary.median * s.unit.ns() / 1e3)
}

/// The median of that bandwidth series in MB/s.
fn median_mb_per_s(series: &[&Series], bench: &str, params: &[(&str, &str)]) -> Option<f64> {
    let s = find(series, bench, params)?;
    s.mb_per_s(s.summary.median)
}

/// `v` in a cell of `width` characters as lmbench's `getsummary` writes it
/// (its `num`): from 10 up one decimal (with `K` or `M` from 10,000 and
/// 10,000,000), below 0.001 an exponent, else `width − 2` decimals, so a
/// page fault of 0.02941 µs keeps its digits; cut to `width` as lmbench's
/// `%N.Ns` cuts.
fn fit(v: f64, width: usize) -> String {
    const K: f64 = 1000.0;
    let suffixed = |scaled: f64, unit: char| {
        let digits = format!("{scaled:.1}");
        format!("{}{unit}", &digits[..digits.len().min(width - 1)])
    };
    let text = if v >= 10.0 * K * K {
        suffixed(v / (K * K), 'M')
    } else if v >= 10.0 * K {
        suffixed(v / K, 'K')
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v < 0.001 {
        format!("{v:.p$e}", p = width.saturating_sub(6))
    } else {
        format!("{v:.p$}", p = width.saturating_sub(2))
    };
    // lmbench's narrower cells cut "3495.0" to "3495"; a dot left at the end goes too.
    let mut cut: String = text.chars().take(width).collect();
    if cut.ends_with('.') {
        cut.pop();
    }
    cut
}

/// What an lmbench summary table is: its title, the selectors that measure
/// every cell osbench can fill, and `footnote` (empty or lines ending in a
/// newline).
struct SummaryTable<'a> {
    title: &'a str,
    fill: &'a str,
    footnote: &'a str,
}

/// A configuration's row of an lmbench summary table: its cells.
type SummaryRow<'a> = (&'a str, Vec<Option<f64>>);

/// How a column of an lmbench summary table reads its value (`None`: blank).
type CellValue = Option<fn(&[&Series]) -> Option<f64>>;

/// An lmbench summary table: its title, its columns under the Host and OS
/// ones, a row per configuration that has at least one of its cells, and
/// its footnote. With fewer than half of the cells osbench can fill (a
/// column whose value is not always blank) measured, as after the quick
/// suite, one line instead says which it has and what fills the rest
/// ([`sparse_note`]): a table of blanks says less than that line.
fn lmbench_table(doc: &Document, table: SummaryTable, columns: &[Column]) -> Option<Body> {
    let rows = summary_rows(doc, columns);
    if rows.is_empty() {
        return None;
    }
    if let Some(note) = sparse_note(&table, columns, &rows) {
        return Some(Body::Text(note));
    }
    let (title, footnote) = (table.title, table.footnote);
    let line = |words: &dyn Fn(&Column) -> String, host: &str, os: &str| {
        let cells: Vec<String> = columns.iter().map(words).collect();
        format!("{host:<9} {os:>13} {}\n", cells.join(" "))
    };
    let mut out = format!("{title}\n{}\n", "-".repeat(77));
    out += &line(&|c| format!("{:<w$}", c.top, w = c.width), "Host", "OS");
    out += &line(&|c| format!("{:<w$}", c.bottom, w = c.width), "", "");
    out += &line(&|c| "-".repeat(c.width), "---------", "-------------");
    let host: String = doc.env.hostname.chars().take(9).collect();
    let os: String = format!("Linux {}", doc.env.kernel)
        .chars()
        .take(13)
        .collect();
    for (config, cells) in rows {
        let text: Vec<String> = columns
            .iter()
            .zip(&cells)
            .map(|(c, v)| {
                format!(
                    "{:>w$}",
                    v.map_or_else(String::new, |v| fit(v, c.width)),
                    w = c.width
                )
            })
            .collect();
        let _ = write!(out, "{host:<9} {os:>13} {}", text.join(" "));
        if config != DEFAULT_CONFIG {
            let _ = write!(out, "  {config}");
        }
        out.push('\n');
    }
    out.push_str(footnote);
    Some(Body::Text(out))
}

/// Each configuration's cells, for configurations with at least one.
fn summary_rows<'a>(doc: &'a Document, columns: &[Column]) -> Vec<SummaryRow<'a>> {
    let mut configs: Vec<&str> = Vec::new();
    for s in &doc.series {
        if !configs.contains(&s.key.config.as_str()) {
            configs.push(&s.key.config);
        }
    }
    configs
        .into_iter()
        .map(|config| {
            let series: Vec<&Series> = doc
                .series
                .iter()
                .filter(|s| s.key.config == config)
                .collect();
            let cells = columns.iter().map(|c| c.value.and_then(|v| v(&series)));
            (config, cells.collect())
        })
        .filter(|(_, cells): &SummaryRow| cells.iter().any(Option::is_some))
        .collect()
}

/// The line that stands for a table with fewer than half of the cells
/// osbench can fill measured: which it has and what measures them all.
fn sparse_note(table: &SummaryTable, columns: &[Column], rows: &[SummaryRow]) -> Option<String> {
    let filled: Vec<&Column> = columns
        .iter()
        .enumerate()
        .filter(|(i, _)| rows.iter().any(|(_, cells)| cells[*i].is_some()))
        .map(|(_, c)| c)
        .collect();
    let fillable = columns.iter().filter(|c| c.value.is_some()).count();
    if filled.len() * 2 >= fillable {
        return None;
    }
    let names: Vec<String> = filled
        .iter()
        .map(|c| format!("{} {}", c.top, c.bottom).trim().to_string())
        .collect();
    Some(format!(
        "lmbench's \"{}\" table is left out: {} of the {fillable} cells osbench fills were \
         measured ({}, in the results above); `osbench run {}` measures them all\n",
        table.title.split(" in ").next().unwrap_or(table.title),
        filled.len(),
        names.join(", "),
        table.fill
    ))
}

/// lmbench's "*Local* Communication bandwidths" (MB/s, MB = 10^6 B): pipe,
/// AF_UNIX and TCP from `stream` at lmbench's 64 KiB blocks with a writer
/// process; File reread from `file`'s bw_file_rd io_only cases (64 KiB
/// reads, words summed) and Mmap reread from its bw_mmap_rd mmap_only
/// cases, the largest file run, as lmbench takes its biggest size; Bcopy
/// (libc) and (hand) from `membw`'s bcopy and fcp, Mem read and write from
/// its frd and fwr, each at the largest size run.
pub fn lmbench_bandwidth(doc: &Document) -> Option<Body> {
    fn stream(s: &[&Series], kind: &str) -> Option<f64> {
        median_mb_per_s(
            s,
            "stream",
            &[("chunk", "65536"), ("mode", "processes"), ("kind", kind)],
        )
    }
    let table = SummaryTable {
        title: "*Local* Communication bandwidths in MB/s - bigger is better",
        fill: "stream file membw",
        footnote: "",
    };
    lmbench_table(
        doc,
        table,
        &[
            Column {
                top: "Pipe",
                bottom: "",
                width: 5,
                value: Some(|s| stream(s, "pipe")),
            },
            Column {
                top: "AF",
                bottom: "UNIX",
                width: 5,
                value: Some(|s| stream(s, "unix")),
            },
            Column {
                top: "TCP",
                bottom: "",
                width: 5,
                value: Some(|s| stream(s, "tcp")),
            },
            Column {
                top: "File",
                bottom: "reread",
                width: 6,
                value: Some(file_reread),
            },
            Column {
                top: "Mmap",
                bottom: "reread",
                width: 6,
                value: Some(mmap_reread),
            },
            Column {
                top: "Bcopy",
                bottom: "(libc)",
                width: 6,
                value: Some(|s| memory_mb_per_s(s, "bcopy")),
            },
            Column {
                top: "Bcopy",
                bottom: "(hand)",
                width: 6,
                value: Some(|s| memory_mb_per_s(s, "fcp")),
            },
            Column {
                top: "Mem",
                bottom: "read",
                width: 5,
                value: Some(|s| memory_mb_per_s(s, "frd")),
            },
            Column {
                top: "Mem",
                bottom: "write",
                width: 5,
                value: Some(|s| memory_mb_per_s(s, "fwr")),
            },
        ],
    )
}

/// lmbench's "File reread": bw_file_rd io_only's biggest size (64 KiB reads, words summed).
fn file_reread(series: &[&Series]) -> Option<f64> {
    let chunk_bytes = |s: &Series| {
        let page = s.bytes_per_op? / file_pages(s)? as f64;
        Some(s.params.get("chunk")?.as_i64()? as f64 * page)
    };
    let s = file_largest(series, "read", |s| {
        s.params.get("sum").is_some_and(|v| v == "yes") && chunk_bytes(s) == Some(65536.0)
    })?;
    s.mb_per_s(s.summary.median)
}

/// lmbench's "Mmap reread": bw_mmap_rd mmap_only's biggest size.
fn mmap_reread(series: &[&Series]) -> Option<f64> {
    let s = file_largest(series, "mmap", |_| true)?;
    s.mb_per_s(s.summary.median)
}

fn file_pages(s: &Series) -> Option<i64> {
    s.params.get("pages").and_then(|v| v.as_i64())
}

/// The largest `file` series with `io` that keeps its file open (lmbench's
/// io_only and mmap_only, which its summary reads) and passes `also`.
fn file_largest<'a>(
    series: &[&'a Series],
    io: &str,
    also: impl Fn(&Series) -> bool,
) -> Option<&'a Series> {
    series
        .iter()
        .copied()
        .filter(|s| s.key.bench == "file" && s.params.get("io").is_some_and(|v| v == io))
        .filter(|s| s.params.get("open2close").is_none_or(|v| v == "no"))
        .filter(|s| also(s))
        .max_by_key(|s| file_pages(s))
}

/// A `membw` operation's bandwidth at the largest size run (lmbench's
/// summary takes each bw_mem row at its biggest size).
fn memory_mb_per_s(series: &[&Series], op: &str) -> Option<f64> {
    let s = series
        .iter()
        .filter(|s| s.key.bench == "membw" && s.params.get("op").is_some_and(|v| v == op))
        .max_by_key(|s| s.params.get("kib").and_then(|v| v.as_i64()))?;
    s.mb_per_s(s.summary.median)
}

/// lmbench's "*Local* Communication latencies" (µs): the 2-process ctx
/// switch, the ipc round trips at lmbench's message sizes with a peer
/// process, and `TCP conn` from `connect`; the RPC columns stay blank, as
/// the footnote says why.
pub fn lmbench_latencies(doc: &Document) -> Option<Body> {
    fn ipc(s: &[&Series], kind: &str, bytes: &str) -> Option<f64> {
        param_median_us(
            s,
            "ipc",
            &[("kind", kind), ("bytes", bytes), ("mode", "processes")],
        )
    }
    let table = SummaryTable {
        title: "*Local* Communication latencies in microseconds - smaller is better",
        fill: "ctx:2p/0K ipc connect",
        footnote: "RPC/UDP and RPC/TCP are left out: lmbench's lat_rpc times Sun RPC calls \
                   (libtirpc's marshalling over the UDP and TCP round trips beside them), user-space \
                   code no kernel change touches and obsolete on Linux; the UDP and TCP columns are \
                   the kernel's part.\n",
    };
    lmbench_table(
        doc,
        table,
        &[
            Column {
                top: "2p/0K",
                bottom: "ctxsw",
                width: 5,
                value: Some(|s| {
                    param_median_us(
                        s,
                        "ctx",
                        &[("procs", "2"), ("size", "0"), ("mode", "processes")],
                    )
                }),
            },
            Column {
                top: "Pipe",
                bottom: "",
                width: 5,
                value: Some(|s| ipc(s, "pipe", "1")),
            },
            Column {
                top: "AF",
                bottom: "UNIX",
                width: 5,
                value: Some(|s| ipc(s, "unix", "1")),
            },
            Column {
                top: "UDP",
                bottom: "",
                width: 5,
                value: Some(|s| ipc(s, "udp", "4")),
            },
            Column {
                top: "RPC/",
                bottom: "UDP",
                width: 5,
                value: None,
            },
            Column {
                top: "TCP",
                bottom: "",
                width: 5,
                value: Some(|s| ipc(s, "tcp", "1")),
            },
            Column {
                top: "RPC/",
                bottom: "TCP",
                width: 5,
                value: None,
            },
            Column {
                top: "TCP",
                bottom: "conn",
                width: 5,
                value: Some(|s| param_median_us(s, "connect", &[("kind", "tcp")])),
            },
        ],
    )
}

/// The case lmbench's `Mmap Latency` column reads: `lat_mmap` at its
/// default `$MB` (8 MiB).
const MMAP_LATENCY_CASE: &str = "lat_mmap/2048p";
/// The case lmbench's `Page Fault` column reads: its `$MB`-sized `$FILE`
/// faulted in, the touched mapping's unmapping timed as lmbench's figure
/// holds it; a document without it falls back to [`PAGE_FAULT_UNTIMED_CASE`].
const PAGE_FAULT_CASE: &str = "file/2048p/unmap";
/// The same faults without the unmapping (documents from before the case above).
const PAGE_FAULT_UNTIMED_CASE: &str = "file/2048p";

/// The `Page Fault` cell: [`PAGE_FAULT_CASE`], else [`PAGE_FAULT_UNTIMED_CASE`].
fn page_fault_us(s: &[&Series]) -> Option<f64> {
    case_us(s, "fault", PAGE_FAULT_CASE).or_else(|| case_us(s, "fault", PAGE_FAULT_UNTIMED_CASE))
}

/// lmbench's "File & VM system latencies" (µs), a row per configuration:
/// create and delete per file (lmbench prints 10^6 ÷ its files per second,
/// the same figure), the mmap, signal and fault medians, and `100fd selct`
/// (select over 100 descriptors of a file). A footnote says how the memory
/// cells are made from osbench's series.
pub fn lmbench_file_vm(doc: &Document) -> Option<Body> {
    fn fs(s: &[&Series], phase: &str, kib: &str) -> Option<f64> {
        let params = [("phase", phase), ("kib", kib), ("files", "100")];
        param_median_us(s, "fs", &[params[0], params[1], params[2], ("fsync", "no")])
    }
    let footnote = format!(
        "Mmap Latency: mmap {MMAP_LATENCY_CASE} (lmbench's lat_mmap at its default 8 MiB); \
             Prot Fault: signal prot − (catch − send), lmbench's subtraction; Page Fault: fault \
             {PAGE_FAULT_CASE} (lat_pagefault's 8 MiB file, the unmapping of the touched pages \
             timed as lmbench's figure holds it; {PAGE_FAULT_UNTIMED_CASE}, without it, where a \
             run has only that).\n"
    );
    let table = SummaryTable {
        title: "File & VM system latencies in microseconds - smaller is better",
        fill: "fs mmap signal fault poll",
        footnote: &footnote,
    };
    lmbench_table(
        doc,
        table,
        &[
            Column {
                top: "0K File",
                bottom: "Create",
                width: 6,
                value: Some(|s| fs(s, "create", "0")),
            },
            Column {
                top: "",
                bottom: "Delete",
                width: 6,
                value: Some(|s| fs(s, "delete", "0")),
            },
            Column {
                top: "10K File",
                bottom: "Create",
                width: 6,
                value: Some(|s| fs(s, "create", "10")),
            },
            Column {
                top: "",
                bottom: "Delete",
                width: 6,
                value: Some(|s| fs(s, "delete", "10")),
            },
            Column {
                top: "Mmap",
                bottom: "Latency",
                width: 7,
                value: Some(|s| case_us(s, "mmap", MMAP_LATENCY_CASE)),
            },
            Column {
                top: "Prot",
                bottom: "Fault",
                width: 5,
                // lmbench's prot subtracts its catch (catch − send).
                value: Some(|s| Some(case_us(s, "signal", "prot")? - sig_handler_us(s)?)),
            },
            Column {
                top: "Page",
                bottom: "Fault",
                width: 7,
                value: Some(page_fault_us),
            },
            Column {
                top: "100fd",
                bottom: "selct",
                width: 5,
                value: Some(|s| {
                    param_median_us(
                        s,
                        "poll",
                        &[("call", "select"), ("on", "file"), ("fds", "100")],
                    )
                }),
            },
        ],
    )
}

/// lmbench's "Memory latencies" (ns): `memlat`'s pointer chains, read as
/// lmbench's summary reads lat_mem_rd — L1 at 1 KiB and L2 at 128 KiB with
/// a 128-byte stride, Main mem at the largest size run with that stride,
/// Rand mem at the largest random walk with a 16-byte stride (both blank
/// below 8 MiB, where lmbench's summary warns it has no memory figure).
pub fn lmbench_memory(doc: &Document) -> Option<Body> {
    /// The chain at `kib`, or (`None`) the largest of at least 8 MiB, below
    /// which lmbench's summary warns that it has no main-memory figure.
    fn chain_ns(s: &[&Series], kib: Option<&str>, pattern: &str, stride: &str) -> Option<f64> {
        let size = |s: &Series| s.params.get("kib").and_then(|v| v.as_i64());
        let s = s
            .iter()
            .filter(|s| is(s, "memlat", &[("pattern", pattern), ("stride", stride)]))
            .filter(|s| match kib {
                Some(k) => is(s, "memlat", &[("kib", k)]),
                None => size(s).is_some_and(|k| k >= 8192),
            })
            .max_by_key(|s| size(s))?;
        Some(s.summary.median * s.unit.ns())
    }
    let table = SummaryTable {
        title: "Memory latencies in nanoseconds - smaller is better",
        fill: "memlat",
        footnote: "Mhz and Guesses are left out: lmbench derives the clock from a timed loop of \
                   dependent adds (its mhz), and guesses which levels are caches from these \
                   figures; Main mem and Rand mem are at the largest size run of at least 8 MiB.\n",
    };
    lmbench_table(
        doc,
        table,
        &[
            Column {
                top: "Mhz",
                bottom: "",
                width: 4,
                value: None,
            },
            Column {
                top: "L1 $",
                bottom: "",
                width: 6,
                value: Some(|s| chain_ns(s, Some("1"), "stride", "128")),
            },
            Column {
                top: "L2 $",
                bottom: "",
                width: 6,
                value: Some(|s| chain_ns(s, Some("128"), "stride", "128")),
            },
            Column {
                top: "Main mem",
                bottom: "",
                width: 8,
                value: Some(|s| chain_ns(s, None, "stride", "128")),
            },
            Column {
                top: "Rand mem",
                bottom: "",
                width: 8,
                value: Some(|s| chain_ns(s, None, "random", "16")),
            },
        ],
    )
}

/// perf bench futex's summary lines, one per futex series: "Averaged N
/// operations/sec (+- x%), total secs = S" for the throughput workloads
/// (hash, lock-pi, waitv: N one thread's rate, the mean of the samples'
/// rates, ± their relative standard deviation; perf's ± is between threads),
/// and its "Wokeup", "Avg per-thread latency" and "Requeued" lines for the
/// wake-ups (the mean event in ms ± its relative standard deviation). Rates
/// are operations per second: higher is faster, the inverse of the samples.
pub fn perf_futex(doc: &Document) -> Option<Body> {
    let mut out = String::new();
    for s in doc.series.iter().filter(|s| s.key.bench == "futex") {
        let mut parts = s.key.case.split('/');
        let workload = parts.next().unwrap_or_default();
        let threads: String = parts
            .next()
            .unwrap_or_default()
            .trim_end_matches('t')
            .into();
        let rel = |sd: f64, mean: f64| if mean > 0.0 { sd / mean * 100.0 } else { 0.0 };
        let ms = s.summary.mean * s.unit.ns() / 1e6;
        let rel_ms = rel(s.summary.stddev, s.summary.mean);
        let line = match workload {
            "wake" => {
                format!("Wokeup {threads} of {threads} threads in {ms:.4} ms (+-{rel_ms:.2}%)")
            }
            "requeue" => {
                format!("Requeued {threads} of {threads} threads in {ms:.4} ms (+-{rel_ms:.2}%)")
            }
            "wake-parallel" => {
                let wakers: f64 = parts
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('w')
                    .parse()
                    .unwrap_or(1.0);
                let share = threads.parse::<f64>().unwrap_or(0.0) / wakers;
                format!(
                    "Avg per-thread latency (waking {share}/{threads} threads) in {ms:.4} ms (+-{rel_ms:.2}%)"
                )
            }
            _ => {
                let rates: Vec<f64> = s
                    .samples
                    .iter()
                    .filter(|v| **v > 0.0)
                    .map(|v| 1e9 / (v * s.unit.ns()))
                    .collect();
                if rates.is_empty() {
                    continue;
                }
                let mean = rates.iter().sum::<f64>() / rates.len() as f64;
                let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>()
                    / (rates.len().max(2) - 1) as f64;
                let secs: u64 = s.raw.iter().map(|r| r.elapsed_ns).sum::<u64>() / 1_000_000_000;
                format!(
                    "Averaged {} operations/sec (+- {:.2}%), total secs = {secs}",
                    mean.round() as u64,
                    rel(var.sqrt(), mean)
                )
            }
        };
        let _ = writeln!(out, "{:<44} {line}", s.anchor);
    }
    (!out.is_empty()).then_some(Body::Text(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::document::Unit;

    /// The fixture with a series of `bench` planted: `params`, median in `unit`.
    fn plant(
        doc: &mut Document,
        bench: &str,
        case: &str,
        params: serde_json::Value,
        median: f64,
        unit: Unit,
    ) {
        let mut s = doc.series[0].clone();
        s.key.bench = bench.into();
        s.key.case = case.into();
        s.key.config = DEFAULT_CONFIG.into();
        s.params = params.as_object().unwrap().clone();
        s.unit = unit;
        s.summary.median = median;
        s.bytes_per_op = (bench == "stream").then_some(10_485_760.0);
        doc.series.push(s);
    }

    fn text(body: Option<Body>) -> String {
        match body {
            Some(Body::Text(t)) => t,
            other => panic!("not a text section: {other:?}"),
        }
    }

    #[test]
    fn the_io_families_fill_lmbench_columns() {
        let mut doc = crate::report::fixture();
        doc.series.retain(|s| s.key.bench != "ctx");
        let stream = |kind: &str| json!({"kind": kind, "chunk": 65536, "mode": "processes"});
        // 10,485,760 B in 3,000 µs: 3495 MB/s.
        plant(&mut doc, "stream", "pipe", stream("pipe"), 3000.0, Unit::Us);
        plant(&mut doc, "stream", "tcp", stream("tcp"), 10485.76, Unit::Us);
        let fs = |phase: &str, kib: i64| json!({"phase": phase, "kib": kib, "files": 100, "fsync": "no"});
        plant(&mut doc, "fs", "create/0k", fs("create", 0), 12.5, Unit::Us);
        plant(&mut doc, "fs", "delete/0k", fs("delete", 0), 6.0, Unit::Us);
        plant(
            &mut doc,
            "fs",
            "create/10k",
            fs("create", 10),
            20.0,
            Unit::Us,
        );
        plant(
            &mut doc,
            "fs",
            "delete/10k",
            fs("delete", 10),
            7.25,
            Unit::Us,
        );
        let select = |on: &str| json!({"call": "select", "on": on, "fds": 100});
        plant(
            &mut doc,
            "poll",
            "select/file/100",
            select("file"),
            1900.0,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "poll",
            "select/tcp/100",
            select("tcp"),
            6500.0,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "connect",
            "tcp",
            json!({"kind": "tcp"}),
            41.0,
            Unit::Us,
        );

        // Two of the nine cells: a line; the memory columns fill the rest.
        let bw = text(lmbench_bandwidth(&doc));
        assert!(
            bw.contains("2 of the 9 cells") && bw.contains("stream file membw"),
            "{bw}"
        );
        plant_memory(&mut doc);
        let bw = text(lmbench_bandwidth(&doc));
        let row = bw.lines().last().unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // Host, "Linux", kernel, then Pipe and TCP (AF UNIX, File and Mmap reread blank),
        // Bcopy libc and hand, Mem read and write at their largest sizes.
        assert_eq!(
            &cells[3..],
            ["3495", "1000", "10.0K", "5000.0", "20.0K", "8000"],
            "{bw}"
        );
        assert!(bw.contains("bigger is better"));

        let fv = text(lmbench_file_vm(&doc));
        // The host's row (the fixture's mmap, signal and fault series add a footnote after it).
        let row = fv.lines().find(|l| l.starts_with("vm ")).unwrap();
        assert!(row.contains(" 12.5 ") && row.contains(" 7.2500 "), "{fv}");
        assert!(row.ends_with(" 1.900"), "100fd selct last: {fv}");

        // One of the six cells: a line instead of a table of blanks.
        let lat = text(lmbench_latencies(&doc));
        assert_eq!(
            lat,
            "lmbench's \"*Local* Communication latencies\" table is left out: 1 of the 6 cells \
             osbench fills were measured (TCP conn, in the results above); `osbench run \
             ctx:2p/0K ipc connect` measures them all\n"
        );
        for kind in ["pipe", "unix", "udp"] {
            let bytes = if kind == "udp" { 4 } else { 1 };
            let params = json!({"kind": kind, "bytes": bytes, "mode": "processes"});
            plant(&mut doc, "ipc", kind, params, 9.0, Unit::Us);
        }
        let lat = text(lmbench_latencies(&doc));
        let row = lat.lines().find(|l| l.starts_with("vm ")).unwrap();
        assert!(
            row.ends_with("41.0") && lat.contains("RPC/TCP are left out"),
            "{lat}"
        );
        let processor = text(lmbench_processor(&doc));
        assert!(processor.contains("slct TCP 6.500"), "{processor}");
    }

    #[test]
    fn the_vm_table_fills_lmbench_columns_with_its_subtractions() {
        let mut doc = crate::report::fixture();
        doc.series.retain(|s| s.key.bench != "syscall");
        let mut at = |bench: &str, case: &str, median: f64| {
            plant(&mut doc, bench, case, json!({}), median, Unit::Us);
        };
        at("signal", "send", 0.5);
        at("signal", "catch", 2.0);
        at("signal", "prot", 3.0);
        at("mmap", MMAP_LATENCY_CASE, 40.0);
        at("fault", PAGE_FAULT_CASE, 0.25);
        for (phase, kib) in [("create", 0), ("delete", 0), ("create", 10), ("delete", 10)] {
            let params = json!({"phase": phase, "kib": kib, "files": 100, "fsync": "no"});
            plant(&mut doc, "fs", phase, params, 10.0, Unit::Us);
        }
        let table = text(lmbench_file_vm(&doc));
        let row = table.lines().nth(5).unwrap();
        // Prot Fault = 3.0 − (2.0 − 0.5); 100fd selct blank.
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells.ends_with(&["40.0", "1.500", "0.25000"]), "{row}");
        assert!(
            table.contains("Prot Fault: signal prot − (catch − send)"),
            "{table}"
        );
        let terms = text(lmbench_processor(&doc));
        assert!(terms.contains("sig hndl 1.500"), "{terms}");
        // A document from before the unmapping was timed: its faults fill the column.
        doc.series.retain(|s| s.key.bench != "fault");
        plant(
            &mut doc,
            "fault",
            PAGE_FAULT_UNTIMED_CASE,
            json!({}),
            0.5,
            Unit::Us,
        );
        let table = text(lmbench_file_vm(&doc));
        let row = table.lines().nth(5).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(cells.ends_with(&["40.0", "1.500", "0.50000"]), "{row}");
        doc.series
            .retain(|s| !["mmap", "fault", "fs"].contains(&s.key.bench.as_str()));
        doc.series
            .retain(|s| !(s.key.bench == "signal" && s.key.case == "prot"));
        assert!(lmbench_file_vm(&doc).is_none());
    }

    /// `membw` series whose MB/s are round at their largest sizes, and a
    /// smaller one each that the tables must not take.
    fn plant_memory(doc: &mut Document) {
        for (op, kib, us_per_mib) in [
            ("bcopy", 1024, 104.8576),
            ("bcopy", 64, 1.0),
            ("fcp", 1024, 209.7152),
            ("frd", 2048, 52.4288),
            ("fwr", 2048, 131.072),
        ] {
            let params = json!({"op": op, "kib": kib});
            let bytes = kib as f64 * 1024.0;
            plant(
                doc,
                "membw",
                op,
                params,
                us_per_mib * kib as f64 / 1024.0,
                Unit::Us,
            );
            doc.series.last_mut().unwrap().bytes_per_op = Some(bytes);
        }
    }

    #[test]
    fn the_memory_families_fill_the_memory_latencies_table() {
        let mut doc = crate::report::fixture();
        assert!(lmbench_memory(&doc).is_none());
        let chain = |kib: i64, pattern: &str, stride: i64| json!({"kib": kib, "pattern": pattern, "stride": stride});
        plant(
            &mut doc,
            "memlat",
            "1K",
            chain(1, "stride", 128),
            1.25,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "memlat",
            "128K",
            chain(128, "stride", 128),
            4.5,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "memlat",
            "8M",
            chain(8192, "stride", 128),
            9.0,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "memlat",
            "256M",
            chain(262144, "stride", 128),
            11.0,
            Unit::Ns,
        );
        plant(
            &mut doc,
            "memlat",
            "256M/r",
            chain(262144, "random", 16),
            95.0,
            Unit::Ns,
        );
        let table = text(lmbench_memory(&doc));
        let cells: Vec<&str> = table.lines().nth(5).unwrap().split_whitespace().collect();
        assert_eq!(&cells[3..], ["1.2500", "4.5000", "11.0", "95.0"], "{table}");
        assert!(table.contains("Mhz and Guesses are left out"), "{table}");
    }

    #[test]
    fn no_io_series_no_io_tables() {
        let mut doc = crate::report::fixture();
        doc.series.retain(|s| s.key.bench != "ctx");
        assert!(lmbench_bandwidth(&doc).is_none());
        assert!(lmbench_file_vm(&doc).is_none());
        assert!(lmbench_latencies(&doc).is_none());
    }

    #[test]
    fn perf_futex_lines_are_perfs_with_rates_inverse_to_times() {
        let mut doc = crate::report::fixture();
        plant(
            &mut doc,
            "futex",
            "hash/2t/1024f",
            json!({}),
            250.0,
            Unit::Ns,
        );
        let s = doc.series.last_mut().unwrap();
        s.anchor = "perf bench futex hash -t 2 -f 1024".into();
        s.samples = vec![250.0, 250.0];
        plant(&mut doc, "futex", "wake/4t/w1", json!({}), 4000.0, Unit::Ns);
        let s = doc.series.last_mut().unwrap();
        s.summary.mean = 4000.0;
        s.summary.stddev = 400.0;
        let text = text(perf_futex(&doc));
        assert!(
            text.contains("hash -t 2 -f 1024")
                && text.contains("Averaged 4000000 operations/sec (+- 0.00%)"),
            "{text}"
        );
        assert!(
            text.contains("Wokeup 4 of 4 threads in 0.0040 ms (+-10.00%)"),
            "{text}"
        );
    }
}

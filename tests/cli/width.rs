//! Width and terminal: the default suite fits the terminal, pipes keep one
//! line per row, no wrapped line on an 80-column terminal.

use super::kit::*;

/// Display columns of `line` (µ, –, ± are one each).
fn columns(line: &str) -> usize {
    line.chars().count()
}

/// Fails naming every line of `text` wider than `width`.
fn assert_fits(text: &str, width: usize) {
    let long: Vec<&str> = text.lines().filter(|l| columns(l) > width).collect();
    assert!(
        long.is_empty(),
        "lines wider than {width}:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_default_suite_fits_the_terminal_and_pipes_keep_one_line_per_row() {
    let _serial = helper_lock(); // the suite starts helpers (ctx, ipc, hackbench's workers)
    let dir = tempfile::tempdir().unwrap();
    // At 100 columns as asked (the terminal's width is tried through a pty below).
    let json = dir.path().join("run.json");
    let out = quick_run(&["run", "--no-store", "--width", "100"], &json);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_fits(&text, 100);
    assert!(
        text.contains("syscall") && text.contains("messaging"),
        "{text}"
    );
    // A pipe: one line per series in the results table, however wide.
    let out = quick_run(&["run", "--no-store"], &json);
    let text = String::from_utf8(out.stdout).unwrap();
    let series = read_document(&json).unwrap().series;
    let results: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    let sampled = series.iter().filter(|s| s.quantiles.is_none()).count();
    assert_eq!(results.len(), 1 + sampled, "{text}");
    assert!(results.iter().any(|l| columns(l) > 100), "{text}");
    assert!(!text.contains("\nop:\n"), "{text}");
}

#[test]
fn the_default_suite_has_no_wrapped_line_on_an_80_column_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no script(1) to give osbench a terminal");
        return;
    }
    let _serial = helper_lock(); // the suite starts helpers (ctx, ipc, hackbench's workers)
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let run = format!(
        "stty cols 80 rows 50; {} run --no-store {}",
        bin.display(),
        QUICK.join(" ")
    );
    let (raw, _) = crate::common::ok(
        Command::new("script")
            .args(["-qec", &run, "/dev/null"])
            .env("OSBENCH_STORE", shared_store())
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    );
    // Results, warnings and the progress bar share the terminal: what stays
    // on screen of each line is what follows its last carriage return.
    let text: String = raw
        .lines()
        .map(|l| without_escapes(l.rsplit('\r').next().unwrap_or("")) + "\n")
        .collect();
    assert!(text.contains("messaging"), "{text}");
    assert!(text.contains("osbench: warning: "), "{text}");
    assert_fits(&text, 80);
}

/// `line` without terminal escape sequences (ESC [ … letter).
fn without_escapes(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
}

//! osbench on a terminal of a given width, for the width tests: `script`
//! (util-linux) gives it a pseudo-terminal that `stty` sizes, and
//! [`assert_fitted`] checks what the terminal showed against what a pipe got
//! (one line per row): no line wider than the terminal, and no word broken.
//!
//! A word is broken when a line ends inside a whitespace-separated token
//! and the token goes on in the next line (`revi` / `sions`): the terminal
//! then shows tokens the pipe's output does not have. So the tokens of both
//! outputs are compared as sets, after the two rewritings fitting may do on
//! purpose: an interval or spread tightened (`1.2 – 1.5` to `1.2–1.5`) and a
//! text moved to a legend under its key (`syscall null:`, the trailing colon).
//! Sets, not counts: a table laid out in groups repeats its key columns. A
//! token wider than half the terminal may be split after its `/`, `,` or `|`
//! (nothing fits it whole); each part must then be a piece of such a token.

use std::path::Path;
use std::process::{Command, Stdio};

/// Whether `script` is there to give osbench a terminal.
pub fn have_script() -> bool {
    Command::new("script").arg("--version").output().is_ok()
}

/// `'word'` for sh.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// What `osbench ARGS` shows on a `cols`-column terminal (standard output
/// and error as the terminal interleaves them), with its store at `store`,
/// run in `dir`; and its exit status. Escapes (colours) are left out, and of
/// a line rewritten in place (a progress bar) only what stays on screen.
pub fn on_terminal(store: &Path, dir: &Path, args: &[&str], cols: usize) -> (Option<i32>, String) {
    on_terminal_sized(store, dir, args, &format!("cols {cols} rows 50"))
}

/// [`on_terminal`] on a terminal sized by `stty SIZE` (`cols 80 rows 0`: a
/// window that reports no rows).
pub fn on_terminal_sized(
    store: &Path,
    dir: &Path,
    args: &[&str],
    size: &str,
) -> (Option<i32>, String) {
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let words: Vec<String> = std::iter::once(bin.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|w| quoted(&w))
        .collect();
    let shell = format!("stty {size}; exec {}", words.join(" "));
    let out = Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .env("OSBENCH_STORE", store)
        .env_remove("PGPASSWORD")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let raw = String::from_utf8_lossy(&out.stdout);
    let text = raw
        .lines()
        .map(|l| without_escapes(l.rsplit('\r').next().unwrap_or("")) + "\n")
        .collect();
    (out.status.code(), text)
}

/// What `osbench ARGS` writes to a pipe (standard output, then standard
/// error), as [`on_terminal`] runs it, and its exit status.
pub fn piped(store: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = super::osbench(store)
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// `line` without terminal escape sequences (ESC [ … letter).
pub fn without_escapes(line: &str) -> String {
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

/// Fails naming every line of `text` wider than `width` display columns.
pub fn assert_fits(text: &str, width: usize, what: &str) {
    let long: Vec<&str> = text
        .lines()
        .filter(|l| osbench::report::display_width(l) > width)
        .collect();
    assert!(
        long.is_empty(),
        "{what}: lines wider than {width}:\n{}\n--- all of it:\n{text}",
        long.join("\n")
    );
}

/// The tokens of `text` as the module's doc compares them.
fn tokens(text: &str) -> std::collections::BTreeSet<String> {
    text.replace(" – ", "–")
        .replace(" ± ", "±")
        .split_whitespace()
        .map(|t| t.trim_end_matches(':').to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// `shown` (on a `width`-column terminal) fits it and has the words of
/// `whole` (the same output in a pipe), none broken: the module's doc.
pub fn assert_fitted(shown: &str, whole: &str, width: usize, what: &str) {
    assert_fits(shown, width, what);
    let (shown_words, whole_words) = (tokens(shown), tokens(whole));
    let long: Vec<&String> = whole_words
        .iter()
        .filter(|w| osbench::report::display_width(w) > width / 2)
        .collect();
    let piece_of_long = |t: &String| long.iter().any(|w| w.contains(t.as_str()));
    let broken: Vec<&String> = shown_words
        .difference(&whole_words)
        .filter(|t| !piece_of_long(t))
        .collect();
    let lost: Vec<&String> = whole_words
        .difference(&shown_words)
        .filter(|t| !long.contains(t))
        .collect();
    assert!(
        broken.is_empty() && lost.is_empty(),
        "{what} at {width} columns: words broken {broken:?}, lost {lost:?}\n\
         --- the terminal's:\n{shown}--- the pipe's:\n{whole}"
    );
}

/// `osbench ARGS` at 80 and 100 columns on a terminal fits each and
/// breaks no word of its piped output; the piped output (for the caller).
/// `keep` picks the lines that are compared (all but those whose values
/// change between two runs, such as `env`'s load).
pub fn check_widths(
    store: &Path,
    dir: &Path,
    args: &[&str],
    keep: impl Fn(&str) -> bool,
) -> String {
    let only = |text: &str| -> String {
        text.lines()
            .filter(|l| keep(l))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let (status, whole) = piped(store, dir, args);
    for width in [80, 100] {
        let (shown_status, shown) = on_terminal(store, dir, args, width);
        let what = format!("osbench {}", args.join(" "));
        assert_eq!(shown_status, status, "{what}: {shown}\n{whole}");
        assert_fits(&shown, width, &what);
        assert_fitted(&only(&shown), &only(&whole), width, &what);
    }
    whole
}

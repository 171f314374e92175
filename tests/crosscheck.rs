//! scripts/crosscheck.sh's bookkeeping run for real with this build's
//! osbench: the record written as each check ends, a check whose anchor is
//! missing recorded as unavailable (with the reason) while the run goes
//! on, `-c` skipping what the record holds for this machine and build, a
//! misspelt check stopping the run before anything runs, and
//! scripts/crosscheck-kinds.py setting the record out by machine kind.
//! The checks are `ctx` (osbench alone: its CV) and `sig-install` with
//! lmbench pointed at an empty directory. Nothing is compared: the
//! cross-checks themselves are measurements for a quiet machine
//! (docs/crosscheck.md). A binary of its own: the script starts osbench
//! processes, which the other test binaries' checks for leftovers would see.

use std::path::Path;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/crosscheck.sh");
const KINDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/crosscheck-kinds.py");

/// The script with two rounds, a record at `record`, no lmbench and no wait
/// for a quiet machine.
fn crosscheck(record: &Path, args: &[&str]) -> Output {
    let empty = record.with_file_name("no-lmbench");
    std::fs::create_dir_all(&empty).unwrap();
    Command::new("bash")
        .arg(SCRIPT)
        .args(["-r", "2"])
        .args(args)
        .env("OSBENCH", env!("CARGO_BIN_EXE_osbench"))
        .env("CROSSCHECK_RECORD", record)
        .env("LMBENCH", &empty)
        .env("QUIET_TRIES", "1")
        .output()
        .unwrap()
}

/// The record's rows as fields, header first.
fn rows(record: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn shown(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_record_keeps_each_check_and_continues_and_names_what_is_missing() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: crosscheck.sh summarises with python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.tsv");

    let misspelt = crosscheck(&record, &["ctx", "no-such-check"]);
    assert_eq!(misspelt.status.code(), Some(2), "{}", shown(&misspelt));
    assert!(
        !record.exists(),
        "a misspelt check ran others first:\n{}",
        shown(&misspelt)
    );

    let first = crosscheck(&record, &["sig-install", "ctx"]);
    assert!(first.status.success(), "{}", shown(&first));
    let table = rows(&record);
    assert_eq!(table.len(), 3, "a header and two rows: {table:?}");
    let column = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    let (check, verdict, rounds) = (column("check"), column("verdict"), column("rounds"));
    assert_eq!(table[1][check], "sig-install");
    assert!(
        table[1][verdict].starts_with("unavailable: ") && table[1][verdict].contains("lat_sig"),
        "the missing anchor is named: {:?}",
        table[1]
    );
    assert_eq!(table[2][check], "ctx");
    assert_eq!(table[2][rounds], "2");
    assert!(
        table[2][verdict].starts_with("yes") || table[2][verdict].starts_with("no"),
        "ctx has no anchor: its verdict is its CV's: {:?}",
        table[2]
    );

    let again = crosscheck(&record, &["-c", "sig-install", "ctx"]);
    assert!(again.status.success(), "{}", shown(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("## ctx: recorded already"),
        "{}",
        shown(&again)
    );
    let table = rows(&record);
    let checks: Vec<&str> = table[1..].iter().map(|r| r[check].as_str()).collect();
    assert_eq!(
        checks,
        ["sig-install", "ctx", "sig-install"],
        "-c measures again only what could not run"
    );

    let kinds = Command::new("python3")
        .arg(KINDS)
        .arg(&record)
        .output()
        .unwrap();
    assert!(kinds.status.success(), "{}", shown(&kinds));
    let text = String::from_utf8_lossy(&kinds.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .to_string()
    };
    assert!(line("ctx").contains("CV "), "{text}");
    assert!(
        line("sig-install").contains("unavailable: ")
            && line("sig-install").contains("not measured on"),
        "{text}"
    );
}

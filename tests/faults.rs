//! The fast rows of scripts/faults.sh, on every test run: its "hangs and
//! lost data" section (issue 44) — SIGINT and SIGTERM of bisect during a
//! hanging build, a build past `--build-timeout`, a SIGSTOPped invocation
//! agent waited for and interrupted, `import /dev/zero` — run with this
//! build's osbench. A binary of its own: the script starts osbench
//! processes, which the other test binaries' checks for leftovers would
//! see. The whole script (root, PostgreSQL, guests, thousands of
//! hackbench workers) is for a quiet machine: docs/faults.md. Asserts no
//! timing beyond the rows' own generous limits (seconds, not the targets).

use std::process::Command;

#[test]
fn the_hangs_rows_of_faults_sh_pass() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: the bisect rows need git");
        return;
    }
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/faults.sh"))
        .args(["--only", "hangs"])
        .env("OSBENCH", env!("CARGO_BIN_EXE_osbench"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| fault"))
        .collect();
    assert!(
        rows.len() >= 8,
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let failed: Vec<&&str> = rows
        .iter()
        .filter(|r| !r.trim_end().ends_with("| yes |"))
        .collect();
    assert!(
        failed.is_empty() && out.status.success(),
        "failed rows: {failed:#?}\n{table}"
    );
}

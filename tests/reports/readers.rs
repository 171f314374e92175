//! osbench's CSV and Markdown read by tools nobody here wrote, with their
//! default options: pandas and DuckDB read every case of the CSV (the
//! syscall case `null` included, which pandas would otherwise take for a
//! missing value), and Python-Markdown renders escaped text as written.
//! Each reader is used where its Python module is installed (`pip install
//! pandas duckdb markdown`); where it is not, the test says so and skips it.
//! The same rules are encoded without Python in `report::csv`'s unit tests.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::ok;

const STORED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

/// Whether python3 can import `module`; says so on stderr when not.
fn python_has(module: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: python3 with {module} is not installed here (pip install {module})");
    }
    found
}

/// Runs `script` with python3 and `file` as its argument; its stdout.
fn python(script: &str, file: &Path) -> String {
    ok(Command::new("python3")
        .args(["-c", script])
        .arg(file)
        .output()
        .unwrap())
    .0
}

/// `osbench export STORED OPTION FILE`, returning FILE.
fn export(option: &str, name: &str, dir: &Path) -> std::path::PathBuf {
    let file = dir.join(name);
    ok(common::osbench(common::tmp_store("readers-results.sqlite"))
        .args(["export", STORED, option])
        .arg(&file)
        .output()
        .unwrap());
    file
}

#[test]
fn pandas_and_duckdb_read_every_case_with_their_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let csv = export("--csv", "run.csv", dir.path());
    let doc = osbench::store::read_document(Path::new(STORED)).unwrap();
    let rows: usize = doc.series.iter().map(|s| s.samples.len()).sum();
    let null_rows: usize = doc
        .series
        .iter()
        .filter(|s| s.key.case == "null")
        .map(|s| s.samples.len())
        .sum();
    assert!(null_rows > 0, "the fixture has the syscall case null");
    if python_has("pandas") {
        let script = "import sys, pandas as pd\n\
                      df = pd.read_csv(sys.argv[1])\n\
                      print(len(df), int(df['case'].isna().sum()), int(df.isna().sum().sum()))\n\
                      print(df.groupby('case').size().to_dict())";
        let out = python(script, &csv);
        let mut lines = out.lines();
        // Every row, no missing case, and no missing cell at all (rounds are known here).
        assert_eq!(lines.next().unwrap(), format!("{rows} 0 0"), "{out}");
        let groups = lines.next().unwrap();
        assert!(
            groups.contains(&format!("\"'null'\": {null_rows}")),
            "{groups}"
        );
    }
    if python_has("duckdb") {
        let script = "import sys, duckdb\n\
                      q = \"select count(*), count(\\\"case\\\") from read_csv('\" + sys.argv[1] + \"')\"\n\
                      print(*duckdb.sql(q).fetchall()[0])";
        assert_eq!(python(script, &csv).trim(), format!("{rows} {rows}"));
    }
}

#[test]
fn python_markdown_renders_escaped_text_as_written() {
    if !python_has("markdown") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let md = export("--markdown", "run.md", dir.path());
    let script = "import sys, markdown\n\
                  print(markdown.markdown(open(sys.argv[1]).read(), extensions=['tables']))";
    let html = python(script, &md);
    // The fixture's label is `fixture | <b>run</b>`: shown as text, no stray backslash.
    assert!(
        html.contains("<h1>osbench results: fixture | &lt;b&gt;run&lt;/b&gt;</h1>"),
        "{}",
        &html[..html.len().min(400)]
    );
    assert!(!html.contains('\\'), "a backslash shows: {html}");
    assert!(html.contains("<table>"), "no table: {html}");
}

//! The results store and the exports as a user meets them through the binary:
//! labelled runs in `history`, `compare` by label or id, `export`/`import`
//! between stores, Markdown and CSV files, where the store lives, a store that
//! cannot be written, concurrent writers, and SIGKILL in the middle of a run.
//! Every osbench here gets a store in a temporary directory, never the user's.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use common::{ok, osbench};
use osbench::store::{Filter, Store, read_document};

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

/// A quick `syscall:case=null` run stored in `store` with `extra` arguments.
fn stored_run(store: &Path, extra: &[&str]) -> (String, String) {
    ok(osbench(store)
        .args(["run", "syscall:case=null"])
        .args(QUICK)
        .args(extra)
        .output()
        .unwrap())
}

fn stored_ids(store: &Path) -> Vec<i64> {
    Store::open_existing(store)
        .unwrap()
        .list(&Filter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect()
}

#[test]
fn labelled_runs_are_listed_and_compared_by_label_or_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let (_, stderr) = stored_run(&store, &["--label", "before"]);
    assert!(stderr.contains("saved as run 1 in"), "{stderr}");
    stored_run(&store, &["--label", "after", "-q"]);
    // The store is an SQLite database (what `file` looks at).
    assert!(fs::read(&store).unwrap().starts_with(b"SQLite format 3\0"));

    let (history, _) = ok(osbench(&store).arg("history").output().unwrap());
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(lines.len(), 3, "{history}");
    assert!(lines[0].starts_with("id  started (UTC)"), "{history}");
    for (line, (id, label)) in lines[1..].iter().zip([("1", "before"), ("2", "after")]) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((cells[0], cells[2], cells[3]), (id, label, "yes"), "{line}");
        assert!(line.ends_with("1  syscall"), "{line}");
    }
    let (only, _) = ok(osbench(&store)
        .args(["history", "--label", "after"])
        .output()
        .unwrap());
    assert_eq!(only.lines().count(), 2, "{only}");
    let (none, _) = ok(osbench(&store)
        .args(["history", "--bench", "ctx"])
        .output()
        .unwrap());
    assert!(none.contains("No stored run matches"), "{none}");
    let kernel = osbench::env::capture().kernel;
    let (same_kernel, _) = ok(osbench(&store)
        .args(["history", "--kernel", &kernel])
        .output()
        .unwrap());
    assert_eq!(same_kernel.lines().count(), 3, "{same_kernel}");

    let (by_label, _) = ok(osbench(&store)
        .args(["compare", "before", "after"])
        .output()
        .unwrap());
    assert!(
        by_label.contains("A = before (run 1) (baseline)")
            && by_label.contains("B = after (run 2)"),
        "{by_label}"
    );
    assert!(by_label.contains("syscall null"), "{by_label}");
    let (by_id, _) = ok(osbench(&store)
        .args(["compare", "2", "1"])
        .output()
        .unwrap());
    assert!(by_id.contains("A = run 2 (after)"), "{by_id}");

    // plot and report take stored runs the same way.
    let html = dir.path().join("r.html");
    ok(osbench(&store)
        .args(["report", "before", "2", "--html"])
        .arg(&html)
        .output()
        .unwrap());
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("before (run 1)") && page.contains("run 2 (after)"));
    let plots = dir.path().join("plots");
    ok(osbench(&store)
        .args(["plot", "after", "--out"])
        .arg(&plots)
        .output()
        .unwrap());
    assert!(fs::read_dir(&plots).unwrap().count() > 0);

    let out = osbench(&store)
        .args(["compare", "before", "nosuch"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("'nosuch' is not a file, nor a run id or label")
            && stderr.contains("osbench history"),
        "{stderr}"
    );
    let out = osbench(&store)
        .args(["compare", "1", "7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("'7'"));
}

#[test]
fn labels_that_look_like_run_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    for (label, want) in [
        ("42", "only digits"),
        ("", "cannot be empty"),
        ("a\tb", "control"),
    ] {
        let out = osbench(&store)
            .args(["run", "syscall:case=null", "--label", label])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{label:?}: {stderr}");
        assert!(stderr.contains(want), "{label:?}: {stderr}");
    }
    assert!(!store.exists(), "nothing was run, nothing stored");
}

#[test]
fn export_and_import_move_a_run_between_stores() {
    let dir = tempfile::tempdir().unwrap();
    let (here, there) = (
        dir.path().join("here.sqlite"),
        dir.path().join("there.sqlite"),
    );
    stored_run(&here, &["--label", "moved", "-q"]);
    let exported = dir.path().join("moved.json");
    let (md, csv) = (dir.path().join("moved.md"), dir.path().join("moved.csv"));
    let out = osbench(&here)
        .args(["export", "moved", "--json"])
        .arg(&exported)
        .arg("--markdown")
        .arg(&md)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    ok(out);
    let doc = read_document(&exported).unwrap();
    assert_eq!(doc.run.label.as_deref(), Some("moved"));
    assert!(
        fs::read_to_string(&md)
            .unwrap()
            .contains("| syscall | null |")
    );
    assert_eq!(fs::read_to_string(&csv).unwrap().lines().count(), 1 + 3);

    let (first, _) = ok(osbench(&there)
        .arg("import")
        .arg(&exported)
        .output()
        .unwrap());
    assert!(first.contains("stored as run 1 'moved'"), "{first}");
    let (again, _) = ok(osbench(&there)
        .arg("import")
        .arg(&exported)
        .output()
        .unwrap());
    assert!(again.contains("already stored as run 1"), "{again}");
    assert_eq!(stored_ids(&there), [1]);
    // The imported run is the same document, and compare takes it by label there.
    let back = dir.path().join("back.json");
    ok(osbench(&there)
        .args(["export", "1", "--json"])
        .arg(&back)
        .output()
        .unwrap());
    assert_eq!(fs::read(&back).unwrap(), fs::read(&exported).unwrap());
    ok(osbench(&there)
        .args(["compare", "moved"])
        .arg(&exported)
        .output()
        .unwrap());

    let out = osbench(&here).args(["export", "moved"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("nothing to export")
    );
    // A bad document is refused before anything is stored.
    let broken = dir.path().join("broken.json");
    fs::write(&broken, "{").unwrap();
    let out = osbench(&there)
        .arg("import")
        .arg(FIXTURE)
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stored_ids(&there), [1]);
}

#[test]
fn exports_to_dev_stdout_and_through_symlinks_are_written_not_replaced() {
    // /dev/stdout is a link to this osbench's standard output, here a pipe
    // the test reads: it is written, not replaced (which as root would have
    // turned /dev/stdout into a file, and as a user failed).
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let (stdout, stderr) = ok(osbench(&store)
        .args(["export", FIXTURE, "--csv", "/dev/stdout"])
        .stdout(Stdio::piped())
        .output()
        .unwrap());
    assert!(
        stdout.starts_with("bench,case,config,"),
        "the CSV is on stdout: {stdout:?} ({stderr})"
    );
    assert_eq!(
        stdout,
        fs::read_to_string(FIXTURE.replace(".json", ".csv")).unwrap()
    );
    assert!(
        fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A symlink to a document: the document is replaced, the link stays.
    let target = dir.path().join("doc.json");
    fs::write(&target, "old").unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(osbench(&store)
        .args(["export", FIXTURE, "--json"])
        .arg(&link)
        .output()
        .unwrap());
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        read_document(&target).unwrap(),
        read_document(Path::new(FIXTURE)).unwrap()
    );
}

#[test]
fn run_and_compare_write_markdown_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let (md, csv, json) = (
        dir.path().join("r.md"),
        dir.path().join("r.csv"),
        dir.path().join("r.json"),
    );
    let mut args: Vec<&std::ffi::OsStr> = Vec::new();
    for (flag, path) in [("--markdown", &md), ("--csv", &csv), ("--json", &json)] {
        args.push(flag.as_ref());
        args.push(path.as_os_str());
    }
    let out = osbench(&store)
        .args(["run", "syscall:case=null", "--no-store"])
        .args(QUICK)
        .args(&args)
        .output()
        .unwrap();
    let (_, stderr) = ok(out);
    assert!(!store.exists(), "--no-store stores nothing");
    assert!(!stderr.contains("saved as run"), "{stderr}");
    let markdown = fs::read_to_string(&md).unwrap();
    assert!(markdown.starts_with("# osbench results\n"), "{markdown}");
    assert!(markdown.contains("| syscall | null |"), "{markdown}");
    let text = fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("bench,case,config,round,sample,value,unit")
    );
    let doc = read_document(&json).unwrap();
    for (line, value) in lines.zip(&doc.series[0].samples) {
        // `null` quoted: pandas reads a bare (or double-quoted) null as NaN.
        assert!(line.starts_with("syscall,'null',default,1,"), "{line}");
        assert_eq!(
            line.split(',').nth(5).unwrap().parse::<f64>().unwrap(),
            *value
        );
    }

    let (cmd_md, cmd_csv) = (dir.path().join("c.md"), dir.path().join("c.csv"));
    ok(osbench(&store)
        .arg("compare")
        .arg(&json)
        .arg(&json)
        .arg("--markdown")
        .arg(&cmd_md)
        .arg("--csv")
        .arg(&cmd_csv)
        .output()
        .unwrap());
    assert!(
        fs::read_to_string(&cmd_md)
            .unwrap()
            .contains("| syscall | null |")
    );
    let cmp = fs::read_to_string(&cmd_csv).unwrap();
    assert_eq!(cmp.lines().count(), 2, "{cmp}");
    let ratio = cmp.lines().nth(1).unwrap().split(',').nth(12);
    assert_eq!(ratio, Some("1"), "a document against itself: {cmp}");
}

#[test]
fn the_store_is_found_by_flag_then_variable_then_xdg_then_home() {
    let dir = tempfile::tempdir().unwrap();
    let (home, xdg) = (dir.path().join("home"), dir.path().join("xdg"));
    fs::create_dir_all(&home).unwrap();
    let import = |envs: &[(&str, &Path)], extra: &[&str]| {
        let mut cmd = Command::cargo_bin("osbench").unwrap();
        cmd.env_remove("OSBENCH_STORE")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &home);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        ok(cmd.arg("import").arg(FIXTURE).args(extra).output().unwrap());
    };
    import(&[], &[]);
    assert!(home.join(".local/share/osbench/results.sqlite").exists());
    import(&[("XDG_DATA_HOME", &xdg)], &[]);
    assert!(xdg.join("osbench/results.sqlite").exists());
    let var = dir.path().join("var.sqlite");
    import(&[("XDG_DATA_HOME", &xdg), ("OSBENCH_STORE", &var)], &[]);
    assert!(var.exists());
    let flag = dir.path().join("flag.sqlite");
    import(
        &[("OSBENCH_STORE", &var)],
        &["--store", flag.to_str().unwrap()],
    );
    assert!(flag.exists());
}

#[test]
fn a_store_that_cannot_be_written_never_loses_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_db = dir.path().join("notes.txt");
    fs::write(&not_a_db, "some notes, not a database\n".repeat(100)).unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    // No --json: the document goes to a file in the current directory.
    let (stdout, stderr) = ok(osbench(&not_a_db)
        .current_dir(&work)
        .args(["run", "syscall:case=null", "-q"])
        .args(QUICK)
        .output()
        .unwrap());
    assert!(stdout.contains("null"), "the table is printed: {stdout}");
    assert!(stderr.contains("not an SQLite database"), "{stderr}");
    let files: Vec<PathBuf> = fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("osbench-") && name.ends_with(".json"),
        "{name}"
    );
    assert!(stderr.contains(&format!("it is in ./{name}")), "{stderr}");
    assert_eq!(read_document(&files[0]).unwrap().series.len(), 1);
    // With --json the warning points there and no other file is made.
    let json = dir.path().join("kept.json");
    let (_, stderr) = ok(osbench(&not_a_db)
        .current_dir(&work)
        .args(["run", "syscall:case=null", "-q", "--json"])
        .arg(&json)
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains(&format!("it is in {}", json.display())),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(&work).unwrap().count(), 1);
    assert!(
        fs::read_to_string(&not_a_db)
            .unwrap()
            .starts_with("some notes")
    );
}

#[test]
fn a_store_that_cannot_be_opened_for_want_of_descriptors_names_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite");
    stored_run(&store, &[]);
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n 4 && exec '{}' history --store '{}'",
            bin.display(),
            store.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ulimit -n is 4"), "{stderr}");
}

/// A tiny tmpfs mounted on a temporary directory, unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    /// `None` (the test then skips, saying so) where mounting is not allowed.
    fn mount(test: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2M", "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("{test}: skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_store_on_a_full_disk_can_still_be_read() {
    let Some(disk) = SmallDisk::mount("a_store_on_a_full_disk_can_still_be_read") else {
        return;
    };
    let store = disk.0.path().join("s.sqlite");
    stored_run(&store, &["--label", "kept"]);
    // Fill the disk: dd ends with "No space left on device".
    let _ = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", disk.0.path().join("fill").display()))
        .arg("bs=64k")
        .stderr(Stdio::null())
        .status();
    let (history, _) = ok(osbench(&store).arg("history").output().unwrap());
    assert!(history.contains("kept"), "{history}");
    ok(osbench(&store)
        .args(["compare", "kept", "kept"])
        .output()
        .unwrap());
}

#[test]
fn runs_falling_back_to_files_at_once_never_overwrite_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_db = dir.path().join("notes.txt");
    fs::write(&not_a_db, "not a database\n".repeat(100)).unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    // Files with the one-second names of the next minute are there already:
    // a fallback must never replace one of them.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let taken: Vec<PathBuf> = (now - 1..now + 60)
        .map(|t| {
            let stamp = osbench::document::rfc3339(t).replace(':', "");
            let path = work.join(format!("osbench-{stamp}.json"));
            fs::write(&path, "precious").unwrap();
            path
        })
        .collect();
    // Two runs that cannot reach their store, at once.
    let children: Vec<_> = (0..2)
        .map(|_| {
            osbench(&not_a_db)
                .current_dir(&work)
                .args(["run", "syscall:case=null", "-q"])
                .args(QUICK)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    all_succeed(children);
    for path in &taken {
        assert_eq!(
            fs::read_to_string(path).unwrap(),
            "precious",
            "{} was replaced",
            path.display()
        );
    }
    let documents: Vec<PathBuf> = fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !taken.contains(p))
        .collect();
    assert_eq!(documents.len(), 2, "one file per run: {documents:?}");
    let seeds: Vec<u64> = documents
        .iter()
        .map(|p| read_document(p).unwrap().run.seed)
        .collect();
    assert_ne!(seeds[0], seeds[1], "two different runs: {documents:?}");
}

#[test]
fn processes_storing_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let fixture: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(FIXTURE).unwrap()).unwrap();
    // Four processes, each importing ten different documents, all started at once.
    let children: Vec<_> = (0..4)
        .map(|p| {
            let files: Vec<PathBuf> = (0..10)
                .map(|i| {
                    let mut doc = fixture.clone();
                    doc["run"]["label"] = format!("p{p}-{i}").into();
                    let file = dir.path().join(format!("p{p}-{i}.json"));
                    fs::write(&file, doc.to_string()).unwrap();
                    file
                })
                .collect();
            osbench(&store)
                .arg("import")
                .args(&files)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    all_succeed(children);
    assert_eq!(stored_ids(&store).len(), 40);
}

#[test]
fn sigkill_during_a_run_leaves_the_earlier_runs_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    stored_run(&store, &["--label", "first", "-q"]);
    stored_run(&store, &["--label", "second", "-q"]);
    // Long enough that the kill lands while measuring: 6 cases × 200 samples × 5 ms.
    let mut child = osbench(&store)
        .args([
            "run",
            "syscall",
            "-q",
            "--samples",
            "200",
            "--sample-time",
            "5",
        ])
        .args(["--warmup", "0", "--label", "killed"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL
    assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
    let db = Store::open_existing(&store).unwrap();
    let rows = db.list(&Filter::default()).unwrap();
    let labels: Vec<Option<&str>> = rows.iter().map(|r| r.label.as_deref()).collect();
    assert_eq!(labels, [Some("first"), Some("second")]);
    for r in &rows {
        assert_eq!(db.document(r.id).unwrap().unwrap().series.len(), 1);
    }
    let conn = rusqlite::Connection::open(&store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn list_marks_the_default_suite_and_all_runs_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = ok(osbench(dir.path().join("s.sqlite"))
        .arg("list")
        .output()
        .unwrap());
    let marked: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("* "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        marked,
        [
            "null",
            "2p/0K",
            "2p/16K",
            "pipe",
            "fork",
            "anon/2048p",
            "g10/socket/processes",
            "futex/threads"
        ]
    );
    assert!(
        text.contains("`osbench run all` runs every default case"),
        "{text}"
    );
}

/// Waits for processes started at once; each must succeed.
fn all_succeed(children: Vec<std::process::Child>) {
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("notes.sqlite");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let out = osbench(&foreign).arg("history").output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("an SQLite database with 1 table ('notes') and no osbench schema")
            && stderr.contains("give another --store"),
        "{stderr}"
    );
    // A run keeps its document in a file instead.
    let work = tempfile::tempdir().unwrap();
    let (_, stderr) = ok(osbench(&foreign)
        .current_dir(work.path())
        .args(["run", "syscall:case=null", "-q"])
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains("no osbench schema") && stderr.contains("it is in ./osbench-"),
        "{stderr}"
    );
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let notes: String = conn
        .query_row("SELECT text FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!((tables, notes.as_str()), (1, "mine"));
}

#[test]
fn store_errors_are_one_line_without_the_statement() {
    // A store at schema version 1 whose tables are gone: the migration's
    // query fails, and SQLite's own text would quote the whole statement.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    rusqlite::Connection::open(&store)
        .unwrap()
        .pragma_update(None, "user_version", 1)
        .unwrap();
    let out = osbench(&store).arg("history").output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no such table: runs"), "{stderr}");
    assert!(
        !stderr.contains("SELECT") && !stderr.contains("offset"),
        "{stderr}"
    );
}

#[test]
fn import_of_a_dash_reads_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let mut child = osbench(&store)
        .args(["import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        &fs::read(FIXTURE).unwrap(),
    )
    .unwrap();
    let (stdout, _) = ok(child.wait_with_output().unwrap());
    assert!(
        stdout.contains("standard input: stored as run 1"),
        "{stdout}"
    );
    assert_eq!(
        Store::open_existing(&store)
            .unwrap()
            .document_text(1)
            .unwrap()
            .unwrap(),
        fs::read_to_string(FIXTURE).unwrap()
    );
    let out = osbench(&store).args(["import", "-", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("more than once")
    );
}

#[test]
fn a_run_goes_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let store = store.to_str().unwrap();
    crate::shared::a_run_goes_through(store, store);
}

#[test]
fn the_same_document_imported_twice_is_stored_once_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    crate::shared::the_same_document_imported_twice_is_stored_once(store.to_str().unwrap());
}

//! The PostgreSQL results store against a real server: each test that needs
//! one starts its own throwaway cluster (Debian's `postgresql` package:
//! `initdb` and `pg_ctl` from /usr/lib/postgresql/*/bin, run as the
//! `postgres` user when this is root) in a temporary directory on a loopback
//! port, and stops it when the test ends ([`Cluster`]'s Drop), so nothing is
//! left running. Covered: run → store → history → compare by label →
//! export, the same bytes as through SQLite; the two back ends answering
//! alike; concurrent writers (and one document written by all of them at
//! once); one document imported twice; TLS modes, a self-signed server
//! certificate given as the root among them; an unreachable server, a
//! refused login, a listener that accepts and never answers and a server
//! stopped (SIGSTOP) mid-run or mid-statement, which name the URL without its
//! password, end within their time limits or at Ctrl-C, and keep the run in
//! a file; a password with `/` and `?` in it; a foreign `osbench_schema`
//! table, left as it was. Without PostgreSQL these tests say so and pass,
//! unless `OSBENCH_REQUIRE_PG=1` (CI), where they fail.

use crate::common;
use crate::shared;

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::pg::{Cluster, PASSWORD, Stopped, Tls, USER, free_port, have_postgres};
use common::{ok, osbench};
use osbench::document::Document;
use osbench::store::{Filter, Inserted, Store, read_document};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

/// The fixture as run `i` of host `host`: another start time, label and host.
fn variant(i: usize, host: &str) -> Document {
    let mut doc = read_document(Path::new(FIXTURE)).unwrap();
    doc.run.started = format!("2026-11-{:02}T09:{:02}:00Z", 1 + i / 60, i % 60);
    doc.run.label = Some(format!("v{}", i % 3));
    doc.env.hostname = host.into();
    doc
}

#[test]
fn a_run_goes_through_postgresql_as_through_sqlite() {
    if !have_postgres("a_run_goes_through_postgresql_as_through_sqlite") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    shared::a_run_goes_through(&pg.url("127.0.0.1", ""), &pg.shown());
}

#[test]
fn both_back_ends_answer_alike() {
    if !have_postgres("both_back_ends_answer_alike") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let dir = tempfile::tempdir().unwrap();
    let mut stores = [
        Store::open(dir.path().join("results.sqlite")).unwrap(),
        Store::open(PathBuf::from(pg.url("127.0.0.1", ""))).unwrap(),
    ];
    for store in &mut stores {
        for i in 0..12 {
            let host = ["alpha", "beta"][i % 2];
            let mut doc = variant(i, host);
            if i == 5 {
                doc.env.kernel = "6.1.0-old".into();
                doc.series.retain(|s| s.key.bench == "wakeup");
            }
            assert_eq!(store.insert(&doc).unwrap(), Inserted::New(i as i64 + 1));
        }
    }
    let filters = [
        Filter::default(),
        Filter {
            host: Some("beta".into()),
            ..Filter::default()
        },
        Filter {
            kernel: Some("6.1.".into()),
            ..Filter::default()
        },
        Filter {
            bench: Some("syscall".into()),
            label: Some("v2".into()),
            ..Filter::default()
        },
    ];
    for f in &filters {
        let [lite, pg] = stores.each_ref().map(|s| s.list(f).unwrap());
        assert!(!lite.is_empty(), "{f:?}");
        assert_eq!(lite, pg, "{f:?}");
    }
    assert_eq!(stores[1].list(&filters[1]).unwrap().len(), 6);
    assert_eq!(stores[1].list(&filters[2]).unwrap()[0].id, 6);
    let [lite, pg] = stores.each_ref().map(|s| {
        s.case_history("syscall", "null", Some("base"), Some("alpha"), None)
            .unwrap()
    });
    assert_eq!(lite, pg);
    let runs: Vec<i64> = pg.iter().map(|m| m.run_id).collect();
    assert_eq!(runs, [1, 3, 5, 7, 9, 11]);
    assert!(
        pg.iter()
            .all(|m| m.median == 100.25 && m.hostname == "alpha" && m.ci.is_some()),
        "{pg:?}"
    );
    for s in &stores {
        assert_eq!(s.latest_with_label("v1").unwrap(), Some(11));
        assert_eq!(s.latest_with_label("none").unwrap(), None);
        assert_eq!(s.document(12).unwrap().unwrap(), variant(11, "beta"));
        assert_eq!(s.document(13).unwrap(), None);
    }
    assert_eq!(
        stores[0].document_text(4).unwrap(),
        stores[1].document_text(4).unwrap()
    );
}

#[test]
fn concurrent_writers_store_each_document_once() {
    if !have_postgres("concurrent_writers_store_each_document_once") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let url = PathBuf::from(pg.url("127.0.0.1", ""));
    let shared = variant(99, "shared");
    // Four writers on their own connections, all starting on an empty
    // database (so all race to create the schema), each storing ten runs of
    // its own and the one document they all have.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (url, shared) = (url.clone(), shared.clone());
            std::thread::spawn(move || {
                let mut store = Store::open(&url).unwrap();
                let mut shared_result = None;
                for i in 0..10 {
                    store
                        .insert(&variant(t * 10 + i, &format!("w{t}")))
                        .unwrap();
                    if i == 5 {
                        shared_result = Some(store.insert(&shared).unwrap());
                    }
                }
                shared_result.unwrap()
            })
        })
        .collect();
    let results: Vec<Inserted> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let new: Vec<_> = results
        .iter()
        .filter(|r| matches!(r, Inserted::New(_)))
        .collect();
    assert_eq!(new.len(), 1, "{results:?}");
    assert!(results.iter().all(|r| r.id() == new[0].id()), "{results:?}");
    let store = Store::open_existing(&url).unwrap();
    assert_eq!(store.list(&Filter::default()).unwrap().len(), 41);
}

#[test]
fn the_same_document_imported_twice_is_stored_once() {
    if !have_postgres("the_same_document_imported_twice_is_stored_once") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    shared::the_same_document_imported_twice_is_stored_once(&pg.url("127.0.0.1", ""));
}

#[test]
fn tls_is_used_and_checked_as_the_url_asks() {
    if !have_postgres("tls_is_used_and_checked_as_the_url_asks") {
        return;
    }
    // The cluster takes TCP logins only over TLS (hostssl).
    let pg = Cluster::start(Tls::CaSigned);
    let open = |host: &str, query: &str| Store::open(PathBuf::from(pg.url(host, query)));
    open("127.0.0.1", "?sslmode=require").unwrap();
    let root = format!("&sslrootcert={}", pg.cert().display());
    open("localhost", &format!("?sslmode=verify-full{root}")).unwrap();
    open("127.0.0.1", &format!("?sslmode=verify-ca{root}")).unwrap();
    // No TLS: the server refuses (its pg_hba.conf has no entry without it).
    let e = open("127.0.0.1", "?sslmode=disable")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("pg_hba.conf") && !e.contains(PASSWORD), "{e}");
    // The certificate names localhost, not 127.0.0.1.
    let e = open("127.0.0.1", &format!("?sslmode=verify-full{root}"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot connect") && e.contains("certificate"),
        "{e}"
    );
    // A self-signed certificate is no system root.
    let e = open("localhost", "?sslmode=verify-full&sslrootcert=system")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("certificate"), "{e}");
}

/// Runs a quick measurement storing to `url` in a fresh directory; checks
/// that it succeeds, that the warning names `shown` and not the password,
/// says `why`, and that the document is in the file it names.
fn run_is_kept_in_a_file(url: &str, shown: &str, why: &str) {
    let work = tempfile::tempdir().unwrap();
    let (stdout, stderr) = ok(osbench(url)
        .current_dir(work.path())
        .args(["run", "syscall:case=null", "-q", "--label", "kept"])
        .args(QUICK)
        .output()
        .unwrap());
    assert!(stdout.contains("null"), "the table is printed: {stdout}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    assert!(
        stderr.contains(&format!("results store {shown}: cannot connect")) && stderr.contains(why),
        "{stderr}"
    );
    let files: Vec<PathBuf> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap();
    assert!(
        stderr.contains(&format!("it is in ./{name}")) && stderr.contains("osbench import"),
        "{stderr}"
    );
    let doc = read_document(&files[0]).unwrap();
    assert_eq!(doc.run.label.as_deref(), Some("kept"));
}

#[test]
fn an_unreachable_server_names_the_url_and_keeps_the_run() {
    // Needs no PostgreSQL: nothing listens on this port.
    let port = free_port();
    let url = format!("postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/results");
    let shown = format!("postgresql://{USER}@127.0.0.1:{port}/results");
    run_is_kept_in_a_file(&url, &shown, "Connection refused");
    // Commands that only read say what went wrong, and exit 2.
    let out = osbench(&url).arg("history").output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&shown) && !stderr.contains(PASSWORD) && stderr.contains("--store"),
        "{stderr}"
    );
    let out = osbench(&url).args(["compare", "a", "b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A URL the client cannot use is refused by name.
    let out = osbench(format!("{url}?sslmode=always"))
        .arg("history")
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("sslmode=always is not one of"), "{stderr}");
}

#[test]
fn a_refused_login_names_the_url_and_keeps_the_run() {
    if !have_postgres("a_refused_login_names_the_url_and_keeps_the_run") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let url = pg.url("127.0.0.1", "").replace(PASSWORD, "wrong-password");
    run_is_kept_in_a_file(&url, &pg.shown(), "password authentication failed");
}

/// A loopback listener that accepts connections and never answers; each
/// accepted connection is reported on the channel.
fn silent_server() -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (port, rx)
}

/// Waits up to `limit` for `child`; kills it (and returns `None`) if it is still running.
fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// What a child wrote to its (piped) standard error.
fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn interrupt(child: &Child) {
    // SAFETY: kill has no memory-safety preconditions; the child is ours and not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

#[test]
fn a_server_that_never_answers_is_given_up_in_time_or_at_ctrl_c() {
    // Needs no PostgreSQL: a listener that accepts and never speaks.
    let (port, accepted) = silent_server();
    let url = |query: &str| format!("postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/db{query}");
    let shown = format!("postgresql://{USER}@127.0.0.1:{port}/db");

    // The default handshake limit (10 s) ends a reading command: status 2.
    let mut history = osbench(url(""))
        .arg("history")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut history, Duration::from_secs(60)).expect("history hung");
    let stderr = stderr_of(&mut history);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "results store {shown}: the server did not answer within 10 s (connect_timeout)"
        )) && !stderr.contains(PASSWORD),
        "{stderr}"
    );

    // The store is opened while the run measures: a silent server (its
    // connect timeout 120 s) delays no sample; the run is measured and its
    // --json written while the store still does not answer. Ctrl-C then
    // ends the wait at once.
    let work = tempfile::tempdir().unwrap();
    let json = work.path().join("out.json");
    while accepted.try_recv().is_ok() {}
    let mut run = osbench(url("?connect_timeout=120"))
        .current_dir(work.path())
        .args(["run", "syscall:case=null", "-q", "--json"])
        .arg(&json)
        .args(QUICK)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    accepted
        .recv_timeout(Duration::from_secs(60))
        .expect("osbench connected");
    crate::common::wait_until("the run measured, the store silent", || {
        json.exists().then_some(())
    });
    assert!(
        run.try_wait().unwrap().is_none(),
        "still waiting for the store"
    );
    interrupt(&run);
    let status = exit_within(&mut run, Duration::from_secs(20)).expect("Ctrl-C was ignored");
    let stderr = stderr_of(&mut run);
    assert_eq!(status.code(), Some(130), "{stderr}");
    let doc = osbench::store::read_document(&json).unwrap();
    assert!(doc.run.complete, "{stderr}");
    assert!(stderr.contains("it is in"), "{stderr}");

    // The URL's connect_timeout is the limit; the run is kept in a file.
    let work = tempfile::tempdir().unwrap();
    let mut run = osbench(url("?connect_timeout=1"))
        .current_dir(work.path())
        .args(["run", "syscall:case=null", "-q", "--label", "kept"])
        .args(QUICK)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut run, Duration::from_secs(60)).expect("run hung");
    let stderr = stderr_of(&mut run);
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("did not answer within 1 s (connect_timeout)")
            && stderr.contains("it is in ./osbench-"),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(work.path()).unwrap().count(), 1);
}

#[test]
fn a_server_stopped_mid_run_keeps_the_run_in_its_file_and_ctrl_c_ends_the_wait() {
    if !have_postgres("a_server_stopped_mid_run_keeps_the_run_in_its_file_and_ctrl_c_ends_the_wait")
    {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let pid_file = fs::read_to_string(pg.data().join("postmaster.pid")).unwrap();
    let postmaster = pid_file.lines().next().unwrap().trim().to_string();
    let stopped = Stopped(vec![postmaster.parse().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    // The store is opened before measuring; a set-up stops the postmaster
    // while measuring; the limit (120 s) is far away: only Ctrl-C ends the wait.
    let mut run = osbench(pg.url("127.0.0.1", "?connect_timeout=120"))
        .args(["run", "syscall:case=null", "-q", "--rounds", "2", "--json"])
        .arg(&json)
        .args(QUICK)
        .args([
            "--config",
            &format!("a=kill -STOP {postmaster}"),
            "--config",
            "b=true",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The document is written before the store is tried.
    let start = Instant::now();
    while !json.exists() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(json.exists(), "--json was not written before the store");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        run.try_wait().unwrap().is_none(),
        "it waits for the stopped server"
    );
    interrupt(&run);
    let status = exit_within(&mut run, Duration::from_secs(20)).expect("Ctrl-C was ignored");
    let stderr = stderr_of(&mut run);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the run is not in the results store (interrupted by a signal); it is in {}",
            json.display()
        )) && stderr.contains("stopped while storing the run"),
        "{stderr}"
    );
    assert!(read_document(&json).unwrap().run.complete);
    drop(stopped);
    let (history, _) = ok(osbench(pg.url("127.0.0.1", ""))
        .arg("history")
        .output()
        .unwrap());
    assert!(history.contains("No stored run matches"), "{history}");
}

#[test]
fn a_statement_to_a_stopped_server_is_given_up_at_its_limit() {
    if !have_postgres("a_statement_to_a_stopped_server_is_given_up_at_its_limit") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    // statement_timeout 1 s (the URL's options): a statement is waited for 1 + 5 s.
    let url = pg.url("127.0.0.1", "?options=-c%20statement_timeout%3D1000");
    let store = Store::open(PathBuf::from(&url)).unwrap();
    let stopped = pg.stop(true);
    let e = store.list(&Filter::default()).unwrap_err().to_string();
    assert!(
        e.contains(&format!("results store {}", pg.shown()))
            && e.contains("did not answer within 6 s (statement_timeout"),
        "{e}"
    );
    // Given up: not waited for again.
    let again = store.list(&Filter::default()).unwrap_err().to_string();
    assert_eq!(again, e);
    drop(stopped);
    drop(store);
    // Without a statement_timeout of the server's own, osbench sets one.
    let mut store = Store::open(PathBuf::from(pg.url("127.0.0.1", ""))).unwrap();
    assert_eq!(store.insert(&variant(1, "h")).unwrap(), Inserted::New(1));
}

#[test]
fn a_password_with_a_slash_and_a_question_mark_never_shows() {
    if !have_postgres("a_password_with_a_slash_and_a_question_mark_never_shows") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    // As base64 passwords are, unencoded in the URL (the client takes it so).
    let password = "ab/cd?ef+gh";
    pg.sql(&format!("CREATE ROLE slash LOGIN PASSWORD '{password}'"));
    pg.sql("CREATE DATABASE slashdb OWNER slash");
    let url = |db: &str| format!("postgresql://slash:{password}@127.0.0.1:{}/{db}", pg.port);
    let shown = |db: &str| format!("postgresql://slash@127.0.0.1:{}/{db}", pg.port);
    let (stdout, stderr) = ok(osbench(url("slashdb"))
        .args(["run", "syscall:case=null"])
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains(&format!("saved as run 1 in {}", shown("slashdb"))),
        "{stderr}"
    );
    let leaks = |text: &str| ["ab/cd", "cd?ef", "ef+gh"].iter().any(|p| text.contains(p));
    assert!(!leaks(&stdout) && !leaks(&stderr), "{stdout}{stderr}");
    // In errors and warnings too.
    let out = osbench(url("nodb")).arg("history").output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&shown("nodb")) && !leaks(&stderr),
        "{stderr}"
    );
    let work = tempfile::tempdir().unwrap();
    let (_, stderr) = ok(osbench(url("nodb"))
        .current_dir(work.path())
        .args(["run", "syscall:case=null", "-q"])
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains(&format!("results store {}: cannot connect", shown("nodb")))
            && !leaks(&stderr),
        "{stderr}"
    );
}

#[test]
fn a_self_signed_server_certificate_given_as_the_root_is_accepted() {
    if !have_postgres("a_self_signed_server_certificate_given_as_the_root_is_accepted") {
        return;
    }
    let pg = Cluster::start(Tls::SelfSigned);
    let open = |host: &str, query: &str| Store::open(PathBuf::from(pg.url(host, query)));
    let root = format!("&sslrootcert={}", pg.cert().display());
    open("127.0.0.1", &format!("?sslmode=verify-ca{root}")).unwrap();
    // Its common name is checked (it has no alternative names), as libpq does.
    open("localhost", &format!("?sslmode=verify-full{root}")).unwrap();
    let e = open("127.0.0.1", &format!("?sslmode=verify-full{root}"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot connect") && e.contains("not valid for name"),
        "{e}"
    );
    // Not in the roots: refused, saying what to do.
    let e = open("localhost", "?sslmode=verify-ca&sslrootcert=system")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("self-signed?") && e.contains("give that very certificate as sslrootcert"),
        "{e}"
    );
}

#[test]
fn a_foreign_osbench_schema_table_is_left_as_it_was() {
    if !have_postgres("a_foreign_osbench_schema_table_is_left_as_it_was") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    pg.sql("CREATE TABLE osbench_schema (version BIGINT, note TEXT)");
    pg.sql("INSERT INTO osbench_schema VALUES (0, 'keep me'), (0, 'and me')");
    let e = Store::open(PathBuf::from(pg.url("127.0.0.1", "")))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("osbench_schema (version bigint, note text) is not osbench's"),
        "{e}"
    );
    assert_eq!(pg.sql("SELECT count(*) FROM osbench_schema").trim(), "2");
    assert_eq!(pg.sql("SELECT to_regclass('runs') IS NULL").trim(), "t");
}

/// Removing and relabelling runs, the experiment in a case's history and
/// `--min-samples`, on `store` (either back end): five runs, run 5 of
/// another experiment whose configurations carry the same names.
fn keeps_a_clean_history(store: &mut Store) {
    for i in 1..=4 {
        let mut doc = variant(i, "alpha");
        if i == 2 {
            // A quick one-sample try.
            doc.series.iter_mut().for_each(|s| s.summary.n = 1);
        }
        assert_eq!(store.insert(&doc).unwrap(), Inserted::New(i as i64));
    }
    let mut other = variant(5, "alpha");
    other.run.configs[1].setup = Some("echo 0 > /sys/unrelated".into());
    assert_eq!(store.insert(&other).unwrap(), Inserted::New(5));
    let history = |store: &Store, min: Option<i64>| {
        let runs = store
            .case_history("syscall", "null", Some("base"), None, min)
            .unwrap();
        osbench::compare::history::case_histories("syscall", "null", runs, None)
    };
    // Two experiments: two histories of configuration `base`, not one.
    let h = history(store, None);
    assert_eq!(h.len(), 2, "{h:?}");
    assert_eq!(h[0].runs.len(), 4);
    assert_eq!(h[1].runs.iter().map(|r| r.run_id).collect::<Vec<_>>(), [5]);
    let experiment = |i: usize| h[i].experiment.clone().unwrap();
    assert!(
        experiment(0).starts_with("base,patched, \"v2\" #"),
        "{}",
        experiment(0)
    );
    assert_ne!(experiment(0), experiment(1));
    // --min-samples 2 leaves the one-sample run out of the history and the list.
    let h = history(store, Some(2));
    assert_eq!(
        h[0].runs.iter().map(|r| r.run_id).collect::<Vec<_>>(),
        [1, 3, 4]
    );
    let ids = |store: &Store, f: &Filter| -> Vec<i64> {
        store.list(f).unwrap().iter().map(|r| r.id).collect()
    };
    let enough = Filter {
        min_samples: Some(2),
        ..Filter::default()
    };
    assert_eq!(ids(store, &enough), [1, 3, 4, 5]);
    // Removing: all or none.
    assert!(store.remove(&[3, 99]).is_err());
    assert_eq!(ids(store, &Filter::default()), [1, 2, 3, 4, 5]);
    store.remove(&[2, 4]).unwrap();
    assert_eq!(ids(store, &Filter::default()), [1, 3, 5]);
    assert_eq!(store.document(2).unwrap(), None);
    assert_eq!(history(store, None)[0].runs.len(), 2);
    // Relabelling: the list, the label lookup and the document agree.
    store.relabel(3, Some("kept")).unwrap();
    assert_eq!(store.latest_with_label("kept").unwrap(), Some(3));
    assert_eq!(
        store.document(3).unwrap().unwrap().run.label.as_deref(),
        Some("kept")
    );
    let kept = Filter {
        label: Some("kept".into()),
        ..Filter::default()
    };
    assert_eq!(ids(store, &kept), [3]);
    assert!(store.relabel(2, Some("x")).is_err(), "run 2 is gone");
}

#[test]
fn runs_are_removed_and_relabelled_alike_in_both_back_ends() {
    let dir = tempfile::tempdir().unwrap();
    keeps_a_clean_history(&mut Store::open(dir.path().join("results.sqlite")).unwrap());
    if !have_postgres("runs_are_removed_and_relabelled_alike_in_both_back_ends") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let url = pg.url("127.0.0.1", "");
    keeps_a_clean_history(&mut Store::open(PathBuf::from(&url)).unwrap());
    // The commands, on the server's store: asked for --yes off a terminal.
    let refused = osbench(&url).args(["rm", "1"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(stderr.contains("give --yes"), "{stderr}");
    ok(osbench(&url)
        .args(["relabel", "1", "first", "--yes"])
        .output()
        .unwrap());
    ok(osbench(&url)
        .args(["rm", "first", "5", "--yes"])
        .output()
        .unwrap());
    let store = Store::open_existing(PathBuf::from(&url)).unwrap();
    let left: Vec<i64> = store
        .list(&Filter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left, [3]);
}

/// The two SQL blocks of the guide's "Dashboards" section (Grafana's panel and
/// annotation queries), with `$__timeFilter(X)` expanded to November 2026.
fn readme_queries() -> [String; 2] {
    let guide = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/nightly-regressions.md"
    );
    let readme = fs::read_to_string(guide).unwrap();
    let section = readme
        .split_once("## Dashboards: the `osbench_results` view")
        .expect("the guide has the Dashboards section")
        .1;
    let blocks: Vec<String> = section
        .split("```sql\n")
        .skip(1)
        .take(2)
        .map(|b| b.split_once("```").unwrap().0.to_string())
        .collect();
    let expand = |sql: &str| {
        let mut sql = sql.to_string();
        while let Some(at) = sql.find("$__timeFilter(") {
            let end = at + sql[at..].find(')').unwrap();
            let column = sql[at + "$__timeFilter(".len()..end].to_string();
            sql.replace_range(
                at..=end,
                &format!("{column} BETWEEN '2026-11-01T00:00:00Z' AND '2026-11-30T23:59:59Z'"),
            );
        }
        sql
    };
    [expand(&blocks[0]), expand(&blocks[1])]
}

/// Twelve runs on two hosts with `--meta commit`, and one recorded change point.
fn nightly_store(store: &mut Store) {
    for i in 0..12 {
        let mut doc = variant(i, ["alpha", "beta"][i % 2]);
        doc.run.meta.insert("commit".into(), format!("c{i:02}"));
        store.insert(&doc).unwrap();
    }
    let point = osbench::store::FoundPoint {
        key: osbench::document::CaseKey::new("syscall", "null", "base"),
        host: "alpha".into(),
        unit: "ns".into(),
        run_id: 9,
        before_run_id: 7,
        before_median: 100.0,
        after_median: 110.0,
        relative: 0.1,
        p_value: 0.01,
        direction: osbench::document::Direction::Slower,
    };
    store.record_change_point(&point).unwrap();
}

#[test]
fn the_results_view_answers_the_readme_queries_in_both_back_ends() {
    let [panel, annotations] = readme_queries();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    nightly_store(&mut Store::open(&path).unwrap());
    // SQLite: every column but the time as text, '|' between them (as psql -A prints).
    let lite = rusqlite::Connection::open(&path).unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut st = lite.prepare(sql).unwrap();
        let columns = st.column_count();
        st.query_map([], |r| {
            let cells: Vec<String> = (1..columns)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    other => String::from_utf8_lossy(other.as_bytes().unwrap()).into_owned(),
                })
                .collect();
            Ok(cells.join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let lite_panel = rows(&panel);
    assert_eq!(
        lite_panel.len(),
        24,
        "two syscall series a run: {lite_panel:?}"
    );
    assert_eq!(lite_panel[0], "alpha null [base]|100.25");
    let lite_notes = rows(&annotations);
    assert_eq!(
        lite_notes,
        ["change point 1: slower syscall null on alpha (new)"]
    );
    let meta: String = lite
        .query_row(
            "SELECT json_extract(meta, '$.commit') FROM osbench_results WHERE run_id = 3 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(meta, "c02");

    if !have_postgres("the_results_view_answers_the_readme_queries_in_both_back_ends") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    nightly_store(&mut Store::open(PathBuf::from(pg.url("127.0.0.1", ""))).unwrap());
    let rest = |sql: &str| -> Vec<String> {
        pg.sql(sql)
            .lines()
            .map(|l| l.split_once('|').unwrap().1.to_string())
            .collect()
    };
    assert_eq!(rest(&panel), lite_panel);
    assert_eq!(rest(&annotations), lite_notes);
    assert_eq!(
        pg.sql("SELECT pg_typeof(started), pg_typeof(meta), meta->>'commit' FROM osbench_results WHERE run_id = 3 LIMIT 1"),
        "timestamp with time zone|jsonb|c02\n"
    );
    assert_eq!(
        pg.sql("SELECT started FROM osbench_results WHERE run_id = 1 LIMIT 1"),
        "2026-11-01 09:00:00+00\n"
    );
}

#[test]
fn a_version_4_postgresql_store_is_migrated() {
    if !have_postgres("a_version_4_postgresql_store_is_migrated") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let url = PathBuf::from(pg.url("127.0.0.1", ""));
    let mut doc = variant(0, "alpha");
    doc.run.meta.insert("commit".into(), "ab12".into());
    Store::open(url.clone()).unwrap().insert(&doc).unwrap();
    // As osbench before --meta left it.
    pg.sql(
        "DROP VIEW osbench_results; DROP TABLE change_points; DROP TABLE run_meta;
         DROP TABLE jobs; DROP TABLE workers; UPDATE osbench_schema SET version = 4",
    );
    let store = Store::open(url).unwrap();
    let rows = store.list(&Filter::default()).unwrap();
    assert_eq!(rows[0].meta.get("commit").map(String::as_str), Some("ab12"));
    assert_eq!(
        pg.sql("SELECT version FROM osbench_schema"),
        format!("{}\n", osbench::store::SCHEMA_VERSION)
    );
    assert_eq!(pg.sql("SELECT count(*) FROM change_points"), "0\n");
    assert_eq!(pg.sql("SELECT count(*) FROM osbench_results"), "4\n");
}

#[test]
fn the_regression_sweep_records_and_dismisses_in_postgresql() {
    if !have_postgres("the_regression_sweep_records_and_dismisses_in_postgresql") {
        return;
    }
    let pg = Cluster::start(Tls::Off);
    let url = pg.url("127.0.0.1", "");
    let mut store = Store::open(PathBuf::from(&url)).unwrap();
    // Twelve nights of host alpha with their commits.
    for i in 0..12 {
        let mut doc = variant(i, "alpha");
        doc.run
            .meta
            .insert("commit".into(), format!("c{:02}", i + 1));
        store.insert(&doc).unwrap();
    }
    drop(store);
    // syscall null [base]'s indexed medians: 10 % slower from night 8 (the
    // documents stay as they were: the environment diff reads them).
    pg.sql(
        "UPDATE series SET median = (CASE WHEN run_id >= 8 THEN 110 ELSE 100 END)
             + (run_id % 3) * 0.1
         WHERE bench = 'syscall' AND config = 'base'",
    );
    let sweep = || {
        osbench(&url)
            .args([
                "regressions",
                "--last",
                "2",
                "--bench",
                "syscall",
                "--csv",
                "-",
            ])
            .output()
            .unwrap()
    };
    let out = sweep();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{csv}");
    assert!(
        rows[0].starts_with("1,syscall,null,base,alpha,ns,slower,"),
        "{csv}"
    );
    assert!(
        rows[0].contains(",c01,c07,") && rows[0].contains(",c08,c12,"),
        "{csv}"
    );
    assert_eq!(
        pg.sql("SELECT id, state, run_id FROM change_points"),
        "1|new|8\n"
    );
    ok(osbench(&url)
        .args(["regressions", "--expect", "1"])
        .output()
        .unwrap());
    assert_eq!(pg.sql("SELECT state FROM change_points"), "expected\n");
    let out = sweep();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
}

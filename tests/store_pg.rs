//! The PostgreSQL results store against a real server: each test that needs
//! one starts its own throwaway cluster (Debian's `postgresql` package:
//! `initdb` and `pg_ctl` from /usr/lib/postgresql/*/bin, run as the
//! `postgres` user when this is root) in a temporary directory on a loopback
//! port, and stops it when the test ends ([`Cluster`]'s Drop), so nothing is
//! left running. Covered: run → store → history → compare by label →
//! export, the same bytes as through SQLite; the two back ends answering
//! alike; concurrent writers (and one document written by all of them at
//! once); one document imported twice; TLS modes; an unreachable server and a
//! refused login, which name the URL without its password and keep the run
//! in a file. Without PostgreSQL these tests say so and pass, unless
//! `OSBENCH_REQUIRE_PG=1` (CI), where they fail.

mod common;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::ok;
use osbench::document::Document;
use osbench::store::{Filter, Inserted, Store, read_document};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

/// The cluster's superuser and its password (shown nowhere by osbench).
const USER: &str = "osbench";
const PASSWORD: &str = "s3cret-pw";

/// A PostgreSQL cluster of this test's own, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

/// PostgreSQL's server programs, the newest version installed.
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    dirs.sort_by_key(|d| {
        let version = d.parent().and_then(|v| v.file_name()).unwrap_or_default();
        version.to_string_lossy().parse::<u32>().unwrap_or(0)
    });
    dirs.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The uid and gid of the `postgres` user (from /etc/passwd).
fn postgres_user() -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("postgres:"))?;
    let fields: Vec<&str> = line.split(':').collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
}

/// Why this machine cannot start a cluster, if it cannot.
fn missing() -> Option<String> {
    if pg_bin().is_none() {
        return Some("no PostgreSQL server (apt-get install postgresql)".into());
    }
    if is_root() && postgres_user().is_none() {
        return Some("root, and no 'postgres' user to run the server as".into());
    }
    None
}

/// Whether `test` can go on; prints why not, and fails under `OSBENCH_REQUIRE_PG=1`.
fn have_postgres(test: &str) -> bool {
    let Some(why) = missing() else {
        return true;
    };
    let required = std::env::var("OSBENCH_REQUIRE_PG").is_ok_and(|v| v == "1");
    assert!(!required, "OSBENCH_REQUIRE_PG=1 but {why}");
    eprintln!("{test}: skipped: {why}");
    false
}

/// A loopback port nothing listens on (just now).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Cluster {
    /// Creates and starts a cluster: password logins over TCP on 127.0.0.1,
    /// only over TLS when `tls` (with a self-signed certificate for
    /// `localhost`, in [`Cluster::cert`]).
    fn start(tls: bool) -> Self {
        let bin = pg_bin().expect("checked by have_postgres");
        // The postgres user must reach it: under /tmp, whatever TMPDIR says, when root.
        let dir = match is_root() {
            true => tempfile::tempdir_in("/tmp"),
            false => tempfile::tempdir(),
        }
        .unwrap();
        let pw = dir.path().join("pw");
        fs::write(&pw, PASSWORD).unwrap();
        let cluster = Cluster { dir, bin, port: 0 };
        cluster.chown(&[cluster.dir.path(), &pw]);
        let data = cluster.data();
        cluster.as_owner("initdb", |c| {
            c.arg("-D")
                .arg(&data)
                .args(["-U", USER, "--pwfile"])
                .arg(&pw);
            c.args(["-A", "scram-sha-256", "--no-sync", "--no-instructions"]);
        });
        let mut options = format!(
            "-c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            cluster.dir.path().display()
        );
        let hba = if tls {
            cluster.make_certificate();
            options += &format!(
                " -c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key",
                cluster.dir.path().display()
            );
            "hostssl all all 127.0.0.1/32 scram-sha-256\n"
        } else {
            "host all all 127.0.0.1/32 scram-sha-256\n"
        };
        fs::write(
            data.join("pg_hba.conf"),
            format!("local all all trust\n{hba}"),
        )
        .unwrap();
        cluster.listen(options)
    }

    /// Starts the server on a free port (another, if that one was taken meanwhile).
    fn listen(mut self, options: String) -> Self {
        let data = self.data();
        let log = self.dir.path().join("log");
        for _ in 0..5 {
            self.port = free_port();
            let started = self.try_as_owner("pg_ctl", |c| {
                c.arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(&log)
                    .args(["-w", "-o"]);
                c.arg(format!("{options} -p {}", self.port)).arg("start");
            });
            if started {
                return self;
            }
        }
        panic!(
            "PostgreSQL did not start: {}",
            fs::read_to_string(&log).unwrap_or_default()
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A certificate authority (ca.crt, [`Cluster::cert`]) and a certificate
    /// it signed for localhost (server.crt, server.key), by the openssl command.
    fn make_certificate(&self) {
        let path = |name: &str| self.dir.path().join(name);
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                ])
                .args(args)
                .current_dir(self.dir.path())
                .output()
                .expect("the openssl command (Debian's openssl package)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "-subj",
            "/CN=osbench test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ]);
        openssl(&[
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
            "-keyout",
            "server.key",
            "-out",
            "server.crt",
        ]);
        let key = self.dir.path().join("server.key");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        self.chown(&[&key, &path("server.crt")]);
    }

    /// The certificate authority's certificate (the root to trust).
    fn cert(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// Gives `paths` to the postgres user (when this is root; the server will not run as root).
    fn chown(&self, paths: &[&Path]) {
        if let (true, Some((uid, gid))) = (is_root(), postgres_user()) {
            for p in paths {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
    }

    /// Runs a server program as the cluster's owner; whether it succeeded.
    fn try_as_owner(&self, program: &str, args: impl FnOnce(&mut Command)) -> bool {
        let path = self.bin.join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        args(&mut cmd);
        let out = cmd.current_dir(self.dir.path()).output().unwrap();
        if !out.status.success() {
            eprintln!("{program}: {}", String::from_utf8_lossy(&out.stderr));
        }
        out.status.success()
    }

    fn as_owner(&self, program: &str, args: impl FnOnce(&mut Command)) {
        assert!(self.try_as_owner(program, args), "{program} failed");
    }

    /// The URL of database `postgres` with the password and `query` (e.g. "?sslmode=require").
    fn url(&self, host: &str, query: &str) -> String {
        format!(
            "postgresql://{USER}:{PASSWORD}@{host}:{}/postgres{query}",
            self.port
        )
    }

    /// The URL as osbench shows it.
    fn shown(&self) -> String {
        format!("postgresql://{USER}@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            eprintln!("PostgreSQL's log:\n{log}");
        }
        if self.port != 0 {
            let data = self.data();
            self.try_as_owner("pg_ctl", |c| {
                c.arg("-D")
                    .arg(&data)
                    .args(["-m", "immediate", "-w", "stop"]);
            });
        }
    }
}

/// osbench with its store at `store` (a path or URL) and nothing else to find one.
fn osbench(store: &str) -> Command {
    let mut cmd = common::osbench_at(store);
    cmd.env_remove("PGPASSWORD");
    cmd
}

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
    let pg = Cluster::start(false);
    let url = pg.url("127.0.0.1", "");
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.json");
    let (_, stderr) = ok(osbench(&url)
        .args(["run", "syscall:case=null", "--label", "before", "--json"])
        .arg(&before)
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains(&format!("saved as run 1 in {}", pg.shown())),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    // `time` saves there too.
    ok(osbench(&url)
        .args([
            "time", "--label", "timed", "-q", "--runs", "3", "--warmup", "0", "true",
        ])
        .output()
        .unwrap());
    ok(osbench(&url)
        .args(["run", "syscall:case=null", "--label", "after", "-q"])
        .args(QUICK)
        .output()
        .unwrap());

    let (history, _) = ok(osbench(&url).arg("history").output().unwrap());
    assert_eq!(history.lines().count(), 4, "{history}");
    let host = osbench::env::capture().hostname;
    let (mine, _) = ok(osbench(&url)
        .args(["history", "--bench", "syscall", "--host", &host])
        .output()
        .unwrap());
    assert_eq!(mine.lines().count(), 3, "{mine}");
    let (none, _) = ok(osbench(&url)
        .args(["history", "--host", "elsewhere"])
        .output()
        .unwrap());
    assert!(none.contains("No stored run matches"), "{none}");

    let (compared, _) = ok(osbench(&url)
        .args(["compare", "before", "after"])
        .output()
        .unwrap());
    assert!(
        compared.contains("A = before (run 1) (baseline)")
            && compared.contains("B = after (run 3)")
            && compared.contains("syscall null"),
        "{compared}"
    );
    let html = dir.path().join("r.html");
    ok(osbench(&url)
        .args(["report", "before", "3", "--html"])
        .arg(&html)
        .output()
        .unwrap());
    assert!(
        fs::read_to_string(&html)
            .unwrap()
            .contains("before (run 1)")
    );

    // Exported from PostgreSQL and from SQLite (after an import): the same bytes.
    let from_pg = dir.path().join("pg.json");
    ok(osbench(&url)
        .args(["export", "before", "--json"])
        .arg(&from_pg)
        .output()
        .unwrap());
    let lite = dir.path().join("results.sqlite");
    let lite = lite.to_str().unwrap();
    ok(osbench(lite).arg("import").arg(&before).output().unwrap());
    let from_lite = dir.path().join("lite.json");
    ok(osbench(lite)
        .args(["export", "before", "--json"])
        .arg(&from_lite)
        .output()
        .unwrap());
    let bytes = fs::read(&from_pg).unwrap();
    assert_eq!(bytes, fs::read(&from_lite).unwrap());
    assert_eq!(bytes, fs::read(&before).unwrap());
}

#[test]
fn both_back_ends_answer_alike() {
    if !have_postgres("both_back_ends_answer_alike") {
        return;
    }
    let pg = Cluster::start(false);
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
                doc.series.retain(|s| s.bench == "wakeup");
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
        s.case_history("syscall", "null", Some("base"), Some("alpha"))
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
    let pg = Cluster::start(false);
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
    let pg = Cluster::start(false);
    let url = pg.url("127.0.0.1", "");
    let dir = tempfile::tempdir().unwrap();
    // The same document, written compactly.
    let compact = dir.path().join("compact.json");
    let value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(FIXTURE).unwrap()).unwrap();
    fs::write(&compact, value.to_string()).unwrap();
    let (first, _) = ok(osbench(&url).arg("import").arg(FIXTURE).output().unwrap());
    assert!(first.contains("stored as run 1"), "{first}");
    let (again, _) = ok(osbench(&url)
        .arg("import")
        .arg(FIXTURE)
        .arg(&compact)
        .output()
        .unwrap());
    assert_eq!(
        again.matches("already stored as run 1").count(),
        2,
        "{again}"
    );
    // One import: one transaction; the same document twice in it is stored once.
    let other = dir.path().join("other.json");
    let mut relabelled = value.clone();
    relabelled["run"]["label"] = "other".into();
    fs::write(&other, relabelled.to_string()).unwrap();
    let (both, _) = ok(osbench(&url)
        .arg("import")
        .arg(&other)
        .arg(&other)
        .output()
        .unwrap());
    assert!(
        both.contains("stored as run 2 'other'")
            && both.contains("already stored as run 2 'other'"),
        "{both}"
    );
    let (history, _) = ok(osbench(&url).arg("history").output().unwrap());
    assert_eq!(history.lines().count(), 3, "{history}");
    // Stored as written.
    let text = Store::open(PathBuf::from(&url))
        .unwrap()
        .document_text(1)
        .unwrap();
    assert_eq!(text.unwrap(), fs::read_to_string(FIXTURE).unwrap());
}

#[test]
fn tls_is_used_and_checked_as_the_url_asks() {
    if !have_postgres("tls_is_used_and_checked_as_the_url_asks") {
        return;
    }
    // The cluster takes TCP logins only over TLS (hostssl).
    let pg = Cluster::start(true);
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
    let out = osbench(&format!("{url}?sslmode=always"))
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
    let pg = Cluster::start(false);
    let url = pg.url("127.0.0.1", "").replace(PASSWORD, "wrong-password");
    run_is_kept_in_a_file(&url, &pg.shown(), "password authentication failed");
}

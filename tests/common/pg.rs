//! A throwaway PostgreSQL cluster for the tests that need a server
//! (store_pg, queue): Debian's `postgresql` package (`initdb`, `pg_ctl` from
//! /usr/lib/postgresql/*/bin, run as the `postgres` user when this is root)
//! in a temporary directory on a loopback port, stopped when dropped
//! ([`Cluster`]), with a superuser and password of its own. Left out: any
//! server of the machine's own.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The cluster's superuser and its password (shown nowhere by osbench).
pub const USER: &str = "osbench";
pub const PASSWORD: &str = "s3cret-pw";

/// A PostgreSQL cluster of this test's own, stopped when dropped.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub bin: PathBuf,
    pub port: u16,
    /// The server's options (`-c …`), to start it again on the same port.
    pub options: String,
}

/// PostgreSQL's server programs, the newest version installed.
pub fn pg_bin() -> Option<PathBuf> {
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

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The uid and gid of the `postgres` user (from /etc/passwd).
pub fn postgres_user() -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("postgres:"))?;
    let fields: Vec<&str> = line.split(':').collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
}

/// Why this machine cannot start a cluster, if it cannot.
pub fn missing() -> Option<String> {
    if pg_bin().is_none() {
        return Some("no PostgreSQL server (apt-get install postgresql)".into());
    }
    if is_root() && postgres_user().is_none() {
        return Some("root, and no 'postgres' user to run the server as".into());
    }
    None
}

/// Whether `test` can go on; prints why not, and fails under `OSBENCH_REQUIRE_PG=1`.
pub fn have_postgres(test: &str) -> bool {
    let Some(why) = missing() else {
        return true;
    };
    let required = std::env::var("OSBENCH_REQUIRE_PG").is_ok_and(|v| v == "1");
    assert!(!required, "OSBENCH_REQUIRE_PG=1 but {why}");
    eprintln!("{test}: skipped: {why}");
    false
}

/// A loopback port nothing listens on (just now).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// How a cluster takes TCP logins.
#[derive(Clone, Copy, PartialEq)]
pub enum Tls {
    /// Without TLS.
    Off,
    /// Only over TLS, with a certificate for `localhost` signed by a CA of its own.
    CaSigned,
    /// Only over TLS, with a self-signed certificate made by the PostgreSQL
    /// documentation's recipe (`CN=localhost`, a CA certificate, no alternative names).
    SelfSigned,
}

impl Cluster {
    /// Creates and starts a cluster: password logins over TCP on 127.0.0.1,
    /// over TLS as `tls` says (the root to trust in [`Cluster::cert`]).
    pub fn start(tls: Tls) -> Self {
        let bin = pg_bin().expect("checked by have_postgres");
        // The postgres user must reach it: under /tmp, whatever TMPDIR says, when root.
        let dir = match is_root() {
            true => tempfile::tempdir_in("/tmp"),
            false => tempfile::tempdir(),
        }
        .unwrap();
        let pw = dir.path().join("pw");
        fs::write(&pw, PASSWORD).unwrap();
        let cluster = Cluster {
            dir,
            bin,
            port: 0,
            options: String::new(),
        };
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
        let hba = if tls != Tls::Off {
            cluster.make_certificate(tls);
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
    pub fn listen(mut self, options: String) -> Self {
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
                self.options = options;
                return self;
            }
        }
        panic!(
            "PostgreSQL did not start: {}",
            fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the server (fast shutdown: connections are cut).
    pub fn halt(&self) {
        let data = self.data();
        self.as_owner("pg_ctl", |c| {
            c.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]);
        });
    }

    /// Starts the halted server again on its port.
    pub fn resume(&self) {
        let data = self.data();
        let log = self.dir.path().join("log");
        self.as_owner("pg_ctl", |c| {
            c.arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .args(["-w", "-o"]);
            c.arg(format!("{} -p {}", self.options, self.port))
                .arg("start");
        });
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's certificate (server.crt, server.key), by the openssl
    /// command: signed by a certificate authority of its own (ca.crt), or
    /// self-signed.
    pub fn make_certificate(&self, tls: Tls) {
        let path = |name: &str| self.dir.path().join(name);
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(["req", "-x509", "-nodes", "-days", "1"])
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
        if tls == Tls::SelfSigned {
            // https://www.postgresql.org/docs/current/ssl-tcp.html#SSL-CERTIFICATE-CREATION
            openssl(&[
                "-new",
                "-text",
                "-subj",
                "/CN=localhost",
                "-keyout",
                "server.key",
                "-out",
                "server.crt",
            ]);
            fs::copy(path("server.crt"), path("ca.crt")).unwrap();
        } else {
            openssl(&[
                "-newkey",
                "rsa:2048",
                "-subj",
                "/CN=osbench test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
            ]);
            openssl(&[
                "-newkey",
                "rsa:2048",
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
        }
        let key = self.dir.path().join("server.key");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        self.chown(&[&key, &path("server.crt")]);
    }

    /// The certificate to trust: the certificate authority's, or the
    /// self-signed server certificate itself.
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// Runs `sql` with psql as the superuser over the cluster's Unix socket;
    /// its output (unaligned, tuples only).
    pub fn sql(&self, sql: &str) -> String {
        let psql = self.bin.join("psql");
        let out = Command::new(psql)
            .arg("-h")
            .arg(self.dir.path())
            .args(["-p", &self.port.to_string(), "-U", USER, "-d", "postgres"])
            .args(["-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("psql (Debian's postgresql-client, which postgresql depends on)");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Stops (SIGSTOP) the server's processes, the postmaster first, then
    /// (`all`) every child it has now; they go on when the guard is dropped.
    pub fn stop(&self, all: bool) -> Stopped {
        let pid_file = fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        let postmaster: i32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        let mut pids = vec![postmaster];
        if all {
            pids.extend(children(postmaster));
        }
        for &pid in &pids {
            // SAFETY: kill has no memory-safety preconditions; `pid` is the cluster's.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
        }
        Stopped(pids)
    }

    /// Gives `paths` to the postgres user (when this is root; the server will not run as root).
    pub fn chown(&self, paths: &[&Path]) {
        if let (true, Some((uid, gid))) = (is_root(), postgres_user()) {
            for p in paths {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
    }

    /// Runs a server program as the cluster's owner; whether it succeeded.
    pub fn try_as_owner(&self, program: &str, args: impl FnOnce(&mut Command)) -> bool {
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

    pub fn as_owner(&self, program: &str, args: impl FnOnce(&mut Command)) {
        assert!(self.try_as_owner(program, args), "{program} failed");
    }

    /// The URL of database `postgres` with the password and `query` (e.g. "?sslmode=require").
    pub fn url(&self, host: &str, query: &str) -> String {
        format!(
            "postgresql://{USER}:{PASSWORD}@{host}:{}/postgres{query}",
            self.port
        )
    }

    /// The URL as osbench shows it.
    pub fn shown(&self) -> String {
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

/// The processes whose parent is `parent` (from /proc).
pub fn children(parent: i32) -> Vec<i32> {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid …; comm may hold spaces, so read after the last ')'.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(1) == Some(&parent.to_string())
        })
        .collect()
}

/// Stopped server processes, continued (SIGCONT) when dropped.
pub struct Stopped(pub Vec<i32>);

impl Drop for Stopped {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: as in `Cluster::stop`.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }
}

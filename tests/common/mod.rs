//! What every integration test binary shares (each includes this file as
//! `mod common`): the one osbench runner ([`osbench`]), the fixtures
//! ([`fixture`]), stores in Cargo's test directory ([`tmp_store`]), a
//! throwaway sshd on a loopback port (the guest and fleet tests reach "hosts"
//! through it), and a throwaway PostgreSQL cluster ([`pg`]).
//!
//! The test binaries, one per topic: `cli` (a module per command), `store`
//! (SQLite always, PostgreSQL when a cluster starts; shared tests written once
//! in `shared`), `guests`, `queue`, `reports`, `props`, and `warden` alone
//! (it makes the test process a subreaper). Run one with `cargo test --test NAME`.
//!
//! Fast tier (under a minute on an idle machine; what to run while editing):
//!
//! ```text
//! cargo test --lib --bins
//! cargo test --test cli -- command_line:: list_env:: errors::
//! ```
//!
//! The full suite is `cargo test`, as CI runs it (with `OSBENCH_REQUIRE_PG=1`
//! and `OSBENCH_REQUIRE_SSH=1` so that nothing is skipped).

#![allow(dead_code)] // each test file uses a part

pub mod pg;
pub mod terminal;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;

/// The osbench binary under test, with its results store at `store` (a
/// path or a URL) and no other way to find one: never the user's store, and
/// no `PGPASSWORD` inherited from the developer's shell. The one runner every
/// test file builds its commands from.
pub fn osbench(store: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::cargo_bin("osbench").unwrap();
    cmd.env("OSBENCH_STORE", store).env_remove("PGPASSWORD");
    // Workers trust plans here; tests/queue/policy.rs gives its own policies.
    cmd.env(
        "OSBENCH_WORKER_POLICY",
        fixture("trusting-worker-policy.toml"),
    );
    cmd
}

/// A results store named `name` in Cargo's temporary directory for tests,
/// shared by the tests that pass the same name.
pub fn tmp_store(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// A file of tests/data, the test fixtures (real documents, schemas).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The standard output and error of a command that must have succeeded.
pub fn ok(out: std::process::Output) -> (String, String) {
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stderr}");
    (stdout, stderr)
}

/// Processes whose environment carries `OSBENCH_TEST_MARK=mark` (what a
/// test's guest command or sshd sets), to look for leftovers.
fn marked(mark: &str) -> Vec<String> {
    let needle = format!("OSBENCH_TEST_MARK={mark}");
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let environ = fs::read(entry.path().join("environ")).ok()?;
            String::from_utf8_lossy(&environ)
                .split('\0')
                .any(|kv| kv == needle)
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// The processes marked `mark` still running after a bounded wait: an
/// sshd's per-connection children and a guest's helpers exit on their own
/// moments after the parent is killed, so a check made at once races them.
/// Waits up to 10 s for none to be left; what is left then is a leftover.
pub fn left_running(mark: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = marked(mark);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a test that needs sshd and root can run; says why not when it
/// skips, and fails when `OSBENCH_REQUIRE_SSH=1` (as `.ci/run` sets).
pub fn sshd_usable(test: &str) -> bool {
    let required = std::env::var("OSBENCH_REQUIRE_SSH").is_ok_and(|v| v == "1");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if Path::new("/usr/sbin/sshd").exists() && root {
        return true;
    }
    assert!(
        !required,
        "OSBENCH_REQUIRE_SSH=1 but sshd is missing or this is not root"
    );
    eprintln!("{test}: skipped: needs openssh-server and root");
    false
}

/// A throwaway sshd on a loopback port, with its own host key and one
/// authorized user key; killed when dropped.
pub struct Sshd {
    child: std::process::Child,
    pub port: u16,
    /// The authorized client key (no passphrase).
    pub key: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Sshd {
    /// Starts it; `extra` are more sshd_config lines (e.g. `SetEnv K=V`).
    pub fn start(extra: &[&str]) -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        for key in ["host_key", "user_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(p(key))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        fs::copy(p("user_key.pub"), p("authorized_keys")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n",
            p("host_key").display(),
            p("authorized_keys").display(),
            p("sshd.pid").display()
        ) + &extra.join("\n")
            + "\n";
        fs::write(p("sshd_config"), config).unwrap();
        fs::create_dir_all("/run/sshd").unwrap(); // sshd's privilege-separation directory
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(p("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Sshd {
            child,
            port,
            key: p("user_key"),
            _dir: dir,
        }
    }
}

impl Sshd {
    /// A directory that lives as long as the server (for `SetEnv` paths).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// ssh `-o` options that reach it as root with its key, no host-key prompts.
    pub fn ssh_options(&self) -> Vec<String> {
        vec![
            format!("Port={}", self.port),
            format!("IdentityFile={}", self.key.display()),
            "StrictHostKeyChecking=no".into(),
            "UserKnownHostsFile=/dev/null".into(),
            "LogLevel=ERROR".into(),
        ]
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tree of system logs for `OSBENCH_LOGS_ROOT` at `root`: a kernel log of
/// the one line `line` and one loaded module; what an agent read it from
/// shows in the line.
pub fn logs_tree(root: &Path, line: &str) {
    fs::create_dir_all(root.join("dev")).unwrap();
    fs::create_dir_all(root.join("proc")).unwrap();
    fs::write(root.join("dev/kmsg"), format!("6,1,1000000,-;{line}\n")).unwrap();
    fs::write(root.join("proc/modules"), "kvm 1 0 - Live 0x0\n").unwrap();
}

/// The kernel log a document's environment `env` kept, decoded; empty without logs.
pub fn kept_kernel_log(env: &osbench::env::Environment) -> String {
    env.logs
        .as_ref()
        .and_then(osbench::env::logs::SystemLogs::archive)
        .map(|a| a.dmesg)
        .unwrap_or_default()
}

/// Polls `ready` every 50 ms until it gives a value, for at most 60 s (then
/// the test fails naming `what`): waiting for what a test needs to have
/// happened, never a fixed sleep that a loaded machine outruns.
pub fn wait_until<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited 60 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

//! Fleet runs as a user meets them: two "hosts" that are this machine under
//! two names, reached through a throwaway sshd, and one that cannot be
//! reached. The good hosts' documents are stored and written, the bad one is
//! named, the exit status says the run was partial, nothing is left running;
//! then `compare --by host` and `history --by host` read the fleet back.
//! Needs openssh-server and root; skips and says so without them, unless
//! `OSBENCH_REQUIRE_SSH=1` (as `.ci/run` sets). No test asserts on speed.

mod common;

use std::fs;
use std::path::Path;
use std::process::Output;

use common::{Sshd, osbench_at as osbench};
use osbench::store::read_document;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A hosts file: `a` and `b` reach the sshd (b with this osbench named by
/// path unless `install`), `down` a port nobody listens on.
fn hosts_file(sshd: &Sshd, dir: &Path, install: bool) -> std::path::PathBuf {
    let options = |port: Option<u16>| {
        let mut o = sshd.ssh_options();
        if let Some(p) = port {
            o[0] = format!("Port={p}");
        }
        format!("{o:?}")
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // the listener is dropped: nothing listens there now
    let path_line = if install {
        String::new()
    } else {
        format!("osbench = {:?}\n", env!("CARGO_BIN_EXE_osbench"))
    };
    let text = format!(
        "[[host]]\nname = \"a\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n{path_line}\n\
         [[host]]\nname = \"b\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n{path_line}\n\
         [[host]]\nname = \"down\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n",
        options(None),
        options(None),
        options(Some(closed)),
    );
    let path = dir.join(if install {
        "install.toml"
    } else {
        "hosts.toml"
    });
    fs::write(&path, text).unwrap();
    path
}

fn fleet_run(store: &Path, hosts: &Path, label: &str, work: &str, extra: &[&str]) -> Output {
    osbench(store)
        .args(["fleet", "run", &format!("spin:work={work}"), "--no-perf"])
        .args(["--samples", "5", "--sample-time", "1", "--warmup", "0"])
        .arg("--hosts")
        .arg(hosts)
        .args(["--label", label])
        .args(extra)
        .env("OSBENCH_GUEST_TIMEOUT", "60")
        .output()
        .unwrap()
}

#[test]
fn a_fleet_runs_on_every_reachable_host_and_names_the_one_it_could_not_reach() {
    if !common::sshd_usable("a_fleet_runs_on_every_reachable_host") {
        return;
    }
    let mark = "fleet-test";
    let cache = tempfile::tempdir().unwrap();
    let sshd = Sshd::start(&[&format!(
        "SetEnv OSBENCH_TEST_MARK={mark} XDG_CACHE_HOME={}",
        cache.path().display()
    )]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fleet.sqlite");
    let out_dir = dir.path().join("before");

    // 1. --install: a and b get this osbench in their cache; `down` fails alone.
    let install = hosts_file(&sshd, dir.path(), true);
    let out_arg = out_dir.to_string_lossy().into_owned();
    let out = fleet_run(
        &store,
        &install,
        "before",
        "100",
        &["--install", "--out", &out_arg],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host 'down'") && err.contains("partial"),
        "{err}"
    );
    assert!(err.contains("1 of 3 hosts"), "{err}");
    let table = text(&out.stdout);
    assert!(
        table
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .eq(["case", "a", "b"]),
        "{table}"
    );
    for host in ["a", "b"] {
        let doc = read_document(&out_dir.join(format!("{host}.json"))).unwrap();
        assert_eq!(doc.run.host.as_deref(), Some(host));
        assert_eq!(doc.run.label.as_deref(), Some("before"));
        assert!(doc.run.complete && doc.series.len() == 1);
        // The environment is the host's own, as its agent saw it.
        assert!(!doc.env.kernel.is_empty());
    }
    assert!(!out_dir.join("down.json").exists());
    let installed: Vec<_> = fs::read_dir(cache.path().join("osbench"))
        .unwrap()
        .collect();
    assert_eq!(
        installed.len(),
        1,
        "one copy, shared by both hosts: {installed:?}"
    );

    // 2. The hosts' own osbench, named by path; a slower spin afterwards.
    let hosts = hosts_file(&sshd, dir.path(), false);
    let out = fleet_run(&store, &hosts, "after", "100", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // 3. Read back by host.
    let history = osbench(&store)
        .args(["history", "--by", "host"])
        .output()
        .unwrap();
    let table = text(&history.stdout);
    assert!(history.status.success(), "{}", text(&history.stderr));
    assert!(table.contains("spin work=100"), "{table}");
    let compare = osbench(&store)
        .args(["compare", "before", "after", "--by", "host"])
        .output()
        .unwrap();
    let report = text(&compare.stdout);
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    assert!(
        report.contains("by host: 2 hosts on both sides"),
        "{report}"
    );
    assert!(report.contains("fleet  B/A"), "{report}");
    assert!(report.contains("too few hosts for the test"), "{report}");
    // The same from the directory fleet run --out wrote, against the store's runs.
    let from_dir = osbench(&store)
        .arg("compare")
        .arg(&out_dir)
        .args(["after", "--by", "host"])
        .output()
        .unwrap();
    assert!(from_dir.status.success(), "{}", text(&from_dir.stderr));
    eprintln!("{report}");
    drop(sshd);
    assert!(
        common::marked(mark).is_empty(),
        "left running: {:?}",
        common::marked(mark)
    );
}

#[test]
fn a_host_without_osbench_is_told_about_install() {
    if !common::sshd_usable("a_host_without_osbench_is_told_about_install") {
        return;
    }
    let sshd = Sshd::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts.toml");
    fs::write(
        &hosts,
        format!(
            "[[host]]\nname = \"bare\"\ntarget = \"root@127.0.0.1\"\nssh_options = {:?}\n\
             osbench = \"/nonexistent/osbench\"\n",
            sshd.ssh_options()
        ),
    )
    .unwrap();
    let out = fleet_run(&dir.path().join("s.sqlite"), &hosts, "x", "100", &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host 'bare'") && err.contains("--install"),
        "{err}"
    );
}

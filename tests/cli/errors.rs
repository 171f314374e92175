//! Errors and tips on bad input: one line, exit 2, no file written; flags that
//! would do nothing refused; I/O limits named before measuring.

use super::kit::*;

#[test]
fn bad_input_exits_2_with_one_line_and_no_file() {
    // Every family of the registry, in its order.
    let families: Vec<&str> = osbench::bench::REGISTRY.iter().map(|d| d.name).collect();
    let unknown = format!(
        "unknown benchmark 'nosuch'; valid benchmarks: {}",
        families.join(", ")
    );
    let cases: [(&[&str], &str); 21] = [
        (&["run", "nosuch", "--json", "x.json"], &unknown),
        (
            &["run", "spin", "--load", "stress:2"],
            "not a kind of load; the kinds are hackbench:GROUPS, spin:TASKS",
        ),
        (
            &["run", "syscall:case=bogus", "--json", "x.json"],
            "allowed: null, read, write, stat, fstat, open",
        ),
        (
            &["run", "syscall:foo=1", "--json", "x.json"],
            "no parameter 'foo'; valid parameters: case",
        ),
        (
            &["run", "syscall:case", "--json", "x.json"],
            "malformed selector",
        ),
        (&["run", "--samples", "0", "--json", "x.json"], "--samples"),
        (
            &["run", "--sample-time", "-1", "--json", "x.json"],
            "--sample-time",
        ),
        (
            &["run", "--json", "/nonexistent/dir/x.json"],
            "directory /nonexistent/dir does not exist",
        ),
        (&["frobnicate"], "unrecognized subcommand"),
        (
            &["run", "ctx:procs=1"],
            "invalid value '1' for ctx:procs; allowed: an integer from 2 to 1024",
        ),
        (&["run", "ctx:procs=0"], "invalid value '0' for ctx:procs"),
        (
            &["run", "ctx:procs=100000"],
            "invalid value '100000' for ctx:procs",
        ),
        (
            &["run", "ctx:size=-1"],
            "invalid value '-1' for ctx:size; allowed: an integer from 0 to 65536",
        ),
        (&["run", "ipc:kind=bogus"], "allowed: pipe, unix, tcp, udp"),
        (
            &["run", "timer:interval_us=0"],
            "invalid value '0' for timer:interval_us",
        ),
        (
            &["run", "wakeup:wait=bogus"],
            "allowed: futex, eventfd, pipe, spin, spin-then-futex",
        ),
        (
            &["run", "atomic:threads=0"],
            "invalid value '0' for atomic:threads; allowed: all, or an integer from 1 to 1024",
        ),
        (
            &["run", "--pin", "bogus"],
            "invalid value 'bogus' for '--pin <PLACEMENT>'",
        ),
        // A refused value is named as given, control characters escaped.
        (
            &["run", "--label", "a\nb"],
            "invalid value 'a\\nb' for '--label <NAME>': a label cannot contain control characters",
        ),
        (&["run", "--samples", "-1"], "-1 is not in 1..=1000000"),
        (
            &["run", "--warmup", "-3"],
            "'-3' is not a duration in milliseconds from 0 to 600000",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr, files) = run_in_empty_dir(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: not one line:\n{stderr}"
        );
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(files, 0, "{args:?} left a file behind");
    }
    assert!(!Path::new("/nonexistent/dir/x.json").exists());
}

/// A flag that would do nothing in its context is refused, never silently accepted.
#[test]
fn flags_that_would_do_nothing_are_refused() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "syscall", "--rounds", "3"],
            "--rounds repeats configurations",
        ),
        (
            &["run", "syscall", "--max-time", "5"],
            "give --target-ci PCT too",
        ),
        (
            &["run", "syscall", "--gate", "5"],
            "--gate judges comparisons",
        ),
        (
            &["run", "syscall", "--equivalence", "2", "--gate", "5"],
            "--equivalence and --gate judge comparisons",
        ),
        (
            &["run", "syscall", "--config", "a=", "--target-ci", "1"],
            "one configuration has nothing to be compared with",
        ),
        (
            &["time", "true", "--gate", "5"],
            "one command is timed alone",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr, files) = run_in_empty_dir(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}:\n{stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(files, 0, "{args:?} left a file behind");
    }
}

/// The I/O families' limits stop a run before anything is measured (exit 2,
/// one line naming the limit and how to raise it), even after a valid case.
#[test]
fn io_limits_exit_2_before_measuring() {
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let cases: [(&str, &str, &str); 5] = [
        ("", "poll:call=select,fds=2000", "FD_SETSIZE (1024)"),
        (
            "",
            "poll:call=epoll_wait,on=file",
            "epoll cannot watch regular files",
        ),
        (
            "ulimit -n 64;",
            "poll:call=poll,fds=100",
            "`ulimit -n` = 64",
        ),
        ("", "stream:chunk=16000000", "/proc/sys/fs/pipe-max-size"),
        (
            "TMPDIR=/nonexistent",
            "fs",
            "cannot create a directory in /nonexistent",
        ),
    ];
    for (prefix, selector, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "{prefix} exec {} run syscall:case=null {selector} --json out.json",
            bin.display()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .env("OSBENCH_STORE", shared_store())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{selector}: {stderr}");
        // Warnings of the noise audit may come first; the error is one line.
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("osbench: warning"))
            .collect();
        assert_eq!(errors.len(), 1, "{selector}: {stderr}");
        assert!(errors[0].contains(want), "{selector}: {stderr}");
        assert!(out.stdout.is_empty(), "{selector}: something was measured");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{selector}");
    }
}

/// `import /dev/zero` (and an endless standard input) stops at the
/// documents' size cap with a message naming it, instead of reading until
/// memory runs out.
#[test]
fn import_of_an_endless_input_stops_at_the_size_cap() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.sqlite");
    let out = osbench(&store)
        .args(["import", "/dev/zero"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/dev/zero") && err.contains("more than 256 MiB"),
        "{err}"
    );
    let out = osbench(&store)
        .args(["import", "-"])
        .stdin(fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("standard input") && err.contains("more than 256 MiB"),
        "{err}"
    );
}

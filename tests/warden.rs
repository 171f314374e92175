//! osbench reaps its warden (the process that kills osbench's process
//! groups if osbench dies) before it exits, instead of leaving it a zombie
//! for init to collect (issue 31). The test process is a child subreaper, so
//! whatever osbench leaves behind comes to it; this file holds one test, so
//! no other test's orphans do.

mod common;

use std::fs;
use std::time::Duration;

/// The `/proc/PID/stat` lines of the processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(parent) {
            found.push(stat.trim().to_string());
        }
    }
    found
}

#[test]
fn osbench_leaves_no_warden_behind() {
    // SAFETY: prctl with integer arguments, on this process only.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) }, 0);
    let dir = tempfile::tempdir().unwrap();
    // `time` guards its timed commands, so it starts a warden.
    common::ok(
        common::osbench(dir.path().join("s.sqlite"))
            .args(["time", "true", "--runs", "2", "--no-store", "-q"])
            .output()
            .unwrap(),
    );
    // A warden left running ends at once when osbench is gone, and then
    // waits for this process to reap it.
    std::thread::sleep(Duration::from_millis(500));
    let left = children_of(std::process::id());
    assert!(left.is_empty(), "left behind: {left:?}");
}

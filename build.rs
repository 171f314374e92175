//! Records how osbench was built, for the `build` object of its environment:
//! the git commit ("-dirty" when the tree had changes), the cargo profile and
//! the compiler. Without git or outside a checkout (a source tarball) the
//! commit is simply not set; the build never fails because of it.

use std::process::Command;

fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=OSBENCH_PROFILE={profile}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if let Some(version) = output(&rustc, &["--version"]) {
        println!("cargo:rustc-env=OSBENCH_RUSTC={version}");
    }
    if let Some(commit) = output("git", &["rev-parse", "--short=12", "HEAD"]) {
        // --no-optional-locks: status must not refresh (rewrite) the index,
        // which would make the next build run this script again.
        let dirty = output(
            "git",
            &[
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
            ],
        )
        .is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=OSBENCH_GIT_COMMIT={commit}{suffix}");
        // Rebuild when HEAD moves or the index changes (commits, checkouts, staging).
        for path in ["HEAD", "index"] {
            if let Some(p) = output("git", &["rev-parse", "--git-path", path]) {
                println!("cargo:rerun-if-changed={p}");
            }
        }
        if let Some(r) = output("git", &["symbolic-ref", "-q", "HEAD"])
            && let Some(p) = output("git", &["rev-parse", "--git-path", &r])
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// The trimmed stdout of a successful command, or None (not installed, failed, not UTF-8).
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

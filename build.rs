//! Records how osbench was built, for the `build` object of its environment:
//! the git commit ("-dirty" when the tree had changes), the cargo profile and
//! the compiler; and the line `osbench --version` prints, which names the
//! same commit and profile. Without git or outside a checkout (a source
//! tarball) the commit is simply not set; the build never fails because of it.

use std::process::Command;

fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=OSBENCH_PROFILE={profile}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if let Some(version) = output(&rustc, &["--version"]) {
        println!("cargo:rustc-env=OSBENCH_RUSTC={version}");
    }
    let commit = output("git", &["rev-parse", "--short=12", "HEAD"])
        .map(|c| format!("{c}{}", dirty_suffix()));
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let built_from = commit.as_deref().map_or_else(
        || "commit unknown: not built from a git checkout".to_string(),
        |c| format!("commit {c}"),
    );
    println!("cargo:rustc-env=OSBENCH_VERSION_LINE={version} ({built_from}, {profile} build)");
    if let Some(commit) = commit {
        println!("cargo:rustc-env=OSBENCH_GIT_COMMIT={commit}");
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

/// "-dirty" when the checkout has uncommitted changes to tracked files.
fn dirty_suffix() -> &'static str {
    // --no-optional-locks: status must not refresh (rewrite) the index,
    // which would make the next build run this script again.
    let status = [
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ];
    if output("git", &status).is_some_and(|s| !s.is_empty()) {
        "-dirty"
    } else {
        ""
    }
}

/// The trimmed stdout of a successful command, or None (not installed, failed, not UTF-8).
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

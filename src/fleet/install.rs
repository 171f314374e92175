//! `fleet run --install`: copies this osbench binary into a per-user cache
//! directory on a host (`${XDG_CACHE_HOME:-$HOME/.cache}/osbench/`), after
//! checking that the host can run it: the same CPU architecture and a GNU C
//! library at least as new as the one it was built against.
//!
//! The file is named by version, commit and build profile, so a host that
//! already has this very build is not sent it again (a build from a dirty
//! tree or outside git is always sent). Left out: cross-building for other
//! hosts, and any shell on the host but a POSIX one.

use std::process::{Command, Stdio};

use super::Host;
use crate::error::{Error, Result};

/// The cache directory on the host, as its shell spells it (inside double quotes).
const DIR: &str = "${XDG_CACHE_HOME:-$HOME/.cache}/osbench";

/// Makes sure the host has this osbench and returns its path, quoted for the
/// host's shell.
pub fn install(host: &Host) -> Result<String> {
    let name = file_name();
    let path = format!("\"{DIR}/{name}\"");
    let probe = format!(
        "uname -m; getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -n 1; \
         if [ -x {path} ]; then echo present; else echo absent; fi"
    );
    let answer = ssh_output(host, &probe, None)?;
    let lines: Vec<&str> = answer.lines().collect();
    let [arch, libc, presence] = lines[..] else {
        return Err(fail(
            host,
            format!("unexpected answer to the probe: {answer:?}"),
        ));
    };
    check_compatible(arch, libc).map_err(|why| fail(host, why))?;
    let same_build = option_env!("OSBENCH_GIT_COMMIT").is_some_and(|c| !c.ends_with("-dirty"));
    if presence == "present" && same_build {
        return Ok(path);
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding osbench's own executable".to_string(), e))?;
    let binary = std::fs::File::open(&exe)
        .map_err(|e| Error::io(format!("reading {}", exe.display()), e))?;
    // Written beside its place and renamed: a host never runs a half-copied file.
    let upload = format!(
        "set -e; mkdir -p \"{DIR}\"; t=\"{DIR}/.{name}.$$\"; cat > \"$t\"; chmod 755 \"$t\"; \
         mv -f \"$t\" {path}"
    );
    ssh_output(host, &upload, Some(binary))?;
    Ok(path)
}

/// `osbench-VERSION-COMMIT-PROFILE` (letters, digits, '.' and '-' only).
fn file_name() -> String {
    format!(
        "osbench-{}-{}-{}",
        env!("CARGO_PKG_VERSION"),
        option_env!("OSBENCH_GIT_COMMIT").unwrap_or("unknown"),
        option_env!("OSBENCH_PROFILE").unwrap_or("unknown")
    )
}

/// Why a host whose `uname -m` is `arch` and whose C library says `libc`
/// cannot run this binary, if it cannot.
fn check_compatible(arch: &str, libc: &str) -> std::result::Result<(), String> {
    let ours = std::env::consts::ARCH;
    if arch.trim() != ours {
        return Err(format!(
            "the host is {arch}, this osbench is built for {ours}: build osbench on the host \
             (cargo install --path .) and name it with `osbench = \"PATH\"` in a hosts file"
        ));
    }
    let Some(theirs) = glibc_version(libc) else {
        return Err(format!(
            "the host's C library is not GNU libc ({}), which this osbench needs: build osbench \
             on the host and name it with `osbench = \"PATH\"` in a hosts file",
            libc.trim()
        ));
    };
    match local_glibc() {
        Some(ours) if theirs < ours => Err(format!(
            "the host has glibc {}.{}, this osbench was built with glibc {}.{} and may need its \
             newer symbols: build osbench on the host and name it with `osbench = \"PATH\"` in a \
             hosts file",
            theirs.0, theirs.1, ours.0, ours.1
        )),
        _ => Ok(()),
    }
}

/// (major, minor) from `glibc 2.41` (getconf) or `ldd (Debian GLIBC 2.41-12) 2.41`.
fn glibc_version(line: &str) -> Option<(u32, u32)> {
    let lower = line.to_ascii_lowercase();
    if !lower.contains("glibc") && !lower.contains("gnu libc") {
        return None;
    }
    let last = line.split_whitespace().last()?;
    let (major, minor) = last.split_once('.')?;
    let minor: String = minor.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The GNU C library this process runs with.
fn local_glibc() -> Option<(u32, u32)> {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: gnu_get_libc_version takes nothing and returns a pointer to
        // a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        glibc_version(&format!("glibc {}", version.to_string_lossy()))
    }
    #[cfg(not(target_env = "gnu"))]
    None
}

/// Runs `script` on the host with `stdin`; its standard output.
fn ssh_output(host: &Host, script: &str, stdin: Option<std::fs::File>) -> Result<String> {
    let argv = host.ssh(script);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(stdin.map_or_else(Stdio::null, Stdio::from))
        .output()
        .map_err(|e| Error::io(format!("host '{}': running ssh", host.name), e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        // ssh's own failures (no connection, refused keys) are its status 255.
        let what = match out.status.code() {
            Some(255) => "could not be reached over ssh to install osbench".to_string(),
            _ => format!("installing osbench: ssh {}", out.status),
        };
        return Err(fail(
            host,
            format!("{what} ({})", last.unwrap_or("no message")),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn fail(host: &Host, message: String) -> Error {
    Error::Guest {
        who: format!("host '{}'", host.name),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_versions_are_read_from_getconf_and_ldd() {
        assert_eq!(glibc_version("glibc 2.41"), Some((2, 41)));
        assert_eq!(
            glibc_version("ldd (Debian GLIBC 2.41-12) 2.41"),
            Some((2, 41))
        );
        assert_eq!(glibc_version("musl libc (x86_64)"), None);
        assert_eq!(glibc_version(""), None);
    }

    #[test]
    fn a_host_must_match_the_architecture_and_have_a_new_enough_glibc() {
        let arch = std::env::consts::ARCH;
        assert!(check_compatible(arch, "glibc 99.0").is_ok());
        let e = check_compatible("riscv128", "glibc 99.0").unwrap_err();
        assert!(e.contains("riscv128") && e.contains(arch), "{e}");
        let e = check_compatible(arch, "musl libc (x86_64)").unwrap_err();
        assert!(e.contains("not GNU libc"), "{e}");
        if local_glibc().is_some() {
            let e = check_compatible(arch, "glibc 2.1").unwrap_err();
            assert!(e.contains("glibc 2.1,"), "{e}");
        }
    }
}

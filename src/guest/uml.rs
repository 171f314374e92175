//! User-Mode Linux as a guest: a Linux kernel that runs as an ordinary
//! process tree, booted with the host's own root read-only through hostfs,
//! so the very osbench binary that runs the experiment is its init
//! (`osbench agent --init`), talking over the UML console on stdin/stdout.
//!
//! Command line: `mem=512M rootfstype=hostfs rootflags=/ ro init=OSBENCH
//! con0=fd:0,fd:1 con=null quiet uml_dir=DIR umid=osbench [CMDLINE] --
//! agent --init`, with TMPDIR=DIR so UML's memory file lands in a directory
//! that is removed afterwards. Left out: block devices, networking, SMP.
//!
//! Known host limit: UML kernels before 6.13 or so keep the FPU state in a
//! 4 KiB buffer, and a host with AMX has a larger XSAVE area (11 008 bytes on
//! Sapphire Rapids), so PTRACE_SETREGSET fails with EFAULT and such a UML
//! stops at "ptrace set fp regs failed, errno = 14" before running init
//! (Debian bookworm's 6.1 on an Intel host; it runs on AMD EPYC). A newer UML
//! kernel (Debian sid's 7.2 boots there) can be named with `kernel`, or for
//! every UML guest with `OSBENCH_UML_KERNEL`.
//!
//! UML reads its own options (`nosysemu`, `mem=`, `ubd0=`…, listed by
//! `KERNEL --help`) early but leaves them on the command line, so Linux hands
//! every one without `=` to init as an argument, as it does with words no
//! part of the kernel knows: [`own_options`] tells the two apart.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to boot one UML guest.
pub struct Boot<'a> {
    /// The kernel binary; `None`: `linux.uml`, else `linux`, on PATH.
    pub kernel: Option<&'a str>,
    /// `mem=` (default 512M).
    pub mem: Option<&'a str>,
    /// Extra kernel parameters, split on whitespace.
    pub cmdline: Option<&'a str>,
    /// The osbench binary the guest runs as its init.
    pub osbench: &'a Path,
    /// A private directory for UML's files.
    pub dir: &'a Path,
}

/// The prefix of a UML guest's private directory: `osbench-uml-PID-` (PID:
/// the osbench that made it), so that a later osbench can tell a stale one.
pub fn dir_prefix() -> String {
    format!("{DIR_PREFIX}{}-", std::process::id())
}

const DIR_PREFIX: &str = "osbench-uml-";

/// Removes the UML directories in `base` whose osbench is gone (a SIGKILL
/// during a boot leaves UML's memory file, 512 MiB on /dev/shm); returns how
/// many. A directory without a PID in its name, or whose PID runs (perhaps
/// reused by another process), is left alone. Best effort: errors are ignored.
pub fn remove_stale_dirs(base: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0);
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let Some(pid) = owner
            && is_dir
            && !process_exists(pid)
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Whether a process `pid` exists (one of another user's counts).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks that `pid` exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The UML command for `boot`, or why there is none.
pub fn command(boot: &Boot) -> Result<Command, String> {
    let kernel = find_kernel(boot.kernel)?;
    let osbench = boot
        .osbench
        .to_str()
        .filter(|p| !p.contains(char::is_whitespace));
    let Some(osbench) = osbench else {
        return Err(format!(
            "osbench's path ({}) has white space or is not UTF-8, which a kernel command line \
             cannot carry; run osbench from another directory",
            boot.osbench.display()
        ));
    };
    let mut cmd = Command::new(kernel);
    cmd.arg(format!("mem={}", boot.mem.unwrap_or("512M")))
        .args(["rootfstype=hostfs", "rootflags=/", "ro"])
        .arg(format!("init={osbench}"))
        .args(["con0=fd:0,fd:1", "con=null", "quiet"])
        .arg(format!("uml_dir={}", boot.dir.display()))
        .arg("umid=osbench")
        .args(boot.cmdline.unwrap_or("").split_whitespace())
        .args(["--", "agent", "--init"])
        .env("TMPDIR", boot.dir);
    Ok(cmd)
}

/// One of UML's own options as its `--help` lists them: a name, and
/// whether the name is a prefix (`con[0-9]*=`, `ubd<n>=`, `eth[0-9]+=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnOption {
    pub name: String,
    pub prefix: bool,
}

impl OwnOption {
    /// Whether this option names the boot parameter `word` (`nosysemu`, `con0=fd:0`).
    pub fn names(&self, word: &str) -> bool {
        let key = word.split_once('=').map_or(word, |(k, _)| k);
        key == self.name || (self.prefix && key.starts_with(&self.name))
    }
}

/// The options UML itself reads from its command line (it leaves them
/// there, so Linux hands them to init as well), from `KERNEL --help`: every
/// line that starts in the first column. Empty if the kernel cannot say.
pub fn own_options(kernel: &Path) -> Vec<OwnOption> {
    let Ok(out) = Command::new(kernel).arg("--help").output() else {
        return Vec::new();
    };
    parse_help(&String::from_utf8_lossy(&out.stdout))
}

fn parse_help(help: &str) -> Vec<OwnOption> {
    help.lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_alphanumeric()))
        .filter_map(|line| {
            let end = line.find(['=', '<', '[', ' ', ':']).unwrap_or(line.len());
            let (name, next) = (&line[..end], line[end..].chars().next());
            let prefix = matches!(next, Some('<' | '['));
            // A title ("User Mode Linux v6.1") is words; an option is one.
            (next != Some(' ')).then(|| OwnOption {
                name: name.to_string(),
                prefix,
            })
        })
        .collect()
}

/// The UML kernel to run: `kernel` if given (a path, or a name on PATH),
/// else `$OSBENCH_UML_KERNEL`, else `linux.uml` or `linux` on PATH.
pub fn find_kernel(kernel: Option<&str>) -> Result<PathBuf, String> {
    let from_env = std::env::var("OSBENCH_UML_KERNEL").ok();
    let kernel = kernel.or(from_env.as_deref().filter(|k| !k.is_empty()));
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    let names = match kernel {
        Some(k) if k.contains('/') => {
            return if Path::new(k).is_file() {
                Ok(PathBuf::from(k))
            } else {
                Err(format!("the UML kernel {k} does not exist"))
            };
        }
        Some(k) => vec![k],
        None => vec!["linux.uml", "linux"],
    };
    names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| match kernel {
            Some(k) => format!("the UML kernel '{k}' is not on PATH"),
            None => "User-Mode Linux is not installed: no linux.uml or linux on PATH (Debian: \
                     apt-get install user-mode-linux), or name a UML kernel with kernel = PATH"
                .to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_boots_hostfs_with_the_agent_as_init() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("linux.uml");
        std::fs::write(&kernel, "").unwrap();
        let boot = Boot {
            kernel: kernel.to_str(),
            mem: None,
            cmdline: Some("nosysemu  loglevel=3"),
            osbench: Path::new("/opt/osbench"),
            dir: dir.path(),
        };
        let cmd = command(&boot).unwrap();
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "mem=512M");
        assert!(args.contains(&"init=/opt/osbench".to_string()));
        assert!(args.contains(&"rootfstype=hostfs".to_string()));
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dash - 2..dash], ["nosysemu", "loglevel=3"]);
        assert_eq!(args[dash + 1..], ["agent", "--init"]);
    }

    #[test]
    fn own_options_come_from_the_kernels_help() {
        // Lines of Debian's UML 6.1 `linux.uml --help`.
        let help = "User Mode Linux v6.1.176\n\tavailable at http://user-mode-linux.sf.net/\n\n\
                    --showconfig\n    Prints the config file.\n\nmem=<Amount of desired ram>\n\
                    con[0-9]*=<channel description>\n    Attach a console.\n\
                    ubd<n><flags>=<filename>\nnosysemu\n    Turns off syscall emulation.\n\
                    vec[0-9]+:<option>=<value>\n";
        let own = parse_help(help);
        let names: Vec<&str> = own.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["mem", "con", "ubd", "nosysemu", "vec"]);
        let named = |w: &str| own.iter().any(|o| o.names(w));
        assert!(named("nosysemu") && named("mem=256M") && named("con0=fd:0,fd:1"));
        assert!(named("ubd0=/tmp/disk") && !named("nosysemux") && !named("memx=1"));
        assert!(!named("frobnicate") && !named("KEY=VALUE"));
    }

    #[test]
    fn only_directories_of_gone_owners_are_removed() {
        let base = tempfile::tempdir().unwrap();
        // No process has a pid above the kernel's largest (4,194,304).
        let gone = base.path().join("osbench-uml-2147483647-abc");
        let mine = base.path().join(format!("{}x", dir_prefix()));
        let old = base.path().join("osbench-uml-Zq3xYz");
        let file = base.path().join("osbench-uml-2147483646-file");
        for d in [&gone, &mine, &old] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(gone.join("mem"), b"x").unwrap();
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(remove_stale_dirs(base.path()), 1);
        assert!(!gone.exists());
        assert!(mine.is_dir() && old.is_dir() && file.is_file());
        assert_eq!(remove_stale_dirs(&base.path().join("none")), 0);
    }

    #[test]
    fn a_missing_kernel_names_the_package() {
        let e = find_kernel(Some("/nonexistent/linux.uml")).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let boot = Boot {
            kernel: Some("/nonexistent/linux.uml"),
            mem: None,
            cmdline: None,
            osbench: Path::new("/my dir/osbench"),
            dir: Path::new("/tmp"),
        };
        assert!(command(&boot).is_err());
        let none = "User-Mode Linux is not installed";
        assert!(
            find_kernel(None).map_or_else(|e| e.contains(none), |p| p.is_file()),
            "either a kernel is found or the error names the package"
        );
    }
}

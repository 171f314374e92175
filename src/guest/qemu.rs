//! A QEMU virtual machine as a guest, declared in one line (`kind = "qemu"`,
//! `--guest NAME=qemu:kernel=PATH,append=…`; the kernel defaults to
//! `$OSBENCH_QEMU_KERNEL`): osbench writes the initramfs
//! ([`super::image`]) for its own binary, cached by the binary's identity,
//! picks the accelerator and boots the kernel with its serial port as the
//! agent's channel — the guide's command guest
//! (docs/guide/configurations-and-guests.md), without the command.
//!
//! Command: `qemu-system-x86_64 -accel kvm -cpu host | -accel tcg -m 1G
//! -smp 1 -nodefaults -display none -serial stdio -no-reboot -kernel KERNEL
//! -initrd CACHED.cpio -append "console=ttyS0 quiet panic=-1 APPEND"`.
//! `accel = "auto"` (the default) takes KVM when /dev/kvm can be opened and
//! is not `kvm_pvm` (which runs only PVM-enabled guest kernels, not stock
//! ones), else TCG, and says why. Left out: other architectures, disks,
//! networking, pinning the vCPU threads (a command guest can `taskset` QEMU).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// How to boot one QEMU guest.
pub struct Boot<'a> {
    /// The kernel; `None`: `$OSBENCH_QEMU_KERNEL`.
    pub kernel: Option<&'a str>,
    /// Kernel parameters after osbench's own (`console=ttyS0 quiet panic=-1`).
    pub append: Option<&'a str>,
    /// "auto" (default), "kvm" or "tcg".
    pub accel: Option<&'a str>,
    pub cpus: Option<u32>,
    /// QEMU's `-m` (default 1G).
    pub memory: Option<&'a str>,
    pub initrd: &'a Path,
}

/// The kernel parameters osbench boots every QEMU guest with.
pub const OWN_APPEND: &str = "console=ttyS0 quiet panic=-1";

/// The QEMU command for `boot`, and the accelerator chosen with the reason.
pub fn command(boot: &Boot) -> std::result::Result<(Command, String), String> {
    let from_env = std::env::var("OSBENCH_QEMU_KERNEL").ok();
    let Some(kernel) = boot
        .kernel
        .or(from_env.as_deref().filter(|k| !k.is_empty()))
    else {
        return Err(
            "no kernel to boot: give kernel=PATH or set OSBENCH_QEMU_KERNEL (a \
                    vmlinuz; scripts/qemu-kernel.sh extracts Debian's)"
                .into(),
        );
    };
    if !Path::new(kernel).is_file() {
        return Err(format!(
            "the kernel {kernel} does not exist (scripts/qemu-kernel.sh extracts Debian's)"
        ));
    }
    let (accel, why) = accelerator(boot.accel, kvm_state())?;
    let mut cmd = Command::new("qemu-system-x86_64");
    match accel {
        "kvm" => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        _ => cmd.args(["-accel", "tcg"]),
    };
    let append = match boot.append {
        Some(a) if !a.trim().is_empty() => format!("{OWN_APPEND} {}", a.trim()),
        _ => OWN_APPEND.to_string(),
    };
    cmd.args(["-m", boot.memory.unwrap_or("1G")])
        .arg("-smp")
        .arg(boot.cpus.unwrap_or(1).to_string())
        .args([
            "-nodefaults",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(boot.initrd)
        .arg("-append")
        .arg(append);
    Ok((cmd, format!("{accel}: {why}")))
}

/// What this host's /dev/kvm can do for a stock kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kvm {
    Usable,
    /// The `kvm_pvm` module serves /dev/kvm.
    Pvm,
    Unavailable,
}

fn kvm_state() -> Kvm {
    if Path::new("/sys/module/kvm_pvm").exists() {
        return Kvm::Pvm;
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm");
    if opened.is_ok() {
        Kvm::Usable
    } else {
        Kvm::Unavailable
    }
}

/// The accelerator for `requested` ("auto", "kvm", "tcg"; `None`: auto) on
/// a host whose KVM is `kvm`, and why.
fn accelerator(
    requested: Option<&str>,
    kvm: Kvm,
) -> std::result::Result<(&'static str, &'static str), String> {
    let pvm = "/dev/kvm is kvm_pvm, which runs only PVM-enabled guest kernels";
    match (requested.unwrap_or("auto"), kvm) {
        ("tcg", _) => Ok(("tcg", "asked for")),
        ("kvm", Kvm::Unavailable) => {
            Err("accel = \"kvm\" but /dev/kvm cannot be opened; use accel = \"tcg\"".into())
        }
        ("kvm", _) => Ok(("kvm", "asked for")),
        ("auto", Kvm::Usable) => Ok(("kvm", "/dev/kvm can be opened")),
        ("auto", Kvm::Pvm) => Ok(("tcg", pvm)),
        ("auto", Kvm::Unavailable) => Ok(("tcg", "/dev/kvm cannot be opened")),
        (other, _) => Err(format!("accel '{other}' is not one of auto, kvm, tcg")),
    }
}

/// The initramfs of `osbench` in osbench's cache directory, written unless
/// one for this very binary (its path, size and modification time) is there.
pub fn initramfs(osbench: &Path) -> Result<PathBuf> {
    let meta = std::fs::metadata(osbench)
        .map_err(|e| Error::io(format!("reading {}", osbench.display()), e))?;
    let mut identity = Fnv::default();
    (osbench, meta.len(), meta.modified().ok()).hash(&mut identity);
    env!("CARGO_PKG_VERSION").hash(&mut identity);
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("creating the cache directory {}", dir.display()), e))?;
    let path = dir.join(format!("initramfs-{:016x}.cpio", identity.finish()));
    if !path.is_file() {
        super::image::write_initramfs(osbench, &path)?;
    }
    Ok(path)
}

/// `$XDG_CACHE_HOME/osbench`, else `~/.cache/osbench`, else the temporary directory's.
fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match (var("XDG_CACHE_HOME"), var("HOME")) {
        (Some(cache), _) => PathBuf::from(cache).join("osbench"),
        (None, Some(home)) => PathBuf::from(home).join(".cache/osbench"),
        (None, None) => std::env::temp_dir().join("osbench-cache"),
    }
}

/// FNV-1a: a hash that stays the same from one build of osbench to the next.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_kvm_only_where_it_runs_stock_kernels() {
        assert_eq!(accelerator(None, Kvm::Usable).unwrap().0, "kvm");
        assert_eq!(
            accelerator(Some("auto"), Kvm::Pvm).unwrap(),
            (
                "tcg",
                "/dev/kvm is kvm_pvm, which runs only PVM-enabled guest kernels"
            )
        );
        assert_eq!(accelerator(None, Kvm::Unavailable).unwrap().0, "tcg");
        assert_eq!(accelerator(Some("tcg"), Kvm::Usable).unwrap().0, "tcg");
        assert_eq!(accelerator(Some("kvm"), Kvm::Pvm).unwrap().0, "kvm");
        assert!(accelerator(Some("kvm"), Kvm::Unavailable).is_err());
        assert!(
            accelerator(Some("hvf"), Kvm::Usable)
                .unwrap_err()
                .contains("'hvf'")
        );
    }

    #[test]
    fn the_command_boots_the_kernel_on_its_serial_port() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("vmlinuz");
        std::fs::write(&kernel, "").unwrap();
        let boot = Boot {
            kernel: kernel.to_str(),
            append: Some("mitigations=off"),
            accel: Some("tcg"),
            cpus: Some(2),
            memory: None,
            initrd: Path::new("/cache/i.cpio"),
        };
        let (cmd, accel) = command(&boot).unwrap();
        assert_eq!(accel, "tcg: asked for");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let after = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
        assert_eq!(
            (after("-accel"), after("-smp"), after("-m")),
            ("tcg".into(), "2".into(), "1G".into())
        );
        assert_eq!(
            after("-append"),
            "console=ttyS0 quiet panic=-1 mitigations=off"
        );
        assert_eq!(after("-serial"), "stdio");
        let missing = Boot {
            kernel: Some("/no/vmlinuz"),
            ..boot
        };
        assert!(command(&missing).unwrap_err().contains("does not exist"));
    }

    #[test]
    fn the_cached_image_is_reused_until_the_binary_changes() {
        let dir = tempfile::tempdir().unwrap();
        // In the user's cache directory; the files are removed at the end.
        let binary = dir.path().join("osbench");
        std::fs::copy("/bin/true", &binary).unwrap();
        let first = initramfs(&binary).unwrap();
        assert!(first.is_file());
        assert_eq!(initramfs(&binary).unwrap(), first, "reused");
        std::fs::write(&binary, std::fs::read("/bin/false").unwrap()).unwrap();
        let second = initramfs(&binary).unwrap();
        assert_ne!(second, first, "rebuilt for another binary");
        for p in [first, second] {
            std::fs::remove_file(p).unwrap();
        }
    }
}

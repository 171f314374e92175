//! The initramfs of a virtual-machine guest (QEMU and the like): a cpio
//! archive (the kernel's "newc" format, uncompressed) holding this osbench
//! at /bin/osbench, the shared libraries `ldd` names for it at their own
//! paths, /init (a symbolic link to it, which osbench runs as `agent
//! --init`), /dev/console and the empty mount points /proc, /sys, /dev, /tmp.
//! Booted with `console=ttyS0`, the guest's serial port is the agent's channel.
//!
//! Left out: compression (the kernel unpacks plain cpio), kernel modules (a
//! stock kernel has its serial console and tmpfs built in), a shell or any
//! other program. Format: the kernel's Documentation/driver-api/early-userspace/
//! buffer-format.rst.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Where the binary lives in the image, and what /init points at.
pub const BINARY: &str = "bin/osbench";

/// What [`write_initramfs`] put in the archive.
#[derive(Debug)]
pub struct Written {
    /// The archive's size in bytes.
    pub bytes: u64,
    /// The shared libraries copied, as their paths in the image.
    pub libraries: Vec<PathBuf>,
}

/// Writes the initramfs for `binary` to `out`, atomically (a temporary file
/// beside it, renamed when complete; removed on an error).
pub fn write_initramfs(binary: &Path, out: &Path) -> Result<Written> {
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if out.is_dir() || !dir.is_dir() {
        return Err(Error::Usage(format!(
            "cannot write the initramfs to {}: {}; name a file in an existing directory",
            out.display(),
            if out.is_dir() {
                "it is a directory"
            } else {
                "its directory does not exist"
            }
        )));
    }
    let libraries = libraries(binary)?;
    let io_err = |what: &str, e: io::Error| Error::io(format!("{what} {}", out.display()), e);
    let temp = tempfile::Builder::new()
        .prefix(".osbench-initramfs-")
        .tempfile_in(dir)
        .map_err(|e| io_err("creating a temporary file beside", e))?;
    let mut cpio = Cpio::new(BufWriter::new(temp.as_file()));
    cpio.contents(binary, &libraries)
        .and_then(|()| cpio.finish())
        .map_err(|e| io_err("writing", e))?;
    let bytes = cpio.written;
    drop(cpio);
    temp.persist(out)
        .map_err(|e| io_err("renaming the finished archive to", e.error))?;
    Ok(Written { bytes, libraries })
}

/// The shared libraries and the program interpreter that `binary` loads,
/// as absolute paths (none for a static binary), from `ldd`.
pub fn libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(binary).output().map_err(|e| {
        Error::io(
            format!(
                "running ldd on {} (it lists the libraries the guest needs; Debian: libc-bin)",
                binary.display()
            ),
            e,
        )
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        if said.contains("not a dynamic executable") || said.contains("statically linked") {
            return Ok(Vec::new());
        }
        return Err(Error::Measure(format!(
            "ldd {} failed ({}): {}",
            binary.display(),
            out.status,
            said.trim()
        )));
    }
    parse_ldd(&text)
}

/// The paths in `ldd`'s output: `name => /path (0x…)` and `/path (0x…)`
/// lines; the vDSO has none. A library `not found` is an error.
fn parse_ldd(text: &str) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for line in text.lines().map(str::trim) {
        let target = line.split_once("=>").map_or(line, |(_, t)| t.trim());
        if target.starts_with("not found") {
            return Err(Error::Measure(format!(
                "a library of osbench is missing ({line}); the guest could not run it"
            )));
        }
        let path = target.split(" (0x").next().unwrap_or("").trim();
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    Ok(paths)
}

/// A newc cpio archive being written.
struct Cpio<W: Write> {
    out: W,
    inode: u32,
    written: u64,
}

const DIR: u32 = 0o040_755;
const FILE: u32 = 0o100_755;
const SYMLINK: u32 = 0o120_777;
const CHAR_DEVICE: u32 = 0o020_600;

impl<W: Write> Cpio<W> {
    fn new(out: W) -> Self {
        Self {
            out,
            inode: 0,
            written: 0,
        }
    }

    /// Everything of the image: directories, the console, the binary, /init
    /// and the libraries (each parent directory before what it holds).
    fn contents(&mut self, binary: &Path, libraries: &[PathBuf]) -> io::Result<()> {
        let mut dirs = vec!["bin".to_string(), "dev".into(), "proc".into()];
        dirs.extend(["sys".into(), "tmp".into()]);
        for lib in libraries {
            let mut parent = lib.parent();
            let mut chain = Vec::new();
            while let Some(p) = parent.filter(|p| *p != Path::new("/")) {
                chain.push(relative(p));
                parent = p.parent();
            }
            dirs.extend(chain.into_iter().rev());
        }
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        for dir in &dirs {
            self.entry(dir, DIR, (0, 0), 0, &mut io::empty())?;
        }
        // The kernel opens /dev/console as init's stdin, stdout and stderr.
        self.entry("dev/console", CHAR_DEVICE, (5, 1), 0, &mut io::empty())?;
        self.file(BINARY, binary)?;
        let target = BINARY.as_bytes();
        self.entry(
            "init",
            SYMLINK,
            (0, 0),
            target.len() as u64,
            &mut &target[..],
        )?;
        for lib in libraries {
            self.file(&relative(lib), lib)?;
        }
        Ok(())
    }

    /// A regular file named `name` with the contents of `source` (symbolic links followed).
    fn file(&mut self, name: &str, source: &Path) -> io::Result<()> {
        let mut f = File::open(source)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", source.display())))?;
        let len = f.metadata()?.len();
        self.entry(name, FILE, (0, 0), len, &mut f)
    }

    /// One entry: the 110-byte header, the name, the data, each padded to 4 bytes.
    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        rdev: (u32, u32),
        len: u64,
        data: &mut dyn Read,
    ) -> io::Result<()> {
        let size = u32::try_from(len)
            .map_err(|_| io::Error::other(format!("{name} is over 4 GiB, too big for cpio")))?;
        self.inode += 1;
        let name_size = name.len() as u32 + 1;
        let fields = [
            self.inode, mode, 0, 0, 1, 0, size, 0, 0, rdev.0, rdev.1, name_size, 0,
        ];
        let mut header = String::from("070701");
        for f in fields {
            header.push_str(&format!("{f:08X}"));
        }
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        let copied = io::copy(&mut data.take(len), &mut self.out)?;
        if copied != len {
            return Err(io::Error::other(format!(
                "{name} changed while it was copied"
            )));
        }
        self.written += copied;
        self.pad()
    }

    /// The trailer entry, then a flush.
    fn finish(&mut self) -> io::Result<()> {
        self.entry("TRAILER!!!", 0, (0, 0), 0, &mut io::empty())?;
        self.out.flush()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let fill = (4 - self.written % 4) % 4;
        self.put(&[0u8; 3][..fill as usize])
    }
}

/// `path` without its leading slash: how cpio names it.
fn relative(path: &Path) -> String {
    path.to_string_lossy().trim_start_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One entry read back: name, mode, (rdev major, minor), data.
    type Entry = (String, u32, (u32, u32), Vec<u8>);

    /// Reads a newc archive back, checking its magic and alignment.
    fn read_back(bytes: &[u8]) -> Vec<Entry> {
        let mut entries = Vec::new();
        let mut at = 0;
        loop {
            assert_eq!(at % 4, 0, "entries start 4-byte aligned");
            assert_eq!(&bytes[at..at + 6], b"070701");
            let field = |i: usize| {
                let s = std::str::from_utf8(&bytes[at + 6 + 8 * i..at + 14 + 8 * i]).unwrap();
                u32::from_str_radix(s, 16).unwrap()
            };
            let (mode, size, name_size) = (field(1), field(6) as usize, field(11) as usize);
            let rdev = (field(9), field(10));
            let name_at = at + 110;
            let name = std::str::from_utf8(&bytes[name_at..name_at + name_size - 1]).unwrap();
            assert_eq!(bytes[name_at + name_size - 1], 0, "names end in NUL");
            let data_at = (name_at + name_size).next_multiple_of(4);
            let data = bytes[data_at..data_at + size].to_vec();
            at = (data_at + size).next_multiple_of(4);
            if name == "TRAILER!!!" {
                assert_eq!(at, bytes.len(), "nothing after the trailer");
                return entries;
            }
            entries.push((name.to_string(), mode, rdev, data));
        }
    }

    #[test]
    fn ldd_output_gives_the_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f21)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f21)\n";
        let paths = parse_ldd(text).unwrap();
        assert_eq!(
            paths,
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        let missing = parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err();
        assert!(missing.to_string().contains("libfoo.so.1"), "{missing}");
    }

    #[test]
    fn the_image_holds_the_binary_its_libraries_init_and_the_console() {
        let dir = tempfile::tempdir().unwrap();
        // This test's own executable stands in for osbench: it is dynamically linked too.
        let binary = std::env::current_exe().unwrap();
        let out = dir.path().join("osbench.cpio");
        let written = write_initramfs(&binary, &out).unwrap();
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(written.bytes, bytes.len() as u64);
        let entries = read_back(&bytes);
        let find = |name: &str| entries.iter().find(|e| e.0 == name);
        let (_, mode, _, data) = find(BINARY).expect("the binary");
        assert_eq!(*mode, FILE);
        assert!(*data == std::fs::read(&binary).unwrap());
        let (_, mode, _, target) = find("init").expect("/init");
        assert_eq!((*mode, target.as_slice()), (SYMLINK, BINARY.as_bytes()));
        let (_, mode, rdev, _) = find("dev/console").expect("/dev/console");
        assert_eq!((*mode, *rdev), (CHAR_DEVICE, (5, 1)));
        for dir in ["proc", "sys", "tmp", "dev", "bin"] {
            assert_eq!(find(dir).map(|e| e.1), Some(DIR), "{dir}");
        }
        assert!(
            !written.libraries.is_empty(),
            "a glibc binary has libraries"
        );
        for lib in &written.libraries {
            let (_, _, _, data) = find(&relative(lib)).expect("each library");
            assert_eq!(&data[..4], b"\x7fELF", "{}", lib.display());
            // Its directories come before it.
            let parent = relative(lib.parent().unwrap());
            let pos = |n: &str| entries.iter().position(|e| e.0 == n).unwrap();
            assert!(pos(&parent) < pos(&relative(lib)), "{parent}");
        }
        let names: Vec<&String> = entries.iter().map(|e| &e.0).collect();
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "no entry twice: {names:?}");
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("osbench.cpio");
        let e = write_initramfs(&dir.path().join("no-such-binary"), &out).unwrap_err();
        assert!(e.to_string().contains("no-such-binary"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let binary = std::env::current_exe().unwrap();
        let e = write_initramfs(&binary, dir.path()).unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
        let e = write_initramfs(&binary, &dir.path().join("no/such.cpio")).unwrap_err();
        assert!(e.to_string().contains("directory does not exist"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

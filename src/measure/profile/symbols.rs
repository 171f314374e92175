//! Names for the addresses a profiling pass sampled, with the `blazesym`
//! crate: kernel addresses from /proc/kallsyms, user addresses of a process
//! from the ELF symbols of the files its `/proc/<pid>/maps` maps there. Each
//! distinct address is looked up once. Left out: source lines, inlined
//! functions and DWARF (function names are what a folded stack keeps), and
//! vmlinux images (kallsyms names every kernel function sampling can hit).
//!
//! An address no symbol covers is named [`UNKNOWN_KERNEL`] or
//! [`UNKNOWN_USER`], never by its hex value: a folded stack must compare
//! equal between runs whose address layouts differ.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};

use crate::document::profile::{UNKNOWN_KERNEL, UNKNOWN_USER, UNLISTED_KERNEL};

/// The names of a pass's addresses: kernel ones, and user ones per process.
#[derive(Debug, Default)]
pub(super) struct Names {
    kernel: HashMap<u64, String>,
    user: HashMap<(u32, u64), String>,
}

impl Names {
    /// The name of `addr`, a kernel address or one of process `pid`.
    pub(super) fn name(&self, pid: u32, kernel: bool, addr: u64) -> &str {
        if kernel {
            self.kernel
                .get(&addr)
                .map_or(UNKNOWN_KERNEL, String::as_str)
        } else {
            self.user
                .get(&(pid, addr))
                .map_or(UNKNOWN_USER, String::as_str)
        }
    }
}

/// Names `kernel` addresses and each process's `user` addresses; what could
/// not be named (kernel symbols hidden, processes gone) is said in `notes`.
pub(super) fn symbolise(
    kernel: &BTreeSet<u64>,
    user: &BTreeMap<u32, BTreeSet<u64>>,
    notes: &mut Vec<String>,
) -> Names {
    let symbolizer = Symbolizer::new();
    let mut names = Names::default();
    if !kernel.is_empty() {
        match kernel_symbols_hidden() {
            Some(note) => notes.push(note),
            None => {
                let addrs: Vec<u64> = kernel.iter().copied().collect();
                let found = symbolise_kernel(&symbolizer, &addrs);
                names.kernel = named(&addrs, found).collect();
            }
        }
    }
    let mut gone = Vec::new();
    for (&pid, addrs) in user {
        let addrs: Vec<u64> = addrs.iter().copied().collect();
        match symbolise_process(&symbolizer, pid, &addrs) {
            Ok(found) => names
                .user
                .extend(named(&addrs, found).map(|(a, n)| ((pid, a), n))),
            Err(_) => gone.push(pid),
        }
    }
    if !gone.is_empty() {
        notes.push(format!(
            "user frames of {} process(es) that exited before the pass ended (pid {}) are \
             {UNKNOWN_USER}: their memory maps were gone when symbols were looked up",
            gone.len(),
            gone.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    names
}

/// The named ones of `addrs`, paired with their names.
fn named(addrs: &[u64], found: Vec<Option<String>>) -> impl Iterator<Item = (u64, String)> + '_ {
    addrs
        .iter()
        .zip(found)
        .filter_map(|(&a, n)| n.map(|n| (a, n)))
}

/// Why kernel frames cannot be named, when /proc/kallsyms shows every
/// address as zero (kernel.kptr_restrict hides them from this user) or
/// cannot be read; None when they can be.
pub(super) fn kernel_symbols_hidden() -> Option<String> {
    let restrict = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let kallsyms = match std::fs::read_to_string("/proc/kallsyms") {
        Ok(text) => text,
        Err(e) => {
            return Some(format!(
                "kernel symbols unavailable: /proc/kallsyms cannot be read ({e}); kernel frames \
                 are {UNKNOWN_KERNEL}"
            ));
        }
    };
    let visible = kallsyms.lines().take(1000).any(|line| {
        line.split(' ')
            .next()
            .is_some_and(|a| !a.trim_start_matches('0').is_empty())
    });
    (!visible).then(|| {
        format!(
            "kernel symbols hidden: kernel.kptr_restrict is {restrict}; as root, \
             `sysctl kernel.kptr_restrict=0` shows them"
        )
    })
}

/// The names of kernel addresses `addrs` from /proc/kallsyms (None: no
/// symbol covers it, or kallsyms could not be used).
pub(super) fn symbolise_kernel(symbolizer: &Symbolizer, addrs: &[u64]) -> Vec<Option<String>> {
    let source = Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Default,
        vmlinux: MaybeDefault::None,
        kaslr_offset: None,
        debug_syms: false,
        ..Default::default()
    });
    let found: Vec<Option<String>> = match symbolizer.symbolize(&source, Input::AbsAddr(addrs)) {
        Ok(found) => found.into_iter().map(sym_name).collect(),
        Err(_) => return vec![None; addrs.len()],
    };
    let text = std::fs::read_to_string("/proc/kallsyms")
        .map(|k| KernelText::of(&k))
        .unwrap_or_default();
    addrs
        .iter()
        .zip(found)
        .map(|(&addr, name)| name.map(|n| text.checked(addr, n)))
        .collect()
}

/// What kallsyms says of the kernel's text: where the kernel proper's ends,
/// and which names are functions. kallsyms has no sizes, so a lookup names
/// the nearest symbol below an address: past the text, for code the
/// kernel generated and did not list, that is a data symbol.
#[derive(Debug, Default)]
struct KernelText {
    end: u64,
    functions: std::collections::HashSet<String>,
}

impl KernelText {
    fn of(kallsyms: &str) -> Self {
        let mut text = Self::default();
        for line in kallsyms.lines() {
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            match kind {
                "T" | "t" | "W" | "w" => {
                    text.functions.insert(name.to_string());
                }
                _ => {}
            }
            if name == "_etext" {
                text.end = u64::from_str_radix(addr, 16).unwrap_or(0);
            }
        }
        text
    }

    /// `name` for `addr`, or [`UNLISTED_KERNEL`] when `addr` lies past the
    /// kernel's text and `name` is no function.
    fn checked(&self, addr: u64, name: String) -> String {
        if self.end != 0 && addr >= self.end && !self.functions.contains(&name) {
            UNLISTED_KERNEL.to_string()
        } else {
            name
        }
    }
}

/// The names of addresses `addrs` in process `pid`; Err when its memory map
/// cannot be read (it exited). Reads the mapped files through
/// `/proc/<pid>/map_files` (robust to deleted or replaced binaries, but it
/// needs CAP_SYS_ADMIN), falling back to their paths.
pub(super) fn symbolise_process(
    symbolizer: &Symbolizer,
    pid: u32,
    addrs: &[u64],
) -> Result<Vec<Option<String>>, String> {
    if pid == 0 {
        return Err("pid 0 (the idle task) has no user space".into());
    }
    let source = |map_files| {
        Source::Process(Process {
            debug_syms: false,
            perf_map: false,
            map_files,
            vdso: true,
            ..Process::new(Pid::from(pid))
        })
    };
    let found = symbolizer
        .symbolize(&source(true), Input::AbsAddr(addrs))
        .or_else(|_| symbolizer.symbolize(&source(false), Input::AbsAddr(addrs)))
        .map_err(|e| format!("process {pid}: {e}"))?;
    Ok(found.into_iter().map(sym_name).collect())
}

fn sym_name(found: Symbolized<'_>) -> Option<String> {
    found
        .into_sym()
        .map(|sym| sym.name.into_owned())
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_be_named(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(3)
    }

    #[test]
    fn a_function_of_this_process_is_named() {
        let f: fn(u64) -> u64 = a_function_to_be_named;
        assert_eq!(f(2), 6);
        let addr = f as usize as u64;
        let symbolizer = Symbolizer::new();
        let names = symbolise_process(&symbolizer, std::process::id(), &[addr, 8]).unwrap();
        let name = names[0].as_deref().unwrap_or("<none>");
        assert!(name.contains("a_function_to_be_named"), "{name}");
        assert_eq!(names[1], None, "address 8 is mapped by nothing");
    }

    #[test]
    fn a_kernel_function_is_named() {
        if let Some(why) = kernel_symbols_hidden() {
            eprintln!("skipped: {why}");
            return;
        }
        let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
        // A text symbol of the kernel proper (not a module's: no fourth field).
        let text = |line: &str| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields[..] {
                [a, "T" | "t", n] => Some((u64::from_str_radix(a, 16).ok()?, n.to_string())),
                _ => None,
            }
        };
        let wanted = ["do_sys_openat2", "schedule"];
        let (addr, name) = kallsyms
            .lines()
            .filter_map(text)
            .find(|(_, n)| wanted.contains(&n.as_str()))
            .expect("do_sys_openat2 or schedule in /proc/kallsyms");
        let symbolizer = Symbolizer::new();
        let names = symbolise_kernel(&symbolizer, &[addr + 1]);
        assert_eq!(names[0].as_deref(), Some(name.as_str()));
    }

    #[test]
    fn past_the_text_a_data_symbol_is_unlisted_code_not_a_name() {
        let kallsyms = "ffffffff81000000 T _stext\nffffffff81000100 T do_syscall_64\n\
                        ffffffff82000000 T _etext\nffffffff83000000 R __stop_runtime_ptr_X\n\
                        ffffffffc0203000 t ftrace_trampoline\t[__builtin__ftrace]\n";
        let text = KernelText::of(kallsyms);
        let name = |addr, n: &str| text.checked(addr, n.to_string());
        assert_eq!(
            name(0xffff_ffff_8100_0120, "do_syscall_64"),
            "do_syscall_64"
        );
        assert_eq!(
            name(0xffff_ffff_c000_1000, "__stop_runtime_ptr_X"),
            UNLISTED_KERNEL
        );
        assert_eq!(
            name(0xffff_ffff_c020_3010, "ftrace_trampoline"),
            "ftrace_trampoline"
        );
        assert_eq!(
            KernelText::of("").checked(1, "x".into()),
            "x",
            "no kallsyms: as named"
        );
    }

    #[test]
    fn unnamed_addresses_are_unknown_not_hex() {
        let names = Names::default();
        assert_eq!(names.name(1, true, 0xffff_ffff_8100_0000), UNKNOWN_KERNEL);
        assert_eq!(names.name(1, false, 0x1000), UNKNOWN_USER);
        let mut notes = Vec::new();
        let mut user = BTreeMap::new();
        // A pid far above pid_max: no such process.
        user.insert(999_999_999u32, BTreeSet::from([0x1000u64]));
        let names = symbolise(&BTreeSet::new(), &user, &mut notes);
        assert_eq!(names.name(999_999_999, false, 0x1000), UNKNOWN_USER);
        assert!(notes.iter().any(|n| n.contains("exited")), "{notes:?}");
    }
}

//! `mmap`: the cost of mapping, unmapping and protecting memory by size,
//! with each anchor's own definition as a case of its own.
//!
//! - `mmap` (LEBench `mmap_test`): mmap() alone of `pages` pages of a
//!   page-cached file, MAP_PRIVATE read-only; nothing touched;
//! - `munmap` (LEBench `munmap_test`): munmap() alone of such a mapping made
//!   writable and written (one byte per page, which gives each page its
//!   private copy as LEBench's write of every byte does);
//! - `lat_mmap` (lmbench `lat_mmap`): mmap() of `pages` pages of the file
//!   MAP_SHARED read-write, a write every 16 KiB over the first tenth, and
//!   munmap(); lmbench's `Mmap Latency` column is its largest size, `$MB`
//!   (8 MiB = 2048 pages, its default). The file is the mapping's size;
//!   lmbench's script maps prefixes of one `$MB` file, which made its
//!   512 KiB figure three times slower here (see docs/crosscheck.md);
//! - `mprotect`: mprotect() of the middle page of a populated anonymous
//!   mapping of `pages` pages, alternately read-only and read-write, so
//!   every call splits or merges the mapping and changes one PTE.
//!
//! Every sample is one whole run of several operations: for `mmap` and
//! `munmap` up to 100 calls (fewer for large sizes, so that a run holds at
//! most 100 MiB), the other half (the munmaps, or the mmaps and writes)
//! done untimed in `prepare`; LEBench times one call between two clock
//! reads, osbench subtracts its measured clock overhead once per run.
//! `lat_mmap` runs 50 of lmbench's operations, `mprotect` 1,000 calls.
//! Where a `lat_mmap` mapping lands matters: on Linux 6.18 a 1 MiB mapping
//! across a 2 MiB boundary took 38-39 µs an operation, one inside a 2 MiB
//! block 11 µs (Intel guest). lmbench's process gets one place from ASLR
//! and keeps it, so each of its processes reads one of the two; with
//! `place=random` (the default) each of a run's operations maps at a page
//! drawn at random within a free 2 MiB block, as a new process would land,
//! so a run averages the places; `place=kernel` leaves it to the kernel
//! (as it is for mappings of 2 MiB or more, which the kernel aligns to 2 MiB).
//! Left out: will-it-scale's parallel mmap1/2 copies, lmbench's `-r`
//! (random) variant, huge pages.

use std::os::fd::AsRawFd;

use tempfile::NamedTempFile;

use super::fault::{
    PAGES, Region, cached_file, check_memory, lebench_size, map_error, write_every,
};
use super::util::page_size;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;
use crate::rng::SplitMix64;

pub static DEF: BenchDef = BenchDef {
    name: "mmap",
    summary: "mmap / munmap / mprotect by size (LEBench mmap and munmap, lmbench lat_mmap)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "case",
            help: "which call is timed",
            kind: ParamKind::Choice(&["mmap", "munmap", "lat_mmap", "mprotect"]),
            default: "lat_mmap",
        },
        PAGES,
        ParamSpec {
            name: "place",
            help: "lat_mmap: random maps each operation at a random page of a free 2 MiB block (a run averages where a process may land); kernel leaves it to the kernel, as lmbench's one process does",
            kind: ParamKind::Choice(&["random", "kernel"]),
            default: "random",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("case", "mmap"), ("pages", "1")],
        &[("case", "mmap"), ("pages", "1000")],
        &[("case", "munmap"), ("pages", "1")],
        &[("case", "munmap"), ("pages", "1000")],
        &[("case", "lat_mmap"), ("pages", "128")],
        &[("case", "lat_mmap")],
        &[("case", "mprotect")],
    ]),
    case_name: |p| {
        let place = if p.get("place") == "kernel" {
            "/kernel"
        } else {
            ""
        };
        format!("{}/{}p{place}", p.get("case"), p.int("pages"))
    },
    op: |p| match p.get("case") {
        "mmap" => format!(
            "one mmap() of {} file pages, MAP_PRIVATE read-only",
            p.int("pages")
        ),
        "munmap" => format!(
            "one munmap() of {} written MAP_PRIVATE file pages",
            p.int("pages")
        ),
        "lat_mmap" => format!(
            "mmap() of {} file pages MAP_SHARED + a write every 16 KiB of the first tenth + munmap()",
            p.int("pages")
        ),
        _ => "one mprotect() of one page in the middle of a populated mapping".to_string(),
    },
    anchor: |p| {
        let pages = p.int("pages");
        match p.get("case") {
            "mmap" => format!("LEBench {}mmap", lebench_size(pages)),
            "munmap" => format!("LEBench {}munmap", lebench_size(pages)),
            "lat_mmap" => format!("lat_mmap {}k FILE", pages * 4),
            _ => "(none: mprotect)".to_string(),
        }
    },
    differs: "the file is the mapping's size, where lmbench's script maps prefixes of one $MB (8 MiB) file: lat_mmap 512k took 55-59 µs on an 8 MiB file and 18-19 µs on a 512 KiB one here (osbench 17-20 µs); mmap and munmap time runs of up to 100 calls (LEBench one call per pair of clock reads); lat_mmap below 80 pages (320 KiB) is refused by lmbench and run here. lat_mmap at 1 MiB has two modes on the Intel guest (Linux 6.18): 10 and 35 µs, in lmbench as in osbench (mode to mode 0.99), decided by where the process's mapping lands: across a 2 MiB boundary 38-39 µs a run, inside one 11 µs (a replica of lmbench's loop over 8 processes, 7 Dec); ASLR places it anew in each process (with it off, lat_mmap 1m read 42-44 µs in every process), so one process reads one mode; place=random draws a place an operation.",
    ops_per_iter,
    setup,
    sampling: Sampling::WholeRuns,
    check,
    ..BenchDef::DEFAULTS
};

/// Most mappings one run of `mmap` or `munmap` makes.
const MAX_BATCH: usize = 100;

/// Mappings per run of `mmap` / `munmap`: at most 100 MiB in all.
fn batch(p: &Params) -> usize {
    let bytes = p.int("pages") as usize * page_size();
    ((100 << 20) / bytes).clamp(1, MAX_BATCH)
}

/// lmbench operations per `lat_mmap` run, mprotect pairs per `mprotect` run.
const LAT_MMAP_RUN: u64 = 50;
const MPROTECT_PAIRS_RUN: u64 = 500;

fn ops_per_iter(p: &Params) -> f64 {
    match p.get("case") {
        "mmap" | "munmap" => batch(p) as f64,
        "mprotect" => 2.0 * MPROTECT_PAIRS_RUN as f64,
        _ => LAT_MMAP_RUN as f64,
    }
}

fn check(p: &Params) -> Result<()> {
    if p.get("place") == "kernel" && p.get("case") != "lat_mmap" {
        return Err(Error::Measure(format!(
            "mmap:{p}: place is lat_mmap's; drop it or use case=lat_mmap"
        )));
    }
    let bytes = (p.int("pages") as usize * page_size()) as u64;
    let (mappings, resident) = match p.get("case") {
        "mmap" => (batch(p), bytes),
        "munmap" => (batch(p), bytes * batch(p) as u64),
        _ => (1, bytes),
    };
    let what = format!("mmap:{p}");
    check_memory(&what, bytes * mappings as u64, resident)?;
    check_map_count(&what, mappings)
}

/// Stops a case that would take the process past vm.max_map_count.
pub(crate) fn check_map_count(what: &str, mappings: usize) -> Result<()> {
    let max: Option<usize> = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let used = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count());
    match max {
        // Room for the run's own mappings (threads, the allocator) besides the case's.
        Some(max) if used + mappings + 1000 > max => Err(Error::Measure(format!(
            "{what} needs {mappings} more mappings, but vm.max_map_count is {max} and {used} are \
             in use: raise it (`sysctl vm.max_map_count={}`) or ask for fewer",
            used + mappings + 1000
        ))),
        _ => Ok(()),
    }
}

enum Call {
    Mmap,
    Munmap,
    LatMmap,
    Mprotect,
}

struct Mmap {
    call: Call,
    bytes: usize,
    page: usize,
    batch: usize,
    /// The file the mappings are of (the anonymous mapping for mprotect).
    file: Option<NamedTempFile>,
    /// The mappings `mmap` made or `munmap` is to remove.
    made: [*mut u8; MAX_BATCH],
    count: usize,
    populated: Option<Region>,
    /// lat_mmap with place=random: where the next run's operations map,
    /// and the draws.
    places: Option<(Vec<usize>, SplitMix64)>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(make(p)?))
}

fn make(p: &Params) -> Result<Mmap> {
    let page = page_size();
    let bytes = p.int("pages") as usize * page;
    let call = match p.get("case") {
        "mmap" => Call::Mmap,
        "munmap" => Call::Munmap,
        "lat_mmap" => Call::LatMmap,
        _ => Call::Mprotect,
    };
    let (file, populated) = match call {
        Call::Mprotect => {
            let r = Region::anonymous(bytes).map_err(|e| map_error("mapping the pages", e))?;
            write_every(&r, page, 1);
            (None, Some(r))
        }
        _ => (Some(cached_file("mmap", bytes)?), None),
    };
    Ok(Mmap {
        call,
        bytes,
        page,
        batch: batch(p),
        file,
        made: [std::ptr::null_mut(); MAX_BATCH],
        count: 0,
        populated,
        // The kernel itself aligns a file mapping of 2 MiB or more to 2 MiB.
        places: (p.get("case") == "lat_mmap" && p.get("place") == "random" && bytes < BLOCK).then(
            || {
                (
                    Vec::with_capacity(LAT_MMAP_RUN as usize),
                    SplitMix64::new(u64::from(std::process::id())),
                )
            },
        ),
    })
}

impl Mmap {
    fn fd(&self) -> i32 {
        self.file.as_ref().map_or(-1, |f| f.as_file().as_raw_fd())
    }

    /// Unmaps what the last run (or prepare) left mapped.
    fn unmap_made(&mut self) {
        for p in &mut self.made[..self.count] {
            // SAFETY: a live mapping of `bytes` this workload made and nothing else uses.
            unsafe { libc::munmap(p.cast(), self.bytes) };
            *p = std::ptr::null_mut();
        }
        self.count = 0;
    }

    /// Draws the next run's places: a free range of three 2 MiB blocks
    /// found by the kernel (mapped without access and unmapped again), and
    /// in its first whole block a page at random for each operation (the
    /// mapping, under 2 MiB, ends inside the range).
    fn draw_places(&mut self) -> Result<()> {
        let Some((places, rng)) = &mut self.places else {
            return Ok(());
        };
        let window = Region::map(
            3 * BLOCK,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
        )
        .map_err(|e| map_error("finding a free range for lat_mmap's places", e))?;
        let block = (window.ptr as usize).next_multiple_of(BLOCK);
        drop(window);
        places.clear();
        let pages = BLOCK / self.page;
        places.extend((0..LAT_MMAP_RUN).map(|_| block + rng.below(pages) * self.page));
        Ok(())
    }
}

/// The block a lat_mmap place is drawn in: a PMD's span on x86-64.
const BLOCK: usize = 2 << 20;

/// mmap() at `place` if that range is free (else where the kernel
/// chooses), or with no hint at all, the result checked.
#[inline(always)]
fn map_at(place: Option<usize>, bytes: usize, prot: i32, flags: i32, fd: i32) -> Result<*mut u8> {
    let hint = place.map_or(std::ptr::null_mut(), |a| a as *mut libc::c_void);
    // SAFETY: a hint without MAP_FIXED never replaces an existing mapping.
    let p = unsafe { libc::mmap(hint, bytes, prot, flags, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(map_error("a timed mmap()", std::io::Error::last_os_error()));
    }
    Ok(p.cast())
}

impl Workload for Mmap {
    fn prepare(&mut self) -> Result<()> {
        self.unmap_made();
        self.draw_places()?;
        if let Call::Munmap = self.call {
            for i in 0..self.batch {
                let rw = libc::PROT_READ | libc::PROT_WRITE;
                self.made[i] = map_at(None, self.bytes, rw, libc::MAP_PRIVATE, self.fd())?;
                self.count = i + 1;
                let r = Region {
                    ptr: self.made[i],
                    len: self.bytes,
                };
                write_every(&r, self.page, 0x6b);
                // Owned by `made`, unmapped by the timed run.
                std::mem::forget(r);
            }
        }
        Ok(())
    }

    fn run(&mut self, _iters: u64) -> Result<()> {
        let fd = self.fd();
        match self.call {
            Call::Mmap => {
                for i in 0..self.batch {
                    self.made[i] =
                        map_at(None, self.bytes, libc::PROT_READ, libc::MAP_PRIVATE, fd)?;
                    self.count = i + 1;
                }
            }
            Call::Munmap => {
                for p in &self.made[..self.count] {
                    // SAFETY: a live mapping prepare made; forgotten below.
                    if unsafe { libc::munmap(p.cast(), self.bytes) } != 0 {
                        return Err(Error::last_os("a timed munmap()"));
                    }
                }
                self.count = 0;
            }
            Call::LatMmap => {
                let rw = libc::PROT_READ | libc::PROT_WRITE;
                let places = self.places.as_ref().map(|(p, _)| p.as_slice());
                for i in 0..LAT_MMAP_RUN as usize {
                    let place = places.map(|p| p[i]);
                    let r = Region {
                        ptr: map_at(place, self.bytes, rw, libc::MAP_SHARED, fd)?,
                        len: self.bytes,
                    };
                    write_first_tenth(&r, self.bytes as u8);
                    // Dropping it unmaps it.
                }
            }
            Call::Mprotect => {
                let Some(r) = &self.populated else {
                    return Err(Error::Measure("mprotect: no mapping".into()));
                };
                let pages = self.bytes / self.page;
                // SAFETY: the page is inside the live mapping `r`.
                let middle = unsafe { r.ptr.add(pages / 2 * self.page) };
                for _ in 0..MPROTECT_PAIRS_RUN {
                    for prot in [libc::PROT_READ, libc::PROT_READ | libc::PROT_WRITE] {
                        // SAFETY: one page of our own mapping; nothing reads or
                        // writes it while it is read-only.
                        if unsafe { libc::mprotect(middle.cast(), self.page, prot) } != 0 {
                            return Err(Error::last_os("a timed mprotect()"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.unmap_made();
        Ok(())
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        self.unmap_made();
    }
}

/// lmbench's touch: a byte every 16 KiB over the first tenth of the mapping.
#[inline(never)]
fn write_first_tenth(r: &Region, byte: u8) {
    let end = r.len / 10;
    let mut off = 0;
    while off < end {
        // SAFETY: `off` is inside the live, writable mapping.
        unsafe { r.ptr.add(off).write_volatile(byte) };
        off += 16 << 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of /proc/self/maps that map `path`.
    fn mappings_of(path: &std::path::Path) -> usize {
        let path = path.to_str().unwrap();
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| l.contains(path))
            .count()
    }

    #[test]
    fn every_case_runs_and_unmaps_what_it_mapped() {
        for case in ["mmap", "munmap", "lat_mmap", "mprotect"] {
            for pages in ["1", "100"] {
                let p = Params::new(&DEF, &[("case", case), ("pages", pages)]);
                let mut m = make(&p).unwrap();
                for _ in 0..3 {
                    m.prepare().unwrap();
                    m.run(5).unwrap();
                }
                if case == "mmap" {
                    assert_eq!(m.count, batch(&p));
                }
                Box::new(m).teardown().unwrap();
            }
        }
    }

    /// lat_mmap under 2 MiB draws each operation's page anew within one
    /// free 2 MiB block; 2 MiB and more, and place=kernel, leave it to the
    /// kernel; place is lat_mmap's alone.
    #[test]
    fn lat_mmap_places_are_drawn_anew_within_a_free_block() {
        let p = Params::new(&DEF, &[("case", "lat_mmap"), ("pages", "256")]);
        assert_eq!((DEF.case_name)(&p), "lat_mmap/256p");
        let mut m = make(&p).unwrap();
        let mut runs = Vec::new();
        for _ in 0..2 {
            m.prepare().unwrap();
            let (places, _) = m.places.as_ref().unwrap();
            assert_eq!(places.len(), LAT_MMAP_RUN as usize);
            let block = places[0] / BLOCK * BLOCK;
            assert!(
                places
                    .iter()
                    .all(|&a| a % m.page == 0 && a / BLOCK * BLOCK == block)
            );
            let crossing = places.iter().filter(|&&a| a % BLOCK + m.bytes > BLOCK);
            assert!((1..50).contains(&crossing.count()), "{places:x?}");
            runs.push(places.clone());
            m.run(1).unwrap();
        }
        assert_ne!(runs[0], runs[1]);
        Box::new(m).teardown().unwrap();
        for (pages, place) in [("512", "random"), ("256", "kernel")] {
            let p = Params::new(
                &DEF,
                &[("case", "lat_mmap"), ("pages", pages), ("place", place)],
            );
            assert!(make(&p).unwrap().places.is_none(), "{pages} {place}");
        }
        let e = check(&Params::new(&DEF, &[("case", "mmap"), ("place", "kernel")]));
        assert!(e.unwrap_err().to_string().contains("place is lat_mmap's"));
    }

    #[test]
    fn mmap_runs_leave_no_mapping_behind() {
        let p = Params::new(&DEF, &[("case", "mmap"), ("pages", "3")]);
        let mut m = make(&p).unwrap();
        m.prepare().unwrap();
        m.run(1).unwrap();
        // The case's own file: other tests' threads map and unmap too.
        let path = m.file.as_ref().unwrap().path().to_path_buf();
        assert_eq!(mappings_of(&path), batch(&p));
        drop(m);
        assert_eq!(mappings_of(&path), 0);
    }

    #[test]
    fn batches_hold_at_most_100_mib() {
        for (pages, want) in [("1", 100), ("1000", 25), ("10000", 2), ("1048576", 1)] {
            assert_eq!(batch(&Params::new(&DEF, &[("pages", pages)])), want);
        }
    }

    #[test]
    fn too_many_mappings_are_refused_naming_the_limit() {
        let e = check_map_count("mmap:x", 1 << 40).unwrap_err().to_string();
        assert!(e.contains("vm.max_map_count is"), "{e}");
        assert!(check_map_count("mmap:x", 10).is_ok());
    }
}

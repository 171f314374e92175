//! `membw`: memory bandwidth as lmbench's `bw_mem SIZE OP` measures it —
//! one pass of an unrolled loop over a `kib` KiB buffer of 32-bit words,
//! reading (`rd`, `frd`), writing (`wr`, `fwr`), both (`rdwr`), copying to a
//! second buffer (`cp`, `fcp`), or libc's `memset` (`bzero`) and `memcpy`
//! (`bcopy`). Tables headline MB/s with lmbench's MB (10^6 B) and its byte
//! count: the buffer's size, once, for copies too.
//!
//! The loops follow lmbench's method as Debian's gcc 12 `-O2` builds it
//! (read from its disassembly): every 512-byte block of the buffer in turn,
//! unrolled whole; the "partial" operations (`rd`, `wr`, `rdwr`, `cp`)
//! touch every fourth word, the full ones every word; every word is read or
//! written by one scalar 32-bit access, and the reads add into one running
//! sum (`util::words`: volatile accesses the compiler can neither vectorise
//! nor merge) — except `fwr`, whose stores gcc makes 16-byte vector stores,
//! as the fill here compiles to. `bcopy` copies between two page-aligned
//! buffers (lmbench's default, which it calls "unaligned"). On x86-64,
//! `rd`, `frd` and `fcp` are gcc's own instructions (inline assembly: one
//! `add mem, reg` per word, a chain a block; a load and a store per word):
//! as the compiler's loops they read 0.91, 0.60 and 0.89 of lmbench on an
//! Intel Xeon, as gcc's 0.97, 0.99 and 1.01 (docs/crosscheck.md). The
//! others keep the volatile loops, which agree.
//!
//! Left out: lmbench's `conflict` variant (the second buffer offset by
//! 1,920 bytes) and its `-P` parallelism. The buffers are anonymous
//! mappings, zeroed and faulted in before timing (lmbench: valloc + bzero),
//! placed where glibc's valloc places lmbench's
//! ([`WorkingSet::placed_as_valloc`]: 2 MiB-aligned buffers made `bcopy`
//! read 1.23 of lmbench's on an AMD EPYC).

use std::hint::black_box;

use super::util::ring::WorkingSet;
use super::util::words::{self, load32, store32};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

/// The words of one of lmbench's 512-byte blocks.
const BLOCK_WORDS: usize = 128;

/// The size lmbench's summary reads each row at: the largest its run used
/// (its script's `$MB`); osbench's default cases take 256 MiB, beyond the
/// last-level caches of the machines it runs on, copies at half of it
/// (lmbench's `$HALF` list), so both buffers together are 256 MiB.
pub const TABLE_KIB: i64 = 256 * 1024;

pub static DEF: BenchDef = BenchDef {
    name: "membw",
    summary: "memory bandwidth: read, write, copy, memset, memcpy of a buffer (lmbench bw_mem)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "op",
            help: "lmbench's bw_mem operation: rd/wr/rdwr/cp touch every 4th word, frd/fwr/fcp every word, bzero/bcopy are libc's",
            kind: ParamKind::Choice(&[
                "rd", "wr", "rdwr", "cp", "frd", "fwr", "fcp", "bzero", "bcopy",
            ]),
            default: "frd",
        },
        ParamSpec {
            name: "kib",
            help: "buffer size in KiB (lmbench's SIZE; copies use two buffers of it)",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 24,
            },
            default: "262144",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("op", "rd")],
        &[("op", "wr")],
        &[("op", "rdwr")],
        &[("op", "cp"), ("kib", "131072")],
        &[("op", "frd")],
        &[("op", "fwr")],
        &[("op", "fcp"), ("kib", "131072")],
        &[("op", "bzero")],
        &[("op", "bcopy"), ("kib", "131072")],
    ]),
    case_name: |p| format!("{}/{}", p.get("op"), size_text(p.int("kib"))),
    op: |p| {
        let what = match p.get("op") {
            "rd" => "every 4th 32-bit word read and summed",
            "wr" => "every 4th 32-bit word written",
            "rdwr" => "every 4th 32-bit word read, summed and written",
            "cp" => "every 4th 32-bit word copied to a second buffer",
            "frd" => "every 32-bit word read and summed",
            "fwr" => "every 32-bit word written",
            "fcp" => "every 32-bit word copied to a second buffer",
            "bzero" => "memset to zero",
            _ => "memcpy to a second buffer",
        };
        format!("one pass over a {} KiB buffer: {what}", p.int("kib"))
    },
    anchor: |p| {
        format!(
            "bw_mem {} {}",
            size_text(p.int("kib")).to_lowercase(),
            p.get("op")
        )
    },
    differs: "MB/s counts the buffer once, copies included (lmbench's count); a median of samples of one or more passes, as lmbench takes the median of its 11 repetitions; lmbench's 512 B smallest size is below osbench's 1 KiB.",
    bytes_per_op: |p| Some(bytes(p) as f64),
    setup,
    check,
    ..BenchDef::DEFAULTS
};

fn bytes(p: &Params) -> usize {
    p.int("kib") as usize * 1024
}

/// "64K", "256M": a size in KiB as lmbench writes it (`memlat` and `file` too).
pub(super) fn size_text(kib: i64) -> String {
    if kib >= 1024 && kib % 1024 == 0 {
        format!("{}M", kib / 1024)
    } else {
        format!("{kib}K")
    }
}

/// What the buffers need, refused before anything runs when the machine
/// has not that much memory available.
fn check(p: &Params) -> Result<()> {
    let copies = matches!(p.get("op"), "cp" | "fcp" | "bcopy");
    let need = bytes(p) as u64 * if copies { 2 } else { 1 };
    super::fault::check_memory(&format!("membw:{p}"), need, need)
}

/// One of bw_mem's operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Rd,
    Wr,
    RdWr,
    Cp,
    FullRd,
    FullWr,
    FullCp,
    Bzero,
    Bcopy,
}

impl Op {
    fn parse(word: &str) -> Self {
        match word {
            "rd" => Op::Rd,
            "wr" => Op::Wr,
            "rdwr" => Op::RdWr,
            "cp" => Op::Cp,
            "frd" => Op::FullRd,
            "fwr" => Op::FullWr,
            "fcp" => Op::FullCp,
            "bzero" => Op::Bzero,
            _ => Op::Bcopy,
        }
    }

    fn copies(self) -> bool {
        matches!(self, Op::Cp | Op::FullCp | Op::Bcopy)
    }
}

struct MemBw {
    op: Op,
    src: WorkingSet,
    dst: WorkingSet,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(MemBw::new(p)?))
}

impl MemBw {
    /// The case's buffers: one, or two for a copy, of `kib` KiB each.
    fn new(p: &Params) -> Result<Self> {
        let op = Op::parse(p.get("op"));
        let map = |len| {
            WorkingSet::placed_as_valloc(len).map_err(|e| {
                Error::io(
                    format!("membw: mapping {} KiB (lower kib)", p.int("kib")),
                    e,
                )
            })
        };
        let src = map(bytes(p))?;
        let dst = map(if op.copies() { bytes(p) } else { 0 })?;
        Ok(MemBw { op, src, dst })
    }
}

impl Workload for MemBw {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.pass();
        }
        Ok(())
    }
}

impl MemBw {
    /// One pass of the operation over the whole buffer.
    fn pass(&mut self) {
        let src = black_box(self.src.as_words32_mut());
        match self.op {
            Op::Rd => {
                black_box(sum::<4>(src));
            }
            Op::FullRd => {
                black_box(sum::<1>(src));
            }
            Op::Wr => store_ones(src),
            Op::RdWr => {
                black_box(sum_and_store(src));
            }
            Op::FullWr => {
                for block in src.chunks_exact_mut(BLOCK_WORDS) {
                    block.fill(1);
                }
            }
            Op::Bzero => src.fill(0),
            Op::Cp | Op::FullCp | Op::Bcopy => {
                let dst = black_box(self.dst.as_words32_mut());
                match self.op {
                    Op::Cp => copy::<4>(src, dst),
                    Op::FullCp => full_copy(src, dst),
                    _ => dst.copy_from_slice(src),
                }
            }
        }
        black_box(&mut self.src);
    }
}

// The kernels below walk whole 512-byte blocks as `[u32; 128]` arrays and
// step through each with a constant stride, so the compiler unrolls the
// block completely, as gcc does lmbench's: a loop of iterators with a
// stride known only at run time compiled to a dozen instructions per word
// (measured: `cp` 14 % slower than lmbench's).

/// Whole 512-byte blocks of `words`.
fn blocks(words: &[u32]) -> impl Iterator<Item = &[u32; BLOCK_WORDS]> {
    words
        .chunks_exact(BLOCK_WORDS)
        .map(|b| b.try_into().expect("a whole block"))
}

/// Whole 512-byte blocks of `words`, to write.
fn blocks_mut(words: &mut [u32]) -> impl Iterator<Item = &mut [u32; BLOCK_WORDS]> {
    words
        .chunks_exact_mut(BLOCK_WORDS)
        .map(|b| b.try_into().expect("a whole block"))
}

/// The sum of every `STEP`-th word of each whole 512-byte block (lmbench's
/// `rd` at 4, `frd` at 1), in gcc's instructions where they are known
/// (x86-64): a chain of adds a block, each block's sum then added to the
/// total.
#[inline]
fn sum<const STEP: usize>(words: &[u32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        blocks(words).fold(0u32, |total, block| {
            total.wrapping_add(words::block_sum_as_gcc::<STEP>(block))
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut total = 0u32;
        for block in blocks(words) {
            let mut i = 0;
            while i < BLOCK_WORDS {
                total = total.wrapping_add(load32(&block[i]));
                i += STEP;
            }
        }
        total
    }
}

/// lmbench's `fcp`: every word of each whole block of `src` copied into
/// `dst`, in gcc's instructions where they are known (x86-64).
#[inline]
fn full_copy(src: &[u32], dst: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    for (from, to) in blocks(src).zip(blocks_mut(dst)) {
        words::block_copy_as_gcc(from, to);
    }
    #[cfg(not(target_arch = "x86_64"))]
    copy::<1>(src, dst)
}

/// 1 stored into every 4th word of each whole block (lmbench's `wr`).
#[inline]
fn store_ones(words: &mut [u32]) {
    for block in blocks_mut(words) {
        let mut i = 0;
        while i < BLOCK_WORDS {
            store32(&mut block[i], 1);
            i += 4;
        }
    }
}

/// lmbench's `rdwr`: every 4th word read into the sum, then set to 1.
#[inline]
fn sum_and_store(words: &mut [u32]) -> u32 {
    let mut total = 0u32;
    for block in blocks_mut(words) {
        let mut i = 0;
        while i < BLOCK_WORDS {
            total = total.wrapping_add(load32(&block[i]));
            store32(&mut block[i], 1);
            i += 4;
        }
    }
    total
}

/// Every `STEP`-th word of each whole block of `src` copied into `dst`.
#[inline]
fn copy<const STEP: usize>(src: &[u32], dst: &mut [u32]) {
    for (from, to) in blocks(src).zip(blocks_mut(dst)) {
        let mut i = 0;
        while i < BLOCK_WORDS {
            store32(&mut to[i], load32(&from[i]));
            i += STEP;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(op: &str, kib: &str) -> MemBw {
        let p = Params::new(&DEF, &[("op", op), ("kib", kib)]);
        check(&p).unwrap();
        MemBw::new(&p).unwrap()
    }

    #[test]
    fn the_partial_operations_touch_every_fourth_word_and_the_full_ones_all() {
        let mut w = case("wr", "4");
        w.pass();
        let words = w.src.as_words32_mut();
        assert_eq!(words.iter().filter(|&&x| x == 1).count(), 1024 / 4);
        assert_eq!(sum::<4>(words), 256);
        assert_eq!(sum::<1>(words), 256);
        let mut w = case("fwr", "4");
        w.pass();
        assert_eq!(sum::<1>(w.src.as_words32_mut()), 1024);
        let mut w = case("rdwr", "4");
        assert_eq!(sum_and_store(w.src.as_words32_mut()), 0);
        assert_eq!(sum_and_store(w.src.as_words32_mut()), 256);
    }

    #[test]
    fn copies_reach_the_second_buffer() {
        for (op, copied) in [("cp", 256), ("fcp", 1024), ("bcopy", 1024)] {
            let mut w = case(op, "4");
            w.src.as_words32_mut().fill(1);
            w.pass();
            let got = w.dst.as_words32_mut().iter().filter(|&&x| x == 1).count();
            assert_eq!(got, copied, "{op}");
        }
        let mut w = case("bzero", "4");
        w.src.as_words32_mut().fill(3);
        w.pass();
        assert_eq!(sum::<1>(w.src.as_words32_mut()), 0);
    }

    #[test]
    fn every_default_case_runs_at_a_small_size_and_names_its_anchor() {
        for fixed in DEF.default_cases() {
            let mut p = Params::new(&DEF, &fixed);
            assert!(p.int("kib") >= TABLE_KIB / 2, "{p}");
            assert!(
                (DEF.anchor)(&p).starts_with("bw_mem 128m ")
                    || (DEF.anchor)(&p).starts_with("bw_mem 256m ")
            );
            p.set("kib", "8");
            setup(&p, &Placement::unpinned()).unwrap().run(2).unwrap();
        }
        assert_eq!(size_text(512), "512K");
    }
}

//! `memlat`: memory load latency as lmbench's `lat_mem_rd` measures it — a
//! chain of pointers through a `kib` KiB buffer, each load's address the
//! value the previous load returned, so the loads cannot overlap and one
//! load costs the latency of the level of the memory hierarchy the buffer
//! fits in. lmbench's "Memory latencies" table reads it at fixed points: L1
//! at 1 KiB and L2 at 128 KiB with a 128-byte stride, main memory at the
//! largest size with the same stride, and "Rand mem" at the largest size
//! with `-t` (a random walk) and a 16-byte stride.
//!
//! The chains are lmbench's. `pattern=stride`: every `stride`-th byte in
//! order, wrapping to the start (its `stride_initialize`, which hardware
//! prefetchers predict). `pattern=random` (its `thrash_initialize`): the
//! pages of the buffer in a random order, one word per page on each lap,
//! the word within a page taken in bit-reversed order and shifted by one
//! each page, so each load lands on a different page (a TLB miss beyond the
//! TLB's reach) and a different cache line. A buffer that is not whole
//! pages is walked word by word in bit-reversed order.
//!
//! One op is one load; the harness times batches of 100 loads per
//! iteration (lmbench unrolls by 100 too), so its empty-loop overhead is
//! spread over them.
//!
//! **One buffer per sample.** A chain's latency depends on the physical
//! pages under its buffer: on the Intel guest (6 Dec), 128 KiB chains read
//! about 1.7 or 2.0 ns from one buffer to the next (consecutive buffers
//! alternating), within one process as between processes, and one buffer
//! moved to other virtual addresses (mremap) kept its figure. lmbench walks
//! one buffer per process, so its figure is one draw, and the spread shows
//! only between runs. osbench links `buffers` buffers (16 by default, at
//! most 64 MiB in all, so 8 MiB and up use fewer) and walks the next one in
//! each batch the harness times, so the spread shows within one run: its
//! samples are flagged bimodal with this cause, and the median's interval
//! spans both. The harness takes the samples in whole turns of the
//! buffers (16 samples for 16 buffers), so each buffer weighs the same in
//! the median: consecutive buffers alternate between two kinds of pages,
//! and with 11 samples six were of one kind and the median landed on it
//! (7 % above lmbench's median over processes at 128 KiB on the Intel
//! guest, 7 Dec). `buffers=1` is lmbench's way.
//!
//! Differences on purpose: lmbench's random walk at a size below its `len`
//! argument spreads over the pages of `len`, osbench over the buffer's own;
//! it keeps the minimum of 11 runs of one buffer, osbench a median of
//! samples over buffers. Left out: lmbench's sweep over every size (select
//! sizes with `kib=`) and its `-P` parallelism.

use super::membw::size_text;
use super::util::ring::WorkingSet;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;
use crate::rng::SplitMix64;

/// Loads per harness iteration (lmbench's `HUNDRED` unrolled loads).
const LOADS_PER_ITER: u64 = 100;

/// Most memory the buffers of one case take together (64 MiB).
const BUFFERS_MAX_BYTES: usize = 64 << 20;

/// Buffers walked when the user does not say (`buffers`' default).
const BUFFERS_DEFAULT: &str = "16";

/// The size of "Main mem" and "Rand mem" in the default cases, as
/// `membw`'s [`super::membw::TABLE_KIB`].
const TABLE_KIB: &str = "262144";

pub static DEF: BenchDef = BenchDef {
    name: "memlat",
    summary: "memory load latency: a pointer chase through a buffer, by size (lmbench lat_mem_rd)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "kib",
            help: "buffer size in KiB (lmbench's range)",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 24,
            },
            default: "1",
        },
        ParamSpec {
            name: "stride",
            help: "bytes between consecutive pointers: a power of two (lmbench's stride)",
            kind: ParamKind::Int {
                min: 8,
                max: 1 << 20,
            },
            default: "128",
        },
        ParamSpec {
            name: "pattern",
            help: "stride: in order (prefetchable); random: lat_mem_rd -t, a new page each load",
            kind: ParamKind::Choice(&["stride", "random"]),
            default: "stride",
        },
        ParamSpec {
            name: "buffers",
            help: "buffers walked in turn, one per timed batch, so one run shows how much their physical pages matter (at most 64 MiB in all); 1: lmbench's one buffer",
            kind: ParamKind::Int { min: 1, max: 64 },
            default: BUFFERS_DEFAULT,
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[],
        &[("kib", "128")],
        &[("kib", TABLE_KIB)],
        &[("kib", TABLE_KIB), ("pattern", "random"), ("stride", "16")],
    ]),
    case_name: |p| {
        let random = if p.get("pattern") == "random" {
            "/random"
        } else {
            ""
        };
        let buffers = if p.get("buffers") == BUFFERS_DEFAULT {
            String::new()
        } else {
            format!("/{}buf", p.int("buffers"))
        };
        format!(
            "{}/{}B{random}{buffers}",
            size_text(p.int("kib")),
            p.int("stride")
        )
    },
    op: |p| {
        format!(
            "one load of a pointer chain through {} KiB, {} B apart{}",
            p.int("kib"),
            p.int("stride"),
            if p.get("pattern") == "random" {
                ", pages in random order"
            } else {
                ", in order"
            }
        )
    },
    anchor: |p| {
        let t = if p.get("pattern") == "random" {
            "-t "
        } else {
            ""
        };
        format!(
            "lat_mem_rd {t}{} {} (the {} row)",
            (p.int("kib") as f64 / 1024.0).ceil(),
            p.int("stride"),
            size_text(p.int("kib"))
        )
    },
    differs: "one size per case where lat_mem_rd sweeps every size up to its argument; a random walk over the buffer's own pages (lmbench: over its largest size's); a median of samples over up to 16 buffers, one per sample, where lmbench keeps the minimum of one buffer's runs. A chain's figure depends on the physical pages under its buffer, so lmbench's figure jumps from process to process (128 KiB on the Intel guest: 1.8-2.7 ns). One buffer is measured alike: over 30 processes each, alternated (7 Dec), osbench's buffers=1 read a median of 2.114 ns, lat_mem_rd 2.149, a C loop 2.035, and within one buffer the minimum and the median of either tool differ by about 1 %. Within one process consecutive buffers alternate between two kinds of pages: with 11 samples osbench's median landed on the kind that held six, 1.138 [1.034-1.193] of the median of 15 lat_mem_rd processes (10 rounds; mean against mean 1.022); sampled in whole turns of its 16 buffers, 1.036 [0.979-1.115] (docs/crosscheck.md, twelfth session). Also measured: 1 KiB 1.020 (16 samples, against 15 processes), main memory 0.987; the random walk at 256 MiB 1.024-1.061 on earlier days and 0.934 and 1.053 (20 rounds) on 7 Dec, each side's rounds spreading 3-8 %; run after other programs that map and free 256 MiB, lat_mem_rd read some 8 % slower and the ratio 0.98, and after memory compaction 1.075, so its figure moves with the free memory its pages come from (docs/crosscheck.md, fourteenth session).",
    two_clusters: Some(
        "the pages under its buffers (each sample walks the next buffer, every buffer as \
         often; on the Intel guest 128 KiB buffers read 1.8-2.7 ns by their physical pages, \
         consecutive ones alternating between two kinds; buffers=1 walks one)",
    ),
    recorded: |p| vec![("buffers_walked", buffer_count(p).into())],
    ops_per_iter: |_| LOADS_PER_ITER as f64,
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// A stride the chains can use, and memory for the buffer.
fn check(p: &Params) -> Result<()> {
    let (bytes, stride) = (p.int("kib") as u64 * 1024, p.int("stride") as u64);
    if !stride.is_power_of_two() || stride > bytes {
        return Err(Error::Usage(format!(
            "memlat: stride={stride} must be a power of two no larger than the buffer ({bytes} B)"
        )));
    }
    let all = bytes * buffer_count(p) as u64;
    super::fault::check_memory(&format!("memlat:{p}"), all, all)
}

/// How many buffers a case walks: `buffers`, fewer when they would take
/// more than [`BUFFERS_MAX_BYTES`] together, and at least one.
fn buffer_count(p: &Params) -> usize {
    let bytes = p.int("kib") as usize * 1024;
    (p.int("buffers") as usize)
        .min(BUFFERS_MAX_BYTES / bytes)
        .max(1)
}

/// One buffer's chain.
struct Walk {
    /// Owns the memory the chain's pointers point into.
    _buf: WorkingSet,
    /// Where the walk is: it goes on from there the next time.
    at: *const usize,
}

/// The case's buffers' chains, walked in turn.
struct Chains {
    walks: Vec<Walk>,
    /// The walk the next batch takes.
    next: usize,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let bytes = p.int("kib") as usize * 1024;
    let stride = p.int("stride") as usize;
    let order = if p.get("pattern") == "random" {
        random_order(bytes, stride, super::util::page_size())
    } else {
        (0..bytes / stride).map(|i| i * stride).collect()
    };
    let walks = (0..buffer_count(p))
        .map(|_| {
            let mut buf = WorkingSet::with_bytes(bytes).map_err(|e| {
                Error::io(
                    format!(
                        "memlat: mapping {} KiB (lower kib or buffers)",
                        p.int("kib")
                    ),
                    e,
                )
            })?;
            let at = link(buf.as_bytes_mut(), &order);
            Ok(Walk { _buf: buf, at })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(Chains { walks, next: 0 }))
}

/// Writes at each offset of `order` the address of the next (the last the
/// first's), and returns the first's address.
fn link(buf: &mut [u8], order: &[usize]) -> *const usize {
    let base = buf.as_mut_ptr();
    for (i, &from) in order.iter().enumerate() {
        let to = order[(i + 1) % order.len()];
        let next = base.wrapping_add(to) as usize;
        buf[from..from + 8].copy_from_slice(&next.to_ne_bytes());
    }
    base.wrapping_add(order[0]) as *const usize
}

/// lmbench's `thrash_initialize`: the byte offsets of a random walk.
fn random_order(bytes: usize, stride: usize, page: usize) -> Vec<usize> {
    let mut rng = SplitMix64::new(std::process::id() as u64);
    if !bytes.is_multiple_of(page) || stride > page {
        // Not whole pages: every word in bit-reversed order.
        return bit_reversed(bytes / stride)
            .into_iter()
            .map(|w| w * stride)
            .collect();
    }
    let mut pages: Vec<usize> = (0..bytes / page).map(|i| i * page).collect();
    rng.shuffle(&mut pages);
    let words: Vec<usize> = bit_reversed(page / stride)
        .into_iter()
        .map(|w| w * stride)
        .collect();
    let n = words.len();
    // Lap j visits every page in order, taking word (i + j) of page i.
    (0..n)
        .flat_map(|j| (0..pages.len()).map(move |i| (i, j)))
        .map(|(i, j)| pages[i] + words[(i + j) % n])
        .collect()
}

/// 0..n (a power of two) with each index's bits reversed.
fn bit_reversed(n: usize) -> Vec<usize> {
    let bits = n.trailing_zeros();
    (0..n)
        .map(|i| {
            if bits == 0 {
                0
            } else {
                i.reverse_bits() >> (usize::BITS - bits)
            }
        })
        .collect()
}

// SAFETY: each chain's pointers point into its own `_buf`, which the value
// owns and moves with it.
unsafe impl Send for Walk {}

impl Workload for Chains {
    /// Walks one buffer's chain; the next call walks the next buffer's.
    fn run(&mut self, iters: u64) -> Result<()> {
        let walk = &mut self.walks[self.next];
        walk.at = chase(walk.at, iters);
        self.next = (self.next + 1) % self.walks.len();
        Ok(())
    }

    /// Every buffer is sampled as often as the others: with 16 buffers of
    /// two kinds in turn, 11 samples held six of one kind and the median
    /// landed on it.
    fn batches_in_turn(&self) -> usize {
        self.walks.len()
    }
}

/// Follows the chain for `iters` × 100 loads and returns where it ended.
#[inline(never)]
fn chase(mut p: *const usize, iters: u64) -> *const usize {
    for _ in 0..iters {
        for _ in 0..LOADS_PER_ITER {
            // SAFETY: every pointer of the chain was written by `link` to
            // an 8-byte-aligned offset inside the live buffer, and `p`
            // starts at one of them.
            p = unsafe { p.read() } as *const usize;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets a chain visits from its start until it comes back.
    fn walk(order: &[usize]) -> Vec<usize> {
        let mut buf = vec![0u8; order.iter().max().unwrap() + 8];
        let start = link(&mut buf, order);
        let base = buf.as_ptr() as usize;
        let mut seen = vec![start as usize - base];
        let mut p = start;
        loop {
            // SAFETY: the chain was just linked inside `buf`.
            p = unsafe { p.read_unaligned() } as *const usize;
            if p == start {
                return seen;
            }
            seen.push(p as usize - base);
        }
    }

    #[test]
    fn a_stride_chain_visits_every_stride_in_order_and_wraps() {
        let order: Vec<usize> = (0..8).map(|i| i * 128).collect();
        assert_eq!(walk(&order), order);
    }

    #[test]
    fn the_random_walk_visits_every_word_once_changing_page_every_load() {
        let (bytes, stride, page) = (16 * 4096, 16, 4096);
        let order = random_order(bytes, stride, page);
        let mut sorted = walk(&order);
        assert_eq!(sorted.len(), bytes / stride);
        assert!(order.windows(2).all(|w| w[0] / page != w[1] / page));
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), bytes / stride);
        // Not whole pages: every word, bit-reversed.
        assert_eq!(random_order(64, 16, 4096), [0, 32, 16, 48]);
    }

    #[test]
    fn each_batch_walks_the_next_buffer_and_big_buffers_are_fewer() {
        let p = Params::new(&DEF, &[("kib", "4"), ("buffers", "3")]);
        let mut chains = Chains {
            walks: Vec::new(),
            next: 0,
        };
        assert_eq!(buffer_count(&p), 3);
        setup(&p, &Placement::unpinned()).unwrap().run(5).unwrap();
        // Built by hand to see where each walk stands.
        for _ in 0..3 {
            let mut buf = WorkingSet::with_bytes(4096).unwrap();
            let order: Vec<usize> = (0..32).map(|i| i * 128).collect();
            let at = link(buf.as_bytes_mut(), &order);
            chains.walks.push(Walk { _buf: buf, at });
        }
        let starts: Vec<_> = chains.walks.iter().map(|w| w.at).collect();
        for _ in 0..4 {
            chains.run(1).unwrap();
        }
        // Four batches of 100 loads: the first walk twice, the others once.
        let moved: Vec<usize> = (chains.walks.iter().zip(&starts))
            .map(|(w, &s)| (w.at as usize).wrapping_sub(s as usize) / 128 % 32)
            .collect();
        assert_eq!(moved, [200 % 32, 100 % 32, 100 % 32]);
        assert_eq!(chains.next, 1);
        // 64 MiB in all: 16 of 8 MiB would be 128 MiB, so 8; 256 MiB: one.
        let big = |kib: &str| buffer_count(&Params::new(&DEF, &[("kib", kib)]));
        assert_eq!((big("1"), big("8192"), big("262144")), (16, 8, 1));
        assert_eq!((DEF.case_name)(&p), "4K/128B/3buf");
    }

    #[test]
    fn the_default_cases_run_at_small_sizes_and_bad_strides_are_refused() {
        for fixed in DEF.default_cases() {
            let mut p = Params::new(&DEF, &fixed);
            p.set("kib", "64");
            check(&p).unwrap();
            setup(&p, &Placement::unpinned()).unwrap().run(3).unwrap();
            assert!((DEF.anchor)(&p).starts_with("lat_mem_rd "), "{p}");
        }
        let p = Params::new(&DEF, &[("stride", "96")]);
        assert!(check(&p).unwrap_err().to_string().contains("power of two"));
    }
}

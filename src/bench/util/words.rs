//! Word-at-a-time memory access the way lmbench's C loops compile: every
//! word read or written by one scalar access, reads added into one running
//! sum. Volatile accesses keep the compiler from vectorising, merging or
//! skipping them, as Debian's gcc 12 `-O2` leaves lmbench's `bread` and
//! `bw_mem` kernels scalar (their disassembly). The instructions are not
//! yet gcc's: it folds each load into its add (`add mem, reg`), so sums
//! here can cost more per word than lmbench's (docs/crosscheck.md).

/// Reads one 32-bit word with a scalar load.
#[inline(always)]
pub fn load32(w: &u32) -> u32 {
    // SAFETY: a reference is valid, aligned and initialised for a read.
    unsafe { std::ptr::read_volatile(w) }
}

/// Writes one 32-bit word with a scalar store.
#[inline(always)]
pub fn store32(w: &mut u32, v: u32) {
    // SAFETY: a mutable reference is valid and aligned for a write.
    unsafe { std::ptr::write_volatile(w, v) }
}

/// lmbench's `bread`: the sum of `words`, one scalar load and add at a
/// time into one sum, in blocks of 128 words (then 16, then one at a time)
/// that the compiler unrolls completely, as gcc does lmbench's.
#[inline]
pub fn bread(words: &[u64]) -> u64 {
    let mut total = 0u64;
    let mut big = words.chunks_exact(128);
    for block in big.by_ref() {
        total = total.wrapping_add(block_sum::<128>(block.try_into().expect("128 words")));
    }
    let mut small = big.remainder().chunks_exact(16);
    for block in small.by_ref() {
        total = total.wrapping_add(block_sum::<16>(block.try_into().expect("16 words")));
    }
    for w in small.remainder() {
        // SAFETY: a reference is valid, aligned and initialised for a read.
        total = total.wrapping_add(unsafe { std::ptr::read_volatile(w) });
    }
    total
}

/// The sum of one block of `N` words, each read by a scalar load.
#[inline(always)]
fn block_sum<const N: usize>(block: &[u64; N]) -> u64 {
    let mut sum = 0u64;
    let mut i = 0;
    while i < N {
        // SAFETY: a reference is valid, aligned and initialised for a read.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(&block[i]) });
        i += 1;
    }
    sum
}

//! Word-at-a-time memory access the way lmbench's C loops compile: every
//! word read or written by one scalar access, reads added into one running
//! sum. Volatile accesses keep the compiler from vectorising, merging or
//! skipping them, as Debian's gcc 12 `-O2` leaves lmbench's `bread` and
//! `bw_mem` kernels scalar (their disassembly). The instructions are the
//! compiler's, not gcc's, and where they differed it showed: `frd` and
//! `fcp` read 0.60 and 0.89 of lmbench, `bread`'s blocks of 128 words
//! (`bw_mmap_rd`) 0.78, and `rd` 0.91 (rustc folds each load into its add,
//! as gcc does, but into one chain over the whole buffer where gcc starts a
//! chain a block). Those have gcc's exact instructions as inline assembly
//! on x86-64 (`block_sum_as_gcc`, `block_copy_as_gcc`,
//! `block_sum64_as_gcc`).

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
        let block: &[u64; 128] = block.try_into().expect("128 words");
        #[cfg(target_arch = "x86_64")]
        let sum = block_sum64_as_gcc(block);
        #[cfg(not(target_arch = "x86_64"))]
        let sum = block_sum::<128>(block);
        total = total.wrapping_add(sum);
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

/// The sum of every `STEP`-th word of one 512-byte block, in gcc's
/// instructions for lmbench's `frd` (`STEP` 1) and `rd` (`STEP` 4)
/// (Debian's gcc 12 `-O2`, from bw_mem's disassembly): the second word
/// loaded, then the first and each of the others added from memory (`add
/// mem, reg`): one dependent chain a block, one instruction per word. The
/// caller adds each block's sum into its total, so the chains of
/// successive blocks overlap.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn block_sum_as_gcc<const STEP: usize>(block: &[u32; 128]) -> u32 {
    const { assert!(STEP > 0 && STEP <= 64 && 128 % STEP == 0) };
    let sum: u32;
    // SAFETY: the block is 128 valid, aligned, initialised words and only
    // they are read (offsets 0 to 512 - 4 * STEP); no stack, no flags kept.
    unsafe {
        std::arch::asm!(
            "mov {sum:e}, dword ptr [{p} + {stride}]",
            "add {sum:e}, dword ptr [{p}]",
            ".set osbench_word, 2 * {stride}",
            ".rept {rest}",
            "add {sum:e}, dword ptr [{p} + osbench_word]",
            ".set osbench_word, osbench_word + {stride}",
            ".endr",
            p = in(reg) block.as_ptr(),
            stride = const 4 * STEP,
            rest = const 128 / STEP - 2,
            sum = out(reg) sum,
            options(nostack, readonly),
        );
    }
    sum
}

/// The sum of one 1024-byte block of `bread`, in gcc's instructions for
/// lmbench's (Debian's gcc 12 `-O2`, from bw_mmap_rd's disassembly): the
/// second word loaded, then the first and the other 126 added from memory
/// (`add mem, reg`), one dependent chain of 64-bit adds.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn block_sum64_as_gcc(block: &[u64; 128]) -> u64 {
    let sum: u64;
    // SAFETY: the block is 128 valid, aligned, initialised words and only
    // they are read (offsets 0 to 1016); no stack, no flags kept.
    unsafe {
        std::arch::asm!(
            "mov {sum}, qword ptr [{p} + 8]",
            "add {sum}, qword ptr [{p}]",
            ".set osbench_word, 16",
            ".rept 126",
            "add {sum}, qword ptr [{p} + osbench_word]",
            ".set osbench_word, osbench_word + 8",
            ".endr",
            p = in(reg) block.as_ptr(),
            sum = out(reg) sum,
            options(nostack, readonly),
        );
    }
    sum
}

/// One 512-byte block copied word by word, in gcc's instructions for
/// lmbench's `fcp`: each word loaded into a register and stored from it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn block_copy_as_gcc(from: &[u32; 128], to: &mut [u32; 128]) {
    // SAFETY: both blocks are 128 valid, aligned words, `to` writable and
    // distinct from `from` (a shared and a mutable reference); only offsets
    // 0 to 508 of each are touched; no stack, no flags kept.
    unsafe {
        std::arch::asm!(
            ".set osbench_word, 0",
            ".rept 128",
            "mov {w:e}, dword ptr [{src} + osbench_word]",
            "mov dword ptr [{dst} + osbench_word], {w:e}",
            ".set osbench_word, osbench_word + 4",
            ".endr",
            src = in(reg) from.as_ptr(),
            dst = in(reg) to.as_mut_ptr(),
            w = out(reg) _,
            options(nostack, preserves_flags),
        );
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_assembly_kernels_sum_and_copy_every_word() {
        let from: [u32; 128] = std::array::from_fn(|i| i as u32 * 3 + 1);
        let expected = from.iter().fold(0u32, |a, &w| a.wrapping_add(w));
        assert_eq!(block_sum_as_gcc::<1>(&from), expected);
        let every_fourth = from.iter().step_by(4).fold(0u32, |a, &w| a.wrapping_add(w));
        assert_eq!(block_sum_as_gcc::<4>(&from), every_fourth);
        let mut to = [0u32; 128];
        block_copy_as_gcc(&from, &mut to);
        assert_eq!(to, from);
        let words: [u64; 128] = std::array::from_fn(|i| (i as u64 + 1) << 40);
        let expected = words.iter().fold(0u64, |a, &w| a.wrapping_add(w));
        assert_eq!(block_sum64_as_gcc(&words), expected);
        // bread: the blocks of 128 in assembly, then 16s, then single words.
        let long: Vec<u64> = (0..128 * 3 + 16 * 2 + 5).map(|i| i * 7 + 3).collect();
        assert_eq!(bread(&long), long.iter().sum::<u64>());
    }
}

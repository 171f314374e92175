//! The sampling half of a profiling pass: one `perf_event_open` sampling
//! event per online CPU (every task on it, kernel and user mode, the idle
//! task included), each with its mmap'ed ring buffer, and the parsing of the
//! records copied out of it (samples with their call chains, lost-sample
//! counts, forks). Left out: symbols (`symbols`), choosing whose samples to
//! keep (`profile`), every record type but SAMPLE, LOST and FORK.
//!
//! From the perf_event_open(2) man page and include/uapi/linux/perf_event.h
//! (`struct perf_event_attr`, `struct perf_event_mmap_page`, the record
//! layouts of `enum perf_event_type`).

use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::measure::counters::{
    AttrLayout, FLAG_DISABLED, FLAG_EXCLUDE_HV, PERF_EVENT_IOC_DISABLE, PERF_EVENT_IOC_ENABLE,
    PerfEventAttr, perf_event_open, perf_ioctl,
};

/// `perf_event_attr.config` of the software sampling event.
pub(super) const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;

/// `perf_event_attr.sample_type` bits.
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
const PERF_SAMPLE_CPU: u64 = 1 << 7;
/// What every sample carries, in the kernel's order: ip, pid/tid, time,
/// cpu/reserved, callchain.
const SAMPLE_TYPE: u64 =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;

/// `perf_event_attr` flag bits besides the counting pass's: freq
/// (sample_freq instead of sample_period), task (FORK and EXIT records).
const FLAG_FREQ: u64 = 1 << 10;
const FLAG_TASK: u64 = 1 << 13;

/// `enum perf_event_type`: the records read.
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_FORK: u32 = 7;
const PERF_RECORD_SAMPLE: u32 = 9;

/// Call-chain entries at or above this are context markers
/// (PERF_CONTEXT_KERNEL = −128, PERF_CONTEXT_USER = −512, …), not addresses.
pub(super) const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
pub(super) const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
pub(super) const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// Offsets in `struct perf_event_mmap_page` (the ring's first page) of
/// data_head, data_tail, data_offset and data_size.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// Data pages of a ring buffer first tried (1 MiB with 4 KiB pages), then
/// halved down to [`MIN_DATA_PAGES`] while mmap is refused for lack of
/// locked memory (EPERM, ENOMEM).
const DATA_PAGES: usize = 256;
const MIN_DATA_PAGES: usize = 8;

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER5 (112 bytes); the
/// fields after `config1` are left zero (kernel defaults).
#[repr(C)]
#[derive(Default)]
struct SampleAttr {
    /// Type, size, config, sample_period (or sample_freq with
    /// [`FLAG_FREQ`]), sample_type, flags, …: the counting pass's fields.
    head: PerfEventAttr,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    /// 0: the kernel's kernel.perf_event_max_stack.
    sample_max_stack: u16,
    reserved_2: u16,
}

// SAFETY: `#[repr(C)]`, it starts with its head, and `open_event` sets the
// head's `size` to the whole struct's.
unsafe impl AttrLayout for SampleAttr {}

/// How often an event samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Rate {
    /// Every this many events (ns of `cpu-clock`).
    Period(u64),
    /// This many times a second (the kernel adjusts the period).
    Frequency(u64),
}

/// One record read from a ring buffer.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Record {
    Sample(Sample),
    /// Samples the kernel dropped for a full buffer.
    Lost(u64),
    /// A task `pid`/`tid` forked by `ppid`/`ptid`.
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
    },
}

/// One PERF_RECORD_SAMPLE.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sample {
    /// Process (thread group) and thread ids; 0 for the idle task.
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub ip: u64,
    /// The call chain as the kernel wrote it: innermost first, with context markers.
    pub chain: Vec<u64>,
}

/// One sampling event on one CPU with its ring buffer: unmapped, then
/// closed, when dropped.
#[derive(Debug)]
pub(super) struct Ring {
    /// The mapping: the metadata page, then the data area.
    base: NonNull<u8>,
    len: usize,
    /// Where the data area is within the mapping, and its size (a power of two).
    data: Range<usize>,
    fd: OwnedFd,
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping mmap returned in
        // `Ring::map`, unmapped only here; nothing borrows it past `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
        // `fd` closes after this, as a field.
    }
}

/// Opens one sampling event, disabled, on every task of `cpu`.
pub(super) fn open_event(type_: u32, config: u64, rate: Rate, cpu: u32) -> io::Result<OwnedFd> {
    let (sample_period, freq) = match rate {
        Rate::Period(p) => (p, 0),
        Rate::Frequency(f) => (f, FLAG_FREQ),
    };
    let attr = SampleAttr {
        head: PerfEventAttr {
            type_,
            size: std::mem::size_of::<SampleAttr>() as u32,
            config,
            sample_period,
            sample_type: SAMPLE_TYPE,
            flags: FLAG_DISABLED | FLAG_EXCLUDE_HV | FLAG_TASK | freq,
            ..Default::default()
        },
        ..Default::default()
    };
    perf_event_open(&attr, -1, cpu as libc::c_int)
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; no memory of ours.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

// SAFETY: a Ring owns its mapping and descriptor outright; nothing in it
// is tied to the thread that made it, and `&Ring` only reads the metadata
// page atomically.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `fd`'s ring buffer: 1 + [`DATA_PAGES`] pages, fewer while the
    /// kernel refuses that much locked memory.
    pub(super) fn map(fd: OwnedFd) -> io::Result<Ring> {
        let page = page_size();
        let mut pages = DATA_PAGES;
        loop {
            match mmap_shared(&fd, (1 + pages) * page) {
                Ok(base) => return Ok(Ring::new(base, (1 + pages) * page, page, fd)),
                Err(e)
                    if pages > MIN_DATA_PAGES
                        && matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM)) =>
                {
                    pages /= 2;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn new(base: NonNull<u8>, len: usize, page: usize, fd: OwnedFd) -> Ring {
        let mut ring = Ring {
            base,
            len,
            data: page..len,
            fd,
        };
        // Kernels since 4.1 say where the data area is; older ones leave 0.
        let (offset, size) = (ring.word(DATA_OFFSET), ring.word(DATA_SIZE));
        if offset != 0 && size != 0 && (offset + size) as usize <= len {
            ring.data = offset as usize..(offset + size) as usize;
        }
        ring
    }

    /// A u64 of the metadata page, read atomically with acquire ordering
    /// (the kernel updates data_head as it writes).
    fn word(&self, offset: usize) -> u64 {
        self.atomic(offset).load(Ordering::Acquire)
    }

    fn atomic(&self, offset: usize) -> &AtomicU64 {
        assert!(offset + 8 <= 4096 && offset.is_multiple_of(8));
        // SAFETY: the first page is mapped for as long as `self` lives, the
        // offset is 8-aligned within it (the mapping is page-aligned), and the
        // kernel accesses these fields only as whole aligned u64s.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }

    pub(super) fn set_enabled(&self, enabled: bool) -> io::Result<()> {
        let request = if enabled {
            PERF_EVENT_IOC_ENABLE
        } else {
            PERF_EVENT_IOC_DISABLE
        };
        perf_ioctl(&self.fd, request)
    }

    /// The descriptor and mapping address (for tests that look for them in /proc).
    #[cfg(test)]
    pub(super) fn identity(&self) -> (i32, usize) {
        (self.fd.as_raw_fd(), self.base.as_ptr() as usize)
    }

    /// Moves the unread records out of the ring into `out` and frees their space.
    pub(super) fn drain(&mut self, out: &mut Vec<Record>) {
        let head = self.word(DATA_HEAD);
        let tail = self.atomic(DATA_TAIL).load(Ordering::Relaxed);
        let size = (self.data.end - self.data.start) as u64;
        // More than the ring holds (never seen): the kernel overwrote unread
        // records, so none can be trusted; they are skipped.
        if head.wrapping_sub(tail) <= size {
            let mut bytes = Vec::with_capacity(head.wrapping_sub(tail) as usize);
            for span in unread(size, tail, head) {
                bytes.extend_from_slice(self.data_bytes(span));
            }
            parse_records(&bytes, out);
        }
        self.atomic(DATA_TAIL).store(head, Ordering::Release);
    }

    /// Bytes `span` of the data area, which the kernel does not write until
    /// data_tail moves past them.
    fn data_bytes(&self, span: Range<usize>) -> &[u8] {
        assert!(span.end <= self.data.end - self.data.start);
        // SAFETY: the data area is mapped for as long as `self` lives; `span`
        // lies within it (asserted); the records in [data_tail, data_head) are
        // complete (data_head was read with acquire ordering) and the kernel
        // does not write them until `drain` moves data_tail past them.
        unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().add(self.data.start + span.start),
                span.len(),
            )
        }
    }
}

/// Maps `len` bytes of a perf event's ring buffer, read-write (so the
/// kernel knows data_tail and never overwrites unread records).
fn mmap_shared(fd: &OwnedFd, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of a perf event descriptor at an address
    // the kernel chooses; it aliases no memory of ours.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(base.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// The positions in a ring of `size` bytes of the unread bytes from `tail`
/// to `head` (both counted from the start, never wrapped), in order: the
/// second span is empty unless they wrap past the end of the ring.
pub(super) fn unread(size: u64, tail: u64, head: u64) -> [Range<usize>; 2] {
    let len = head.wrapping_sub(tail).min(size) as usize;
    let start = (tail % size) as usize;
    let size = size as usize;
    if start + len <= size {
        [start..start + len, 0..0]
    } else {
        [start..size, 0..len - (size - start)]
    }
}

/// Parses consecutive records (each a `perf_event_header` then its body)
/// into `out`; other record types are skipped, a malformed one ends the parse.
pub(super) fn parse_records(mut bytes: &[u8], out: &mut Vec<Record>) {
    while bytes.len() >= 8 {
        let type_ = u32_at(bytes, 0);
        let size = u16::from_ne_bytes([bytes[6], bytes[7]]) as usize;
        if size < 8 || size > bytes.len() {
            return;
        }
        let body = &bytes[8..size];
        let record = match type_ {
            PERF_RECORD_SAMPLE => parse_sample(body).map(Record::Sample),
            PERF_RECORD_LOST if body.len() >= 16 => Some(Record::Lost(u64_at(body, 8))),
            PERF_RECORD_FORK if body.len() >= 12 => Some(Record::Fork {
                pid: u32_at(body, 0),
                ppid: u32_at(body, 4),
                tid: u32_at(body, 8),
            }),
            _ => None,
        };
        out.extend(record);
        bytes = &bytes[size..];
    }
}

/// A sample's body in [`SAMPLE_TYPE`]'s layout: ip, pid, tid, time, cpu,
/// reserved, nr, nr call-chain entries.
fn parse_sample(body: &[u8]) -> Option<Sample> {
    if body.len() < 40 {
        return None;
    }
    let nr = u64_at(body, 32) as usize;
    if nr > (body.len() - 40) / 8 {
        return None;
    }
    Some(Sample {
        ip: u64_at(body, 0),
        pid: u32_at(body, 8),
        tid: u32_at(body, 12),
        cpu: u32_at(body, 24),
        chain: (0..nr).map(|k| u64_at(body, 40 + 8 * k)).collect(),
    })
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// A sample's frames, outermost first, each with whether it is a kernel
/// address: the call chain without its context markers (and zeros),
/// reversed (the kernel writes it innermost first); the bare ip when the
/// chain is empty.
pub(super) fn frames(sample: &Sample) -> Vec<(bool, u64)> {
    let mut kernel = is_kernel_address(sample.chain.first().copied().unwrap_or(sample.ip));
    let mut frames = Vec::with_capacity(sample.chain.len());
    for &entry in &sample.chain {
        match entry {
            PERF_CONTEXT_KERNEL => kernel = true,
            PERF_CONTEXT_USER => kernel = false,
            // Markers, and the 0 a frame-pointer walk may end with.
            e if e >= PERF_CONTEXT_MAX || e == 0 => {}
            e => frames.push((kernel, e)),
        }
    }
    if frames.is_empty() {
        frames.push((is_kernel_address(sample.ip), sample.ip));
    }
    frames.reverse();
    frames
}

/// Whether `addr` is in the kernel's half of the address space (the top
/// bit set, as on x86_64 and arm64).
pub(super) fn is_kernel_address(addr: u64) -> bool {
    addr >= 0xffff_8000_0000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampling_attribute_is_ver5_with_the_counting_one_as_its_head() {
        // PERF_ATTR_SIZE_VER5, and the head the counting pass sends alone.
        assert_eq!(std::mem::size_of::<SampleAttr>(), 112);
        assert_eq!(std::mem::offset_of!(SampleAttr, config2), 64);
    }

    fn header(type_: u32, size: usize) -> Vec<u8> {
        let mut h = type_.to_ne_bytes().to_vec();
        h.extend(0u16.to_ne_bytes());
        h.extend((size as u16).to_ne_bytes());
        h
    }

    fn sample_record(pid: u32, tid: u32, cpu: u32, ip: u64, chain: &[u64]) -> Vec<u8> {
        let mut r = header(PERF_RECORD_SAMPLE, 8 + 40 + 8 * chain.len());
        r.extend(ip.to_ne_bytes());
        r.extend(pid.to_ne_bytes());
        r.extend(tid.to_ne_bytes());
        r.extend(123_456u64.to_ne_bytes());
        r.extend(cpu.to_ne_bytes());
        r.extend(0u32.to_ne_bytes());
        r.extend((chain.len() as u64).to_ne_bytes());
        for e in chain {
            r.extend(e.to_ne_bytes());
        }
        r
    }

    fn lost_record(lost: u64) -> Vec<u8> {
        let mut r = header(PERF_RECORD_LOST, 24);
        r.extend(7u64.to_ne_bytes());
        r.extend(lost.to_ne_bytes());
        r
    }

    #[test]
    fn a_sample_s_chain_loses_its_context_markers_and_is_reversed() {
        let k1 = 0xffff_ffff_8100_1000;
        let k2 = 0xffff_ffff_8100_2000;
        let u1 = 0x5555_0000_1000;
        let chain = [PERF_CONTEXT_KERNEL, k1, k2, PERF_CONTEXT_USER, u1, 0];
        let bytes = sample_record(42, 43, 1, k1, &chain);
        let mut out = Vec::new();
        parse_records(&bytes, &mut out);
        let [Record::Sample(s)] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!((s.pid, s.tid, s.cpu, s.ip), (42, 43, 1, k1));
        assert_eq!(s.chain, chain);
        assert_eq!(frames(s), [(false, u1), (true, k2), (true, k1)]);
        let bare = Sample {
            chain: Vec::new(),
            ..s.clone()
        };
        assert_eq!(frames(&bare), [(true, k1)]);
    }

    #[test]
    fn records_wrapping_the_end_of_the_ring_are_read_whole() {
        let first = sample_record(1, 1, 0, 0x1000, &[PERF_CONTEXT_USER, 0x1000]);
        let second = sample_record(2, 2, 0, 0x2000, &[PERF_CONTEXT_USER, 0x2000, 0x3000]);
        let lost = lost_record(5);
        let size = 256usize;
        // The first record starts 40 bytes before the end, so it wraps.
        let tail = (3 * size - 40) as u64;
        let stream: Vec<u8> = [first.clone(), second, lost].concat();
        let mut ring = vec![0xAAu8; size];
        for (k, b) in stream.iter().enumerate() {
            ring[(tail as usize + k) % size] = *b;
        }
        let head = tail + stream.len() as u64;
        let spans = unread(size as u64, tail, head);
        assert!(!spans[1].is_empty(), "{spans:?}");
        let bytes: Vec<u8> = spans.into_iter().flat_map(|s| ring[s].to_vec()).collect();
        assert_eq!(bytes, stream);
        let mut out = Vec::new();
        parse_records(&bytes, &mut out);
        assert_eq!(out.len(), 3, "{out:?}");
        let Record::Sample(s) = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(s.pid, 2);
        assert_eq!(frames(s), [(false, 0x3000), (false, 0x2000)]);
        assert_eq!(out[2], Record::Lost(5));
        assert!(unread(size as u64, head, head).iter().all(|s| s.is_empty()));
        assert_eq!(unread(size as u64, 8, 40), [8..40, 0..0]);
    }

    #[test]
    fn a_truncated_record_ends_the_parse() {
        let mut bytes = lost_record(3);
        bytes.extend(&sample_record(1, 1, 0, 1, &[1, 2])[..30]);
        let mut out = Vec::new();
        parse_records(&bytes, &mut out);
        assert_eq!(out, [Record::Lost(3)]);
    }
}

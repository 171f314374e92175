//! `ctx`: context-switch time, lmbench `lat_ctx`'s method (`src/lat_ctx.c`).
//!
//! A ring of `procs` tasks over `procs` pipes passes a 4-byte token; the timing
//! thread is member 0 and times whole laps. Every member has a private, zeroed
//! working set of `size` KiB (helpers allocate theirs after fork) and sums all
//! of it after receiving the token, before passing it on. One op = one hop:
//! lap ÷ procs − ovr, where ovr (the stand-in) is lmbench's overhead: in the
//! timing thread alone, a token written to and read back from the same pipe,
//! cycling over `procs` pipes, plus a sum of its already-hot working set.
//! So cache refills after a switch count as part of the switch, as in lmbench.
//!
//! Differences from lmbench: every member adds one to the token and member 0
//! checks after each lap that it grew by exactly `procs` (a lost or duplicated
//! hop is an error, not a wrong number); the working set is mmap'd and summed
//! as 8-byte words with whatever vector instructions the compiler picks;
//! `mode=threads` runs the ring as threads of one process; ovr is measured
//! with `procs` pipes per case rather than once with the largest count.
//! Left out: lmbench's `-P` parallel copies.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::util::fdio::{pipe, read_exact, read_message, write_all};
use super::util::ring::{Helpers, Mode, WorkingSet};
use super::{
    BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, StandIn, Unit, Workload,
};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "ctx",
    summary: "context switch in a ring of tasks passing a token (lmbench lat_ctx)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "procs",
            help: "tasks in the ring, the timing one included",
            kind: ParamKind::Int { min: 2, max: 1024 },
            default: "2",
        },
        ParamSpec {
            name: "size",
            help: "private working set each task sums per hop, KiB",
            kind: ParamKind::Int { min: 0, max: 65536 },
            default: "0",
        },
        ParamSpec {
            name: "mode",
            help: "ring members are processes or threads",
            kind: ParamKind::Choice(&["processes", "threads"]),
            default: "processes",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("procs", "2"), ("size", "0")],
        &[("procs", "2"), ("size", "16")],
        &[("procs", "2"), ("size", "64")],
        &[("procs", "8"), ("size", "16")],
        &[("procs", "8"), ("size", "64")],
        &[("procs", "16"), ("size", "16")],
        &[("procs", "16"), ("size", "64")],
    ]),
    case_name,
    op: |p| {
        format!(
            "one switch: token hop to the next of {} {} + its sum of {} KiB (lap ÷ procs − ovr)",
            p.int("procs"),
            p.get("mode"),
            p.int("size")
        )
    },
    anchor: |p| format!("lat_ctx -s {} {}", p.int("size"), p.int("procs")),
    differs: "the token is checked after every lap, ovr is measured for each case with `procs` pipes (lmbench: once, with the largest count), and mode=threads runs the ring as threads.",
    ops_per_iter: |p| p.int("procs") as f64,
    tasks: |p| p.int("procs") as usize,
    setup,
    sampling: Sampling::Batched {
        stand_in: Some(StandIn {
            op: |p| {
                format!(
                    "ovr: one pipe write + read back in one task, over {} pipes, plus a sum of its hot {} KiB",
                    p.int("procs"),
                    p.int("size")
                )
            },
            setup: setup_overhead,
        }),
    },
    ..BenchDef::DEFAULTS
};

/// lmbench's column names: "2p/16K"; threads are "2t/16K".
pub fn case_name(p: &Params) -> String {
    let kind = if p.get("mode") == "threads" { 't' } else { 'p' };
    format!("{}{kind}/{}K", p.int("procs"), p.int("size"))
}

/// The ring, seen from member 0.
struct Ring {
    /// Member 0 writes the token here…
    to_next: Option<OwnedFd>,
    /// …and gets it back from the last member here.
    from_last: Option<OwnedFd>,
    working_set: WorkingSet,
    token: u32,
    procs: u32,
    helpers: Helpers,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Ring::new(p, placement)?))
}

impl Ring {
    fn new(p: &Params, placement: &Placement) -> Result<Self> {
        let procs = p.int("procs") as usize;
        let kib = p.int("size") as usize;
        check_memory(procs, kib)?;
        // pipes[i] carries the token from member i to member i + 1 (mod procs).
        let mut pipes = Vec::with_capacity(procs);
        for _ in 0..procs {
            pipes.push(pipe()?);
        }
        let mut ends: Vec<(Option<OwnedFd>, Option<OwnedFd>)> =
            pipes.into_iter().map(|(r, w)| (Some(r), Some(w))).collect();

        let mut helpers = Helpers::new(Mode::parse(p.get("mode")), "ctx", 64 * 1024);
        for i in 1..procs {
            let input = ends[i - 1].0.take().expect("each read end is taken once");
            let output = ends[i].1.take().expect("each write end is taken once");
            helpers.start(placement.cpu_of(i), input, output, kib, member)?;
        }
        let mut ring = Ring {
            to_next: ends[0].1.take(),
            from_last: ends[procs - 1].0.take(),
            working_set: WorkingSet::new(kib).map_err(|e| memory_error(procs, kib, e))?,
            token: 0,
            procs: procs as u32,
            helpers,
        };
        drop(ends); // close member 0's copies of the helpers' ends
        ring.lap()?; // prime the ring: every member has run once
        Ok(ring)
    }

    /// One lap: write, wait for the token to come round, sum the working set.
    #[inline]
    fn lap(&mut self) -> Result<()> {
        let (to_next, from_last) = match (&self.to_next, &self.from_last) {
            (Some(w), Some(r)) => (w.as_raw_fd(), r.as_raw_fd()),
            _ => return Err(Error::Measure("the ring was already shut down".into())),
        };
        let sent = self.token.wrapping_add(1);
        write_all(to_next, &sent.to_ne_bytes()).map_err(ring_broken)?;
        let mut buf = [0u8; 4];
        read_message(from_last, &mut buf).map_err(ring_broken)?;
        self.working_set.sum();
        let got = u32::from_ne_bytes(buf);
        let want = self.token.wrapping_add(self.procs);
        if got != want {
            return Err(Error::Measure(format!(
                "the token came back as {got}, expected {want}: a hop was lost"
            )));
        }
        self.token = got;
        Ok(())
    }

    /// Hops made since the ring started (priming lap included).
    #[cfg(test)]
    fn hops(&self) -> u32 {
        self.token
    }

    /// Closes member 0's ends so every helper sees end of file, then waits for them.
    fn shut_down(&mut self) -> Result<()> {
        self.to_next = None;
        self.from_last = None;
        self.helpers.finish()
    }
}

impl Workload for Ring {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.lap()?;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.shut_down()
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Unblock thread helpers (processes are killed by their supervisor).
        self.to_next = None;
        self.from_last = None;
    }
}

/// A helper member: receive, add one, sum the private working set, pass on.
/// Returns when the previous member closes its end.
fn member(input: RawFd, output: RawFd, kib: usize) -> io::Result<()> {
    let working_set = WorkingSet::new(kib)?;
    let mut buf = [0u8; 4];
    while read_exact(input, &mut buf)? {
        let token = u32::from_ne_bytes(buf).wrapping_add(1);
        working_set.sum();
        write_all(output, &token.to_ne_bytes())?;
    }
    Ok(())
}

/// lmbench's ovr: in one task, write the token to a pipe and read it back,
/// cycling over `procs` pipes, then sum the (hot) working set.
struct Overhead {
    pipes: Vec<(OwnedFd, OwnedFd)>,
    next: usize,
    working_set: WorkingSet,
}

fn setup_overhead(p: &Params) -> Result<Box<dyn Workload>> {
    let procs = p.int("procs") as usize;
    let kib = p.int("size") as usize;
    let pipes = (0..procs).map(|_| pipe()).collect::<Result<Vec<_>>>()?;
    let working_set = WorkingSet::new(kib).map_err(|e| memory_error(1, kib, e))?;
    Ok(Box::new(Overhead {
        pipes,
        next: 0,
        working_set,
    }))
}

impl Workload for Overhead {
    fn run(&mut self, iters: u64) -> Result<()> {
        let mut buf = [0u8; 4];
        for _ in 0..iters {
            let (r, w) = &self.pipes[self.next];
            write_all(w.as_raw_fd(), &1u32.to_ne_bytes())
                .map_err(|e| Error::io("ovr pipe write", e))?;
            read_exact(r.as_raw_fd(), &mut buf).map_err(|e| Error::io("ovr pipe read", e))?;
            self.working_set.sum();
            self.next = (self.next + 1) % self.pipes.len();
        }
        Ok(())
    }
}

fn ring_broken(e: io::Error) -> Error {
    Error::io("the token ring broke (a ring member exited or failed)", e)
}

fn memory_error(procs: usize, kib: usize, e: io::Error) -> Error {
    Error::io(
        format!("allocating the {kib} KiB working set of {procs} tasks"),
        e,
    )
}

/// Refuses working sets that cannot fit in memory, before starting anything.
fn check_memory(procs: usize, kib: usize) -> Result<()> {
    let need = procs as u64 * kib as u64 * 1024;
    // SAFETY: an all-zero sysinfo is valid; the call fills it in.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return Ok(()); // cannot tell: let the allocations decide
    }
    let total = info.totalram as u64 * info.mem_unit as u64;
    if need > total / 2 {
        return Err(Error::Measure(format!(
            "{procs} tasks × {kib} KiB = {} MiB of working sets is more than half of this machine's {} MiB \
             of memory; use fewer procs or a smaller size",
            need >> 20,
            total >> 20
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(procs: &str, size: &str, mode: &str) -> Ring {
        let p = Params::new(&DEF, &[("procs", procs), ("size", size), ("mode", mode)]);
        Ring::new(&p, &Placement::unpinned()).unwrap()
    }

    #[test]
    fn the_token_makes_exactly_laps_times_procs_hops() {
        for mode in ["processes", "threads"] {
            for procs in [2u32, 5, 16] {
                let mut r = ring(&procs.to_string(), "4", mode);
                assert_eq!(r.hops(), procs, "priming lap");
                Workload::run(&mut r, 100).unwrap();
                assert_eq!(r.hops(), 101 * procs, "{mode} {procs}");
                Box::new(r).teardown().unwrap();
            }
        }
    }

    #[test]
    fn a_dead_member_breaks_the_ring_with_an_error() {
        let mut r = ring("3", "0", "processes");
        let pid = match &r.helpers {
            Helpers::Processes(sup) => sup.children()[0],
            _ => unreachable!("a process ring"),
        };
        // SAFETY: killing our own helper child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let err = Workload::run(&mut r, 10).unwrap_err();
        assert!(err.to_string().contains("ring broke"), "{err}");
    }

    #[test]
    fn overhead_cycles_over_the_pipes() {
        let p = Params::new(&DEF, &[("procs", "4"), ("size", "1")]);
        let mut o = setup_overhead(&p).unwrap();
        o.run(10).unwrap();
    }

    #[test]
    fn case_names_follow_lmbench() {
        assert_eq!(
            case_name(&Params::new(&DEF, &[("procs", "16"), ("size", "64")])),
            "16p/64K"
        );
        assert_eq!(
            case_name(&Params::new(&DEF, &[("mode", "threads")])),
            "2t/0K"
        );
    }

    #[test]
    fn absurd_working_sets_are_refused_up_front() {
        assert!(
            check_memory(1024, 65536)
                .unwrap_err()
                .to_string()
                .contains("fewer procs")
        );
    }
}

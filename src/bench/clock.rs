//! `clock`: the clock and the smallest calls — `clock_gettime` for each
//! clock id through the vDSO (libc's entry) and as a raw system call,
//! `gettimeofday`, and `sched_yield`.
//!
//! Anchors: LEBench's `ref` test (two back-to-back clock_gettime calls, its
//! floor), stress-ng's `vdso` stressor (which calls each vDSO function in
//! turn), will-it-scale's `sched_yield`. Which clock source backs the vDSO
//! (`tsc`, `kvm-clock`, `hpet`, `xen`) decides whether the vDSO path avoids
//! the kernel at all; `env` records the current one. Coarse clocks and
//! CPU-time clocks are cases because their paths differ (the vDSO answers
//! the coarse ones from a cached value; CPU-time clocks always enter the
//! kernel). Each call's result is checked.
//!
//! Differences on purpose: one call per op (LEBench times two calls with
//! its own clock reads around them); a median of batches. Left out:
//! `time()`, `clock_getres`.

use std::hint::black_box;

use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("monotonic", libc::CLOCK_MONOTONIC),
    ("realtime", libc::CLOCK_REALTIME),
    ("monotonic_raw", libc::CLOCK_MONOTONIC_RAW),
    ("boottime", libc::CLOCK_BOOTTIME),
    ("monotonic_coarse", libc::CLOCK_MONOTONIC_COARSE),
    ("realtime_coarse", libc::CLOCK_REALTIME_COARSE),
    ("process_cputime", libc::CLOCK_PROCESS_CPUTIME_ID),
    ("thread_cputime", libc::CLOCK_THREAD_CPUTIME_ID),
];

pub static DEF: BenchDef = BenchDef {
    name: "clock",
    summary: "clock_gettime per clock id (vDSO and raw syscall), gettimeofday, sched_yield (LEBench ref; stress-ng vdso; will-it-scale sched_yield)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "call",
            help: "a clock id for clock_gettime, or gettimeofday / sched_yield",
            kind: ParamKind::Choice(&[
                "monotonic",
                "realtime",
                "monotonic_raw",
                "boottime",
                "monotonic_coarse",
                "realtime_coarse",
                "process_cputime",
                "thread_cputime",
                "gettimeofday",
                "sched_yield",
            ]),
            default: "monotonic",
        },
        ParamSpec {
            name: "path",
            help: "vdso: libc's entry (the vDSO where the kernel has one); syscall: the raw system call",
            kind: ParamKind::Choice(&["vdso", "syscall"]),
            default: "vdso",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("call", "monotonic")],
        &[("call", "monotonic"), ("path", "syscall")],
        &[("call", "realtime")],
        &[("call", "monotonic_raw")],
        &[("call", "monotonic_coarse")],
        &[("call", "thread_cputime")],
        &[("call", "gettimeofday")],
        &[("call", "sched_yield"), ("path", "syscall")],
    ]),
    case_name: |p| match p.get("path") {
        "syscall" if p.get("call") != "sched_yield" => format!("{}/syscall", p.get("call")),
        _ => p.get("call").to_string(),
    },
    op: |p| {
        let how = if p.get("path") == "syscall" {
            "as a raw system call"
        } else {
            "through libc (the vDSO where it has the call)"
        };
        match p.get("call") {
            "gettimeofday" => format!("one gettimeofday() {how}"),
            "sched_yield" => "one sched_yield() system call".to_string(),
            clock => {
                let id = if clock.ends_with("cputime") {
                    "_ID"
                } else {
                    ""
                };
                format!(
                    "one clock_gettime(CLOCK_{}{id}) {how}",
                    clock.to_uppercase()
                )
            }
        }
    },
    anchor: |p| match p.get("call") {
        "sched_yield" => "will-it-scale sched_yield (1 task)".to_string(),
        "gettimeofday" => "stress-ng --vdso 1 --vdso-func gettimeofday".to_string(),
        _ => "LEBench ref (clock_gettime); stress-ng --vdso 1".to_string(),
    },
    differs: "one call per op, the median of 10 ms batches (LEBench's ref is two calls timed by a third; stress-ng reports a rate per second).",
    setup,
    ..BenchDef::DEFAULTS
};

#[derive(Clone, Copy)]
enum Call {
    Clock(libc::clockid_t, bool),
    Gettimeofday(bool),
    Yield,
}

struct Clock(Call);

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let raw = p.get("path") == "syscall";
    let call = match p.get("call") {
        "gettimeofday" => Call::Gettimeofday(raw),
        "sched_yield" => Call::Yield,
        name => Call::Clock(
            CLOCKS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, id)| id)
                .ok_or_else(|| Error::Measure(format!("no clock id for {name}")))?,
            raw,
        ),
    };
    let mut c = Clock(call);
    c.once()?;
    Ok(Box::new(c))
}

impl Clock {
    #[inline]
    fn once(&mut self) -> Result<()> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let r = match self.0 {
            // SAFETY: a valid clock id and out-pointer.
            Call::Clock(id, false) => unsafe { libc::clock_gettime(id, &mut ts) },
            // SAFETY: the same through the raw system call.
            Call::Clock(id, true) => unsafe {
                libc::syscall(libc::SYS_clock_gettime, id, &raw mut ts) as i32
            },
            Call::Gettimeofday(raw) => {
                let mut tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                let r = if raw {
                    // SAFETY: a valid out-pointer, no time zone.
                    unsafe {
                        libc::syscall(
                            libc::SYS_gettimeofday,
                            &raw mut tv,
                            std::ptr::null_mut::<libc::c_void>(),
                        ) as i32
                    }
                } else {
                    // SAFETY: as above.
                    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) }
                };
                ts.tv_sec = tv.tv_sec;
                r
            }
            // SAFETY: no arguments.
            Call::Yield => unsafe { libc::sched_yield() },
        };
        if r != 0 {
            return Err(Error::io(
                "the clock call failed",
                std::io::Error::last_os_error(),
            ));
        }
        black_box(ts);
        Ok(())
    }
}

impl Workload for Clock {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.once()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_on_both_paths_reads_a_time() {
        let ParamKind::Choice(calls) = DEF.params[0].kind else {
            unreachable!()
        };
        assert_eq!(calls.len(), CLOCKS.len() + 2, "every clock id has an entry");
        for call in calls {
            for path in ["vdso", "syscall"] {
                let p = Params::new(&DEF, &[("call", call), ("path", path)]);
                let mut w = setup(&p, &Placement::unpinned()).unwrap();
                w.run(100).unwrap();
            }
        }
    }

    #[test]
    fn the_raw_syscall_and_the_vdso_tell_the_same_time() {
        let read = |raw: bool| {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid clock id and out-pointer.
            unsafe {
                if raw {
                    libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &raw mut ts);
                } else {
                    libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
                }
            }
            ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
        };
        let (a, b, c) = (read(false), read(true), read(false));
        assert!(a <= b && b <= c, "{a} {b} {c}");
    }
}

//! `spin`: a calibration benchmark — a pure CPU loop of `work` steps of a
//! dependent 64-bit LCG recurrence (x ← a·x + c), so each step waits for the
//! previous one and the time is proportional to `work`. Its only purpose is to
//! plant a known difference (`work=1000` vs `work=1050` is 5 % more work) and
//! check that comparisons find it. Each step passes through an empty asm
//! statement, so the compiler can neither drop nor shorten the chain.
//! `planted=N` adds N more steps in a function of their own
//! (`planted_steps`), a known cause a profile must name (`--profile`).

use std::hint::black_box;

use super::{BenchDef, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::Result;
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "spin",
    summary: "calibration: a pure CPU loop of `work` dependent steps, to plant known differences",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "work",
            help: "dependent multiply-add steps per op",
            kind: ParamKind::Int {
                min: 1,
                max: 1_000_000_000,
            },
            default: "1000",
        },
        ParamSpec {
            name: "planted",
            help: "more steps per op in a function of their own (planted_steps), for profiles",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000_000,
            },
            default: "0",
        },
    ],
    case_name: |p| match p.int("planted") {
        0 => format!("work={}", p.int("work")),
        n => format!("work={},planted={n}", p.int("work")),
    },
    op: |p| match p.int("planted") {
        0 => format!("{} dependent multiply-add steps", p.int("work")),
        n => format!("{} + {n} dependent multiply-add steps", p.int("work")),
    },
    anchor: |_| "(none: calibration)".to_string(),
    setup,
    ..BenchDef::DEFAULTS
};

struct Spin {
    work: u64,
    planted: u64,
    state: u64,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Spin {
        work: p.int("work") as u64,
        planted: p.int("planted") as u64,
        state: 1,
    }))
}

impl Workload for Spin {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.state = spin(black_box(self.state), black_box(self.work));
            if self.planted > 0 {
                self.state = planted_steps(black_box(self.state), black_box(self.planted));
            }
        }
        black_box(self.state);
        Ok(())
    }
}

/// `work` steps of Knuth's MMIX LCG; each depends on the last.
#[inline(never)]
fn spin(x: u64, work: u64) -> u64 {
    steps(x, work)
}

/// The steps of `planted=N`, in a function a profile names apart from
/// [`spin`] (inlined into it, so that its samples are its own).
#[inline(never)]
fn planted_steps(x: u64, work: u64) -> u64 {
    steps(x ^ 1, work)
}

/// An empty asm statement per step hides the value from the optimiser,
/// which would otherwise combine eight steps into one (x ← a⁸·x + c′) and
/// shorten the chain.
/// A `while` loop, not a range: a debug build (the tests') calls a range's
/// iterator methods out of line, and a profile would name them instead.
#[inline(always)]
fn steps(mut x: u64, work: u64) -> u64 {
    let mut done = 0;
    while done < work {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        opaque(&mut x);
        done += 1;
    }
    x
}

#[inline(always)]
fn opaque(x: &mut u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: an empty asm statement that claims to read and write the register
    // holding `x`; it emits no instruction.
    unsafe {
        std::arch::asm!(
            "/* {0} */",
            inout(reg) * x,
            options(nomem, nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *x = black_box(*x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recurrence_is_computed() {
        // x1 = a·1 + c with MMIX constants (wrapping): 7806831264735756412.
        assert_eq!(
            spin(1, 1),
            6_364_136_223_846_793_005u64.wrapping_add(1_442_695_040_888_963_407)
        );
        assert_ne!(spin(1, 1000), spin(1, 1001));
        assert_eq!(planted_steps(1, 5), spin(0, 5));
    }
}

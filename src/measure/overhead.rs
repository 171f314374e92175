//! The cost of measuring itself, measured once per run and subtracted from
//! every batched sample: one clock read and one iteration of an empty loop
//! (lmbench's `t_overhead` and `l_overhead` in its `src/lib_timing.c`).

use std::hint::black_box;

use super::clock::Clock;
use crate::document::{Overhead, RawSample};

impl Overhead {
    /// Measures both overheads with `clock`.
    pub fn measure(clock: &impl Clock) -> Self {
        let mut reads: Vec<f64> = (0..1001)
            .map(|_| {
                let t0 = clock.now_ns();
                let t1 = clock.now_ns();
                t1.saturating_sub(t0) as f64
            })
            .collect();
        reads.sort_by(f64::total_cmp);
        let timer_ns = reads[reads.len() / 2];

        const LOOP_ITERS: u64 = 1_000_000;
        let mut per_iter: Vec<f64> = (0..5)
            .map(|_| {
                let t0 = clock.now_ns();
                empty_loop(LOOP_ITERS);
                let t1 = clock.now_ns();
                (t1.saturating_sub(t0) as f64 - timer_ns).max(0.0) / LOOP_ITERS as f64
            })
            .collect();
        per_iter.sort_by(f64::total_cmp);
        Self {
            timer_ns,
            loop_ns_per_iter: per_iter[per_iter.len() / 2],
        }
    }

    /// What a batched sample has subtracted: all of it, or without the
    /// empty loop when the case's run is a loop of its own
    /// (`BenchDef::own_loop`).
    pub fn for_loop(self, own_loop: bool) -> Self {
        if own_loop {
            Self {
                loop_ns_per_iter: 0.0,
                ..self
            }
        } else {
            self
        }
    }
}

/// The loop every workload's `run` has around its operation, with nothing in it.
#[inline(never)]
fn empty_loop(iters: u64) {
    for i in 0..iters {
        black_box(i);
    }
}

/// `(elapsed − timer − iters × loop) / iters / ops_per_iter`.
pub fn per_op_ns(s: RawSample, o: Overhead, ops_per_iter: f64) -> f64 {
    let n = s.iters as f64;
    (s.elapsed_ns as f64 - o.timer_ns - n * o.loop_ns_per_iter) / n / ops_per_iter
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Monotonic;

    #[test]
    fn real_overhead_is_small_and_non_negative() {
        let o = Overhead::measure(&Monotonic);
        assert!(o.timer_ns >= 0.0 && o.loop_ns_per_iter >= 0.0);
    }
}

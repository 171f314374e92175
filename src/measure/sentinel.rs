//! Drift sentinels: two fixed reference workloads timed outside every case,
//! before and after each invocation, so that a comparison can tell a change
//! of the machine's own speed (a host's slow phase, a noisy neighbour, a
//! frequency change) from a change of what was measured.
//!
//! - `register-loop`: a dependent chain of integer multiply-adds; it touches
//!   no memory, so it follows the core's speed alone.
//! - `pointer-chase`: a random cyclic walk over cache lines of a working set
//!   twice the last-level cache (64 MiB when the cache size is unknown, at
//!   most 256 MiB): one dependent load per step, so it follows the memory
//!   system's latency.
//!
//! Each takes a few milliseconds; the median of [`REPETITIONS`] is kept.
//! Left out: correcting anything by them. They only flag.

use crate::document::SentinelReading;
use crate::measure::clock::monotonic_ns;
use crate::rng::SplitMix64;
use crate::stats::summary::median;

/// Timed repetitions of each sentinel per reading.
pub const REPETITIONS: usize = 5;
const REGISTER_STEPS: u64 = 1_000_000;
const CHASE_STEPS: usize = 40_000;
const LINE: usize = 64;

/// The sentinels' state: the pointer-chase working set, built once.
pub struct Sentinels {
    /// One `u32` per cache line used: the index of the next line in the cycle.
    lines: Vec<[u32; LINE / 4]>,
}

impl Sentinels {
    /// Builds the working set: a single random cycle through all its lines
    /// (Sattolo's algorithm), every page touched. `None` when the memory
    /// cannot be had (`ulimit -v`): then there are no sentinels, and no abort.
    pub fn new() -> Option<Self> {
        let bytes = (llc_bytes().unwrap_or(32 << 20) * 2).min(256 << 20);
        let n = bytes / LINE;
        let mut order: Vec<u32> = Vec::new();
        order.try_reserve_exact(n).ok()?;
        let mut lines: Vec<[u32; LINE / 4]> = Vec::new();
        lines.try_reserve_exact(n).ok()?;
        order.extend(0..n as u32);
        let mut rng = SplitMix64::new(0x05e1_71e1);
        for i in (1..n).rev() {
            let j = rng.below(i);
            order.swap(i, j);
        }
        lines.resize(n, [0u32; LINE / 4]);
        for w in 0..n {
            lines[order[w] as usize][0] = order[(w + 1) % n];
        }
        Some(Self { lines })
    }

    /// One reading of both sentinels, in ns per step.
    pub fn read(&self) -> Vec<SentinelReading> {
        let register = median_of(|| register_loop(REGISTER_STEPS) / REGISTER_STEPS as f64);
        let chase = median_of(|| self.chase(CHASE_STEPS) / CHASE_STEPS as f64);
        vec![
            SentinelReading {
                name: "register-loop".into(),
                ns_per_step: register,
            },
            SentinelReading {
                name: "pointer-chase".into(),
                ns_per_step: chase,
            },
        ]
    }

    /// Nanoseconds for `steps` dependent loads along the cycle.
    fn chase(&self, steps: usize) -> f64 {
        let mut at = 0u32;
        let start = monotonic_ns();
        for _ in 0..steps {
            at = std::hint::black_box(self.lines[at as usize][0]);
        }
        let elapsed = monotonic_ns() - start;
        std::hint::black_box(at);
        elapsed as f64
    }
}

/// Nanoseconds for `steps` dependent multiply-adds.
fn register_loop(steps: u64) -> f64 {
    let mut x = std::hint::black_box(1u64);
    let start = monotonic_ns();
    for i in 0..steps {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
    }
    let elapsed = monotonic_ns() - start;
    std::hint::black_box(x);
    elapsed as f64
}

fn median_of(mut f: impl FnMut() -> f64) -> f64 {
    let values: Vec<f64> = (0..REPETITIONS).map(|_| f()).collect();
    median(&values)
}

/// The last-level cache's size from sysfs (cpu0's highest cache level).
fn llc_bytes() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, usize)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        let Some(size) = read("size").and_then(|s| parse_size(s.trim())) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// "32768K" / "512K" / "8M" → bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, scale) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok().map(|v| v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        let s = Sentinels::new().expect("64 MiB");
        let n = s.lines.len();
        let (mut at, mut steps) = (0u32, 0usize);
        loop {
            at = s.lines[at as usize][0];
            steps += 1;
            if at == 0 {
                break;
            }
        }
        assert_eq!(steps, n, "Sattolo's shuffle gives a single cycle");
        let readings = s.read();
        assert_eq!(readings.len(), 2);
        assert!(readings.iter().all(|r| r.ns_per_step > 0.0), "{readings:?}");
    }
}

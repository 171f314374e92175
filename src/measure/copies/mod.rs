//! A case run as N copies at once (`osbench run --tasks`), will-it-scale's
//! method: each copy sets the case up on its own resources (its own
//! `setup()`, in its own process or thread, pinned to its CPU) and loops on
//! the operation, counting completed iterations in shared memory; the timing
//! thread reads the counters ([`CopiesWorkload`]) so that one harness sample
//! is one window in which the copies together completed `iters × N`
//! iterations: the sample is then per-task time per operation.
//!
//! Follows antonblanchard/will-it-scale (main.c: a counter per task in
//! shared memory, processes and threads variants, tasks placed over CPUs);
//! differs in that the window is the harness's calibrated sample (a target
//! duration, 10 ms by default, and at least 16 iterations of each copy)
//! instead of a fixed second, credited what the copies had counted when the
//! timing thread saw it end, and its samples are ns per operation (smaller
//! is faster) rather than operations per second.
//! Left out: knowing any benchmark (the copies' set-up is a closure), the
//! scaling arithmetic (`stats::scaling`) and its rendering (`report`).

mod counters;
mod limits;
mod workload;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::error::{Error, Result};

pub use counters::Counters;
pub use limits::{Limits, Needs, check_limits, refusal};
pub use workload::{CopiesWorkload, SetupFn};

/// The most copies `--tasks` takes (a typo such as 10000 is refused before
/// anything starts; the limits are checked against the real need too).
pub const MAX_TASKS: usize = 4096;

/// Whether the copies are processes (each its own mm and descriptor table)
/// or threads of osbench (one mm, one descriptor table: will-it-scale's
/// `_threads`, where an mm-wide lock is shared).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Processes,
    Threads,
}

/// How copies are placed on the allowed CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    /// Copy i on the i-th allowed CPU (round robin): one copy per CPU up
    /// to the CPUs allowed, then oversubscribed evenly.
    Spread,
    /// Every copy on one CPU (the last allowed, as `--pin same`): the copies
    /// time-share it, for scheduler contention.
    Packed,
}

/// N copies of a case, as processes or threads, placed spread or packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Copies {
    pub n: usize,
    pub mode: Mode,
    pub place: Place,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Processes => "processes",
            Mode::Threads => "threads",
        }
    }
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Spread => "spread",
            Place::Packed => "packed",
        }
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "processes" => Ok(Mode::Processes),
            "threads" => Ok(Mode::Threads),
            _ => Err(Error::Measure(format!(
                "'{s}' is not a tasks mode: give processes or threads"
            ))),
        }
    }
}

impl FromStr for Place {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "spread" => Ok(Place::Spread),
            "packed" => Ok(Place::Packed),
            _ => Err(Error::Measure(format!(
                "'{s}' is not a tasks placement: give spread or packed"
            ))),
        }
    }
}

impl Copies {
    /// The suffix a swept case's name carries, so that the task count is part
    /// of the case key (`null@2p`, `null@4t`, `null@2p-packed`).
    pub fn suffix(&self) -> String {
        let mode = match self.mode {
            Mode::Processes => 'p',
            Mode::Threads => 't',
        };
        let place = match self.place {
            Place::Spread => "",
            Place::Packed => "-packed",
        };
        format!("@{}{mode}{place}", self.n)
    }

    /// Reads a [`Self::suffix`] back (`2p`, `4t-packed`, without the `@`).
    pub fn from_suffix(s: &str) -> Option<Self> {
        let (body, place) = match s.strip_suffix("-packed") {
            Some(b) => (b, Place::Packed),
            None => (s, Place::Spread),
        };
        let mode = match body.chars().last()? {
            'p' => Mode::Processes,
            't' => Mode::Threads,
            _ => return None,
        };
        let n: usize = body[..body.len() - 1].parse().ok()?;
        (1..=MAX_TASKS)
            .contains(&n)
            .then_some(Copies { n, mode, place })
    }

    /// The selector keys that carry the copies to an agent or a file
    /// (`tasks=2,tasks_mode=threads,tasks_place=spread`).
    pub fn selector_keys(&self) -> String {
        format!(
            "tasks={},tasks_mode={},tasks_place={}",
            self.n,
            self.mode.as_str(),
            self.place.as_str()
        )
    }

    /// What the series' `params` record beside the family's own: the
    /// copies, and the CPUs online when they ran (what the default ladder,
    /// [`default_ladder`], is drawn from).
    pub fn recorded(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("tasks", Value::from(self.n as u64)),
            ("tasks_mode", Value::from(self.mode.as_str())),
            ("tasks_place", Value::from(self.place.as_str())),
            ("tasks_online_cpus", Value::from(online_cpus() as u64)),
        ]
    }

    /// The CPU copy `i` runs on, from the CPUs this process may use.
    pub fn cpu_of(&self, i: usize, allowed: &[usize]) -> Option<usize> {
        match self.place {
            _ if allowed.is_empty() => None,
            Place::Spread => Some(allowed[i % allowed.len()]),
            Place::Packed => allowed.last().copied(),
        }
    }
}

impl fmt::Display for Copies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} at once, {}",
            self.n,
            self.mode.as_str(),
            self.place.as_str()
        )
    }
}

/// The CPUs online now (sysconf), at least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// The default ladder for `online` CPUs: 1, 2, 4, … up to `online` (which
/// is always a rung), then 2 × `online` (oversubscribed).
pub fn default_ladder(online: usize) -> Vec<usize> {
    let online = online.max(1);
    let mut ladder = Vec::new();
    let mut n = 1;
    while n < online {
        ladder.push(n);
        n *= 2;
    }
    ladder.push(online);
    ladder.push(2 * online);
    ladder
}

/// Reads a ladder: `1..8` (every count), `1,2,4` (a list), or one count;
/// sorted, without repeats, each in `1..=MAX_TASKS`.
pub fn parse_ladder(s: &str) -> Result<Vec<usize>> {
    let bad = |why: String| {
        Error::Measure(format!(
            "--tasks '{s}': {why}; give a range such as 1..8, a list such as 1,2,4, or a count"
        ))
    };
    let count = |t: &str| -> Result<usize> {
        let n: usize = t
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{t}' is not a task count")))?;
        if (1..=MAX_TASKS).contains(&n) {
            Ok(n)
        } else {
            Err(bad(format!("{n} is outside 1 to {MAX_TASKS}")))
        }
    };
    let mut ladder: Vec<usize> = match s.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (count(a)?, count(b.trim_start_matches('='))?);
            if a > b {
                return Err(bad(format!("the range {a}..{b} is empty")));
            }
            (a..=b).collect()
        }
        None => s.split(',').map(count).collect::<Result<_>>()?,
    };
    ladder.sort_unstable();
    ladder.dedup();
    Ok(ladder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_ladder_doubles_to_the_online_cpus_then_oversubscribes() {
        assert_eq!(default_ladder(1), vec![1, 2]);
        assert_eq!(default_ladder(2), vec![1, 2, 4]);
        assert_eq!(default_ladder(6), vec![1, 2, 4, 6, 12]);
        assert_eq!(
            default_ladder(512),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        );
    }

    #[test]
    fn ladders_read_ranges_lists_and_counts_and_refuse_the_rest() {
        assert_eq!(parse_ladder("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_ladder("4,1,2,2").unwrap(), vec![1, 2, 4]);
        assert_eq!(parse_ladder("512").unwrap(), vec![512]);
        for bad in ["0..2", "3..1", "x", "1,,2", "9999"] {
            let e = parse_ladder(bad).unwrap_err().to_string();
            assert!(e.contains("--tasks") && e.contains("give a range"), "{e}");
        }
    }

    #[test]
    fn a_suffix_reads_back_as_the_copies_it_names() {
        for n in [1, 2, 64, 512] {
            for mode in [Mode::Processes, Mode::Threads] {
                for place in [Place::Spread, Place::Packed] {
                    let c = Copies { n, mode, place };
                    let s = c.suffix();
                    assert_eq!(Copies::from_suffix(&s[1..]), Some(c), "{s}");
                }
            }
        }
        assert_eq!(Copies::from_suffix("2x"), None);
        assert_eq!(Copies::from_suffix("0p"), None);
    }

    #[test]
    fn spread_copies_go_round_robin_and_packed_ones_share_a_cpu() {
        let cpus = [0, 1];
        let spread = Copies {
            n: 512,
            mode: Mode::Threads,
            place: Place::Spread,
        };
        let on: Vec<_> = (0..512).map(|i| spread.cpu_of(i, &cpus).unwrap()).collect();
        assert_eq!(on.iter().filter(|&&c| c == 0).count(), 256);
        let packed = Copies {
            place: Place::Packed,
            ..spread
        };
        assert!((0..512).all(|i| packed.cpu_of(i, &cpus) == Some(1)));
        assert_eq!(spread.cpu_of(3, &[]), None);
    }
}

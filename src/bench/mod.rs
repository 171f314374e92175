//! Benchmark families, their parameters, and the registry that lists them.
//!
//! A family is one file holding one [`BenchDef`]: its parameters, its default
//! cases, what one operation is, and a constructor that sets a case up and
//! returns a [`Workload`] (the harness's interface, `measure::workload`).
//! Adding a family is that file plus one line in [`REGISTRY`]
//! (docs/adding-a-benchmark.md). Benchmarks never print or compute statistics,
//! and read clocks only to timestamp single events (latency families).

pub mod atomic;
pub mod clock;
pub mod connect;
pub mod ctx;
pub mod fault;
pub mod file;
pub mod fs;
pub mod futex;
pub mod ipc;
pub mod membw;
pub mod memlat;
pub mod messaging;
pub mod mmap;
pub mod poll;
pub mod proc;
pub mod rseq;
pub mod sandbox;
pub mod schbench;
pub mod signal;
pub mod sigqueue;
pub mod spin;
pub mod stream;
pub mod syscall;
pub mod timer;
pub mod tlb;
pub mod uring;
pub mod util;
pub mod wakeup;

use std::fmt;

use serde_json::{Map, Value};

pub use crate::document::Unit;
use crate::error::Result;
use crate::measure::placement::{Pin, Placement};
pub use crate::measure::workload::Workload;

/// The values a parameter accepts.
#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// A count in `min..=max`, or "all" (every CPU this process may use).
    CountOrAll { min: i64, max: i64 },
    /// An integer in `min..=max`, or `word` (e.g. "inherit": left as it is).
    IntOr {
        word: &'static str,
        min: i64,
        max: i64,
    },
}

/// One parameter of a family.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: ParamKind,
    pub default: &'static str,
}

/// How [`ParamSpec::allowed_as`] writes the allowed values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notation {
    /// In words, for error messages: `null, read`, `an integer from 2 to 1024`,
    /// `all, or an integer from 1 to 1024`.
    Words,
    /// Compact, for `osbench list`: `null|read`, `2..=1024`, `all|1..=1024`.
    Short,
}

impl ParamSpec {
    /// The allowed values in words, as errors show them.
    pub fn allowed(&self) -> String {
        self.allowed_as(Notation::Words)
    }

    /// The allowed values written in `notation`.
    pub fn allowed_as(&self, notation: Notation) -> String {
        let short = notation == Notation::Short;
        let range = |min: i64, max: i64| {
            if short {
                format!("{min}..={max}")
            } else {
                format!("an integer from {min} to {max}")
            }
        };
        match self.kind {
            ParamKind::Choice(words) => words.join(if short { "|" } else { ", " }),
            ParamKind::Int { min, max } => range(min, max),
            ParamKind::CountOrAll { min, max } => {
                format!(
                    "all{}{}",
                    if short { "|" } else { ", or " },
                    range(min, max)
                )
            }
            ParamKind::IntOr { word, min, max } => {
                format!(
                    "{word}{}{}",
                    if short { "|" } else { ", or " },
                    range(min, max)
                )
            }
        }
    }

    /// Whether `value` is allowed.
    pub fn accepts(&self, value: &str) -> bool {
        match self.kind {
            ParamKind::Choice(words) => words.contains(&value),
            ParamKind::Int { min, max } => {
                value.parse::<i64>().is_ok_and(|v| (min..=max).contains(&v))
            }
            ParamKind::CountOrAll { min, max } => {
                value == "all" || value.parse::<i64>().is_ok_and(|v| (min..=max).contains(&v))
            }
            ParamKind::IntOr { word, min, max } => {
                value == word || value.parse::<i64>().is_ok_and(|v| (min..=max).contains(&v))
            }
        }
    }

    /// `value` as JSON: a number for integers, a string otherwise.
    fn to_json(self, value: &str) -> Value {
        match self.kind {
            ParamKind::Int { .. } | ParamKind::CountOrAll { .. } | ParamKind::IntOr { .. } => value
                .parse::<i64>()
                .map_or_else(|_| Value::from(value), Value::from),
            ParamKind::Choice(_) => Value::from(value),
        }
    }
}

/// The full, validated parameter values of one case, in the family's order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Params {
    values: Vec<(&'static str, String)>,
}

impl Params {
    /// The family's defaults, overridden by `fixed` (names and values already validated).
    pub fn new(def: &BenchDef, fixed: &[(&str, &str)]) -> Self {
        let values = def
            .params
            .iter()
            .map(|p| {
                let v = fixed
                    .iter()
                    .find(|(k, _)| *k == p.name)
                    .map_or(p.default, |(_, v)| v);
                (p.name, v.to_string())
            })
            .collect();
        Self { values }
    }

    /// Sets parameter `name` (already validated) to `value`.
    pub fn set(&mut self, name: &str, value: &str) {
        if let Some((_, v)) = self.values.iter_mut().find(|(k, _)| *k == name) {
            *v = value.to_string();
        }
    }

    /// The value of parameter `name`. Panics if the family has no such parameter
    /// (a programming error: names come from the family's own spec).
    pub fn get(&self, name: &str) -> &str {
        self.get_opt(name)
            .unwrap_or_else(|| panic!("no parameter '{name}'"))
    }

    /// The value of parameter `name`, `None` when the family has none.
    pub fn get_opt(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// An integer parameter (validated at selection time).
    pub fn int(&self, name: &str) -> i64 {
        self.get(name)
            .parse()
            .unwrap_or_else(|_| panic!("parameter '{name}' is not an integer"))
    }

    /// A count-or-all parameter: "all" is every CPU this process may use.
    pub fn count(&self, name: &str) -> usize {
        match self.get(name) {
            "all" => std::thread::available_parallelism().map_or(1, usize::from),
            n => n
                .parse()
                .unwrap_or_else(|_| panic!("parameter '{name}' is not a count")),
        }
    }

    /// The values as a JSON object, typed by `def`'s specs.
    pub fn to_json(&self, def: &BenchDef) -> Map<String, Value> {
        def.params
            .iter()
            .map(|p| (p.name.to_string(), p.to_json(self.get(p.name))))
            .collect()
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A benchmark family: everything the registry, the CLI and the harness need.
pub struct BenchDef {
    pub name: &'static str,
    /// One line: what it measures and which anchor it follows.
    pub summary: &'static str,
    pub unit: Unit,
    pub params: &'static [ParamSpec],
    /// The cases run when the family is selected without parameters.
    pub default_cases: DefaultCases,
    /// Short case name for tables (e.g. "null", "2p/16K").
    pub case_name: fn(&Params) -> String,
    /// What one operation is, in words (e.g. "one getppid() call").
    pub op: fn(&Params) -> String,
    /// The anchor command that measures the same thing, to set results beside
    /// (e.g. "lat_syscall null", "hackbench -g 10 -p").
    pub anchor: fn(&Params) -> String,
    /// What the family measures differently from its anchor on purpose, in a
    /// sentence or two for `osbench list` ("" when nothing differs).
    pub differs: &'static str,
    /// How many of the family's operations one harness iteration performs.
    pub ops_per_iter: fn(&Params) -> f64,
    /// Bandwidth families: the bytes one operation moves, so tables can
    /// headline MB/s (10^6 B per second, lmbench's MB). Samples stay time per
    /// operation, so every comparison reads a higher bandwidth as faster.
    pub bytes_per_op: fn(&Params) -> Option<f64>,
    /// How many tasks (processes or threads) a case runs, the timing one included.
    pub tasks: fn(&Params) -> usize,
    /// Sets a case up; task i (0 = the timing thread, already placed by the
    /// caller) must run on `placement.cpu_of(i)`.
    pub setup: fn(&Params, &Placement) -> Result<Box<dyn Workload>>,
    /// How the harness samples a case.
    pub sampling: Sampling,
    /// Checks run before anything is measured (privileges, devices); an error
    /// stops the whole run.
    pub check: fn(&Params) -> Result<()>,
    /// The placement without `--pin` (`None`: one-task cases on one CPU, the
    /// others left to the scheduler).
    pub default_pin: Option<Pin>,
    /// Whether the machine's TLB shootdown interrupts (/proc/interrupts) are
    /// read around each sample, as the counter `tlb_shootdowns`.
    pub counts_tlb_shootdowns: bool,
    /// What else affects a case, read when it is measured and recorded in its
    /// series' `params` beside the parameters (the timer's slack in effect).
    pub recorded: fn(&Params) -> Vec<(&'static str, Value)>,
    /// Why this machine's kernel cannot run the case at all (io_uring
    /// disabled by sysctl or seccomp, a system call it lacks): the case is
    /// then skipped with this reason, never measured as zero. `None`: it can
    /// run. Unlike `check`, which stops the run, this only drops the case.
    pub unavailable: fn(&Params) -> Option<String>,
    /// Why copies of a case cannot be threads of one process (`run --tasks
    /// --tasks-mode threads`): state the family keeps per process, such as
    /// signal dispositions and a handler's static data. `None`: they can.
    pub not_as_threads: Option<&'static str>,
    /// Why copies of a case cannot be counted at all (`run --tasks`), beyond
    /// latency families (always refused): whole runs whose samples are
    /// statistics of their own, not iterations. `None`: they can.
    pub not_swept: Option<&'static str>,
    /// What besides the machine can put this family's samples in two
    /// clusters (e.g. the pages under a buffer), named first when they do.
    pub two_clusters: Option<&'static str>,
    /// Whether a case's `run` is a loop in the family's own instructions,
    /// its anchor's loop, whose cost the anchor counts in its figure (the
    /// rseq selftest's): the harness then subtracts no empty loop's cost
    /// per iteration, which would remove a loop that is not there. Batched
    /// cases only; a sample still has one clock read subtracted.
    pub own_loop: fn(&Params) -> bool,
}

impl BenchDef {
    /// What a family leaves out takes these values: `DEF = BenchDef { name,
    /// summary, unit, params, case_name, op, anchor, setup, ..BenchDef::DEFAULTS }`
    /// gives one case of every parameter at its default, one operation per
    /// iteration in the timing thread alone, batched samples, no check, the
    /// usual placement, no TLB counter. The
    /// name, summary, op, anchor and setup here are placeholders every family
    /// sets (a registry test checks it).
    pub const DEFAULTS: BenchDef = BenchDef {
        name: "",
        summary: "",
        unit: Unit::Ns,
        params: &[],
        default_cases: DefaultCases::Defaults,
        case_name: |_| String::new(),
        op: |_| String::new(),
        anchor: |_| String::new(),
        differs: "",
        ops_per_iter: |_| 1.0,
        bytes_per_op: |_| None,
        tasks: |_| 1,
        setup: |_, _| {
            Err(crate::error::Error::Measure(
                "this benchmark family sets no setup function".into(),
            ))
        },
        sampling: Sampling::Batched { stand_in: None },
        check: |_| Ok(()),
        default_pin: None,
        counts_tlb_shootdowns: false,
        recorded: |_| Vec::new(),
        unavailable: |_| None,
        not_as_threads: None,
        not_swept: None,
        two_clusters: None,
        own_loop: |_| false,
    };
}

/// How a family's cases are sampled; once a case is set up, the harness gets
/// the matching [`crate::measure::SampleMethod`].
pub enum Sampling {
    /// Calibrated batches of many iterations. With a stand-in, it is sampled
    /// alternately with the case and its median subtracted (lmbench's `ovr`).
    Batched { stand_in: Option<StandIn> },
    /// Every sample is one whole run (hackbench): `prepare` untimed, then
    /// `run(1)` timed, no batching.
    WholeRuns,
    /// Latency families: how many events to record (the workload timestamps
    /// each one; the result is their distribution).
    Events(fn(&Params) -> u64),
    /// A family of both kinds (`proc`): the cases given an event count are
    /// latency distributions, the others calibrated batches without a stand-in.
    EventsFor(fn(&Params) -> Option<u64>),
}

/// Which cases a family runs by default.
#[derive(Debug, Clone, Copy)]
pub enum DefaultCases {
    /// One case: every parameter at its default.
    Defaults,
    /// One case per allowed value of this choice parameter, the others at their defaults.
    EachOf(&'static str),
    /// These cases, each listing only the parameters that differ from the defaults.
    Listed(&'static [&'static [(&'static str, &'static str)]]),
}

impl BenchDef {
    /// The default cases as parameter assignments (only what differs from the defaults).
    pub fn default_cases(&self) -> Vec<Vec<(&'static str, &'static str)>> {
        match self.default_cases {
            DefaultCases::Defaults => vec![Vec::new()],
            DefaultCases::EachOf(name) => {
                match self.params.iter().find(|p| p.name == name).map(|p| p.kind) {
                    Some(ParamKind::Choice(words)) => {
                        words.iter().map(|w| vec![(name, *w)]).collect()
                    }
                    _ => panic!(
                        "{}: DefaultCases::EachOf({name}) needs a choice parameter",
                        self.name
                    ),
                }
            }
            DefaultCases::Listed(cases) => cases.iter().map(|c| c.to_vec()).collect(),
        }
    }
}

/// An in-process stand-in for one operation without the part being measured,
/// run in the timing thread; its median per operation is subtracted.
pub struct StandIn {
    /// What one stand-in operation is.
    pub op: fn(&Params) -> String,
    pub setup: fn(&Params) -> Result<Box<dyn Workload>>,
}

impl fmt::Debug for BenchDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BenchDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Every family, in the order `list` shows them and the default suite runs them.
pub static REGISTRY: &[&BenchDef] = &[
    &syscall::DEF,
    &atomic::DEF,
    &rseq::DEF,
    &ctx::DEF,
    &ipc::DEF,
    &proc::DEF,
    &signal::DEF,
    &fault::DEF,
    &mmap::DEF,
    &tlb::DEF,
    &messaging::DEF,
    &wakeup::DEF,
    &schbench::DEF,
    &sigqueue::DEF,
    &futex::DEF,
    &timer::DEF,
    &poll::DEF,
    &stream::DEF,
    &connect::DEF,
    &fs::DEF,
    &file::DEF,
    &membw::DEF,
    &memlat::DEF,
    &uring::DEF,
    &sandbox::DEF,
    &clock::DEF,
    &spin::DEF,
];

/// The family called `name`.
pub fn find(name: &str) -> Option<&'static BenchDef> {
    REGISTRY.iter().copied().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_replaces_the_placeholders_of_the_defaults() {
        for def in REGISTRY {
            assert!(!def.name.is_empty() && !def.summary.is_empty(), "{def:?}");
            assert!(find(def.name).is_some_and(|d| std::ptr::eq(d, *def)));
            for fixed in def.default_cases() {
                let p = Params::new(def, &fixed);
                for (what, text) in [
                    ("case name", (def.case_name)(&p)),
                    ("op", (def.op)(&p)),
                    ("anchor", (def.anchor)(&p)),
                ] {
                    assert!(!text.is_empty(), "{}: no {what} for {p}", def.name);
                }
            }
        }
    }
}

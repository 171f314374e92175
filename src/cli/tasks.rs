//! `--tasks`, `--tasks-mode`, `--tasks-place`: the options that sweep every
//! selected case over task counts (`measure::copies`), shared by `run` and
//! `fleet run` through `MeasureArgs`. Only parsing: the sweep's cases are
//! `select::sweep`'s, its default ladder `copies::default_ladder`'s.

use clap::{Args, ValueEnum};

use osbench::bench::util::select::{Case, sweep};
use osbench::measure::copies::{self, Mode, Place};

/// How copies run: as processes, as threads, or both (will-it-scale's two variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TasksMode {
    Processes,
    Threads,
    Both,
}

/// Where copies run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TasksPlace {
    Spread,
    Packed,
}

#[derive(Args, Debug, Clone)]
pub struct TasksArgs {
    /// Run every selected case as N copies at once, each on its own resources, for each N:
    /// a range 1..8, a list 1,2,4 or a count (will-it-scale's method: samples are per-task
    /// time per op; the tables add throughput and scaling efficiency). Without a value:
    /// 1, 2, 4, … up to the online CPUs, then twice that (oversubscribed)
    #[arg(long, value_name = "LADDER", num_args = 0..=1, default_missing_value = "auto",
          value_parser = parse_tasks)]
    tasks: Option<Ladder>,
    /// Copies as processes, threads (one mm and descriptor table, shared), or both
    #[arg(long = "tasks-mode", value_name = "MODE", value_enum, default_value_t = TasksMode::Processes)]
    tasks_mode: TasksMode,
    /// Copies spread round robin over the allowed CPUs, or packed on one CPU
    #[arg(long = "tasks-place", value_name = "PLACE", value_enum, default_value_t = TasksPlace::Spread)]
    tasks_place: TasksPlace,
}

/// A ladder as given: counts, or the machine's default.
#[derive(Debug, Clone)]
pub enum Ladder {
    Auto,
    Counts(Vec<usize>),
}

fn parse_tasks(s: &str) -> Result<Ladder, String> {
    match s {
        "auto" => Ok(Ladder::Auto),
        _ if !s.starts_with(|c: char| c.is_ascii_digit()) => Err(format!(
            "'{s}' is not a ladder of task counts; for the default ladder write --tasks=auto or \
             put --tasks after the selectors"
        )),
        _ => copies::parse_ladder(s)
            .map(Ladder::Counts)
            .map_err(|e| e.to_string()),
    }
}

impl TasksArgs {
    /// `cases` swept as asked; unchanged without `--tasks`.
    pub fn apply(&self, cases: Vec<Case>) -> Vec<Case> {
        let ladder = match &self.tasks {
            None => return cases,
            Some(Ladder::Counts(c)) => c.clone(),
            Some(Ladder::Auto) => copies::default_ladder(copies::online_cpus()),
        };
        let modes: &[Mode] = match self.tasks_mode {
            TasksMode::Processes => &[Mode::Processes],
            TasksMode::Threads => &[Mode::Threads],
            TasksMode::Both => &[Mode::Processes, Mode::Threads],
        };
        let place = match self.tasks_place {
            TasksPlace::Spread => Place::Spread,
            TasksPlace::Packed => Place::Packed,
        };
        sweep(cases, &ladder, modes, place)
    }
}

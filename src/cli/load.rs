//! `--load SPEC`, the option of `run` and `fleet run` that runs a
//! background load beside every case (issue 42, item 1): parsed into the
//! document's typed spec, handed to the plan. Left out: starting and
//! stopping loads (`osbench::measure::load`), per-configuration loads
//! (experiment files' `load = "SPEC"`).

use clap::Args;

use osbench::document::LoadSpec;
use osbench::experiment::Plan;

/// The load options of a run.
#[derive(Args, Default)]
pub struct LoadArgs {
    /// A background load that runs beside every case (started before it, stopped after it)
    /// of every configuration that names none of its own, its throughput recorded beside
    /// the case: hackbench:GROUPS, spin:TASKS, memstream[:MiB], iostream[:DIR] or
    /// cmd:COMMAND (sh -c; its CPU time is its throughput), each optionally @CPUS, e.g.
    /// --load hackbench:2, --load 'cmd:make -j2@0-1' (repeat for several)
    #[arg(long = "load", value_name = "SPEC", value_parser = parse_load)]
    loads: Vec<LoadSpec>,
}

impl LoadArgs {
    /// Gives `plan` these loads.
    pub fn apply(&self, plan: &mut Plan) {
        plan.loads = self.loads.clone();
    }
}

fn parse_load(text: &str) -> Result<LoadSpec, String> {
    text.parse().map_err(|e: osbench::Error| {
        let message = e.to_string();
        message
            .strip_prefix(&format!("load '{text}': "))
            .map_or(message.clone(), str::to_string)
    })
}

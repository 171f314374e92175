//! The one place a [`Plan`] is built: [`Plan::new`] with the defaults of a
//! run (no configurations, one round, one invocation, no precision target,
//! perf counted, logs kept, measured here), and the plans derived from one
//! (with configurations, on a remote system, one invocation's). What a plan
//! means and how it runs are `experiment`'s own (mod.rs); reading it from a
//! command line is the CLI's.

use crate::bench::util::select::Case;
use crate::document::LoadSpec;
use crate::measure::Policy;

use super::{Config, Plan, Remote};

impl Plan {
    /// `cases`, measured as `policy` says, in an order seeded by `seed`:
    /// no configurations, one round, one invocation, no precision target
    /// or time limit, each family's placement, perf counted, the guests'
    /// system logs asked for, here (not remote).
    pub fn new(cases: Vec<Case>, seed: u64, policy: Policy) -> Self {
        Plan {
            cases,
            seed,
            pin: None,
            configs: Vec::new(),
            rounds: 1,
            invocations: 1,
            target_ci: None,
            max_time: None,
            target_mde: None,
            policy,
            perf: true,
            remote: None,
            logs: true,
            allow_unknown_boot_parameters: false,
            profile: None,
            loads: Vec::new(),
        }
    }

    /// The loads that run beside the cases of `config`: its own, else the plan's.
    pub fn loads_of<'a>(&'a self, config: &'a Config) -> &'a [LoadSpec] {
        match config.loads.is_empty() {
            true => &self.loads,
            false => &config.loads,
        }
    }

    /// This plan with `configs` compared over `rounds` rounds.
    pub fn with_configs(mut self, configs: Vec<Config>, rounds: usize) -> Self {
        self.configs = configs;
        self.rounds = rounds;
        self
    }

    /// This plan run on `remote` in place of this system.
    pub fn on_remote(&self, remote: Remote) -> Self {
        let mut plan = self.clone();
        plan.remote = Some(remote);
        plan
    }

    /// The plan of one invocation of this one (`remote`: the fresh process
    /// it runs in), seeded with `seed`, taking `samples` samples a case,
    /// counting nothing (the invocations' counting is the run's).
    pub fn for_invocation(&self, seed: u64, samples: usize, remote: Remote) -> Self {
        let mut plan = self.on_remote(remote);
        plan.seed = seed;
        plan.invocations = 1;
        plan.perf = false;
        plan.profile = None;
        plan.policy.samples = samples;
        plan
    }
}

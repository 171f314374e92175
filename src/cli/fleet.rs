//! `osbench fleet run`: the same selected cases on several hosts over ssh
//! (`osbench::fleet`), one line of progress per host, each host's document
//! stored under its name (and written to `--out DIR/NAME.json`), a case ×
//! host table of medians at the end. With configurations (`--config`,
//! `--experiment`, as for `run`) each host interleaves them round by round,
//! its agent running their set-ups and tear-downs on the host, and the end
//! compares them within each host (as `compare RUN --by host` does). A host
//! that fails is named; the others' results are kept and the exit status
//! (2) says the run was partial.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use osbench::bench::util::select::{Case, resolve};
use osbench::document::{Document, RunIdentity, Series};
use osbench::experiment::{Observer, Plan};
use osbench::fleet::{self, Host};
use osbench::measure::Interrupt;
use osbench::report::fmt_sig;

use super::run::{Configs, MeasureArgs};
use super::save::{ExportArgs, LogsArgs, MetaArgs, SaveArgs, StoreArgs, parse_label};

#[derive(Subcommand)]
pub enum FleetCommand {
    /// Run the selected cases on every host at once, each with its own `osbench agent`
    /// reached over ssh; each host's run is stored under its name
    Run(FleetRunArgs),
}

#[derive(Args)]
pub struct FleetRunArgs {
    /// BENCH or BENCH:key=value[,key=value...], as for `run`; none: the quick default suite
    #[arg(value_name = "SELECTOR", value_parser = super::selector_parser(), hide_possible_values = true)]
    selectors: Vec<String>,
    /// A host, NAME=TARGET: TARGET is what ssh connects to (user@host, or a Host of the ssh
    /// configuration); NAME is what its runs are filed under (repeat)
    #[arg(long = "host", value_name = "NAME=TARGET")]
    hosts: Vec<String>,
    /// Hosts from a TOML file: [[host]] with name, target, optional ssh_options (each given
    /// to ssh as -o) and osbench (its path on the host)
    #[arg(long = "hosts", value_name = "FILE")]
    hosts_file: Option<PathBuf>,
    /// An ssh option for every host, as ssh's -o takes it (e.g. Port=2222, or
    /// ControlMaster=auto with ControlPath and ControlPersist); repeat
    #[arg(long = "ssh-option", value_name = "OPTION")]
    ssh_options: Vec<String>,
    /// Copy this osbench to each host's ~/.cache/osbench first (after checking that its
    /// architecture and C library can run it); without it the hosts' own osbench runs
    #[arg(long)]
    install: bool,
    /// Also write each host's document to DIR/NAME.json
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    measure: MeasureArgs,
    /// A configuration to compare on every host, NAME=COMMAND: COMMAND (run with sh -c on
    /// the host, by its agent) is its set-up, run before its block in every round (repeat;
    /// the first is the baseline; NAME= with no command runs nothing). NAME:KNOB=VALUE sets
    /// a knob on each host (a path, sysctl.NAME, sched_feature, thp…; see `run --help`), its
    /// value found there restored after the run
    #[arg(long = "config", value_name = "NAME=COMMAND|NAME:KNOB=VALUE")]
    configs: Vec<String>,
    /// Tear-down of a configuration, NAME=COMMAND, run on the host after its block whatever
    /// happens
    #[arg(long = "teardown", value_name = "NAME=COMMAND")]
    teardowns: Vec<String>,
    /// Configurations (and selectors) from a TOML experiment file, as for `run`; they run on
    /// every host (none may name a guest)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["configs", "teardowns"])]
    experiment: Option<PathBuf>,
    /// Rounds when comparing configurations (each host runs every configuration once per
    /// case per round), 2 to 1000 [default: 10]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..=osbench::stats::paired::MOST_ROUNDS as i64))]
    rounds: Option<u32>,
    /// Name the runs (every host's); compare and history accept the name
    #[arg(long, value_name = "NAME", value_parser = parse_label)]
    label: Option<String>,
    #[command(flatten)]
    meta: MetaArgs,
    // Each host's agent keeps its system logs with its run unless --no-logs.
    #[command(flatten)]
    logs: LogsArgs,
    #[command(flatten)]
    store: StoreArgs,
    /// Do not save the runs in the results store
    #[arg(long, conflicts_with = "store")]
    no_store: bool,
    /// Print only the results: no progress, no warnings
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    layout: super::LayoutArgs,
}

pub fn fleet(command: FleetCommand, console: super::Console) -> anyhow::Result<ExitCode> {
    match command {
        FleetCommand::Run(args) => {
            let console = console.laid_out(&args.layout);
            fleet_run(args, console)
        }
    }
}

fn fleet_run(args: FleetRunArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    let hosts = hosts(&args)?;
    let plan = plan(&args)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("cannot create --out directory {}: {e}", dir.display()))?;
    }
    let meta = args.meta.map()?;
    // Before measuring: a bad output path or store is found now.
    let savings = hosts
        .iter()
        .map(|h| save_args(&args, h).prepare(args.quiet))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let interrupt = Interrupt::install()?;
    let bars = Bars::new(args.quiet);
    let make = |host: &Host| -> Box<dyn Observer + Send> { Box::new(bars.line(&host.name)) };
    let runs = fleet::run(&plan, &hosts, args.install, &interrupt, &make);
    bars.clear();

    let mut stored: Vec<(String, Document)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for (run, saving) in runs.into_iter().zip(savings) {
        match run.result {
            Ok(outcome) => {
                // The host's name is already the run's (`Plan::remote`).
                let identity = RunIdentity {
                    label: args.label.clone(),
                    host: None,
                    meta: meta.clone(),
                };
                let show = |_: &Document, _: Option<&_>| Ok::<(), std::convert::Infallible>(());
                let Ok(kept) = saving.keep(outcome, &identity, None, show);
                // One host's files failing (a full disk) must not lose the others.
                if let Err(e) = kept.saved.map_err(super::save::kept_error) {
                    failures.push(format!("host '{}': {e:#}", run.host));
                }
                if let Some(e) = kept.error {
                    failures.push(format!("host '{}' stopped early: {e}", run.host));
                }
                stored.push((run.host, kept.document));
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !stored.is_empty() {
        let table: Vec<(&str, &Document)> = stored.iter().map(|(h, d)| (h.as_str(), d)).collect();
        console.print(&osbench::report::history::by_host_within(
            &table,
            console.width,
        ));
    }
    if plan.configs.len() >= 2 {
        print_config_comparisons(&stored, plan.seed, console);
    }
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in &failures {
        eprintln!("osbench: error: {f}");
    }
    if interrupt.is_set() {
        return Err(anyhow!(osbench::Error::Interrupted));
    }
    Err(anyhow!(
        "fleet run partial: {} of {} hosts did not finish; what they measured and the other \
         hosts' results are kept",
        failures.len(),
        hosts.len()
    ))
}

/// The plan every host runs: the selected cases, with the configurations
/// (each host's own agent applies them) in rounds.
fn plan(args: &FleetRunArgs) -> anyhow::Result<Plan> {
    let asked = Configs {
        configs: &args.configs,
        teardowns: &args.teardowns,
        guests: &[],
        experiment: args.experiment.as_deref(),
    };
    let (configs, selectors) = asked.with_selectors(&args.selectors)?;
    if configs.is_empty() && args.rounds.is_some() {
        bail!(
            "--rounds repeats configurations (--config, --experiment) to compare them, and a \
             fleet run without configurations measures each case once per host"
        );
    }
    let plan = args
        .measure
        .plan(resolve(&selectors)?, args.logs.wanted())
        .with_configs(configs, args.rounds.map_or(10, |n| n as usize));
    osbench::experiment::check_remote_configs(&plan.configs)?; // once, not once per host
    Ok(plan)
}

/// Each host's configurations compared (the first the baseline), and the
/// fleet's verdict over the hosts (or why nothing could be compared).
fn print_config_comparisons(stored: &[(String, Document)], seed: u64, console: super::Console) {
    let options = osbench::compare::Options {
        seed,
        ..Default::default()
    };
    match osbench::compare::fleet::configs_by_host(stored, options) {
        Ok(fleets) => {
            for f in &fleets {
                console.print(&format!(
                    "\n{}",
                    osbench::report::compare::render_fleet(f, false)
                ));
            }
        }
        Err(e) if !stored.is_empty() => super::warn(&e.to_string()),
        Err(_) => {}
    }
}

/// The hosts of `--hosts` then `--host`, each with the `--ssh-option`s.
fn hosts(args: &FleetRunArgs) -> anyhow::Result<Vec<Host>> {
    let mut hosts = match &args.hosts_file {
        Some(path) => fleet::load_hosts(path)?,
        None => Vec::new(),
    };
    for spec in &args.hosts {
        hosts.push(fleet::parse_host(spec)?);
    }
    for h in &mut hosts {
        h.ssh_options.extend(args.ssh_options.iter().cloned());
    }
    fleet::check_hosts(&hosts)?;
    Ok(hosts)
}

/// Where host `h`'s run is saved: the store, and `--out DIR/NAME.json`.
fn save_args(args: &FleetRunArgs, h: &Host) -> SaveArgs {
    SaveArgs {
        exports: ExportArgs {
            json: args
                .out
                .as_ref()
                .map(|d| d.join(format!("{}.json", h.name))),
            markdown: None,
            csv: None,
        },
        label: args.label.clone(),
        meta: args.meta.clone(),
        store: args.store.clone(),
        no_store: args.no_store,
        // A host's environment and system logs are captured by its agent (`Plan::logs`).
        logs: LogsArgs {
            logs: false,
            no_logs: true,
        },
    }
}

/// One progress line per host: bars on a terminal, else a line per case.
struct Bars {
    multi: Option<MultiProgress>,
    quiet: bool,
}

impl Bars {
    fn new(quiet: bool) -> Self {
        let multi = (!quiet && std::io::stderr().is_terminal())
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Self { multi, quiet }
    }

    fn line(&self, host: &str) -> HostLine {
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12} {elapsed:>4} [{bar:20}] {pos}/{len} {msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(host.to_string());
            bar.set_message("connecting");
            bar
        });
        HostLine {
            host: host.to_string(),
            bar,
            quiet: self.quiet,
        }
    }

    fn clear(&self) {
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}

struct HostLine {
    host: String,
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl HostLine {
    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }
}

impl Observer for HostLine {
    fn case_started(&mut self, index: usize, total: usize, case: &Case) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(index as u64);
            bar.set_message(format!("{} {}", case.def.name, case.name()));
        }
    }

    fn case_finished(&mut self, s: &Series) {
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => self.say(&format!(
                "{}: {} {}: {} {}",
                self.host,
                s.key.bench,
                s.key.short(),
                fmt_sig(s.summary.median),
                s.unit.symbol()
            )),
        }
    }

    fn case_failed(&mut self, error: &osbench::Error) {
        self.say(&format!("osbench: {}: failed: {error}", self.host));
    }

    fn audit(&mut self, finding: &str) {
        self.say(&format!("osbench: warning: {}: {finding}", self.host));
    }
}

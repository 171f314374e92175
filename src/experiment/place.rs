//! Where a configuration runs: here (its set-up and tear-down as shell
//! commands on this system, its cases measured and counted by this process's
//! harness) or in a guest (a UML or QEMU kernel, a command, an ssh host, each
//! running `osbench agent`, which runs the set-up and tear-down and measures
//! with the guest's clocks and counters). [`Places`] resolves every
//! configuration's [`Place`] once, before the first round — a guest of its
//! own, one it shares (`in`), or here; on a remote plan (a fleet host, one
//! invocation of `--invocations`) every configuration's place is that
//! system's one guest — starts the guests and ends them. The round loop then
//! applies, measures, counts, reads the environment and tears down through a
//! `Place` without asking which one it is. The readings of the whole run
//! that depend on where it ran are here too: which environment it records
//! and audits, its load at the end, the guests the document lists, its host.
//!
//! Left out: what measuring a case is (`case`), the rounds and their order
//! (`rounds`, `RunRounds` in this module's parent), and the agent protocol
//! (`crate::guest`). Comes from `RunRounds` in `experiment/mod.rs`, which
//! branched on "remote" and "in a guest" at each of these steps; DESIGN.md:
//! "one `Place` (local or guest) behind which a configuration is applied,
//! measured, counted and torn down".

use std::time::Duration;

use super::case::{self, CaseEnd};
use super::config::{self, Config};
use super::knob::{KnobFs, Knobs, LocalFs};
use super::{Plan, profiling, series_meters, with_overrides};
use crate::bench::util::select::{Case, split_unavailable};
use crate::document::{GuestInfo, GuestSpec, KnobRecord, LoadSpec, Policy, ProfileOutcome, Series};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::guest::Guest;
use crate::guest::protocol::RunRequest;
use crate::measure::placement::Pin;
use crate::measure::{Clock, Harness, Interrupt};

/// How long a guest left busy by an interrupt has to finish its request
/// before a tear-down is sent to it.
const SETTLE: Duration = Duration::from_secs(5);

/// Whether this process measures `plan`, with its own perf counters and
/// drift sentinels (false: a remote system's agent measures all of it).
pub(super) fn measured_here(plan: &Plan) -> bool {
    plan.remote.is_none()
}

/// A remote plan's configurations run on the remote system, their set-ups
/// and tear-downs by its agent: none may name a guest of its own.
pub fn check_remote_configs(configs: &[Config]) -> Result<()> {
    match configs.iter().find(|c| c.guest.is_some()) {
        Some(c) => Err(Error::Usage(format!(
            "configuration '{}' names a guest, but a fleet host runs every configuration \
             itself (its set-up and tear-down by the host's agent); drop its guest (or `in`), \
             or run it with `osbench run` on that host",
            c.name
        ))),
        None => Ok(()),
    }
}

/// Where one configuration runs.
pub(super) enum Place<'g> {
    /// On this system: set-up and tear-down by `sh`, cases by this harness.
    Here,
    /// In a started guest (or the remote system), through its agent.
    Guest(&'g mut Guest),
}

/// A configuration's set-up that has run. Here, it holds the guard whose
/// drop runs the tear-down (an error or a panic in between tears it down
/// too); in a guest, [`Place::tear_down`] sends the tear-down.
pub(super) struct Applied<'c> {
    config: &'c Config,
    here: Option<config::Applied<'c>>,
}

impl Place<'_> {
    /// Runs `config`'s set-up, stopped by `stop` (`who` names the guest in
    /// its errors). A set-up that fails (or is stopped) is torn down too,
    /// and is the error.
    pub(super) fn apply<'c>(
        &mut self,
        config: &'c Config,
        who: &str,
        stop: &Interrupt,
    ) -> Result<Applied<'c>> {
        let Place::Guest(guest) = self else {
            let here = Some(config::Applied::apply(config, stop)?);
            return Ok(Applied { config, here });
        };
        guest.set_who(who);
        let applied = Applied { config, here: None };
        if let Some(setup) = &config.setup {
            let what = format!("the set-up of configuration '{}'", config.name);
            if let Err(e) = guest.sh(&what, setup, &config.env, stop) {
                // The set-up's failure is the error; the tear-down's would hide it.
                let _ = self.tear_down(applied);
                return Err(e);
            }
        }
        Ok(applied)
    }

    /// Runs the tear-down of what [`Place::apply`] applied. In a guest,
    /// only if the guest can take it: after an interrupt, once the request
    /// it was busy with has ended (within [`SETTLE`]); a guest that has
    /// ended or does not finish in time is killed with whatever it had
    /// applied. Not stopped by an interrupt: it is what undoes the set-up.
    pub(super) fn tear_down(&mut self, applied: Applied<'_>) -> Result<()> {
        let config = applied.config;
        let guest = match (self, applied.here) {
            (_, Some(here)) => return here.finish(),
            (Place::Here, None) => return Ok(()),
            (Place::Guest(guest), None) => guest,
        };
        let Some(teardown) = &config.teardown else {
            return Ok(());
        };
        let what = format!("the tear-down of configuration '{}'", config.name);
        if !guest.settle(SETTLE) {
            return Ok(());
        }
        guest.sh(&what, teardown, &config.env, &Interrupt::none())
    }

    /// Measures `case` (its configuration applied), placed by `pin`, with
    /// `loads` beside it (in a guest: started by the guest's osbench).
    pub(super) fn measure<C: Clock>(
        &mut self,
        case: &Case,
        (pin, loads): (Option<Pin>, &[LoadSpec]),
        plan: &Plan,
        harness: &Harness<C>,
    ) -> Result<(Series, CaseEnd)> {
        match self {
            Place::Here => case::run_case(case, pin, harness, loads),
            Place::Guest(guest) => {
                // Perf is counted once, after the rounds ([`Place::count`]).
                let mut request = request(case, pin, false, plan);
                request.loads = loads.to_vec();
                let mut series = send(guest, case, request, plan, harness.interrupt())?;
                unloaded_in_guest(&mut series, loads);
                Ok((series, CaseEnd::Done))
            }
        }
    }

    /// Counts `case`'s perf events (its configuration applied) into
    /// `series`: here, by a counting pass of its own ([`case::count_case`]);
    /// in a guest, by measuring it once more with perf on and taking the
    /// guest's counters.
    pub(super) fn count<C: Clock>(
        &mut self,
        (case, pin): (&Case, Option<Pin>),
        plan: &Plan,
        harness: &Harness<C>,
        series: &mut Series,
    ) -> Result<()> {
        match self {
            Place::Here => {
                let counted = case::count_case(case, pin, harness)?;
                let ops = series.ops_per_iter;
                series_meters::attach_perf(series, harness.meters(), ops, &counted);
            }
            Place::Guest(guest) => {
                let in_guest = ask(guest, case, pin, true, plan, harness.interrupt())?;
                series_meters::take_perf(series, &in_guest);
            }
        }
        Ok(())
    }

    /// One profiling pass of `case` (its configuration applied) for about
    /// `length`: here, by a pass of its own ([`profiling::profile_case`]);
    /// in a guest, by its agent after a short measurement the run does not keep.
    pub(super) fn profile<C: Clock>(
        &mut self,
        (case, pin): (&Case, Option<Pin>),
        plan: &Plan,
        harness: &Harness<C>,
        length: Duration,
    ) -> Result<ProfileOutcome> {
        match self {
            Place::Here => profiling::profile_case(case, pin, harness, length),
            Place::Guest(guest) => {
                let request = RunRequest {
                    selector: case.selector(),
                    policy: PROFILE_REQUEST_POLICY,
                    pin,
                    perf: false,
                    profile_ns: Some(u64::try_from(length.as_nanos()).unwrap_or(u64::MAX)),
                    loads: Vec::new(),
                };
                let in_guest = send(guest, case, request, plan, harness.interrupt())?;
                Ok(in_guest.profile.unwrap_or_else(|| {
                    ProfileOutcome::Unavailable(
                        "the guest's agent sent no profile (an osbench without --profile there?)"
                            .into(),
                    )
                }))
            }
        }
    }

    /// The environment this place measures in now: captured here, or as
    /// the guest's agent reports it.
    pub(super) fn environment(&mut self, interrupt: &Interrupt) -> Result<Environment> {
        match self {
            Place::Here => Ok(crate::env::capture_from(&crate::env::probe::Sys::real())),
            Place::Guest(guest) => guest.env(interrupt),
        }
    }
}

/// Asks `guest`'s agent to measure `case` (with perf on, when `perf`).
fn ask(
    guest: &mut Guest,
    case: &Case,
    pin: Option<Pin>,
    perf: bool,
    plan: &Plan,
    interrupt: &Interrupt,
) -> Result<Series> {
    send(guest, case, request(case, pin, perf, plan), plan, interrupt)
}

/// The request that measures `case` as `plan` says, without loads.
fn request(case: &Case, pin: Option<Pin>, perf: bool, plan: &Plan) -> RunRequest {
    RunRequest {
        selector: case.selector(),
        policy: plan.policy,
        pin,
        perf,
        profile_ns: None,
        loads: Vec::new(),
    }
}

/// A guest's osbench that reports no run of the loads it was asked for
/// (an older one, which drops the request's `loads`): the case is flagged
/// as measured without them.
fn unloaded_in_guest(series: &mut Series, loads: &[LoadSpec]) {
    if !loads.is_empty() && series.loads.is_empty() {
        series.noise.push(crate::document::NoiseFlag::LoadFailed);
        series.warnings.push(
            "the guest's osbench ran no load (an osbench without --load there?); the case was \
             measured without it: update the guest's osbench"
                .into(),
        );
    }
}

/// The measurement a guest makes before a profiling pass, only to set the
/// case up as a run would: one short sample, no warm-up.
const PROFILE_REQUEST_POLICY: Policy = Policy {
    samples: 1,
    sample_time_ns: 1_000_000,
    warmup_ns: 0,
};

/// Sends `request` (for `case`) to `guest`'s agent; its series.
fn send(
    guest: &mut Guest,
    case: &Case,
    request: RunRequest,
    plan: &Plan,
    interrupt: &Interrupt,
) -> Result<Series> {
    let asked = (case.def.name, case.name());
    guest.run(request, (asked.0, &asked.1), guest_timeout(plan), interrupt)
}

/// How long a guest may take for one case: guests can be hundreds of times
/// slower than the host (UML's system calls).
fn guest_timeout(plan: &Plan) -> Duration {
    Duration::from_secs(600).max(plan.expected_per_case() * 200)
}

/// Every configuration's place, resolved once from the plan, and the guests
/// started for them.
pub(super) struct Places {
    /// The name of the system that runs the whole plan in place of this one
    /// (`Plan::remote`), whose environment is the run's.
    remote: Option<String>,
    /// Each configuration's guest to start (its spec, and the name of the
    /// guest it shares), or none: it runs here.
    wanted: Vec<Option<(GuestSpec, Option<String>)>>,
    /// The started guests (one per configuration that runs in a guest of
    /// its own, one per shared guest), until they are shut down.
    guests: Vec<Guest>,
    /// Which of `guests` each configuration runs in.
    of: Vec<Option<usize>>,
    /// The configurations' knobs, by place: here (`None`) or a guest of `guests`.
    knobs: Vec<(Option<usize>, Knobs)>,
}

impl Places {
    /// Each of `configs`' places: its guest, or here; on a remote plan, every
    /// one in that system's guest (one session, shared), so each set-up and
    /// tear-down runs there, by its agent.
    pub(super) fn new(plan: &Plan, configs: &[Config]) -> Self {
        let wanted = configs
            .iter()
            .map(|config| match &plan.remote {
                Some(remote) => Some((remote.guest.clone(), Some(remote.name.clone()))),
                None => config.guest.clone().map(|g| (g, config.in_guest.clone())),
            })
            .collect();
        Self {
            remote: plan.remote.as_ref().map(|r| r.name.clone()),
            wanted,
            guests: Vec::new(),
            of: vec![None; configs.len()],
            knobs: Vec::new(),
        }
    }

    /// Where configuration `ci` runs.
    pub(super) fn of(&mut self, ci: usize) -> Place<'_> {
        match self.of[ci] {
            Some(gi) => Place::Guest(&mut self.guests[gi]),
            None => Place::Here,
        }
    }

    /// For each case of `plan`, why some configuration's place cannot run it
    /// (its kernel lacks what the case needs): "BENCH CASE: why", with the
    /// configuration named when it runs elsewhere (a guest, a remote host);
    /// `None` for a case every place can run.
    pub(super) fn unavailable(
        &mut self,
        plan: &Plan,
        configs: &[Config],
        interrupt: &Interrupt,
    ) -> Result<Vec<Option<String>>> {
        let mut why: Vec<Option<String>> = vec![None; plan.cases.len()];
        for (ci, config) in configs.iter().enumerate() {
            let cases: Vec<Case> = (plan.cases.iter())
                .map(|c| with_overrides(c, config))
                .collect();
            let here = self.of[ci].is_none() && self.remote.is_none();
            let found = match self.of(ci) {
                Place::Here => cases
                    .into_iter()
                    .map(|c| split_unavailable(vec![c]).1.into_iter().next())
                    .collect(),
                Place::Guest(guest) => {
                    guest.unavailable(cases.iter().map(Case::selector).collect(), interrupt)?
                }
            };
            for (slot, reason) in found.into_iter().enumerate() {
                if let (None, Some(reason)) = (&why[slot], reason) {
                    why[slot] = Some(if here {
                        reason
                    } else {
                        format!("{reason} (where {} runs)", self.who(config))
                    });
                }
            }
        }
        Ok(why)
    }

    /// The environment configuration `ci`'s place reported when it started
    /// (a guest's); none here, where nothing was started.
    pub(super) fn reported_env(&self, ci: usize) -> Option<&Environment> {
        self.of[ci].map(|gi| &self.guests[gi].info().env)
    }

    /// Privileges and devices, checked for every case under every
    /// configuration (its parameters may differ) before anything is
    /// measured; a remote system's agent checks its cases itself.
    pub(super) fn check(&self, plan: &Plan, configs: &[Config]) -> Result<()> {
        if self.remote.is_some() {
            return check_remote_configs(&plan.configs);
        }
        super::observe::check(configs)?;
        configs
            .iter()
            .flat_map(|config| plan.cases.iter().map(move |c| with_overrides(c, config)))
            .try_for_each(|c| (c.def.check)(&c.params))
    }

    /// Starts every configuration's guest, once, before the first round: a
    /// guest of its own, or the one it shares (`in`), booted for the first
    /// configuration that names it. Returns warnings: boot parameters
    /// nothing recognised, with `allow_unknown_boot_parameters` (else an error).
    pub(super) fn start(
        &mut self,
        plan: &Plan,
        configs: &[Config],
        interrupt: &Interrupt,
    ) -> Result<Vec<String>> {
        let mut shared: Vec<(String, usize)> = Vec::new();
        let mut warnings = Vec::new();
        for (ci, config) in configs.iter().enumerate() {
            let Some((spec, name)) = self.wanted[ci].clone() else {
                continue;
            };
            if let Some(&(_, gi)) = shared.iter().find(|(n, _)| Some(n) == name.as_ref()) {
                self.of[ci] = Some(gi);
                self.guests[gi].add_config(&config.name);
                continue;
            }
            let label = name.clone().unwrap_or_else(|| config.name.clone());
            let who = match &name {
                Some(name) if self.remote.is_none() => format!("guest '{name}'"),
                _ => self.who(config),
            };
            let mut guest = Guest::start(&label, &who, &spec, plan.logs, interrupt)?;
            if let Some(name) = name {
                shared.push((name, self.guests.len()));
                guest.add_config(&config.name);
            }
            let unknown = guest.unrecognised_parameters();
            if !unknown.is_empty() {
                let allowed = plan.allow_unknown_boot_parameters;
                let message = unrecognised(&unknown, allowed);
                if !allowed {
                    return Err(Error::Guest { who, message });
                }
                warnings.push(format!("{who}: {message}"));
            }
            self.of[ci] = Some(self.guests.len());
            self.guests.push(guest);
        }
        Ok(warnings)
    }

    /// How errors and findings name `config`'s place.
    pub(super) fn who(&self, config: &Config) -> String {
        match &self.remote {
            Some(remote) => format!("host '{remote}'"),
            None => format!("configuration '{}'", config.name),
        }
    }

    /// The run's host: the remote system's name, or none (this one).
    pub(super) fn host(&self) -> Option<String> {
        self.remote.clone()
    }

    /// The environment of the run: a remote system's once it answered
    /// (it replaces `env`), else `env`, captured here.
    pub(super) fn run_env(&self, env: &mut Environment) {
        if let (Some(_), Some(guest)) = (&self.remote, self.guests.first()) {
            *env = guest.info().env.clone();
        }
    }

    /// Whether the run's environment can be audited, given whether the
    /// places got `ready`: a remote system that never answered has no
    /// environment here (the local one is not its).
    pub(super) fn auditable(&self, ready: bool) -> bool {
        self.remote.is_none() || ready
    }

    /// The audit's findings for guests that run emulated.
    pub(super) fn emulated_guests(&self, configs: &[Config]) -> Vec<String> {
        let started = configs.iter().zip(&self.of);
        let mut findings: Vec<String> = started
            .filter_map(|(config, gi)| {
                let env = &self.guests[(*gi)?].info().env;
                crate::env::audit::emulated_guest(&self.who(config), env)
            })
            .collect();
        findings.dedup(); // a remote system's configurations share its one finding
        findings
    }

    /// Reads the load at the end of the run: here, or on the remote system
    /// (if it still answers; else the end stays unrecorded).
    pub(super) fn record_end(&mut self, env: &mut Environment) {
        if self.remote.is_none() {
            return crate::env::record_end(env);
        }
        let interrupt = Interrupt::none();
        let end = self.guests.first_mut().and_then(|g| g.env(&interrupt).ok());
        if let (Some(load), Some(end)) = (env.load.as_mut(), end.and_then(|e| e.load)) {
            load.end = Some(end.start);
        }
    }

    /// Ends every guest — asked to shut down when `gracefully`, killed if
    /// it does not go or otherwise — and returns what the document records
    /// of them (nothing of a remote system: its environment is the run's).
    pub(super) fn shut_down(&mut self, gracefully: bool) -> Vec<GuestInfo> {
        let mut infos = Vec::new();
        for guest in std::mem::take(&mut self.guests) {
            if self.remote.is_none() {
                infos.push(guest.info().clone());
            }
            if gracefully {
                guest.shutdown();
            } // else dropped: its process group is killed and reaped
        }
        infos
    }
}

impl Places {
    /// Reads and checks every configuration's knobs in its place, before
    /// anything is measured (and before anything is written: a value a file
    /// refuses stops the run here, leaving every file as it was).
    pub(super) fn prepare_knobs(&mut self, configs: &[Config]) -> Result<()> {
        let mut places: Vec<Option<usize>> = self.of.clone();
        places.sort_unstable();
        places.dedup();
        for place in places {
            let members: Vec<(usize, &Config)> = (configs.iter().enumerate())
                .filter(|(ci, c)| self.of[*ci] == place && !c.knobs.is_empty())
                .collect();
            let Some(&(_, first)) = members.first() else {
                continue;
            };
            let resolved = match place {
                None => Knobs::resolve(&members, &mut LocalFs, None),
                Some(gi) => {
                    let who = match (&self.remote, &first.in_guest) {
                        (None, Some(name)) => format!("guest '{name}'"),
                        _ => self.who(first),
                    };
                    let fs = &mut GuestFs(&mut self.guests[gi]);
                    Knobs::resolve(&members, fs, Some(who))
                }
            };
            match resolved {
                Ok(knobs) => self.knobs.push((place, knobs)),
                Err(e) => {
                    let _ = self.restore_knobs(); // forgets the holds; nothing was written
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Gives the knobs of configuration `ci`'s place its values (the values
    /// found for the knobs it does not set).
    pub(super) fn set_knobs(&mut self, ci: usize) -> Result<()> {
        let place = self.of[ci];
        let Some((_, knobs)) = self.knobs.iter_mut().find(|(p, _)| *p == place) else {
            return Ok(());
        };
        match place {
            None => knobs.apply(ci, &mut LocalFs),
            Some(gi) => knobs.apply(ci, &mut GuestFs(&mut self.guests[gi])),
        }
    }

    /// Writes back every value found, in every place (a guest that does not
    /// take requests within [`SETTLE`] keeps its values: it is ended next);
    /// what the document records of the knobs, and the first failure.
    pub(super) fn restore_knobs(&mut self) -> (Vec<KnobRecord>, Result<()>) {
        let mut first = Ok(());
        let mut records = Vec::new();
        for (place, knobs) in &mut self.knobs {
            let restored = match *place {
                None => knobs.restore(&mut LocalFs),
                Some(gi) if self.guests[gi].settle(SETTLE) => {
                    knobs.restore(&mut GuestFs(&mut self.guests[gi]))
                }
                Some(_) => Ok(()),
            };
            if let (Err(e), true) = (restored, first.is_ok()) {
                first = Err(e);
            }
            records.extend(knobs.records());
        }
        (records, first)
    }
}

/// A guest's files, through its agent's shell.
struct GuestFs<'g>(&'g mut Guest);

impl GuestFs<'_> {
    fn sh(&mut self, what: &str, command: &str) -> std::result::Result<String, String> {
        let env = std::collections::BTreeMap::new();
        (self.0.sh_output(what, command, &env, &Interrupt::none())).map_err(|e| e.to_string())
    }
}

/// `s` quoted for `sh`.
fn quoted(s: &str) -> String {
    crate::text::shell_word(s).into_owned()
}

impl KnobFs for GuestFs<'_> {
    fn read(&mut self, path: &str) -> std::result::Result<String, String> {
        self.sh("a knob's read", &format!("cat -- {}", quoted(path)))
    }

    fn expand(&mut self, pattern: &str) -> std::result::Result<Vec<String>, String> {
        if !pattern.contains('*') {
            return Ok(vec![pattern.to_string()]); // read next, which says what is wrong
        }
        let glob: Vec<String> = pattern.split('*').map(quoted).collect();
        let command = format!(
            "for f in {}; do [ -e \"$f\" ] && printf '%s\\n' \"$f\"; done; true",
            glob.join("*")
        );
        let listed = self.sh("a knob's listing", &command)?;
        Ok(listed.lines().map(String::from).collect())
    }

    fn write(&mut self, path: &str, value: &str) -> std::result::Result<(), String> {
        let command = format!("printf '%s\\n' {} > {}", quoted(value), quoted(path));
        self.sh("a knob's write", &command).map(drop)
    }

    fn hold(&mut self, path: &str, value: &str) -> Option<u32> {
        let id = super::knob::next_hold_id();
        self.0.hold(id, path, value).then_some(id)
    }

    fn forget(&mut self, id: u32) {
        self.0.forget(id);
    }

    fn check_writable(&mut self, path: &str) -> std::result::Result<(), String> {
        let command = format!(
            "[ -w {0} ] || {{ echo {0} is not writable; exit 1; }}",
            quoted(path)
        );
        self.sh("a knob's check", &command).map(drop)
    }
}

/// Why a guest's unrecognised boot parameters stop the run (or, `allowed`, do not).
fn unrecognised(words: &[String], allowed: bool) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let what = if allowed {
        "ran anyway (--allow-unknown-boot-parameters)"
    } else {
        "check the spelling, or pass --allow-unknown-boot-parameters to run anyway"
    };
    format!(
        "no part of the guest's kernel recognised the boot parameter{} {}: {} reached its \
         init as an argument or environment variable, as words that no kernel option names \
         do; {what}",
        if words.len() == 1 { "" } else { "s" },
        quoted.join(", "),
        if words.len() == 1 { "it" } else { "they" },
    )
}

//! Running a plan: every selected case, in a seeded random order, each placed,
//! set up, measured by the harness and torn down, into one [`Document`].
//!
//! The order is shuffled so that slow drift of the machine (the baseline saw
//! minutes-long fast/slow phases) does not always favour the same case; the
//! seed is recorded so the order can be reproduced. A failure or an interrupt
//! stops the run but keeps every case already completed (and the samples of an
//! interrupted one). With configurations, the run is organised in rounds:
//! each round applies every configuration once (set-up, every case, tear-down)
//! in a fresh seeded order, so drift between rounds affects all alike.

pub mod config;
pub mod file;
mod meters;
pub mod time;

use crate::bench::select::Case;
use crate::bench::{self, BenchDef, Params, StandIn};
use crate::document::{
    DEFAULT_CONFIG, Document, ReferenceSeries, RunInfo, Series, SeriesKind, Tool, utc_now,
};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::placement::{Pin, Placement, pin_current_thread};
use crate::measure::{
    Clock, Events, Harness, Interrupt, Measured, Measurement, Meters, Overhead, Policy, RawSample,
    Sampling, Workload,
};
use crate::stats::{SplitMix64, bimodal, histogram, summarize};
use config::Applied;
pub use config::Config;

/// Above this coefficient of variation a series is flagged "high-cv".
pub const NOISY_CV: f64 = 0.10;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub seed: u64,
    /// `--pin`; `None` pins one-task benchmarks to one CPU and leaves the rest alone.
    pub pin: Option<Pin>,
    /// Configurations to compare; empty means one implicit "default" configuration.
    pub configs: Vec<Config>,
    /// Rounds; each runs every configuration once per case, in a fresh random order.
    /// With `target_ci`, the most rounds to run.
    pub rounds: usize,
    /// Stop adding rounds once every paired ratio's 95 % interval is narrower
    /// than ± this fraction (at least 3 rounds), or at `max_time`.
    pub target_ci: Option<f64>,
    pub max_time: Option<std::time::Duration>,
    /// How much to measure per case.
    pub policy: Policy,
    /// Count perf events in a short pass after each case's timed samples
    /// (false: `--no-perf`; rusage is read either way).
    pub perf: bool,
}

impl Plan {
    /// How many cases the run measures: every case once, or once per
    /// configuration and round.
    pub fn steps(&self) -> usize {
        match self.configs.len() {
            0 => self.cases.len(),
            n => self.cases.len() * n * self.rounds,
        }
    }

    /// The run's length if every case took its warm-up and samples' target time.
    pub fn expected_duration(&self) -> std::time::Duration {
        let p = &self.policy;
        let per_case = p.warmup_ns + p.samples as u64 * p.sample_time_ns;
        std::time::Duration::from_nanos(per_case.saturating_mul(self.steps() as u64))
    }
}

/// Whether every paired ratio's 95 % interval is narrower than ± `target` (a fraction).
fn precision_reached(done: &[((usize, usize), Series)], configs: usize, target: f64) -> bool {
    // Every candidate configuration's per-round medians against the baseline's, case by case.
    let slots: Vec<usize> = done
        .iter()
        .filter(|((c, _), _)| *c == 0)
        .map(|((_, i), _)| *i)
        .collect();
    slots.iter().all(|&slot| {
        let rounds_of = |c: usize| {
            done.iter()
                .find(|(k, _)| *k == (c, slot))
                .map(|(_, s)| &s.rounds)
        };
        let Some(base) = rounds_of(0) else {
            return false;
        };
        (1..configs).all(|c| match rounds_of(c) {
            Some(cand) if base.len().min(cand.len()) >= 3 => {
                let n = base
                    .len()
                    .min(cand.len())
                    .min(crate::stats::compare::MAX_ROUNDS);
                let (r, _) = crate::stats::compare::paired_log_ratio(&base[..n], &cand[..n]);
                r.relative_half_width() < target
            }
            _ => false,
        })
    })
}

/// Receives progress; the CLI prints it, tests ignore it.
pub trait Observer {
    fn case_started(&mut self, _index: usize, _total: usize, _case: &Case) {}
    fn case_finished(&mut self, _series: &Series) {}
    fn case_failed(&mut self, _error: &Error) {}
    /// A noise-audit finding (before or after the run).
    fn audit(&mut self, _finding: &str) {}
}

/// Observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// The document of a run, and the error that stopped it early, if any.
#[derive(Debug)]
pub struct Outcome {
    pub document: Document,
    pub error: Option<Error>,
}

/// Runs `plan` on CLOCK_MONOTONIC, with the meters it asks for; `interrupt`
/// stops it between samples, keeping what was measured.
pub fn run(
    plan: &Plan,
    interrupt: Interrupt,
    env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    let harness = Harness::new(plan.policy, interrupt).with_meters(Meters::open(plan.perf));
    run_with(plan, &harness, env, observer)
}

/// Runs `plan` with `harness` (tests give it a fake clock).
pub fn run_with<C: Clock>(
    plan: &Plan,
    harness: &Harness<C>,
    mut env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    let started = utc_now();
    let default = [Config {
        name: DEFAULT_CONFIG.into(),
        ..Config::default()
    }];
    let (configs, rounds): (&[Config], usize) = if plan.configs.is_empty() {
        (&default, 1)
    } else {
        (&plan.configs, plan.rounds.max(1))
    };
    let mut audit = crate::env::audit::before_run(&env, runs_unpinned(plan, configs));
    audit.iter().for_each(|f| observer.audit(f));
    // With configurations: the environment after each one's first set-up, to
    // show what the set-up (the declared factor) changed.
    let mut config_envs: Vec<Environment> = Vec::new();
    let mut rng = SplitMix64::new(plan.seed);
    let total = rounds * configs.len() * plan.cases.len();
    let mut done: Vec<((usize, usize), Series)> = Vec::new();
    let (mut order, mut schedule): (Vec<String>, Vec<Vec<String>>) = (Vec::new(), Vec::new());
    // Privileges and devices are checked for every case, as every configuration
    // will run it (its parameters may differ), before anything is measured.
    let mut error = configs
        .iter()
        .flat_map(|config| plan.cases.iter().map(move |c| with_overrides(c, config)))
        .find_map(|c| (c.def.check)(&c.params).err());
    let start = std::time::Instant::now();
    let mut stopped_by = None;
    'rounds: for round in 0..rounds {
        if error.is_some() {
            break;
        }
        let reached = plan
            .target_ci
            .filter(|&t| round >= 3 && precision_reached(&done, configs.len(), t));
        if let Some(target) = reached {
            stopped_by = Some(format!(
                "every ratio's 95% interval within ±{:.2}% after {round} rounds",
                target * 100.0
            ));
            break;
        }
        if plan.max_time.is_some_and(|max| start.elapsed() >= max) && round >= 2 {
            stopped_by = Some(format!("--max-time reached after {round} rounds"));
            break;
        }
        let mut config_order: Vec<usize> = (0..configs.len()).collect();
        rng.shuffle(&mut config_order);
        schedule.push(
            config_order
                .iter()
                .map(|&c| configs[c].name.clone())
                .collect(),
        );
        for &ci in &config_order {
            let config = &configs[ci];
            let applied = match Applied::apply(config) {
                Ok(a) => a,
                Err(e) => {
                    error = Some(e);
                    break 'rounds;
                }
            };
            if round == 0 && !plan.configs.is_empty() {
                config_envs.push(crate::env::capture_from(&crate::env::probe::Sys::real()));
            }
            let mut case_order: Vec<usize> = (0..plan.cases.len()).collect();
            rng.shuffle(&mut case_order);
            for &idx in &case_order {
                let case = &with_overrides(&plan.cases[idx], config);
                order.push(if plan.configs.is_empty() {
                    format!("{} {}", case.def.name, case.name())
                } else {
                    format!(
                        "{} {}: {} {}",
                        round + 1,
                        config.name,
                        case.def.name,
                        case.name()
                    )
                });
                observer.case_started(order.len() - 1, total, case);
                let pin = config.pin.as_deref().and_then(Pin::parse).or(plan.pin);
                match run_case(case, pin, harness) {
                    Ok((mut series, interrupted)) => {
                        series.config = config.name.clone();
                        series.slot = (!plan.configs.is_empty()).then_some(idx);
                        observer.case_finished(&series);
                        merge(&mut done, (ci, idx), series);
                        if interrupted {
                            error = Some(Error::Interrupted);
                            break 'rounds; // `applied` drops: the tear-down runs
                        }
                    }
                    Err(e) => {
                        observer.case_failed(&e);
                        error = Some(e);
                        break 'rounds;
                    }
                }
            }
            if let Err(e) = applied.finish() {
                error = Some(e);
                break 'rounds;
            }
        }
    }
    crate::env::record_end(&mut env);
    for finding in crate::env::audit::after_run(&env) {
        observer.audit(&finding);
        audit.push(finding);
    }
    // Configurations in their definition order (round 0 applied them shuffled).
    let config_env_diff = match schedule.first() {
        Some(first) if config_envs.len() == configs.len() && configs.len() >= 2 => {
            let ordered: Vec<&Environment> = configs
                .iter()
                .filter_map(|c| first.iter().position(|n| *n == c.name))
                .map(|i| &config_envs[i])
                .collect();
            crate::env::diff(&ordered)
        }
        _ => Vec::new(),
    };
    done.sort_by_key(|(key, _)| *key);
    let series: Vec<Series> = done.into_iter().map(|(_, s)| s).map(resummarize).collect();

    let run = RunInfo {
        started,
        finished: utc_now(),
        seed: plan.seed,
        policy: *harness.policy(),
        order,
        complete: error.is_none(),
        stopped_because: error.as_ref().map(|e| e.to_string()),
        time: None,
        configs: plan.configs.clone(),
        stopped_by: stopped_by.or_else(|| {
            (plan.target_ci.is_some() && error.is_none()).then(|| {
                format!(
                    "all {} rounds ran without reaching the target interval",
                    schedule.len()
                )
            })
        }),
        schedule: if plan.configs.is_empty() {
            Vec::new()
        } else {
            schedule
        },
        audit,
        config_env_diff,
        label: None,
    };
    let document = Document {
        schema: crate::document::SCHEMA.to_string(),
        tool: Tool::this(),
        env,
        run,
        series,
        comparisons: Vec::new(),
    };
    Outcome { document, error }
}

/// Whether some case runs several tasks with no pinning (the scheduler places them).
fn runs_unpinned(plan: &Plan, configs: &[Config]) -> bool {
    configs.iter().any(|config| {
        let pin = config.pin.as_deref().and_then(Pin::parse).or(plan.pin);
        plan.cases.iter().any(|c| {
            let case = with_overrides(c, config);
            (case.def.tasks)(&case.params) > 1 && matches!(pin, None | Some(Pin::None))
        })
    })
}

/// The case with the configuration's parameter overrides for its benchmark
/// (validated when the plan was made).
fn with_overrides(case: &Case, config: &Config) -> Case {
    let mut case = case.clone();
    for o in config.params.iter().filter(|o| o.bench == case.def.name) {
        case.params.set(&o.key, &o.value);
    }
    case
}

/// Adds one round's series to the series of the same configuration and case.
fn merge(done: &mut Vec<((usize, usize), Series)>, key: (usize, usize), mut new: Series) {
    new.rounds = vec![new.summary.median];
    new.round_samples = vec![new.samples.len()];
    let Some((_, s)) = done.iter_mut().find(|(k, _)| *k == key) else {
        done.push((key, new));
        return;
    };
    s.rounds.push(new.summary.median);
    s.round_samples.push(new.samples.len());
    meters::merge(s, &new);
    if let (Some(a), Some(b)) = (s.cpu_per_op, new.cpu_per_op) {
        let (na, nb) = (s.samples.len() as f64, new.samples.len() as f64);
        s.cpu_per_op = Some((a * na + b * nb) / (na + nb));
    }
    s.samples.extend(new.samples);
    s.raw.extend(new.raw);
    s.rejected.extend(new.rejected);
    for flag in new.noise {
        if !s.noise.contains(&flag) {
            s.noise.push(flag);
        }
    }
    s.warnings.extend(
        new.warnings
            .into_iter()
            .map(|w| format!("round {}: {w}", s.rounds.len())),
    );
}

/// Recomputes the summary (and quantiles) of a series merged over several rounds.
fn resummarize(mut s: Series) -> Series {
    if s.rounds.len() < 2 {
        return s;
    }
    if let Some(summary) = summarize(&s.samples) {
        s.summary = summary;
    }
    meters::summarize_counters(&mut s);
    if s.kind == SeriesKind::Distribution {
        // Every event of every round is in `samples`: rebuild the distribution from them.
        let unit_ns = s.unit.ns();
        let events: Vec<u64> = s
            .samples
            .iter()
            .map(|v| (v * unit_ns).round() as u64)
            .collect();
        set_distribution(&mut s, &events, unit_ns);
    }
    s
}

/// Quantiles (in the series' unit) and histogram buckets of `events_ns`.
fn set_distribution(series: &mut Series, events_ns: &[u64], unit_ns: f64) {
    let hist = histogram::histogram(events_ns);
    series.quantiles = Some(histogram::quantiles(&hist).scaled(1.0 / unit_ns));
    series.histogram = Some(histogram::buckets(&hist));
}

/// Places, sets up, measures and tears down one case; the flag says whether
/// an interrupt cut it short.
fn run_case<C: Clock>(
    case: &Case,
    pin: Option<Pin>,
    harness: &Harness<C>,
) -> Result<(Series, bool)> {
    let def = case.def;
    let tasks = (def.tasks)(&case.params);
    let placement = match pin {
        Some(p) => Placement::new(p)?,
        None if tasks == 1 => Placement::new(Pin::Same)?,
        None => Placement::unpinned(),
    };
    let _timing_thread = placement.cpu_of(0).map(pin_current_thread).transpose()?;
    let mut workload = (def.setup)(&case.params, &placement)?;
    let stand_in_def = match &def.sampling {
        bench::Sampling::Batched { stand_in } => stand_in.as_ref(),
        _ => None,
    };
    // Dropping `workload` on an error here tears it down.
    let mut stand_in = stand_in_def.map(|s| (s.setup)(&case.params)).transpose()?;
    let how = match def.sampling {
        bench::Sampling::Batched { .. } => Sampling::Batched {
            stand_in: stand_in.as_mut().map(|w| w.as_mut() as &mut dyn Workload),
        },
        bench::Sampling::WholeRuns => Sampling::WholeRuns,
        bench::Sampling::Events(count) => Sampling::Events(count(&case.params)),
    };
    let measured = harness.sample(workload.as_mut(), how);
    // Tear down even when measuring failed; the measuring error wins.
    let torn_down = workload
        .teardown()
        .and(stand_in.map_or(Ok(()), Workload::teardown));
    let measured = measured?;
    torn_down?;
    match measured {
        Measured::Samples { case: m, stand_in } => {
            let stand_in = stand_in.zip(stand_in_def);
            sampled(case, &placement, harness.meters(), m, stand_in)
        }
        Measured::Events(e) => distribution(case, &placement, harness, e),
    }
}

/// A series of samples that each time many operations (less the stand-in's
/// median, when the family has one) or one whole run.
fn sampled(
    case: &Case,
    placement: &Placement,
    meters: &Meters,
    m: Measurement,
    stand_in: Option<(Measurement, &StandIn)>,
) -> Result<(Series, bool)> {
    let def = case.def;
    let ops_per_iter = (def.ops_per_iter)(&case.params);
    let in_unit = |m: &Measurement, ops: f64| -> Vec<f64> {
        m.per_op_ns(ops)
            .iter()
            .map(|ns| ns / def.unit.ns())
            .collect()
    };
    let stand_in = match stand_in {
        Some((sm, s)) => {
            let samples = in_unit(&sm, 1.0);
            let summary = summarize(&samples).ok_or_else(|| not_finite(def, &case.params))?;
            Some(ReferenceSeries {
                op: (s.op)(&case.params),
                samples,
                summary,
                raw: sm.accepted,
            })
        }
        None => None,
    };
    let subtract = stand_in.as_ref().map_or(0.0, |b| b.summary.median);
    let samples: Vec<f64> = in_unit(&m, ops_per_iter)
        .iter()
        .map(|v| v - subtract)
        .collect();
    let mut series = new_series(case, placement, samples)?;
    series.warnings = m.warnings;
    flag_noise(&mut series, def.unit.symbol(), m.interrupted);
    if series.samples.iter().any(|&v| v <= 0.0) {
        series.warnings.push(
            "some samples are not positive after subtracting the measured overhead; \
             the operation is too cheap for this method"
                .into(),
        );
    }
    meters::attach(
        &mut series,
        meters,
        &m.meters,
        &m.accepted,
        ops_per_iter,
        &m.perf,
    );
    series.raw = m.accepted;
    series.rejected = m.rejected;
    series.overhead = m.overhead;
    series.ops_per_iter = ops_per_iter;
    series.baseline = stand_in;
    Ok((series, m.interrupted))
}

/// A distribution of single-event latencies.
fn distribution<C: Clock>(
    case: &Case,
    placement: &Placement,
    harness: &Harness<C>,
    e: Events,
) -> Result<(Series, bool)> {
    let def = case.def;
    let unit_ns = def.unit.ns();
    let samples: Vec<f64> = e
        .latencies_ns
        .iter()
        .map(|&ns| ns as f64 / unit_ns)
        .collect();
    let mut series = new_series(case, placement, samples)?;
    series.kind = SeriesKind::Distribution;
    set_distribution(&mut series, &e.latencies_ns, unit_ns);
    series.cpu_per_op = e
        .cpu_ns
        .map(|cpu| cpu as f64 / e.latencies_ns.len() as f64 / unit_ns);
    series.overhead = harness.overhead();
    // One reading over the whole recording, divided by the events recorded.
    let whole = RawSample {
        iters: e.latencies_ns.len() as u64,
        elapsed_ns: e.wall_ns,
    };
    meters::attach(
        &mut series,
        harness.meters(),
        &[e.meters],
        &[whole],
        1.0,
        &e.perf,
    );
    if e.interrupted {
        series.noise.push("interrupted".into());
        series.warnings.push(format!(
            "interrupted after {} of {} events",
            e.latencies_ns.len(),
            e.wanted
        ));
    }
    Ok((series, e.interrupted))
}

/// A series with its identity, placement, samples and summary; the rest empty.
fn new_series(case: &Case, placement: &Placement, samples: Vec<f64>) -> Result<Series> {
    let def = case.def;
    let summary = summarize(&samples).ok_or_else(|| not_finite(def, &case.params))?;
    Ok(Series {
        bench: def.name.to_string(),
        case: case.name(),
        config: DEFAULT_CONFIG.into(),
        params: case.params.to_json(def),
        unit: def.unit,
        op: (def.op)(&case.params),
        anchor: (def.anchor)(&case.params),
        pin: placement.pin.as_str().into(),
        cpus: placement.cpus_used((def.tasks)(&case.params)),
        samples,
        summary,
        raw: Vec::new(),
        rejected: Vec::new(),
        overhead: Overhead::ZERO,
        ops_per_iter: 1.0,
        kind: SeriesKind::Samples,
        rounds: Vec::new(),
        round_samples: Vec::new(),
        slot: None,
        quantiles: None,
        histogram: None,
        cpu_per_op: None,
        baseline: None,
        noise: Vec::new(),
        warnings: Vec::new(),
        runs: Vec::new(),
        counters: Default::default(),
        counter_samples: Default::default(),
        counters_unavailable: Default::default(),
        energy: Default::default(),
        energy_unavailable: None,
        perf_pass: Vec::new(),
    })
}

/// Flags and explains spread the median hides: high CV, two clusters, an interrupt.
fn flag_noise(series: &mut Series, unit: &str, interrupted: bool) {
    if interrupted {
        series.noise.push("interrupted".to_string());
    }
    let cv = series.summary.cv;
    if cv > NOISY_CV {
        series.noise.push("high-cv".to_string());
        series.warnings.push(format!(
            "high spread between samples (CV {:.1}%); the median resists it, but re-run or take more \
             --samples before trusting small differences",
            cv * 100.0
        ));
    }
    if let Some(modes) = bimodal(&series.samples) {
        series.noise.push("bimodal".to_string());
        series.warnings.push(format!(
            "samples form two clusters: {} near {:.4} and {} near {:.4} {unit}; the machine switched modes \
             during the case (on VMs, cross-CPU wake-ups do this; try --pin same)",
            modes.low_count, modes.low, modes.high_count, modes.high
        ));
    }
}

fn not_finite(def: &BenchDef, params: &Params) -> Error {
    Error::Bench {
        bench: def.name.to_string(),
        case: (def.case_name)(params),
        message: "a sample was not a finite number".into(),
    }
}

//! Running a plan: every selected case, in a seeded random order, each set up,
//! measured by the harness and torn down, into one [`Document`].
//!
//! The order is shuffled so that slow drift of the machine (the baseline saw
//! minutes-long fast/slow phases) does not always favour the same case; the
//! seed is recorded so the order can be reproduced. A failure or an interrupt
//! stops the run but keeps every case already completed. Left out for now:
//! configurations (toggles) and interleaved rounds.

use crate::bench::select::Case;
use crate::document::{Document, RunInfo, Series, Tool, utc_now};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::placement::{allowed_cpus, pin_current_thread};
use crate::measure::{Clock, Harness};
use crate::stats::{SplitMix64, summarize};

/// Above this coefficient of variation a series is flagged as noisy.
pub const NOISY_CV: f64 = 0.05;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub seed: u64,
}

/// Receives progress; the CLI prints it, tests ignore it.
pub trait Observer {
    fn case_started(&mut self, _index: usize, _total: usize, _case: &Case) {}
    fn case_finished(&mut self, _series: &Series) {}
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

/// Runs `plan` with `harness`.
pub fn run<C: Clock>(
    plan: &Plan,
    harness: &Harness<C>,
    env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    let started = utc_now();
    let mut order: Vec<usize> = (0..plan.cases.len()).collect();
    SplitMix64::new(plan.seed).shuffle(&mut order);

    let mut done: Vec<(usize, Series)> = Vec::new();
    let mut error = None;
    for (i, &idx) in order.iter().enumerate() {
        let case = &plan.cases[idx];
        observer.case_started(i, order.len(), case);
        match run_case(case, harness) {
            Ok(series) => {
                observer.case_finished(&series);
                done.push((idx, series));
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    done.sort_by_key(|(idx, _)| *idx);

    let run = RunInfo {
        started,
        finished: utc_now(),
        seed: plan.seed,
        policy: *harness.policy(),
        order: order
            .iter()
            .map(|&i| format!("{} {}", plan.cases[i].def.name, plan.cases[i].name()))
            .collect(),
        complete: error.is_none(),
        stopped_because: error.as_ref().map(|e| e.to_string()),
    };
    let document = Document {
        schema: crate::document::SCHEMA.to_string(),
        tool: Tool::this(),
        env,
        run,
        series: done.into_iter().map(|(_, s)| s).collect(),
    };
    Outcome { document, error }
}

/// Sets up, measures and tears down one case.
fn run_case<C: Clock>(case: &Case, harness: &Harness<C>) -> Result<Series> {
    let def = case.def;
    // A lone task is pinned so the result does not depend on which CPU it lands on.
    let pin = if (def.tasks)(&case.params) == 1 {
        let cpu = *allowed_cpus()?
            .last()
            .ok_or_else(|| Error::Measure("no CPU is allowed".into()))?;
        Some(pin_current_thread(cpu)?)
    } else {
        None
    };
    let mut bench = (def.setup)(&case.params)?;
    let measured = harness.measure(bench.as_mut());
    // Tear down even when measuring failed; the measuring error wins.
    let torn_down = bench.teardown();
    let m = measured?;
    torn_down?;

    let ops_per_iter = (def.ops_per_iter)(&case.params);
    let samples: Vec<f64> = m
        .per_op_ns(ops_per_iter)
        .iter()
        .map(|ns| ns / def.unit.ns())
        .collect();
    let summary = summarize(&samples).ok_or_else(|| Error::Bench {
        bench: def.name.to_string(),
        case: case.name(),
        message: "a sample was not a finite number".into(),
    })?;
    let mut warnings = m.warnings;
    if summary.cv > NOISY_CV {
        warnings.push(format!(
            "high spread between samples (CV {:.1}%); the median resists it, but re-run or take more \
             --samples before trusting small differences",
            summary.cv * 100.0
        ));
    }
    if samples.iter().any(|&v| v <= 0.0) {
        warnings.push(
            "some samples are not positive after subtracting the loop and timer overhead; \
             the operation is too cheap for this method"
                .into(),
        );
    }
    Ok(Series {
        bench: def.name.to_string(),
        case: case.name(),
        config: "default".into(),
        params: case.params.to_json(def),
        unit: def.unit.as_str().into(),
        op: (def.op)(&case.params),
        pin: pin
            .as_ref()
            .map_or_else(|| "none".to_string(), |g| format!("cpu {}", g.cpu)),
        samples,
        summary,
        raw: m.accepted,
        rejected: m.rejected,
        overhead: m.overhead,
        ops_per_iter,
        warnings,
    })
}

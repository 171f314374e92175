//! Boot rounds (issue 30, item 3): a job that compares kernels boots each of
//! them once per round, `A B A B …` in a fresh seeded order each round, and
//! its per-boot documents (one kernel, one round each) merge into one
//! document with a configuration per kernel and its rounds numbered as `run
//! --config a --config b --rounds N` numbers them, so the paired comparison
//! of rounds ([`crate::compare::paired`]) judges it unchanged. The schedule
//! is drawn by the round loop itself ([`crate::experiment::rounds`]); the
//! series are merged by the run's own code ([`crate::experiment::merge_rounds`]).
//!
//! A boot may run a `time` plan (whole commands) as well as a `run` plan:
//! its commands are cases like any other, the merged document keeps the
//! first boot's `time` settings, and each kernel's floor of starting a
//! process is said in the audit (a document has one floor, and each kernel
//! has its own).
//!
//! Left out: several configurations inside one boot (a boot document has at
//! most one) and warm-up boots. Rounds stay paired: a round some kernel did
//! not finish is left out whole, and so is a case from a round in which some
//! kernel lacks it, each said in the document's audit.

use serde::{Deserialize, Serialize};

use super::boot::KernelRequirement;
use crate::document::{Config, Document, RunInfo, Series, TimeInfo};
use crate::error::{Error, Result};
use crate::experiment::rounds::{self, Observer, RoundBody, Silent, StopRule};
use crate::measure::Clock;
use crate::rng::SplitMix64;
use crate::stats::paired::MOST_ROUNDS;

/// A job's `[boot_rounds]` table: kernels compared over rounds of boots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootRounds {
    /// Rounds; each boots every kernel once.
    pub rounds: usize,
    /// The kernels (`[[boot_rounds.kernel]]`), the first the baseline.
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelRequirement>,
    /// After the last boot, boot back into the host's default kernel.
    #[serde(default)]
    pub boot_back: bool,
}

impl BootRounds {
    /// The kernels' names: their configurations in the merged document.
    pub fn names(&self) -> Vec<String> {
        self.kernels.iter().map(KernelRequirement::label).collect()
    }

    /// Checks the table on this host (every kernel as [`KernelRequirement::validate`] does).
    pub fn validate(&self) -> Result<()> {
        if self.kernels.len() < 2 {
            return Err(Error::Boot(
                "boot rounds compare two kernels or more ([[boot_rounds.kernel]] tables); one \
                 kernel is a [kernel] table"
                    .into(),
            ));
        }
        if !(2..=MOST_ROUNDS).contains(&self.rounds) {
            return Err(Error::Boot(format!(
                "boot rounds: rounds = {}; the paired comparison needs from 2 to {MOST_ROUNDS} \
                 (10 or more for a p-value below 0.01)",
                self.rounds
            )));
        }
        let names = self.names();
        for (i, (name, kernel)) in names.iter().zip(&self.kernels).enumerate() {
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(Error::Boot(format!(
                    "boot rounds: '{name}' is not a kernel's name (non-empty, no spaces)"
                )));
            }
            if names[..i].contains(name) {
                return Err(Error::Boot(format!(
                    "boot rounds: two kernels are called '{name}'; give each a `name`"
                )));
            }
            if kernel.boot_back {
                return Err(Error::Boot(format!(
                    "boot rounds: boot_back belongs to [boot_rounds] (after the last boot), not \
                     to kernel '{name}'"
                )));
            }
            kernel
                .validate()
                .map_err(|e| Error::Boot(format!("boot rounds, kernel '{name}': {e}")))?;
        }
        Ok(())
    }

    /// The boots to make, in order ([`boot_rounds`]).
    pub fn schedule(&self, seed: u64) -> Vec<(usize, usize)> {
        boot_rounds(&self.kernels, self.rounds, seed)
    }
}

/// The boots of `rounds` rounds of `kernels`, in order, as (round, kernel
/// index): each round boots every kernel once, in the order the round loop
/// draws from `seed` for a run's configurations (no warm-up rounds).
pub fn boot_rounds<T>(kernels: &[T], rounds: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut body = Schedule {
        kernels: kernels.len(),
        boots: Vec::new(),
    };
    let rule = StopRule {
        warmup: 0,
        planned: rounds,
        target_ci: None,
        first_look: 3,
        max_time: None,
        detect: None,
    };
    let out = rounds::run(&mut body, &rule, seed, &Still, &mut Silent);
    debug_assert!(out.error.is_none());
    body.boots
}

/// The seed of the run inside boot number `step` of a schedule (its case
/// order): a fresh one each boot, as each round of a run shuffles its cases
/// afresh, reproducible from the job's `seed`.
pub fn boot_seed(seed: u64, step: usize) -> u64 {
    let mut rng = SplitMix64::new(seed);
    (0..step).for_each(|_| {
        rng.next_u64();
    });
    rng.next_u64()
}

/// The round loop's body for [`boot_rounds`]: records the order, runs nothing.
struct Schedule {
    kernels: usize,
    boots: Vec<(usize, usize)>,
}

impl RoundBody for Schedule {
    fn members(&self) -> Vec<String> {
        (0..self.kernels).map(|k| k.to_string()).collect()
    }

    fn run_round(
        &mut self,
        round: usize,
        order: &[usize],
        _warm: bool,
        _rng: &mut SplitMix64,
        _observer: &mut dyn Observer,
    ) -> Result<()> {
        self.boots.extend(order.iter().map(|&k| (round, k)));
        Ok(())
    }

    fn precision(&self) -> Option<f64> {
        None
    }
}

/// A clock that never moves: the schedule has no time limit.
struct Still;
impl Clock for Still {
    fn now_ns(&self) -> u64 {
        0
    }
}

/// One boot's document: which round it was and which kernel (an index into the names).
#[derive(Debug, Clone)]
pub struct BootRun {
    pub round: usize,
    pub kernel: usize,
    pub document: Document,
}

/// Merges the documents of a boot-rounds job, `boots` in the order they
/// were made, into one document with a configuration per kernel (`names`,
/// the first the baseline) and the job's `seed`: the series merged round
/// by round as a run merges them, `run.schedule` each round's kernel order,
/// `run.config_env_diff` what differs between the kernels' environments
/// (their first boots'), the environment the baseline's first boot's. No
/// comparison is attached ([`crate::compare::paired`] makes it).
pub fn merge(names: &[String], boots: Vec<BootRun>, seed: u64) -> Result<Document> {
    check(names, &boots)?;
    let (complete, incomplete) = complete_rounds(names, &boots);
    if complete.is_empty() {
        return Err(Error::Boot(format!(
            "no round has a boot of every kernel ({}): nothing can be paired",
            names.join(", ")
        )));
    }
    let mut boots = boots;
    boots.sort_by_key(|b| b.round); // stable: each round's boots stay in boot order
    let rounds: Vec<Vec<&BootRun>> = complete
        .iter()
        .map(|&r| boots.iter().filter(|b| b.round == r).collect())
        .collect();
    let mut audit = Vec::new();
    let series = merged_series(names, &rounds, &mut audit);
    let mut stopped = incomplete
        .iter()
        .map(|r| {
            format!(
                "boot round {} left out: not every kernel finished it, and rounds must stay paired",
                r + 1
            )
        })
        .collect::<Vec<_>>();
    let run = run_info(names, &rounds, seed, &mut stopped, audit);
    let first = rounds[0]
        .iter()
        .find(|b| b.kernel == 0)
        .expect("a complete round");
    Ok(Document::new(first.document.env.clone(), run, series))
}

/// Refuses boots that cannot be merged: fewer than two names, an unknown
/// kernel, a boot made twice, a document of several configurations, boots
/// of other hosts or other policies.
fn check(names: &[String], boots: &[BootRun]) -> Result<()> {
    let refuse = |why: String| Err(Error::Boot(format!("cannot merge the boot rounds: {why}")));
    if names.len() < 2 {
        return refuse("boot rounds compare two kernels or more".into());
    }
    let Some(first) = boots.first() else {
        return refuse("there is no boot document".into());
    };
    for (i, b) in boots.iter().enumerate() {
        let what = format!("the boot of round {} kernel {}", b.round + 1, b.kernel);
        if b.kernel >= names.len() {
            return refuse(format!("{what}: there are {} kernels", names.len()));
        }
        if boots[..i]
            .iter()
            .any(|o| (o.round, o.kernel) == (b.round, b.kernel))
        {
            return refuse(format!("{what} is given twice"));
        }
        let run = &b.document.run;
        let configs: Vec<&str> = b
            .document
            .series
            .iter()
            .map(|s| s.key.config.as_str())
            .collect();
        if run.configs.len() > 1 || configs.iter().any(|c| *c != configs[0]) {
            return refuse(format!(
                "{what} has several configurations; a boot runs one"
            ));
        }
        if b.document.host() != first.document.host() {
            return refuse(format!(
                "{what} ran on host '{}', the first on '{}'; one job runs on one host",
                b.document.host(),
                first.document.host()
            ));
        }
        if run.time.is_some() != first.document.run.time.is_some() {
            return refuse(format!(
                "{what} is a run of `{}` and the first of `{}`; one job runs one plan",
                if run.time.is_some() { "time" } else { "run" },
                if run.time.is_some() { "run" } else { "time" },
            ));
        }
        if run.policy != first.document.run.policy {
            return refuse(format!(
                "{what} was measured with another policy (samples, sample time, warm-up) than \
                 the first"
            ));
        }
    }
    Ok(())
}

/// The rounds (their numbers, ascending) every kernel has a boot of, and the others.
fn complete_rounds(names: &[String], boots: &[BootRun]) -> (Vec<usize>, Vec<usize>) {
    let mut rounds: Vec<usize> = boots.iter().map(|b| b.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds.into_iter().partition(|&r| {
        (0..names.len()).all(|k| boots.iter().any(|b| (b.round, b.kernel) == (r, k)))
    })
}

/// The series of `rounds` (each one round's boots, in boot order), merged:
/// each kernel's series of a case get its name and the case's slot (in the
/// order cases first appear); a case some boot of a round lacks is left out
/// of that round for every kernel, said in `audit`.
fn merged_series(
    names: &[String],
    rounds: &[Vec<&BootRun>],
    audit: &mut Vec<String>,
) -> Vec<Series> {
    let case = |s: &Series| (s.key.bench.clone(), s.key.case.clone());
    let mut slots: Vec<(String, String)> = Vec::new();
    for s in rounds.iter().flatten().flat_map(|b| &b.document.series) {
        if !slots.contains(&case(s)) {
            slots.push(case(s));
        }
    }
    let mut measured = Vec::new();
    for (r, boots) in rounds.iter().enumerate() {
        for (slot, key) in slots.iter().enumerate() {
            let found: Vec<Option<&Series>> = boots
                .iter()
                .map(|b| b.document.series.iter().find(|s| case(s) == *key))
                .collect();
            let lacking: Vec<&str> = boots
                .iter()
                .zip(&found)
                .filter(|(_, s)| s.is_none())
                .map(|(b, _)| names[b.kernel].as_str())
                .collect();
            if !lacking.is_empty() {
                if lacking.len() < boots.len() {
                    audit.push(format!(
                        "round {}: {} {} was not measured on {}; that round of it is left out \
                         for every kernel, so that its rounds stay paired",
                        r + 1,
                        key.0,
                        key.1,
                        lacking.join(", ")
                    ));
                }
                continue;
            }
            for (b, s) in boots.iter().zip(found) {
                let mut s = s.expect("every boot has it").clone();
                s.key.config = names[b.kernel].clone();
                s.slot = Some(slot);
                measured.push(((b.kernel, slot), s));
            }
        }
    }
    crate::experiment::merge_rounds(measured)
}

/// The merged run's record: times, order and schedule from the boots,
/// their audits (each finding once, with the boots that had it), what
/// stopped any of them (added to `stopped`).
fn run_info(
    names: &[String],
    rounds: &[Vec<&BootRun>],
    seed: u64,
    stopped: &mut Vec<String>,
    mut audit: Vec<String>,
) -> RunInfo {
    let boots: Vec<(usize, &BootRun)> = rounds
        .iter()
        .enumerate()
        .flat_map(|(r, boots)| boots.iter().map(move |b| (r, *b)))
        .collect();
    for &(r, b) in &boots {
        if let Some(why) = &b.document.run.stopped_because {
            stopped.push(format!("{}: {why}", boot_label(names, r, b)));
        }
    }
    audit.extend(boot_findings(names, &boots));
    audit.extend(time_floors(names, &boots));
    let docs = || boots.iter().map(|(_, b)| &b.document);
    let first_env = |k: usize| {
        let first = boots.iter().find(|(_, b)| b.kernel == k);
        &first
            .expect("every kernel in a complete round")
            .1
            .document
            .env
    };
    let envs: Vec<&crate::env::Environment> = (0..names.len()).map(first_env).collect();
    let first = &boots[0].1.document.run;
    let waited: Vec<f64> = docs().filter_map(|d| d.run.perf_hooks_wait_ms).collect();
    let started = docs()
        .map(|d| d.run.started.clone())
        .min()
        .unwrap_or_default();
    let mut run = RunInfo::new(started, seed, first.policy);
    run.finished = docs()
        .map(|d| d.run.finished.clone())
        .max()
        .unwrap_or_default();
    run.order = merged_order(names, &boots);
    run.complete = stopped.is_empty() && docs().all(|d| d.run.complete);
    run.stopped_because = (!stopped.is_empty()).then(|| stopped.join("; "));
    run.time = merged_time(&boots);
    run.configs = names
        .iter()
        .map(|name| Config {
            name: name.clone(),
            ..Config::default()
        })
        .collect();
    run.schedule = rounds
        .iter()
        .map(|boots| boots.iter().map(|b| names[b.kernel].clone()).collect())
        .collect();
    run.audit = audit;
    run.config_env_diff = crate::env::diff(&envs);
    run.label = first.label.clone();
    run.meta = first.meta.clone();
    run.host = first.host.clone();
    run.invocations = docs().flat_map(|d| d.run.invocations.clone()).collect();
    run.perf_hooks_wait_ms = (!waited.is_empty()).then(|| waited.iter().sum());
    run
}

/// The settings of merged `time` runs (none for `run`'s): the first
/// boot's, with the largest `rss_floor_kb` and no floor, as the empty
/// command's time is each kernel's own ([`time_floors`] says it).
fn merged_time(boots: &[(usize, &BootRun)]) -> Option<TimeInfo> {
    let mut time = boots[0].1.document.run.time.clone()?;
    time.floor = None;
    time.rss_floor_kb = boots
        .iter()
        .filter_map(|(_, b)| b.document.run.time.as_ref())
        .map(|t| t.rss_floor_kb)
        .max()
        .unwrap_or(time.rss_floor_kb);
    Some(time)
}

/// The floor of starting a process (the empty command every `time` round
/// runs) of each kernel's boots, in words for the audit; none for `run`.
fn time_floors(names: &[String], boots: &[(usize, &BootRun)]) -> Option<String> {
    let per_kernel: Vec<String> = (0..names.len())
        .filter_map(|k| {
            let medians: Vec<String> = boots
                .iter()
                .filter(|(_, b)| b.kernel == k)
                .filter_map(|(_, b)| b.document.run.time.as_ref()?.floor.as_ref())
                .map(|f| format!("{:.1}", f.summary.median * 1e6))
                .collect();
            (!medians.is_empty()).then(|| format!("{} {}", names[k], medians.join(", ")))
        })
        .collect();
    (!per_kernel.is_empty()).then(|| {
        format!(
            "the floor of starting a process (the empty command of each boot's rounds, median \
             µs per boot): {}; every command's time includes its kernel's",
            per_kernel.join("; ")
        )
    })
}

/// A boot in words: "patched round 3".
fn boot_label(names: &[String], round: usize, boot: &BootRun) -> String {
    format!("{} round {}", names[boot.kernel], round + 1)
}

/// The cases of `boots` (merged round, boot) as run, "ROUND KERNEL: bench case".
fn merged_order(names: &[String], boots: &[(usize, &BootRun)]) -> Vec<String> {
    let mut order = Vec::new();
    for &(r, b) in boots {
        let run = &b.document.run;
        let configured = !run.configs.is_empty();
        order.extend(run.order.iter().map(|step| {
            // A boot run with its one configuration wrote "1 NAME: bench case".
            let case = match (configured, step.split_once(": ")) {
                (true, Some((_, case))) => case,
                _ => step.as_str(),
            };
            format!("{} {}: {case}", r + 1, names[b.kernel])
        }));
    }
    order
}

/// Every boot's audit findings, each once, in the order first found, with
/// the boots that had it ("every boot", or which).
fn boot_findings(names: &[String], boots: &[(usize, &BootRun)]) -> Vec<String> {
    let mut had: Vec<(&str, Vec<String>)> = Vec::new();
    for &(r, b) in boots {
        for finding in &b.document.run.audit {
            let label = boot_label(names, r, b);
            match had.iter_mut().find(|(f, _)| f == finding) {
                Some((_, which)) => which.push(label),
                None => had.push((finding, vec![label])),
            }
        }
    }
    had.into_iter()
        .map(|(finding, which)| {
            let which = if which.len() == boots.len() {
                "every boot".to_string()
            } else {
                which.join(", ")
            };
            format!("{finding} ({which})")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Options, paired};
    use crate::experiment::Plan;
    use crate::measure::{Interrupt, Policy};
    use crate::rng::log_normal_sample;
    use crate::stats::verdict::Verdict;

    #[test]
    fn the_table_is_read_and_checked() {
        let table: BootRounds = toml::from_str(
            "rounds = 10\nboot_back = true\n\
             [[kernel]]\nname = \"base\"\nrelease = \"6.18.0\"\n\
             [[kernel]]\nname = \"patched\"\nrelease = \"6.18.0-patched\"\n",
        )
        .unwrap();
        assert_eq!(table.names(), ["base", "patched"]);
        assert!(table.boot_back);
        table.validate().unwrap();
        let one = BootRounds {
            kernels: table.kernels[..1].to_vec(),
            ..table.clone()
        };
        assert!(
            one.validate()
                .unwrap_err()
                .to_string()
                .contains("two kernels")
        );
        let mut same = table.clone();
        same.kernels[1].name = Some("base".into());
        assert!(
            same.validate()
                .unwrap_err()
                .to_string()
                .contains("two kernels are called 'base'")
        );
        let mut back = table.clone();
        back.kernels[0].boot_back = true;
        assert!(
            back.validate()
                .unwrap_err()
                .to_string()
                .contains("boot_back belongs")
        );
        let few = BootRounds { rounds: 1, ..table };
        assert!(few.validate().is_err());
        let e = toml::from_str::<BootRounds>("rounds = 2\nkernels = []").unwrap_err();
        assert!(e.to_string().contains("unknown field `kernels`"), "{e}");
    }

    #[test]
    fn every_round_boots_every_kernel_once_in_a_seeded_order() {
        let boots = boot_rounds(&["a", "b"], 10, 7);
        assert_eq!(boots.len(), 20);
        for r in 0..10 {
            let mut kernels: Vec<usize> = boots[2 * r..2 * r + 2]
                .iter()
                .map(|&(round, k)| {
                    assert_eq!(round, r);
                    k
                })
                .collect();
            kernels.sort_unstable();
            assert_eq!(kernels, [0, 1]);
        }
        assert!(boots.chunks(2).any(|c| c[0].1 == 1), "not always A first");
        assert_eq!(boots, boot_rounds(&["a", "b"], 10, 7), "reproducible");
        assert_ne!(boots, boot_rounds(&["a", "b"], 10, 8));
        // The round loop's own orders: the same seed gives a run's configurations the same.
        let mut rng = SplitMix64::new(7);
        let mut first = vec![0, 1, 2];
        rng.shuffle(&mut first);
        let three = boot_rounds(&[(); 3], 4, 7);
        assert_eq!(three[..3].iter().map(|b| b.1).collect::<Vec<_>>(), first);
        assert_ne!(boot_seed(7, 0), boot_seed(7, 1));
        assert_eq!(boot_seed(7, 3), boot_seed(7, 3));
    }

    /// A real short run of two cases: the shape every boot document has.
    fn real_boot_document() -> Document {
        let selectors: Vec<crate::bench::util::select::Selector> =
            ["syscall:case=null", "syscall:case=getpid"]
                .iter()
                .map(|s| s.parse().unwrap())
                .collect();
        let cases = crate::bench::util::select::resolve(&selectors).unwrap();
        let plan = Plan {
            cases,
            seed: 1,
            pin: None,
            configs: Vec::new(),
            rounds: 1,
            invocations: 1,
            target_ci: None,
            max_time: None,
            target_mde: None,
            policy: Policy {
                samples: 4,
                sample_time_ns: 100_000,
                warmup_ns: 0,
            },
            perf: false,
            remote: None,
            logs: false,
            allow_unknown_boot_parameters: false,
            profile: None,
            loads: Vec::new(),
        };
        let out =
            crate::experiment::run(&plan, Interrupt::none(), crate::env::capture(), &mut Silent);
        assert!(out.error.is_none(), "{:?}", out.error);
        out.document
    }

    /// `template` as kernel `kernel` measured it in round `round`: every
    /// sample synthetic, around 100 ns × `factor` × the round's own drift.
    fn boot(
        template: &Document,
        round: usize,
        kernel: usize,
        factor: f64,
        rng: &mut SplitMix64,
    ) -> BootRun {
        let mut document = template.clone();
        let drift = 1.0 + 0.08 * (round as f64).sin();
        for s in &mut document.series {
            s.samples = log_normal_sample(rng, s.samples.len(), 100.0 * factor * drift);
            s.summary = crate::stats::summarize(&s.samples).unwrap();
        }
        document.env.kernel = format!("6.18.0-{kernel}");
        BootRun {
            round,
            kernel,
            document,
        }
    }

    fn merged(factor: f64, seed: u64) -> Document {
        let template = real_boot_document();
        let names = ["base".to_string(), "patched".to_string()];
        let mut rng = SplitMix64::new(seed);
        let boots = boot_rounds(&names, 10, seed)
            .into_iter()
            .map(|(r, k)| boot(&template, r, k, if k == 1 { factor } else { 1.0 }, &mut rng))
            .collect();
        merge(&names, boots, seed).unwrap()
    }

    #[test]
    fn merged_boots_are_a_run_of_two_configurations_that_compare_pairs() {
        let doc = merged(1.10, 3);
        crate::document::validate::validate(&doc).unwrap();
        let run = &doc.run;
        assert!(run.complete, "{:?}", run.stopped_because);
        assert_eq!(
            run.configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["base", "patched"]
        );
        assert_eq!(run.schedule.len(), 10);
        assert_eq!(doc.series.len(), 4);
        for s in &doc.series {
            assert_eq!(s.rounds.len(), 10, "{}", s.key.case);
            assert_eq!(s.round_samples, [4; 10]);
            assert!(s.slot.is_some());
        }
        assert!(run.order[0].starts_with("1 "), "{:?}", run.order);
        assert!(
            run.config_env_diff.iter().any(|(k, _)| k == "kernel"),
            "{:?}",
            run.config_env_diff
        );
        // The planted 10 % is found on both cases, paired by round.
        let c = paired(&doc, Options::default()).unwrap();
        assert_eq!(c.labels, ["base", "patched"]);
        assert_eq!(c.rows.len(), 2);
        for row in &c.rows {
            let change = &row.changes[0];
            assert_eq!(change.verdict, Verdict::Slower, "{row:?}");
            assert!((change.ci.ratio - 1.10).abs() < 0.03, "{}", change.ci.ratio);
        }
        assert!(
            c.method.starts_with("Paired over 10 rounds"),
            "{}",
            c.method
        );
        // The same kernel twice: nothing significant.
        let same = paired(&merged(1.0, 3), Options::default()).unwrap();
        for row in &same.rows {
            let v = row.changes[0].verdict;
            assert!(
                matches!(v, Verdict::Equivalent | Verdict::Inconclusive),
                "A/A: {v:?}"
            );
        }
    }

    #[test]
    fn a_round_not_every_kernel_finished_is_left_out_and_said() {
        let template = real_boot_document();
        let names = ["a".to_string(), "b".to_string()];
        let mut rng = SplitMix64::new(1);
        let mut boots: Vec<BootRun> = boot_rounds(&names, 4, 1)
            .into_iter()
            .map(|(r, k)| boot(&template, r, k, 1.0, &mut rng))
            .collect();
        // Round 2's boot of b never happened; round 3's b lacks a case.
        boots.retain(|b| (b.round, b.kernel) != (1, 1));
        let cut = boots
            .iter_mut()
            .find(|b| (b.round, b.kernel) == (2, 1))
            .unwrap();
        let lost = cut.document.series.remove(0);
        let doc = merge(&names, boots, 1).unwrap();
        assert!(!doc.run.complete);
        assert!(
            doc.run
                .stopped_because
                .as_deref()
                .unwrap()
                .contains("boot round 2 left out")
        );
        assert_eq!(doc.run.schedule.len(), 3);
        for s in &doc.series {
            let rounds = if s.key.case == lost.key.case { 2 } else { 3 };
            assert_eq!(s.rounds.len(), rounds, "{} {}", s.key.config, s.key.case);
        }
        assert!(
            doc.run
                .audit
                .iter()
                .any(|f| f.contains("was not measured on b")),
            "{:?}",
            doc.run.audit
        );
        for finding in &template.run.audit {
            let once = format!("{finding} (every boot)");
            assert!(doc.run.audit.contains(&once), "{:?}", doc.run.audit);
        }
        crate::document::validate::validate(&doc).unwrap();
    }

    #[test]
    fn boots_that_cannot_be_merged_are_refused() {
        let template = real_boot_document();
        let names = ["a".to_string(), "b".to_string()];
        let mut rng = SplitMix64::new(1);
        let twice = vec![
            boot(&template, 0, 0, 1.0, &mut rng),
            boot(&template, 0, 0, 1.0, &mut rng),
        ];
        assert!(
            merge(&names, twice, 1)
                .unwrap_err()
                .to_string()
                .contains("given twice")
        );
        let mut other = boot(&template, 0, 1, 1.0, &mut rng);
        other.document.run.host = Some("elsewhere".into());
        let hosts = vec![boot(&template, 0, 0, 1.0, &mut rng), other];
        assert!(
            merge(&names, hosts, 1)
                .unwrap_err()
                .to_string()
                .contains("one job runs on one host")
        );
        let alone = vec![boot(&template, 0, 0, 1.0, &mut rng)];
        assert!(
            merge(&names, alone, 1)
                .unwrap_err()
                .to_string()
                .contains("no round has a boot of every kernel")
        );
    }
}

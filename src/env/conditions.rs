//! The conditions one run was measured in, as evidence: how much CPU other
//! processes used at its start and end, which ones, and the load average,
//! read from what the environment already records (`env.load`, see
//! [`super::activity`]); nothing new is captured. A run is *contended* when
//! other processes used at least [`CONTENDED_CPUS`] of a CPU at its start or
//! at its end.
//!
//! Left out: the load average as a trigger. It is shown, but it counts
//! osbench's own work too — at the end of a run its own benchmarks, at the
//! start of a run begun within a minute of another run that run's — so a
//! threshold on it would call every back-to-back run contended. The busy
//! processes leave osbench and its children out and are measured over a
//! window, so they say what *others* did. What happened between the two
//! readings is not seen. Comparing the conditions of sides is
//! `compare::conditions`'; this lives here so that the store can leave
//! contended runs out of a stored spread (`store::invocation_priors`).

use super::{Activity, Environment};

/// Other processes using this many CPUs (the sum of their shares) at the
/// start or the end of a run make it contended: on a 2-CPU machine half a
/// CPU busy elsewhere keeps the other CPU from idling, and cross-CPU
/// wake-ups then skip the wake-up-from-halt they pay on a quiet machine.
pub const CONTENDED_CPUS: f64 = 0.5;

/// The busiest other processes named in words.
const NAMED: usize = 3;

/// What other processes did at one reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The CPUs other processes used over the window (the sum of their shares).
    pub others_cpus: f64,
    /// The 1-minute load average (osbench's own work included).
    pub loadavg: f64,
    /// The busy processes, busiest first: command name and share of a CPU.
    pub busy: Vec<(String, f64)>,
}

impl Reading {
    fn of(a: &Activity) -> Self {
        Self {
            others_cpus: a.busy.iter().map(|b| b.cpu_share).sum(),
            loadavg: a.loadavg[0],
            busy: a
                .busy
                .iter()
                .map(|b| (b.comm.clone(), b.cpu_share))
                .collect(),
        }
    }
}

/// The conditions of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    /// Online CPUs.
    pub cpus: usize,
    /// At the start of the run; `None` when not recorded (older documents).
    pub start: Option<Reading>,
    /// At the end; `None` when not recorded (an interrupted run, older documents).
    pub end: Option<Reading>,
}

impl Conditions {
    /// The conditions `env` records.
    pub fn of(env: &Environment) -> Self {
        let load = env.load.as_ref();
        Self {
            cpus: env.cpus,
            start: load.map(|l| Reading::of(&l.start)),
            end: load.and_then(|l| l.end.as_ref()).map(Reading::of),
        }
    }

    /// Whether anything was recorded.
    pub fn known(&self) -> bool {
        self.start.is_some() || self.end.is_some()
    }

    fn readings(&self) -> impl Iterator<Item = &Reading> {
        self.start.iter().chain(&self.end)
    }

    /// The most CPUs other processes used at either reading (0 when unknown).
    pub fn others_cpus(&self) -> f64 {
        self.readings().map(|r| r.others_cpus).fold(0.0, f64::max)
    }

    /// Whether other processes used at least [`CONTENDED_CPUS`] at the start or the end.
    pub fn contended(&self) -> bool {
        self.others_cpus() >= CONTENDED_CPUS - 1e-9
    }

    /// The highest 1-minute load average of the readings.
    pub fn loadavg(&self) -> Option<f64> {
        self.readings().map(|r| r.loadavg).reduce(f64::max)
    }

    /// The busiest other processes of either reading, each with its largest
    /// share, busiest first, at most three.
    pub fn busiest(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        for (name, share) in self.readings().flat_map(|r| &r.busy) {
            match out.iter_mut().find(|(n, _)| n == name) {
                Some((_, s)) => *s = s.max(*share),
                None => out.push((name.clone(), *share)),
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(NAMED);
        out
    }

    /// What other processes used, in words: "other processes used 1.0 of 2
    /// CPUs (python3 99 %), load average 1.90", "other processes were quiet,
    /// load average 0.12 on 2 CPUs", or "conditions not recorded".
    pub fn words(&self) -> String {
        if !self.known() {
            return "conditions not recorded".into();
        }
        let load = self
            .loadavg()
            .map_or(String::new(), |l| format!(", load average {l:.2}"));
        if self.busiest().is_empty() {
            return format!("other processes were quiet{load} on {} CPUs", self.cpus);
        }
        format!("{}{load}", self.busy_words(self.others_cpus()))
    }

    /// "other processes used 1.0 of 2 CPUs (python3 99 %)", with `cpus` for
    /// the CPUs used (a side's largest).
    pub fn busy_words(&self, cpus: f64) -> String {
        let names: Vec<String> = self
            .busiest()
            .iter()
            .map(|(n, s)| format!("{n} {:.0} %", s * 100.0))
            .collect();
        format!(
            "other processes used {cpus:.1} of {} CPUs ({})",
            self.cpus,
            names.join(", ")
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::env::Load;
    use crate::env::activity::Busy;

    fn activity(loadavg: f64, busy: &[(&str, f64)]) -> Activity {
        Activity {
            loadavg: [loadavg; 3],
            runnable: 1,
            window_ms: 100,
            busy: busy
                .iter()
                .enumerate()
                .map(|(i, (c, s))| Busy {
                    pid: 100 + i as i32,
                    comm: c.to_string(),
                    cpu_share: *s,
                })
                .collect(),
        }
    }

    pub(crate) fn env_with(start: &[(&str, f64)], end: Option<&[(&str, f64)]>) -> Environment {
        let mut env = crate::store::fixture().1.env;
        env.cpus = 2;
        env.load = Some(Load {
            start: activity(0.3, start),
            end: end.map(|b| activity(1.9, b)),
        });
        env
    }

    #[test]
    fn a_busy_process_at_the_start_makes_the_run_contended() {
        let c = Conditions::of(&env_with(&[("python3", 0.99)], Some(&[])));
        assert!(c.contended() && c.known());
        assert_eq!(c.others_cpus(), 0.99);
        assert_eq!(
            c.words(),
            "other processes used 1.0 of 2 CPUs (python3 99 %), load average 1.90"
        );
    }

    #[test]
    fn shares_add_up_and_the_busiest_names_are_merged() {
        let start = [("cc1", 0.3), ("make", 0.1)];
        let end = [("cc1", 0.4), ("ld", 0.2), ("as", 0.1)];
        let c = Conditions::of(&env_with(&start, Some(&end)));
        assert!((c.others_cpus() - 0.7).abs() < 1e-9, "the end's sum");
        assert!(c.contended());
        let busiest = c.busiest();
        let names: Vec<&str> = busiest.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["cc1", "ld", "make"]);
        assert_eq!(busiest[0].1, 0.4);
    }

    #[test]
    fn a_high_load_average_alone_is_not_contention() {
        // The load average counts osbench's own benchmarks at the end.
        let c = Conditions::of(&env_with(&[("cron", 0.1)], Some(&[("sshd", 0.2)])));
        assert!(!c.contended(), "0.2 of a CPU is below the threshold");
        assert_eq!(c.loadavg(), Some(1.9));
        let quiet = Conditions::of(&env_with(&[], None));
        assert!(!quiet.contended());
        assert_eq!(
            quiet.words(),
            "other processes were quiet, load average 0.30 on 2 CPUs"
        );
    }

    #[test]
    fn a_document_without_a_load_record_has_unknown_conditions() {
        let mut env = env_with(&[("python3", 1.0)], None);
        env.load = None;
        let c = Conditions::of(&env);
        assert!(!c.known() && !c.contended());
        assert_eq!(c.words(), "conditions not recorded");
    }
}

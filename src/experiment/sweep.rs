//! A case of a task sweep (`--tasks`): where it runs and how it is set up
//! as N copies ([`crate::measure::copies`]), with the limits checked first
//! against what one copy takes (set up once here and measured: descriptors
//! opened, resident memory added). Left out: the ladder (the selector's or
//! the command line's) and the scaling arithmetic (`stats::scaling`).

use std::sync::Arc;

use crate::bench::util::select::Case;
use crate::bench::{self, BenchDef, Params};
use crate::error::{Error, Result};
use crate::measure::Workload;
use crate::measure::copies::{Copies, CopiesWorkload, Needs, Place, SetupFn, check_limits};
use crate::measure::placement::{Pin, Placement};

/// Where the copies run, as the series records it: spread over the allowed
/// CPUs, or packed on one. The timing thread itself stays unpinned: it
/// sleeps between readings of the counters.
pub(super) fn placement(copies: &Copies) -> Result<Placement> {
    Placement::new(match copies.place {
        Place::Spread => Pin::Spread,
        Place::Packed => Pin::Same,
    })
}

/// Why the family cannot be swept, for families not sampled in calibrated batches.
fn unsweepable(def: &BenchDef, params: &Params) -> Option<String> {
    let batched = match def.sampling {
        bench::Sampling::Batched { .. } => true,
        bench::Sampling::EventsFor(count) => count(params).is_none(),
        bench::Sampling::WholeRuns | bench::Sampling::Events(_) => false,
    };
    (!batched).then(|| {
        format!(
            "{} {} cannot be swept over tasks: --tasks runs cases timed in batches of \
             iterations, and this one is timed as whole runs or single events; drop --tasks \
             for it (its own parameters set its tasks)",
            def.name,
            (def.case_name)(params)
        )
    })
}

/// Sets `case` up as `copies`: refused when its family cannot be swept or
/// the limits cannot hold them; otherwise every copy running.
pub(super) fn start(case: &Case, copies: Copies) -> Result<Box<dyn Workload>> {
    let def = case.def;
    if let Some(why) = unsweepable(def, &case.params) {
        return Err(Error::Measure(why));
    }
    let what = format!("{} {}", def.name, case.name());
    let needs = probe(def, &case.params)?;
    check_limits(&what, &copies, &needs)?;
    let params = case.params.clone();
    let setup: SetupFn = Arc::new(move |placed: &Placement| (def.setup)(&params, placed));
    Ok(Box::new(CopiesWorkload::start(def.name, copies, setup)?))
}

/// What one copy takes: set up here once (one operation run, so that its
/// memory is touched), its descriptors and resident memory counted, torn down.
fn probe(def: &BenchDef, params: &Params) -> Result<Needs> {
    let (fds, rss) = (open_fds(), resident_bytes());
    let mut w = (def.setup)(params, &Placement::unpinned())?;
    let ran = w.run(1);
    let needs = Needs {
        tasks: (def.tasks)(params),
        fds: open_fds().saturating_sub(fds),
        bytes: resident_bytes().saturating_sub(rss),
    };
    w.teardown()?;
    ran?;
    Ok(needs)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn resident_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_run_and_latency_families_are_refused_with_why() {
        let hackbench = bench::find("messaging").unwrap();
        let params = Params::new(hackbench, &[]);
        let why = unsweepable(hackbench, &params).unwrap();
        assert!(
            why.contains("whole runs") && why.contains("drop --tasks"),
            "{why}"
        );
        let syscall = bench::find("syscall").unwrap();
        assert_eq!(unsweepable(syscall, &Params::new(syscall, &[])), None);
    }
}

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

/// Sets `case` up as `copies`: refused when its family cannot be swept or
/// the limits cannot hold them; otherwise every copy running.
pub(super) fn start(case: &Case, copies: Copies) -> Result<Box<dyn Workload>> {
    let def = case.def;
    let what = format!("{} {}", def.name, case.name());
    // Runs skip such cases before measuring; an agent's request may still name one.
    let why = crate::bench::util::select::unsweepable(def, &case.params)
        .or_else(|| crate::bench::util::select::not_as_threads(def, copies));
    if let Some(why) = why {
        return Err(Error::Measure(format!("{what} {why}")));
    }
    let needs = probe(def, &case.params)?;
    check_limits(&what, &copies, &needs)?;
    let params = case.params.clone();
    let setup: SetupFn = Arc::new(move |placed: &Placement| (def.setup)(&params, placed));
    let whole_runs = matches!(def.sampling, bench::Sampling::WholeRuns);
    let copies = CopiesWorkload::start(def.name, copies, setup, whole_runs)?;
    Ok(Box::new(copies))
}

/// What one copy takes: set up here once (one iteration run — a whole run
/// after its `prepare` for whole-run families — so that its memory is
/// touched), its descriptors and resident memory counted, torn down.
fn probe(def: &BenchDef, params: &Params) -> Result<Needs> {
    let (fds, rss) = (open_fds(), resident_bytes());
    let mut w = (def.setup)(params, &Placement::unpinned())?;
    let prepared = match def.sampling {
        bench::Sampling::WholeRuns => w.prepare(),
        _ => Ok(()),
    };
    let ran = prepared.and_then(|()| w.run(1));
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

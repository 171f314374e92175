//! The measurement harness and what it owns: the clocks, the counters
//! (rusage, perf_event), RAPL energy, interrupts, and the supervision and
//! placement of a case's tasks. It knows no particular benchmark: each one
//! reaches it as a [`Workload`], measured by [`Harness::sample`]. Left out:
//! the statistics and reports made of what it measures.
//!
//! Method (lmbench's `benchmp`, its `src/lib_timing.c` and `src/bench.h`, with changes):
//! 1. measure the overheads once: one clock read (median of back-to-back
//!    reads) and one iteration of an empty loop (median of 5 timed loops);
//! 2. calibrate: run 1, 8, 64, … iterations until a batch is long enough to
//!    estimate, then scale the count so one sample lasts the target time;
//! 3. warm up: keep running calibrated batches for the warm-up time,
//!    re-estimating the count after each (nothing is recorded);
//! 4. sample: time batches until `samples` of them land inside
//!    [`ACCEPT_LOW`, `ACCEPT_HIGH`] × target. Samples outside are kept as
//!    `rejected` (never silently dropped); a short one re-sizes the count at
//!    once, two long ones in a row re-size it (one long sample is usually an
//!    interruption, not a wrong count). An iteration longer than the target
//!    cannot be split, so with one iteration per sample every sample counts.
//!    A case and its stand-in (the same operation without the part being
//!    measured) can be sampled alternately, so drift hits them alike.
//!
//! Differences from lmbench: CLOCK_MONOTONIC in ns instead of gettimeofday in
//! µs; an upper bound on accepted samples; overheads recorded in the result
//! instead of only subtracted; no forked measuring child (workloads fork
//! their own peers); a warm-up by default.
//! Around every recorded sample (not during calibration or warm-up) the
//! [`meters::Meters`] — rusage counters and RAPL energy — are read outside
//! the two clock reads, so they never fall inside the timed region.
//! No perf event is open meanwhile: an open event, even disabled, slows every
//! context switch and fork of the tasks it is on. After the timed samples a
//! short counting pass ([`meters::PerfPass`]) opens them on every task of the
//! case and runs it again with them enabled: [`PERF_PASS_BATCHES`] batches of
//! the last timed size, one whole run for whole-run workloads, one batch of
//! events for latency workloads; then closes them.

pub mod clock;
pub mod copies;
pub mod counters;
pub mod energy;
#[doc(hidden)]
pub mod fake;
mod harness;
pub mod hook;
pub mod interrupt;
pub mod limits;
pub mod load;
pub mod meters;
mod overhead;
pub mod placement;
pub mod profile;
pub mod profile_pass;
mod sampler;
pub mod sandbox;
pub mod sentinel;
pub mod spawn;
pub mod supervise;
pub mod warden;
pub mod workload;

pub use crate::document::{Overhead, Policy, RawSample};
pub use clock::{Clock, Monotonic};
pub use harness::{Events, Harness, Measured, PERF_PASS_BATCHES, Target};
pub use interrupt::Interrupt;
pub use meters::{MeterDelta, Meters, PerfPass};
pub use overhead::per_op_ns;
pub use sampler::{ACCEPT_HIGH, ACCEPT_LOW, Measurement};
pub use workload::{RunReport, SampleMethod, Workload};

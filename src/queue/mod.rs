//! The job queue: hosts that pull their work. Jobs are rows in the
//! PostgreSQL results store (`crate::store`'s `jobs` and `workers` tables),
//! one per host, each holding a whole plan ([`job::JobPlan`]: what `osbench
//! run` or `osbench time` runs, with its configurations); `osbench worker`
//! on each host claims its next job under a lease it renews between cases,
//! runs it with the ordinary `run` / `time` code and stores the document
//! under its own name (the loop: [`serve`]; what a job's run is given:
//! [`hook`]; identity, spool, lease: [`worker`]). A worker that dies leaves a lease that
//! expires: the job is then `lost` and claimed again, up to
//! [`worker::MAX_ATTEMPTS`] attempts. Jobs that boot a kernel: [`boot`],
//! [`boot_rounds`], and the worker's part of them, [`kernel_jobs`].
//! Where it comes from: Phoromatic's polling clients, LKP's testboxes and
//! LAVA's workers, with the database osbench already shares as the server.

pub mod boot;
pub mod boot_rounds;
pub mod hook;
pub mod job;
pub mod kernel_jobs;
pub mod policy;
pub mod serve;
pub mod worker;

pub use job::{JobCommand, JobPlan, PlanFile, parse_plan_file};

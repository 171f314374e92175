//! The rows of jobs that boot a kernel (`crate::queue::kernel_jobs`): a job
//! recorded `rebooting` with its progress (the boot record, in its `kernel`
//! column) before its worker reboots, and taken again by the worker of its
//! host name when that starts after the boot. PostgreSQL only, as the rest
//! of the queue. A host that never comes back: the job's boot deadline
//! (recorded here) passes, and the queue's sweep (`super::jobs`) makes it
//! `lost`.

use crate::error::Result;

use super::jobs::{JobRow, WorkerId};

/// What a job `rebooting` waits for: the kernel its host boots into, in
/// words for the error if it never comes back, and for how long.
#[derive(Debug, Clone)]
pub struct BootWait {
    pub into: String,
    pub timeout: std::time::Duration,
}
use super::queries::Store;
use super::sql::Param;

impl Store {
    /// Records job `id`, held by `w`, as `rebooting` with `kernel` (its
    /// kernel column: what it asks for and how far it got) and the boot's
    /// deadline (`wait`), committed; false when the job is no longer `w`'s.
    pub fn mark_rebooting(
        &mut self,
        id: i64,
        w: &WorkerId,
        kernel: &str,
        wait: &BootWait,
    ) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET state = 'rebooting', kernel = $3, boot_into = $4,
                 boot_started = now(),
                 boot_deadline = now() + CAST($5 AS DOUBLE PRECISION) * interval '1 second'
             WHERE id = $1 AND lease_token = $2 AND state IN ('claimed', 'running')",
            &[
                Param::Int(id),
                w.token.as_str().into(),
                kernel.into(),
                wait.into.as_str().into(),
                Param::Float(wait.timeout.as_secs_f64()),
            ],
        )?;
        Ok(n == 1)
    }

    /// Job `id`, `rebooting` for `w`, back to `running` with its kernel
    /// column as it was before the boot (`kernel`: the record of a boot
    /// that never happened must not be checked when it runs again), as its
    /// reboot failed or was stopped, so that the worker can end it.
    pub fn unmark_rebooting(
        &mut self,
        id: i64,
        w: &WorkerId,
        kernel: Option<&str>,
    ) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET state = 'running', boot_deadline = NULL,
                 kernel = COALESCE(CAST($3 AS TEXT), kernel)
             WHERE id = $1 AND lease_token = $2 AND state = 'rebooting'",
            &[Param::Int(id), w.token.as_str().into(), kernel.into()],
        )?;
        Ok(n == 1)
    }

    /// The job a worker of `w`'s name rebooted for, taken by `w` under a
    /// lease of `lease` seconds (claimed, its attempts not counted again);
    /// none when there is none.
    pub fn take_rebooted(&mut self, w: &WorkerId, lease: f64) -> Result<Option<JobRow>> {
        self.require_queue("worker")?;
        self.take_one(w, lease, ", boot_deadline = NULL", "state = 'rebooting'")
    }
}

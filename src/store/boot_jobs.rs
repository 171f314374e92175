//! The rows of jobs that boot a kernel (`crate::queue::kernel_jobs`): a job
//! recorded `rebooting` with its progress (the boot record, in its `kernel`
//! column) before its worker reboots, and taken again by the worker of its
//! host name when that starts after the boot. PostgreSQL only, as the rest
//! of the queue. Left out: a timeout on a host that never comes back (the
//! job stays `rebooting`; `jobs --cancel` ends it).

use crate::error::Result;

use super::jobs::{JobRow, WorkerId};
use super::queries::Store;
use super::sql::Param;

impl Store {
    /// Records job `id`, held by `w`, as `rebooting` with `kernel` (its
    /// kernel column: what it asks for and how far it got), committed; false
    /// when the job is no longer `w`'s.
    pub fn mark_rebooting(&mut self, id: i64, w: &WorkerId, kernel: &str) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET state = 'rebooting', kernel = $3
             WHERE id = $1 AND lease_token = $2 AND state IN ('claimed', 'running')",
            &[Param::Int(id), w.token.as_str().into(), kernel.into()],
        )?;
        Ok(n == 1)
    }

    /// Job `id`, `rebooting` for `w`, back to `running` (its reboot failed,
    /// so the worker can end it).
    pub fn unmark_rebooting(&mut self, id: i64, w: &WorkerId) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET state = 'running'
             WHERE id = $1 AND lease_token = $2 AND state = 'rebooting'",
            &[Param::Int(id), w.token.as_str().into()],
        )?;
        Ok(n == 1)
    }

    /// The job a worker of `w`'s name rebooted for, taken by `w` under a
    /// lease of `lease` seconds (claimed, its attempts not counted again);
    /// none when there is none.
    pub fn take_rebooted(&mut self, w: &WorkerId, lease: f64) -> Result<Option<JobRow>> {
        self.require_queue("worker")?;
        self.take_one(w, lease, "", "state = 'rebooting'")
    }
}

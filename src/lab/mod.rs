//! Running where kernel labs already run (issue 43): LAVA job definitions
//! made from an osbench plan and the results read back from a job's log
//! ([`lava`]), the result document on a device's serial console
//! ([`console`]). Publishing to KernelCI is a report (`crate::report::kcidb`).
//! Left out: labgrid places, power control and device scheduling (the lab's).

pub mod console;
pub mod lava;

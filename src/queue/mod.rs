//! Hosts that pull their work (issue 30): jobs in the PostgreSQL store and
//! the worker that runs them. This part: jobs that boot the kernel they test
//! ([`boot`]) and compare kernels over rounds of boots ([`boot_rounds`]).

pub mod boot;
pub mod boot_rounds;

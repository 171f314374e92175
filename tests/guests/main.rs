//! Places other than this process that run `osbench agent`: guests (UML,
//! command, ssh), QEMU, fleets of hosts over ssh, and kernel boots. Tests that
//! need a missing tool say so and skip.

#[path = "../common/mod.rs"]
mod common;

mod fleet;
mod guest;
mod kernel_boot;
mod lava;
mod qemu;

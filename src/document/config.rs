//! What a run varied and how it was set up, as recorded in a document: the
//! configurations of an experiment ([`Config`]) and the settings of an
//! `osbench time` run ([`TimeInfo`]). Plain data; applying a configuration is
//! `experiment::config`'s job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ReferenceSeries;
use crate::env::Environment;

/// The name of the one implicit configuration of a run without configurations.
pub const DEFAULT_CONFIG: &str = "default";

/// One configuration of an experiment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// Environment variables for its set-up and tear-down commands.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Benchmark parameters this configuration changes ("spin.work" = "1050").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Override>,
    /// Values of files (kernel toggles) this configuration sets before its
    /// blocks; the run restores the values it found ([`super::Knob`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<super::KnobSetting>,
    /// Placement for this configuration, instead of `--pin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<super::Pin>,
    /// Where this configuration's cases run when not here: another system
    /// running `osbench agent` (a User-Mode Linux kernel, a container, a host
    /// over SSH). Absent: the native system. Its set-up and tear-down then
    /// run inside the guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestSpec>,
    /// The name of a guest this configuration shares with others (booted
    /// once, each configuration's set-up run in it before its block); its
    /// spec is `guest`. Absent: a guest of its own, if any.
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    pub in_guest: Option<String>,
    /// Background loads run beside every case of this configuration
    /// (written `load`; absent: the run's `--load`, if any).
    #[serde(rename = "load", default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<super::LoadSpec>,
    /// Audit rules and probes installed while its blocks run (here, not in guests).
    #[serde(default, skip_serializing_if = "super::Observers::is_none")]
    pub observers: super::Observers,
}

/// Another system that runs a configuration's cases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum GuestSpec {
    /// A User-Mode Linux kernel booted with the host's root read-only (hostfs)
    /// and osbench's agent as its init.
    Uml {
        /// Extra kernel parameters (e.g. "nosysemu", "seccomp=off").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cmdline: Option<String>,
        /// Memory (UML's `mem=`; default 512M).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mem: Option<String>,
        /// The UML kernel binary (default: `linux.uml`, else `linux`, on PATH).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kernel: Option<String>,
    },
    /// A QEMU virtual machine booting `kernel` with osbench's initramfs
    /// (written and cached by osbench), its serial port as the channel.
    Qemu {
        /// The kernel (a vmlinuz; default `$OSBENCH_QEMU_KERNEL`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kernel: Option<String>,
        /// Kernel parameters after osbench's `console=ttyS0 quiet panic=-1`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        append: Option<String>,
        /// "auto" (default: KVM where it runs stock kernels, else TCG), "kvm" or "tcg".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accel: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpus: Option<u32>,
        /// QEMU's `-m` (default "1G").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory: Option<String>,
    },
    /// A shell command whose stdin and stdout end up connected to
    /// `osbench agent` (`{osbench}` in it is this osbench's path).
    Command { command: String },
}

/// A guest as the run found it: how long it took to answer, and the
/// environment its agent reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestInfo {
    /// The configuration it runs.
    pub config: String,
    /// From start to the agent's `ready`, s.
    pub boot_s: f64,
    /// The agent's osbench version.
    pub version: String,
    pub env: Environment,
    /// The configurations that ran in it, when several shared it (`in = "NAME"`;
    /// `config` is then the guest's name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<String>,
    /// A virtual machine's accelerator and why it was chosen ("tcg: /dev/kvm is kvm_pvm, …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// What its kernel handed the agent as init (absent: the agent is not an init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitHandOff>,
    /// What became of each boot parameter the configuration asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boot_parameters: Vec<BootParameter>,
}

/// One boot parameter a guest was asked to boot with, and who took it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootParameter {
    pub word: String,
    /// Whether it is on the guest kernel's /proc/cmdline.
    pub in_cmdline: bool,
    /// "kernel" (it never reached init), "uml" (it reached init, but UML's
    /// own options name it: UML reads it early and leaves it on the command
    /// line), or "nobody" (it reached init and nothing recognised it).
    pub taken_by: String,
}

/// What the kernel handed the agent as init: the words of its command line
/// it did not take for itself (init's arguments) and its `KEY=VALUE` words
/// (init's environment, with the kernel's own `HOME` and `TERM`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitHandOff {
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// `bench.key = value`: a parameter a configuration sets for one benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override {
    pub bench: String,
    pub key: String,
    pub value: String,
}

/// Settings of a `time` run that are not per command, as recorded in `run.time`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeInfo {
    pub warmup: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The `--env` assignments (osbench's own environment is not recorded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The empty command timed in every round: the floor of starting a process
    /// (s); absent when the run stopped before the empty command's first run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<ReferenceSeries>,
    /// osbench's own peak resident set (KiB). Linux counts a child's memory
    /// before its execve in `ru_maxrss`, so no run can report less.
    pub rss_floor_kb: u64,
}

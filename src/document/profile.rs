//! A series' profile: where its operations spent their time, sampled in
//! passes of its own after the timed samples (`run --profile`), stored as
//! folded call stacks so that a later `compare` can explain a change. What
//! a pass samples and how is `measure::profile`'s; what a difference of two
//! profiles means is `stats::differential`'s. Left out: raw addresses (only
//! symbol names are kept), per-sample timestamps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// At most this many distinct stacks are kept per pass; the rarest beyond
/// it are counted in [`ProfilePass::other`].
pub const MAX_STACKS_PER_PASS: usize = 2000;

/// At most this many frames are kept per stack, the innermost ones (the
/// outer frames of a deeper stack are replaced by [`TRUNCATED_FRAME`]).
pub const MAX_FRAMES: usize = 64;

/// The outermost frame of a stack cut to [`MAX_FRAMES`].
pub const TRUNCATED_FRAME: &str = "[truncated]";

/// A frame whose address no symbol covers: kernel or user.
pub const UNKNOWN_KERNEL: &str = "[unknown kernel]";
pub const UNKNOWN_USER: &str = "[unknown user]";

/// A kernel frame past the kernel's text that kallsyms names no function
/// for (the nearest symbol below it is data): code the kernel generated at
/// run time and did not list, which on x86-64 is a classic BPF program's
/// JIT image (seccomp filters, socket filters: only eBPF programs are
/// listed, with `net.core.bpf_jit_kallsyms`).
pub const UNLISTED_KERNEL: &str = "[bpf jit, not in kallsyms]";

/// How a series was profiled, and what its passes found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The sampling event: `cpu-clock` (software, a timer; every machine) or
    /// `cycles` (hardware, where a PMU exists).
    pub event: String,
    /// One sample every `period` (ns of `cpu-clock`, or events of `cycles`).
    pub period: u64,
    /// Whose samples are kept: "the case's tasks and the idle task on the CPUs they ran on".
    pub scope: String,
    /// The passes, in the order they ran (with configurations: interleaved
    /// with the other configurations' passes).
    pub passes: Vec<ProfilePass>,
    /// Why part of what was asked is missing (kernel symbols hidden, a pass
    /// cut short, user stacks without frame pointers); empty when nothing is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One profiling pass: the case run untimed for a while with sampling on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilePass {
    /// Operations the case completed during the pass.
    pub ops: f64,
    /// How long sampling was on (ns).
    pub wall_ns: u64,
    /// Samples kept (the sum of `stacks` and `other`).
    pub samples: u64,
    /// Samples the kernel dropped because the ring buffer was full.
    #[serde(default)]
    pub lost: u64,
    /// Folded call stacks, outermost frame first, frames joined by `;` (the
    /// format of Brendan Gregg's `stackcollapse` and `inferno`) → samples.
    pub stacks: BTreeMap<String, u64>,
    /// Samples of stacks beyond [`MAX_STACKS_PER_PASS`], not kept by name.
    #[serde(default)]
    pub other: u64,
}

/// A series with no profile says why, so that `explain` can tell the user
/// how to get one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileOutcome {
    Profiled(Profile),
    /// Profiling was asked for and could not be done: the reason, naming
    /// the setting that would allow it.
    Unavailable(String),
}

impl ProfileOutcome {
    /// The profile, when there is one.
    pub fn profile(&self) -> Option<&Profile> {
        match self {
            Self::Profiled(p) => Some(p),
            Self::Unavailable(_) => None,
        }
    }
}

impl ProfilePass {
    /// Keeps the [`MAX_STACKS_PER_PASS`] most frequent stacks (ties by
    /// name) and counts the rest in `other`; `samples` is unchanged.
    pub fn bound(&mut self) {
        if self.stacks.len() <= MAX_STACKS_PER_PASS {
            return;
        }
        let mut by_count: Vec<(String, u64)> =
            std::mem::take(&mut self.stacks).into_iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        self.other += by_count
            .drain(MAX_STACKS_PER_PASS..)
            .map(|(_, n)| n)
            .sum::<u64>();
        self.stacks = by_count.into_iter().collect();
    }
}

/// `frames` (outermost first) as one folded stack, cut to its innermost
/// [`MAX_FRAMES`]; `;` inside a name (C++ templates) becomes `:`.
pub fn fold(frames: &[&str]) -> String {
    let keep = frames.len().min(MAX_FRAMES);
    let mut out: Vec<String> = Vec::with_capacity(keep + 1);
    if frames.len() > MAX_FRAMES {
        out.push(TRUNCATED_FRAME.into());
    }
    out.extend(
        frames[frames.len() - keep..]
            .iter()
            .map(|f| f.replace(';', ":")),
    );
    out.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounding_keeps_the_most_frequent_stacks_and_counts_the_rest() {
        let mut pass = ProfilePass::default();
        for k in 0..MAX_STACKS_PER_PASS + 10 {
            pass.stacks.insert(format!("s{k}"), 1 + (k % 7) as u64);
            pass.samples += 1 + (k % 7) as u64;
        }
        let total = pass.samples;
        pass.bound();
        assert_eq!(pass.stacks.len(), MAX_STACKS_PER_PASS);
        assert_eq!(pass.stacks.values().sum::<u64>() + pass.other, total);
        assert!(pass.stacks.values().all(|&n| n >= 1));
        assert!(pass.other >= 10 && pass.other <= 10 * 7);
    }

    #[test]
    fn folding_cuts_deep_stacks_and_escapes_separators() {
        assert_eq!(fold(&["main", "f<a;b>", "leaf"]), "main;f<a:b>;leaf");
        let deep: Vec<String> = (0..MAX_FRAMES + 5).map(|k| format!("f{k}")).collect();
        let refs: Vec<&str> = deep.iter().map(String::as_str).collect();
        let folded = fold(&refs);
        assert!(folded.starts_with("[truncated];f5;"), "{folded}");
        assert!(folded.ends_with(&format!("f{}", MAX_FRAMES + 4)));
        assert_eq!(folded.split(';').count(), MAX_FRAMES + 1);
    }
}

//! A profiling pass's sampler ("where the time went", issue 37): what the
//! CPUs run, sampled with `perf_event_open` on every online CPU with kernel
//! and user call chains, kept for osbench's own tasks (its process tree,
//! with the tasks it forks meanwhile) and for the idle task on the CPUs those
//! ran on, named with `blazesym` and returned folded, as a
//! [`crate::document::profile::ProfilePass`]. Left out: when passes run and
//! what they run (the harness's), what a difference of two profiles means
//! (`stats::differential`'s), hardware events other than cycles.
//!
//! Sampling all CPUs rather than osbench's tasks is what shows the idle
//! task: whether a CPU waiting for a wake-up polled or halted is part of
//! where a latency's time went. It needs root, CAP_PERFMON or
//! kernel.perf_event_paranoid ≤ 0.
//!
//! From the perf_event_open(2) man page and include/uapi/linux/perf_event.h.

mod sampler;
mod symbols;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;

use crate::document::profile::{ProfilePass, fold};
use crate::measure::counters::{
    PERF_COUNT_HW_CPU_CYCLES, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, errno_name, tree_tasks,
};
use sampler::{Rate, Record, Ring, Sample};

/// What a profiling pass samples.
#[derive(Debug, Clone, Copy)]
pub struct ProfileOptions {
    /// Time between samples on each CPU (ns). Default 250 µs (4 kHz).
    pub period_ns: u64,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions { period_ns: 250_000 }
    }
}

/// Scope text stored in `document::Profile::scope`.
pub const PROFILE_SCOPE: &str =
    "the case's tasks (osbench's process tree) and the idle task on the CPUs they ran on";

/// The idle task's samples on a CPU are kept when osbench's tasks had at
/// least this share of that CPU's samples.
const IDLE_CPU_SHARE: f64 = 0.05;

/// Shortest period accepted (ns): shorter ones are raised to it (100 kHz,
/// the kernel's default kernel.perf_event_max_sample_rate).
const MIN_PERIOD_NS: u64 = 10_000;

/// A sample as kept until it is named: process, thread, CPU, and its frames
/// outermost first (kernel address or not, address).
type SampleKey = (u32, u32, u32, Vec<(bool, u64)>);

/// One sampling event per online CPU, opened disabled, with what they
/// sampled so far. Dropping it closes every event and unmaps its buffer.
#[derive(Debug)]
pub struct Profiler {
    rings: Vec<Ring>,
    event: &'static str,
    period: u64,
    /// osbench's tasks when opened.
    tasks: HashSet<u32>,
    /// Samples drained so far, counted by [`SampleKey`].
    samples: HashMap<SampleKey, u64>,
    /// Forks drained so far: (pid, ppid, tid).
    forks: Vec<(u32, u32, u32)>,
    lost: u64,
}

impl Profiler {
    /// Opens the events (disabled): cycles in frequency mode where the CPU
    /// has a PMU, else the cpu-clock timer. Err(reason) when profiling
    /// cannot be done, the reason naming the setting that would allow it.
    pub fn open(options: &ProfileOptions) -> Result<Profiler, String> {
        let cpus = online_cpus()?;
        let period_ns = options.period_ns.max(MIN_PERIOD_NS);
        let freq = (1_000_000_000 / period_ns).max(1);
        let hardware = (
            "cycles",
            PERF_TYPE_HARDWARE,
            PERF_COUNT_HW_CPU_CYCLES,
            Rate::Frequency(freq),
        );
        let software = (
            "cpu-clock",
            PERF_TYPE_SOFTWARE,
            sampler::PERF_COUNT_SW_CPU_CLOCK,
            Rate::Period(period_ns),
        );
        let tasks = tree_tasks().into_iter().map(|t| t as u32).collect();
        let (event, rings, period) = match open_rings(hardware, &cpus) {
            Ok(rings) => ("cycles", rings, 1_000_000_000 / freq),
            Err(_) => {
                let rings =
                    open_rings(software, &cpus).map_err(|(cpu, what, e)| refusal(cpu, what, &e))?;
                ("cpu-clock", rings, period_ns)
            }
        };
        Ok(Profiler {
            rings,
            event,
            period,
            tasks,
            samples: HashMap::new(),
            forks: Vec::new(),
            lost: 0,
        })
    }

    /// "cycles" (hardware, where a PMU exists) or "cpu-clock" (software timer).
    pub fn event(&self) -> &'static str {
        self.event
    }

    /// One sample every this much, for `document::Profile::period`: ns of
    /// cpu-clock. For cycles, sampled in frequency mode (the kernel adjusts
    /// the period in cycles to keep 1e9 / period_ns samples a second), it is
    /// the nominal time between samples in ns (1e9 ÷ that frequency), not a
    /// count of cycles.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Starts sampling on every CPU.
    pub fn enable(&mut self) -> io::Result<()> {
        self.rings.iter().try_for_each(|r| r.set_enabled(true))
    }

    /// Stops sampling on every CPU (the events stay open, their records unread).
    pub fn disable(&mut self) -> io::Result<()> {
        self.rings.iter().try_for_each(|r| r.set_enabled(false))
    }

    /// Copies the records out of the ring buffers into memory (no
    /// symbolising), so that the buffers never fill.
    pub fn drain(&mut self) {
        let mut records = Vec::new();
        for ring in &mut self.rings {
            ring.drain(&mut records);
        }
        for record in records {
            match record {
                Record::Sample(s) => self.count(s),
                Record::Lost(n) => self.lost += n,
                Record::Fork { pid, ppid, tid } => self.forks.push((pid, ppid, tid)),
            }
        }
    }

    fn count(&mut self, sample: Sample) {
        let key = (sample.pid, sample.tid, sample.cpu, sampler::frames(&sample));
        *self.samples.entry(key).or_default() += 1;
    }

    /// Disables, drains and closes the events; keeps the samples of
    /// osbench's process tree (its tasks when opened, now, and those they
    /// forked meanwhile) and the idle task's on each CPU where osbench's
    /// tasks had at least 5 % of the samples; names and folds them
    /// (outermost frame first) and bounds the pass. `ops` and `wall_ns` are
    /// stored as given. The notes say what the user should know: kernel
    /// symbols hidden, samples lost, user stacks one frame deep, processes
    /// gone before their symbols were read.
    pub fn finish(mut self, ops: f64, wall_ns: u64) -> (ProfilePass, Vec<String>) {
        let _ = self.disable();
        self.drain();
        self.rings.clear();
        let ours = self.tree();
        let kept = keep(std::mem::take(&mut self.samples), &ours);
        let mut notes = Vec::new();
        let mut pass = fold_samples(&kept, &mut notes);
        pass.ops = ops;
        pass.wall_ns = wall_ns;
        pass.lost = self.lost;
        if self.lost > 0 {
            notes.push(format!(
                "{} samples lost (of any task: the kernel does not say whose): a ring buffer \
                 filled between drains (the pass should drain more often, or sample with a \
                 longer period)",
                self.lost
            ));
        }
        if self.event == "cycles" {
            notes.push(
                "sampled on cycles, which do not count while a CPU halts: idle time spent \
                 halted is missing from the profile (idle polling shows)"
                    .to_string(),
            );
        }
        if let Some(note) = one_frame_note(&kept, &ours) {
            notes.push(note);
        }
        pass.bound();
        (pass, notes)
    }

    /// osbench's tasks: when opened, now, and every task they forked meanwhile.
    fn tree(&self) -> HashSet<u32> {
        let mut tasks = self.tasks.clone();
        tasks.extend(tree_tasks().into_iter().map(|t| t as u32));
        tasks.remove(&0);
        // Fork records of different CPUs are not in order: to a fixed point.
        loop {
            let before = tasks.len();
            for &(pid, ppid, tid) in &self.forks {
                if tasks.contains(&ppid) || tasks.contains(&pid) {
                    tasks.insert(pid);
                    tasks.insert(tid);
                }
            }
            if tasks.len() == before {
                return tasks;
            }
        }
    }
}

/// Whether a sample of (pid, tid) is osbench's.
fn is_ours(ours: &HashSet<u32>, pid: u32, tid: u32) -> bool {
    pid != 0 && (ours.contains(&pid) || ours.contains(&tid))
}

/// The samples of osbench's tasks, and the idle task's on each CPU where
/// osbench's tasks had at least [`IDLE_CPU_SHARE`] of the samples.
fn keep(samples: HashMap<SampleKey, u64>, ours: &HashSet<u32>) -> Vec<(SampleKey, u64)> {
    let mut per_cpu: HashMap<u32, (u64, u64)> = HashMap::new();
    for ((pid, tid, cpu, _), n) in &samples {
        let entry = per_cpu.entry(*cpu).or_default();
        entry.0 += n;
        if is_ours(ours, *pid, *tid) {
            entry.1 += n;
        }
    }
    let busy = |cpu: &u32| {
        per_cpu
            .get(cpu)
            .is_some_and(|&(all, mine)| mine as f64 >= IDLE_CPU_SHARE * all as f64 && mine > 0)
    };
    samples
        .into_iter()
        .filter(|((pid, tid, cpu, _), _)| is_ours(ours, *pid, *tid) || (*pid == 0 && busy(cpu)))
        .collect()
}

/// The kernel function of the profiler's own enable and disable calls
/// around each batch of a pass: their samples are osbench's, not the
/// case's, and are left out (measured: up to 7 % of a pass's samples).
const PROFILER_CONTROL: &str = "perf_ioctl";

/// Names the kept samples' frames and folds them into a pass (ops, wall
/// time and lost samples left to the caller).
fn fold_samples(kept: &[(SampleKey, u64)], notes: &mut Vec<String>) -> ProfilePass {
    let mut kernel = BTreeSet::new();
    let mut user: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for ((pid, _, _, frames), _) in kept {
        for &(is_kernel, addr) in frames {
            if is_kernel {
                kernel.insert(addr);
            } else if *pid != 0 {
                user.entry(*pid).or_default().insert(addr);
            }
        }
    }
    let names = symbols::symbolise(&kernel, &user, notes);
    let mut pass = ProfilePass::default();
    for ((pid, _, _, frames), n) in kept {
        let named: Vec<&str> = frames
            .iter()
            .map(|&(k, addr)| names.name(*pid, k, addr))
            .collect();
        if named.contains(&PROFILER_CONTROL) {
            continue;
        }
        *pass.stacks.entry(fold(&named)).or_default() += n;
        pass.samples += n;
    }
    pass
}

/// The note that user stacks are one frame deep, when at least 90 % of
/// osbench's samples with user frames have exactly one.
fn one_frame_note(kept: &[(SampleKey, u64)], ours: &HashSet<u32>) -> Option<String> {
    let (mut with_user, mut one) = (0u64, 0u64);
    for ((pid, tid, _, frames), n) in kept {
        let user = frames.iter().filter(|(k, _)| !k).count();
        if is_ours(ours, *pid, *tid) && user > 0 {
            with_user += n;
            if user == 1 {
                one += n;
            }
        }
    }
    (with_user > 0 && one as f64 >= 0.9 * with_user as f64).then(|| {
        "user-space stacks are one frame deep (no frame pointers): self time per function is \
         exact, inclusive time of user functions is not"
            .to_string()
    })
}

/// Opens `event` (name, type, config, rate) on every CPU with its ring
/// buffer; on failure closes those opened and says on which CPU, what failed
/// (perf_event_open or mmap), and why.
fn open_rings(
    (_, type_, config, rate): (&str, u32, u64, Rate),
    cpus: &[u32],
) -> Result<Vec<Ring>, (u32, &'static str, io::Error)> {
    cpus.iter()
        .map(|&cpu| {
            let fd = sampler::open_event(type_, config, rate, cpu)
                .map_err(|e| (cpu, "perf_event_open", e))?;
            Ring::map(fd).map_err(|e| (cpu, "mmap", e))
        })
        .collect()
}

/// Why the cpu-clock event could not be opened or mapped, naming the
/// setting that would allow it.
fn refusal(cpu: u32, what: &str, e: &io::Error) -> String {
    let code = e.raw_os_error().unwrap_or(0);
    let name = errno_name(code);
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    match (what, code) {
        ("perf_event_open", libc::EACCES | libc::EPERM) => format!(
            "system-wide sampling needs root (CAP_PERFMON) or kernel.perf_event_paranoid ≤ 0 \
             (it is {paranoid})"
        ),
        ("perf_event_open", libc::ENOSYS | libc::ENOENT) => {
            format!("this kernel has no perf events (perf_event_open: {name})")
        }
        ("mmap", libc::EPERM | libc::ENOMEM) => format!(
            "the sample buffer of CPU {cpu} cannot be mapped (mmap: {name}): it needs root \
             (CAP_IPC_LOCK) or a larger kernel.perf_event_mlock_kb"
        ),
        _ => format!("sampling cpu-clock on CPU {cpu} failed ({what}: {name}: {e})"),
    }
}

/// The online CPUs, from /sys/devices/system/cpu/online ("0-3,5").
fn online_cpus() -> Result<Vec<u32>, String> {
    let path = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the online CPUs are unknown: {path} cannot be read ({e})"))?;
    parse_cpu_list(&text)
        .ok_or_else(|| format!("the online CPUs are unknown: {path} reads {text:?}"))
}

fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Spins until `until`, in a loop of its own (the leaf of its samples).
    #[inline(never)]
    fn spin_for_the_profiler(until: Instant) -> u64 {
        let mut x = 1u64;
        while Instant::now() < until {
            // No calls inside (not even in a debug build): the samples' leaf is this function.
            let mut i = 0u64;
            while i < 20_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
                i += 1;
            }
        }
        x
    }

    /// The frames of the stacks of a pass that are not the idle task's.
    fn busy_leaves(pass: &ProfilePass) -> BTreeMap<&str, u64> {
        let mut leaves = BTreeMap::new();
        for (stack, n) in &pass.stacks {
            let idle = stack
                .split(';')
                .any(|f| f == "do_idle" || f == "cpu_startup_entry");
            if !idle {
                *leaves.entry(stack.rsplit(';').next().unwrap()).or_default() += n;
            }
        }
        leaves
    }

    fn looks_like_hex(frame: &str) -> bool {
        frame.starts_with("0x")
            || (frame.len() >= 8 && frame.chars().all(|c| c.is_ascii_hexdigit()))
    }

    #[test]
    fn a_real_pass_finds_the_function_that_spins() {
        let mut profiler = match Profiler::open(&ProfileOptions::default()) {
            Ok(p) => p,
            Err(why) => {
                eprintln!("skipped: profiling unavailable: {why}");
                return;
            }
        };
        assert!(["cpu-clock", "cycles"].contains(&profiler.event()));
        assert!(profiler.period() > 0);
        profiler.enable().unwrap();
        let start = Instant::now();
        let end = start + Duration::from_millis(300);
        while Instant::now() < end {
            spin_for_the_profiler((Instant::now() + Duration::from_millis(10)).min(end));
            profiler.drain();
        }
        let event = profiler.event();
        let (pass, notes) = profiler.finish(1.0, start.elapsed().as_nanos() as u64);
        eprintln!(
            "event {event}, {} samples, {} lost; notes {notes:?}",
            pass.samples, pass.lost
        );
        let mut top: Vec<_> = pass.stacks.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1));
        for (stack, n) in top.iter().take(8) {
            eprintln!("{n:6} {stack}");
        }
        assert!(pass.samples > 0);
        assert_eq!(pass.samples, pass.stacks.values().sum::<u64>() + pass.other);
        assert_eq!((pass.ops, pass.wall_ns > 0), (1.0, true));
        let leaves = busy_leaves(&pass);
        let (leaf, _) = leaves.iter().max_by_key(|(_, n)| **n).unwrap();
        assert!(
            leaf.contains("spin_for_the_profiler"),
            "top leaf {leaf}: {leaves:?}"
        );
        for stack in pass.stacks.keys() {
            assert!(!stack.split(';').any(looks_like_hex), "{stack}");
        }
    }

    #[test]
    fn a_dropped_profiler_leaves_no_event_open() {
        let profiler = match Profiler::open(&ProfileOptions::default()) {
            Ok(p) => p,
            Err(why) => {
                eprintln!("skipped: profiling unavailable: {why}");
                return;
            }
        };
        let ours: Vec<(i32, usize)> = profiler.rings.iter().map(Ring::identity).collect();
        assert_eq!(ours.len(), online_cpus().unwrap().len());
        let still_open = |(fd, base): (i32, usize)| {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            link.to_string_lossy().contains("perf_event")
                && maps
                    .lines()
                    .any(|l| l.starts_with(&format!("{base:x}-")) && l.contains("perf_event"))
        };
        assert!(ours.iter().all(|&r| still_open(r)), "{ours:?}");
        drop(profiler);
        assert!(!ours.iter().any(|&r| still_open(r)), "{ours:?}");
    }

    #[test]
    fn idle_samples_are_kept_only_where_osbench_ran() {
        let ours = HashSet::from([100u32, 101]);
        let samples = HashMap::from([
            ((100, 101, 0, vec![(false, 1)]), 10),
            ((0, 0, 0, vec![(true, 2)]), 90),
            ((0, 0, 1, vec![(true, 2)]), 500),
            ((300, 300, 1, vec![(false, 3)]), 50),
            ((100, 100, 1, vec![(false, 1)]), 1),
        ]);
        let mut kept = keep(samples, &ours);
        kept.sort();
        let kept: Vec<(u32, u32, u64)> =
            kept.iter().map(|((p, _, c, _), n)| (*p, *c, *n)).collect();
        // CPU 0: osbench had 10 of 100 samples (≥ 5 %); CPU 1: 1 of 551.
        assert_eq!(kept, [(0, 0, 90), (100, 1, 1), (100, 0, 10)]);
    }

    #[test]
    fn forks_of_osbench_s_tasks_are_osbench_s() {
        assert!(parse_cpu_list("0-3,5\n") == Some(vec![0, 1, 2, 3, 5]));
        assert!(parse_cpu_list("x").is_none());
        let profiler = Profiler {
            rings: Vec::new(),
            event: "cpu-clock",
            period: 1,
            tasks: HashSet::from([10]),
            samples: HashMap::new(),
            // 12 forked by 11, which 10 forked before: records out of order.
            forks: vec![(12, 11, 12), (11, 10, 11), (20, 1, 20)],
            lost: 0,
        };
        let tree = profiler.tree();
        assert!(tree.contains(&11) && tree.contains(&12) && !tree.contains(&20));
    }

    #[test]
    fn refusals_name_the_setting_that_would_allow_sampling() {
        let e = |code| io::Error::from_raw_os_error(code);
        let denied = refusal(0, "perf_event_open", &e(libc::EACCES));
        assert!(
            denied.contains("kernel.perf_event_paranoid ≤ 0 (it is "),
            "{denied}"
        );
        let missing = refusal(0, "perf_event_open", &e(libc::ENOSYS));
        assert_eq!(
            missing,
            "this kernel has no perf events (perf_event_open: ENOSYS)"
        );
        let locked = refusal(1, "mmap", &e(libc::EPERM));
        assert!(
            locked.contains("CPU 1") && locked.contains("perf_event_mlock_kb"),
            "{locked}"
        );
    }

    #[test]
    fn one_frame_user_stacks_are_noted() {
        let ours = HashSet::from([7u32]);
        let flat = vec![((7, 7, 0, vec![(true, 1), (false, 2)]), 95)];
        let mut deep = flat.clone();
        deep.push(((7, 7, 0, vec![(false, 3), (false, 2)]), 20));
        assert!(one_frame_note(&flat, &ours).is_some());
        assert!(one_frame_note(&deep, &ours).is_none());
        assert!(one_frame_note(&[], &ours).is_none());
    }
}

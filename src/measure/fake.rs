//! Test stand-ins for the harness's seams: a clock that moves only when a
//! test says so ([`FakeClock`]), and a perf event that a fake workload drives,
//! behind [`PerfSource`] like the real `perf_event_open` one. Public (hidden
//! from the docs) so that unit and integration tests share one of each; no
//! production path uses them.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use super::clock::Clock;
use super::counters::{PerfCount, PerfEvents, PerfReading, PerfSource};

/// A clock that moves only when a test (or its fake workload) says so; its
/// clones share one time.
#[derive(Debug, Clone, Default)]
pub struct FakeClock(pub Rc<Cell<u64>>);

impl FakeClock {
    /// Moves the time on by `ns`.
    pub fn advance(&self, ns: u64) {
        self.0.set(self.0.get() + ns);
    }
}

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

/// A stand-in perf event: counts only while enabled, and logs every open,
/// enable, disable and close. Time is one ns per event caused while
/// enabled; with `multiplexed` set to k, the event is on the PMU only every
/// k-th ns, so it counts 1 event in k (as a multiplexed hardware counter).
#[derive(Debug, Default)]
pub struct FakePerf {
    pub enabled: AtomicBool,
    pub count: AtomicU64,
    pub enabled_ns: AtomicU64,
    pub running_ns: AtomicU64,
    pub multiplexed: AtomicU64,
    pub log: Mutex<Vec<String>>,
}

impl FakePerf {
    /// What a fake workload calls for each event it causes.
    pub fn add(&self, n: u64) {
        if self.enabled.load(SeqCst) {
            let share = self.multiplexed.load(SeqCst).max(1);
            self.count.fetch_add(n / share, SeqCst);
            self.enabled_ns.fetch_add(n, SeqCst);
            self.running_ns.fetch_add(n / share, SeqCst);
        }
    }

    fn note(&self, what: &str) {
        self.log.lock().unwrap().push(what.into());
    }
}

/// A [`PerfSource`] whose only event, `context_switches`, is the shared
/// [`FakePerf`].
#[derive(Debug, Default)]
pub struct FakeSource(pub Arc<FakePerf>);

/// The fake event open for one counting pass; logs "close" when dropped.
struct FakeEvents(Arc<FakePerf>);

impl PerfSource for FakeSource {
    fn names(&self) -> Vec<&'static str> {
        vec!["context_switches"]
    }

    fn open(&self) -> io::Result<Box<dyn PerfEvents>> {
        self.0.note("open");
        Ok(Box::new(FakeEvents(Arc::clone(&self.0))))
    }
}

impl PerfEvents for FakeEvents {
    fn read(&self) -> PerfReading {
        let count = PerfCount {
            value: self.0.count.load(SeqCst),
            enabled_ns: self.0.enabled_ns.load(SeqCst),
            running_ns: self.0.running_ns.load(SeqCst),
        };
        PerfReading(vec![("context_switches", count)])
    }

    fn set_enabled(&self, enabled: bool) -> io::Result<()> {
        self.0.enabled.store(enabled, SeqCst);
        self.0.note(if enabled { "enable" } else { "disable" });
        Ok(())
    }
}

impl Drop for FakeEvents {
    fn drop(&mut self) {
        self.0.note("close");
    }
}

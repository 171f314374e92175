//! Test stand-ins for the harness's seams: a perf event that a fake workload
//! drives, behind [`PerfSource`] like the real `perf_event_open` one. Compiled
//! for tests only. Left out: a fake clock (each test module moves its own).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use super::counters::{PerfEvents, PerfSource, Reading};

/// A stand-in perf event: counts only while enabled, and logs every open,
/// enable, disable and close.
#[derive(Debug, Default)]
pub struct FakePerf {
    pub enabled: AtomicBool,
    pub count: AtomicU64,
    pub log: Mutex<Vec<String>>,
}

impl FakePerf {
    /// What a fake workload calls for each event it causes.
    pub fn add(&self, n: u64) {
        if self.enabled.load(SeqCst) {
            self.count.fetch_add(n, SeqCst);
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
    fn read(&self) -> Reading {
        Reading(vec![("context_switches", self.0.count.load(SeqCst))])
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

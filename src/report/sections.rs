//! The sections of a run's report, listed once for every renderer: the
//! results table, the latency distributions, the anchors' own layouts and
//! the counters, each a table or a block of preformatted text. The terminal,
//! HTML and Markdown renderers only lay these out. Left out: what is not a
//! per-case result (the run's settings, comparisons, environment, plots),
//! which each renderer shows in its own way.

use super::layout::Body;
use super::{anchors, counters, loads, results, scaling, schbench};
use crate::document::Document;

/// One section of a run's report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// A stable key, as in [`SECTIONS`].
    pub name: &'static str,
    /// The heading of renderers that give sections one (Markdown).
    pub title: &'static str,
    pub body: Body,
}

/// Builds a section's body from a document, or `None` when it has nothing to show.
pub type Build = fn(&Document) -> Option<Body>;

/// The key of the results table, which opens a run's report.
pub const RESULTS: &str = "results";

/// Every section of a run's report, in the order shown. An anchor's layout
/// (see [`anchors`]) is one line here.
#[rustfmt::skip]
pub const SECTIONS: &[(&str, &str, Build)] = &[
    (RESULTS, "Results", results::results),
    ("invocations", "Invocations", results::invocations),
    ("guests", "Guests", results::guests),
    ("will-it-scale", "will-it-scale: scaling over tasks", scaling::section),
    ("lmbench-processor", "lmbench: Processor, Processes", anchors::lmbench_processor),
    ("distributions", "Latency distributions", results::distributions),
    ("lock-prefix", "LOCK prefix", anchors::lock_prefix),
    ("hackbench", "hackbench", anchors::hackbench),
    ("perf-futex", "perf bench futex", anchors::perf_futex),
    ("schbench", "schbench", schbench::schbench),
    ("lmbench-ctx", "lmbench: Context switching", anchors::lmbench_ctx),
    ("lmbench-latencies", "lmbench: Local communication latencies", anchors::lmbench_latencies),
    ("lmbench-bandwidth", "lmbench: Local communication bandwidths", anchors::lmbench_bandwidth),
    ("lmbench-file-vm", "lmbench: File & VM system latencies", anchors::lmbench_file_vm),
    ("lmbench-memory", "lmbench: Memory latencies", anchors::lmbench_memory),
    ("counters", "Counters per op", counters::section),
    ("loads", "Background loads", loads::section),
];

/// The anchors' own layouts: one figure of one case alone per cell, so they
/// never see the series of a task sweep (`--tasks`: per-task figures of N
/// copies at once, which will-it-scale's section shows).
const ANCHOR_LAYOUTS: &[&str] = &[
    "lmbench-processor",
    "lock-prefix",
    "hackbench",
    "perf-futex",
    "lmbench-ctx",
    "lmbench-latencies",
    "lmbench-bandwidth",
    "lmbench-file-vm",
    "lmbench-memory",
];

/// The sections `doc` has, in order.
pub fn of(doc: &Document) -> Vec<Section> {
    let swept = |s: &crate::document::Series| s.params.contains_key("tasks");
    let alone: std::borrow::Cow<Document> = if doc.series.iter().any(swept) {
        let mut d = doc.clone();
        d.series.retain(|s| !swept(s));
        std::borrow::Cow::Owned(d)
    } else {
        std::borrow::Cow::Borrowed(doc)
    };
    SECTIONS
        .iter()
        .filter_map(|&(name, title, build)| {
            let from = if ANCHOR_LAYOUTS.contains(&name) {
                alone.as_ref()
            } else {
                doc
            };
            Some(Section {
                name,
                title,
                body: build(from)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_has_its_tables_and_the_ctx_layout() {
        let names: Vec<&str> = of(&crate::report::fixture())
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names,
            [
                "results",
                "lmbench-processor",
                "distributions",
                "lmbench-ctx",
                "lmbench-latencies"
            ]
        );
    }

    #[test]
    fn guests_are_listed_with_what_their_agents_saw() {
        let mut doc = crate::report::fixture();
        let mut env = doc.env.clone();
        env.kernel = "6.1.0".into();
        env.cpu_model = "UML".into();
        if let Some(v) = env.virtualization.as_mut() {
            v.hypervisor = Some("QEMU (TCG)".into());
        }
        doc.run.guests.push(crate::document::GuestInfo {
            config: "uml".into(),
            boot_s: 1.25,
            version: "0.1.0".into(),
            env,
            configs: Vec::new(),
            accelerator: None,
            init: None,
            boot_parameters: Vec::new(),
        });
        let guests = of(&doc).into_iter().find(|s| s.name == "guests").unwrap();
        let Body::Text(text) = guests.body else {
            panic!("a text section");
        };
        assert!(text.contains("uml: 6.1.0"), "{text}");
        assert!(text.contains("on UML"), "{text}");
        assert!(text.contains("ready in 1.25 s"), "{text}");
        if doc.env.virtualization.is_some() {
            assert!(text.contains("under QEMU (TCG)"), "{text}");
            assert!(text.contains("emulated"), "{text}");
        }
    }

    #[test]
    fn the_anchors_layouts_leave_out_swept_series() {
        let mut doc = crate::report::fixture();
        let names =
            |doc: &Document| -> Vec<&'static str> { of(doc).iter().map(|s| s.name).collect() };
        let before = names(&doc);
        for s in &mut doc.series {
            s.params.insert("tasks".into(), 2.into());
        }
        let after = names(&doc);
        assert!(
            before.contains(&"lmbench-ctx") && !after.contains(&"lmbench-ctx"),
            "{after:?}"
        );
        assert!(
            after.iter().all(|n| !ANCHOR_LAYOUTS.contains(n)),
            "{after:?}"
        );
        assert!(after.contains(&"results"));
        assert!(
            ANCHOR_LAYOUTS
                .iter()
                .all(|a| SECTIONS.iter().any(|(n, _, _)| n == a))
        );
    }

    #[test]
    fn section_keys_are_unique() {
        for (i, (name, _, _)) in SECTIONS.iter().enumerate() {
            assert!(
                SECTIONS[i + 1..].iter().all(|(n, _, _)| n != name),
                "{name}"
            );
        }
    }
}

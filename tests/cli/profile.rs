//! `--profile` on a real run: a planted user-space cause (one configuration
//! runs more steps in a function of their own, `spin:planted=N`) is named
//! by the differential of the two configurations' profiles; the passes
//! leave the timed results alone and the document carries the profiles.

use super::kit::*;
use osbench::document::{Explanation, ProfileOutcome};
use osbench::stats::differential::Presence;

#[test]
fn a_planted_function_is_named_where_the_change_went() {
    let dir = tempfile::tempdir().unwrap();
    let (file, json) = (dir.path().join("e.toml"), dir.path().join("p.json"));
    fs::write(
        &file,
        "select = [\"spin:work=2000\"]\n[[config]]\nname = \"plain\"\n\
         [[config]]\nname = \"planted\"\nparams = { \"spin.planted\" = 2000 }\n",
    )
    .unwrap();
    let out = osbench(shared_store())
        .args([
            "run",
            "--rounds",
            "3",
            "-q",
            "--profile",
            "--profile-passes",
            "5",
        ])
        .args(["--profile-time", "60"])
        .args(QUICK)
        .arg("--experiment")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc = read_document(&json).unwrap();
    let profiles: Vec<&ProfileOutcome> = doc
        .series
        .iter()
        .filter_map(|s| s.profile.as_ref())
        .collect();
    assert_eq!(
        profiles.len(),
        2,
        "each configuration's series has a profile or a reason"
    );
    if let ProfileOutcome::Unavailable(why) = profiles[0] {
        // Not root (nor perf_event_paranoid ≤ 0): the run still succeeded.
        eprintln!("a_planted_function_is_named_where_the_change_went: skipped: {why}");
        assert!(why.contains("perf_event_paranoid"), "{why}");
        return;
    }
    for p in &profiles {
        let ProfileOutcome::Profiled(p) = p else {
            panic!("{p:?}")
        };
        assert_eq!(p.passes.len(), 5);
        assert!(
            p.passes
                .iter()
                .all(|pass| pass.samples > 0 && pass.ops > 0.0)
        );
    }
    let record = &doc.comparisons[0];
    let Some(Explanation::Differential(d)) = &record.explanation else {
        panic!("the record carries the differential: {record:?}");
    };
    let top = &d.rows[0];
    assert!(top.function.ends_with("planted_steps"), "{d:#?}");
    assert_eq!(top.presence, Presence::Appeared);
    assert!(top.significant, "{d:#?}");
    assert!(top.self_time.difference > 0.0);
    // The planted steps double the work: the row accounts for most of it.
    assert!(top.share_of(d.measured_change).unwrap() > 0.5, "{d:#?}");
}

//! LAVA job definitions from an osbench plan, and the plan's results back
//! from a job's log. One job per plan: every boot of the plan's kernels,
//! in the order the worker's boot rounds draw
//! ([`crate::queue::boot_rounds::boot_rounds`], the order recorded in the
//! job's metadata and in each boot), as deploy → boot → test actions on
//! one device, so that the rounds are paired as on one host. Each boot
//! deploys its kernel and osbench's initramfs (`osbench guest-image`) to
//! QEMU, boots with `console=ttyS0`, the kernel's `append` words and an
//! [`super::console::ENV`] word that tells osbench's init what to run, and
//! a `monitors` test action (no shell needed, nothing installed) records
//! the test cases osbench prints; the document itself travels on the
//! console between markers ([`super::console`]).
//!
//! The definition is written as JSON, which is YAML 1.2 and which LAVA's
//! YAML loader reads: no YAML crate is added for output only.
//!
//! Left out: device types other than `qemu` (a board's deploy and boot
//! methods are the lab's own: run `contrib/lava/osbench.yaml` from the
//! lab's job instead), power control and device scheduling (LAVA's).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::console::{self, Found, LabBoot};
use crate::document::Document;
use crate::error::{Error, Result};
use crate::queue::PlanFile;
use crate::queue::boot_rounds::{self, BootRun};
use crate::queue::kernel_jobs::KernelJob;

/// What the plan file does not say: where the lab finds the files, and how long to wait.
#[derive(Debug, Clone)]
pub struct Target {
    /// LAVA's device type (`qemu`).
    pub device_type: String,
    /// The kernel to boot when the plan has no `[kernel]` / `[boot_rounds]` table (a URL or path).
    pub kernel: Option<String>,
    /// osbench's initramfs (`osbench guest-image`), a URL or path.
    pub initramfs: String,
    /// Minutes a boot may take to reach osbench, and a run to finish.
    pub boot_minutes: u64,
    pub run_minutes: u64,
    /// The job's name (default: "osbench" and the plan's id).
    pub name: Option<String>,
}

/// A kernel to boot: its name (configuration), file (URL) and extra words.
#[derive(Debug, Clone)]
struct Kernel {
    name: String,
    url: String,
    append: String,
}

/// A generated job: its definition and the boots it makes, in order.
#[derive(Debug, Clone)]
pub struct Job {
    pub definition: Value,
    pub boots: Vec<LabBoot>,
}

/// Why a plan of configurations is refused.
const ONE_CONFIG: &str = "the plan has configurations ([[config]] tables); a lab boot runs one \
                          configuration: compare kernels with [boot_rounds] instead";

/// The LAVA job that runs `plan` on `target`, its boots ordered from `seed`.
pub fn job(plan: &PlanFile, target: &Target, seed: u64) -> Result<Job> {
    if target.device_type != "qemu" {
        return Err(Error::Lab(format!(
            "device type '{}': osbench lava writes jobs for qemu only; on a board, run \
             contrib/lava/osbench.yaml from the lab's own job (its deploy and boot are the lab's)",
            target.device_type
        )));
    }
    if plan.plan.experiment.is_some() {
        return Err(Error::Lab(ONE_CONFIG.into()));
    }
    let (kernels, rounds) = kernels(plan, target)?;
    let names: Vec<String> = kernels.iter().map(|k| k.name.clone()).collect();
    let schedule = boot_rounds::boot_rounds(&kernels, rounds, seed);
    let argv = plan.plan.argv(None);
    let id = plan_id(&argv, &kernels, rounds, seed);
    let boots: Vec<LabBoot> = schedule
        .iter()
        .enumerate()
        .map(|(step, &(round, kernel))| LabBoot {
            plan: id.clone(),
            step,
            round,
            kernel,
            names: names.clone(),
            rounds,
            seed,
            argv: argv.clone(),
        })
        .collect();
    let actions: Vec<Value> = boots
        .iter()
        .flat_map(|b| actions(b, &kernels[b.kernel], target))
        .collect();
    let per_boot = target.boot_minutes + target.run_minutes + 5;
    let order: Vec<String> = boots.iter().map(|b| b.id()).collect();
    let definition = json!({
        "job_name": target.name.clone().unwrap_or_else(|| format!("osbench {id}")),
        "device_type": target.device_type,
        "visibility": "public",
        "priority": "medium",
        "timeouts": {
            "job": {"minutes": per_boot * boots.len() as u64 + 5},
            "action": {"minutes": per_boot},
            "connection": {"minutes": 2},
        },
        "context": {"arch": "amd64"},
        "metadata": {
            "osbench.plan": id,
            "osbench.seed": seed.to_string(),
            "osbench.kernels": names.join(","),
            "osbench.boots": order.join(" "),
        },
        "actions": actions,
    });
    Ok(Job { definition, boots })
}

/// The kernels of the plan (its boot rounds', its one kernel, or the
/// target's) and the rounds (1 for one kernel).
fn kernels(plan: &PlanFile, target: &Target) -> Result<(Vec<Kernel>, usize)> {
    let job = plan.kernel.clone().map(lab_tables).transpose()?;
    let one = |name: Option<String>, url: Option<String>, append: Option<String>| {
        let url = url.or_else(|| target.kernel.clone()).ok_or_else(|| {
            Error::Lab(
                "no kernel to boot: give --kernel URL, or `kernel = …` in the plan's [kernel] \
                 table"
                    .into(),
            )
        })?;
        Ok::<_, Error>(Kernel {
            name: name.unwrap_or_else(|| "kernel".into()),
            url: url_of(&url),
            append: append.unwrap_or_default(),
        })
    };
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    match job {
        Some(KernelJob {
            boot_rounds: Some(r),
            ..
        }) => {
            let ks = r
                .kernels
                .iter()
                .map(|k| one(Some(k.label()), path(&k.kernel), k.append.clone()))
                .collect::<Result<Vec<_>>>()?;
            Ok((ks, r.rounds))
        }
        Some(KernelJob {
            kernel: Some(k), ..
        }) => Ok((
            vec![one(k.name.clone(), path(&k.kernel), k.append.clone())?],
            1,
        )),
        _ => Ok((vec![one(None, None, None)?], 1)),
    }
}

/// The plan's `[kernel]` / `[boot_rounds]` tables, checked as a lab reads
/// them: kernel files are URLs (or paths the dispatcher reads), so only
/// the tables' shape, the rounds and the kernels' names are checked here
/// (a worker's checks of files on its host do not apply).
fn lab_tables(tables: Value) -> Result<KernelJob> {
    let bad = |why: String| Error::Lab(format!("the plan's [kernel] / [boot_rounds]: {why}"));
    let job: KernelJob = serde_json::from_value(tables).map_err(|e| bad(e.to_string()))?;
    match (&job.kernel, &job.boot_rounds) {
        (Some(_), None) => Ok(job),
        (None, Some(r)) => {
            let names = r.names();
            let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
            if r.kernels.len() < 2 || distinct.len() != names.len() {
                return Err(bad(
                    "boot rounds compare two kernels or more, each with its own \
                                `name`"
                        .into(),
                ));
            }
            if let Some(n) = names
                .iter()
                .find(|n| n.is_empty() || n.contains(char::is_whitespace))
            {
                return Err(bad(format!(
                    "'{n}' is not a kernel's name (non-empty, no spaces)"
                )));
            }
            if !(2..=crate::stats::paired::MOST_ROUNDS).contains(&r.rounds) {
                return Err(bad(format!(
                    "rounds = {}; the paired comparison needs from 2 to {}",
                    r.rounds,
                    crate::stats::paired::MOST_ROUNDS
                )));
            }
            Ok(job)
        }
        _ => Err(bad(
            "give [kernel] (one kernel) or [boot_rounds], not both or neither".into(),
        )),
    }
}

/// A URL as given, or a path as a `file://` URL (LAVA's dispatcher reads those).
fn url_of(s: &str) -> String {
    if s.contains("://") {
        s.to_string()
    } else {
        let path = std::path::absolute(s).unwrap_or_else(|_| s.into());
        format!("file://{}", path.display())
    }
}

/// The plan's id: a digest of what it runs, on which kernels, in which order.
fn plan_id(argv: &[String], kernels: &[Kernel], rounds: usize, seed: u64) -> String {
    let mut h = Sha256::new();
    for w in argv {
        h.update(w.as_bytes());
        h.update([0]);
    }
    for k in kernels {
        h.update(format!("{}\0{}\0{}\0", k.name, k.url, k.append).as_bytes());
    }
    h.update(format!("{rounds}\0{seed}").as_bytes());
    let hash = h.finalize();
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("osb{hex}")
}

/// Deploy, boot and test of one boot.
fn actions(boot: &LabBoot, kernel: &Kernel, target: &Target) -> [Value; 3] {
    let append = format!(
        "{} {} {}={}",
        crate::guest::qemu::OWN_APPEND,
        kernel.append,
        console::ENV,
        boot.encode()
    );
    let append = append.split_whitespace().collect::<Vec<_>>().join(" ");
    let id = boot.id();
    [
        json!({"deploy": {
            "to": "tmpfs",
            "timeout": {"minutes": 5},
            "images": {
                "kernel": {"image_arg": format!("-kernel {{kernel}} -append \"{append}\""),
                           "url": kernel.url},
                "initrd": {"image_arg": "-initrd {initrd}", "url": url_of(&target.initramfs)},
            },
        }}),
        json!({"boot": {
            "method": "qemu",
            "media": "tmpfs",
            "timeout": {"minutes": target.boot_minutes},
        }}),
        json!({"test": {
            "timeout": {"minutes": target.run_minutes},
            "monitors": [{
                "name": format!("osbench-{}", boot.step + 1),
                "start": format!("OSBENCH-LAVA-START {id}"),
                "end": format!("OSBENCH-LAVA-END {id}"),
                "pattern": "OSBENCH-CASE (?P<test_case_id>[-_a-zA-Z0-9.]+) (?P<result>pass|fail) \
                            (?P<measurement>[-+0-9.eE]+) (?P<units>[a-z]+)",
            }],
        }}),
    ]
}

/// One boot's document, with what `import` stores it under.
#[derive(Debug, Clone)]
pub struct BootDocument {
    pub boot: LabBoot,
    pub text: String,
    pub document: Document,
}

/// What a job's log gave: each boot's document, the boots that are missing
/// (and why), and the merged document of a kernel A/B.
#[derive(Debug)]
pub struct Results {
    pub documents: Vec<BootDocument>,
    pub missing: Vec<(String, String)>,
    pub merged: Option<Document>,
    /// Why there is no merged document though kernels were compared.
    pub unmerged: Option<String>,
}

/// The results of the boots `found` in a log: every boot of the plan is
/// either a document or missing with a reason (a boot the log never
/// reached is "never started"); boot rounds are merged as the worker
/// merges them.
pub fn results(found: Vec<Found>) -> Result<Results> {
    let Some(first) = found.first().map(|f| f.boot.clone()) else {
        return Err(Error::Lab(
            "the log holds no osbench boot: the job never reached osbench (cancelled, timed \
             out in boot, or a device that never came up); look at the job's log, then run \
             it again"
                .into(),
        ));
    };
    let schedule = boot_rounds::boot_rounds(&first.names, first.rounds, first.seed);
    let mut documents = Vec::new();
    let mut missing = Vec::new();
    for (step, &(round, kernel)) in schedule.iter().enumerate() {
        let expected = LabBoot {
            step,
            round,
            kernel,
            ..first.clone()
        };
        let said = found.iter().find(|f| f.boot.id() == expected.id());
        let doc = match said.map(|f| &f.document) {
            None => Err(
                "never started: the job was cancelled, timed out in boot, or the \
                         device never returned before this boot"
                    .to_string(),
            ),
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(text)) => crate::store::parse_document(text, &expected.id())
                .map(|d| (text.clone(), d))
                .map_err(|e| e.to_string()),
        };
        match doc {
            Ok((text, document)) => documents.push(BootDocument {
                boot: expected,
                text,
                document,
            }),
            Err(why) => missing.push((expected.id(), why)),
        }
    }
    let (merged, unmerged) = merge(&first, &documents);
    Ok(Results {
        documents,
        missing,
        merged,
        unmerged,
    })
}

/// The merged document of a kernel A/B (none for one kernel), or why not.
fn merge(first: &LabBoot, documents: &[BootDocument]) -> (Option<Document>, Option<String>) {
    if first.names.len() < 2 {
        return (None, None);
    }
    let runs = documents
        .iter()
        .map(|d| BootRun {
            round: d.boot.round,
            kernel: d.boot.kernel,
            document: d.document.clone(),
        })
        .collect();
    // As the worker's boot rounds: merged, then the paired comparison attached.
    let options = crate::compare::Options {
        seed: first.seed,
        ..Default::default()
    };
    let merged = boot_rounds::merge(&first.names, runs, first.seed).and_then(|mut doc| {
        crate::envelope::attach_comparison(&mut doc, &|d| crate::compare::paired(d, options))?;
        Ok(doc)
    });
    match merged {
        Ok(doc) => (Some(doc), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The meta keys a lab run is stored under: its boot's id, and for a
/// merged document the plan and the boots it merged.
pub const BOOT_META: &str = "lava_boot";
pub const MERGE_META: &str = "lava_merge";

/// What [`keep`] did with one document: stored (new) or found stored already.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The boot's id, or the merged document's `lava_merge` value.
    pub what: String,
    pub inserted: crate::store::Inserted,
}

/// Stores the results' documents (each boot's, then the merged one), each
/// under its meta key: a document whose key a stored run has already (a
/// job imported twice, or resubmitted and run again) is not stored again.
/// All in one transaction.
pub fn keep(db: &mut crate::store::Store, results: &Results) -> Result<Vec<Kept>> {
    let mut docs: Vec<(String, (&str, String), Document)> = Vec::new();
    for d in &results.documents {
        let mut doc = d.document.clone();
        doc.run.meta.insert(BOOT_META.into(), d.boot.id());
        docs.push((d.boot.id(), (BOOT_META, d.boot.id()), doc));
    }
    if let (Some(doc), Some(first)) = (&results.merged, results.documents.first()) {
        let steps: Vec<String> = results
            .documents
            .iter()
            .map(|d| (d.boot.step + 1).to_string())
            .collect();
        let value = format!("{}/boots={}", first.boot.plan, steps.join(","));
        let mut doc = doc.clone();
        doc.run.meta.insert(MERGE_META.into(), value.clone());
        docs.push((value.clone(), (MERGE_META, value), doc));
    }
    let mut kept = Vec::new();
    let mut new = Vec::new();
    for (what, (key, value), doc) in docs {
        let filter = crate::store::Filter {
            meta: vec![(key.to_string(), value)],
            ..Default::default()
        };
        match db.list(&filter)?.first() {
            Some(row) => kept.push(Kept {
                what,
                inserted: crate::store::Inserted::Existing(row.id),
            }),
            None => {
                let text = serde_json::to_string(&doc).expect("a document always serialises");
                new.push((what, doc, text));
            }
        }
    }
    let stored = db.import_all(new.iter().map(|(_, d, t)| (d, t.as_str())))?;
    kept.extend(
        new.into_iter()
            .zip(stored)
            .map(|((what, _, _), inserted)| Kept { what, inserted }),
    );
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            device_type: "qemu".into(),
            kernel: Some("/k/vmlinuz".into()),
            initramfs: "https://lab.example/osbench.cpio".into(),
            boot_minutes: 3,
            run_minutes: 10,
            name: None,
        }
    }

    const AB: &str = r#"
select = ["syscall"]
args = ["--samples", "3"]
[boot_rounds]
rounds = 3
[[boot_rounds.kernel]]
name = "base"
kernel = "/k/vmlinuz-a"
[[boot_rounds.kernel]]
name = "patched"
kernel = "/k/vmlinuz-b"
append = "mitigations=off"
"#;

    #[test]
    fn a_kernel_ab_is_one_job_of_interleaved_boots_in_the_worker_s_order() {
        let plan = crate::queue::parse_plan_file(AB, "ab.toml").unwrap();
        let job = job(&plan, &target(), 42).unwrap();
        let order: Vec<(usize, usize)> = job.boots.iter().map(|b| (b.round, b.kernel)).collect();
        let names = ["base".to_string(), "patched".to_string()];
        assert_eq!(order, boot_rounds::boot_rounds(&names, 3, 42));
        let actions = job.definition["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 3 * 6);
        for (b, step) in job.boots.iter().zip(actions.chunks(3)) {
            let kernel = &step[0]["deploy"]["images"]["kernel"];
            let want = ["file:///k/vmlinuz-a", "file:///k/vmlinuz-b"][b.kernel];
            assert_eq!(kernel["url"], want);
            let arg = kernel["image_arg"].as_str().unwrap();
            assert!(
                arg.contains(&format!("osbench_lava={}", b.encode())),
                "{arg}"
            );
            assert_eq!(arg.contains("mitigations=off"), b.kernel == 1, "{arg}");
            assert_eq!(step[1]["boot"]["method"], "qemu");
            let monitor = &step[2]["test"]["monitors"][0];
            assert_eq!(monitor["end"], format!("OSBENCH-LAVA-END {}", b.id()));
        }
        let meta = &job.definition["metadata"];
        assert_eq!(meta["osbench.kernels"], "base,patched");
        assert_eq!(b_args(&job.boots[0]), ["run", "syscall", "--samples", "3"]);
    }

    fn b_args(b: &LabBoot) -> Vec<&str> {
        b.argv.iter().map(String::as_str).collect()
    }

    #[test]
    fn kernels_may_be_urls_and_bad_rounds_are_refused() {
        let urls = AB.replace("/k/vmlinuz-a", "https://lab.example/vmlinuz-a");
        let plan = crate::queue::parse_plan_file(&urls, "ab.toml").unwrap();
        let job = job(&plan, &target(), 1).unwrap();
        let deploy = &job.definition["actions"][0]["deploy"]["images"]["kernel"]["url"];
        assert!(deploy.as_str().unwrap().contains("vmlinuz-"), "{deploy}");
        let urls = urls.replace("rounds = 3", "rounds = 1");
        let plan = crate::queue::parse_plan_file(&urls, "ab.toml").unwrap();
        let e = super::job(&plan, &target(), 1).unwrap_err().to_string();
        assert!(e.contains("rounds = 1"), "{e}");
    }

    #[test]
    fn boards_and_kernel_less_plans_are_refused_with_what_to_do() {
        let plan = crate::queue::parse_plan_file("select = [\"syscall\"]\n", "p.toml").unwrap();
        let board = Target {
            device_type: "beaglebone-black".into(),
            ..target()
        };
        let e = job(&plan, &board, 1).unwrap_err().to_string();
        assert!(e.contains("contrib/lava/osbench.yaml"), "{e}");
        let bare = Target {
            kernel: None,
            ..target()
        };
        let e = job(&plan, &bare, 1).unwrap_err().to_string();
        assert!(e.contains("--kernel"), "{e}");
        let one = job(&plan, &target(), 1).unwrap();
        assert_eq!(one.boots.len(), 1);
    }

    #[test]
    fn a_log_without_boots_says_the_job_never_reached_osbench() {
        let e = results(Vec::new()).unwrap_err().to_string();
        assert!(e.contains("never reached osbench"), "{e}");
    }
}

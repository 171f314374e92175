//! Selectors (`BENCH` or `BENCH:key=value[,key=value...]`) and their
//! resolution into cases.
//!
//! Rule: `BENCH` runs the family's default cases. Each `key=value` keeps the
//! default cases that agree with it — those that do not set `key`, or set it
//! to `value` — with `key=value` applied; if no default case agrees, the
//! selector names one case: the parameter defaults with the given values.
//! So `ctx:procs=8` runs lmbench's two 8-process columns, `ctx:procs=4` the one
//! case 4p/0K, `ctx:mode=threads` all seven columns with threads, and
//! `ipc:bytes=64` every kind whose default size is not fixed (not udp).
//! No selector means the quick [`DEFAULT_SUITE`]; the selector `all` means
//! every family's default cases.

use std::str::FromStr;

use crate::bench::{BenchDef, Params, REGISTRY, find};
use crate::error::{Error, Result};

/// The quick representative suite `osbench run` runs with no selector: one
/// case of each kind of primitive (lmbench's null call, its 2-process context
/// switches with and without a working set, a pipe round trip, fork,
/// anonymous page faults, hackbench's default load, a futex wake-up).
pub const DEFAULT_SUITE: &[&str] = &[
    "syscall:case=null",
    "ctx:procs=2,size=0",
    "ctx:procs=2,size=16",
    "ipc:kind=pipe",
    "proc:case=fork",
    "fault:case=anon",
    "messaging:groups=10",
    "wakeup:wait=futex",
];

/// Cases of the quick suite that take fewer samples than the policy's when
/// `--samples` is not given: one sample of hackbench's default load is a
/// whole run of half a second to a second here, and six keep an interval
/// of the median (its extremes cover it with 97 %) while the suite stays
/// near its 15 s.
pub const QUICK_SUITE_SAMPLES: &[(&str, usize)] = &[("messaging:groups=10", 6)];

/// The selector that runs every default case of every family.
pub const ALL: &str = "all";

/// A parsed, not yet validated selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub bench: String,
    pub fixed: Vec<(String, String)>,
}

impl FromStr for Selector {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::BadSelector {
            selector: s.to_string(),
            why: why.to_string(),
        };
        let (bench, rest) = match s.split_once(':') {
            Some((b, r)) => (b, Some(r)),
            None => (s, None),
        };
        if bench.is_empty() {
            return Err(bad("no benchmark name"));
        }
        let mut fixed: Vec<(String, String)> = Vec::new();
        if let Some(rest) = rest {
            if rest.is_empty() {
                return Err(bad("nothing after ':'"));
            }
            for pair in rest.split(',') {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| bad(&format!("'{pair}' is not key=value")))?;
                if k.is_empty() || v.is_empty() {
                    return Err(bad(&format!("'{pair}' has an empty key or value")));
                }
                if fixed.iter().any(|(seen, _)| seen == k) {
                    return Err(bad(&format!("parameter '{k}' given twice")));
                }
                fixed.push((k.to_string(), v.to_string()));
            }
        }
        Ok(Self {
            bench: bench.to_string(),
            fixed,
        })
    }
}

/// One case to run.
#[derive(Debug, Clone)]
pub struct Case {
    pub def: &'static BenchDef,
    pub params: Params,
    /// Samples for this case instead of the policy's (the quick suite's
    /// [`QUICK_SUITE_SAMPLES`]); only whole-run cases use it.
    pub samples: Option<usize>,
}

impl Case {
    /// A case taking the policy's samples.
    pub fn new(def: &'static BenchDef, params: Params) -> Self {
        Case {
            def,
            params,
            samples: None,
        }
    }

    pub fn name(&self) -> String {
        (self.def.case_name)(&self.params)
    }

    /// The selector that names exactly this case (`bench:k=v,…` with every
    /// parameter), as the agent protocol sends it; [`resolve`] reads it back.
    pub fn selector(&self) -> String {
        let params = self.params.to_string();
        if params.is_empty() {
            self.def.name.to_string()
        } else {
            format!("{}:{params}", self.def.name)
        }
    }
}

/// Validates the selectors and expands them into cases, in order, without
/// duplicates. No selectors means the [`DEFAULT_SUITE`]; [`ALL`] means every
/// family's default cases.
pub fn resolve(selectors: &[Selector]) -> Result<Vec<Case>> {
    // The quick suite: its selectors, each with its samples if it has its own.
    let quick: Vec<(Selector, Option<usize>)> = DEFAULT_SUITE
        .iter()
        .map(|s| {
            let samples = QUICK_SUITE_SAMPLES.iter().find(|(q, _)| q == s);
            let sel = s.parse().expect("the default suite's selectors are valid");
            (sel, samples.map(|&(_, n)| n))
        })
        .collect();
    let given: Vec<(Selector, Option<usize>)>;
    let selectors = if selectors.is_empty() {
        &quick
    } else {
        given = selectors.iter().map(|s| (s.clone(), None)).collect();
        &given
    };
    let mut cases: Vec<Case> = Vec::new();
    for (sel, samples) in selectors {
        for case in expand(sel)? {
            if !cases
                .iter()
                .any(|c| c.def.name == case.def.name && c.params == case.params)
            {
                cases.push(Case {
                    samples: *samples,
                    ..case
                });
            }
        }
    }
    Ok(cases)
}

/// Whether the case with `params` of `def` is in the default suite.
pub fn in_default_suite(def: &BenchDef, params: &Params) -> bool {
    resolve(&[])
        .expect("the default suite resolves")
        .iter()
        .any(|c| c.def.name == def.name && c.params == *params)
}

fn expand(sel: &Selector) -> Result<Vec<Case>> {
    if sel.bench == ALL {
        if !sel.fixed.is_empty() {
            let fixed: Vec<String> = sel.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
            return Err(Error::BadSelector {
                selector: format!("{ALL}:{}", fixed.join(",")),
                why: format!("'{ALL}' takes no parameters"),
            });
        }
        return REGISTRY
            .iter()
            .map(|d| {
                expand(&Selector {
                    bench: d.name.to_string(),
                    fixed: vec![],
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect());
    }
    let def = find(&sel.bench).ok_or_else(|| Error::UnknownBench {
        name: sel.bench.clone(),
        valid: REGISTRY
            .iter()
            .map(|d| d.name)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    for (key, value) in &sel.fixed {
        let spec =
            def.params
                .iter()
                .find(|p| p.name == key)
                .ok_or_else(|| Error::UnknownParam {
                    bench: def.name.to_string(),
                    key: key.clone(),
                    valid: def
                        .params
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        if !spec.accepts(value) {
            return Err(Error::BadValue {
                bench: def.name.to_string(),
                key: key.clone(),
                value: value.clone(),
                allowed: spec.allowed(),
            });
        }
    }
    let given: Vec<(&str, &str)> = sel
        .fixed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let agrees = |base: &[(&str, &str)]| {
        given
            .iter()
            .all(|(k, v)| base.iter().all(|(bk, bv)| bk != k || bv == v))
    };
    let mut out: Vec<Case> = Vec::new();
    for base in def.default_cases().into_iter().filter(|b| agrees(b)) {
        let mut fixed: Vec<(&str, &str)> = base;
        fixed.extend(given.iter().copied());
        let params = Params::new(def, &fixed);
        if !out.iter().any(|c| c.params == params) {
            out.push(Case::new(def, params));
        }
    }
    if out.is_empty() {
        out.push(Case::new(def, Params::new(def, &given)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> Selector {
        s.parse().unwrap()
    }

    #[test]
    fn every_case_is_named_exactly_by_its_selector() {
        for case in resolve(&[sel("all")]).unwrap() {
            let again = resolve(&[sel(&case.selector())]).unwrap();
            assert_eq!(again.len(), 1, "{}", case.selector());
            assert_eq!(again[0].params, case.params);
            assert!(std::ptr::eq(again[0].def, case.def));
        }
    }

    #[test]
    fn parses_plain_and_parameterised_selectors() {
        assert_eq!(
            sel("syscall"),
            Selector {
                bench: "syscall".into(),
                fixed: vec![]
            }
        );
        assert_eq!(
            sel("ctx:procs=2,size=16"),
            Selector {
                bench: "ctx".into(),
                fixed: vec![("procs".into(), "2".into()), ("size".into(), "16".into())]
            }
        );
    }

    #[test]
    fn rejects_malformed_selectors() {
        for bad in [
            "",
            ":case=null",
            "syscall:",
            "syscall:case",
            "syscall:=x",
            "syscall:case=",
            "a:k=1,k=2",
        ] {
            assert!(
                matches!(bad.parse::<Selector>(), Err(Error::BadSelector { .. })),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn a_family_and_all_expand_to_every_default_case() {
        let names: Vec<String> = resolve(&[sel("syscall")])
            .unwrap()
            .iter()
            .map(Case::name)
            .collect();
        assert_eq!(names, ["null", "read", "write", "stat", "fstat", "open"]);
        let every: usize = REGISTRY.iter().map(|d| d.default_cases().len()).sum();
        assert_eq!(resolve(&[sel("all")]).unwrap().len(), every);
        assert!(matches!(
            resolve(&[sel("all:case=null")]),
            Err(Error::BadSelector { .. })
        ));
    }

    #[test]
    fn no_selector_is_the_quick_default_suite() {
        let cases: Vec<String> = resolve(&[])
            .unwrap()
            .iter()
            .map(|c| format!("{} {}", c.def.name, c.name()))
            .collect();
        assert_eq!(
            cases,
            [
                "syscall null",
                "ctx 2p/0K",
                "ctx 2p/16K",
                "ipc pipe",
                "proc fork",
                "fault anon/2048p",
                "messaging g10/socket/processes",
                "wakeup futex/threads"
            ]
        );
        // The quick suite's hackbench takes its own, smaller sample count; named, it does not.
        let samples: Vec<Option<usize>> = resolve(&[]).unwrap().iter().map(|c| c.samples).collect();
        assert_eq!(samples, [None, None, None, None, None, None, Some(6), None]);
        let named = resolve(&[sel("messaging:groups=10")]).unwrap().remove(0);
        assert_eq!(named.samples, None);
        let fork = resolve(&[sel("proc:case=fork")]).unwrap().remove(0);
        assert!(in_default_suite(fork.def, &fork.params));
        let exec = resolve(&[sel("proc:case=exec")]).unwrap().remove(0);
        assert!(!in_default_suite(exec.def, &exec.params));
    }

    fn names(selectors: &[&str]) -> Vec<String> {
        let sels: Vec<Selector> = selectors.iter().map(|s| sel(s)).collect();
        resolve(&sels).unwrap().iter().map(Case::name).collect()
    }

    #[test]
    fn a_fixed_value_keeps_the_default_cases_that_agree() {
        assert_eq!(names(&["ctx:procs=8"]), ["8p/16K", "8p/64K"]);
        assert_eq!(names(&["ctx:size=16"]), ["2p/16K", "8p/16K", "16p/16K"]);
        assert_eq!(names(&["ctx:mode=threads"]).len(), 7);
        assert_eq!(names(&["ipc:kind=unix"]), ["unix"]);
        assert_eq!(
            names(&["ipc:bytes=64"]),
            ["pipe/64B", "unix/64B", "tcp/64B"]
        );
    }

    #[test]
    fn a_value_no_default_case_has_names_one_case() {
        assert_eq!(names(&["ctx:procs=4"]), ["4p/0K"]);
        assert_eq!(names(&["ctx:procs=3,mode=threads"]), ["3t/0K"]);
        assert_eq!(names(&["ctx:procs=2,size=0"]), ["2p/0K"]);
        assert_eq!(names(&["ipc:kind=udp,bytes=1"]), ["udp/1B"]);
    }

    #[test]
    fn fixing_a_parameter_collapses_duplicates() {
        let cases = resolve(&[
            sel("syscall:case=null"),
            sel("syscall:case=null"),
            sel("syscall:case=open"),
        ])
        .unwrap();
        let names: Vec<String> = cases.iter().map(Case::name).collect();
        assert_eq!(names, ["null", "open"]);
    }

    #[test]
    fn errors_name_the_problem_and_the_choices() {
        let e = resolve(&[sel("nosuch")]).unwrap_err().to_string();
        assert!(e.contains("'nosuch'") && e.contains("syscall"), "{e}");
        let e = resolve(&[sel("syscall:case=bogus")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'bogus'") && e.contains("null, read, write, stat, fstat, open"),
            "{e}"
        );
        let e = resolve(&[sel("syscall:foo=1")]).unwrap_err().to_string();
        assert!(e.contains("'foo'") && e.contains("case"), "{e}");
    }
}

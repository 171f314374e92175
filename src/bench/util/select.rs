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

use crate::bench::{BenchDef, ParamKind, Params, REGISTRY, find};
use crate::error::{Error, Result};
use crate::measure::copies::{Copies, Mode, Place, parse_ladder};

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

    /// `BENCH`, `BENCH:key=value[,…]`, or a case as osbench prints it:
    /// `BENCH:CASE` or `BENCH CASE` (`syscall:null`, `ctx 2p/0K`), with or
    /// without a configuration tag (`syscall:null [a]`, which [`config_tag`]
    /// reads; a selector names the case in every configuration).
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::BadSelector {
            selector: s.to_string(),
            why: why.to_string(),
        };
        let (untagged, _) = config_tag(s);
        let (bench, rest) = match untagged.split_once(':') {
            Some((b, r)) => (b, Some(r)),
            None => match untagged.split_once(' ') {
                Some((b, r)) => (b, Some(r)),
                None => (untagged, None),
            },
        };
        if bench.is_empty() {
            return Err(bad("no benchmark name"));
        }
        let mut fixed: Vec<(String, String)> = Vec::new();
        if let Some(rest) = rest {
            if rest.is_empty() {
                return Err(bad("nothing after ':'"));
            }
            if rest.split(',').any(|pair| !pair.contains('=')) {
                return printed_case(bench, rest).ok_or_else(|| bad(&not_a_case(bench, rest)));
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

/// `text` without its trailing configuration tag (`syscall:null [a]` →
/// `syscall:null`, `Some("a")`), as tables print a case of a configuration.
pub fn config_tag(text: &str) -> (&str, Option<&str>) {
    let text = text.trim();
    match text.strip_suffix(']').and_then(|t| t.rsplit_once(" [")) {
        Some((case, tag)) if !tag.is_empty() => (case.trim_end(), Some(tag)),
        _ => (text, None),
    }
}

/// The selector of the case of family `bench` printed as `name`.
fn printed_case(bench: &str, name: &str) -> Option<Selector> {
    let def = find(bench)?;
    // A swept case's name ends in its copies (`null@2p`).
    let (name, copies) = match name.rsplit_once('@') {
        Some((n, suffix)) => (n, Some(Copies::from_suffix(suffix)?)),
        None => (name, None),
    };
    let params = named_case(def, name)?;
    let mut fixed: Vec<(String, String)> = def
        .params
        .iter()
        .map(|p| (p.name.to_string(), params.get(p.name).to_string()))
        .collect();
    if let Some(c) = copies {
        fixed.extend(copies_keys(&c));
    }
    Some(Selector {
        bench: bench.to_string(),
        fixed,
    })
}

/// The selector keys of `copies`, as pairs.
fn copies_keys(copies: &Copies) -> Vec<(String, String)> {
    vec![
        (TASKS_KEYS[0].into(), copies.n.to_string()),
        (TASKS_KEYS[1].into(), copies.mode.as_str().into()),
        (TASKS_KEYS[2].into(), copies.place.as_str().into()),
    ]
}

/// Selector keys that every family takes: the task count of a sweep
/// (`tasks=2`, or a range `tasks=1..4`: one case per count), whether the
/// copies are processes or threads, and how they are placed
/// (`measure::copies`). No family has parameters of these names.
pub const TASKS_KEYS: [&str; 3] = ["tasks", "tasks_mode", "tasks_place"];

/// A selector's copies (`None`: unswept) and its family's own parameters.
type SplitCopies<'a> = (Vec<Option<Copies>>, Vec<&'a (String, String)>);

/// The copies a selector's `fixed` asks for (one per count of its range),
/// and the family's own parameters left.
fn split_copies<'a>(sel: &'a Selector, def: &BenchDef) -> Result<SplitCopies<'a>> {
    let (ours, theirs): (Vec<_>, Vec<_>) = sel
        .fixed
        .iter()
        .partition(|(k, _)| TASKS_KEYS.contains(&k.as_str()));
    if ours.is_empty() {
        return Ok((vec![None], theirs));
    }
    let get = |key: &str| ours.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let bad = |key: &str, value: &str, allowed: &str| Error::BadValue {
        bench: def.name.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
        mean: None,
    };
    let ladder = match get("tasks") {
        Some(t) => {
            parse_ladder(t).map_err(|_| bad("tasks", t, "a task count or a range such as 1..4"))?
        }
        None => vec![1],
    };
    let mode: Mode = match get("tasks_mode") {
        Some(m) => m
            .parse()
            .map_err(|_| bad("tasks_mode", m, "processes, threads"))?,
        None => Mode::Processes,
    };
    let place: Place = match get("tasks_place") {
        Some(p) => p
            .parse()
            .map_err(|_| bad("tasks_place", p, "spread, packed"))?,
        None => Place::Spread,
    };
    let copies = ladder
        .into_iter()
        .map(|n| Some(Copies { n, mode, place }))
        .collect();
    Ok((copies, theirs))
}

/// Why `rest` names no case of `bench`, and what does.
fn not_a_case(bench: &str, rest: &str) -> String {
    let Some(def) = find(bench) else {
        let mean = bench_meant(bench).map_or(String::new(), |m| format!(" (did you mean '{m}'?)"));
        return format!("'{bench}' is no benchmark{mean}, and '{rest}' is not key=value");
    };
    let names: Vec<String> = def
        .default_cases()
        .iter()
        .map(|fixed| (def.case_name)(&Params::new(def, fixed)))
        .collect();
    let mean = closest(rest, names.iter().map(String::as_str))
        .map_or(String::new(), |m| format!(": did you mean '{bench}:{m}'?"));
    format!(
        "'{rest}' is neither key=value nor a case name of {bench}{mean} (its default cases: {}; \
         `osbench list {bench}` shows its parameters)",
        names.join(", ")
    )
}

/// What other tools call osbench's benchmarks (the names in the registry's
/// summaries: lmbench's `lat_*` and `bw_*` programs, hackbench, cyclictest,
/// rt-tests' sigwaittest, will-it-scale's tlb_flush2), for "did you mean".
pub const OTHER_NAMES: &[(&str, &str)] = &[
    ("hackbench", "messaging"),
    ("cyclictest", "timer"),
    ("sigwaittest", "sigqueue"),
    ("tlb_flush2", "tlb"),
    ("lat_syscall", "syscall"),
    ("lat_ctx", "ctx"),
    ("lat_pipe", "ipc"),
    ("lat_unix", "ipc"),
    ("lat_tcp", "ipc"),
    ("lat_udp", "ipc"),
    ("lat_proc", "proc"),
    ("lat_sig", "signal"),
    ("lat_pagefault", "fault"),
    ("lat_mmap", "mmap"),
    ("lat_select", "poll"),
    ("lat_connect", "connect"),
    ("lat_unix_connect", "connect"),
    ("lat_fs", "fs"),
    ("bw_pipe", "stream"),
    ("bw_unix", "stream"),
    ("bw_tcp", "stream"),
    ("bw_file_rd", "file"),
    ("bw_mmap_rd", "file"),
    ("bw_mem", "membw"),
    ("lat_mem_rd", "memlat"),
];

/// The benchmark `name` most likely meant: the one another tool calls
/// `name` ([`OTHER_NAMES`]), else the nearest name ([`closest`]), `all` included.
pub fn bench_meant(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    OTHER_NAMES
        .iter()
        .find(|(other, _)| *other == lower)
        .map(|&(_, ours)| ours)
        .or_else(|| closest(name, REGISTRY.iter().map(|d| d.name).chain([ALL])))
}

/// The candidate nearest to `word`, if one is near: the first at the least
/// Damerau–Levenshtein distance (case ignored) when that distance is at most
/// a third of `word`'s length (at least 1), else the only candidate that
/// `word` (3 characters or more) begins. `None` when nothing is near, so a
/// word unlike every name gets the list alone.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    let length = word.chars().count();
    let most = (length / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    let mut begun: Vec<&str> = Vec::new();
    for candidate in candidates {
        let lower = candidate.to_lowercase();
        let distance = strsim::damerau_levenshtein(&word, &lower);
        if distance <= most && best.is_none_or(|(least, _)| distance < least) {
            best = Some((distance, candidate));
        }
        if length >= 3 && lower.starts_with(&word) && !begun.contains(&candidate) {
            begun.push(candidate);
        }
    }
    best.map(|(_, c)| c)
        .or_else(|| (begun.len() == 1).then(|| begun[0]))
}

/// Candidate cases tried when reading a printed name: at most this many.
const MAX_CANDIDATES: usize = 100_000;

/// The case of `def` whose printed name is `name`: a default case if one
/// has it, else the case with the fewest parameters off their defaults among
/// those built from each parameter's default, its default cases' values,
/// every word of a choice, and the integers written in `name` (`4p/0K`:
/// 4 and 0).
fn named_case(def: &BenchDef, name: &str) -> Option<Params> {
    let named = |p: &Params| (def.case_name)(p) == name;
    if let Some(p) = def
        .default_cases()
        .iter()
        .map(|fixed| Params::new(def, fixed))
        .find(named)
    {
        return Some(p);
    }
    let numbers: Vec<String> = name
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.trim_start_matches('0').to_string())
        .map(|t| if t.is_empty() { "0".to_string() } else { t })
        .collect();
    let defaults = def.default_cases();
    let values: Vec<Vec<&str>> = def
        .params
        .iter()
        .map(|spec| {
            let mut v: Vec<&str> = vec![spec.default];
            v.extend(
                defaults
                    .iter()
                    .flatten()
                    .filter(|(k, _)| *k == spec.name)
                    .map(|(_, v)| *v),
            );
            match spec.kind {
                ParamKind::Choice(words) => v.extend(words.iter().copied()),
                ParamKind::IntOr { word, .. } => {
                    v.push(word);
                    v.extend(numbers.iter().map(String::as_str));
                }
                ParamKind::CountOrAll { .. } => {
                    v.push("all");
                    v.extend(numbers.iter().map(String::as_str));
                }
                _ => v.extend(numbers.iter().map(String::as_str)),
            }
            let mut unique: Vec<&str> = Vec::new();
            for value in v {
                if spec.accepts(value) && !unique.contains(&value) {
                    unique.push(value);
                }
            }
            unique
        })
        .collect();
    let mut best: Option<(usize, Params)> = None;
    let mut index = vec![0usize; values.len()];
    for _ in 0..MAX_CANDIDATES {
        let fixed: Vec<(&str, &str)> = def
            .params
            .iter()
            .zip(values.iter().zip(&index))
            .map(|(spec, (v, &i))| (spec.name, v[i]))
            .collect();
        let off = index.iter().filter(|&&i| i > 0).count();
        let params = Params::new(def, &fixed);
        if best.as_ref().is_none_or(|(o, _)| off < *o) && named(&params) {
            best = Some((off, params));
        }
        if !advance(&mut index, &values) {
            break;
        }
    }
    best.map(|(_, p)| p)
}

/// The next combination of indices into `values` (odometer order); false after the last.
fn advance(index: &mut [usize], values: &[Vec<&str>]) -> bool {
    for (i, v) in index.iter_mut().zip(values) {
        *i += 1;
        if *i < v.len() {
            return true;
        }
        *i = 0;
    }
    false
}

#[derive(Debug, Clone)]
pub struct Case {
    pub def: &'static BenchDef,
    pub params: Params,
    /// Samples for this case instead of the policy's (the quick suite's
    /// [`QUICK_SUITE_SAMPLES`]); only whole-run cases use it.
    pub samples: Option<usize>,
    /// Run as this many copies at once (`--tasks`, [`TASKS_KEYS`]); `None`: alone.
    pub copies: Option<Copies>,
}

/// Why a case cannot be swept over tasks: its family says why
/// ([`BenchDef::not_swept`]), or it is a latency distribution (its events
/// are timed one by one, not counted); `None` for the others.
pub fn unsweepable(def: &BenchDef, params: &Params) -> Option<String> {
    let events = match def.sampling {
        crate::bench::Sampling::Events(_) => true,
        crate::bench::Sampling::EventsFor(count) => count(params).is_some(),
        crate::bench::Sampling::Batched { .. } | crate::bench::Sampling::WholeRuns => false,
    };
    if let Some(why) = def.not_swept {
        return Some(format!(
            "cannot be swept over tasks: {why}; drop --tasks for it"
        ));
    }
    events.then(|| {
        "cannot be swept over tasks: --tasks counts iterations of cases timed in batches or \
         whole runs, and this one records single-event latencies; drop --tasks for it (its own \
         parameters set its tasks)"
            .to_string()
    })
}

/// Why `copies` of a family cannot run: as threads, when the family keeps
/// state per process ([`BenchDef::not_as_threads`]).
pub fn not_as_threads(def: &BenchDef, copies: Copies) -> Option<String> {
    match copies.mode {
        Mode::Threads => def
            .not_as_threads
            .map(|why| format!("cannot be swept as threads: {why}")),
        Mode::Processes => None,
    }
}

/// Splits `cases` into those this machine's kernel can run and, for the
/// others, "BENCH CASE: why" (each family's [`BenchDef::unavailable`]): a
/// case the kernel refuses is skipped with its reason, never measured as zero.
/// So is a latency case asked for as a task sweep ([`unsweepable`]).
pub fn split_unavailable(cases: Vec<Case>) -> (Vec<Case>, Vec<String>) {
    let mut skipped = Vec::new();
    let why = |c: &Case| {
        match c.copies {
            Some(copies) => unsweepable(c.def, &c.params).or_else(|| not_as_threads(c.def, copies)),
            None => None,
        }
        .or_else(|| (c.def.unavailable)(&c.params))
    };
    let runnable = cases
        .into_iter()
        .filter(|c| match why(c) {
            None => true,
            Some(why) => {
                skipped.push(format!("{} {}: {why}", c.def.name, c.name()));
                false
            }
        })
        .collect();
    (runnable, skipped)
}

impl Case {
    /// A case taking the policy's samples.
    pub fn new(def: &'static BenchDef, params: Params) -> Self {
        Case {
            def,
            params,
            samples: None,
            copies: None,
        }
    }

    /// The family's name of the case, with its copies when swept (`null@2p`).
    pub fn name(&self) -> String {
        let name = (self.def.case_name)(&self.params);
        match &self.copies {
            Some(c) => format!("{name}{}", c.suffix()),
            None => name,
        }
    }

    /// The selector that names exactly this case (`bench:k=v,…` with every
    /// parameter), as the agent protocol sends it; [`resolve`] reads it back.
    pub fn selector(&self) -> String {
        let mut params = self.params.to_string();
        if let Some(c) = &self.copies {
            if !params.is_empty() {
                params.push(',');
            }
            params.push_str(&c.selector_keys());
        }
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
    // No selector: the quick suite's, each with its samples if it has its own.
    let selectors: Vec<(Selector, Option<usize>)> = if selectors.is_empty() {
        DEFAULT_SUITE
            .iter()
            .map(|s| {
                let samples = QUICK_SUITE_SAMPLES.iter().find(|(q, _)| q == s);
                let sel = s.parse().expect("the default suite's selectors are valid");
                (sel, samples.map(|&(_, n)| n))
            })
            .collect()
    } else {
        selectors.iter().map(|s| (s.clone(), None)).collect()
    };
    let mut cases: Vec<Case> = Vec::new();
    for (sel, samples) in &selectors {
        for case in expand(sel)? {
            if !cases.iter().any(|c| {
                c.def.name == case.def.name && c.params == case.params && c.copies == case.copies
            }) {
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
        mean: bench_meant(&sel.bench).map(str::to_string),
    })?;
    let (copies, fixed) = split_copies(sel, def)?;
    for (key, value) in fixed.iter().copied() {
        let names = || def.params.iter().map(|p| p.name);
        let spec =
            def.params
                .iter()
                .find(|p| p.name == key)
                .ok_or_else(|| Error::UnknownParam {
                    bench: def.name.to_string(),
                    key: key.clone(),
                    valid: names().collect::<Vec<_>>().join(", "),
                    mean: closest(key, names()).map(str::to_string),
                })?;
        if !spec.accepts(value) {
            return Err(Error::BadValue {
                bench: def.name.to_string(),
                key: key.clone(),
                value: value.clone(),
                allowed: spec.allowed(),
                mean: word_meant(spec.kind, value).map(str::to_string),
            });
        }
    }
    let given: Vec<(&str, &str)> = fixed
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
    Ok(each_count(out, &copies))
}

/// Each case once per task count of a sweep (once when `copies` is `[None]`).
fn each_count(cases: Vec<Case>, copies: &[Option<Copies>]) -> Vec<Case> {
    cases
        .into_iter()
        .flat_map(|case| {
            copies.iter().map(move |&copies| Case {
                copies,
                ..case.clone()
            })
        })
        .collect()
}

/// Every case of `cases` that is not swept already (by its selector's
/// `tasks`), once per count of `ladder` and per mode of `modes`, placed
/// `place`: the cases of `run --tasks` (the plan orders them at random,
/// as any cases).
pub fn sweep(cases: Vec<Case>, ladder: &[usize], modes: &[Mode], place: Place) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for case in cases.iter().filter(|c| c.copies.is_some()) {
        out.push(case.clone());
    }
    for &n in ladder {
        for &mode in modes {
            for case in cases.iter().filter(|c| c.copies.is_none()) {
                out.push(Case {
                    copies: Some(Copies { n, mode, place }),
                    ..case.clone()
                });
            }
        }
    }
    out
}

/// The word among a parameter's allowed words nearest to `value` (none
/// for numbers: an integer out of range is answered by its range).
fn word_meant(kind: ParamKind, value: &str) -> Option<&'static str> {
    match kind {
        ParamKind::Choice(words) => closest(value, words.iter().copied()),
        ParamKind::CountOrAll { .. } => closest(value, ["all"]),
        ParamKind::IntOr { word, .. } => closest(value, [word]),
        ParamKind::Int { .. } => None,
    }
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
    fn a_swept_case_is_named_and_selected_by_its_task_count() {
        let cases = resolve(&[sel("syscall:case=null,tasks=1..3,tasks_mode=threads")]).unwrap();
        let names: Vec<String> = cases.iter().map(Case::name).collect();
        assert_eq!(names, ["null@1t", "null@2t", "null@3t"]);
        for case in &cases {
            let again = resolve(&[sel(&case.selector())]).unwrap();
            assert_eq!(again.len(), 1);
            assert_eq!(again[0].copies, case.copies);
            // As tables print it, too.
            let printed = resolve(&[sel(&format!("syscall:{}", case.name()))]).unwrap();
            assert_eq!(printed[0].copies, case.copies);
        }
        let e = resolve(&[sel("syscall:tasks=0")]).unwrap_err().to_string();
        assert!(e.contains("tasks") && e.contains("range"), "{e}");
        let e = resolve(&[sel("syscall:tasks=2,tasks_mode=fibres")]).unwrap_err();
        assert!(e.to_string().contains("processes, threads"), "{e}");
    }

    #[test]
    fn a_swept_latency_case_is_skipped_with_why_and_the_others_kept() {
        let cases = resolve(&[
            sel("wakeup:wait=futex"),
            sel("syscall:case=null"),
            sel("fault:case=anon"),
        ])
        .unwrap();
        let swept = sweep(cases, &[2], &[Mode::Threads], Place::Spread);
        let (runnable, skipped) = split_unavailable(swept);
        let names: Vec<String> = runnable
            .iter()
            .map(|c| format!("{} {}", c.def.name, c.name()))
            .collect();
        assert_eq!(names, ["syscall null@2t", "fault anon/2048p@2t"]);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(
            skipped[0].starts_with("wakeup ") && skipped[0].contains("single-event"),
            "{skipped:?}"
        );
        let signals = resolve(&[sel("signal:case=catch")]).unwrap();
        let both = sweep(
            signals,
            &[2],
            &[Mode::Processes, Mode::Threads],
            Place::Spread,
        );
        let (runnable, skipped) = split_unavailable(both);
        assert_eq!(runnable.len(), 1);
        assert_eq!(runnable[0].name(), "catch@2p");
        assert!(
            skipped[0].contains("catch@2t") && skipped[0].contains("as processes"),
            "{skipped:?}"
        );
        let futex = find("futex").unwrap();
        assert!(unsweepable(futex, &Params::new(futex, &[("workload", "wake")])).is_some());
        assert_eq!(
            unsweepable(futex, &Params::new(futex, &[("workload", "hash")])),
            None
        );
    }

    #[test]
    fn a_sweep_runs_each_case_at_each_count_and_mode_up_to_512() {
        let cases = resolve(&[sel("syscall:case=null"), sel("fault:case=anon")]).unwrap();
        let ladder = crate::measure::copies::default_ladder(512);
        let swept = sweep(
            cases,
            &ladder,
            &[Mode::Processes, Mode::Threads],
            Place::Spread,
        );
        assert_eq!(swept.len(), 2 * 2 * ladder.len());
        let mut names: Vec<String> = swept
            .iter()
            .map(|c| format!("{} {}", c.def.name, c.name()))
            .collect();
        assert!(
            names.contains(&"fault anon/2048p@512t".to_string()),
            "{names:?}"
        );
        names.sort();
        names.dedup();
        assert_eq!(names.len(), swept.len(), "every case key is distinct");
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

    #[test]
    fn every_printed_case_name_selects_its_case() {
        for case in resolve(&[sel("all")]).unwrap() {
            let (bench, name) = (case.def.name, case.name());
            for printed in [
                format!("{bench}:{name}"),
                format!("{bench}:{name} [a]"),
                format!("{bench} {name}"),
                format!("{bench} {name} [config b]"),
            ] {
                let again = resolve(&[sel(&printed)]).unwrap();
                assert_eq!(again.len(), 1, "{printed}");
                assert_eq!(again[0].params, case.params, "{printed}");
                assert!(std::ptr::eq(again[0].def, case.def), "{printed}");
            }
        }
        // Cases outside the defaults, as a run of them prints them.
        for selector in [
            "ctx:procs=4",
            "ctx:procs=3,mode=threads",
            "ipc:kind=udp,bytes=1",
        ] {
            let case = resolve(&[sel(selector)]).unwrap().remove(0);
            let printed = format!("{}:{}", case.def.name, case.name());
            let again = resolve(&[sel(&printed)]).unwrap();
            assert_eq!(again[0].params, case.params, "{printed}");
        }
        assert_eq!(config_tag("syscall:null [a]"), ("syscall:null", Some("a")));
        assert_eq!(config_tag("ctx:2p/0K"), ("ctx:2p/0K", None));
    }

    #[test]
    fn a_name_that_is_no_case_says_which_are() {
        let e = "syscall:nosuch"
            .parse::<Selector>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("'nosuch'") && e.contains("null, read"), "{e}");
    }

    #[test]
    fn near_misses_get_the_name_they_meant() {
        let e = |s: &str| resolve(&[sel(s)]).unwrap_err().to_string();
        let sycall = e("sycall");
        assert!(
            sycall.starts_with("unknown benchmark 'sycall'; did you mean 'syscall'? valid"),
            "{sycall}"
        );
        assert!(e("syscal:case=null").contains("did you mean 'syscall'?"));
        assert!(e("hackbench").contains("did you mean 'messaging'?"));
        assert!(e("lat_ctx").contains("did you mean 'ctx'?"));
        let nul = e("syscall:case=nul");
        assert!(
            nul.starts_with("invalid value 'nul' for syscall:case; did you mean 'null'? allowed:"),
            "{nul}"
        );
        assert!(e("syscall:cas=null").contains("no parameter 'cas'; did you mean 'case'?"));
        assert!(e("atomic:threads=al").contains("did you mean 'all'?"));
        assert!(e("ipc:kind=pip").contains("did you mean 'pipe'?"));
        // A printed case name, and a benchmark before one.
        let printed = "syscall:nul".parse::<Selector>().unwrap_err().to_string();
        assert!(
            printed.contains("did you mean 'syscall:null'?"),
            "{printed}"
        );
        let printed = "sycall:null".parse::<Selector>().unwrap_err().to_string();
        assert!(printed.contains("did you mean 'syscall'?"), "{printed}");
        // Nothing near: the list alone, as before.
        assert!(!e("nosuch").contains("did you mean"));
        assert!(!e("ctx:procs=1").contains("did you mean"));
        assert!(!e("syscall:case=xyzzy").contains("did you mean"));
    }

    #[test]
    fn closest_is_near_or_nothing() {
        let names = ["syscall", "signal", "sigqueue", "spin", "fs", "file", "all"];
        assert_eq!(closest("sycall", names), Some("syscall"));
        assert_eq!(closest("SYSCALL", names), Some("syscall"));
        assert_eq!(closest("sigqeue", names), Some("sigqueue"));
        assert_eq!(closest("fz", names), Some("fs"));
        assert_eq!(
            closest("sys", names),
            Some("syscall"),
            "the only one it begins"
        );
        assert_eq!(closest("si", names), None, "too short to begin one");
        assert_eq!(closest("nosuch", names), None);
        assert_eq!(closest("x", names), None);
        for (other, ours) in OTHER_NAMES {
            assert!(find(ours).is_some(), "{other} → {ours}");
        }
    }
}

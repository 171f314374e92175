//! `osbench agent`: osbench inside a guest, serving the agent protocol
//! (`guest::protocol`, docs/agent-protocol.md) on a byte stream: `ready`
//! first (with what the kernel handed it, when it is a guest's init), then
//! one reply per request — the environment (with this system's logs when
//! asked, read from the tree the caller names), which cases this kernel
//! cannot run, one case measured with this system's clocks, a shell
//! command's end (a configuration's set-up or tear-down, run here), or
//! `bye`. A request it cannot serve gets an
//! `error` reply and the agent goes on; nothing but protocol lines is ever
//! written to the channel (the library never prints; panics go to stderr).
//! Left out: running several cases per request (the client interleaves
//! configurations case by case, so one case per request is what it needs).

use std::io::{BufRead, Write};

use super::{case, profiling};
use crate::bench::util::select::{Selector, resolve, split_unavailable};
use crate::document::Series;
use crate::env::probe::Sys;
use crate::error::{Error, Result};
use crate::guest::protocol::{self, InitHandOff, OUTPUT_TAIL, Reply, Request, RunRequest, ShDone};
use crate::measure::hook::{Watch, sh_captured};
use crate::measure::warden;
use crate::measure::{Harness, Interrupt, Meters};

/// Serves requests read from `input`, replying on `output`, until `shutdown`
/// or the end of the input; `init` is what the kernel handed it as a
/// guest's init; system logs asked for are read from `logs_tree` (`/` but
/// in tests). Errors are the channel's own (a write failed).
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    interrupt: &Interrupt,
    init: Option<InitHandOff>,
    logs_tree: &Sys,
) -> Result<()> {
    let mut say = |reply: &Reply| {
        output
            .write_all(protocol::line(reply).as_bytes())
            .and_then(|()| output.flush())
            .map_err(|e| Error::io("writing to the agent's channel".to_string(), e))
    };
    let is_init = init.is_some();
    say(&Reply::ready(init))?;
    for line in input.split(b'\n') {
        let line = line.map_err(|e| Error::io("reading the agent's channel".to_string(), e))?;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Request>(text) {
            Err(e) => Reply::Error(format!(
                "malformed request ({e}); send one JSON object per line (docs/agent-protocol.md)"
            )),
            Ok(Request::Env { logs }) => {
                Reply::Env(Box::new(crate::env::environment(logs.then_some(logs_tree))))
            }
            Ok(Request::Run(request)) => match measure(&request, interrupt) {
                Ok(series) => Reply::Series(Box::new(series)),
                Err(e) => Reply::Error(e.to_string()),
            },
            Ok(Request::Check { selectors }) => match unavailable(&selectors) {
                Ok(why) => Reply::Unavailable(why),
                Err(e) => Reply::Error(e.to_string()),
            },
            Ok(Request::Sh(request)) => match run_sh(&request) {
                Ok(done) => Reply::Done(done),
                Err(e) => Reply::Error(e.to_string()),
            },
            Ok(Request::Hold(hold)) => Reply::Held {
                held: !is_init && {
                    let value = format!("{}\n", hold.value);
                    warden::hold_restore(hold.id, hold.path.as_bytes(), value.as_bytes())
                },
            },
            Ok(Request::Forget { id }) => {
                warden::forget_restore(id);
                Reply::Held { held: false }
            }
            Ok(Request::Shutdown {}) => return say(&Reply::Bye {}),
        };
        say(&reply)?;
    }
    Ok(())
}

/// Runs a shell command here, within its timeout (the client bounds the
/// wait; the agent's own stop flag does not end it: it may be a tear-down).
fn run_sh(request: &protocol::ShRequest) -> Result<ShDone> {
    let timeout = std::time::Duration::try_from_secs_f64(request.timeout_s)
        .map_err(|e| Error::Measure(format!("timeout_s {}: {e}", request.timeout_s)))?;
    let watch = Watch {
        stop: None,
        timeout: Some(timeout),
    };
    let done = sh_captured(&request.env, &request.command, watch)?;
    Ok(ShDone {
        success: done.success,
        status: done.status,
        output: tail(&done.output, OUTPUT_TAIL).to_string(),
    })
}

/// The last `max` bytes of `text` or fewer, starting at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// For each selector, why its case cannot run here, or `None`.
fn unavailable(selectors: &[String]) -> Result<Vec<Option<String>>> {
    selectors
        .iter()
        .map(|text| {
            let selector: Selector = text.parse()?;
            let (_, skipped) = split_unavailable(resolve(&[selector])?);
            Ok(skipped.into_iter().next())
        })
        .collect()
}

/// Measures the one case `request` names, here.
fn measure(request: &RunRequest, interrupt: &Interrupt) -> Result<Series> {
    // The bounds the command line enforces: a request could ask for 10^9
    // samples (an abort) or a sample of 10^18 ns (never an answer).
    request
        .policy
        .check()
        .map_err(|problem| Error::Measure(format!("the run request's policy: {problem}")))?;
    let selector: Selector = request.selector.parse()?;
    let mut cases = resolve(&[selector])?;
    if cases.len() != 1 {
        return Err(Error::Measure(format!(
            "'{}' names {} cases; a run request names one (give every parameter)",
            request.selector,
            cases.len()
        )));
    }
    let case = cases.remove(0);
    let pin = request.pin;
    (case.def.check)(&case.params)?;
    let harness =
        Harness::new(request.policy, interrupt.clone()).with_meters(Meters::open(request.perf));
    let mut series = match case::run_case(&case, pin, &harness, &request.loads)? {
        (_, case::CaseEnd::Failed(e)) => return Err(e),
        (series, _) => series,
    };
    if let Some(ns) = request.profile_ns {
        let length = std::time::Duration::from_nanos(ns);
        let profiled = profiling::profile_case(&case, pin, &harness, length)?;
        series.profile = Some(profiled);
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Policy;

    fn talk(input: &str) -> Vec<Reply> {
        talk_with_logs_in(input, &Sys::at("/nonexistent"))
    }

    /// [`talk`], the system logs read from `tree`.
    fn talk_with_logs_in(input: &str, tree: &Sys) -> Vec<Reply> {
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, &Interrupt::none(), None, tree).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn ready_then_one_reply_per_request_until_shutdown() {
        let run = protocol::line(&Request::Run(RunRequest {
            selector: "spin:work=10".into(),
            policy: Policy {
                samples: 3,
                sample_time_ns: 1_000_000,
                warmup_ns: 0,
            },
            pin: Some(crate::document::Pin::Same),
            perf: false,
            profile_ns: None,
            loads: Vec::new(),
        }));
        let input = format!("{{\"env\":{{}}}}\n\n{run}{{\"shutdown\":{{}}}}\n{{\"env\":{{}}}}\n");
        let replies = talk(&input);
        assert_eq!(
            replies.len(),
            4,
            "ready, env, series, bye; nothing after bye"
        );
        assert_eq!(replies[0], Reply::ready(None));
        assert!(matches!(&replies[1], Reply::Env(e) if !e.kernel.is_empty()));
        let Reply::Series(s) = &replies[2] else {
            panic!("{:?}", replies[2]);
        };
        assert_eq!((s.key.bench.as_str(), s.samples.len()), ("spin", 3));
        assert_eq!(replies[3], Reply::Bye {});
    }

    #[test]
    fn a_guest_runs_a_swept_case_from_its_selector() {
        let case =
            crate::bench::util::select::resolve(&["syscall:case=null,tasks=2,tasks_mode=threads"
                .parse()
                .unwrap()])
            .unwrap()
            .remove(0);
        let run = protocol::line(&Request::Run(RunRequest {
            selector: case.selector(),
            policy: Policy {
                samples: 3,
                sample_time_ns: 1_000_000,
                warmup_ns: 0,
            },
            pin: None,
            perf: false,
            profile_ns: None,
            loads: Vec::new(),
        }));
        let replies = talk(&format!("{run}{{\"shutdown\":{{}}}}\n"));
        let Reply::Series(s) = &replies[1] else {
            panic!("{:?}", replies[1]);
        };
        assert_eq!(s.key.case, "null@2t");
        assert_eq!(s.params["tasks"], 2);
        assert_eq!(s.params["tasks_mode"], "threads");
    }

    #[test]
    fn the_environment_carries_the_system_logs_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "dev/kmsg",
            "6,1,1000000,-;Linux version of this agent's kernel\n",
        );
        put("proc/modules", "kvm 1 0 - Live 0x0\n");
        let input = "{\"env\":{\"logs\":true}}\n{\"env\":{}}\n";
        let replies = talk_with_logs_in(input, &Sys::at(dir.path()));
        let Reply::Env(with) = &replies[1] else {
            panic!("{:?}", replies[1]);
        };
        let logs = with.logs.as_ref().expect("logs were asked for");
        assert_eq!(logs.dmesg.as_ref().map(|d| d.lines), Some(1));
        assert_eq!(logs.modules, 1);
        assert!(matches!(&replies[2], Reply::Env(e) if e.logs.is_none()));
    }

    #[test]
    fn a_policy_beyond_the_command_lines_bounds_is_refused_by_name() {
        for (samples, sample_time_ns, field) in [
            (0, 1_000_000, "samples is 0"),
            (1_000_000_000, 1_000_000, "samples is 1000000000"),
            (usize::MAX, 1_000_000, "samples is 18446744073709551615"),
            (3, 10u64.pow(18), "sample_time_ns is 1000000000000000000"),
        ] {
            let run = protocol::line(&Request::Run(RunRequest {
                selector: "spin:work=10".into(),
                policy: Policy {
                    samples,
                    sample_time_ns,
                    warmup_ns: 0,
                },
                pin: None,
                perf: false,
                profile_ns: None,
                loads: Vec::new(),
            }));
            let replies = talk(&run);
            let Reply::Error(message) = &replies[1] else {
                panic!("{:?}", replies[1]);
            };
            assert!(message.contains(field), "{message}");
        }
    }

    #[test]
    fn shell_commands_run_here_with_their_status_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("mark");
        let sh = |command: &str, timeout_s: f64| {
            protocol::line(&Request::Sh(protocol::ShRequest {
                command: command.into(),
                env: [("MARK".to_string(), mark.display().to_string())].into(),
                timeout_s,
            }))
        };
        let input = [
            sh("echo on > \"$MARK\"; echo applied", 10.0),
            sh("echo broken >&2; exit 4", 10.0),
            sh("echo stuck; sleep 100", 0.3),
        ]
        .concat();
        let replies = talk(&input);
        let done: Vec<&ShDone> = replies[1..]
            .iter()
            .map(|r| match r {
                Reply::Done(d) => d,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(std::fs::read_to_string(&mark).unwrap(), "on\n");
        assert!(
            done[0].success && done[0].output == "applied\n",
            "{:?}",
            done[0]
        );
        assert_eq!(
            (done[1].success, done[1].status.as_str()),
            (false, "exit status: 4")
        );
        assert_eq!(done[1].output, "broken\n");
        assert!(done[2].status.contains("timeout of 0.3 s"), "{:?}", done[2]);
        assert_eq!(tail("ab€cd", 3), "cd");
    }

    #[test]
    fn a_check_says_for_each_case_whether_it_can_run_here() {
        let check = |selectors: &[&str]| {
            let request = Request::Check {
                selectors: selectors.iter().map(|s| s.to_string()).collect(),
            };
            talk(&protocol::line(&request)).remove(1)
        };
        assert_eq!(
            check(&["syscall:case=null", "ipc:kind=pipe"]),
            Reply::Unavailable(vec![None, None])
        );
        // A swept latency case cannot run as copies: skipped with the reason.
        let Reply::Unavailable(why) = check(&["futex:workload=wake,threads=2,tasks=2"]) else {
            panic!("a check is answered by `unavailable`")
        };
        assert!(
            why[0]
                .as_ref()
                .is_some_and(|w| w.starts_with("futex wake/")),
            "{why:?}"
        );
        assert!(matches!(check(&["nosuch"]), Reply::Error(e) if e.contains("nosuch")));
    }

    #[test]
    fn bad_requests_get_errors_and_the_agent_goes_on() {
        let input = "not json\n{\"reboot\":{}}\n\
                     {\"run\":{\"selector\":\"nosuch\",\"policy\":{\"samples\":1,\"sample_time_ns\":1,\"warmup_ns\":0},\"perf\":false}}\n\
                     {\"run\":{\"selector\":\"syscall\",\"policy\":{\"samples\":1,\"sample_time_ns\":1,\"warmup_ns\":0},\"perf\":false}}\n";
        let replies = talk(input);
        assert_eq!(replies.len(), 5, "{replies:?}");
        let errors: Vec<&str> = replies[1..]
            .iter()
            .map(|r| match r {
                Reply::Error(e) => e.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(errors[0].contains("malformed request"), "{}", errors[0]);
        assert!(errors[1].contains("malformed request"), "{}", errors[1]);
        assert!(
            errors[2].contains("unknown benchmark 'nosuch'"),
            "{}",
            errors[2]
        );
        assert!(errors[3].contains("names 6 cases"), "{}", errors[3]);
    }
}

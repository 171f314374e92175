//! `osbench agent`: osbench inside a guest, serving the agent protocol
//! (`guest::protocol`, docs/agent-protocol.md) on a byte stream: `ready`
//! first, then one reply per request — the environment, one case measured
//! with this system's clocks, or `bye`. A request it cannot serve gets an
//! `error` reply and the agent goes on; nothing but protocol lines is ever
//! written to the channel (the library never prints; panics go to stderr).
//! Left out: running several cases per request (the client interleaves
//! configurations case by case, so one case per request is what it needs).

use std::io::{BufRead, Write};

use super::case;
use crate::bench::select::{Selector, resolve};
use crate::document::Series;
use crate::error::{Error, Result};
use crate::guest::protocol::{self, Reply, Request, RunRequest};
use crate::measure::placement::Pin;
use crate::measure::{Harness, Interrupt, Meters};

/// Serves requests read from `input`, replying on `output`, until `shutdown`
/// or the end of the input. Errors are the channel's own (a write failed).
pub fn serve(input: impl BufRead, mut output: impl Write, interrupt: &Interrupt) -> Result<()> {
    let mut say = |reply: &Reply| {
        output
            .write_all(protocol::line(reply).as_bytes())
            .and_then(|()| output.flush())
            .map_err(|e| Error::io("writing to the agent's channel".to_string(), e))
    };
    say(&Reply::ready())?;
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
            Ok(Request::Env {}) => Reply::Env(Box::new(crate::env::capture())),
            Ok(Request::Run(request)) => match measure(&request, interrupt) {
                Ok(series) => Reply::Series(Box::new(series)),
                Err(e) => Reply::Error(e.to_string()),
            },
            Ok(Request::Shutdown {}) => return say(&Reply::Bye {}),
        };
        say(&reply)?;
    }
    Ok(())
}

/// Measures the one case `request` names, here.
fn measure(request: &RunRequest, interrupt: &Interrupt) -> Result<Series> {
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
    let pin = match request.pin.as_deref() {
        None => None,
        Some(p) => Some(Pin::parse(p).ok_or_else(|| {
            Error::Measure(format!("pin '{p}' is not one of none, same, spread"))
        })?),
    };
    (case.def.check)(&case.params)?;
    let harness =
        Harness::new(request.policy, interrupt.clone()).with_meters(Meters::open(request.perf));
    let (series, _interrupted) = case::run_case(&case, pin, &harness)?;
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Policy;

    fn talk(input: &str) -> Vec<Reply> {
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, &Interrupt::none()).unwrap();
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
            pin: Some("same".into()),
            perf: false,
        }));
        let input = format!("{{\"env\":{{}}}}\n\n{run}{{\"shutdown\":{{}}}}\n{{\"env\":{{}}}}\n");
        let replies = talk(&input);
        assert_eq!(
            replies.len(),
            4,
            "ready, env, series, bye; nothing after bye"
        );
        assert_eq!(replies[0], Reply::ready());
        assert!(matches!(&replies[1], Reply::Env(e) if !e.kernel.is_empty()));
        let Reply::Series(s) = &replies[2] else {
            panic!("{:?}", replies[2]);
        };
        assert_eq!((s.bench.as_str(), s.samples.len()), ("spin", 3));
        assert_eq!(replies[3], Reply::Bye {});
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

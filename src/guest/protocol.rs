//! The agent protocol: line-delimited JSON between osbench (the client) and
//! `osbench agent` (inside a guest), specified in docs/agent-protocol.md.
//!
//! Every protocol line is one JSON object on one line, so a client can tell
//! it from a console's other output (kernel messages never start with `{`).
//! The agent speaks first (`ready`), then answers each request with exactly
//! one reply. Left out: concurrency (one request at a time), authentication
//! (the channel is the guest's console or an SSH session).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::document::InitHandOff;
use crate::document::{Policy, Series};
use crate::env::Environment;

/// The protocol's version; an agent and a client must agree on it and on the
/// osbench version.
pub const PROTOCOL: u32 = 1;

/// What the client asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// The environment as seen inside the guest; with `logs`, its system
    /// logs too (`env.logs`: its kernel's configuration, log, modules, …).
    Env {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        logs: bool,
    },
    /// Measure one case there and return its series.
    Run(RunRequest),
    /// Say which of these cases (selectors naming one case each, as in
    /// `run`) the system cannot run: the answer is `unavailable`.
    Check { selectors: Vec<String> },
    /// Run a shell command there (a configuration's set-up or tear-down).
    Sh(ShRequest),
    /// Hold a knob's value found: the agent's warden writes it back if the
    /// agent ends (its channel closed, killed) before `forget`.
    Hold(HoldRequest),
    /// Forget a held value (the client wrote it back).
    Forget { id: u32 },
    /// Reply `bye` and end the agent (a guest's init powers the guest off).
    Shutdown {},
}

/// A value for the agent's warden to write back to a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldRequest {
    /// The client's id for it (unique in the client's run).
    pub id: u32,
    pub path: String,
    pub value: String,
}

/// One case to measure: a selector that names exactly one case, as on the
/// command line (`syscall:case=getpid`), and how to measure it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub selector: String,
    pub policy: Policy,
    /// Absent: the default placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<crate::document::Pin>,
    /// Count perf events in a pass after the timed samples.
    pub perf: bool,
    /// Profile the case in one pass of this many ns after its timed
    /// samples, the pass in the reply's `profile` (absent: no profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_ns: Option<u64>,
    /// Background loads the agent runs beside the case (`run --load`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<crate::document::LoadSpec>,
}

/// A shell command to run inside the guest with `sh -c`, its stdin closed
/// and its stdout and stderr kept together; killed (its process group)
/// after `timeout_s` seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShRequest {
    pub command: String,
    /// Environment variables for it, besides the agent's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    pub timeout_s: f64,
}

/// How a shell command ended inside the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShDone {
    /// Exited with status 0.
    pub success: bool,
    /// Its exit status in words ("exit status: 1"), or that it was killed at the timeout.
    pub status: String,
    /// The last [`OUTPUT_TAIL`] bytes of its stdout and stderr.
    pub output: String,
}

/// How much of a command's output a `done` reply carries.
pub const OUTPUT_TAIL: usize = 4096;

/// What the agent answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// Sent once, unasked, when the agent is ready.
    Ready {
        protocol: u32,
        version: String,
        /// Present when the agent is a guest's init.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        init: Option<InitHandOff>,
    },
    Env(Box<Environment>),
    Series(Box<Series>),
    Done(ShDone),
    /// The answer to `check`: for each selector asked, in order, why its
    /// case cannot run there ("BENCH CASE: why": io_uring disabled, a
    /// missing system call), or null when it can.
    Unavailable(Vec<Option<String>>),
    /// The answer to `hold` (whether the agent's warden holds the value; an
    /// agent that is a guest's init does not: the guest ends with it) and
    /// to `forget` (false).
    Held {
        held: bool,
    },
    /// The request could not be served; the agent goes on serving.
    Error(String),
    Bye {},
}

impl Reply {
    /// The `ready` line of this osbench, with what the kernel handed it as init.
    pub fn ready(init: Option<InitHandOff>) -> Self {
        Reply::Ready {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            init,
        }
    }
}

/// `message` as one protocol line, newline included.
pub fn line<T: Serialize>(message: &T) -> String {
    let mut text = serde_json::to_string(message).expect("protocol messages always serialise");
    text.push('\n');
    text
}

/// Whether a line of a channel is a protocol line (anything else is console output).
pub fn is_protocol(line: &str) -> bool {
    line.starts_with('{')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_objects_and_read_back() {
        let requests = [
            Request::Env { logs: false },
            Request::Env { logs: true },
            Request::Shutdown {},
            Request::Run(RunRequest {
                selector: "syscall:case=getpid".into(),
                policy: Policy::default(),
                pin: Some(crate::document::Pin::Same),
                perf: false,
                profile_ns: None,
                loads: Vec::new(),
            }),
            Request::Sh(ShRequest {
                command: "echo 1 > /proc/sysemu".into(),
                env: BTreeMap::new(),
                timeout_s: 60.0,
            }),
        ];
        for r in requests {
            let text = line(&r);
            assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
            assert!(is_protocol(&text), "{text}");
            assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), r);
        }
        assert_eq!(line(&Request::Env { logs: false }), "{\"env\":{}}\n");
        assert_eq!(
            line(&Request::Env { logs: true }),
            "{\"env\":{\"logs\":true}}\n"
        );
        assert_eq!(line(&Reply::Bye {}), "{\"bye\":{}}\n");
        let ready = line(&Reply::ready(None));
        assert!(ready.starts_with("{\"ready\":{\"protocol\":1,\"version\":"));
        assert!(!ready.contains("init"), "{ready}");
        let init = InitHandOff {
            args: vec!["nosysemu".into()],
            env: BTreeMap::from([("KEY".into(), "VALUE".into())]),
        };
        let text = line(&Reply::ready(Some(init.clone())));
        assert!(text.contains(r#""init":{"args":["nosysemu"],"env":{"KEY":"VALUE"}}"#));
        assert_eq!(
            serde_json::from_str::<Reply>(&text).unwrap(),
            Reply::ready(Some(init))
        );
        assert_eq!(line(&Reply::Error("no".into())), "{\"error\":\"no\"}\n");
    }

    #[test]
    fn console_lines_are_not_protocol_lines() {
        assert!(!is_protocol("[    0.000000] Linux version 6.1"));
        assert!(!is_protocol("Failed to initialize ubd device 0"));
        assert!(serde_json::from_str::<Request>("{\"reboot\":{}}").is_err());
    }
}

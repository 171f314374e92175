//! Fleet runs: the same plan on several hosts at once, each reached with the
//! system's `ssh` and measured by its own `osbench agent` (a host is a guest,
//! [`crate::guest`]), each giving its own document filed under its fleet name.
//!
//! Hosts run in parallel, one thread each: each measures on its own
//! hardware, so nothing is gained by taking turns. A host that cannot be
//! reached, dies mid-run or answers garbage fails alone; what the others (and
//! it, before failing) measured is kept. With configurations, each host
//! interleaves them round by round and its agent runs their set-ups and
//! tear-downs there (one ssh session per host, shared by all of them); a host
//! whose set-up fails stops alone, its tear-down sent too. Left out: guests
//! on the hosts, and any ssh of our own — OpenSSH does the connecting,
//! BatchMode on, so nothing ever prompts.
//!
//! A hosts file is TOML:
//!
//! ```toml
//! [[host]]
//! name = "a"                      # the name runs are filed under
//! target = "bench@10.0.0.5"       # what ssh connects to (a Host of ~/.ssh/config works)
//! ssh_options = ["Port=2222"]     # optional, each given to ssh as -o OPTION
//! osbench = "/opt/bin/osbench"    # optional: the host's osbench (default: on its PATH)
//! ```

pub mod install;

use std::path::Path;

use serde::Deserialize;

use crate::document::GuestSpec;
use crate::error::{Error, Result};
use crate::experiment::{self, Observer, Outcome, Plan, Remote};
use crate::measure::Interrupt;

/// One host of a fleet.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    /// `[user@]host` or an alias of the ssh configuration.
    pub target: String,
    /// Given to ssh, each as `-o OPTION` (`Port=2222`, `IdentityFile=…`).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// The host's osbench; default: `osbench` on its PATH.
    #[serde(default)]
    pub osbench: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    host: Vec<Host>,
}

/// `NAME=TARGET` from the command line.
pub fn parse_host(spec: &str) -> Result<Host> {
    match spec.split_once('=') {
        Some((name, target)) if valid_name(name) && !target.trim().is_empty() => Ok(Host {
            name: name.to_string(),
            target: target.trim().to_string(),
            ssh_options: Vec::new(),
            osbench: None,
        }),
        _ => Err(Error::Usage(format!(
            "--host '{spec}' is not NAME=TARGET (e.g. --host a=bench@10.0.0.5); NAME is letters, \
             digits, '-', '_' and '.'"
        ))),
    }
}

/// Names are filed in the store and used as file names (`NAME.json`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The hosts of a hosts file.
pub fn load_hosts(path: &Path) -> Result<Vec<Host>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let bad = |message: String| Error::BadDocument {
        path: path.display().to_string(),
        what: "an osbench hosts file",
        message,
    };
    let file: HostsFile = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if let Some(h) = file.host.iter().find(|h| !valid_name(&h.name)) {
        return Err(bad(format!(
            "host name '{}' must be letters, digits, '-', '_' and '.'",
            h.name
        )));
    }
    Ok(file.host)
}

/// Refuses an empty fleet and a name given twice.
pub fn check_hosts(hosts: &[Host]) -> Result<()> {
    if hosts.is_empty() {
        return Err(Error::Usage(
            "no hosts: give --host NAME=TARGET (repeat) or --hosts FILE".into(),
        ));
    }
    for (i, h) in hosts.iter().enumerate() {
        if hosts[..i].iter().any(|g| g.name == h.name) {
            return Err(Error::Usage(format!(
                "host '{}' is given twice; names must be unique",
                h.name
            )));
        }
    }
    Ok(())
}

impl Host {
    /// The ssh command line that runs `remote` (a POSIX shell command line) on
    /// the host: no terminal, no prompts, a bounded connection time.
    pub fn ssh(&self, remote: &str) -> Vec<String> {
        let mut argv = vec!["ssh".to_string(), "-T".to_string()];
        // ssh keeps the first value it is given for an option: the user's win.
        for option in self.ssh_options.iter().map(String::as_str).chain([
            "BatchMode=yes",
            "ConnectTimeout=15",
            "ServerAliveInterval=15",
        ]) {
            argv.push("-o".into());
            argv.push(option.into());
        }
        argv.extend([self.target.clone(), "--".into(), remote.into()]);
        argv
    }

    /// The guest that runs `osbench` (a path on the host, already quoted
    /// for its shell) as the agent, over ssh.
    fn guest(&self, osbench: &str) -> GuestSpec {
        GuestSpec::Command {
            command: shell_line(&self.ssh(&format!("exec {osbench} agent"))),
        }
    }
}

/// `argv` as one `sh -c` line, each word single-quoted.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// `word` for a POSIX shell ([`crate::text::shell_word`]).
pub fn quote(word: &str) -> String {
    crate::text::shell_word(word).into_owned()
}

/// One host's run: its document (and the error that stopped it early), or
/// the error that stopped it before anything was measured.
#[derive(Debug)]
pub struct HostRun {
    pub host: String,
    pub result: Result<Outcome>,
}

impl HostRun {
    /// Whether the host measured everything it was asked to.
    pub fn complete(&self) -> bool {
        matches!(&self.result, Ok(o) if o.error.is_none())
    }
}

/// Runs `plan` on every host in parallel: with `install`, first copies this
/// osbench to the hosts that lack it ([`install`]). `observer` makes each
/// host's progress observer. Results come in the hosts' order.
pub fn run(
    plan: &Plan,
    hosts: &[Host],
    install: bool,
    interrupt: &Interrupt,
    observer: &(dyn Fn(&Host) -> Box<dyn Observer + Send> + Sync),
) -> Vec<HostRun> {
    std::thread::scope(|scope| {
        let threads: Vec<_> = hosts
            .iter()
            .map(|host| {
                let mut observer = observer(host);
                scope.spawn(move || HostRun {
                    host: host.name.clone(),
                    result: run_host(plan, host, install, interrupt, observer.as_mut()),
                })
            })
            .collect();
        threads
            .into_iter()
            .zip(hosts)
            .map(|(t, host)| {
                t.join().unwrap_or_else(|_| HostRun {
                    host: host.name.clone(),
                    result: Err(Error::Measure(format!(
                        "host '{}': its thread panicked",
                        host.name
                    ))),
                })
            })
            .collect()
    })
}

fn run_host(
    plan: &Plan,
    host: &Host,
    install: bool,
    interrupt: &Interrupt,
    observer: &mut dyn Observer,
) -> Result<Outcome> {
    let osbench = match (&host.osbench, install) {
        (_, true) => install::install(host)?,
        (Some(path), false) => quote(path),
        (None, false) => "osbench".to_string(),
    };
    let plan = plan.on_remote(Remote {
        name: host.name.clone(),
        guest: host.guest(&osbench),
    });
    let outcome = experiment::run(&plan, interrupt.clone(), crate::env::capture(), observer);
    if outcome.document.series.is_empty()
        && let Some(e) = outcome.error
    {
        return Err(with_hint(e, install));
    }
    Ok(outcome)
}

/// A host without osbench ends its session with status 127 ("not found"),
/// one with another version is refused at the handshake: the error then
/// says how to get this one there. A host ssh could not reach (ssh's status
/// 255 before any answer) is said to be that.
fn with_hint(e: Error, installing: bool) -> Error {
    match e {
        Error::Guest { who, message }
            if message.contains("(exit status: 255) when asked to boot and start its agent") =>
        {
            let rest = message.split_once("its agent").map_or("", |(_, r)| r);
            Error::Guest {
                who,
                message: format!(
                    "could not be reached over ssh (ssh exited with status 255 before the \
                     agent answered): check the target and its ssh options with \
                     `ssh TARGET true`{rest}"
                ),
            }
        }
        Error::Guest { who, message } if !installing => {
            let hint = if message.contains("exit status: 127") {
                "; osbench was not found on the host: give --install to copy this one there, or \
                 name it with `osbench = \"PATH\"` in a hosts file"
            } else if message.contains("the guest's agent is osbench") {
                "; give --install to copy this osbench to the host"
            } else {
                ""
            };
            Error::Guest {
                who,
                message: format!("{message}{hint}"),
            }
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_come_from_the_command_line_and_files() {
        let h = parse_host("a=bench@10.0.0.5").unwrap();
        assert_eq!(
            (h.name.as_str(), h.target.as_str()),
            ("a", "bench@10.0.0.5")
        );
        for bad in ["a", "=x", "a=", "../x=y", "a b=c"] {
            assert!(parse_host(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts.toml");
        std::fs::write(
            &path,
            "[[host]]\nname = \"a\"\ntarget = \"x\"\nssh_options = [\"Port=2\"]\n\
             [[host]]\nname = \"b\"\ntarget = \"y\"\nosbench = \"/o b\"\n",
        )
        .unwrap();
        let hosts = load_hosts(&path).unwrap();
        assert_eq!(hosts[0].ssh_options, ["Port=2"]);
        assert_eq!(hosts[1].osbench.as_deref(), Some("/o b"));
        check_hosts(&hosts).unwrap();
        assert!(check_hosts(&[hosts[0].clone(), hosts[0].clone()]).is_err());
        assert!(check_hosts(&[]).is_err());
        std::fs::write(&path, "[[host]]\nname = \"a\"\ntarget = \"x\"\nport = 2\n").unwrap();
        let e = load_hosts(&path).unwrap_err().to_string();
        assert!(e.contains("hosts file") && e.contains("port"), "{e}");
    }

    #[test]
    fn the_agent_runs_through_ssh_with_the_users_options_first() {
        let host = Host {
            ssh_options: vec!["Port=2222".into()],
            ..parse_host("a=me@h").unwrap()
        };
        let GuestSpec::Command { command } = host.guest("'/my dir/osbench'") else {
            panic!("a command guest")
        };
        assert_eq!(
            command,
            "ssh -T -o Port=2222 -o BatchMode=yes -o ConnectTimeout=15 -o ServerAliveInterval=15 \
             me@h -- 'exec '\\''/my dir/osbench'\\'' agent'"
        );
        // What sh makes of the line is the argv again.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' {}",
                shell_line(&host.ssh("a 'b' $c"))
            ))
            .output()
            .unwrap();
        let words: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(words, host.ssh("a 'b' $c"));
    }

    #[test]
    fn an_unreachable_host_is_said_to_be_unreachable() {
        let e = Error::Guest {
            who: "host 'b'".into(),
            message: "the guest ended (exit status: 255) when asked to boot and start its agent; \
                      its last console lines: ssh: connect to host 10.9.9.9 port 22: No route"
                .into(),
        };
        let text = with_hint(e, false).to_string();
        assert!(text.contains("could not be reached over ssh"), "{text}");
        assert!(text.contains("No route"), "{text}");
        assert!(!text.contains("to boot"), "{text}");
    }
}

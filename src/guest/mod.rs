//! Guests: other systems that run a configuration's cases — a User-Mode
//! Linux kernel, a container, a host over SSH — each with `osbench agent`
//! inside, reached over a byte stream (the guest's console or the command's
//! stdin/stdout). This module starts a guest, talks to its agent
//! ([`protocol`]) and stops it; it measures nothing itself: timing happens
//! inside the guest with the guest's clocks.
//!
//! A guest runs in its own process group, which dies with osbench (the
//! `measure::warden`), and is killed as a whole group and reaped when it is
//! dropped: on success after a `shutdown`, on an error, on Ctrl-C. Its
//! console output (anything that is not a protocol line) is kept, and the
//! last lines are quoted when it fails. A virtual machine ([`qemu`]) has its
//! serial console as its stdin/stdout (`-serial stdio`) and boots from the
//! initramfs [`image`] writes. The client also runs configurations' set-ups
//! and tear-downs inside the guest (`sh`), and checks the boot parameters a
//! configuration asked for against what reached the guest's init. Left out: guests that need a channel
//! other than stdin/stdout (a socket can be bridged with `socat` in a command
//! guest).

pub mod image;
pub mod init;
pub mod protocol;
pub mod qemu;
pub mod uml;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::document::{BootParameter, GuestInfo, GuestSpec, InitHandOff, Series};
use crate::error::{Error, Result};
use crate::measure::Interrupt;
use crate::measure::spawn::{ended_unreaped, kill_group};
use protocol::{PROTOCOL, Reply, Request, RunRequest, ShRequest};

/// How long a guest may take to say it is ready (and its agent to report
/// its environment), unless `$OSBENCH_GUEST_TIMEOUT` gives other seconds.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(60);

fn boot_timeout() -> Duration {
    std::env::var("OSBENCH_GUEST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0 && s.is_finite())
        .map_or(BOOT_TIMEOUT, Duration::from_secs_f64)
}
/// How long a guest may stay stopped (SIGSTOP, a debugger) while a reply
/// is awaited before the wait gives up: the length of a deliberate pause,
/// not of a lost run.
pub const STOPPED_LIMIT: Duration = Duration::from_secs(10);

/// Whether process `pid` is stopped (state T or t in /proc/PID/stat).
fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        state.is_some_and(|s| s.starts_with('T') || s.starts_with('t'))
    })
}

/// Console lines kept to quote when a guest fails.
const CONSOLE_LINES: usize = 12;

/// A started guest whose agent answered.
pub struct Guest {
    config: String,
    /// Names it in errors: "configuration 'uml'", "host 'a'".
    who: String,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    console: Arc<Mutex<VecDeque<String>>>,
    /// The threads reading the guest's stdout and stderr.
    readers: Vec<std::thread::JoinHandle<()>>,
    /// Boot time, version and environment, once the agent has answered.
    info: Option<GuestInfo>,
    /// The leader's exit status, once [`Self::stop`] has reaped it.
    ended: Option<String>,
    /// A request was sent and its reply has not been read (the client gave
    /// up waiting: an interrupt); [`Self::settle`] waits for it.
    busy: bool,
    /// UML's directory (its memory file, its pid file); removed on drop.
    _dir: Option<tempfile::TempDir>,
}

impl Guest {
    /// Starts the guest of configuration `config` and waits for its agent:
    /// `ready` (same protocol and version), then its environment. Errors
    /// name it as `who`.
    pub fn start(
        config: &str,
        who: &str,
        spec: &GuestSpec,
        logs: bool,
        interrupt: &Interrupt,
    ) -> Result<Guest> {
        let Launch {
            mut cmd,
            dir,
            uml_kernel,
            accelerator,
        } = launch(who, spec)?;
        let started = Instant::now();
        let (child, stdin, lines, console, readers) = spawn(&mut cmd)
            .map_err(|e| guest_error(who, format!("could not start the guest: {e}")))?;
        let mut guest = Guest {
            config: config.to_string(),
            who: who.to_string(),
            child,
            stdin,
            lines,
            console,
            readers,
            info: None,
            ended: None,
            busy: false,
            _dir: dir,
        };
        guest.handshake(started, logs, interrupt)?;
        let info = guest.info.as_mut().expect("a started guest has answered");
        info.accelerator = accelerator;
        match spec {
            GuestSpec::Uml { cmdline, .. } => {
                // UML's own options, which it reads early and leaves on the command line.
                let kernel = uml_kernel.as_deref().expect("a UML guest has a kernel");
                let own = uml::own_options(kernel);
                info.boot_parameters =
                    boot_parameters(cmdline.as_deref().unwrap_or(""), info, &own);
            }
            GuestSpec::Qemu { append, .. } => {
                info.boot_parameters = boot_parameters(append.as_deref().unwrap_or(""), info, &[]);
            }
            GuestSpec::Command { .. } => {}
        }
        Ok(guest)
    }

    /// The boot parameters the guest was asked for that nothing in it
    /// recognised (they reached its init), or an empty list.
    pub fn unrecognised_parameters(&self) -> Vec<String> {
        let params = &self.info().boot_parameters;
        let nobody = params.iter().filter(|p| p.taken_by == "nobody");
        nobody.map(|p| p.word.clone()).collect()
    }

    /// Names the guest in its errors as `who` from now on ("configuration
    /// 'off'": the configuration whose block a shared guest is running).
    pub fn set_who(&mut self, who: &str) {
        self.who = who.to_string();
    }

    /// Records that configuration `config` runs in this (shared) guest.
    pub fn add_config(&mut self, config: &str) {
        if let Some(info) = self.info.as_mut() {
            info.configs.push(config.to_string());
        }
    }

    /// Boot time, version and environment, as recorded in the document.
    pub fn info(&self) -> &GuestInfo {
        self.info.as_ref().expect("a started guest has answered")
    }

    /// Waits for `ready`, checks the agent's protocol and version, asks for
    /// its environment (with its system logs when `logs`).
    fn handshake(&mut self, started: Instant, logs: bool, interrupt: &Interrupt) -> Result<()> {
        let (version, init) =
            match self.reply(boot_timeout(), interrupt, "to boot and start its agent")? {
                Reply::Ready {
                    protocol,
                    version,
                    init,
                } => {
                    let ours = env!("CARGO_PKG_VERSION");
                    if protocol != PROTOCOL || version != ours {
                        return Err(self.fail(format!(
                            "the guest's agent is osbench {version} (protocol {protocol}), this is \
                         osbench {ours} (protocol {PROTOCOL}); run the same version in the guest"
                        )));
                    }
                    (version, init)
                }
                other => return Err(self.unexpected("ready", &other)),
            };
        let boot_s = started.elapsed().as_secs_f64();
        let env = self.env_with(logs, interrupt)?;
        self.info = Some(GuestInfo {
            config: self.config.clone(),
            boot_s,
            version,
            env,
            configs: Vec::new(),
            accelerator: None,
            init,
            boot_parameters: Vec::new(),
        });
        Ok(())
    }

    /// The environment as the guest's agent sees it now.
    pub fn env(&mut self, interrupt: &Interrupt) -> Result<crate::env::Environment> {
        self.env_with(false, interrupt)
    }

    /// [`Self::env`], with the guest's system logs when `logs`.
    fn env_with(&mut self, logs: bool, interrupt: &Interrupt) -> Result<crate::env::Environment> {
        self.send(&Request::Env { logs })?;
        match self.reply(boot_timeout(), interrupt, "to report its environment")? {
            Reply::Env(env) => Ok(*env),
            other => Err(self.unexpected("env", &other)),
        }
    }

    /// For each of `selectors` (one case each), why the guest's kernel cannot
    /// run it ("BENCH CASE: why"), or `None`.
    pub fn unavailable(
        &mut self,
        selectors: Vec<String>,
        interrupt: &Interrupt,
    ) -> Result<Vec<Option<String>>> {
        let asked = selectors.len();
        self.send(&Request::Check { selectors })?;
        match self.reply(boot_timeout(), interrupt, "to say which cases it can run")? {
            Reply::Unavailable(why) if why.len() == asked => Ok(why),
            other => Err(self.unexpected("unavailable", &other)),
        }
    }

    /// Measures case `(bench, case)` in the guest; `timeout` bounds the wait
    /// for its series, which must be that case's and pass the document's
    /// checks (a wrong or absurd series fails the configuration, never the
    /// run's other series).
    pub fn run(
        &mut self,
        request: RunRequest,
        (bench, case): (&str, &str),
        timeout: Duration,
        interrupt: &Interrupt,
    ) -> Result<Series> {
        let selector = request.selector.clone();
        self.send(&Request::Run(request))?;
        match self.reply(timeout, interrupt, &format!("to measure {selector}"))? {
            Reply::Series(series)
                if (series.key.bench.as_str(), series.key.case.as_str()) != (bench, case) =>
            {
                Err(self.fail(format!(
                    "asked to measure {selector}, the guest's agent answered with a series of \
                     {} {}",
                    series.key.bench, series.key.case
                )))
            }
            Reply::Series(series) => match crate::document::validate::series(&series) {
                Ok(()) => Ok(*series),
                Err(problem) => Err(self.fail(format!(
                    "the guest's series for {selector} is not valid: {problem}"
                ))),
            },
            Reply::Error(message) => Err(guest_error(
                &self.who,
                format!("the guest's agent could not measure {selector}: {message}"),
            )),
            other => Err(self.unexpected("series", &other)),
        }
    }

    /// Runs `command` inside the guest (`what` names it in errors: "the
    /// set-up of configuration 'off'"), with `env` and the guest timeout
    /// (`$OSBENCH_GUEST_TIMEOUT`, else 60 s). A failure, a timeout or a guest
    /// that ends meanwhile is an error quoting the command's output (or the
    /// guest's last console lines).
    pub fn sh(
        &mut self,
        what: &str,
        command: &str,
        env: &std::collections::BTreeMap<String, String>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        self.sh_output(what, command, env, interrupt).map(drop)
    }

    /// [`Guest::sh`], returning the command's output (stdout and stderr, as
    /// the agent collected them) when it succeeds.
    pub fn sh_output(
        &mut self,
        what: &str,
        command: &str,
        env: &std::collections::BTreeMap<String, String>,
        interrupt: &Interrupt,
    ) -> Result<String> {
        let timeout = boot_timeout();
        self.send(&Request::Sh(ShRequest {
            command: command.to_string(),
            env: env.clone(),
            timeout_s: timeout.as_secs_f64(),
        }))?;
        // The agent kills the command at the timeout and says so; the margin is its reply's.
        let wait = timeout + Duration::from_secs(10);
        let done = match self.reply(wait, interrupt, &format!("to run {what} ({command})"))? {
            Reply::Done(done) => done,
            Reply::Error(message) => {
                let message =
                    format!("{what} ({command}) could not be run in the guest: {message}");
                return Err(guest_error(&self.who, message));
            }
            other => return Err(self.unexpected("done", &other)),
        };
        if done.success {
            return Ok(done.output);
        }
        let output = done.output.trim_end();
        let quoted = if output.is_empty() {
            "no output".to_string()
        } else {
            let lines: Vec<&str> = output.lines().collect();
            lines[lines.len().saturating_sub(CONSOLE_LINES)..].join(" | ")
        };
        Err(guest_error(
            &self.who,
            format!(
                "{what} ({command}) failed inside the guest with {}: {quoted}",
                done.status
            ),
        ))
    }

    /// Asks the agent's warden to hold `value` for `path` under `id` (see
    /// [`Request::Hold`]); whether it does.
    pub fn hold(&mut self, id: u32, path: &str, value: &str) -> bool {
        let request = Request::Hold(protocol::HoldRequest {
            id,
            path: path.to_string(),
            value: value.to_string(),
        });
        self.send(&request).is_ok()
            && matches!(
                self.reply(boot_timeout(), &Interrupt::none(), "to hold a knob's value"),
                Ok(Reply::Held { held: true })
            )
    }

    /// Tells the agent's warden to forget held value `id`.
    pub fn forget(&mut self, id: u32) {
        if self.send(&Request::Forget { id }).is_ok() {
            let _ = self.reply(
                boot_timeout(),
                &Interrupt::none(),
                "to forget a knob's value",
            );
        }
    }

    /// Whether the guest can take a request now: it has not ended, and
    /// after waiting up to `limit` for the reply to a request it was left
    /// with (an interrupt stopped the wait), that reply has come.
    pub fn settle(&mut self, limit: Duration) -> bool {
        if self.ended.is_some() {
            return false;
        }
        if self.busy {
            let _ = self.reply(limit, &Interrupt::none(), "to finish its request");
        }
        !self.busy && self.ended.is_none()
    }

    /// Asks the agent to end, waits a little for the guest to exit, then
    /// (on drop) kills whatever is left of it.
    pub fn shutdown(mut self) {
        if self.send(&Request::Shutdown {}).is_ok() {
            let _ = self.reply(Duration::from_secs(5), &Interrupt::none(), "to shut down");
            self.wait_exit(Duration::from_secs(5));
        }
    }

    /// Waits up to `limit` for the guest's leader to exit, without reaping
    /// it (its pid, the group's id, stays ours until [`Self::stop`]).
    fn wait_exit(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let exited = ended_unreaped(self.child.id() as libc::pid_t, false).unwrap_or(true);
            if exited || Instant::now() >= deadline {
                return exited;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the guest's whole process group and reaps its leader; its
    /// exit status, in words. Safe to call more than once.
    fn stop(&mut self) -> String {
        if let Some(status) = &self.ended {
            return status.clone();
        }
        // The guest leads its group (spawned with process_group(0)) and only
        // this function reaps it (once, `ended`): the group id is still ours.
        let pgid = self.child.id() as libc::pid_t;
        kill_group(pgid, libc::SIGKILL);
        crate::measure::warden::release(pgid);
        let status = self
            .child
            .wait()
            .map_or_else(|e| format!("unknown ({e})"), |s| s.to_string());
        self.ended = Some(status.clone());
        status
    }

    fn send(&mut self, request: &Request) -> Result<()> {
        let line = protocol::line(request);
        let written = self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush());
        let Err(e) = written else {
            self.busy = true;
            return Ok(());
        };
        // A closed channel is a guest that has ended (or is ending).
        let status = if self.wait_exit(Duration::from_secs(1)) {
            format!("the guest ended ({})", self.stop())
        } else {
            "the guest closed its channel".to_string()
        };
        Err(self.fail(format!("{status}: a request could not be sent ({e})")))
    }

    /// The next reply, within `timeout`; `what` says what the guest was
    /// doing. A guest stopped (SIGSTOP, a debugger) for [`STOPPED_LIMIT`]
    /// would never answer: that is the error, then.
    fn reply(&mut self, timeout: Duration, interrupt: &Interrupt, what: &str) -> Result<Reply> {
        let deadline = Instant::now() + timeout;
        let mut stopped_since: Option<Instant> = None;
        loop {
            if interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            let pid = self.child.id();
            match (is_stopped(pid), stopped_since) {
                (false, _) => stopped_since = None,
                (true, None) => stopped_since = Some(Instant::now()),
                (true, Some(since)) if since.elapsed() >= STOPPED_LIMIT => {
                    let status = self.stop();
                    return Err(self.fail(format!(
                        "the guest (process {pid}) was stopped (SIGSTOP, or a debugger) for {} \
                         s when asked {what}, and would never answer; it was killed ({status})",
                        STOPPED_LIMIT.as_secs()
                    )));
                }
                (true, Some(_)) => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.fail(format!(
                    "the guest did not answer within {} s {what}",
                    timeout.as_secs_f64()
                )));
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(line) => {
                    self.busy = false;
                    return serde_json::from_str(&line).map_err(|e| {
                        let shown: String = line.chars().take(200).collect();
                        self.fail(format!("malformed reply from the guest ({e}): {shown}"))
                    });
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // Its output ended: it has exited, or is about to.
                    self.wait_exit(Duration::from_secs(1));
                    let status = self.stop();
                    self.drain_console(Duration::from_secs(1));
                    return Err(self.fail(format!("the guest ended ({status}) when asked {what}")));
                }
            }
        }
    }

    /// Waits up to `limit` for the readers to take in the last of the
    /// guest's output (they end once everything of it is gone).
    fn drain_console(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline && !self.readers.iter().all(|r| r.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn unexpected(&self, wanted: &str, got: &Reply) -> Error {
        let got = protocol::line(got);
        let shown: String = got.trim_end().chars().take(200).collect();
        self.fail(format!(
            "the guest's agent answered {shown} where {wanted} was expected"
        ))
    }

    /// An error naming the configuration, with the guest's last console lines.
    fn fail(&self, message: String) -> Error {
        let console = self.console.lock().map(|c| c.clone()).unwrap_or_default();
        if console.is_empty() {
            return guest_error(&self.who, message);
        }
        let last: Vec<String> = console.iter().map(|l| quoted(l)).collect();
        guest_error(
            &self.who,
            format!("{message}; its last console lines: {}", last.join(" | ")),
        )
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A console line as an error quotes it: at most [`QUOTED_CHARS`]
/// characters, with the length of a longer one.
fn quoted(line: &str) -> String {
    if line.chars().count() <= QUOTED_CHARS {
        return line.to_string();
    }
    let start: String = line.chars().take(QUOTED_CHARS).collect();
    let length = if line.ends_with(&cut_mark()) {
        format!("more than {CONSOLE_LINE_BYTES}")
    } else {
        line.len().to_string()
    };
    format!("{start}… (a line of {length} bytes, cut)")
}

/// The most characters of one console line an error quotes.
const QUOTED_CHARS: usize = 200;

/// What ends a console line cut at [`CONSOLE_LINE_BYTES`].
fn cut_mark() -> String {
    format!("… (cut at {CONSOLE_LINE_BYTES} bytes)")
}

/// Lines of a kernel's stack dump (UML's `[<6004b1ca>] ? put_fp_registers+0x10`,
/// rows of hex words, "Call Trace:"; x86's `[ 2.61] ? rest_init+0xd0/0xd0`,
/// `<TASK>`, registers), which would push the message that explains a
/// failure ("Kernel panic - not syncing: …") out of the quoted console lines.
fn is_stack_dump(line: &str) -> bool {
    let t = line.trim();
    if t.starts_with("[<") {
        return true;
    }
    // x86 kernels stamp each line with the time: `[    2.613171] `.
    let t = match t.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest.trim(),
        _ => t,
    };
    const MARKERS: [&str; 7] = [
        "Call Trace:",
        "Stack:",
        "<TASK>",
        "</TASK>",
        "<IRQ>",
        "</IRQ>",
        "Kernel Offset:",
    ];
    const REGISTERS: [&str; 12] = [
        "RIP:", "RSP:", "RAX:", "RDX:", "RBP:", "R10:", "R13:", "FS:", "CS:", "CR2:", "DR0:",
        "DR3:",
    ];
    let first = t.split_whitespace().next().unwrap_or("");
    let frame = |w: &str| w.contains("+0x") && w.contains("/0x");
    // UML's register dump after a failed trap: `EFLAGS\t(18): 202`, `\t\t(19): 7fbf8e6d38`.
    let register_row = t.split_once("): ").is_some_and(|(name, value)| {
        let index = name.rsplit('(').next().unwrap_or("").trim();
        name.contains('(')
            && index.parse::<u32>().is_ok()
            && value
                .trim_start_matches("0x")
                .chars()
                .all(|c| c.is_ascii_hexdigit())
    });
    MARKERS.iter().any(|m| t.starts_with(m))
        || register_row
        || REGISTERS.contains(&first)
        || t.split_whitespace().find(|w| *w != "?").is_some_and(frame)
        || t.split_whitespace()
            .all(|w| w.len() >= 8 && w.chars().all(|c| c.is_ascii_hexdigit()))
}

/// What became of each word of `requested` (the boot parameters a
/// configuration asked for) in the guest `info` describes: on its kernel's
/// command line or not, and taken by the kernel (it never reached init), by
/// UML (`own`: its options, see [`uml::own_options`]) or by nobody (it
/// reached init's arguments or environment and no option names it).
fn boot_parameters(
    requested: &str,
    info: &GuestInfo,
    own: &[uml::OwnOption],
) -> Vec<BootParameter> {
    let cmdline: Vec<&str> = info
        .env
        .cmdline
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let empty = InitHandOff::default();
    let init = info.init.as_ref().unwrap_or(&empty);
    requested
        .split_whitespace()
        .map(|word| {
            let reached_init = match word.split_once('=') {
                Some((key, value)) => init.env.get(key).is_some_and(|v| v == value),
                None => init.args.iter().any(|a| a == word),
            };
            let taken_by = if !reached_init {
                "kernel"
            } else if own.iter().any(|o| o.names(word)) {
                "uml"
            } else {
                "nobody"
            };
            BootParameter {
                word: word.to_string(),
                in_cmdline: cmdline.contains(&word),
                taken_by: taken_by.to_string(),
            }
        })
        .collect()
}

fn guest_error(who: &str, message: String) -> Error {
    Error::Guest {
        who: who.to_string(),
        message,
    }
}

type Spawned = (
    Child,
    ChildStdin,
    Receiver<String>,
    Arc<Mutex<VecDeque<String>>>,
    Vec<std::thread::JoinHandle<()>>,
);

/// How a guest is started: its command, the directory it keeps (UML's
/// memory file), and what its boot chose.
struct Launch {
    cmd: Command,
    dir: Option<tempfile::TempDir>,
    /// The UML kernel run (its own options are read from it).
    uml_kernel: Option<std::path::PathBuf>,
    /// A virtual machine's accelerator and why it was chosen.
    accelerator: Option<String>,
}

/// The command that boots `spec` (`who` names the guest in errors).
fn launch(who: &str, spec: &GuestSpec) -> Result<Launch> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("finding osbench's own executable".to_string(), e))?;
    let mut uml_kernel = None;
    let mut accelerator = None;
    let (cmd, dir) = match spec {
        GuestSpec::Uml {
            cmdline,
            mem,
            kernel,
        } => {
            // UML's memory is a file in its directory: on tmpfs where there is one.
            let shm = std::path::Path::new("/dev/shm");
            let base = if shm.is_dir() {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            };
            uml::remove_stale_dirs(&base);
            let dir = tempfile::Builder::new()
                .prefix(&uml::dir_prefix())
                .tempdir_in(base)
                .map_err(|e| Error::io("creating UML's directory".to_string(), e))?;
            let cmd = uml::command(&uml::Boot {
                kernel: kernel.as_deref(),
                mem: mem.as_deref(),
                cmdline: cmdline.as_deref(),
                osbench: &exe,
                dir: dir.path(),
            })
            .map_err(|message| guest_error(who, message))?;
            uml_kernel = Some(std::path::PathBuf::from(cmd.get_program()));
            (cmd, Some(dir))
        }
        GuestSpec::Qemu {
            kernel,
            append,
            accel,
            cpus,
            memory,
        } => {
            let initrd = qemu::initramfs(&exe)?;
            let boot = qemu::Boot {
                kernel: kernel.as_deref(),
                append: append.as_deref(),
                accel: accel.as_deref(),
                cpus: *cpus,
                memory: memory.as_deref(),
                initrd: &initrd,
            };
            let (cmd, accel) = qemu::command(&boot).map_err(|m| guest_error(who, m))?;
            accelerator = Some(accel);
            (cmd, None)
        }
        GuestSpec::Command { command } => {
            let mut cmd = Command::new("sh");
            // The path is one shell word, whatever directory osbench is in.
            let exe = crate::text::shell_word(&exe.to_string_lossy()).into_owned();
            let line = command.replace("{osbench}", &exe);
            cmd.arg("-c").arg(line);
            (cmd, None)
        }
    };
    Ok(Launch {
        cmd,
        dir,
        uml_kernel,
        accelerator,
    })
}

/// Spawns `cmd` in a new process group that dies with osbench, with a
/// reader thread per output stream: protocol lines go to the receiver,
/// everything else to the console ring.
fn spawn(cmd: &mut Command) -> std::io::Result<Spawned> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    crate::measure::warden::ensure_started();
    let mut child = cmd.spawn()?;
    crate::measure::warden::guard(child.id() as libc::pid_t);
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let console = Arc::new(Mutex::new(VecDeque::new()));
    let (tx, rx) = mpsc::channel();
    let readers = vec![
        read_lines(stdout, Some(tx), Arc::clone(&console)),
        read_lines(stderr, None, Arc::clone(&console)),
    ];
    Ok((child, stdin, rx, console, readers))
}

/// The longest protocol line kept (a reply with a million raw samples is
/// well under it); a longer one closes the guest's channel, so a guest that
/// never ends its line cannot exhaust osbench's memory.
pub const PROTOCOL_LINE_BYTES: usize = 256 << 20;
/// The longest console line kept; the rest of the line is counted and dropped.
pub const CONSOLE_LINE_BYTES: usize = 4096;

/// Reads `stream` line by line on a thread until it ends.
fn read_lines(
    stream: impl Read + Send + 'static,
    protocol: Option<Sender<String>>,
    console: Arc<Mutex<VecDeque<String>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 16, stream);
        let mut buf = Vec::new();
        let keep = |line: String| {
            if let Ok(mut c) = console.lock() {
                if c.len() == CONSOLE_LINES {
                    c.pop_front();
                }
                c.push_back(line);
            }
        };
        while let Ok(Some(cut)) = read_bounded_line(&mut reader, &mut buf) {
            // Decided on the bytes, before a copy of up to the bound is made.
            if cut && protocol.is_some() && buf.first() == Some(&b'{') {
                keep(format!(
                    "osbench: the guest wrote a protocol line of more than {} MiB; \
                     its channel was closed",
                    PROTOCOL_LINE_BYTES >> 20
                ));
                return;
            }
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim_end_matches(['\n', '\r']).to_string();
            buf.clear();
            let is_protocol = protocol.is_some() && protocol::is_protocol(&line);
            match &protocol {
                Some(tx) if is_protocol => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
                _ if line.trim().is_empty() || is_stack_dump(&line) => {}
                _ if cut => keep(format!("{line}{}", cut_mark())),
                _ => keep(line),
            }
            // Kept first: the rest of a cut line may never end.
            if cut && skip_line(&mut reader).is_err() {
                return;
            }
        }
    })
}

/// Reads one line into `buf` (ended by `\n`, or for a console line also by
/// `\r`, as progress bars end theirs), at most [`PROTOCOL_LINE_BYTES`] of a
/// protocol line (one starting with `{`) and [`CONSOLE_LINE_BYTES`] of any
/// other. `Some(true)` when the line was cut at its bound (the rest is still
/// unread: [`skip_line`]), `Some(false)` when it ended, `None` at the end of
/// the stream.
fn read_bounded_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((!buf.is_empty()).then_some(false));
        }
        let protocol = buf.first().or(chunk.first()) == Some(&b'{');
        let (end, limit) = if protocol {
            (memchr::memchr(b'\n', chunk), PROTOCOL_LINE_BYTES)
        } else {
            (memchr::memchr2(b'\n', b'\r', chunk), CONSOLE_LINE_BYTES)
        };
        let line_part = end.unwrap_or(chunk.len());
        let room = limit - buf.len();
        if line_part > room {
            buf.extend_from_slice(&chunk[..room]);
            reader.consume(room);
            return Ok(Some(true));
        }
        buf.extend_from_slice(&chunk[..line_part]);
        reader.consume(end.map_or(line_part, |e| e + 1));
        if end.is_some() {
            return Ok(Some(false));
        }
    }
}

/// Reads and drops the rest of a console line cut by [`read_bounded_line`].
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match memchr::memchr2(b'\n', b'\r', chunk) {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CONSOLE_LINE_BYTES, is_stack_dump, read_bounded_line, skip_line};

    /// The lines of `input` as the reader thread sees them: text and whether cut.
    fn lines_of(input: &[u8]) -> Vec<(String, bool)> {
        let mut reader = std::io::BufReader::with_capacity(64, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(cut) = read_bounded_line(&mut reader, &mut buf).unwrap() {
            out.push((String::from_utf8_lossy(&buf).into_owned(), cut));
            buf.clear();
            if cut {
                skip_line(&mut reader).unwrap();
            }
        }
        out
    }

    #[test]
    fn console_lines_are_cut_at_their_bound_and_end_at_carriage_returns() {
        let mut input = b"boot\n10%\r20%\r".to_vec();
        input.extend(std::iter::repeat_n(b'x', CONSOLE_LINE_BYTES + 5000));
        input.extend(b"\nafter");
        let lines = lines_of(&input);
        assert_eq!(
            lines.len(),
            5,
            "{:?}",
            lines.iter().map(|l| l.1).collect::<Vec<_>>()
        );
        assert_eq!(lines[0], ("boot".into(), false));
        assert_eq!(lines[1], ("10%".into(), false));
        assert_eq!(lines[2], ("20%".into(), false));
        assert_eq!(lines[3], ("x".repeat(CONSOLE_LINE_BYTES), true));
        assert_eq!(
            lines[4],
            ("after".into(), false),
            "the last line needs no newline"
        );
    }

    #[test]
    fn protocol_lines_keep_carriage_returns_and_go_beyond_the_console_bound() {
        let long = format!("{{\"x\":\"{}\r\"}}\n", "y".repeat(3 * CONSOLE_LINE_BYTES));
        let lines = lines_of(long.as_bytes());
        assert_eq!(lines, [(long.trim_end().to_string(), false)]);
    }

    #[test]
    fn a_kernel_panic_keeps_its_message_and_drops_its_stack_dump() {
        // A stock x86 kernel's panic on QEMU's serial console (Debian 6.1).
        let panic = "[    2.610111] Kernel panic - not syncing: VFS: Unable to mount root fs on \
                     unknown-block(0,0)\n\
                     [    2.611012] CPU: 0 PID: 1 Comm: swapper/0 Not tainted 6.1.0-57-amd64 #1\n\
                     [    2.611434] Call Trace:\n\
                     [    2.612194]  <TASK>\n\
                     [    2.612564]  dump_stack_lvl+0x44/0x5c\n\
                     [    2.613171]  ? rest_init+0xd0/0xd0\n\
                     [    2.613348]  </TASK>\n\
                     [    2.614062] Kernel Offset: 0x12600000 from 0xffffffff81000000\n\
                     [<6004b1ca>] ? put_fp_registers+0x10\n\
                     6004b1ca 00000000 60a1b2c3\n\
                     \tEFLAGS\t(18): 202\n\
                     \t\t(19): 7fbf8e6d38\n\
                     \tR9\t( 8): 552aacb921\n\
                     Run /init as init process";
        let kept: Vec<&str> = panic.lines().filter(|l| !is_stack_dump(l)).collect();
        assert_eq!(kept.len(), 3, "{kept:?}");
        assert!(!is_stack_dump(
            "handle_trap - failed to wait at end of syscall, errno = 25"
        ));
        assert!(kept[0].contains("Kernel panic - not syncing"));
        assert!(kept[1].contains("CPU: 0 PID: 1"));
        assert_eq!(kept[2], "Run /init as init process");
    }
}

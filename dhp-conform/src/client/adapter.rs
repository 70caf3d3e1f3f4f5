//! One adapter process: spawning it in its own process group, with reader
//! threads on its stdout and stderr, and ending it.

use super::exchange::{Incoming, MAX_REPLY_LINE};
use super::stderr::{read_stderr_line, StderrLog, STDERR_TAIL};
use super::{AdapterError, Hello, Profile};
use crate::pgroup;
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Stdout lines read ahead of a request, at most (each at most
/// [`MAX_REPLY_LINE`]): the runner holds no more of an adapter's output.
const PENDING_LINES: usize = 1;

/// One running adapter process, the leader of its own process group:
/// whatever it starts is killed with it.
pub struct Adapter {
    child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) lines: Receiver<Incoming>,
    pub(super) stderr: Arc<Mutex<VecDeque<String>>>,
    pub(super) next_id: u64,
    pub(super) timeout: Duration,
    pub(super) broken: bool,
    /// The process has exited (it may not be reaped yet).
    exited: bool,
    /// Its process group was killed and the process reaped.
    reaped: bool,
    pub(super) hello: Option<Hello>,
    /// Counts the requests that timed out, shared with the pool.
    pub(super) timeouts: Option<Arc<AtomicU64>>,
    /// The clock of the assertion that holds the process, if the runner
    /// moves the implementation's time (`clock-control`).
    pub(super) clock: Option<super::ClockOffset>,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter").field("pid", &self.child.id()).field("broken", &self.broken).finish()
    }
}

impl Adapter {
    /// Start `command` (run by `sh -c "exec …"`, so the adapter is the
    /// child itself) with the profile's environment, and shake hands.
    pub fn spawn(
        command: &str,
        profile: Profile,
        timeout: Duration,
        echo_stderr: bool,
    ) -> Result<Adapter, AdapterError> {
        let mut a = Self::start(command, profile, timeout, echo_stderr)?;
        a.handshake()?;
        Ok(a)
    }

    /// Start without the handshake (see [`Adapter::handshake`]).
    pub fn start(
        command: &str,
        profile: Profile,
        timeout: Duration,
        echo_stderr: bool,
    ) -> Result<Adapter, AdapterError> {
        Self::start_logged(command, profile, timeout, echo_stderr, None)
    }

    /// [`Adapter::start`], also copying stderr lines to `log`.
    pub fn start_logged(
        command: &str,
        profile: Profile,
        timeout: Duration,
        echo_stderr: bool,
        log: Option<Arc<StderrLog>>,
    ) -> Result<Adapter, AdapterError> {
        let mut cmd = Command::new("sh");
        match crate::cgroup::group() {
            // the run's cgroup joined before the adapter execs: no helper of it leaves
            Ok(g) => {
                g.join_on_exec(&mut cmd);
                cmd.arg("-c").arg(format!("exec {command}"))
            }
            Err(why) => {
                warn_marker_only(why);
                cmd.arg("-c").arg(format!("exec {command}"))
            }
        };
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("DHP_") && k != "DHP_PYTHON" {
                cmd.env_remove(&k);
            }
        }
        // Its own process group, so that killing the group on the way out
        // also ends whatever it started (a grandchild must not outlive the run).
        cmd.envs(profile.env())
            .env(pgroup::MARK_VAR, pgroup::mark())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child =
            cmd.spawn().map_err(|e| AdapterError::Spawn { cmd: command.to_string(), reason: e.to_string() })?;
        pgroup::register(child.id());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            pgroup::unregister(child.id());
            return Err(AdapterError::Spawn { cmd: command.to_string(), reason: "no stdout/stderr pipe".into() });
        };
        // bounded: an adapter that writes unsolicited lines (idle in the pool)
        // blocks on its own stdout instead of growing the runner's memory
        let (tx, rx) = mpsc::sync_channel(PENDING_LINES);
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                // at most one byte past the limit: a longer line is never held whole
                let got = r.by_ref().take(MAX_REPLY_LINE as u64 + 1).read_until(b'\n', &mut buf);
                let msg = match got {
                    Ok(0) | Err(_) => Incoming::Eof,
                    Ok(_) if buf.len() > MAX_REPLY_LINE => Incoming::TooLong,
                    Ok(_) => Incoming::Line(String::from_utf8_lossy(&buf).trim_end().to_string()),
                };
                let last = !matches!(msg, Incoming::Line(_));
                if tx.send(msg).is_err() || last {
                    return;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail2 = tail.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            while let Some(line) = read_stderr_line(&mut r) {
                // no secret of a store location reaches the console or a report
                let line = dhp_secrets::mask_secrets(&line);
                if echo_stderr {
                    eprintln!("[adapter] {line}");
                }
                if let Some(log) = &log {
                    log.push(&line);
                }
                let mut t = tail2.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        Ok(Adapter {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr: tail,
            next_id: 1,
            timeout,
            broken: false,
            exited: false,
            reaped: false,
            hello: None,
            timeouts: None,
            clock: None,
        })
    }

    /// The `hello` answer, once the handshake succeeded.
    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// Send `clock`'s offset with every request from now on (`None`: no
    /// offset, the implementation's own clock). Only for an adapter that
    /// declares `clock-control`.
    pub fn follow_clock(&mut self, clock: Option<super::ClockOffset>) {
        self.clock = clock;
    }

    /// OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once an exchange failed; a broken adapter is never reused.
    pub fn is_broken(&self) -> bool {
        self.broken || self.exited
    }

    /// How the process ended, if it has, without reaping it: until it is
    /// reaped its pid — the id of its process group — cannot be reused, so
    /// killing that group later cannot hit anyone else.
    pub(super) fn exit_status(&mut self) -> Option<String> {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).ok()?);
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        let text = match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::Exited(_, code)) => format!("exit status: {code}"),
            Ok(WaitStatus::Signaled(_, sig, _)) => format!("killed by {sig}"),
            Ok(_) => return None,
            Err(e) => format!("wait failed: {e}"),
        };
        self.exited = true;
        Some(text)
    }

    pub(super) fn wait_exit(&mut self, grace: Duration) -> String {
        let end = Instant::now() + grace;
        loop {
            if let Some(status) = self.exit_status() {
                return status;
            }
            if Instant::now() >= end {
                return "stdout closed, still running".into();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Something came on stdout that no request asked for (a line, or its
    /// end): the process is not fit for another request.
    pub fn spoke_unasked(&self) -> bool {
        !matches!(self.lines.try_recv(), Err(mpsc::TryRecvError::Empty))
    }

    /// SIGKILL the process and everything in its process group, and reap it.
    /// Stdin stays open until the kill: at EOF an adapter exits cleanly,
    /// which is not the death being simulated (a clean exit drops its
    /// liveness token, a SIGKILL leaves it for the supervisor to find).
    pub fn kill(&mut self) {
        if !self.reaped {
            pgroup::kill(self.child.id());
            let _ = self.child.wait();
            pgroup::unregister(self.child.id());
            self.reaped = true;
        }
        self.stdin.take();
        self.exited = true;
        self.broken = true;
    }

    /// Close stdin (the adapter exits at EOF); after a grace period, or as
    /// soon as it exited, SIGKILL its process group (what it left behind).
    pub fn close(mut self) {
        // its helpers that left its group, while they are still its descendants
        let helpers = if self.reaped { Vec::new() } else { pgroup::tree(self.child.id()) };
        self.stdin.take();
        if !self.exited {
            self.wait_exit(Duration::from_millis(500));
        }
        self.kill();
        pgroup::kill_tree(&helpers);
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Say once that helpers are tracked by the environment marker only.
fn warn_marker_only(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        eprintln!(
            "dhp-conform: adapter helpers tracked by an environment marker only ({why}); a helper that clears its environment can outlive the run"
        );
    });
}

//! Adapter processes: spawning, the JSON-lines exchange, timeouts, and a
//! pool that reuses healthy processes across assertions.
//!
//! Anything that goes wrong *in the exchange* — the process will not start,
//! exits, hangs past the timeout, prints a line that is not JSON, answers
//! with another request's id, or sends a reply its schema rejects — is an
//! [`AdapterError`]: the assertion that hit it is reported as *errored*, not
//! failed, and the process is never reused. An implementation that answers
//! properly with an error is a [`Reply::Err`], judged by the assertion.

use crate::{pgroup, protocol};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde_json::{json, Value};
use std::collections::{BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of adapter stderr kept for error messages.
const STDERR_TAIL: usize = 20;

/// The longest reply line the runner reads (the largest legitimate reply,
/// `load_envelope` of a handoff at the default profile's limits, is well
/// under 1 MiB). A longer line is an exchange error, and the runner stops
/// reading at the limit instead of buffering it whole.
pub const MAX_REPLY_LINE: usize = 16 << 20;

/// Bytes of one adapter stderr line kept; the rest of a longer line is
/// read and dropped (stderr is free-form, but must not fill the runner).
const STDERR_LINE_KEPT: usize = 4096;

/// The next stderr line, cut to [`STDERR_LINE_KEPT`] bytes (marked with
/// `…`); `None` at end of file.
fn read_stderr_line(r: &mut impl BufRead) -> Option<String> {
    let mut kept = Vec::new();
    let mut cut = false;
    loop {
        let mut chunk = Vec::new();
        match r.by_ref().take(STDERR_LINE_KEPT as u64).read_until(b'\n', &mut chunk) {
            Ok(0) | Err(_) if kept.is_empty() && !cut => return None,
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let end = chunk.last() == Some(&b'\n');
        let room = STDERR_LINE_KEPT.saturating_sub(kept.len());
        if chunk.len() > room {
            cut = true;
        }
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if end {
            break;
        }
    }
    let mut line = String::from_utf8_lossy(&kept).trim_end().to_string();
    if cut {
        line.push('…');
    }
    Some(line)
}

/// What the stdout reader thread hands over.
enum Incoming {
    Line(String),
    /// A line longer than [`MAX_REPLY_LINE`]; the reader stopped there.
    TooLong,
    Eof,
}

/// What went wrong talking to an adapter.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AdapterError {
    /// The adapter process could not be started.
    #[error("could not start adapter `{cmd}`: {reason}")]
    Spawn {
        /// The adapter command line.
        cmd: String,
        /// Why it could not start.
        reason: String,
    },
    /// No reply within the per-request timeout.
    #[error("adapter did not answer {op} within {secs:.1}s{tail}")]
    Timeout {
        /// The operation asked.
        op: String,
        /// The timeout, seconds.
        secs: f64,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// The adapter process exited with a request outstanding.
    #[error("adapter exited ({status}) while {op} was pending{tail}")]
    Exited {
        /// The operation asked.
        op: String,
        /// The exit status, as the OS reported it.
        status: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// A stdout line that is not a JSON reply object.
    #[error("adapter printed a line that is not a JSON reply while {op} was pending: {line:?}{tail}")]
    Garbage {
        /// The operation asked.
        op: String,
        /// The line (truncated for the message).
        line: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// A reply line over the runner's line limit.
    #[error("adapter's reply to {op} is longer than {} MiB, the runner's limit for one line; stopped reading it{tail}", MAX_REPLY_LINE >> 20)]
    TooLong {
        /// The operation asked.
        op: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// An earlier request timed out: the process is not asked again.
    #[error("adapter hung: {0}")]
    Hung(String),
    /// A reply whose `id` is not the request's.
    #[error("adapter answered {op} (id {expected}) with id {got}")]
    WrongId {
        /// The operation asked.
        op: String,
        /// The request's id.
        expected: u64,
        /// The id the reply carried (as JSON text).
        got: String,
    },
    /// A reply that violates `reply.schema.json` or the op's result schema.
    #[error("adapter reply to {op} violates reply.schema.json: {detail}")]
    Schema {
        /// The operation asked.
        op: String,
        /// What the schema check reported.
        detail: String,
    },
    /// The `hello` exchange failed or declared an unusable protocol.
    #[error("handshake: {0}")]
    Handshake(String),
    /// The runner's own request violates the request schema (a bug here,
    /// not in the implementation).
    #[error("runner built an invalid {op} request (a dhp-conform bug): {detail}")]
    BadRequest {
        /// The operation.
        op: String,
        /// What the schema check reported.
        detail: String,
    },
    /// Writing the request to the adapter's stdin failed.
    #[error("writing to adapter: {0}")]
    Io(String),
}

/// An adapter's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `{"ok": true, "result": …}`: the result.
    Ok(Value),
    /// `{"ok": false, "error": …}`: the typed error.
    Err(ErrorReply),
}

/// A typed error reply: `kind` is the reference's exception class name.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReply {
    /// The error class (`FencingError`, `StateError`, … or `Unsupported`).
    pub kind: String,
    /// The implementation's message.
    pub message: String,
}

impl std::fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// The `hello` result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    /// The implementation's name (`dhp-rs`, `dhp-protocol`, …).
    pub implementation: String,
    /// Its version.
    pub version: String,
    /// The adapter protocol version it speaks.
    pub protocol_version: String,
    /// Optional features it declares (assertions needing others skip).
    pub features: BTreeSet<String>,
    /// The adapter's process id, when it reports one.
    pub pid: Option<u64>,
}

impl Hello {
    fn from_result(v: &Value) -> Hello {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        Hello {
            implementation: s("implementation"),
            version: s("version"),
            protocol_version: s("protocol_version"),
            features: v["features"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(String::from))
                .collect(),
            pid: v["pid"].as_u64(),
        }
    }

    /// Whether the adapter declares `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.features.contains(feature)
    }
}

/// Environment profile an adapter process is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Reference lease timing (2 s × 3), tight size limits.
    Default,
    /// Leases of 0.5 s × 2 for assertions that let real time pass.
    ShortLease,
    /// A 4 KiB line limit, which a checkpoint line can reach (in the
    /// default profile the checkpoint limit keeps every line far below it).
    ShortLines,
}

impl Profile {
    /// The `DHP_*` variables of this profile. Every other `DHP_*` variable
    /// of the runner's environment is removed, so results do not depend on
    /// the caller's shell.
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        let mut env = vec![
            ("DHP_MAX_CHECKPOINT_BYTES", "65536"),
            ("DHP_MAX_RESULT_BYTES", "65536"),
            ("DHP_MAX_ENVELOPE_BYTES", "262144"),
            ("DHP_TRANSPORT_MAX_LINE_BYTES", "262144"),
        ];
        match self {
            Profile::Default => {}
            Profile::ShortLease => {
                env.push(("DHP_LEASE_INTERVAL_S", "0.5"));
                env.push(("DHP_LEASE_MAX_MISSED", "2"));
            }
            Profile::ShortLines => env[3].1 = "4096",
        }
        env
    }
}

/// Lines of adapter stderr an implementation's processes wrote, numbered,
/// the last [`STDERR_LOG`] kept: what an assertion's processes said while
/// it ran is shown with its failure in the reports.
#[derive(Debug, Default)]
pub struct StderrLog(Mutex<(u64, VecDeque<String>)>);

/// Lines kept by a [`StderrLog`].
const STDERR_LOG: usize = 200;

/// Lines of a [`StderrLog`] handed out for one assertion.
const STDERR_FOR_ONE: usize = 20;

impl StderrLog {
    fn push(&self, line: &str) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        if g.1.len() == STDERR_LOG {
            g.1.pop_front();
        }
        g.1.push_back(line.to_string());
    }

    /// The number of the next line.
    pub fn mark(&self) -> u64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The last lines (at most 20) written since `mark`. The processes'
    /// stderr is read by other threads: lines already written may still be
    /// on their way, so this first waits for the log to stop growing (20 ms
    /// without a new line, at most 250 ms).
    pub fn since(&self, mark: u64) -> Vec<String> {
        let mut seen = self.mark();
        for _ in 0..12 {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.mark();
            if now == seen {
                break;
            }
            seen = now;
        }
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let new = usize::try_from(g.0.saturating_sub(mark)).unwrap_or(usize::MAX).min(g.1.len()).min(STDERR_FOR_ONE);
        g.1.iter().skip(g.1.len() - new).cloned().collect()
    }
}

/// One running adapter process, the leader of its own process group:
/// whatever it starts is killed with it.
pub struct Adapter {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Incoming>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_id: u64,
    timeout: Duration,
    broken: bool,
    /// The process has exited (it may not be reaped yet).
    exited: bool,
    /// Its process group was killed and the process reaped.
    reaped: bool,
    hello: Option<Hello>,
    /// Counts the requests that timed out, shared with the pool.
    timeouts: Option<Arc<AtomicU64>>,
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
        cmd.arg("-c").arg(format!("exec {command}"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("DHP_") && k != "DHP_PYTHON" {
                cmd.env_remove(&k);
            }
        }
        // Its own process group, so that killing the group on the way out
        // also ends whatever it started (a grandchild must not outlive the run).
        cmd.envs(profile.env()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        let mut child =
            cmd.spawn().map_err(|e| AdapterError::Spawn { cmd: command.to_string(), reason: e.to_string() })?;
        pgroup::register(child.id());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            pgroup::unregister(child.id());
            return Err(AdapterError::Spawn { cmd: command.to_string(), reason: "no stdout/stderr pipe".into() });
        };
        let (tx, rx) = mpsc::channel();
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
                let line = dhp_core::store::location::mask_secrets(&line);
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
        })
    }

    /// Send `hello` and check the answer.
    pub fn handshake(&mut self) -> Result<&Hello, AdapterError> {
        let id = self.send("hello", json!({"adapter_protocol": protocol::ADAPTER_PROTOCOL}), None)?;
        self.finish_handshake(id)
    }

    /// Receive the `hello` answer for a request sent with [`Adapter::send`].
    pub fn finish_handshake(&mut self, id: u64) -> Result<&Hello, AdapterError> {
        match self.recv(id, "hello")? {
            Reply::Ok(v) => Ok(self.hello.insert(Hello::from_result(&v))),
            Reply::Err(e) => {
                self.broken = true;
                Err(AdapterError::Handshake(format!("hello refused: {e}")))
            }
        }
    }

    /// The `hello` answer, once the handshake succeeded.
    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once an exchange failed; a broken adapter is never reused.
    pub fn is_broken(&self) -> bool {
        self.broken || self.exited
    }

    fn tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if t.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = t.iter().rev().take(5).rev().map(String::as_str).collect();
            format!("; adapter stderr tail: {}", lines.join(" | "))
        }
    }

    /// Write one request; returns its id. `at` is the barrier time.
    pub fn send(&mut self, op: &str, args: Value, at: Option<f64>) -> Result<u64, AdapterError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut req = json!({"id": id, "op": op, "args": args});
        if let Some(at) = at {
            req["at"] = json!(at);
        }
        protocol::validate_request(&req).map_err(|detail| AdapterError::BadRequest { op: op.into(), detail })?;
        let mut line = req.to_string().into_bytes();
        line.push(b'\n');
        let res = match self.stdin.as_mut() {
            Some(w) => w.write_all(&line).and_then(|_| w.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        if let Err(e) = res {
            self.broken = true;
            // A dead process is the real story; report that if we can.
            std::thread::sleep(Duration::from_millis(20));
            if let Some(status) = self.exit_status() {
                return Err(AdapterError::Exited { op: op.into(), status, tail: self.tail() });
            }
            return Err(AdapterError::Io(e.to_string()));
        }
        Ok(id)
    }

    /// Wait for the reply to request `id`.
    pub fn recv(&mut self, id: u64, op: &str) -> Result<Reply, AdapterError> {
        let res = self.recv_inner(id, op);
        if let Err(e) = &res {
            self.broken = true;
            if matches!(e, AdapterError::Timeout { .. }) {
                if let Some(n) = &self.timeouts {
                    n.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        res
    }

    fn recv_inner(&mut self, id: u64, op: &str) -> Result<Reply, AdapterError> {
        let deadline = Instant::now() + self.timeout;
        let line = match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Incoming::Line(l)) => l,
            Ok(Incoming::TooLong) => return Err(AdapterError::TooLong { op: op.into(), tail: self.tail() }),
            Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait_exit(Duration::from_millis(500));
                return Err(AdapterError::Exited { op: op.into(), status, tail: self.tail() });
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(AdapterError::Timeout {
                    op: op.into(),
                    secs: self.timeout.as_secs_f64(),
                    tail: self.tail(),
                })
            }
        };
        let v: Value = match serde_json::from_str(&line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                let mut shown: String = line.chars().take(200).collect();
                if shown.len() < line.len() {
                    shown.push('…');
                }
                return Err(AdapterError::Garbage { op: op.into(), line: shown, tail: self.tail() });
            }
        };
        if v.get("id").and_then(Value::as_u64) != Some(id) {
            let got = v.get("id").map(|i| i.to_string()).unwrap_or_else(|| "none".into());
            return Err(AdapterError::WrongId { op: op.into(), expected: id, got });
        }
        protocol::validate_reply(op, &v).map_err(|detail| AdapterError::Schema { op: op.into(), detail })?;
        if v["ok"] == Value::Bool(true) {
            Ok(Reply::Ok(v["result"].clone()))
        } else {
            let e = &v["error"];
            Ok(Reply::Err(ErrorReply {
                kind: e["kind"].as_str().unwrap_or_default().to_string(),
                message: e["message"].as_str().unwrap_or_default().to_string(),
            }))
        }
    }

    /// Send and wait.
    pub fn call(&mut self, op: &str, args: Value) -> Result<Reply, AdapterError> {
        let id = self.send(op, args, None)?;
        self.recv(id, op)
    }

    /// How the process ended, if it has, without reaping it: until it is
    /// reaped its pid — the id of its process group — cannot be reused, so
    /// killing that group later cannot hit anyone else.
    fn exit_status(&mut self) -> Option<String> {
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

    fn wait_exit(&mut self, grace: Duration) -> String {
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
        self.stdin.take();
        if !self.exited {
            self.wait_exit(Duration::from_millis(500));
        }
        self.kill();
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Healthy adapter processes of one implementation and profile, reused
/// across assertions (every assertion works in its own store roots).
pub struct Pool {
    command: String,
    profile: Profile,
    timeout: Duration,
    echo_stderr: bool,
    idle: Mutex<Vec<Adapter>>,
    /// Requests of this pool's processes that timed out.
    timeouts: Arc<AtomicU64>,
    log: Option<Arc<StderrLog>>,
}

/// Idle processes kept per pool; extra ones are closed when returned.
const MAX_IDLE: usize = 6;

impl Pool {
    /// An empty pool of `command` (a shell command line) started with
    /// `profile`; each request waits at most `timeout`, and with
    /// `echo_stderr` the processes' stderr lines are echoed to ours.
    pub fn new(command: &str, profile: Profile, timeout: Duration, echo_stderr: bool) -> Pool {
        Pool {
            command: command.to_string(),
            profile,
            timeout,
            echo_stderr,
            idle: Mutex::new(Vec::new()),
            timeouts: Arc::default(),
            log: None,
        }
    }

    /// Copy every process's stderr lines to `log` too.
    pub fn with_log(mut self, log: Arc<StderrLog>) -> Pool {
        self.log = Some(log);
        self
    }

    /// How many requests of this pool's processes have timed out so far.
    pub fn timeouts(&self) -> u64 {
        self.timeouts.load(Ordering::SeqCst)
    }

    fn start(&self) -> Result<Adapter, AdapterError> {
        let mut a =
            Adapter::start_logged(&self.command, self.profile, self.timeout, self.echo_stderr, self.log.clone())?;
        a.timeouts = Some(self.timeouts.clone());
        Ok(a)
    }

    /// An idle process, or a new one.
    pub fn get(&self) -> Result<Lease<'_>, AdapterError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(a) => Ok(Lease { pool: self, adapter: Some(a) }),
            None => self.fresh(),
        }
    }

    /// Always a new process.
    pub fn fresh(&self) -> Result<Lease<'_>, AdapterError> {
        let mut a = self.start()?;
        a.handshake()?;
        Ok(Lease { pool: self, adapter: Some(a) })
    }

    /// `n` new processes, started together and handshaken in parallel.
    pub fn fresh_many(&self, n: usize) -> Result<Vec<Lease<'_>>, AdapterError> {
        let mut started = Vec::with_capacity(n);
        for _ in 0..n {
            let mut a = self.start()?;
            let id = a.send("hello", json!({"adapter_protocol": protocol::ADAPTER_PROTOCOL}), None)?;
            started.push((a, id));
        }
        let mut out = Vec::with_capacity(n);
        for (mut a, id) in started {
            a.finish_handshake(id)?;
            out.push(Lease { pool: self, adapter: Some(a) });
        }
        Ok(out)
    }

    /// Close every idle process.
    pub fn drain(&self) {
        let idle: Vec<Adapter> = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        for a in idle {
            a.close();
        }
    }

    fn put_back(&self, a: Adapter) {
        if a.is_broken() {
            return; // dropped: killed
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(a);
        } else {
            drop(idle);
            a.close();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.drain();
    }
}

/// A process borrowed from a [`Pool`]; returned when dropped unless broken.
pub struct Lease<'p> {
    pool: &'p Pool,
    adapter: Option<Adapter>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Adapter;
    fn deref(&self) -> &Adapter {
        self.adapter.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Adapter {
        self.adapter.as_mut().expect("present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(a) = self.adapter.take() {
            self.pool.put_back(a);
        }
    }
}

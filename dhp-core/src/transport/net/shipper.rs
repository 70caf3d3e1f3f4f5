//! The TCP shipper: a background thread owns the connection and ships a
//! queue of lines; callers wait (boundedly) for acknowledgements.
//!
//! Every line goes to the local buffer log first (when one is configured),
//! then into the queue. The thread connects, says hello, learns the
//! server's `ack_seq`, drops what the server already holds, replays from the
//! local buffer log what it lacks, re-sends the envelope header, and then
//! pipelines up to `window` frames at a time. On any I/O failure it
//! reconnects with exponential backoff, forever; a caller never waits longer
//! than `call_timeout` and gets [`Error::Transport`] when that runs out (the
//! line stays queued and in the local log).

use super::seqset::SeqSet;
use super::{ends_torn, over_cap, read_frame_sync, Appender, Frame, MAX_REPLY_BYTES};
use crate::config::Config;
use crate::envelope;
use crate::error::{Error, Result};
use crate::json;
use crate::transport::log::{self, Line};
use crate::transport::Shipper;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// When `ship_checkpoint` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShipMode {
    /// Only after the server acknowledged the line: every checkpoint whose
    /// ship returned is on the peer.
    Sync,
    /// At once, unless more than `max_lag` lines are unacknowledged; then it
    /// waits until the backlog is back under the bound.
    Async {
        /// Most unacknowledged lines before a ship call waits.
        max_lag: usize,
    },
}

/// Where the shipper keeps its local copy of every line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferLog {
    /// One log file (one handoff; a second handoff is refused).
    File(PathBuf),
    /// `<dir>/<hid>.log` per handoff.
    Dir(PathBuf),
}

impl BufferLog {
    fn path_for(&self, hid: &str) -> Result<PathBuf> {
        match self {
            BufferLog::File(p) => Ok(p.clone()),
            BufferLog::Dir(d) => log::log_path(d, hid),
        }
    }
}

/// Knobs of a [`TcpShipper`].
#[derive(Debug, Clone)]
pub struct ShipperOptions {
    /// Sent in every hello (`DHP_TRANSPORT_TOKEN`).
    pub token: String,
    /// When a ship call returns: at the durable ack, or once buffered.
    pub mode: ShipMode,
    /// Local buffer log; `None` keeps unacknowledged lines in memory only.
    pub buffer: Option<BufferLog>,
    /// Longest any one call waits (connecting, backing off, acks).
    pub call_timeout: Duration,
    /// Longest one TCP connect may take.
    pub connect_timeout: Duration,
    /// Per read/write on the socket; a silent peer is dropped after this.
    pub io_timeout: Duration,
    /// First pause between attempts (doubles up to `backoff_max`).
    pub backoff_initial: Duration,
    /// Longest pause between attempts (capped at a quarter of
    /// `call_timeout`, so a waiting caller sees several attempts).
    pub backoff_max: Duration,
    /// Frames in flight before waiting for their replies.
    pub window: usize,
    /// `transport_max_line_bytes` caps a line.
    pub cfg: Config,
}

impl Default for ShipperOptions {
    fn default() -> Self {
        ShipperOptions {
            token: String::new(),
            mode: ShipMode::Sync,
            buffer: None,
            call_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(3),
            io_timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(50),
            backoff_max: Duration::from_secs(1),
            window: 64,
            cfg: Config::default(),
        }
    }
}

impl ShipperOptions {
    /// Defaults, with the token from `DHP_TRANSPORT_TOKEN` and limits from
    /// the `DHP_*` environment.
    pub fn from_env(mode: ShipMode) -> Result<Self> {
        Ok(ShipperOptions {
            token: std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default(),
            mode,
            cfg: Config::from_env()?,
            ..Default::default()
        })
    }
}

/// A server refusal, kept until the caller it concerns collects it.
#[derive(Debug, Clone)]
enum Refusal {
    Tamper(String),
    Transport(String),
}

impl Refusal {
    fn classify(what: &str, msg: &str) -> Self {
        let text = format!("server refused {what}: {msg}");
        if msg.contains("hash mismatch") || msg.contains("identity") || msg.contains("binding mismatch") {
            Refusal::Tamper(text)
        } else {
            Refusal::Transport(text)
        }
    }

    fn into_error(self) -> Error {
        match self {
            Refusal::Tamper(m) => Error::tamper(m),
            Refusal::Transport(m) => Error::transport(m),
        }
    }
}

/// Replies that say "try again later" rather than "never".
fn transient(msg: &str) -> bool {
    msg.starts_with("server cannot") || msg.starts_with("server busy") || msg.contains("log writer task failed")
}

#[derive(Debug)]
struct Item {
    ticket: u64,
    seq: i64,
    line: Arc<str>,
}

#[derive(Debug, Default)]
struct HidQ {
    /// The envelope frame, re-sent after every hello.
    envelope: Option<Arc<str>>,
    env_ticket: u64,
    env_acked: bool,
    items: VecDeque<Item>,
    /// The server's `ack_seq` as of the last hello, raised by acks since.
    server_ack: Option<i64>,
    want_hello: bool,
    /// The server refused our hello (bad token, ...).
    rejected: Option<String>,
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl HidQ {
    fn has_work(&self) -> bool {
        (self.envelope.is_some() && !self.env_acked) || !self.items.is_empty() || self.want_hello
    }
}

#[derive(Debug, Default)]
struct State {
    queues: HashMap<String, HidQ>,
    next_ticket: u64,
    /// Lines queued and not yet acknowledged, over all handoffs.
    unacked: usize,
    /// Tickets a caller is waiting on.
    waiting: HashSet<u64>,
    outcomes: HashMap<u64, std::result::Result<(), Refusal>>,
    /// Refusals of lines nobody waited for (async), reported by the next call.
    failures: VecDeque<Refusal>,
    last_error: Option<String>,
    stop: bool,
}

impl State {
    fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    fn resolve(&mut self, ticket: u64, r: std::result::Result<(), Refusal>) {
        if self.waiting.remove(&ticket) {
            self.outcomes.insert(ticket, r);
        } else if let Err(f) = r {
            self.failures.push_back(f);
        }
    }
}

struct Shared {
    st: Mutex<State>,
    /// Wakes the shipping thread.
    work: Condvar,
    /// Wakes callers.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the caller side knows about a handoff's local buffer log.
#[derive(Debug)]
struct LocalLog {
    out: Appender,
    seqs: SeqSet,
}

/// Ships checkpoint lines to a [`run`](super::run) server or the
/// reference's `TransportServer`.
pub struct TcpShipper {
    shared: Arc<Shared>,
    opts: ShipperOptions,
    addr: String,
    locals: HashMap<String, LocalLog>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TcpShipper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpShipper").field("addr", &self.addr).field("mode", &self.opts.mode).finish()
    }
}

fn check_addr(addr: &str) -> Result<()> {
    let bad = || Error::transport(format!("ship-to address {addr:?} is not HOST:PORT"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad());
    }
    Ok(())
}

impl TcpShipper {
    /// A shipper to `addr` (`HOST:PORT`). Connects lazily, in the
    /// background.
    pub fn new(addr: &str, opts: ShipperOptions) -> Result<Self> {
        check_addr(addr)?;
        opts.cfg.validate()?;
        if opts.call_timeout.is_zero() || opts.io_timeout.is_zero() || opts.connect_timeout.is_zero() {
            return Err(Error::config("shipper timeouts must be > 0"));
        }
        let mut opts = opts;
        // A caller must see at least a few attempts within its wait.
        opts.backoff_max = opts.backoff_max.min(opts.call_timeout / 4).max(Duration::from_millis(1));
        opts.backoff_initial = opts.backoff_initial.min(opts.backoff_max);
        let shared = Arc::new(Shared { st: Mutex::new(State::default()), work: Condvar::new(), done: Condvar::new() });
        let thread = {
            let (shared, addr, opts) = (shared.clone(), addr.to_string(), opts.clone());
            std::thread::Builder::new()
                .name("dhp-ship".into())
                .spawn(move || Pump { shared, addr, opts }.run())
                .map_err(|e| Error::transport_from(format!("cannot start the shipping thread: {e}"), e))?
        };
        Ok(TcpShipper { shared, opts, addr: addr.to_string(), locals: HashMap::new(), thread: Some(thread) })
    }

    /// Lines queued and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.shared.lock().unacked
    }

    /// Flush, say bye, and stop the shipping thread.
    pub fn close(mut self) -> Result<()> {
        let r = self.flush();
        self.stop(true);
        r
    }

    fn stop(&mut self, join: bool) {
        self.shared.lock().stop = true;
        self.shared.work.notify_all();
        if let Some(t) = self.thread.take() {
            if join {
                let _ = t.join();
            }
        }
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.opts.call_timeout
    }

    fn timeout_error(&self, st: &State, what: &str) -> Error {
        Error::transport(format!(
            "{what} not acknowledged by {} within {:.1}s (kept {}; last error: {})",
            self.addr,
            self.opts.call_timeout.as_secs_f64(),
            if self.opts.buffer.is_some() { "in the local buffer log and queued" } else { "queued" },
            st.last_error.as_deref().unwrap_or("none")
        ))
    }

    /// Wait for one ticket's outcome.
    fn wait_ticket(&self, hid: &str, ticket: u64, what: &str) -> Result<()> {
        let deadline = self.deadline();
        let mut st = self.shared.lock();
        loop {
            if let Some(r) = st.outcomes.remove(&ticket) {
                return r.map_err(Refusal::into_error);
            }
            if let Some(m) = st.queues.get(hid).and_then(|q| q.rejected.clone()) {
                st.waiting.remove(&ticket);
                return Err(Error::transport(format!("server refused the connection: {m}")));
            }
            let now = Instant::now();
            if now >= deadline {
                st.waiting.remove(&ticket);
                return Err(self.timeout_error(&st, what));
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn take_failure(&self) -> Result<()> {
        match self.shared.lock().failures.pop_front() {
            Some(f) => Err(f.into_error()),
            None => Ok(()),
        }
    }

    fn local(&mut self, hid: &str) -> Result<Option<&mut LocalLog>> {
        let Some(buf) = &self.opts.buffer else { return Ok(None) };
        if !self.locals.contains_key(hid) {
            let path = buf.path_for(hid)?;
            if matches!(buf, BufferLog::File(_)) && !self.locals.is_empty() {
                return Err(Error::transport(format!(
                    "buffer log {} already holds another handoff; use a directory buffer for several",
                    path.display()
                )));
            }
            let (seqs, torn) = scan_local(&path, hid, &self.opts.cfg)?;
            self.locals.insert(hid.to_string(), LocalLog { out: Appender::new(path, torn), seqs });
        }
        Ok(self.locals.get_mut(hid))
    }

    fn rejected(&self, hid: &str) -> Option<String> {
        self.shared.lock().queues.get(hid).and_then(|q| q.rejected.clone())
    }
}

/// Seqs already in a local buffer log, and whether it ends torn. A log
/// whose header names another handoff is refused.
fn scan_local(path: &std::path::Path, hid: &str, cfg: &Config) -> Result<(SeqSet, bool)> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((SeqSet::new(), false)),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut seqs = SeqSet::new();
    let mut header = false;
    for line in log::parse_lines(&data, cfg) {
        let Line::Record(v) = line else { continue };
        match v["type"].as_str() {
            Some("envelope") => {
                let h = v.pointer("/envelope/handoff_id").and_then(Value::as_str).unwrap_or("");
                if h != hid {
                    return Err(Error::transport(format!(
                        "buffer log {} holds handoff {h:?}, not {hid}",
                        path.display()
                    )));
                }
                header = true;
            }
            // Ingest skips checkpoints before the header; so do we.
            Some("checkpoint") if header => {
                if let Some(s) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) {
                    seqs.insert(s);
                }
            }
            _ => {}
        }
    }
    Ok((seqs, ends_torn(&data)))
}

impl Shipper for TcpShipper {
    fn ship_envelope(&mut self, hid: &str, env: &Value) -> Result<()> {
        envelope::check_hid(hid)?;
        let owner = envelope::verify(env)?;
        if owner != hid {
            return Err(Error::validation(format!("envelope is for handoff {owner}, not {hid}")));
        }
        let line = log::envelope_line(env)?;
        if over_cap(line.len(), self.opts.cfg.transport_max_line_bytes) {
            return Err(Error::Oversize {
                what: "transport line",
                size: line.len() + 1,
                limit: self.opts.cfg.transport_max_line_bytes,
            });
        }
        let cfg = self.opts.cfg.clone();
        if let Some(l) = self.local(hid)? {
            // First writer wins: only an empty or missing log gets a header.
            log::ship_envelope(&l.out.path, env, &cfg)?;
        }
        let sync = self.opts.mode == ShipMode::Sync;
        let ticket = {
            let mut st = self.shared.lock();
            let t = st.ticket();
            let q = st.queues.entry(hid.to_string()).or_default();
            q.envelope = Some(line.into());
            q.env_acked = false;
            q.env_ticket = t;
            if sync {
                st.waiting.insert(t);
            }
            t
        };
        self.shared.work.notify_all();
        if sync {
            self.wait_ticket(hid, ticket, "envelope")
        } else {
            self.take_failure()
        }
    }

    fn ship_checkpoint(&mut self, hid: &str, seq: i64, line: &str) -> Result<()> {
        envelope::check_hid(hid)?;
        if seq < 0 {
            return Err(Error::validation(format!("checkpoint seq {seq} is negative")));
        }
        if line.contains('\n') {
            return Err(Error::validation("a transport line cannot contain a newline"));
        }
        let max = self.opts.cfg.transport_max_line_bytes;
        if over_cap(line.len(), max) {
            return Err(Error::Oversize { what: "transport line", size: line.len() + 1, limit: max });
        }
        if let Some(m) = self.rejected(hid) {
            return Err(Error::transport(format!("server refused the connection: {m}")));
        }
        if let Some(l) = self.local(hid)? {
            if !l.seqs.contains(seq) {
                l.out.append(line.as_bytes())?;
                l.seqs.insert(seq);
            }
        }
        let sync = self.opts.mode == ShipMode::Sync;
        let ticket = {
            let mut st = self.shared.lock();
            let fresh = st.ticket();
            let q = st.queues.entry(hid.to_string()).or_default();
            // The same seq may already be queued (replayed from the buffer).
            let ticket = match q.items.iter().rev().find(|i| i.seq == seq) {
                Some(i) => i.ticket,
                None => {
                    q.items.push_back(Item { ticket: fresh, seq, line: line.into() });
                    st.unacked += 1;
                    fresh
                }
            };
            if sync {
                st.waiting.insert(ticket);
            }
            ticket
        };
        self.shared.work.notify_all();
        match self.opts.mode {
            ShipMode::Sync => self.wait_ticket(hid, ticket, &format!("checkpoint {seq}")),
            ShipMode::Async { max_lag } => {
                self.take_failure()?;
                let deadline = self.deadline();
                let mut st = self.shared.lock();
                while st.unacked > max_lag {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(self.timeout_error(&st, &format!("backlog of {} lines", st.unacked)));
                    }
                    st = self
                        .shared
                        .done
                        .wait_timeout(st, deadline - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                Ok(())
            }
        }
    }

    fn acked_seq(&mut self, hid: &str) -> Result<i64> {
        envelope::check_hid(hid)?;
        let deadline = self.deadline();
        let mut st = self.shared.lock();
        let q = st.queues.entry(hid.to_string()).or_default();
        if let Some(a) = q.server_ack {
            return Ok(a);
        }
        q.want_hello = true;
        self.shared.work.notify_all();
        loop {
            let q = st.queues.entry(hid.to_string()).or_default();
            if let Some(a) = q.server_ack {
                return Ok(a);
            }
            if let Some(m) = &q.rejected {
                return Err(Error::transport(format!("server refused the connection: {m}")));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timeout_error(&st, "hello"));
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn flush(&mut self) -> Result<()> {
        let deadline = self.deadline();
        {
            let mut st = self.shared.lock();
            loop {
                let envs_pending =
                    st.queues.values().any(|q| q.envelope.is_some() && !q.env_acked && q.rejected.is_none());
                if st.unacked == 0 && !envs_pending {
                    break;
                }
                if let Some((_, m)) = st.queues.iter().find_map(|(h, q)| q.rejected.as_ref().map(|m| (h, m))) {
                    return Err(Error::transport(format!("server refused the connection: {m}")));
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(self.timeout_error(&st, &format!("flush of {} lines", st.unacked)));
                }
                st = self
                    .shared
                    .done
                    .wait_timeout(st, deadline - now)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        self.take_failure()
    }
}

impl Drop for TcpShipper {
    fn drop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        // Best effort: give a healthy connection a moment to drain the
        // backlog (the lines are in the local buffer log regardless); a
        // peer that is down or refusing us gets no extra wait.
        let deadline = Instant::now() + self.opts.call_timeout.min(Duration::from_secs(2));
        let mut st = self.shared.lock();
        while st.unacked > 0 && st.last_error.is_none() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        drop(st);
        // Do not join: the thread may sit in a connect or read for up to
        // its timeout; it exits at its next look at `stop`.
        self.stop(false);
    }
}

// ---------------------------------------------------------------------------
// the shipping thread
// ---------------------------------------------------------------------------

struct Conn {
    hid: String,
    reader: BufReader<TcpStream>,
    writer: std::io::BufWriter<TcpStream>,
    buf: Vec<u8>,
}

enum ConnErr {
    /// The server answered the hello with a refusal.
    Refused(String),
    /// Anything that may heal: refused connection, timeout, reset, busy.
    Io(String),
}

fn line_of(v: &Value) -> String {
    let mut s = json::dumps_sorted(v).unwrap_or_default();
    s.push('\n');
    s
}

impl Conn {
    fn open(addr: &str, hid: &str, opts: &ShipperOptions) -> std::result::Result<(Conn, i64), ConnErr> {
        let addrs: Vec<_> = addr.to_socket_addrs().map_err(|e| ConnErr::Io(format!("resolve {addr}: {e}")))?.collect();
        let mut last = format!("{addr} resolves to no address");
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, opts.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = format!("connect {a}: {e}"),
            }
        }
        let stream = stream.ok_or(ConnErr::Io(last))?;
        let io = |e: std::io::Error| ConnErr::Io(format!("{addr}: {e}"));
        stream.set_nodelay(true).map_err(io)?;
        stream.set_read_timeout(Some(opts.io_timeout)).map_err(io)?;
        stream.set_write_timeout(Some(opts.io_timeout)).map_err(io)?;
        let mut c = Conn {
            hid: hid.to_string(),
            reader: BufReader::new(stream.try_clone().map_err(io)?),
            writer: std::io::BufWriter::with_capacity(64 * 1024, stream),
            buf: Vec::new(),
        };
        let hello = line_of(&json!({"type": "hello", "handoff_id": hid, "token": opts.token}));
        c.writer.write_all(hello.as_bytes()).and_then(|_| c.writer.flush()).map_err(io)?;
        let reply = c.reply().map_err(ConnErr::Io)?;
        if reply.get("ok") != Some(&Value::Bool(true)) {
            let msg = reply.get("error").and_then(Value::as_str).unwrap_or("no reason given").to_string();
            return Err(if transient(&msg) { ConnErr::Io(msg) } else { ConnErr::Refused(msg) });
        }
        let ack = reply
            .get("ack_seq")
            .and_then(Value::as_i64)
            .ok_or_else(|| ConnErr::Io(format!("hello reply without ack_seq: {reply}")))?;
        Ok((c, ack))
    }

    fn reply(&mut self) -> std::result::Result<Value, String> {
        match read_frame_sync(&mut self.reader, &mut self.buf, MAX_REPLY_BYTES) {
            Ok(Frame::Line) => match json::parse_bytes(&self.buf) {
                Ok(v) if v.is_object() => Ok(v),
                _ => Err(format!(
                    "bad reply from server: {:?}",
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(200)])
                )),
            },
            Ok(Frame::Eof) | Ok(Frame::Partial) => Err("connection closed by server".into()),
            Ok(Frame::TooLong) | Ok(Frame::Overrun) => Err("reply from server exceeds 64 KiB".into()),
            Err(e) => Err(format!("reading reply: {e}")),
        }
    }

    fn bye(mut self) {
        let _ = self.writer.write_all(b"{\"type\": \"bye\"}\n").and_then(|_| self.writer.flush());
        // The reply is a courtesy; do not wait for it.
    }
}

/// A frame in flight and what its reply settles.
enum Expect {
    Envelope(u64),
    Checkpoint { ticket: u64, seq: i64 },
}

struct Pump {
    shared: Arc<Shared>,
    addr: String,
    opts: ShipperOptions,
}

impl Pump {
    fn run(self) {
        let mut conn: Option<Conn> = None;
        while let Some(hid) = self.next_job(conn.as_ref().map(|c| c.hid.as_str())) {
            if conn.as_ref().is_some_and(|c| c.hid != hid) {
                if let Some(c) = conn.take() {
                    c.bye();
                }
            }
            if conn.is_none() {
                match Conn::open(&self.addr, &hid, &self.opts) {
                    Ok((c, ack)) => {
                        self.on_hello(&hid, ack);
                        conn = Some(c);
                    }
                    Err(ConnErr::Refused(m)) => {
                        tracing::warn!(error = %m, "transport: server refused hello");
                        self.failed(&hid, m, true);
                        continue;
                    }
                    Err(ConnErr::Io(m)) => {
                        tracing::debug!(error = %m, "transport: connect failed");
                        self.failed(&hid, m, false);
                        continue;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue };
            if let Err(m) = self.drive(c) {
                tracing::info!(error = %m, "transport: connection lost; will reconnect");
                conn = None;
                self.failed(&hid, m, false);
            }
        }
        if let Some(c) = conn {
            c.bye();
        }
    }

    /// Block until some handoff has work that may be attempted now; `None`
    /// when stopping.
    fn next_job(&self, current: Option<&str>) -> Option<String> {
        let mut st = self.shared.lock();
        loop {
            if st.stop {
                return None;
            }
            let now = Instant::now();
            let ready = |q: &HidQ| q.has_work() && q.retry_at.is_none_or(|t| t <= now);
            if let Some(h) = current.filter(|h| st.queues.get(*h).is_some_and(ready)) {
                return Some(h.to_string());
            }
            if let Some(h) = st.queues.iter().find(|(_, q)| ready(q)).map(|(h, _)| h.clone()) {
                return Some(h);
            }
            let wake = st.queues.values().filter(|q| q.has_work()).filter_map(|q| q.retry_at).min();
            st = match wake {
                Some(t) => self
                    .shared
                    .work
                    .wait_timeout(st, t.saturating_duration_since(now))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0),
                None => self.shared.work.wait(st).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }

    /// Record a failed attempt and schedule the next one.
    fn failed(&self, hid: &str, msg: String, refused: bool) {
        let mut st = self.shared.lock();
        st.last_error = Some(msg.clone());
        let q = st.queues.entry(hid.to_string()).or_default();
        q.backoff = if refused {
            self.opts.backoff_max
        } else if q.backoff.is_zero() {
            self.opts.backoff_initial
        } else {
            (q.backoff * 2).min(self.opts.backoff_max)
        };
        q.retry_at = Some(Instant::now() + q.backoff);
        q.env_acked = false;
        if refused {
            q.rejected = Some(msg);
        }
        drop(st);
        self.shared.done.notify_all();
    }

    /// After a good hello: forget what the server holds, replay what it
    /// lacks from the local buffer log, and re-send the envelope.
    fn on_hello(&self, hid: &str, ack: i64) {
        let replay = self.replay_lines(hid, ack);
        let mut st = self.shared.lock();
        st.last_error = None;
        let mut settled = Vec::new();
        {
            let q = st.queues.entry(hid.to_string()).or_default();
            q.server_ack = Some(ack);
            q.want_hello = false;
            q.rejected = None;
            q.retry_at = None;
            q.backoff = Duration::ZERO;
            q.env_acked = false;
            q.items.retain(|i| {
                if i.seq <= ack {
                    settled.push(i.ticket);
                    false
                } else {
                    true
                }
            });
        }
        st.unacked -= settled.len();
        for t in settled {
            st.resolve(t, Ok(()));
        }
        let mut added = 0;
        if !replay.is_empty() {
            let mut tickets = Vec::with_capacity(replay.len());
            for _ in 0..replay.len() {
                tickets.push(st.ticket());
            }
            let q = st.queues.entry(hid.to_string()).or_default();
            let have: HashSet<i64> = q.items.iter().map(|i| i.seq).collect();
            for ((seq, line), ticket) in replay.into_iter().zip(tickets) {
                if !have.contains(&seq) {
                    q.items.push_back(Item { ticket, seq, line });
                    added += 1;
                }
            }
        }
        st.unacked += added;
        // Lines past a hole that neither the queue nor the buffer log can
        // fill would be refused forever: fail them now, loudly.
        let q = st.queues.entry(hid.to_string()).or_default();
        q.items.make_contiguous().sort_by_key(|i| i.seq);
        let mut lost = Vec::new();
        let first = q.items.front().map_or(ack + 1, |i| i.seq);
        if first > ack + 1 {
            tracing::warn!(hid = &hid[..12], ack, first, "transport: server lacks seqs this shipper no longer has");
            lost.extend(q.items.drain(..).map(|i| (i.ticket, i.seq)));
        }
        st.unacked -= lost.len();
        for (ticket, seq) in lost {
            let msg = format!(
                "checkpoint {seq} cannot be delivered: the server expects seq {} and seqs {}..={} are in neither its log nor this shipper's",
                ack + 1,
                ack + 1,
                first - 1
            );
            st.resolve(ticket, Err(Refusal::Transport(msg)));
        }
        if added > 0 {
            tracing::info!(hid = &hid[..12], ack, replayed = added, "transport: replaying from the local buffer log");
        }
        drop(st);
        self.shared.done.notify_all();
    }

    /// Checkpoint lines above `ack` in the local buffer log (first copy of
    /// each seq; torn and foreign lines skipped), in seq order.
    fn replay_lines(&self, hid: &str, ack: i64) -> Vec<(i64, Arc<str>)> {
        let Some(path) = self.opts.buffer.as_ref().and_then(|b| b.path_for(hid).ok()) else { return Vec::new() };
        let Ok(data) = std::fs::read(&path) else { return Vec::new() };
        let max = self.opts.cfg.transport_max_line_bytes;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut ours = false;
        for raw in data.split(|b| *b == b'\n') {
            let raw = raw.trim_ascii();
            if raw.is_empty() || over_cap(raw.len(), max) {
                continue;
            }
            let Ok(v) = json::parse_bytes(raw) else { continue };
            match v.get("type").and_then(Value::as_str) {
                Some("envelope") => ours = v.pointer("/envelope/handoff_id").and_then(Value::as_str) == Some(hid),
                Some("checkpoint") if ours => {
                    let Some(seq) = v.get("seq").and_then(Value::as_i64).filter(|s| *s > ack) else { continue };
                    if seen.insert(seq) {
                        if let Ok(text) = std::str::from_utf8(raw) {
                            out.push((seq, Arc::from(text)));
                        }
                    }
                }
                _ => {}
            }
        }
        out.sort_by_key(|(s, _)| *s);
        out
    }

    /// Keep up to `window` frames in flight on `c`, settling replies as
    /// they arrive and topping the window up after each (so the peer's
    /// acks never wait on a delayed ACK), until nothing for its handoff is
    /// queued or in flight.
    fn drive(&self, c: &mut Conn) -> std::result::Result<(), String> {
        let window = self.opts.window.max(1);
        let mut in_flight: VecDeque<Expect> = VecDeque::new();
        let mut env_in_flight = false;
        let mut cps_in_flight = 0usize;
        let mut frames: Vec<Arc<str>> = Vec::new();
        loop {
            frames.clear();
            {
                let mut st = self.shared.lock();
                if st.stop {
                    return Ok(());
                }
                let q = st.queues.entry(c.hid.clone()).or_default();
                let mut room = window.saturating_sub(in_flight.len());
                if room > 0 && !env_in_flight && !q.env_acked {
                    if let Some(env) = &q.envelope {
                        in_flight.push_back(Expect::Envelope(q.env_ticket));
                        frames.push(env.clone());
                        env_in_flight = true;
                        room -= 1;
                    }
                }
                // In-flight checkpoints are always the front of the queue.
                for i in q.items.iter().skip(cps_in_flight).take(room) {
                    in_flight.push_back(Expect::Checkpoint { ticket: i.ticket, seq: i.seq });
                    frames.push(i.line.clone());
                    cps_in_flight += 1;
                }
                if in_flight.is_empty() {
                    q.want_hello = false;
                    drop(st);
                    self.shared.done.notify_all();
                    return Ok(());
                }
            }
            if !frames.is_empty() {
                for line in &frames {
                    c.writer
                        .write_all(line.as_bytes())
                        .and_then(|_| c.writer.write_all(b"\n"))
                        .map_err(|e| format!("sending: {e}"))?;
                }
                c.writer.flush().map_err(|e| format!("sending: {e}"))?;
            }
            let Some(expect) = in_flight.pop_front() else { continue };
            let reply = c.reply()?;
            let ok = reply.get("ok") == Some(&Value::Bool(true));
            let err = reply.get("error").and_then(Value::as_str).unwrap_or("no reason given").to_string();
            if !ok && transient(&err) {
                return Err(err);
            }
            if !ok && matches!(expect, Expect::Checkpoint { .. }) && err.starts_with("gap:") {
                // The peer lacks earlier seqs: a fresh hello tells us where
                // it stands, and the replay fills the hole before this one.
                let next = reply.get("expect_seq").and_then(Value::as_i64).unwrap_or(-1);
                return Err(format!("server expects seq {next} ({err}); reconnecting to catch up"));
            }
            let mut st = self.shared.lock();
            match expect {
                Expect::Envelope(ticket) => {
                    env_in_flight = false;
                    let q = st.queues.entry(c.hid.clone()).or_default();
                    if q.env_ticket == ticket {
                        q.env_acked = true;
                        if !ok {
                            // A refused envelope is never re-sent.
                            q.envelope = None;
                        }
                    }
                    if !ok {
                        tracing::warn!(error = %err, "transport: server refused the envelope");
                    }
                    st.resolve(ticket, if ok { Ok(()) } else { Err(Refusal::classify("envelope", &err)) });
                }
                Expect::Checkpoint { ticket, seq } => {
                    if ok && reply.get("seq").and_then(Value::as_i64) != Some(seq) {
                        return Err(format!(
                            "server acked {} for checkpoint {seq}",
                            reply.get("seq").unwrap_or(&Value::Null)
                        ));
                    }
                    cps_in_flight -= 1;
                    let q = st.queues.entry(c.hid.clone()).or_default();
                    let Some(pos) = q.items.iter().position(|i| i.ticket == ticket) else { continue };
                    q.items.remove(pos);
                    if ok {
                        q.server_ack = Some(q.server_ack.unwrap_or(-1).max(seq));
                    } else {
                        tracing::warn!(seq, error = %err, "transport: server refused a checkpoint");
                    }
                    st.unacked -= 1;
                    st.resolve(
                        ticket,
                        if ok { Ok(()) } else { Err(Refusal::classify(&format!("checkpoint {seq}"), &err)) },
                    );
                }
            }
            drop(st);
            self.shared.done.notify_all();
        }
    }
}

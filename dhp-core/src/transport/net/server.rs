//! The transport server: one task per connection, one append lock per
//! handoff log, held only while the log is written.

use super::gate::{once_per_second, Gate, Pass, HELLO_TIMEOUT, PRE_HELLO_MAX_LINE};
use super::journal::{self, Journal, JournalHandle, ROTATE_BYTES};
use super::seqset::SeqSet;
use super::tls::{self, ServerTls};
use super::{ends_torn, read_frame_async, skip_line_async, Appender, Frame};
use crate::config::Config;
use crate::envelope::{self, utcnow_iso};
use crate::error::{Error, Result};
use crate::json;
use crate::runner::checked_state;
use crate::transport::chain;
use crate::transport::log::{self, Line};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Mutex as AsyncMutex, OwnedMutexGuard};
use tokio::task::JoinSet;

/// Connections served at once; more are told `server busy` and closed.
const MAX_CONNECTIONS: usize = 4096;
/// Consecutive rejected frames after which a connection is dropped.
const MAX_BAD_STREAK: u32 = 64;
/// An overlong line is discarded (never buffered) up to this many times
/// the line cap (at least 1 MiB) to find the next frame; a longer one
/// closes the connection.
const SKIP_FACTOR: usize = 4;

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where `<hid>.log` files are written (created if missing).
    pub logdir: PathBuf,
    /// Shared secret every hello must carry; empty disables authentication
    /// (as in the reference).
    pub token: String,
    /// Limits: `transport_max_line_bytes` caps a frame,
    /// `max_checkpoint_bytes` a checkpoint state.
    pub cfg: Config,
    /// A connection that takes longer than this to deliver a whole frame,
    /// or to take a reply, is closed.
    pub idle_timeout: Duration,
    /// Make every appended line durable before acknowledging it: lines are
    /// recorded in a server-wide journal (`journal-*.dhpj` in `logdir`)
    /// whose one `fdatasync` covers every connection's pending lines, and
    /// which is replayed into the logs on start. `false` acks once the line
    /// is in the page cache, as the reference does, and keeps no journal.
    pub fsync: bool,
    /// Serve TLS (optionally demanding client certificates); `None` serves
    /// plaintext, as the reference does.
    pub tls: Option<ServerTls>,
}

/// What a server did, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Hellos accepted (right token, known version).
    pub hellos_accepted: u64,
    /// Hellos refused.
    pub hellos_rejected: u64,
    /// Envelope frames appended.
    pub envelopes: u64,
    /// Checkpoint frames appended to a log.
    pub checkpoints_appended: u64,
    /// Checkpoints already in the log with the same hash (acked again).
    pub checkpoints_duplicate: u64,
    /// Checkpoints refused because an earlier seq is missing.
    pub checkpoints_gap: u64,
    /// Checkpoints refused because the log holds that seq with another hash.
    pub checkpoints_conflict: u64,
    /// Frames refused (malformed, unauthenticated, tampered).
    pub frames_rejected: u64,
    /// Lines over the line limit (the connection is closed).
    pub lines_too_long: u64,
    /// Connections that ended inside a line.
    pub partial_lines: u64,
    /// Connections closed for idling past the idle timeout.
    pub idle_timeouts: u64,
    /// Connections refused at the connection limit (`server busy`).
    pub busy_rejections: u64,
    /// TLS handshakes that failed (untrusted, expired or missing
    /// certificate; a plaintext client), and TLS ClientHellos sent to a
    /// plaintext server.
    pub tls_failures: u64,
    /// Connections closed before their hello to make room for newer ones.
    pub unauthenticated_evicted: u64,
    /// Handoff logs held in memory when the server stopped, and dropped
    /// from memory (unused) while it ran.
    pub logs_cached: u64,
    /// Handoff logs dropped from memory while the server ran.
    pub logs_evicted: u64,
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    hellos_accepted: AtomicU64,
    hellos_rejected: AtomicU64,
    envelopes: AtomicU64,
    checkpoints_appended: AtomicU64,
    checkpoints_duplicate: AtomicU64,
    checkpoints_gap: AtomicU64,
    checkpoints_conflict: AtomicU64,
    frames_rejected: AtomicU64,
    lines_too_long: AtomicU64,
    partial_lines: AtomicU64,
    idle_timeouts: AtomicU64,
    busy_rejections: AtomicU64,
    tls_failures: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    fn snapshot(&self) -> ServerStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ServerStats {
            connections: g(&self.connections),
            hellos_accepted: g(&self.hellos_accepted),
            hellos_rejected: g(&self.hellos_rejected),
            envelopes: g(&self.envelopes),
            checkpoints_appended: g(&self.checkpoints_appended),
            checkpoints_duplicate: g(&self.checkpoints_duplicate),
            checkpoints_gap: g(&self.checkpoints_gap),
            checkpoints_conflict: g(&self.checkpoints_conflict),
            frames_rejected: g(&self.frames_rejected),
            lines_too_long: g(&self.lines_too_long),
            partial_lines: g(&self.partial_lines),
            idle_timeouts: g(&self.idle_timeouts),
            busy_rejections: g(&self.busy_rejections),
            tls_failures: g(&self.tls_failures),
            unauthenticated_evicted: 0,
            logs_cached: 0,
            logs_evicted: 0,
        }
    }
}

/// What the server knows about one `<hid>.log`. Kept in memory so that a
/// hello costs a `stat`, not a scan; re-read whenever the file changed
/// behind our back (size or inode differ from what we wrote).
struct HidLog {
    hid: String,
    /// Where every appended line is recorded first (`None` without fsync,
    /// and while replaying a journal).
    journal: Option<Arc<Journal>>,
    out: Appender,
    loaded: bool,
    len: u64,
    ino: u64,
    /// `handoff_id` of the first envelope record, if any.
    header: Option<String>,
    seqs: SeqSet,
    /// `state_hash` of the most recently appended seqs, so a re-sent
    /// checkpoint is compared without reading the file.
    recent: VecDeque<(i64, String)>,
}

/// Hashes kept per handoff for duplicate checks; older ones are read back
/// from the log.
const RECENT_HASHES: usize = 16;
/// Handoff logs whose state is kept in memory when no connection uses
/// them; past this, unused ones are dropped and re-read from disk on their
/// next hello.
const MAX_CACHED_LOGS: usize = 1024;

/// Why a checkpoint is not acknowledged; both carry the seq the server
/// expects next.
enum SeqRefusal {
    Gap { next: i64 },
    Conflict { next: i64 },
}

#[cfg(unix)]
fn ino_of(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}
#[cfg(not(unix))]
fn ino_of(_m: &std::fs::Metadata) -> u64 {
    0
}

impl HidLog {
    fn new(hid: String, path: PathBuf, journal: Option<Arc<Journal>>) -> Self {
        HidLog {
            hid,
            journal,
            out: Appender::new(path, false),
            loaded: false,
            len: 0,
            ino: 0,
            header: None,
            seqs: SeqSet::new(),
            recent: VecDeque::new(),
        }
    }

    /// Bring the in-memory view up to date with the file.
    fn refresh(&mut self, cfg: &Config) -> Result<()> {
        match std::fs::metadata(&self.out.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (hid, path, journal) =
                    (std::mem::take(&mut self.hid), std::mem::take(&mut self.out.path), self.journal.take());
                *self = HidLog { loaded: true, ..HidLog::new(hid, path, journal) };
                Ok(())
            }
            Err(e) => Err(Error::io(&self.out.path, e)),
            Ok(m) if self.loaded && m.len() == self.len && ino_of(&m) == self.ino => Ok(()),
            Ok(_) => self.rescan(cfg),
        }
    }

    fn rescan(&mut self, cfg: &Config) -> Result<()> {
        let path = &self.out.path;
        let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let mut header = None;
        let mut seqs = SeqSet::new();
        let mut last: Option<(i64, String)> = None;
        for line in log::parse_lines(&data, cfg) {
            let Line::Record(v) = line else { continue };
            match v["type"].as_str() {
                Some("envelope") if header.is_none() => {
                    header = v.pointer("/envelope/handoff_id").and_then(Value::as_str).map(str::to_string);
                }
                // Ingest skips checkpoints before the header; so do we.
                Some("checkpoint") if header.is_some() => {
                    if let Some(s) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) {
                        seqs.insert(s);
                        if last.as_ref().is_none_or(|(l, _)| s > *l) {
                            last = v.get("state_hash").and_then(Value::as_str).map(|h| (s, h.to_string()));
                        }
                    }
                }
                _ => {}
            }
        }
        self.loaded = true;
        self.len = data.len() as u64;
        self.ino = ino_of(&m);
        self.out.reset();
        self.out.torn = ends_torn(&data);
        self.header = header;
        self.seqs = seqs;
        self.recent.clear();
        if self.len != m.len() {
            // Appended to while we read: read again on next use.
            self.loaded = false;
        }
        Ok(())
    }

    /// The `state_hash` logged for `seq` (the first copy after the header).
    fn logged_hash(&self, seq: i64, cfg: &Config) -> Result<Option<String>> {
        if let Some((_, h)) = self.recent.iter().find(|(s, _)| *s == seq) {
            return Ok(Some(h.clone()));
        }
        let path = &self.out.path;
        let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let mut header = false;
        for line in log::parse_lines(&data, cfg) {
            let Line::Record(v) = line else { continue };
            match v["type"].as_str() {
                Some("envelope") => header = true,
                Some("checkpoint") if header && v.get("seq").and_then(Value::as_i64) == Some(seq) => {
                    return Ok(v.get("state_hash").and_then(Value::as_str).map(str::to_string));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    fn remember(&mut self, seq: i64, hash: String) {
        if self.recent.len() >= RECENT_HASHES {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, hash));
    }

    /// Append `line` to the log (synced only at a journal checkpoint),
    /// then record it in the journal (whose sync makes it durable). In
    /// this order a checkpoint that retires the journal record always
    /// finds the log line written.
    fn append(&mut self, line: &str) -> Result<()> {
        let n = self.out.append(line.as_bytes())?;
        if self.len == 0 {
            if let Ok(m) = std::fs::metadata(&self.out.path) {
                self.ino = ino_of(&m);
            }
        }
        self.len += n;
        self.journal_line(line)
    }

    /// Record a line the log already holds in the journal again, before
    /// acking a duplicate: the log's copy may never have been synced (a
    /// server killed after writing it and before its journal record).
    fn journal_line(&self, line: &str) -> Result<()> {
        match &self.journal {
            Some(j) => j.append(&self.hid, line).map(|_| ()),
            None => Ok(()),
        }
    }
}

struct Srv {
    cfg: ServerConfig,
    token_digest: Option<[u8; 32]>,
    logs: std::sync::Mutex<LogCache>,
    stats: Counters,
    gate: Arc<Gate>,
    journal: Option<Arc<Journal>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// Rate limit of TLS failure warnings (one per second).
    last_tls_warn: AtomicU64,
}

/// Per-handoff log state. An entry no connection holds (the map's `Arc`
/// is the only one) can be dropped at any time: it is rebuilt from the
/// file. Entries in use are never dropped, so one handoff never has two
/// appenders.
#[derive(Default)]
struct LogCache {
    map: HashMap<String, Arc<AsyncMutex<HidLog>>>,
    /// Sweep when the map reaches this size (doubles when most entries
    /// are in use, so a sweep stays amortised O(1) per insert).
    sweep_at: usize,
    evicted: u64,
    journal: Option<Arc<Journal>>,
}

impl LogCache {
    fn get(&mut self, hid: &str, path: PathBuf) -> Arc<AsyncMutex<HidLog>> {
        if let Some(l) = self.map.get(hid) {
            return l.clone();
        }
        if self.map.len() >= self.sweep_at.max(MAX_CACHED_LOGS) {
            let before = self.map.len();
            self.map.retain(|_, l| Arc::strong_count(l) > 1);
            self.evicted += (before - self.map.len()) as u64;
            self.sweep_at = (self.map.len() * 2).max(MAX_CACHED_LOGS);
        }
        let l = Arc::new(AsyncMutex::new(HidLog::new(hid.to_string(), path, self.journal.clone())));
        self.map.insert(hid.to_string(), l.clone());
        l
    }
}

/// A reply frame plus whether the connection ends after it.
struct Reply {
    body: Value,
    close: bool,
    /// The reply may leave only once the session's log is synced.
    durable: bool,
}

fn ok(body: Value) -> Reply {
    Reply { body, close: false, durable: false }
}

fn refuse(msg: impl Into<String>) -> Reply {
    Reply { body: json!({"ok": false, "error": msg.into()}), close: false, durable: false }
}

fn refuse_and_close(msg: impl Into<String>) -> Reply {
    Reply { body: json!({"ok": false, "error": msg.into()}), close: true, durable: false }
}

/// What a connection is bound to after a good hello.
struct Session {
    hid: String,
    log: Arc<AsyncMutex<HidLog>>,
}

impl Srv {
    fn hid_log(&self, hid: &str) -> Result<Arc<AsyncMutex<HidLog>>> {
        let path = log::log_path(&self.cfg.logdir, hid)?;
        let mut cache = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        Ok(cache.get(hid, path))
    }

    /// Run `f` on a handoff log under its lock. Scanning a log (first use,
    /// or changed behind our back) runs on the blocking pool; a `stat` and
    /// an append to page cache run inline.
    async fn with_log<T: Send + 'static>(
        &self,
        log: &Arc<AsyncMutex<HidLog>>,
        f: impl FnOnce(&mut HidLog, &Config) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let mut guard: OwnedMutexGuard<HidLog> = log.clone().lock_owned().await;
        let cfg = self.cfg.cfg.clone();
        let work = move |g: &mut HidLog| {
            let r = g.refresh(&cfg).and_then(|_| f(g, &cfg));
            if r.is_err() {
                // Unknown state on disk: re-read before the next use.
                g.loaded = false;
                g.out.reset();
            }
            r
        };
        if guard.loaded {
            work(&mut guard)
        } else {
            tokio::task::spawn_blocking(move || work(&mut guard))
                .await
                .map_err(|e| Error::transport_from(format!("log writer task failed: {e}"), e))?
        }
    }

    fn token_ok(&self, presented: Option<&str>) -> bool {
        let Some(want) = &self.token_digest else { return true };
        let Some(got) = presented else { return false };
        let got: [u8; 32] = Sha256::digest(got.as_bytes()).into();
        bool::from(got.ct_eq(want))
    }

    async fn hello(&self, msg: &Value) -> (Reply, Option<Session>) {
        if msg.get("type").and_then(Value::as_str) != Some("hello") {
            bump(&self.stats.hellos_rejected);
            return (refuse_and_close("want hello"), None);
        }
        if !self.token_ok(msg.get("token").and_then(Value::as_str)) {
            bump(&self.stats.hellos_rejected);
            tracing::warn!("transport: rejected a client (bad token)");
            return (refuse_and_close("bad token"), None);
        }
        let hid = msg.get("handoff_id").and_then(Value::as_str).unwrap_or("");
        let log = match envelope::check_hid(hid).and_then(|_| self.hid_log(hid)) {
            Ok(l) => l,
            Err(e) => {
                bump(&self.stats.hellos_rejected);
                return (refuse_and_close(e.to_string()), None);
            }
        };
        let me = hid.to_string();
        let ack = self
            .with_log(&log, move |l, _| {
                Ok(if l.header.as_ref().is_some_and(|h| *h != me) { -1 } else { l.seqs.prefix_end() })
            })
            .await;
        match ack {
            Ok(ack) => {
                bump(&self.stats.hellos_accepted);
                tracing::info!(hid = &hid[..12], ack, "transport: client shipping");
                (ok(json!({"ok": true, "ack_seq": ack})), Some(Session { hid: hid.to_string(), log }))
            }
            Err(e) => {
                bump(&self.stats.hellos_rejected);
                tracing::error!(error = %e, "transport: cannot read log");
                (refuse_and_close(format!("server cannot read log: {e}")), None)
            }
        }
    }

    async fn envelope(&self, s: &Session, msg: &Value) -> Reply {
        let env = msg.get("envelope").cloned().unwrap_or(Value::Null);
        let hid = match envelope::verify(&env) {
            Ok(h) => h,
            Err(Error::Tamper { detail: m, .. }) => return refuse(format!("envelope identity failed: {m}")),
            Err(e) => return refuse(format!("bad envelope: {e}")),
        };
        if hid != s.hid {
            return refuse("envelope is for a different handoff than the hello");
        }
        let line = match log::envelope_line(&env) {
            Ok(l) if super::over_cap(l.len(), self.cfg.cfg.transport_max_line_bytes) => {
                return refuse("envelope line exceeds max line bytes")
            }
            Ok(l) => l,
            Err(e) => return refuse(format!("bad envelope: {e}")),
        };
        let want = s.hid.clone();
        let r = self
            .with_log(&s.log, move |l, _| match &l.header {
                Some(h) if *h == want => l.journal_line(&line).map(|_| None),
                Some(h) => Ok(Some(format!("log already holds handoff {h}"))),
                None => {
                    l.append(&line)?;
                    l.header = Some(want);
                    Ok(None)
                }
            })
            .await;
        match r {
            Ok(None) => {
                bump(&self.stats.envelopes);
                Reply { durable: true, ..ok(json!({"ok": true})) }
            }
            Ok(Some(m)) => refuse(m),
            Err(e) => refuse(format!("server cannot write log: {e}")),
        }
    }

    async fn checkpoint(&self, s: &Session, msg: &Value) -> Reply {
        if let Some(h) = msg.get("handoff_id") {
            if h.as_str() != Some(s.hid.as_str()) {
                return refuse("checkpoint is for a different handoff than the hello");
            }
        }
        let seq = msg.get("seq").filter(|v| v.is_number()).and_then(Value::as_i64).filter(|s| *s >= 0);
        let state = msg.get("state").filter(|v| v.is_object());
        let (Some(seq), Some(state)) = (seq, state) else {
            return refuse("bad checkpoint frame");
        };
        let hash = match checked_state(state, &self.cfg.cfg) {
            Ok((_, h)) => h,
            Err(e) => return refuse(e.to_string()),
        };
        if msg.get("state_hash").and_then(Value::as_str) != Some(hash.as_str()) {
            return refuse("hash mismatch");
        }
        // A bound frame (docs/log-chain.md) keeps its binding in the log.
        let prev = match chain::claimed_prev(msg, &s.hid, seq) {
            Ok(p) => p.map(str::to_string),
            Err(e) => return refuse(format!("binding mismatch: {e}")),
        };
        let bound = msg.get("hid").is_some() || prev.is_some();
        let at = msg.get("at").and_then(Value::as_str).map_or_else(utcnow_iso, str::to_string);
        let line = if bound {
            chain::bound_checkpoint_line(&s.hid, seq, state, &hash, prev.as_deref(), &at)
        } else {
            log::checkpoint_line(seq, state, &hash, &at)
        };
        let line = match line {
            Ok(l) if super::over_cap(l.len(), self.cfg.cfg.transport_max_line_bytes) => {
                return refuse("checkpoint line exceeds max line bytes")
            }
            Ok(l) => l,
            Err(e) => return refuse(e.to_string()),
        };
        let want = s.hid.clone();
        let r = self
            .with_log(&s.log, move |l, cfg| {
                match &l.header {
                    None => return Ok(Err(Err("no envelope for this handoff yet: send the envelope first"))),
                    Some(h) if *h != want => return Ok(Err(Err("log holds another handoff"))),
                    Some(_) => {}
                }
                // Only the seq right after the unbroken run from 0 is
                // appended: an ack past a hole would tell the shipper it
                // may forget lines the peer never got.
                let next = l.seqs.prefix_end() + 1;
                if seq > next {
                    return Ok(Err(Ok(SeqRefusal::Gap { next })));
                }
                if seq < next {
                    return match l.logged_hash(seq, cfg)? {
                        Some(h) if h != hash => Ok(Err(Ok(SeqRefusal::Conflict { next }))),
                        _ => l.journal_line(&line).map(|_| Ok(false)),
                    };
                }
                // A bound frame (docs/log-chain.md) must follow the
                // checkpoint before it.
                if let (Some(p), true) = (&prev, seq > 0) {
                    if l.logged_hash(seq - 1, cfg)?.is_some_and(|h| h != *p) {
                        return Ok(Err(Err("binding mismatch: prev is not the state hash of the checkpoint before")));
                    }
                }
                l.append(&line)?;
                l.seqs.insert(seq);
                l.remember(seq, hash);
                Ok(Ok(true))
            })
            .await;
        match r {
            Ok(Ok(appended)) => {
                bump(if appended { &self.stats.checkpoints_appended } else { &self.stats.checkpoints_duplicate });
                // A duplicate too: the earlier copy may not be synced yet.
                Reply { durable: true, ..ok(json!({"ok": true, "seq": seq})) }
            }
            Ok(Err(Ok(SeqRefusal::Gap { next }))) => {
                bump(&self.stats.checkpoints_gap);
                tracing::info!(hid = &s.hid[..12], seq, expect_seq = next, "transport: checkpoint past a gap refused");
                Reply {
                    body: json!({"ok": false, "error": format!("gap: expected seq {next}, got {seq}"), "expect_seq": next}),
                    close: false,
                    durable: false,
                }
            }
            Ok(Err(Ok(SeqRefusal::Conflict { next }))) => {
                bump(&self.stats.checkpoints_conflict);
                tracing::warn!(hid = &s.hid[..12], seq, "transport: conflicting checkpoint refused");
                Reply {
                    body: json!({
                        "ok": false,
                        "error": format!("conflict: seq {seq} is logged with another state_hash"),
                        "expect_seq": next,
                    }),
                    close: false,
                    durable: false,
                }
            }
            Ok(Err(Err(m))) => refuse(m),
            Err(e) => refuse(format!("server cannot write log: {e}")),
        }
    }

    /// Answer one complete line.
    async fn frame(&self, session: &mut Option<Session>, raw: &[u8]) -> Reply {
        let msg = match json::parse_bytes(raw) {
            Ok(v) if v.is_object() => v,
            Ok(_) => return self.bad(session, "bad frame: not a JSON object".into()),
            Err(e) => return self.bad(session, format!("bad frame: {e}")),
        };
        let Some(s) = session.as_ref() else {
            let (reply, s) = self.hello(&msg).await;
            *session = s;
            return reply;
        };
        match msg.get("type").and_then(Value::as_str) {
            Some("envelope") => self.envelope(s, &msg).await,
            Some("checkpoint") => self.checkpoint(s, &msg).await,
            Some("bye") => Reply { body: json!({"ok": true}), close: true, durable: false },
            Some("hello") => refuse("already said hello"),
            _ => refuse("unknown type"),
        }
    }

    fn bad(&self, session: &Option<Session>, msg: String) -> Reply {
        if session.is_none() {
            bump(&self.stats.hellos_rejected);
            refuse_and_close(msg)
        } else {
            refuse(msg)
        }
    }

    fn tls_failed(&self, peer: SocketAddr, why: &str) {
        bump(&self.stats.tls_failures);
        if once_per_second(&self.last_tls_warn) {
            tracing::warn!(%peer, error = why, "transport: TLS failed (further ones this second not logged)");
        }
    }

    /// Admit a connection: until its hello succeeds it holds a pass of the
    /// gate, and the TLS handshake (when serving TLS) counts against the
    /// same deadline as the hello.
    async fn serve(self: Arc<Self>, sock: TcpStream, peer: SocketAddr, mut shutdown: watch::Receiver<bool>) {
        let _ = sock.set_nodelay(true);
        let pass = self.gate.admit(peer.ip());
        let hello_by = tokio::time::Instant::now() + self.cfg.idle_timeout.min(HELLO_TIMEOUT);
        let Some(acceptor) = self.tls.clone() else {
            let (rd, wr) = sock.into_split();
            return self.session(rd, wr, peer, pass, hello_by, true, shutdown).await;
        };
        let evict = pass.evict.clone();
        let accepted = tokio::select! {
            biased;
            _ = shutdown.wait_for(|stop| *stop) => return,
            _ = evict.notified() => {
                tracing::debug!(%peer, "transport: closed during the TLS handshake to make room");
                return;
            }
            r = tokio::time::timeout_at(hello_by, acceptor.accept(sock).into_fallible()) => r,
        };
        match accepted {
            Err(_) => {
                bump(&self.stats.idle_timeouts);
                tracing::debug!(%peer, "transport: TLS handshake timed out");
            }
            Ok(Err((e, sock))) => {
                self.tls_failed(peer, &e.to_string());
                linger_close(sock).await;
            }
            Ok(Ok(stream)) => {
                let (rd, wr) = tokio::io::split(stream);
                self.session(rd, wr, peer, pass, hello_by, false, shutdown).await;
            }
        }
    }

    /// Serve one (plaintext or TLS) connection's frames. `probe`: look for
    /// a TLS ClientHello sent to this plaintext port.
    #[allow(clippy::too_many_arguments)]
    async fn session<R, W>(
        self: Arc<Self>,
        rd: R,
        wr: W,
        peer: SocketAddr,
        pass: Pass,
        hello_by: tokio::time::Instant,
        mut probe: bool,
        mut shutdown: watch::Receiver<bool>,
    ) where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let idle = self.cfg.idle_timeout;
        let max = self.cfg.cfg.transport_max_line_bytes;
        let mut rd = BufReader::with_capacity(64 * 1024, rd);
        let mut wr = BufWriter::with_capacity(16 * 1024, wr);
        let mut buf = Vec::new();
        let mut session: Option<Session> = None;
        let mut bad_streak = 0u32;
        // Replies not yet written, and whether any waits for a log sync.
        let mut pending: Vec<u8> = Vec::new();
        // Journal position the held replies wait for.
        let mut need: Option<u64> = None;
        // Held until the hello succeeds: a short deadline and a tiny line
        // cap, and the gate may close us to make room for a newcomer.
        let mut pass = Some(pass);
        loop {
            if session.is_some() {
                pass = None;
            }
            // A big frame's buffer is not kept by an idle connection.
            if buf.capacity() > (1 << 16) {
                buf = Vec::new();
            }
            let (limit, wait) = match &pass {
                Some(_) => {
                    (max.min(PRE_HELLO_MAX_LINE), hello_by.saturating_duration_since(tokio::time::Instant::now()))
                }
                None => (max, idle),
            };
            let evict = pass.as_ref().map(|p| p.evict.clone());
            let got = tokio::select! {
                biased;
                _ = shutdown.wait_for(|stop| *stop) => break,
                _ = async {
                    match &evict {
                        Some(n) => n.notified().await,
                        None => std::future::pending().await,
                    }
                } => {
                    tracing::debug!(%peer, "transport: closed before hello to make room");
                    break;
                }
                r = tokio::time::timeout(wait, async {
                    if std::mem::take(&mut probe) {
                        let first = rd.fill_buf().await?.first().copied();
                        if first.is_some_and(tls::looks_like_tls) {
                            return Ok(None);
                        }
                    }
                    read_frame_async(&mut rd, &mut buf, limit).await.map(Some)
                }) => r,
            };
            let got = match got {
                Ok(Ok(None)) => {
                    self.tls_failed(peer, "a TLS ClientHello on this plaintext port");
                    break;
                }
                Ok(Ok(Some(f))) => Ok(Ok(f)),
                Ok(Err(e)) => Ok(Err(e)),
                Err(t) => Err(t),
            };

            let reply = match got {
                Err(_) => {
                    bump(&self.stats.idle_timeouts);
                    tracing::debug!(%peer, "transport: idle timeout");
                    break;
                }
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "transport: read failed");
                    break;
                }
                Ok(Ok(Frame::Eof)) => break,
                Ok(Ok(Frame::Partial)) => {
                    bump(&self.stats.partial_lines);
                    tracing::info!(%peer, bytes = buf.len(), "transport: connection closed mid-line (discarded)");
                    break;
                }
                Ok(Ok(Frame::TooLong | Frame::Overrun)) if pass.is_some() => {
                    bump(&self.stats.lines_too_long);
                    bump(&self.stats.hellos_rejected);
                    if self.gate.warn_now() {
                        tracing::warn!(%peer, limit, "transport: line before hello exceeds its cap (further ones this second not logged)");
                    }
                    refuse_and_close(format!("line before hello exceeds {limit} bytes"))
                }
                Ok(Ok(Frame::TooLong)) => {
                    bump(&self.stats.lines_too_long);
                    tracing::warn!(%peer, max, "transport: line exceeds max line bytes");
                    refuse(format!("line exceeds max line bytes ({max})"))
                }
                Ok(Ok(Frame::Overrun)) => {
                    bump(&self.stats.lines_too_long);
                    tracing::warn!(%peer, max, "transport: line exceeds max line bytes");
                    let msg = format!("line exceeds max line bytes ({max})");
                    // Discard the rest without buffering it, so the frames
                    // after it still get their replies in order.
                    let skipped = tokio::select! {
                        biased;
                        _ = shutdown.wait_for(|stop| *stop) => false,
                        r = tokio::time::timeout(idle, skip_line_async(&mut rd, max.saturating_mul(SKIP_FACTOR).max(1 << 20))) => matches!(r, Ok(Ok(true))),
                    };
                    if skipped {
                        refuse(msg)
                    } else {
                        refuse_and_close(msg)
                    }
                }
                Ok(Ok(Frame::Line)) => {
                    if buf.iter().all(u8::is_ascii_whitespace) {
                        // No reply; but held replies must not wait on it.
                        Reply { body: Value::Null, close: false, durable: false }
                    } else {
                        self.frame(&mut session, &buf).await
                    }
                }
            };

            if reply.body.is_null() {
                // A blank line: nothing to say.
            } else if reply.body["ok"] == true {
                bad_streak = 0;
            } else {
                bump(&self.stats.frames_rejected);
                bad_streak += 1;
            }
            if !reply.body.is_null() {
                let text = match json::dumps_sorted(&reply.body) {
                    Ok(t) => t,
                    Err(_) => "{\"error\": \"internal error\", \"ok\": false}".to_string(),
                };
                pending.extend_from_slice(text.as_bytes());
                pending.push(b'\n');
            }
            if reply.durable {
                need = self.journal.as_ref().map(|j| j.position());
            }
            // Hold replies while the client has more complete frames queued
            // (pipelining): one sync and one write for many acks.
            let more = rd.buffer().contains(&b'\n')
                && !reply.close
                && bad_streak < MAX_BAD_STREAK
                && pending.len() < (1 << 16)
                && !*shutdown.borrow();
            if more || pending.is_empty() {
                continue;
            }
            if let (Some(pos), Some(j)) = (need.take(), &self.journal) {
                if let Err(e) = j.wait(pos).await {
                    // No ack for lines that may not be durable: the
                    // client reconnects and re-sends (deduplicated).
                    tracing::error!(%peer, error = %e, "transport: cannot sync the journal; closing without acks");
                    break;
                }
            }
            let write = tokio::time::timeout(idle, async {
                wr.write_all(&pending).await?;
                wr.flush().await?;
                std::io::Result::Ok(())
            });
            // A client that does not take its reply does not hold up a
            // shutdown for more than a second (the frame itself is done).
            let wrote = tokio::select! {
                r = write => matches!(r, Ok(Ok(()))),
                _ = async {
                    let _ = shutdown.wait_for(|stop| *stop).await;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                } => false,
            };
            pending.clear();
            if !wrote {
                tracing::debug!(%peer, "transport: client not reading replies; closing");
                break;
            }
            if reply.close || bad_streak >= MAX_BAD_STREAK {
                break;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1).min(idle), async {
            let _ = wr.flush().await;
            let _ = wr.shutdown().await;
        })
        .await;
    }
}

/// Serve until `shutdown` resolves: then stop accepting, let every
/// connection finish the frame it is processing, and return.
pub async fn run(
    listener: TcpListener,
    server: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<ServerStats> {
    server.cfg.validate()?;
    if server.idle_timeout.is_zero() {
        return Err(Error::config("transport idle timeout must be > 0"));
    }
    std::fs::create_dir_all(&server.logdir).map_err(|e| Error::io(&server.logdir, e))?;
    let pre_fsync_pause = crate::failpoint::pre_fsync_pause()?;
    // Group commit across connections and handoffs: replay what a crash
    // left in the journal, then start a fresh one (docs/transport.md).
    let journal = if server.fsync {
        recover(&server.logdir, &server.cfg)?;
        Some(JournalHandle::start(&server.logdir, pre_fsync_pause, ROTATE_BYTES)?)
    } else {
        None
    };
    let token_digest = (!server.token.is_empty()).then(|| Sha256::digest(server.token.as_bytes()).into());
    // Read and check the TLS files before the first connection.
    let tls = match &server.tls {
        Some(t) => Some(tokio_rustls::TlsAcceptor::from(t.config()?)),
        None => None,
    };
    let srv = Arc::new(Srv {
        cfg: server,
        token_digest,
        logs: std::sync::Mutex::new(LogCache {
            journal: journal.as_ref().map(|h| h.journal.clone()),
            ..Default::default()
        }),
        stats: Counters::default(),
        gate: Default::default(),
        journal: journal.as_ref().map(|h| h.journal.clone()),
        tls,
        last_tls_warn: AtomicU64::new(0),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut last_busy_warn = None;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            _ = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            acc = listener.accept() => match acc {
                Ok((sock, peer)) => {
                    bump(&srv.stats.connections);
                    if tasks.len() >= MAX_CONNECTIONS {
                        bump(&srv.stats.busy_rejections);
                        if last_busy_warn.is_none_or(|t: std::time::Instant| t.elapsed() >= Duration::from_secs(1)) {
                            last_busy_warn = Some(std::time::Instant::now());
                            tracing::warn!(%peer, max = MAX_CONNECTIONS, "transport: connection cap reached; telling new clients the server is busy");
                        }
                        tasks.spawn(busy(sock));
                    } else {
                        tasks.spawn(srv.clone().serve(sock, peer, stop_rx.clone()));
                    }
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "transport: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    if let Some(j) = journal {
        // Every acked line is in the journal already; a failed checkpoint
        // leaves it to be replayed on the next start.
        if let Err(e) = j.close() {
            tracing::error!(error = %e, "transport: journal checkpoint at shutdown failed; it is replayed on the next start");
        }
    }
    let mut stats = srv.stats.snapshot();
    stats.unauthenticated_evicted = srv.gate.evictions.load(Ordering::Relaxed);
    {
        let cache = srv.logs.lock().unwrap_or_else(|p| p.into_inner());
        stats.logs_cached = cache.map.len() as u64;
        stats.logs_evicted = cache.evicted;
    }
    Ok(stats)
}

/// What replaying one journal record did.
enum Replayed {
    Appended,
    Present,
    Refused,
}

impl HidLog {
    /// Apply one journal record by the append rules: an envelope only to a
    /// log without a header; a checkpoint only at the end of the unbroken
    /// run of seqs (a seq the log holds is not appended again).
    fn replay(&mut self, line: &str) -> Result<Replayed> {
        let Ok(v) = json::parse(line) else { return Ok(Replayed::Refused) };
        match v["type"].as_str() {
            Some("envelope") => {
                let owner = v.pointer("/envelope/handoff_id").and_then(Value::as_str);
                match &self.header {
                    Some(h) if Some(h.as_str()) == owner => Ok(Replayed::Present),
                    Some(_) => Ok(Replayed::Refused),
                    None if owner == Some(self.hid.as_str()) => {
                        self.append(line)?;
                        self.header = Some(self.hid.clone());
                        Ok(Replayed::Appended)
                    }
                    None => Ok(Replayed::Refused),
                }
            }
            Some("checkpoint") if self.header.is_some() => {
                let Some(seq) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) else {
                    return Ok(Replayed::Refused);
                };
                if self.seqs.contains(seq) {
                    return Ok(Replayed::Present);
                }
                if seq != self.seqs.prefix_end() + 1 {
                    return Ok(Replayed::Refused);
                }
                self.append(line)?;
                self.seqs.insert(seq);
                Ok(Replayed::Appended)
            }
            _ => Ok(Replayed::Refused),
        }
    }
}

/// Replay the journals a crash left into the logs, sync the logs, delete
/// the journals.
fn recover(logdir: &std::path::Path, cfg: &Config) -> Result<()> {
    let files = journal::list(logdir)?;
    if files.is_empty() {
        return Ok(());
    }
    let mut logs: HashMap<String, HidLog> = HashMap::new();
    let (mut appended, mut present, mut refused, mut bad) = (0u64, 0u64, 0u64, 0usize);
    for (_, path) in &files {
        let (recs, b) = journal::records(path)?;
        bad += b;
        for (hid, line) in recs {
            if envelope::check_hid(&hid).is_err() {
                bad += 1;
                continue;
            }
            let l = match logs.entry(hid) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let path = log::log_path(logdir, e.key())?;
                    let hid = e.key().clone();
                    e.insert(HidLog::new(hid, path, None))
                }
            };
            l.refresh(cfg)?;
            match l.replay(&line)? {
                Replayed::Appended => appended += 1,
                Replayed::Present => present += 1,
                Replayed::Refused => refused += 1,
            }
            // No open file per handoff while replaying many.
            l.out.reset();
        }
    }
    journal::sync_logs(logdir, &logs.keys().cloned().collect())?;
    for (_, path) in &files {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
    }
    std::fs::File::open(logdir).and_then(|d| d.sync_all()).map_err(|e| Error::io(logdir, e))?;
    tracing::warn!(
        journals = files.len(),
        appended,
        present,
        refused,
        unreadable = bad,
        "transport: replayed the journal left by an unclean stop"
    );
    Ok(())
}

/// Close a connection whose TLS handshake failed without resetting it:
/// the fatal alert already written must reach the client (a close with
/// unread data would send an RST, which can discard it).
async fn linger_close(mut sock: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = sock.shutdown().await;
        let mut sink = [0u8; 4096];
        while matches!(sock.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

async fn busy(mut sock: TcpStream) {
    let _ =
        tokio::time::timeout(Duration::from_secs(1), sock.write_all(b"{\"error\": \"server busy\", \"ok\": false}\n"))
            .await;
}

//! The shipping thread: owns the connection, says hello, replays what the
//! server lacks, and pipelines queued frames, settling callers' tickets.

use super::buffer;
use super::options::ShipperOptions;
use super::queue::{transient, HidQ, Item, Refusal, Shared};
use crate::json;
use crate::transport::net::{read_frame_sync, tls, Frame, MAX_REPLY_BYTES};
use rustls::pki_types::ServerName;
use serde_json::{json, Value};
use std::collections::{HashSet, VecDeque};
use std::io::{BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The socket, plaintext or TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// The client side of TLS: its configuration and the name the server's
/// certificate must carry.
pub(super) type TlsClient = (Arc<rustls::ClientConfig>, ServerName<'static>);

struct Conn {
    hid: String,
    io: BufReader<Stream>,
    /// Frames written but not yet sent (one write for a window of frames).
    out: Vec<u8>,
    buf: Vec<u8>,
}

enum ConnErr {
    /// The server answered the hello with a refusal.
    Refused(String),
    /// The TLS handshake failed, or the two ends disagree on TLS.
    Tls(Refusal),
    /// Anything that may heal: refused connection, timeout, reset, busy.
    Io(String),
}

fn line_of(v: &Value) -> String {
    let mut s = json::dumps_sorted(v).unwrap_or_default();
    s.push('\n');
    s
}

fn tls_refusal(context: String, source: impl std::error::Error + Send + Sync + 'static) -> ConnErr {
    ConnErr::Tls(Refusal::Tls { context, source: Arc::new(source) })
}

/// Classify a failed TLS handshake: a rustls error (untrusted or expired
/// certificate, a fatal alert) or a peer that hung up on our ClientHello
/// is a TLS failure; a timeout may heal.
fn handshake_error(addr: &str, e: std::io::Error) -> ConnErr {
    use std::io::ErrorKind as K;
    if let Some(t) = tls::rustls_cause(&e) {
        return tls_refusal(format!("handshake with {addr} failed"), t.clone());
    }
    match e.kind() {
        K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
            tls_refusal(format!("{addr} closed the connection during the TLS handshake (is it a plaintext port?)"), e)
        }
        _ => ConnErr::Io(format!("TLS handshake with {addr}: {e}")),
    }
}

impl Conn {
    pub(super) fn open(
        addr: &str,
        hid: &str,
        opts: &ShipperOptions,
        tls: Option<&TlsClient>,
    ) -> std::result::Result<(Conn, i64), ConnErr> {
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
        let mut stream = stream.ok_or(ConnErr::Io(last))?;
        let io = |e: std::io::Error| ConnErr::Io(format!("{addr}: {e}"));
        stream.set_nodelay(true).map_err(io)?;
        stream.set_read_timeout(Some(opts.io_timeout)).map_err(io)?;
        stream.set_write_timeout(Some(opts.io_timeout)).map_err(io)?;
        let stream = match tls {
            None => Stream::Plain(stream),
            Some((cfg, name)) => {
                let mut conn = rustls::ClientConnection::new(cfg.clone(), name.clone())
                    .map_err(|e| tls_refusal(format!("TLS session for {addr}"), e))?;
                // Handshake now, so its failure is told apart from the hello's.
                while conn.is_handshaking() {
                    conn.complete_io(&mut stream).map_err(|e| handshake_error(addr, e))?;
                }
                Stream::Tls(Box::new(rustls::StreamOwned::new(conn, stream)))
            }
        };
        let mut c = Conn { hid: hid.to_string(), io: BufReader::new(stream), out: Vec::new(), buf: Vec::new() };
        let hello = line_of(&json!({"type": "hello", "handoff_id": hid, "token": opts.token}));
        c.send(hello.as_bytes()).and_then(|_| c.flush()).map_err(|e| match tls::rustls_cause(&e) {
            Some(t) => tls_refusal(format!("{addr} rejected the TLS session"), t.clone()),
            None => io(e),
        })?;
        let reply = c.hello_reply(addr, tls.is_some())?;
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

    /// The hello's reply, where a TLS mismatch shows: under TLS 1.3 a
    /// server refuses our (missing) client certificate only after our side
    /// of the handshake is done, and a TLS server answers a plaintext
    /// hello with a TLS alert record.
    fn hello_reply(&mut self, addr: &str, tls: bool) -> std::result::Result<Value, ConnErr> {
        let r = read_frame_sync(&mut self.io, &mut self.buf, MAX_REPLY_BYTES);
        if let Err(e) = &r {
            if let Some(t) = tls::rustls_cause(e) {
                return Err(tls_refusal(format!("{addr} rejected the TLS session"), t.clone()));
            }
        }
        if !tls && tls::is_tls_record(&self.buf) {
            return Err(tls_refusal(
                format!("{addr} answered with a TLS record: it expects TLS (give the shipper a CA to trust)"),
                std::io::Error::new(std::io::ErrorKind::InvalidData, "TLS record on a plaintext connection"),
            ));
        }
        Self::parse_reply(r, &self.buf).map_err(ConnErr::Io)
    }

    fn reply(&mut self) -> std::result::Result<Value, String> {
        let r = read_frame_sync(&mut self.io, &mut self.buf, MAX_REPLY_BYTES);
        Self::parse_reply(r, &self.buf)
    }

    fn parse_reply(r: std::io::Result<Frame>, buf: &[u8]) -> std::result::Result<Value, String> {
        match r {
            Ok(Frame::Line) => match json::parse_bytes(buf) {
                Ok(v) if v.is_object() => Ok(v),
                _ => Err(format!("bad reply from server: {:?}", String::from_utf8_lossy(&buf[..buf.len().min(200)]))),
            },
            Ok(Frame::Eof) | Ok(Frame::Partial) => Err("connection closed by server".into()),
            Ok(Frame::TooLong) | Ok(Frame::Overrun) => Err("reply from server exceeds 64 KiB".into()),
            Err(e) => Err(format!("reading reply: {e}")),
        }
    }

    /// Queue bytes; sent by [`Conn::flush`] (or once 64 KiB are queued).
    fn send(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.out.extend_from_slice(data);
        if self.out.len() >= 64 * 1024 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let s = self.io.get_mut();
        s.write_all(&self.out)?;
        s.flush()?;
        self.out.clear();
        Ok(())
    }

    fn bye(mut self) {
        let _ = self.send(b"{\"type\": \"bye\"}\n").and_then(|_| self.flush());
        // The reply is a courtesy; do not wait for it.
        if let Stream::Tls(s) = self.io.get_mut() {
            s.conn.send_close_notify();
            let _ = s.flush();
        }
    }
}

/// A frame in flight and what its reply settles.
enum Expect {
    Envelope(u64),
    Checkpoint { ticket: u64, seq: i64 },
}

pub(super) struct Pump {
    pub(super) shared: Arc<Shared>,
    pub(super) addr: String,
    pub(super) opts: ShipperOptions,
    pub(super) tls: Option<TlsClient>,
}

impl Pump {
    pub(super) fn run(self) {
        let mut conn: Option<Conn> = None;
        while let Some(hid) = self.next_job(conn.as_ref().map(|c| c.hid.as_str())) {
            if conn.as_ref().is_some_and(|c| c.hid != hid) {
                if let Some(c) = conn.take() {
                    c.bye();
                }
            }
            if conn.is_none() {
                match Conn::open(&self.addr, &hid, &self.opts, self.tls.as_ref()) {
                    Ok((c, ack)) => {
                        self.on_hello(&hid, ack);
                        conn = Some(c);
                    }
                    Err(ConnErr::Refused(m)) => {
                        tracing::warn!(error = %m, "transport: server refused hello");
                        self.failed(&hid, m.clone(), Some(Refusal::Transport(m)));
                        continue;
                    }
                    Err(ConnErr::Tls(r)) => {
                        let e = r.connection_error();
                        tracing::warn!(error = %e, "transport: TLS failed");
                        self.failed(&hid, e.to_string(), Some(r));
                        continue;
                    }
                    Err(ConnErr::Io(m)) => {
                        tracing::debug!(error = %m, "transport: connect failed");
                        self.failed(&hid, m, None);
                        continue;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue };
            if let Err(m) = self.drive(c) {
                tracing::info!(error = %m, "transport: connection lost; will reconnect");
                conn = None;
                self.failed(&hid, m, None);
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
    fn failed(&self, hid: &str, msg: String, refused: Option<Refusal>) {
        let mut st = self.shared.lock();
        st.last_error = Some(msg.clone());
        let q = st.queues.entry(hid.to_string()).or_default();
        q.backoff = if refused.is_some() {
            self.opts.backoff_max
        } else if q.backoff.is_zero() {
            self.opts.backoff_initial
        } else {
            (q.backoff * 2).min(self.opts.backoff_max)
        };
        q.retry_at = Some(Instant::now() + q.backoff);
        q.env_acked = false;
        if refused.is_some() {
            q.rejected = refused;
        }
        drop(st);
        self.shared.done.notify_all();
    }

    /// After a good hello: forget what the server holds, replay what it
    /// lacks from the local buffer log, and re-send the envelope.
    fn on_hello(&self, hid: &str, ack: i64) {
        let replay = buffer::replay_lines(self.opts.buffer.as_ref(), &self.opts.cfg, hid, ack);
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
                    // Acked through the last line: bound what is kept.
                    st.prune(&c.hid);
                    drop(st);
                    self.shared.done.notify_all();
                    return Ok(());
                }
            }
            if !frames.is_empty() {
                for line in &frames {
                    c.send(line.as_bytes()).and_then(|_| c.send(b"\n")).map_err(|e| format!("sending: {e}"))?;
                }
                c.flush().map_err(|e| format!("sending: {e}"))?;
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

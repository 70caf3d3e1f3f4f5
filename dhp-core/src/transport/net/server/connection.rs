//! One connection: the TLS handshake (when serving TLS), the pre-hello
//! limits of the gate, then frames read, answered and acknowledged (held
//! until the journal sync covers them, when fsync is on).

use super::super::direct_ack::{DirectConn, Second, Take};
use super::super::gate::{once_per_second, Pass, HELLO_TIMEOUT, PRE_HELLO_MAX_LINE};
use super::super::tls;
use super::super::{read_frame_async, skip_line_async, Frame};
use super::frames::{refuse, refuse_and_close, Reply, Session};
use super::stats::{bump, hello_refused};
use super::Srv;
use crate::json;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Consecutive rejected frames after which a connection is dropped.
const MAX_BAD_STREAK: u32 = 64;
/// An overlong line is discarded (never buffered) up to this many times
/// the line cap (at least 1 MiB) to find the next frame; a longer one
/// closes the connection.
const SKIP_FACTOR: usize = 4;

impl Srv {
    fn tls_failed(&self, peer: SocketAddr, why: &str) {
        bump(&self.stats.tls_failures);
        if once_per_second(&self.last_tls_warn) {
            tracing::warn!(%peer, error = why, "transport: TLS failed (further ones this second not logged)");
        }
    }

    /// Admit a connection: until its hello succeeds it holds a pass of the
    /// gate, and the TLS handshake (when serving TLS) counts against the
    /// same deadline as the hello.
    pub(super) async fn serve(self: Arc<Self>, sock: TcpStream, peer: SocketAddr, mut shutdown: watch::Receiver<bool>) {
        let _ = sock.set_nodelay(true);
        let pass = self.gate.admit(peer.ip());
        let hello_by = tokio::time::Instant::now() + self.cfg.idle_timeout.min(HELLO_TIMEOUT);
        let Some(acceptor) = self.tls.clone() else {
            let (rd, wr) = sock.into_split();
            return self.session(rd, wr, peer, pass, hello_by, true, shutdown).await;
        };
        let evict = pass.evict.clone();
        // A connection closed before its first byte is a probe (a load
        // balancer's check, `dhp work --ship-to` making sure the server is
        // up before it claims), not a failed TLS handshake: no warning.
        let mut first = [0u8; 1];
        let peeked = tokio::select! {
            biased;
            _ = shutdown.wait_for(|stop| *stop) => return,
            r = tokio::time::timeout_at(hello_by, sock.peek(&mut first)) => r,
        };
        if matches!(peeked, Ok(Ok(0))) {
            tracing::debug!(%peer, "transport: closed before its first byte (a connection probe)");
            return;
        }
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
        probe: bool,
        shutdown: watch::Receiver<bool>,
    ) where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        let mut c = Conn {
            rd: BufReader::with_capacity(64 * 1024, rd),
            wr: BufWriter::with_capacity(16 * 1024, wr),
            buf: Vec::new(),
            peer,
            session: None,
            bad_streak: 0,
            pending: Vec::new(),
            need: None,
            direct: None,
            direct_tried: false,
            pass: Some(pass),
            hello_by,
            probe,
            shutdown,
        };
        loop {
            let Some(got) = self.read_line(&mut c).await else { break };
            let Some(reply) = self.answer(&mut c, got).await else { break };
            if !self.send(&mut c, reply).await {
                break;
            }
        }
        let idle = self.cfg.idle_timeout;
        let _ = tokio::time::timeout(Duration::from_secs(1).min(idle), async {
            // Acks the sync thread has yet to write, or handed back.
            if let Some(d) = c.direct.clone() {
                self.write_owed(&mut c, &d, true).await;
            }
            let _ = c.wr.flush().await;
            let _ = c.wr.shutdown().await;
        })
        .await;
    }

    /// The line cap now: tiny before the hello.
    fn line_limit<R, W>(&self, c: &Conn<R, W>) -> usize {
        let max = self.cfg.cfg.transport_max_line_bytes;
        if c.pass.is_some() {
            max.min(PRE_HELLO_MAX_LINE)
        } else {
            max
        }
    }

    /// Wait for the next line (within the hello deadline before the hello,
    /// the idle timeout after). `None`: the connection ends (shutdown,
    /// evicted before its hello, a TLS ClientHello on a plaintext port).
    async fn read_line<R, W>(&self, c: &mut Conn<R, W>) -> Option<Got>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        if c.session.is_some() {
            c.pass = None;
        }
        // A big frame's buffer is not kept by an idle connection.
        if c.buf.capacity() > (1 << 16) {
            c.buf = Vec::new();
        }
        let limit = self.line_limit(c);
        let deadline = match &c.pass {
            Some(_) => c.hello_by,
            None => tokio::time::Instant::now() + self.cfg.idle_timeout,
        };
        if !self.await_input(c, deadline).await {
            return None;
        }
        let evict = c.pass.as_ref().map(|p| p.evict.clone());
        let peer = c.peer;
        let (rd, buf, probe) = (&mut c.rd, &mut c.buf, &mut c.probe);
        let got = tokio::select! {
            biased;
            _ = c.shutdown.wait_for(|stop| *stop) => return None,
            _ = async {
                match &evict {
                    Some(n) => n.notified().await,
                    None => std::future::pending().await,
                }
            } => {
                tracing::debug!(%peer, "transport: closed before hello to make room");
                return None;
            }
            r = tokio::time::timeout_at(deadline, async {
                if std::mem::take(probe) {
                    let first = rd.fill_buf().await?.first().copied();
                    if first.is_some_and(tls::looks_like_tls) {
                        return Ok(None);
                    }
                }
                read_frame_async(rd, buf, limit).await.map(Some)
            }) => r,
        };
        Some(match got {
            Ok(Ok(None)) => {
                self.tls_failed(c.peer, "a TLS ClientHello on this plaintext port");
                return None;
            }
            Ok(Ok(Some(f))) => Ok(Ok(f)),
            Ok(Err(e)) => Ok(Err(e)),
            Err(t) => Err(t),
        })
    }

    /// Until input arrives (or the deadline passes), write the acks the
    /// journal's sync thread hands back (direct_ack.rs): the client may be
    /// waiting for them before it sends more. `false`: the connection ends.
    async fn await_input<R, W>(&self, c: &mut Conn<R, W>, deadline: tokio::time::Instant) -> bool
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        let Some(d) = c.direct.clone() else { return true };
        loop {
            if !self.write_owed(c, &d, false).await {
                return false;
            }
            if !c.rd.buffer().is_empty() {
                return true;
            }
            let (rd, shutdown) = (&mut c.rd, &mut c.shutdown);
            tokio::select! {
                biased;
                _ = shutdown.wait_for(|stop| *stop) => return false,
                _ = d.notified() => {}
                // an end, an error or a timeout: the read after this sees it
                _ = rd.fill_buf() => return true,
                _ = tokio::time::sleep_until(deadline) => return true,
            }
        }
    }

    /// Write what the client is owed from direct acks handed back; with
    /// `drain`, first wait until every ack handed is out (a reply of the
    /// task's own must come after them). `false`: the connection ends (a
    /// failed journal, a client not reading, a shutdown).
    async fn write_owed<R, W>(&self, c: &mut Conn<R, W>, d: &DirectConn, drain: bool) -> bool
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        loop {
            match d.take(drain) {
                Take::Clear => return true,
                Take::Failed => {
                    tracing::error!(peer = %c.peer, "transport: cannot sync the journal; closing without acks");
                    return false;
                }
                Take::Write(owed) if owed.is_empty() => {
                    let shutdown = &mut c.shutdown;
                    tokio::select! {
                        _ = d.notified() => {}
                        _ = tokio::time::sleep(self.cfg.idle_timeout) => return false,
                        _ = shutdown.wait_for(|stop| *stop) => return false,
                    }
                }
                Take::Write(owed) => {
                    if !write_replies(&mut c.wr, &mut c.shutdown, self.cfg.idle_timeout, &owed).await {
                        return false;
                    }
                }
            }
        }
    }

    /// The reply to what was read; `None`: the connection ends without one.
    async fn answer<R, W>(&self, c: &mut Conn<R, W>, got: Got) -> Option<Reply>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        let (peer, max, limit) = (c.peer, self.cfg.cfg.transport_max_line_bytes, self.line_limit(c));
        Some(match got {
            Err(_) => {
                bump(&self.stats.idle_timeouts);
                tracing::debug!(%peer, "transport: idle timeout");
                return None;
            }
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "transport: read failed");
                return None;
            }
            Ok(Ok(Frame::Eof)) => return None,
            Ok(Ok(Frame::Partial)) => {
                bump(&self.stats.partial_lines);
                tracing::info!(%peer, bytes = c.buf.len(), "transport: connection closed mid-line (discarded)");
                return None;
            }
            Ok(Ok(Frame::TooLong | Frame::Overrun)) if c.pass.is_some() => {
                bump(&self.stats.lines_too_long);
                hello_refused(&self.stats);
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
                let skip = skip_line_async(&mut c.rd, max.saturating_mul(SKIP_FACTOR).max(1 << 20));
                let skipped = tokio::select! {
                    biased;
                    _ = c.shutdown.wait_for(|stop| *stop) => false,
                    r = tokio::time::timeout(self.cfg.idle_timeout, skip) => matches!(r, Ok(Ok(true))),
                };
                if skipped {
                    refuse(msg)
                } else {
                    refuse_and_close(msg)
                }
            }
            Ok(Ok(Frame::Line)) if c.buf.iter().all(u8::is_ascii_whitespace) => {
                // No reply; but held replies must not wait on it.
                Reply { body: Value::Null, close: false, durable: false }
            }
            Ok(Ok(Frame::Line)) => self.frame(&mut c.session, &c.buf).await,
        })
    }

    /// Queue a reply and, unless more complete frames are waiting
    /// (pipelining: one sync and one write for many acks), write what is
    /// held once the journal sync covers it. `false`: the connection ends.
    async fn send<R, W>(&self, c: &mut Conn<R, W>, reply: Reply) -> bool
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Second,
    {
        if reply.body.is_null() {
            // A blank line: nothing to say.
        } else if reply.body["ok"] == true {
            c.bad_streak = 0;
        } else {
            bump(&self.stats.frames_rejected);
            c.bad_streak += 1;
        }
        if !reply.body.is_null() {
            let text = match json::dumps_sorted(&reply.body) {
                Ok(t) => t,
                Err(_) => "{\"error\": \"internal error\", \"ok\": false}".to_string(),
            };
            c.pending.extend_from_slice(text.as_bytes());
            c.pending.push(b'\n');
        }
        if reply.durable {
            c.need = self.journal.as_ref().map(|j| j.position());
        }
        let more = c.rd.buffer().contains(&b'\n')
            && !reply.close
            && c.bad_streak < MAX_BAD_STREAK
            && c.pending.len() < (1 << 16)
            && !*c.shutdown.borrow();
        if more || c.pending.is_empty() {
            return true;
        }
        let peer = c.peer;
        // When the sync covering the held acks ended (fsync only).
        let mut synced_at = None;
        if c.need.is_some() && !c.direct_tried {
            // The first durable reply (after the hello: strangers never
            // cost a second descriptor). Plaintext only.
            c.direct_tried = true;
            c.direct = c.wr.get_ref().second();
        }
        if let (Some(pos), Some(j), Some(d)) = (c.need, &self.journal, c.direct.clone()) {
            c.need = None;
            // The sync covering them writes them; the task reads on.
            match j.hand(pos, d.hand(std::mem::take(&mut c.pending))) {
                Ok(None) => return !(reply.close || c.bad_streak >= MAX_BAD_STREAK),
                Ok(Some(ack)) => {
                    c.pending = ack.into_bytes();
                    synced_at = Some((j, j.stats.now_ns()));
                }
                Err(e) => {
                    tracing::error!(%peer, error = %e, "transport: cannot sync the journal; closing without acks");
                    return false;
                }
            }
        }
        // A reply of the task's own goes after every ack handed before.
        if let Some(d) = c.direct.clone() {
            if !self.write_owed(c, &d, true).await {
                return false;
            }
        }
        if let (Some(pos), Some(j)) = (c.need.take(), &self.journal) {
            match j.wait(pos).await {
                Ok(at) => synced_at = Some((j, at)),
                Err(e) => {
                    // No ack for lines that may not be durable: the
                    // client reconnects and re-sends (deduplicated).
                    tracing::error!(%peer, error = %e, "transport: cannot sync the journal; closing without acks");
                    return false;
                }
            }
        }
        let wrote = write_replies(&mut c.wr, &mut c.shutdown, self.cfg.idle_timeout, &[&c.pending]).await;
        c.pending.clear();
        if let (Some((j, at)), true) = (synced_at, wrote) {
            j.stats.acked(j.stats.now_ns().saturating_sub(at));
        }
        if !wrote {
            tracing::debug!(%peer, "transport: client not reading replies; closing");
            return false;
        }
        !(reply.close || c.bad_streak >= MAX_BAD_STREAK)
    }
}

/// Write `parts` and flush, within `idle`. A client that does not take
/// its replies holds up a shutdown for a second at most (the frames they
/// answer are done). True when all was written.
async fn write_replies<W, B>(wr: &mut W, shutdown: &mut watch::Receiver<bool>, idle: Duration, parts: &[B]) -> bool
where
    W: AsyncWrite + Unpin,
    B: AsRef<[u8]>,
{
    let write = tokio::time::timeout(idle, async {
        for part in parts {
            wr.write_all(part.as_ref()).await?;
        }
        wr.flush().await
    });
    tokio::select! {
        r = write => matches!(r, Ok(Ok(()))),
        _ = async {
            let _ = shutdown.wait_for(|stop| *stop).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        } => false,
    }
}

/// What reading a line gave: a frame, a read error, or the timeout.
type Got = Result<std::io::Result<Frame>, tokio::time::error::Elapsed>;

/// One connection's state between its frames.
struct Conn<R, W> {
    rd: BufReader<R>,
    wr: BufWriter<W>,
    /// The line being read.
    buf: Vec<u8>,
    peer: SocketAddr,
    /// Set by a good hello.
    session: Option<Session>,
    /// Rejected frames in a row.
    bad_streak: u32,
    /// Replies not yet written.
    pending: Vec<u8>,
    /// Journal position the held replies wait for.
    need: Option<u64>,
    /// Plaintext with a journal: the held replies are handed to the sync
    /// that covers them, which writes them (direct_ack.rs).
    direct: Option<Arc<DirectConn>>,
    direct_tried: bool,
    /// Held until the hello succeeds: a short deadline and a tiny line
    /// cap, and the gate may close us to make room for a newcomer.
    pass: Option<Pass>,
    hello_by: tokio::time::Instant,
    /// Look for a TLS ClientHello before the first line.
    probe: bool,
    shutdown: watch::Receiver<bool>,
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

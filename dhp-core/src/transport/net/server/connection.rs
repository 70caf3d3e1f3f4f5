//! One connection: the TLS handshake (when serving TLS), the pre-hello
//! limits of the gate, then frames read, answered and acknowledged (held
//! until the journal sync covers them, when fsync is on).

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
            // When the sync covering the held acks ended (fsync only).
            let mut synced_at = None;
            if let (Some(pos), Some(j)) = (need.take(), &self.journal) {
                match j.wait(pos).await {
                    Ok(at) => synced_at = Some((j, at)),
                    Err(e) => {
                        // No ack for lines that may not be durable: the
                        // client reconnects and re-sends (deduplicated).
                        tracing::error!(%peer, error = %e, "transport: cannot sync the journal; closing without acks");
                        break;
                    }
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
            if let (Some((j, at)), true) = (synced_at, wrote) {
                j.stats.acked(j.stats.now_ns().saturating_sub(at));
            }
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

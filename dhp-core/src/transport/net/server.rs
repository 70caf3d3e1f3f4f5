//! The transport server: one task per connection, one append lock per
//! handoff log, held only while the log is written.
//!
//! [`prepare`] does everything that must precede the first connection
//! (checks, journal replay, TLS files); [`Prepared::serve`] accepts. A
//! caller binds its listener (and announces the address) in between, so
//! no client can reach a server whose journal is not replayed yet.

mod client_frame;
mod connection;
mod frames;
mod hidlog;
mod recover;
mod stats;

use super::gate::{Gate, Limits};
use super::journal::{Journal, JournalHandle, ROTATE_BYTES};
use super::tls::ServerTls;
use crate::config::Config;
use crate::error::{Error, Result, TransportKind};
use hidlog::LogCache;
use sha2::{Digest, Sha256};
pub use stats::ServerStats;
use stats::{bump, Counters};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

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

/// A server ready to accept: its settings checked, the journal an unclean
/// stop left replayed into the logs, a fresh journal started, its TLS files
/// read. Dropping it unused (a listener that could not be bound) stops the
/// journal's threads and removes the fresh, empty journal.
pub struct Prepared {
    srv: Arc<Srv>,
    journal: Option<JournalHandle>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("logdir", &self.srv.cfg.logdir).field("fsync", &self.srv.cfg.fsync).finish()
    }
}

/// Check `server`, replay the journal a crash left (blocking: it reads and
/// syncs the logs), start a fresh journal and read the TLS files. Bind the
/// listener after this returns and hand it to [`Prepared::serve`].
pub fn prepare(server: ServerConfig) -> Result<Prepared> {
    server.cfg.validate()?;
    if server.idle_timeout.is_zero() {
        return Err(Error::config("transport idle timeout must be > 0"));
    }
    std::fs::create_dir_all(&server.logdir).map_err(|e| Error::io(&server.logdir, e))?;
    let pre_fsync_pause = crate::failpoint::pre_fsync_pause()?;
    // Read and check the TLS files before the journal is touched.
    let tls = match &server.tls {
        Some(t) => Some(tokio_rustls::TlsAcceptor::from(t.config()?)),
        None => None,
    };
    // Group commit across connections and handoffs: replay what a crash
    // left in the journal, then start a fresh one (docs/transport.md).
    let journal = if server.fsync {
        recover::recover(&server.logdir, &server.cfg)?;
        Some(JournalHandle::start(&server.logdir, pre_fsync_pause, ROTATE_BYTES)?)
    } else {
        None
    };
    let token_digest = (!server.token.is_empty()).then(|| Sha256::digest(server.token.as_bytes()).into());
    let shared = journal.as_ref().map(|h| h.journal.clone());
    let srv = Arc::new(Srv {
        cfg: server,
        token_digest,
        logs: std::sync::Mutex::new(LogCache { journal: shared.clone(), ..Default::default() }),
        stats: Counters::default(),
        gate: Arc::new(Gate::new(Limits::of_process())),
        journal: shared,
        tls,
        last_tls_warn: AtomicU64::new(0),
    });
    Ok(Prepared { srv, journal })
}

impl Prepared {
    /// A handle to read this server's counters while it serves.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(self.srv.clone())
    }
}

/// [`prepare`], then [`Prepared::serve`] on a listener bound beforehand
/// (connections that arrive during the replay wait in its backlog).
pub async fn run(
    listener: TcpListener,
    server: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<ServerStats> {
    prepare(server)?.serve(listener, shutdown).await
}

impl Prepared {
    /// Serve until `shutdown` resolves: then stop accepting, let every
    /// connection finish the frame it is processing, and return. A failed
    /// journal write or sync (ENOSPC, EIO) stops it the same way and
    /// returns the error: after a failed fsync nothing more may be
    /// acknowledged from that journal, so the process exits and its
    /// manager restarts it, which recovers from the journal
    /// (docs/transport.md).
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()>) -> Result<ServerStats> {
        let Prepared { srv, journal } = self;
        let shared = srv.journal.clone();
        let failed = async move {
            match shared {
                Some(j) => j.failure().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(failed);
        let mut failure: Option<Arc<str>> = None;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let mut last_busy_warn = None;
        let mut trimmer = super::trim::Trimmer::default();
        let max = srv.gate.limits.connections;
        tracing::info!(
            max_connections = max,
            max_unauthenticated = srv.gate.limits.unauth,
            hello_deadline_s = super::gate::HELLO_TIMEOUT.as_secs(),
            "transport: limits (from RLIMIT_NOFILE)"
        );
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                f = &mut failed => {
                    failure = Some(f);
                    break;
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                    if trimmer.closed(tasks.len()) {
                        super::trim::release_free_memory();
                    }
                }
                acc = listener.accept() => match acc {
                    Ok((sock, peer)) => {
                        bump(&srv.stats.connections);
                        if tasks.len() >= max {
                            bump(&srv.stats.busy_rejections);
                            if last_busy_warn.is_none_or(|t: std::time::Instant| t.elapsed() >= Duration::from_secs(1)) {
                                last_busy_warn = Some(std::time::Instant::now());
                                tracing::warn!(%peer, max, "transport: connection cap reached; telling new clients the server is busy");
                            }
                            // no task: at the cap every descriptor a refusal held would count
                            busy(&sock);
                        } else {
                            tasks.spawn(srv.clone().serve(sock, peer, stop_rx.clone()));
                        }
                        trimmer.opened(tasks.len());
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
        let stats = snapshot(&srv);
        if let Some(f) = failure {
            return Err(Error::transport(
                TransportKind::Journal,
                format!("journal write or sync failed ({f}): stopped so a process manager restarts the server, which recovers from the journal"),
            ));
        }
        Ok(stats)
    }
}

/// What `srv` counted so far.
fn snapshot(srv: &Srv) -> ServerStats {
    let mut stats = srv.stats.snapshot();
    stats.unauthenticated_evicted = srv.gate.evictions.load(Ordering::Relaxed);
    {
        let cache = srv.logs.lock().unwrap_or_else(|p| p.into_inner());
        stats.logs_cached = cache.map.len() as u64;
        stats.logs_evicted = cache.evicted;
    }
    if let Some(j) = &srv.journal {
        use super::sync_stats::SyncStats as S;
        let s = &j.stats;
        stats.journal_syncs = S::get(&s.syncs);
        stats.journal_lines_synced = S::get(&s.records);
        stats.journal_sync_ns = S::get(&s.sync_ns);
        stats.journal_wait_ns = S::get(&s.wait_ns);
        stats.durable_acks = S::get(&s.acks);
        stats.durable_ack_ns = S::get(&s.ack_ns);
    }
    stats
}

/// A running server's counters, read while it serves (`dhp transport`'s
/// `/metrics`): the same counts [`Prepared::serve`] returns at the end,
/// kept once.
#[derive(Clone)]
pub struct StatsHandle(Arc<Srv>);

impl std::fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsHandle").field("logdir", &self.0.cfg.logdir).finish()
    }
}

impl StatsHandle {
    /// The counts so far.
    pub fn now(&self) -> ServerStats {
        snapshot(&self.0)
    }

    /// Time inside each journal `fdatasync` that covered lines; `None`
    /// without a journal (`fsync` off).
    pub fn sync_seconds(&self) -> Option<&crate::metrics::Histogram> {
        self.0.journal.as_ref().map(|j| &j.stats.sync_seconds)
    }
}

/// Tell a client over the cap the server is busy, without waiting (a
/// fresh socket's send buffer takes the line), and close it.
fn busy(sock: &TcpStream) {
    let _ = sock.try_write(b"{\"error\": \"server busy\", \"ok\": false}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed journal sync (ENOSPC on a real disk; here the same path,
    /// `Journal::fail`) stops the server with an error instead of leaving
    /// it up refusing every handoff (issue 47 item 8).
    #[tokio::test]
    async fn a_failed_journal_sync_stops_the_server_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let server = ServerConfig {
            logdir: dir.path().join("logs"),
            token: String::new(),
            cfg: crate::Config::default(),
            idle_timeout: Duration::from_secs(5),
            fsync: true,
            tls: None,
        };
        let prepared = prepare(server).unwrap();
        let journal = prepared.srv.journal.clone().expect("a journal with fsync");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let run = tokio::spawn(prepared.serve(listener, std::future::pending()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!run.is_finished(), "serving");
        journal.fail(&Error::io(dir.path(), std::io::Error::from_raw_os_error(28)));
        let out = tokio::time::timeout(Duration::from_secs(5), run).await.expect("the server stopped").unwrap();
        let e = out.expect_err("a failed journal is an error exit");
        assert!(e.to_string().contains("journal write or sync failed"), "{e}");
    }
}

//! TCP shipping fixtures: a dhp-core transport server on a loopback port
//! (its own tokio runtime on a background thread) and a shipper bed that
//! ships census-like checkpoint lines to it.

use crate::fixture::{self, io_err};
use dhp_core::envelope::utcnow_iso;
use dhp_core::transport::net::{self, BufferLog, ServerConfig, ServerStats, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{log, Shipper};
use dhp_core::TransportKind;
use dhp_core::{json, Config, Error, Result};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running `transport::net::run` server on 127.0.0.1.
pub struct TcpServer {
    addr: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<ServerStats>>>,
}

impl TcpServer {
    /// Serve `logdir` on an ephemeral loopback port, no token, fsync on.
    pub fn start(logdir: &Path) -> Result<Self> {
        Self::start_with(logdir, true, None)
    }

    /// Serve with or without fsync, and with TLS when `tls` is given.
    pub fn start_with(logdir: &Path, fsync: bool, tls: Option<net::ServerTls>) -> Result<Self> {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<Result<String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = ServerConfig {
            logdir: logdir.to_path_buf(),
            token: String::new(),
            cfg: Config::default(),
            idle_timeout: Duration::from_secs(120),
            fsync,
            tls,
        };
        let thread = std::thread::Builder::new()
            .name("bench-transport".into())
            .spawn(move || -> Result<ServerStats> {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .map_err(|e| Error::transport_from(TransportKind::Start, format!("runtime: {e}"), e))?;
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(Error::transport(TransportKind::Start, format!("bind: {e}"))));
                            return Err(Error::transport_from(TransportKind::Start, format!("bind: {e}"), e));
                        }
                    };
                    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
                    let _ = addr_tx.send(Ok(addr));
                    net::run(listener, server, async move {
                        let _ = stop_rx.await;
                    })
                    .await
                })
            })
            .map_err(|e| io_err(Path::new("thread"), e))?;
        let addr = addr_rx.recv().map_err(|_| Error::transport(TransportKind::Server, "server thread died"))??;
        Ok(TcpServer { addr, stop: Some(stop_tx), thread: Some(thread) })
    }

    /// `HOST:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Stop and return the server's counters.
    pub fn stop(mut self) -> Result<ServerStats> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<ServerStats> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| Error::transport(TransportKind::Server, "server thread panicked"))?,
            None => Ok(ServerStats::default()),
        }
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// A shipper with its envelope shipped, ready to ship checkpoint lines.
pub struct ShipBed {
    /// The shipper, connected.
    pub shipper: TcpShipper,
    /// The handoff whose envelope was shipped.
    pub hid: String,
    next: i64,
}

impl ShipBed {
    /// A shipper to `addr` in `mode` with a local buffer log at
    /// `buffer` (as the protocol asks: every line is kept locally first).
    pub fn new(addr: &str, mode: ShipMode, buffer: PathBuf, i: u64) -> Result<Self> {
        Self::with_tls(addr, mode, buffer, i, None)
    }

    /// Like [`ShipBed::new`], speaking TLS when `tls` is given.
    pub fn with_tls(addr: &str, mode: ShipMode, buffer: PathBuf, i: u64, tls: Option<net::ClientTls>) -> Result<Self> {
        let opts = ShipperOptions { mode, buffer: Some(BufferLog::File(buffer)), tls, ..Default::default() };
        let mut shipper = TcpShipper::new(addr, opts)?;
        let env = fixture::sdk_envelope(i)?;
        let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();
        shipper.ship_envelope(&hid, &env)?;
        shipper.flush()?;
        Ok(ShipBed { shipper, hid, next: 0 })
    }

    /// Make and ship the next checkpoint line (hash + line + ship, as a
    /// worker does after its commit).
    pub fn ship_next(&mut self) -> Result<()> {
        let seq = self.next;
        self.next += 1;
        let st = fixture::small_state(seq as u64);
        let (_, hash) = json::state_text_and_hash(&st)?;
        let line = log::checkpoint_line(seq, &st, &hash, &utcnow_iso())?;
        self.shipper.ship_checkpoint(&self.hid, seq, &line)
    }

    /// Lines shipped so far.
    pub fn shipped(&self) -> i64 {
        self.next
    }

    /// Wait for every line to be acknowledged.
    pub fn flush(&mut self) -> Result<()> {
        self.shipper.flush()
    }
}

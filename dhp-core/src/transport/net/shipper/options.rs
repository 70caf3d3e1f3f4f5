//! What a [`TcpShipper`](super::TcpShipper) is told: when a call returns,
//! where the local buffer log lives, timeouts and the pipelining window.

use crate::config::Config;
use crate::error::Result;
use crate::transport::log;
use crate::transport::net::tls::ClientTls;
use std::path::PathBuf;
use std::time::Duration;

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
    pub(super) fn path_for(&self, hid: &str) -> Result<PathBuf> {
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
    /// Speak TLS to the server (`None`: plaintext, as the reference does).
    pub tls: Option<ClientTls>,
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
            tls: None,
        }
    }
}

impl ShipperOptions {
    /// Defaults, with `token` (the program reads it from
    /// `DHP_TRANSPORT_TOKEN`) and limits from `cfg`.
    pub fn new(mode: ShipMode, token: String, cfg: Config) -> Self {
        ShipperOptions { token, mode, cfg, ..Default::default() }
    }
}

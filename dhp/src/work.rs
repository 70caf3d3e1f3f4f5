//! `dhp work`: the built-in prime-census worker, optionally shipping every
//! checkpoint to a log file or a TCP transport server.

use crate::failure::{bad_flag, usage, Failure};
use crate::worker::{self, Outcome, Start, WorkOptions};
use crate::{Output, STOPPED};
use clap::ValueEnum;
use dhp_core::config::{duration_from_secs, positive_duration};
use dhp_core::envelope::{check_hid, check_worker_id};
use dhp_core::runner::Runner;
use dhp_core::store::deadline::Watchdog;
use dhp_core::store::{open_root, Backend, OpenMode, OpenedRoot, StoreLocation};
use dhp_core::transport::{net, FileShipper, Shipper};
use dhp_core::{Config, Error};
use dhp_workload::history::History;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Longest `--pace` (seconds).
pub const MAX_PACE_S: f64 = 3_600.0;
/// Longest `--ship-timeout` (seconds).
pub const MAX_SHIP_TIMEOUT_S: f64 = 3_600.0;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub enum StartArg {
    Claim,
    Recover,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub enum ShipModeArg {
    Sync,
    Async,
}

#[derive(clap::Args)]
#[cfg_attr(test, derive(Debug))]
pub struct WorkArgs {
    /// Store directory (must hold a store).
    root: PathBuf,
    /// Worker id (the lease holder name); stable for the whole run.
    #[arg(long)]
    runner: String,
    /// claim a pending handoff, or recover an orphaned one.
    #[arg(value_enum)]
    mode: StartArg,
    /// Handoff id (64 hex characters).
    hid: String,
    /// Ship every checkpoint to this transport log file.
    #[arg(long)]
    ship: Option<PathBuf>,
    /// Sleep this many seconds after each chunk (0 to 3600).
    #[arg(long, default_value_t = 0.0)]
    pace: f64,
    /// Append protocol operations (invoke/ok/fail) to this history file.
    #[arg(long)]
    history: Option<PathBuf>,
    /// Exit with code 3 after this many checkpoints, without completing.
    #[arg(long)]
    stop_after: Option<u64>,
    /// Do not publish a same-host liveness token (lease-only detection).
    #[arg(long)]
    no_liveness: bool,
    /// Heartbeat only after each chunk, not from a background thread.
    #[arg(long)]
    no_background_heartbeat: bool,
    /// Ship every checkpoint to a `dhp transport` server (or the
    /// reference's) at HOST:PORT; token from DHP_TRANSPORT_TOKEN.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "ship")]
    ship_to: Option<String>,
    /// sync: a checkpoint returns only once the peer acked it; async: ship
    /// in the background with at most --ship-max-lag lines unacked.
    #[arg(long, value_enum, default_value = "sync", requires = "ship_to")]
    ship_mode: ShipModeArg,
    /// Local buffer log for --ship-to (a directory, or a file ending not
    /// in '/'); default ROOT/ship-buffer/.
    #[arg(long, requires = "ship_to")]
    ship_buffer: Option<PathBuf>,
    /// Unacked lines allowed in async mode before a checkpoint waits.
    #[arg(long, default_value_t = 256, requires = "ship_to")]
    ship_max_lag: usize,
    /// Longest a checkpoint waits on the peer (seconds, up to 3600) before
    /// failing with a transport error.
    #[arg(long, default_value_t = 30.0, requires = "ship_to")]
    ship_timeout: f64,
    /// Speak TLS to --ship-to, trusting only the CA(s) in this PEM file.
    #[arg(long, value_name = "PEM", requires = "ship_to")]
    tls_ca: Option<PathBuf>,
    /// Client certificate chain (PEM) for a server that demands one
    /// (mutual TLS); needs --tls-key and --tls-ca.
    #[arg(long, value_name = "PEM", requires_all = ["tls_key", "tls_ca"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Get each census chunk from a harness's workload service at
    /// http://HOST:PORT (dhp-chaos/CONTRACT.md §2.1) instead of computing it.
    #[arg(long, value_name = "URL", env = "DHP_WORKLOAD_URL")]
    workload: Option<String>,
}

/// A history file (kind `IoError` if it cannot be opened).
pub fn open_history(path: Option<&Path>, process: &str) -> Result<History, Failure> {
    match path {
        Some(p) => Ok(History::open(p, process).map_err(|e| Error::io(p, e))?),
        None => Ok(History::disabled()),
    }
}

pub fn work(a: WorkArgs, cfg: Config) -> Result<Output, Failure> {
    // Every argument is checked before the store is touched.
    let pace = duration_from_secs("--pace", a.pace, MAX_PACE_S).map_err(bad_flag)?;
    check_worker_id(&a.runner)?;
    check_hid(&a.hid)?;
    let call_timeout = match &a.ship_to {
        Some(_) => Some(positive_duration("--ship-timeout", a.ship_timeout, MAX_SHIP_TIMEOUT_S).map_err(bad_flag)?),
        None => None,
    };
    // The transport server is resolved and reached before anything is
    // claimed: a worker that cannot ship leaves the handoff pending.
    if let (Some(addr), Some(t)) = (&a.ship_to, call_timeout) {
        reach_transport(addr, t)?;
    }
    let workload =
        a.workload.as_deref().map(dhp_workload_client::Workload::parse).transpose().map_err(worker::workload_error)?;
    if let Some(w) = &workload {
        w.reach().map_err(worker::workload_error)?;
    }
    let (r, dir) = open_worker_runner(&a.root, &a.runner, cfg.clone())?;
    let history = open_history(a.history.as_deref(), &a.runner)?;
    let shipper: Option<Box<dyn Shipper>> = match (&a.ship_to, call_timeout) {
        (Some(addr), Some(t)) => Some(Box::new(tcp_shipper(&a, addr, dir.as_deref(), t, &cfg)?)),
        _ => a.ship.as_ref().map(|p| Box::new(FileShipper { path: p.clone(), cfg: cfg.clone() }) as Box<dyn Shipper>),
    };
    let opts = WorkOptions {
        root: dir,
        start: if a.mode == StartArg::Claim { Start::Claim } else { Start::Recover },
        hid: a.hid.clone(),
        shipper,
        pace,
        history,
        stop_after: a.stop_after,
        liveness: !a.no_liveness,
        background_heartbeat: !a.no_background_heartbeat,
        workload,
    };
    match worker::run_census(&r, opts)? {
        Outcome::Completed(v) => {
            let text = format!(
                "completed {}: {} primes, sum {}",
                dhp_core::id::short(&a.hid),
                v["prime_count"],
                v["prime_sum"]
            );
            Ok((v, text))
        }
        Outcome::Stopped(v) => {
            STOPPED.store(true, Ordering::SeqCst);
            let text = format!("stopped after {} checkpoints at next_n={}", v["checkpoints"], v["next_n"]);
            Ok((v, text))
        }
    }
}

/// The worker's runner. On a PostgreSQL store every round trip is watched
/// against a deadline of max(lease TTL, 1 s) — the bound the server itself
/// puts on a session idle inside a transaction; opening a connection
/// against the connect timeout (5 s unless the URL says otherwise): a
/// link that hangs without a TCP error (a stuck proxy or pooler) would
/// otherwise block the worker for ever. The lease cannot outlive such a
/// call, so the worker exits with a store error (exit 11) as if the
/// connection had broken; the supervisor orphans its handoff.
fn open_worker_runner(root: &Path, id: &str, cfg: Config) -> Result<(Runner, Option<PathBuf>), Failure> {
    let StoreLocation::Postgres(pg) = StoreLocation::from_path(root)? else {
        let OpenedRoot { backend, dir } = open_root(root, OpenMode::Existing)?;
        return Ok((Runner::new(backend, id, cfg)?, dir));
    };
    let limit = Duration::from_millis(dhp_core::store::postgres::idle_in_transaction_ms());
    // a connection's handshake is several round trips: the URL's connect
    // timeout (or the default) bounds it instead, if longer
    let connect = std::str::FromStr::from_str(&pg.url)
        .ok()
        .and_then(|c: postgres::Config| c.get_connect_timeout().copied())
        .unwrap_or(dhp_core::store::postgres::DEFAULT_CONNECT_TIMEOUT);
    let as_json = crate::failure::wants_json(&std::env::args_os().collect::<Vec<_>>());
    let dog = Watchdog::start(limit, connect, move |e| Failure::from(e).exit(as_json))?;
    let OpenedRoot { backend, dir } = {
        let _open = dog.connecting();
        open_root(root, OpenMode::Existing)?
    };
    let backend: Arc<dyn Backend> = dog.wrap(backend);
    Ok((Runner::new(backend, id, cfg)?, dir))
}

/// Resolve `addr` (an unknown host is a `TransportError` at once) and
/// connect to it, retrying for up to `wait` while the server is down and
/// saying so on stderr once; the connection is closed again (the shipper
/// makes its own). Runs before the store is opened: a server that cannot
/// be reached fails the command with nothing claimed.
fn reach_transport(addr: &str, wait: Duration) -> Result<(), Failure> {
    use dhp_core::TransportKind;
    use std::net::ToSocketAddrs;
    let resolve = || {
        addr.to_socket_addrs().map(|a| a.collect::<Vec<_>>()).map_err(|e| {
            Error::transport_from(TransportKind::Address, format!("cannot resolve the transport server {addr}: {e}"), e)
        })
    };
    let deadline = std::time::Instant::now() + wait;
    let mut said = false;
    loop {
        let addrs = resolve()?;
        let mut last = None;
        for sa in &addrs {
            match std::net::TcpStream::connect_timeout(sa, Duration::from_secs(3)) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        let why = last.map_or_else(|| "no address".to_string(), |e| e.to_string());
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(Error::transport(
                TransportKind::Unacknowledged,
                format!(
                    "cannot reach the transport server at {addr} within {:.0} s ({why}); nothing claimed",
                    wait.as_secs_f64()
                ),
            )
            .into());
        }
        if !said {
            said = true;
            tracing::warn!(
                "waiting up to {:.0} s (--ship-timeout) for the transport server at {addr} ({why}) before claiming",
                left.as_secs_f64()
            );
        }
        std::thread::sleep(left.min(Duration::from_millis(200)));
    }
}

fn tcp_shipper(
    a: &WorkArgs,
    addr: &str,
    dir: Option<&Path>,
    call_timeout: std::time::Duration,
    cfg: &Config,
) -> Result<net::TcpShipper, Failure> {
    if a.ship_max_lag == 0 {
        return Err(usage("--ship-max-lag must be at least 1"));
    }
    let mode = match a.ship_mode {
        ShipModeArg::Sync => net::ShipMode::Sync,
        ShipModeArg::Async => net::ShipMode::Async { max_lag: a.ship_max_lag },
    };
    let buffer = match &a.ship_buffer {
        Some(p) if p.is_dir() || p.as_os_str().to_string_lossy().ends_with('/') => net::BufferLog::Dir(p.clone()),
        Some(p) => net::BufferLog::File(p.clone()),
        None => match dir {
            Some(dir) => net::BufferLog::Dir(dir.join("ship-buffer")),
            None => return Err(usage("--ship-buffer is required when ROOT is a database URL")),
        },
    };
    let opts = net::ShipperOptions {
        buffer: Some(buffer),
        call_timeout,
        cfg: cfg.clone(),
        tls: a.tls_ca.clone().map(|ca| net::ClientTls { ca, cert: a.tls_cert.clone(), key: a.tls_key.clone() }),
        ..net::ShipperOptions::new(mode, std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default(), cfg.clone())
    };
    Ok(net::TcpShipper::new(addr, opts)?)
}

//! The long-running commands: `dhp supervisor` and `dhp transport`.

use crate::failure::{bad_flag, Failure};
use crate::work::open_history;
use crate::Output;
use dhp_core::config::{duration_from_secs, positive_duration};
use dhp_core::envelope::check_worker_id;
use dhp_core::store::{OpenMode, OpenedRoot};
use dhp_core::supervisor::{ActionKind, Event, Supervisor};
use dhp_core::transport::{log, net};
use dhp_core::TransportKind;
use dhp_core::{Config, Error};
use dhp_workload::history::Kind as H;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Longest `dhp supervisor` run (SECONDS): one year.
pub const MAX_SUPERVISE_S: f64 = 31_536_000.0;
/// Longest `dhp transport --idle-timeout` (seconds): one day.
pub const MAX_IDLE_TIMEOUT_S: f64 = 86_400.0;

#[derive(clap::Args)]
pub struct TransportArgs {
    /// Directory the verified logs go to (created if missing).
    logdir: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// 0 picks a free port (printed on the first line).
    #[arg(long, default_value_t = dhp_core::transport::net::DEFAULT_PORT)]
    port: u16,
    /// Drop a connection that takes longer than this (seconds, up to
    /// 86400) to send a frame or to read a reply.
    #[arg(long, default_value_t = 60.0)]
    idle_timeout: f64,
    /// Acknowledge a line once it is written, without waiting for
    /// fdatasync (the reference's behaviour; faster, not crash-durable).
    #[arg(long)]
    no_fsync: bool,
    /// Serve TLS with this certificate chain (PEM, leaf first); needs
    /// --tls-key. Without it the server speaks plaintext, as the reference.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Mutual TLS: demand a client certificate signed by a CA in this file
    /// (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

fn install_stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    stop
}

pub fn supervisor(
    root: &Path,
    id: &str,
    seconds: f64,
    history: Option<PathBuf>,
    metrics: &crate::metrics_http::MetricsArgs,
    cfg: Config,
) -> Result<Output, Failure> {
    let duration = duration_from_secs("SECONDS", seconds, MAX_SUPERVISE_S).map_err(bad_flag)?;
    check_worker_id(id)?;
    crate::metrics_http::parse_addr_of(metrics)?;
    let stop = install_stop_flag();
    // on PostgreSQL, SECONDS and SIGTERM/SIGINT hold even while a store
    // call hangs on a silent link (a SQLite store has no link to hang)
    let on_pg =
        matches!(dhp_core::store::StoreLocation::from_path(root), Ok(dhp_core::store::StoreLocation::Postgres(_)));
    let done =
        on_pg.then(|| crate::bound::exit_if_stuck(stop.clone(), std::time::Instant::now().checked_add(duration)));
    let OpenedRoot { backend, dir } = crate::bound::open_watched(root, OpenMode::Existing)?;
    let sup = Supervisor::new(backend, id, cfg, dir.clone())?;
    let hist = open_history(history.as_deref(), id)?;
    crate::metrics::supervisor(sup.metrics.clone());
    crate::metrics_http::start(metrics, "supervisor", crate::metrics::Families::SUPERVISOR)?;
    // The reference's orphan log sits in a store directory; a database
    // store has none.
    let orphan_log = dir.map(|d| d.join("ORPHANS3.log"));
    // Each action's history line is written as soon as its transaction
    // committed; each finished pass adds a `scan` line (what tests wait on).
    let watched = sup.watch_events(Some(duration), &stop, |e| match e {
        Event::Action(a) => {
            hist.record("supervise", H::Ok, a.to_json());
            if let (ActionKind::Orphaned, Some(orphan_log)) = (a.kind(), &orphan_log) {
                let _ = log::append_line(orphan_log, &format!("{id} orphaned {}", a.hid()), &Config::default(), false);
            }
        }
        Event::Pass { n, leader } => hist.record("scan", H::Ok, json!({"pass": n, "leader": leader})),
    });
    if let Some(done) = &done {
        done.store(true, Ordering::SeqCst);
    }
    let metrics = sup.metrics.snapshot();
    let acts = watched.map_err(|e| {
        // Every pass failed: the store is unusable (corrupt, disk full).
        let mut f = Failure::from(e);
        f.message = format!("every scan failed ({} errors); last: {}", metrics["errors"], f.message);
        f
    })?;
    let out = json!({"supervisor": id, "was_leader": sup.metrics.leadership_changes.load(Ordering::Relaxed) > 0,
                     "actions": acts, "metrics": metrics});
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    Ok((out, text))
}

pub fn transport_server(a: TransportArgs, cfg: Config) -> Result<Output, Failure> {
    use std::io::Write;
    let idle_timeout = positive_duration("--idle-timeout", a.idle_timeout, MAX_IDLE_TIMEOUT_S).map_err(bad_flag)?;
    crate::metrics_http::parse_addr_of(&a.metrics)?;
    crate::metrics_http::start(&a.metrics, "transport", crate::metrics::Families::TRANSPORT)?;
    let (logdir, host, port, no_fsync) = (a.logdir, a.host, a.port, a.no_fsync);
    let tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => Some(net::ServerTls { cert, key, client_ca: a.tls_client_ca }),
        _ => None,
    };
    let token = std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default();
    if token.is_empty() {
        tracing::warn!("DHP_TRANSPORT_TOKEN is not set: accepting any client");
    }
    std::fs::create_dir_all(&logdir).map_err(|e| Error::io(&logdir, e))?;
    let shown = logdir.canonicalize().unwrap_or_else(|_| logdir.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::transport_from(TransportKind::Start, format!("cannot start the runtime: {e}"), e))?;
    let stats = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let sig = |k| {
            signal(k).map_err(|e| Error::transport_from(TransportKind::Start, format!("cannot watch signals: {e}"), e))
        };
        let (mut term, mut int) = (sig(SignalKind::terminate())?, sig(SignalKind::interrupt())?);
        // Replay the journal before binding: "listening" (and a connect
        // that succeeds) means a recovered server.
        let server = net::ServerConfig { logdir, token, cfg, idle_timeout, fsync: !no_fsync, tls };
        let prepared = net::prepare(server)?;
        crate::metrics::transport(prepared.stats_handle());
        let listener = tokio::net::TcpListener::bind((host.as_str(), port)).await.map_err(|e| {
            Error::transport_from(TransportKind::Start, format!("cannot listen on {host}:{port}: {e}"), e)
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::transport_from(TransportKind::Start, format!("listener address: {e}"), e))?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dhp transport: listening on {local}, logs -> {}", shown.display());
        let _ = out.flush();
        drop(out);
        prepared
            .serve(listener, async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            })
            .await
    })?;
    let text = format!(
        "dhp transport: stopped ({} connections, {} checkpoints appended, {} duplicates, {} frames refused)",
        stats.connections, stats.checkpoints_appended, stats.checkpoints_duplicate, stats.frames_rejected
    );
    Ok((json!({"stats": stats}), text))
}

//! `dhp a2a`: an A2A server (protocol 1.0, JSON-RPC over HTTP, as the
//! official `a2a-sdk` 1.3.0 speaks it) whose tasks are DHP handoffs. The
//! A2A task id is the identity a client sees; workers (`dhp work`, the
//! reference's, or this server's own pool) execute the handoff underneath,
//! and a worker's death is an orphan → recover the client never sees.
//! HTTP lives here, in the binary: the library's API has no HTTP types.

mod card;
mod guard;
mod http;
mod pool;
mod rpc;
mod stream;
mod submit;
mod tasks;

use crate::failure::{bad_flag, usage, Failure};
use crate::Output;
use dhp_core::config::{duration_from_secs, positive_duration};
use dhp_core::envelope::check_worker_id;
use dhp_core::store::{open_root, OpenedRoot};
use dhp_core::supervisor::Supervisor;
use dhp_core::TransportKind;
use dhp_core::{Config, Error, Runner};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Largest `--max-body` (bytes).
pub const MAX_BODY_LIMIT: usize = 64 << 20;
/// Longest `--block-timeout` (seconds).
pub const MAX_BLOCK_S: f64 = 3_600.0;
/// Most `--workers`.
pub const MAX_WORKERS: usize = 64;
/// Largest `--max-connections`.
pub const MAX_CONNECTIONS_LIMIT: usize = 65_536;
/// Longest `--header-timeout` (seconds).
pub const MAX_HEADER_TIMEOUT_S: f64 = 3_600.0;

#[derive(clap::Args)]
pub struct A2aArgs {
    /// Store directory (must hold a store unless --create).
    #[arg(long)]
    root: PathBuf,
    /// Create ROOT and a new store if there is none.
    #[arg(long)]
    create: bool,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port; 0 picks a free one (printed on the first line of stdout).
    #[arg(long, default_value_t = 8472)]
    port: u16,
    /// Bridge id: names its supervisor (ID-sup) and pool workers (ID-wN).
    #[arg(long, default_value = "a2a-bridge")]
    id: String,
    /// Require `Authorization: Bearer <token>` on JSON-RPC calls (the
    /// agent card stays public); also read from DHP_A2A_TOKEN. Required
    /// unless --insecure-no-token.
    #[arg(long, env = "DHP_A2A_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Serve JSON-RPC without any token: every process that can reach the
    /// port may create, read and cancel every task (a warning is printed on
    /// stderr at every start).
    #[arg(long)]
    insecure_no_token: bool,
    /// Also answer requests whose Host header names NAME (repeatable; the
    /// bound address, localhost, 127.0.0.1 and [::1] are always answered).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// Close a connection that has not sent a complete request head this
    /// many seconds after the server began waiting for it (idle keep-alive
    /// connections included).
    #[arg(long, default_value_t = 10.0)]
    header_timeout: f64,
    /// Most connections served at once (1 to 65536); one more is answered
    /// HTTP 503 and closed.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// Largest request body in bytes (1 to 67108864); larger ones get a
    /// JSON-RPC Invalid Request error.
    #[arg(long, default_value_t = 1 << 20)]
    max_body: usize,
    /// How long a blocking SendMessage (returnImmediately false) waits for
    /// a terminal state before returning the task as it stands (seconds).
    #[arg(long, default_value_t = 30.0)]
    block_timeout: f64,
    /// Built-in prime-census workers this server runs (0: leave execution
    /// to external workers such as `dhp work`).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Pool workers sleep this long after each chunk (seconds, 0 to 3600;
    /// demos and tests use it to keep a task in flight).
    #[arg(long, default_value_t = 0.0)]
    worker_pace: f64,
    /// Do not run a supervisor in this process (another one watches ROOT).
    #[arg(long)]
    no_supervisor: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// What every request handler shares.
pub struct App {
    pub bridge: tasks::Bridge,
    pub token: Option<String>,
    pub max_body: usize,
    pub block_timeout: Duration,
    pub url: String,
    /// Host and Origin checks.
    pub guard: guard::Guard,
    /// Set on SIGTERM/SIGINT: open streams and blocking sends end so the
    /// graceful shutdown is not held up by a task that is still working.
    pub closing: AtomicBool,
}

impl App {
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }
}

/// The shared HTTP limits but for the flags (the cap stays within the
/// descriptor budget: a quarter of the soft RLIMIT_NOFILE); bodies over
/// `--max-body` get a JSON-RPC error of their own (http.rs).
fn limits(header_timeout: Duration, max_connections: usize, block_timeout: Duration) -> dhp_http::Limits {
    dhp_http::Limits {
        header_timeout,
        max_connections,
        max_body: MAX_BODY_LIMIT,
        request_timeout: dhp_http::REQUEST_TIMEOUT + block_timeout,
        on_refuse: Some(|| crate::metrics::A2A_REFUSED.inc(crate::metrics::Refusal::Busy as usize)),
        ..dhp_http::Limits::new("a2a")
    }
}

/// `--metrics`: the bridge's families, and the supervisor's when it runs one.
fn start_metrics(metrics: &crate::metrics_http::MetricsArgs, no_supervisor: bool) -> Result<(), Failure> {
    use crate::metrics::Families;
    let families = Families::A2A.with(Families::WORKER);
    let families = if no_supervisor { families } else { families.with(Families::SUPERVISOR) };
    crate::metrics_http::start(metrics, "a2a", families)?;
    Ok(())
}

pub fn serve(a: A2aArgs, cfg: Config) -> Result<Output, Failure> {
    use std::io::Write;
    check_worker_id(&a.id)?;
    if !(1..=MAX_BODY_LIMIT).contains(&a.max_body) {
        return Err(usage(format!("--max-body must be in [1, {MAX_BODY_LIMIT}], got {}", a.max_body)));
    }
    if a.workers > MAX_WORKERS {
        return Err(usage(format!("--workers must be at most {MAX_WORKERS}, got {}", a.workers)));
    }
    let block_timeout = positive_duration("--block-timeout", a.block_timeout, MAX_BLOCK_S).map_err(bad_flag)?;
    let pace = duration_from_secs("--worker-pace", a.worker_pace, MAX_BLOCK_S).map_err(bad_flag)?;
    if !(1..=MAX_CONNECTIONS_LIMIT).contains(&a.max_connections) {
        return Err(usage(format!(
            "--max-connections must be in [1, {MAX_CONNECTIONS_LIMIT}], got {}",
            a.max_connections
        )));
    }
    let header_timeout =
        positive_duration("--header-timeout", a.header_timeout, MAX_HEADER_TIMEOUT_S).map_err(bad_flag)?;
    let allowed: Vec<String> =
        a.allow_host.iter().map(|h| guard::check_allowed_host(h)).collect::<Result<_, _>>().map_err(usage)?;
    let token = a.token.filter(|t| !t.is_empty());
    match (&token, a.insecure_no_token) {
        (None, false) => {
            return Err(usage(
                "dhp a2a needs a token: give --token T or DHP_A2A_TOKEN=T (clients send 'Authorization: Bearer T'), \
                 or --insecure-no-token to serve without authentication",
            ))
        }
        (Some(_), true) => return Err(usage("--insecure-no-token contradicts --token / DHP_A2A_TOKEN: give one")),
        _ => {}
    }
    crate::metrics_http::parse_addr_of(&a.metrics)?;
    let OpenedRoot { backend, dir } = open_root(&a.root, crate::create_mode(a.create))?;
    let runner = Runner::new(backend.clone(), &a.id, cfg.clone())?;
    start_metrics(&a.metrics, a.no_supervisor)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut supervisor = None;
    if !a.no_supervisor {
        let sup = Supervisor::new(backend.clone(), &format!("{}-sup", a.id), cfg.clone(), dir.clone())?;
        // Its counters are what `/metrics` reports for the supervisor.
        crate::metrics::supervisor(sup.metrics.clone());
        let stop = stop.clone();
        supervisor = Some(std::thread::spawn(move || {
            if let Err(e) = sup.watch(None, &stop, |act| tracing::info!(action = %act, "supervisor")) {
                tracing::error!(error = %e, "supervisor stopped");
            }
        }));
    }
    for n in 0..a.workers {
        let w = runner.with_id(&format!("{}-w{n}", a.id))?;
        let (stop, dir) = (stop.clone(), dir.clone());
        // Not joined on exit: a census in flight is abandoned with the
        // process, and its lease (or liveness token) hands it to a standby.
        std::thread::spawn(move || pool::run(&w, dir.as_deref(), pace, &stop));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::transport_from(TransportKind::Start, format!("cannot start the runtime: {e}"), e))?;
    let served = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let sig = |k| {
            signal(k).map_err(|e| Error::transport_from(TransportKind::Start, format!("cannot watch signals: {e}"), e))
        };
        let (mut term, mut int) = (sig(SignalKind::terminate())?, sig(SignalKind::interrupt())?);
        let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port)).await.map_err(|e| {
            Error::transport_from(TransportKind::Start, format!("cannot listen on {}:{}: {e}", a.host, a.port), e)
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::transport_from(TransportKind::Start, format!("listener address: {e}"), e))?;
        let url = format!("http://{local}/");
        let guard = guard::Guard::new(local, &allowed);
        let bridge = tokio::task::spawn_blocking(move || tasks::Bridge::new(runner))
            .await
            .map_err(|e| Error::transport_from(TransportKind::Start, format!("bridge start: {e}"), e))??;
        let app = Arc::new(App {
            bridge,
            token,
            max_body: a.max_body,
            block_timeout,
            url: url.clone(),
            guard,
            closing: AtomicBool::new(false),
        });
        if app.token.is_none() {
            eprintln!(
                "dhp a2a: WARNING: --insecure-no-token: JSON-RPC on {url} needs no token; any process that can \
                 reach this port can create, read and cancel every task"
            );
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dhp a2a: listening on {url} (agent card {url}.well-known/agent-card.json)");
        let _ = out.flush();
        drop(out);
        let closing = app.clone();
        let limits = limits(header_timeout, a.max_connections, block_timeout);
        dhp_http::serve(listener, http::router(app), limits, async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            closing.closing.store(true, Ordering::SeqCst);
        })
        .await;
        Ok::<(), Error>(())
    });
    stop.store(true, Ordering::SeqCst);
    if let Some(t) = supervisor {
        let _ = t.join();
    }
    served?;
    Ok((json!({"stopped": true}), "dhp a2a: stopped".into()))
}

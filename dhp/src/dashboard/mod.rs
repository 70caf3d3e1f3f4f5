//! `dhp dashboard ROOT`: a live, read-only web view of a store
//! (docs/dashboard.md). One poller reads what changed (see [`live`]) and
//! pushes it to every open page over server-sent events; the pages read
//! pages of handoffs and one handoff's detail on demand. Nothing here
//! writes to the store: it is opened read-only.

mod http;
mod live;
mod page;

use crate::failure::{bad_flag, usage, Failure};
use crate::Output;
use dhp_core::config::positive_duration;
use dhp_core::store::dashboard_view::View;
use dhp_core::{Config, Error, TransportKind};
use serde_json::json;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Longest `--poll` (seconds).
pub const MAX_POLL_S: f64 = 60.0;
/// Shortest `--poll` (seconds).
pub const MIN_POLL_S: f64 = 0.05;

#[derive(clap::Args)]
pub struct DashboardArgs {
    /// Store directory (must hold a store; opened read-only).
    root: PathBuf,
    /// Address to listen on: loopback unless --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port; 0 picks a free one (printed on the first line of stdout).
    #[arg(long, default_value_t = 8473)]
    port: u16,
    /// Listen on a non-loopback address (--host 0.0.0.0, a LAN address):
    /// every host that can reach the port may try the token.
    #[arg(long)]
    allow_remote: bool,
    /// The token a browser logs in with (`/login?token=T` or the login
    /// form) and API clients send as `Authorization: Bearer T`; also read
    /// from DHP_DASHBOARD_TOKEN. Required unless --insecure-no-token.
    #[arg(long, env = "DHP_DASHBOARD_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Serve without a token: every process that can reach the port reads
    /// every handoff (a warning is printed on stderr at every start).
    #[arg(long)]
    insecure_no_token: bool,
    /// Also answer requests whose Host header names NAME (repeatable; the
    /// bound address, localhost, 127.0.0.1 and [::1] are always answered).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// How often the store is asked what changed (seconds, 0.05 to 60).
    #[arg(long, default_value_t = 1.0)]
    poll: f64,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// A random hex secret of 32 bytes.
fn secret() -> String {
    use rand::RngCore;
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

fn start_err(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::transport_from(TransportKind::Start, format!("{what}: {e}"), e)
}

pub fn serve(a: DashboardArgs, _cfg: Config) -> Result<Output, Failure> {
    use std::io::Write;
    let every = positive_duration("--poll", a.poll, MAX_POLL_S).map_err(bad_flag)?;
    if every < Duration::from_secs_f64(MIN_POLL_S) {
        return Err(usage(format!("--poll must be at least {MIN_POLL_S} s, got {}", a.poll)));
    }
    let allowed: Vec<String> =
        a.allow_host.iter().map(|h| http::check_allowed_host(h)).collect::<Result<_, _>>().map_err(usage)?;
    let token = a.token.filter(|t| !t.is_empty());
    match (&token, a.insecure_no_token) {
        (None, false) => {
            return Err(usage(
                "dhp dashboard needs a token: give --token T or DHP_DASHBOARD_TOKEN=T (open /login?token=T, or send \
                 'Authorization: Bearer T'), or --insecure-no-token to serve without authentication",
            ))
        }
        (Some(_), true) => {
            return Err(usage("--insecure-no-token contradicts --token / DHP_DASHBOARD_TOKEN: give one"))
        }
        _ => {}
    }
    crate::metrics_http::parse_addr_of(&a.metrics)?;
    let view = Arc::new(View::open(&a.root)?);
    crate::metrics_http::start(&a.metrics, "dashboard", crate::metrics::Families::DASHBOARD)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| start_err("cannot start the runtime", e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let served = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (mut term, mut int) = (
            signal(SignalKind::terminate()).map_err(|e| start_err("cannot watch signals", e))?,
            signal(SignalKind::interrupt()).map_err(|e| start_err("cannot watch signals", e))?,
        );
        let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
            .await
            .map_err(|e| start_err(&format!("cannot listen on {}:{}", a.host, a.port), e))?;
        let local = listener.local_addr().map_err(|e| start_err("listener address", e))?;
        if !local.ip().is_loopback() && !a.allow_remote {
            return Err(Failure::from(Error::validation(format!(
                "--host {} is not a loopback address: give --allow-remote to serve other hosts (docs/dashboard.md)",
                a.host
            ))));
        }
        let live = {
            let v = view.clone();
            tokio::task::spawn_blocking(move || live::Live::start(v))
                .await
                .map_err(|e| start_err("dashboard start", e))??
        };
        {
            let (live, stop) = (live.clone(), stop.clone());
            std::thread::Builder::new()
                .name("dhp-dashboard-poll".into())
                .spawn(move || live.poll(every, stop))
                .map_err(|e| start_err("cannot start the poller", e))?;
        }
        let (close_tx, closing) = tokio::sync::watch::channel(false);
        let app =
            Arc::new(http::App { live, token, session: secret(), guard: http::Guard::new(local, &allowed), closing });
        let url = format!("http://{local}/");
        if app.token.is_none() {
            eprintln!(
                "dhp dashboard: WARNING: --insecure-no-token: {url} needs no token; any process that can reach this \
                 port reads every handoff"
            );
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dhp dashboard: listening on {url} (log in at {url}login)");
        let _ = out.flush();
        drop(out);
        run(listener, app, async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let _ = close_tx.send(true);
        })
        .await
        .map_err(|e| Failure::from(start_err("serving", e)))
    });
    stop.store(true, Ordering::SeqCst);
    served?;
    Ok((json!({"stopped": true}), "dhp dashboard: stopped".into()))
}

/// Serve the dashboard on `listener` until `shutdown` resolves (the
/// caller binds, so tests listen on port 0).
pub async fn run(
    listener: tokio::net::TcpListener,
    app: Arc<http::App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // the shared limits: 128 connections at most (open pages hold one each,
    // for their event stream), each request head within 5 s, 503 over the cap
    dhp_http::serve(listener, http::router(app), dhp_http::Limits::new("dashboard"), shutdown).await;
    Ok(())
}

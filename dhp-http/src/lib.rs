//! The project's one HTTP server stack (issue 46 item 3): every server —
//! `dhp`'s metrics endpoint, A2A and dashboard, the chaos run's live page
//! and workload service, the demo's mirror — is an axum [`Router`] served
//! here, on a listener its caller bound, under one set of [`Limits`]:
//!
//! - at most [`MAX_CONNECTIONS`] connections at once (fewer under a low
//!   `ulimit -n`: a server keeps three quarters of its descriptors,
//!   [`descriptor_budget`]); one more is answered `503` and closed, or
//!   with [`AtCap::MakeRoom`] the oldest connection not inside a request
//!   (idle, or still sending its head) is dropped for it;
//! - a request head of at most [`MAX_HEAD`] bytes (`431`), delivered within
//!   [`HEADER_TIMEOUT`] of when the server starts waiting for it (idle
//!   keep-alive connections included), or the connection is closed;
//! - a request body of at most [`MAX_BODY`] bytes (`413`);
//! - a response head within [`REQUEST_TIMEOUT`] (`503`; streamed bodies such
//!   as server-sent events go on after their head).
//!
//! A handler finds the peer's address as `axum::extract::ConnectInfo<SocketAddr>`.

mod cap;
mod conn;

pub use axum;
pub use cap::descriptor_budget;

use axum::Router;
use std::future::Future;
use std::time::Duration;

/// Connections a server serves at once, at most.
pub const MAX_CONNECTIONS: usize = 128;
/// The longest request head (request line and headers), in bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// The longest request body, in bytes.
pub const MAX_BODY: usize = 1 << 20;
/// A connection must deliver each request's whole head within this long.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// A request must have its response head within this long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a server does with one connection more than its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtCap {
    /// Answer it `503 Service Unavailable` and close it.
    Refuse,
    /// Drop the oldest connection not inside a request (idle, or still
    /// sending its head) to serve it; `503` only when every connection is
    /// inside a request. For a scrape endpoint that must answer through a
    /// flood of idle and half-sent clients.
    MakeRoom,
}

/// One server's bounds: [`Limits::new`] gives the shared ones; a server
/// changes one only where a flag of its own asks for it.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The server, in log lines (`metrics`, `a2a`, `dashboard`, ...).
    pub who: &'static str,
    /// Connections served at once (further capped by [`descriptor_budget`]).
    pub max_connections: usize,
    /// The longest request head, in bytes (at least 8192: hyper's floor).
    pub max_head: usize,
    /// The longest request body, in bytes.
    pub max_body: usize,
    /// The whole request head must arrive within this long.
    pub header_timeout: Duration,
    /// The response head must be ready within this long.
    pub request_timeout: Duration,
    /// What one connection over the cap gets.
    pub at_cap: AtCap,
    /// Called for each connection refused over the cap (a counter).
    pub on_refuse: Option<fn()>,
}

impl Limits {
    /// The shared limits, for the server `who`.
    pub const fn new(who: &'static str) -> Self {
        Limits {
            who,
            max_connections: MAX_CONNECTIONS,
            max_head: MAX_HEAD,
            max_body: MAX_BODY,
            header_timeout: HEADER_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
            at_cap: AtCap::Refuse,
            on_refuse: None,
        }
    }

    /// The connection cap in force: [`Limits::max_connections`] within
    /// [`descriptor_budget`], at least 1.
    pub fn cap(&self) -> usize {
        self.max_connections.min(descriptor_budget()).max(1)
    }
}

/// `router` answering each request with `Connection: close` (a scrape or
/// a one-shot client that reads to the end of the stream).
pub fn close_after_each(router: Router) -> Router {
    router.layer(axum::middleware::map_response(|mut r: axum::response::Response| async move {
        r.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
        r
    }))
}

/// Serve `router` on `listener` until `shutdown` resolves, then stop
/// accepting and give open connections a grace period to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    conn::serve(vec![listener], router, limits, shutdown).await
}

/// [`serve`] on several listeners (e.g. the loopbacks of two network
/// namespaces) with one connection table: the cap is the server's.
pub async fn serve_all(
    listeners: Vec<tokio::net::TcpListener>,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    conn::serve(listeners, router, limits, shutdown).await
}

/// A server running on a thread of its own (for programs without a
/// runtime): [`Background::stop`] ends it; dropping the handle leaves it
/// running for the life of the process.
pub struct Background {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Stop accepting, let open requests finish (bounded), and wait.
    pub fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serve `router` on blocking `listeners` the caller bound (one table for
/// all), from a new thread named `thread` with a runtime of its own.
pub fn spawn(
    listeners: Vec<std::net::TcpListener>,
    router: Router,
    limits: Limits,
    thread: &str,
) -> std::io::Result<Background> {
    for l in &listeners {
        l.set_nonblocking(true)?;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new().name(thread.into()).spawn(move || {
        rt.block_on(async move {
            match listeners.into_iter().map(tokio::net::TcpListener::from_std).collect() {
                Ok(ls) => {
                    serve_all(ls, router, limits, async move {
                        // a dropped handle (Err) leaves the server running
                        if stopped.await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    })
                    .await
                }
                Err(e) => tracing::warn!(error = %e, who = limits.who, "cannot serve on the listener"),
            }
        })
    })?;
    Ok(Background { stop: Some(stop), thread: Some(thread) })
}

/// A response body fed from a channel, one frame per message, ended when
/// the sender is dropped (a server-sent event stream written by a thread:
/// a send fails once the client is gone).
pub fn channel_body(rx: tokio::sync::mpsc::Receiver<axum::body::Bytes>) -> axum::body::Body {
    axum::body::Body::new(Channel(rx))
}

struct Channel(tokio::sync::mpsc::Receiver<axum::body::Bytes>);

impl hyper::body::Body for Channel {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

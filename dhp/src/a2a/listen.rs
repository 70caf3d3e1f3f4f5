//! The accept loop: HTTP/1.1 connections with a header read timeout and a
//! cap on open connections, and a graceful shutdown that lets in-flight
//! requests finish (streams end on their own once the server is closing).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// How long a graceful shutdown waits for open connections to finish.
const GRACE: Duration = Duration::from_secs(10);
/// How long a refused connection (over the cap) gets to take its 503.
const REFUSE_WRITE: Duration = Duration::from_secs(1);
/// Pause after a failed accept (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Connection limits (`--header-timeout`, `--max-connections`; the
/// dashboard's fixed ones).
#[derive(Clone, Copy)]
pub struct Limits {
    /// The server, in log lines (`a2a`, `dashboard`).
    pub who: &'static str,
    /// A connection must deliver each request's complete head within this
    /// long from when the server starts waiting for it (an idle keep-alive
    /// connection included), or it is closed.
    pub header_timeout: Duration,
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

/// Answer a connection over the cap and close it.
async fn refuse(mut sock: TcpStream) {
    let body = r#"{"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "Server busy: too many open connections"}}"#;
    let resp = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSE_WRITE, async {
        let _ = sock.write_all(resp.as_bytes()).await;
        let _ = sock.shutdown().await;
    })
    .await;
}

/// Serve `router` on `listener` until `shutdown` resolves, then stop
/// accepting and give open connections [`GRACE`] to finish.
pub async fn serve(listener: TcpListener, router: Router, limits: Limits, shutdown: impl Future<Output = ()>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let sock = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((sock, _)) => sock,
                Err(e) => {
                    tracing::warn!(error = %e, who = limits.who, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                max = limits.max_connections,
                who = limits.who,
                "connection cap reached; refusing a connection"
            );
            if limits.who == "a2a" {
                crate::metrics::A2A_REFUSED.inc(crate::metrics::Refusal::Busy as usize);
            }
            tokio::spawn(refuse(sock));
            continue;
        };
        let _ = sock.set_nodelay(true);
        let svc = TowerToHyperService::new(router.clone());
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let conn = b.serve_connection(TokioIo::new(sock), svc);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "a2a: connection ended");
                    }
                }
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(GRACE, slots.acquire_many(all)).await;
}

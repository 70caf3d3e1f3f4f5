//! The accept loop and one connection: hyper's HTTP/1 with the head
//! limits, the router behind the body limit and the request timeout.

use crate::cap::{Entry, Table};
use crate::{AtCap, Limits};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower_service::Service;

/// How long a graceful shutdown waits for open connections to finish.
const GRACE: Duration = Duration::from_secs(10);
/// How long a refused connection (over the cap) gets to take its 503.
const REFUSE_WRITE: Duration = Duration::from_secs(1);
/// Pause after a failed accept (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// hyper's smallest read buffer.
const MIN_HEAD: usize = 8192;

/// The answer to a connection over the cap, written without reading its
/// request (it may have sent none).
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 32\r\n\
Retry-After: 1\r\nConnection: close\r\n\r\nbusy: too many open connections\n";

/// Answer a connection over the cap and close it.
async fn refuse(mut sock: TcpStream) {
    let _ = tokio::time::timeout(REFUSE_WRITE, async {
        let _ = sock.write_all(BUSY).await;
        let _ = sock.shutdown().await;
    })
    .await;
}

/// A short plain-text answer that closes the connection.
fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// One request through the body limit and the request timeout.
/// The peer's address is the request's `ConnectInfo<SocketAddr>`.
async fn answer(mut router: Router, mut req: Request<Incoming>, limits: Limits, peer: SocketAddr) -> Response<Body> {
    req.extensions_mut().insert(ConnectInfo(peer));
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_body as u64) {
        return plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n");
    }
    // a chunked body is cut at the limit too (axum's extractors answer 413)
    let req = req.map(|b| Body::new(http_body_util::Limited::new(b, limits.max_body)));
    match tokio::time::timeout(limits.request_timeout, router.call(req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(never)) => match never {},
        Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n"),
    }
}

/// Serve one admitted connection until it ends, is cut to make room, or
/// the server stops (then it finishes its request gracefully).
async fn connection(sock: TcpStream, router: Router, limits: Limits, entry: Entry, mut stop: watch::Receiver<bool>) {
    let busy = entry.busy;
    let Ok(peer) = sock.peer_addr() else { return };
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let (router, busy) = (router.clone(), busy.clone());
        async move {
            busy.store(true, Ordering::SeqCst);
            let r = answer(router, req, limits, peer).await;
            busy.store(false, Ordering::SeqCst);
            Ok::<_, Infallible>(r)
        }
    });
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).max_buf_size(limits.max_head.max(MIN_HEAD));
    let conn = b.serve_connection(TokioIo::new(sock), svc);
    tokio::pin!(conn);
    let mut cut = entry.cut;
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(error = %e, who = limits.who, "connection ended");
            }
        }
        // dropped to make room: the socket closes with the future
        _ = &mut cut => {}
        _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// See [`crate::serve`]: one connection table (and cap) for every
/// listener.
pub(crate) async fn serve(
    listeners: Vec<TcpListener>,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let table = Arc::new(Table::default());
    let cap = limits.cap();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut accepted) = tokio::sync::mpsc::channel::<TcpStream>(64);
    let accepting: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    match l.accept().await {
                        Ok((sock, _)) => {
                            if tx.send(sock).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, who = limits.who, "accept failed");
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                        }
                    }
                }
            })
        })
        .collect();
    drop(tx);
    tokio::pin!(shutdown);
    loop {
        let sock = tokio::select! {
            _ = &mut shutdown => break,
            s = accepted.recv() => match s {
                Some(sock) => sock,
                None => break,
            },
        };
        let Some(entry) = table.admit(cap, limits.at_cap == AtCap::MakeRoom) else {
            tracing::warn!(max = cap, who = limits.who, "connection cap reached; refusing a connection");
            if let Some(count) = limits.on_refuse {
                count();
            }
            tokio::spawn(refuse(sock));
            continue;
        };
        let _ = sock.set_nodelay(true);
        let (stop, table, router) = (stop_rx.clone(), table.clone(), router.clone());
        tokio::spawn(async move {
            let id = entry.id;
            connection(sock, router, limits, entry, stop).await;
            table.leave(id);
        });
    }
    // the listeners close with their tasks
    for a in accepting {
        a.abort();
    }
    drop(accepted);
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(GRACE, async {
        while table.open() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

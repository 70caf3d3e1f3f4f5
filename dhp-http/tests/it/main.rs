//! dhp-http's limits over real sockets, one module per scenario.

mod cap;
mod limits;
mod timeouts;

use dhp_http::axum::routing::{get, post};
use dhp_http::axum::Router;
use dhp_http::{Background, Limits};
use std::net::SocketAddr;
use std::time::Duration;

/// A test server: `GET /` answers `ok`, `GET /slow` after 3 s, `POST /echo`
/// reads its whole body.
pub fn server(limits: Limits) -> (SocketAddr, Background) {
    let router = Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                "late"
            }),
        )
        .route("/echo", post(|b: dhp_http::axum::body::Bytes| async move { format!("{} bytes", b.len()) }));
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    (addr, dhp_http::spawn(vec![l], router, limits, "test-http").unwrap())
}

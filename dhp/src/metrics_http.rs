//! `--metrics ADDR`: the process's counters at `GET /metrics` in the
//! Prometheus text format (0.0.4), served by dhp-http under its shared
//! limits from a thread of its own. At the cap the oldest connection not
//! inside a request (idle, or still sending its head) is dropped for the
//! new one (`AtCap::MakeRoom`): clients holding half-sent requests cannot
//! keep a scrape out. Loopback only unless `--metrics-allow-remote`
//! (docs/observability.md).

use crate::failure::{usage, Failure};
use crate::metrics::{self, Families};
use dhp_core::{Error, TransportKind};
use dhp_http::axum::http::{header, StatusCode};
use dhp_http::axum::response::IntoResponse;
use dhp_http::axum::routing::get;
use dhp_http::axum::Router;
use dhp_http::{AtCap, Limits};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};

/// The metrics endpoint's bounds: the shared ones, making room at the cap.
const LIMITS: Limits = Limits { at_cap: AtCap::MakeRoom, ..Limits::new("metrics") };

#[derive(clap::Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics. ADDR is PORT
    /// (127.0.0.1:PORT), IP:PORT or [IPv6]:PORT; port 0 picks a free one
    /// (the address is printed on stderr). Loopback only unless
    /// --metrics-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Let --metrics listen on a non-loopback address (the metrics carry
    /// no secrets, but anyone who reaches the port can read them).
    #[arg(long, requires = "metrics")]
    pub metrics_allow_remote: bool,
}

/// Parse ADDR: `PORT`, `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`.
pub fn parse_addr(text: &str, allow_remote: bool) -> Result<SocketAddr, Failure> {
    let bad = |why: &str| usage(format!("--metrics {text:?}: {why}"));
    let t = text.trim();
    let addr = if let Ok(port) = t.parse::<u16>() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else if let Some(port) = t.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| bad("the port is not a number from 0 to 65535"))?;
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else {
        t.parse::<SocketAddr>().map_err(|_| bad("give PORT, IP:PORT or [IPv6]:PORT"))?
    };
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(bad("not a loopback address; add --metrics-allow-remote to serve metrics on it"));
    }
    Ok(addr)
}

/// Check `--metrics` before anything else starts (a usage error first).
pub fn parse_addr_of(args: &MetricsArgs) -> Result<Option<SocketAddr>, Failure> {
    args.metrics.as_deref().map(|t| parse_addr(t, args.metrics_allow_remote)).transpose()
}

/// Bind ADDR now (a taken port fails the command before it starts) and
/// serve `families` from a background thread for the life of the process.
/// Prints `dhp <what>: metrics on http://ADDR/metrics` on stderr.
pub fn start(args: &MetricsArgs, what: &str, families: Families) -> Result<Option<SocketAddr>, Failure> {
    let Some(text) = &args.metrics else {
        return Ok(None);
    };
    let addr = parse_addr(text, args.metrics_allow_remote)?;
    let listener = TcpListener::bind(addr).map_err(|e| {
        Error::transport_from(TransportKind::Start, format!("--metrics: cannot listen on {addr}: {e}"), e)
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::transport_from(TransportKind::Start, format!("--metrics: listener address: {e}"), e))?;
    // the server lives as long as the process (its handle is dropped)
    dhp_http::spawn(vec![listener], router(families), LIMITS, "dhp-metrics").map_err(|e| {
        Error::transport_from(TransportKind::Start, format!("--metrics: cannot start its server: {e}"), e)
    })?;
    crate::out::stderr_line(&format!("dhp {what}: metrics on http://{local}/metrics"));
    Ok(Some(local))
}

/// `GET /metrics` (and `HEAD`), one request per connection.
fn router(families: Families) -> Router {
    let scrape = move || async move {
        ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], metrics::render(families)).into_response()
    };
    let router = Router::new()
        .route("/metrics", get(scrape))
        .fallback(|| async { (StatusCode::NOT_FOUND, "only /metrics is served here\n") });
    dhp_http::close_after_each(router)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    #[test]
    fn addresses_are_loopback_unless_allowed() {
        assert_eq!(parse_addr("9464", false).unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(parse_addr("localhost:0", false).unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(parse_addr("[::1]:9", false).unwrap().to_string(), "[::1]:9");
        assert!(parse_addr("0.0.0.0:9464", false).is_err());
        assert!(parse_addr("10.1.2.3:9464", false).is_err());
        assert_eq!(parse_addr("0.0.0.0:9464", true).unwrap().to_string(), "0.0.0.0:9464");
        for bad in ["", "x", "70000", "example.com:80", "127.0.0.1", "localhost:x"] {
            assert!(parse_addr(bad, true).is_err(), "{bad}");
        }
    }

    fn serve(families: Families) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let _running = dhp_http::spawn(vec![listener], router(families), LIMITS, "test-metrics").unwrap();
        addr
    }

    fn exchange(addr: SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(req).unwrap();
        let mut got = String::new();
        let _ = c.read_to_string(&mut got);
        got
    }

    /// 130 clients holding half-sent requests (issue 47 item 6): a scrape
    /// is still answered at once, not after their timeouts in turn.
    #[test]
    fn a_scrape_is_answered_while_clients_hold_half_sent_requests() {
        let addr = serve(Families::SUPERVISOR);
        let mut holders = Vec::new();
        for _ in 0..130 {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /metr").unwrap();
            holders.push(c);
        }
        for round in 0..3 {
            let t0 = Instant::now();
            let got = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            let took = t0.elapsed();
            assert!(got.starts_with("HTTP/1.1 200"), "scrape {round}: {got:?} after {took:?}");
            assert!(took < Duration::from_secs(2), "scrape {round} waited {took:?} behind the half-sent requests");
        }
        drop(holders);
    }

    #[test]
    fn only_get_metrics_is_served() {
        let addr = serve(Families::SUPERVISOR);
        let status = |req: &[u8]| exchange(addr, req).lines().next().unwrap_or("").to_string();
        assert_eq!(status(b"GET /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
        assert_eq!(status(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), "HTTP/1.0 200 OK");
        let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"), "{head}");
        assert_eq!(status(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
        assert_eq!(status(b"GET /metrics\r\n\r\n"), "HTTP/1.1 400 Bad Request");
        assert_eq!(status(b"\xff\xfe\r\n\r\n"), "HTTP/1.1 400 Bad Request");
    }
}

//! `--metrics ADDR`: the process's counters at `GET /metrics` in the
//! Prometheus text format (0.0.4), one thread per connection with plain
//! blocking sockets. Bounded: at most [`MAX_CONNECTIONS`] at once (fewer
//! when RLIMIT_NOFILE is low: [`conn_cap`]), the whole request head within
//! [`IO_TIMEOUT`], and at the cap the oldest connection still sending its
//! head is dropped for the new one — clients holding half-sent requests
//! cannot keep a scrape out. Loopback only unless `--metrics-allow-remote`
//! (docs/observability.md).

use crate::failure::{usage, Failure};
use crate::metrics::{self, Families};
use dhp_core::{Error, TransportKind};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once, at most.
const MAX_CONNECTIONS: usize = 32;

/// How long one scrape may take to send its request or take the reply.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest request head read (a scrape's is ~200 bytes).
const MAX_HEAD: usize = 8192;

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
    std::thread::Builder::new().name("dhp-metrics".into()).spawn(move || accept_loop(listener, families)).map_err(
        |e| Error::transport_from(TransportKind::Start, format!("--metrics: cannot start a thread: {e}"), e),
    )?;
    crate::out::stderr_line(&format!("dhp {what}: metrics on http://{local}/metrics"));
    Ok(Some(local))
}

/// The connection cap: [`MAX_CONNECTIONS`], or a quarter of the soft
/// RLIMIT_NOFILE when that is lower (each connection holds two
/// descriptors; the process needs the rest), at least 2.
fn conn_cap() -> usize {
    usize::try_from(nofile_soft() / 4).unwrap_or(MAX_CONNECTIONS).clamp(2, MAX_CONNECTIONS)
}

/// The soft RLIMIT_NOFILE, from `/proc/self/limits` (1024 when unreadable).
pub(crate) fn nofile_soft() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("Max open files"))?;
            l.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(1024)
}

/// A connection being served: a handle to cut it, and whether its whole
/// request head has arrived.
struct Slot {
    id: u64,
    since: Instant,
    sock: TcpStream,
    head_done: Arc<AtomicBool>,
}

fn accept_loop(listener: TcpListener, families: Families) {
    let slots: Arc<Mutex<Vec<Slot>>> = Arc::default();
    let cap = conn_cap();
    let mut next = 0u64;
    for conn in listener.incoming() {
        match conn {
            Ok(sock) => {
                let mut g = slots.lock().unwrap_or_else(|e| e.into_inner());
                if g.len() >= cap {
                    // the oldest still sending its head makes room (a scrape sends it at once)
                    let oldest = g.iter().enumerate().filter(|(_, s)| !s.head_done.load(Ordering::SeqCst));
                    match oldest.min_by_key(|(_, s)| s.since).map(|(i, _)| i) {
                        Some(i) => {
                            let _ = g.remove(i).sock.shutdown(Shutdown::Both);
                        }
                        None => {
                            drop(g);
                            let mut sock = sock;
                            let _ = reply(&mut sock, "503 Service Unavailable", "text/plain", b"busy\n", false);
                            continue;
                        }
                    }
                }
                let Ok(handle) = sock.try_clone() else { continue };
                next += 1;
                let (id, done) = (next, Arc::new(AtomicBool::new(false)));
                g.push(Slot { id, since: Instant::now(), sock: handle, head_done: done.clone() });
                drop(g);
                let mine = Arc::clone(&slots);
                let run = move || {
                    if let Err(e) = answer(sock, families, &done) {
                        tracing::debug!(error = %e, "metrics: scrape connection failed");
                    }
                    mine.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| s.id != id);
                };
                if std::thread::Builder::new().name("dhp-metrics-conn".into()).spawn(run).is_err() {
                    slots.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| s.id != id);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics: accept failed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics { head_only: bool },
    NotFound,
    BadMethod,
    Malformed,
}

fn classify(head: &[u8]) -> Asked {
    let Some(line) = head.split(|b| *b == b'\n').next() else {
        return Asked::Malformed;
    };
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Asked::Malformed;
    };
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return Asked::Malformed;
    }
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => Asked::Metrics { head_only: false },
        ("HEAD", "/metrics") => Asked::Metrics { head_only: true },
        (_, "/metrics") => Asked::BadMethod,
        _ => Asked::NotFound,
    }
}

fn answer(mut sock: TcpStream, families: Families, head_done: &AtomicBool) -> std::io::Result<()> {
    sock.set_read_timeout(Some(IO_TIMEOUT))?;
    sock.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    // One deadline for the whole head: a client trickling bytes cannot
    // hold the (single) metrics thread longer than IO_TIMEOUT.
    let deadline = std::time::Instant::now() + IO_TIMEOUT;
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        sock.set_read_timeout(Some(left))?;
        let n = sock.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(buf.get(..n).unwrap_or_default());
        if head.len() > MAX_HEAD {
            return reply(
                &mut sock,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"request head too large\n",
                false,
            );
        }
    }
    head_done.store(true, Ordering::SeqCst);
    match classify(&head) {
        Asked::Metrics { head_only } => {
            let body = metrics::render(families);
            reply(&mut sock, "200 OK", metrics::CONTENT_TYPE, body.as_bytes(), head_only)
        }
        Asked::NotFound => reply(&mut sock, "404 Not Found", "text/plain", b"only /metrics is served here\n", false),
        Asked::BadMethod => reply(&mut sock, "405 Method Not Allowed", "text/plain", b"GET /metrics\n", false),
        Asked::Malformed => reply(&mut sock, "400 Bad Request", "text/plain", b"not an HTTP/1 request\n", false),
    }
}

fn reply(sock: &mut TcpStream, status: &str, ctype: &str, body: &[u8], head_only: bool) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes())?;
    if !head_only {
        sock.write_all(body)?;
    }
    sock.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// 130 clients holding half-sent requests (issue 47 item 6): a scrape
    /// is still answered at once, not after their timeouts in turn.
    #[test]
    fn a_scrape_is_answered_while_clients_hold_half_sent_requests() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || accept_loop(listener, Families::SUPERVISOR));
        let mut holders = Vec::new();
        for _ in 0..130 {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /metr").unwrap();
            holders.push(c);
        }
        for round in 0..3 {
            let t0 = Instant::now();
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut got = String::new();
            let _ = c.read_to_string(&mut got);
            let took = t0.elapsed();
            assert!(got.starts_with("HTTP/1.1 200"), "scrape {round}: {got:?} after {took:?}");
            assert!(took < Duration::from_secs(2), "scrape {round} waited {took:?} behind the half-sent requests");
        }
        drop(holders);
    }

    #[test]
    fn the_cap_stays_below_the_descriptor_limit() {
        let cap = conn_cap();
        let soft = nofile_soft();
        assert!(soft != 1024 || std::fs::read_to_string("/proc/self/limits").unwrap().contains("Max open files"));
        assert!((2..=MAX_CONNECTIONS).contains(&cap) && (cap as u64) * 2 < soft.max(8), "{cap} of {soft}");
    }

    #[test]
    fn only_get_metrics_is_served() {
        assert_eq!(classify(b"GET /metrics HTTP/1.1\r\n\r\n"), Asked::Metrics { head_only: false });
        assert_eq!(classify(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), Asked::Metrics { head_only: false });
        assert_eq!(classify(b"HEAD /metrics HTTP/1.1\r\n\r\n"), Asked::Metrics { head_only: true });
        assert_eq!(classify(b"POST /metrics HTTP/1.1\r\n\r\n"), Asked::BadMethod);
        assert_eq!(classify(b"GET / HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(classify(b"GET /metrics\r\n\r\n"), Asked::Malformed);
        assert_eq!(classify(b"\xff\xfe\r\n\r\n"), Asked::Malformed);
    }
}

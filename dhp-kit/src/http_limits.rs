//! The probe of the shared HTTP limits (dhp-http), run against every
//! server of the project by its crate's tests: an over-large request head
//! is answered `431`, an over-large body `413`, and a connection over the
//! cap `503 busy` (or, for a server that makes room, served) — the same
//! way everywhere, because every server is the one stack. Panics with what
//! it got (test machinery).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A head over dhp-http's `MAX_HEAD` (16 KiB).
const BIG_HEAD: usize = 20 * 1024;
/// A declared body (never sent) over dhp-http's `MAX_BODY` (1 MiB) and
/// over the largest a server may raise it to (`dhp a2a --max-body`, 64 MiB).
const BIG_BODY: usize = 65 << 20;

/// Send `req` on a new connection and read the status line and what
/// follows until the server closes (or 10 s pass).
pub fn exchange(addr: SocketAddr, req: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    // the server may answer and close before it has read it all
    let _ = s.write_all(req);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

/// The status line of `reply`.
fn status(reply: &str) -> &str {
    reply.lines().next().unwrap_or("")
}

/// `GET path` with a head too large is answered 431.
pub fn head_too_large_is_431(addr: SocketAddr, path: &str) {
    let pad = "x".repeat(BIG_HEAD);
    let got = exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Pad: {pad}\r\n\r\n").as_bytes());
    assert_eq!(status(&got), "HTTP/1.1 431 Request Header Fields Too Large", "{addr}{path}: {got:.300}");
}

/// `POST path` declaring a body too large is answered 413 before the
/// body is sent.
pub fn body_too_large_is_413(addr: SocketAddr, path: &str) {
    let got = exchange(
        addr,
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {BIG_BODY}\r\n\r\n").as_bytes(),
    );
    assert_eq!(status(&got), "HTTP/1.1 413 Payload Too Large", "{addr}{path}: {got:.300}");
    assert!(got.contains("request body too large"), "{got:.300}");
}

/// With `cap` connections open and silent, one more is answered
/// `503 busy` at once and closed; a server that makes room (`makes_room`)
/// serves it instead. The held connections are returned (drop them to
/// free the server).
///
/// Connections of an earlier probe may still count for a moment after
/// their client closed: then some of the held ones are refused instead and
/// the extra one is served. That is seen (a held connection got `503`),
/// and the probe starts again; a server without a cap refuses none.
pub fn over_the_cap(addr: SocketAddr, path: &str, cap: usize, makes_room: bool) -> Vec<TcpStream> {
    let mut tries = 0;
    loop {
        tries += 1;
        let held: Vec<TcpStream> =
            (0..cap).map(|_| TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"))).collect();
        std::thread::sleep(Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        let got =
            exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes());
        let took = t0.elapsed();
        if makes_room {
            assert!(!status(&got).contains(" 503 "), "{addr}{path}: refused although it makes room: {got:.300}");
            assert!(status(&got).starts_with("HTTP/1.1 "), "{addr}{path}: not served: {got:.300}");
        } else if status(&got) != "HTTP/1.1 503 Service Unavailable" && tries < 5 && held.iter().any(refused) {
            drop(held);
            std::thread::sleep(Duration::from_millis(500));
            continue;
        } else {
            assert_eq!(status(&got), "HTTP/1.1 503 Service Unavailable", "{addr}{path}: {got:.300}");
            assert!(got.ends_with("busy: too many open connections\n"), "{got:.300}");
        }
        assert!(took < Duration::from_secs(2), "{addr}{path}: the answer over the cap took {took:?}");
        return held;
    }
}

/// A held connection the server answered `503` (it was over the cap).
/// Did the server answer this held connection with 503 (refused at its
/// connection cap)? Waits at most 100 ms for the answer.
pub fn refused(s: &TcpStream) -> bool {
    let mut buf = [0u8; 64];
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let n = (&*s).read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).contains(" 503 ")
}

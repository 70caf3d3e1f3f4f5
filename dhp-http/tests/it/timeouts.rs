//! A head not delivered in time closes its connection; a response head
//! not ready in time is answered 503.
use crate::server;
use dhp_http::Limits;
use dhp_kit::http_limits::exchange;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn slow_heads_are_closed_and_slow_handlers_answered_503() {
    let limits = Limits {
        header_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(1),
        ..Limits::new("test")
    };
    let (addr, srv) = server(limits);
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let took = t0.elapsed();
    assert!(took > Duration::from_millis(800) && took < Duration::from_secs(4), "closed after {took:?}");
    let late = exchange(addr, b"GET /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert!(late.starts_with("HTTP/1.1 503") && late.ends_with("request timed out\n"), "{late:.200}");
    srv.stop();
}

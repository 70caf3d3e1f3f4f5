//! One connection over the cap: refused 503 at once (the default), or,
//! with AtCap::MakeRoom, served in place of the oldest connection not
//! inside a request — never in place of one inside a request.
use crate::server;
use dhp_http::{AtCap, Limits};
use dhp_kit::http_limits::{exchange, over_the_cap};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static REFUSED: AtomicUsize = AtomicUsize::new(0);

#[test]
fn over_the_cap_is_refused_and_counted() {
    let limits = Limits {
        max_connections: 4,
        on_refuse: Some(|| {
            REFUSED.fetch_add(1, Ordering::SeqCst);
        }),
        ..Limits::new("test")
    };
    let (addr, srv) = server(limits);
    let held = over_the_cap(addr, "/", 4, false);
    assert_eq!(REFUSED.load(Ordering::SeqCst), 1);
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let ok = exchange(addr, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "served once they are gone: {ok:.200}");
    srv.stop();
}

#[test]
fn making_room_drops_idle_connections_not_requests() {
    let limits = Limits { max_connections: 4, at_cap: AtCap::MakeRoom, ..Limits::new("test") };
    let (addr, srv) = server(limits);
    // idle and half-sent connections make room
    let mut held = over_the_cap(addr, "/", 4, true);
    held.truncate(0);
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET / HTTP/1.1\r\nHost").unwrap();
    let _keep = half;
    // four requests inside their handler are not dropped for a fifth
    let slow: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || exchange(addr, b"GET /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let busy = exchange(addr, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:.200}");
    for s in slow {
        let got = s.join().unwrap();
        assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("late"), "{got:.200}");
    }
    srv.stop();
}

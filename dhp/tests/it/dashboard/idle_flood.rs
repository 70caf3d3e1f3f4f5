//! `dhp dashboard` under `ulimit -n 256` with 400 idle connections
//! (issue 47 item 7): the idle ones are closed after the header timeout
//! and the connection cap stays below the descriptor limit, so the token
//! holder is served again within seconds (before: locked out for good).
use crate::common::*;
use crate::dashboard_support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One token-holder request with short timeouts (a server that never
/// answers fails the test in bounded time); the response's first bytes.
fn try_get(port: u16) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let req = format!(
        "GET /api/handoffs?limit=5 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[test]
fn a_token_holder_is_served_through_an_idle_flood_under_a_low_fd_limit() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 10);
    // the limit in the dashboard's own process (prlimit, util-linux), not in the test's
    let wrapper = dir.path().join("dhp-low-nofile.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec prlimit --nofile=256:256 -- {} \"$@\"\n", dhp_bin().display()))
        .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let d = Dash::start_bin(&wrapper, dir.path(), &[]);
    assert_eq!(d.get("/api/handoffs?limit=5").status, 200, "served before the flood");
    let idle: Vec<TcpStream> = (0..400).filter_map(|_| TcpStream::connect(("127.0.0.1", d.port)).ok()).collect();
    assert!(idle.len() >= 300, "only {} idle connections opened", idle.len());
    let t0 = Instant::now();
    let served = loop {
        let ok = try_get(d.port).is_some_and(|head| head.starts_with("HTTP/1.1 200"));
        if ok {
            break Some(t0.elapsed());
        }
        if t0.elapsed() > Duration::from_secs(15) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    drop(idle);
    let took = served.expect("the token holder was not served within 15 s of the idle flood");
    assert!(took < Duration::from_secs(10), "served again only after {took:?}");
    println!("token holder served {took:?} after 400 idle connections under ulimit -n 256");
    let (code, _, err) = d.stop();
    assert_eq!(code, 0, "{err}");
}

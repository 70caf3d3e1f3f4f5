//! `dhp supervisor --metrics` under `ulimit -n 64` with 200 idle
//! connections and 50 half-sent requests (issue 47 item 6): the server's
//! cap fits the descriptor budget (a quarter of the limit) and the oldest
//! half-sent connection makes room, so every scrape is answered at once.
use crate::common::*;
use crate::metrics_support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One scrape with short timeouts: its status line and how long it took.
fn scrape(addr: &str) -> (String, Duration) {
    let t0 = Instant::now();
    let got = (|| -> std::io::Result<String> {
        let mut c = TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(5))?;
        c.set_read_timeout(Some(Duration::from_secs(5)))?;
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")?;
        let mut out = String::new();
        c.read_to_string(&mut out)?;
        Ok(out.lines().next().unwrap_or("").to_string())
    })();
    (got.unwrap_or_else(|e| format!("error: {e}")), t0.elapsed())
}

#[test]
fn a_scrape_is_answered_through_idle_and_half_sent_clients_under_a_low_fd_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let root = store.to_str().unwrap();
    let (code, _, err) = dhp(&["dispatch", root, "--create", "--census", "0,100,100"], &[]);
    assert_eq!(code, 0, "{err}");
    // the limit in the supervisor's own process (prlimit, util-linux), not in the test's
    let child = Command::new("prlimit")
        .args(["--nofile=64:64", "--"])
        .arg(dhp_bin())
        .args(["supervisor", root, "sup", "300", "--metrics", "127.0.0.1:0"])
        .env("DHP_SUPERVISOR_SCAN_S", "0.2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) running dhp supervisor");
    let mut sup = Proc(child);
    let addr = metrics_addr(sup.0.stderr.take().unwrap());
    assert_eq!(scrape(&addr).0, "HTTP/1.1 200 OK", "served before the flood");
    let mut held: Vec<TcpStream> = (0..200).filter_map(|_| TcpStream::connect(&addr).ok()).collect();
    for _ in 0..50 {
        if let Ok(mut c) = TcpStream::connect(&addr) {
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
            held.push(c);
        }
    }
    assert_eq!(held.len(), 250, "the kernel's backlog takes them all");
    std::thread::sleep(Duration::from_millis(300));
    for round in 0..3 {
        let (status, took) = scrape(&addr);
        assert_eq!(status, "HTTP/1.1 200 OK", "scrape {round} after {took:?}");
        assert!(took < Duration::from_secs(2), "scrape {round} waited {took:?} behind the idle clients");
    }
    assert!(sup.0.try_wait().unwrap().is_none(), "the supervisor is still up");
    drop(held);
}

//! `dhp a2a` under `ulimit -n 64` with 200 idle connections (issue 47:
//! every server's cap below RLIMIT_NOFILE): `--max-connections` (256 by
//! default) is cut to a quarter of the limit, so `accept` never runs out
//! of descriptors: a client is answered at once (503 `Retry-After` while
//! the idle ones hold every slot) instead of waiting unanswered in the
//! backlog, and served once they are gone.
use crate::a2a_support::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// GET the agent card with short timeouts: its status line and the time it took.
fn card(port: u16) -> (String, Duration) {
    let t0 = Instant::now();
    let got = (|| -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(3))?;
        s.set_read_timeout(Some(Duration::from_secs(3)))?;
        s.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line)?;
        Ok(line.trim_end().to_string())
    })();
    (got.unwrap_or_else(|e| format!("error: {e}")), t0.elapsed())
}

#[test]
fn a_client_is_answered_at_once_through_an_idle_flood_under_a_low_fd_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let mut child = Command::new("prlimit")
        .args(["--nofile=64:64", "--"])
        .arg(dhp_bin())
        .args(["a2a", "--root"])
        .arg(&root)
        .args(["--host", "127.0.0.1", "--port", "0", "--header-timeout", "3"])
        .env("DHP_A2A_TOKEN", TEST_TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) running dhp a2a");
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    let port: u16 = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .and_then(|u| u.trim_end_matches('/').rsplit(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{first}"));
    let mut stop = Server { child, url: String::new(), port };
    assert_eq!(card(port).0, "HTTP/1.1 200 OK", "served before the flood");
    let idle: Vec<TcpStream> = (0..200).filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok()).collect();
    assert_eq!(idle.len(), 200);
    std::thread::sleep(Duration::from_millis(300));
    let (status, took) = card(port);
    assert!(
        (status == "HTTP/1.1 503 Service Unavailable" || status == "HTTP/1.1 200 OK") && took < Duration::from_secs(2),
        "{status:?} after {took:?}: a client must be answered at once"
    );
    drop(idle);
    let t0 = Instant::now();
    while card(port).0 != "HTTP/1.1 200 OK" {
        assert!(t0.elapsed() < Duration::from_secs(8), "not served again after the idle clients left");
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.kill();
}

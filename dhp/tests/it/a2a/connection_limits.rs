//! `dhp a2a` over real sockets (issue 33, item 11): a stream on an
//! unfinished task ends when its client hangs up (hundreds of abandoned
//! streams leave an idle server idle, and their connections are closed);
//! a connection that never finishes its request head is closed after
//! `--header-timeout`; connections over `--max-connections` are answered
//! 503, and a real client gets through once the stuck ones are gone.
use crate::a2a_support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The server's CPU time so far (user + system), from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    let hz = std::process::Command::new("getconf").arg("CLK_TCK").output().unwrap();
    let hz: f64 = String::from_utf8_lossy(&hz.stdout).trim().parse().unwrap();
    ticks / hz
}

/// Open sockets of the server process.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:")))
        .count()
}

fn request(method: &str, body: &str) -> String {
    let body = body.replace("METHOD", method);
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n\
         Authorization: Bearer {TEST_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Open a SubscribeToTask stream and read until its first event.
fn open_stream(port: u16, tid: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"METHOD","params":{{"id":"{tid}"}}}}"#);
    s.write_all(request("SubscribeToTask", &body).as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("data:") {
        let n = s.read(&mut buf).expect("first event");
        assert!(n > 0, "stream closed before its first event: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).contains("text/event-stream"), "{}", String::from_utf8_lossy(&got));
    s
}

#[test]
fn abandoned_streams_stop_polling_and_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    // No workers and no supervisor: the task stays unfinished and the
    // server has nothing else to do.
    let srv = Server::start(&root, &["--no-supervisor"], SHORT);
    let pid = srv.child.id();
    let (tid, _) = submit(&srv.url, &census_task(0, 1000, 10));
    let baseline = sockets(pid);

    for _ in 0..6 {
        let batch: Vec<TcpStream> = (0..100).map(|_| open_stream(srv.port, &tid)).collect();
        // The clients hang up (close without reading further).
        drop(batch);
    }
    // Every abandoned stream's connection is closed...
    let end = Instant::now() + Duration::from_secs(40);
    while sockets(pid) > baseline + 2 {
        assert!(Instant::now() < end, "{} sockets still open (baseline {baseline})", sockets(pid));
        std::thread::sleep(Duration::from_millis(200));
    }
    // ...and nothing keeps polling the store for them: an idle server.
    let c0 = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(4));
    let used = cpu_seconds(pid) - c0;
    assert!(used < 0.2, "the server used {used:.2} s of CPU in 4 s after 600 streams were abandoned");
    // And it still serves a stream.
    drop(open_stream(srv.port, &tid));
}

#[test]
fn unfinished_headers_are_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &["--header-timeout", "1"], SHORT);
    let start = Instant::now();
    let stuck: Vec<TcpStream> = (0..20)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            // Half of them send part of a head, half send nothing at all.
            if i % 2 == 0 {
                s.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty").unwrap();
            }
            s
        })
        .collect();
    for mut s in stuck {
        let mut got = Vec::new();
        // EOF (after a 408, if any) or a reset: closed by the server, not
        // by our read timeout.
        match s.read_to_end(&mut got) {
            Ok(_) => {}
            Err(e) => assert!(
                !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                "a connection stuck in its head was never closed: {e}"
            ),
        }
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(6), "closing the stuck connections took {took:?}");
    assert_eq!(http(srv.port, "GET", "/.well-known/agent-card.json", &[], b"").0, 200);
}

#[test]
fn connections_over_the_cap_get_503_and_a_real_client_gets_in_later() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &["--max-connections", "4", "--header-timeout", "2"], SHORT);
    let idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(("127.0.0.1", srv.port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, _, body) = http(srv.port, "GET", "/.well-known/agent-card.json", &[], b"");
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    // The idle ones are closed by the header timeout; then a client is served
    // although the idle sockets are still open on our side.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(http(srv.port, "GET", "/.well-known/agent-card.json", &[], b"").0, 200);
    drop(idle);
}

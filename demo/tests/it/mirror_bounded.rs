//! The demo's mirror is bounded (issue 47: every server bounded): a client
//! trickling its request head is closed at the head deadline, and under
//! `ulimit -n 128` 300 idle connections do not keep a page request out
//! (the cap fits the descriptor budget; the oldest idle one makes room).
use demo::mirror::{Mirror, MirrorConfig, SUMMARY_PREFIX};
use demo::slots::HEAD_TIMEOUT;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mirror() -> Mirror {
    let cfg = MirrorConfig {
        seed: 1,
        titles: vec!["Alan_Turing".into()],
        min_delay_ms: 0,
        max_delay_ms: 1,
        hold: None,
        hold_timeout: Duration::from_secs(1),
    };
    Mirror::start(cfg, vec![Mirror::loopback_listener().unwrap()]).unwrap()
}

/// One page request with short timeouts; its status line.
fn get(addr: SocketAddr) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let req = format!("GET {SUMMARY_PREFIX}Alan_Turing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    Some(line)
}

#[test]
fn a_trickling_request_head_is_closed_at_the_deadline() {
    let m = mirror();
    let mut s = TcpStream::connect(m.addrs()[0]).unwrap();
    let t0 = Instant::now();
    let head = b"GET /api/rest_v1/page/summary/Alan_Turing HTTP/1.1\r\nHost: x\r\n";
    let mut closed = None;
    for b in head.iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            closed = Some(t0.elapsed());
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(0) => {
                closed = Some(t0.elapsed());
                break;
            }
            Ok(_) => panic!("an answer to a head never finished"),
            Err(_) => {}
        }
        if t0.elapsed() > HEAD_TIMEOUT + Duration::from_secs(4) {
            break;
        }
    }
    let took = closed.expect("the trickler was never closed");
    assert!(
        took >= HEAD_TIMEOUT - Duration::from_millis(600) && took < HEAD_TIMEOUT + Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(get(m.addrs()[0]).as_deref(), Some("HTTP/1.1 200 OK\r\n"));
}

/// Run by [`a_page_request_is_answered_through_an_idle_flood_under_a_low_fd_limit`]
/// in a child under `prlimit --nofile=128`: serve a mirror, print its
/// address, serve until stdin closes.
#[test]
#[ignore = "a helper: run in a child process under a low descriptor limit"]
fn mirror_child() {
    let m = mirror();
    println!("MIRROR {}", m.addrs()[0]);
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[test]
fn a_page_request_is_answered_through_an_idle_flood_under_a_low_fd_limit() {
    let me = std::env::current_exe().unwrap();
    let mut child = Command::new("prlimit")
        .args(["--nofile=128:128", "--"])
        .arg(me)
        .args(["--exact", "mirror_bounded::mirror_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux)");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let addr: SocketAddr = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child mirror printed no address");
        // libtest prints `test NAME ... ` on the same line first
        if let Some(a) = line.split("MIRROR ").nth(1) {
            break a.trim().parse().unwrap();
        }
    };
    assert_eq!(get(addr).as_deref(), Some("HTTP/1.1 200 OK\r\n"), "served before the flood");
    let idle: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(addr).ok()).collect();
    assert_eq!(idle.len(), 300);
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let answered = loop {
        if get(addr).as_deref() == Some("HTTP/1.1 200 OK\r\n") {
            break Some(t0.elapsed());
        }
        if t0.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(idle);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let took = answered.expect("no page request answered within 10 s of the idle flood");
    assert!(took < Duration::from_secs(2), "answered only after {took:?}");
}

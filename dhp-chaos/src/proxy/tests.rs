//! Each toxic against a real TCP echo server on a free loopback port.

use super::*;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;

/// An echo server: every connection gets its bytes back; EOF closes it.
fn echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn client(p: &Proxy) -> TcpStream {
    let c = TcpStream::connect(p.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// Read exactly `n` bytes, or what arrived before EOF/error.
fn read_n(c: &mut TcpStream, n: usize) -> (Vec<u8>, Option<ErrorKind>) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < n {
        match c.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(k) => out.extend_from_slice(&buf[..k]),
            Err(e) => return (out, Some(e.kind())),
        }
    }
    (out, None)
}

#[test]
fn clean_link_forwards_both_ways() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    let mut c = client(&p);
    c.write_all(b"hello proxy").unwrap();
    assert_eq!(read_n(&mut c, 11).0, b"hello proxy");
}

#[test]
fn latency_delays_each_direction() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    p.set(Some(Toxic::Latency { ms: 100, jitter_ms: 20 }));
    let mut c = client(&p);
    let t = Instant::now();
    c.write_all(b"x").unwrap();
    assert_eq!(read_n(&mut c, 1).0, b"x");
    // delayed on the way there and on the way back
    assert!(t.elapsed() >= Duration::from_millis(200), "round trip took {:?}", t.elapsed());
}

#[test]
fn bandwidth_caps_the_rate() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    p.set(Some(Toxic::Bandwidth { bytes_per_s: 2000 }));
    let mut c = client(&p);
    let t = Instant::now();
    c.write_all(&[7u8; 1000]).unwrap();
    assert_eq!(read_n(&mut c, 1000).0.len(), 1000);
    // 1000 bytes at 2000 B/s take 0.5 s in each direction (pipelined: at least 0.5 s)
    assert!(t.elapsed() >= Duration::from_millis(450), "1000 bytes took {:?}", t.elapsed());
}

#[test]
fn blackhole_holds_bytes_until_cleared() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    let mut c = client(&p);
    c.write_all(b"a").unwrap();
    assert_eq!(read_n(&mut c, 1).0, b"a");
    p.set(Some(Toxic::Blackhole { timeout_ms: 0 }));
    c.write_all(b"held").unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 8];
    let e = c.read(&mut buf).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{e}");
    p.set(None);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_n(&mut c, 4).0, b"held", "a blackhole holds bytes, it does not drop them");
}

#[test]
fn blackhole_with_timeout_closes_the_connection() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    p.set(Some(Toxic::Blackhole { timeout_ms: 200 }));
    let mut c = client(&p);
    c.write_all(b"lost").unwrap();
    let t = Instant::now();
    let (got, _) = read_n(&mut c, 4);
    assert!(got.is_empty(), "nothing gets through a blackhole");
    assert!(t.elapsed() >= Duration::from_millis(150) && t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
}

#[test]
fn reset_resets_open_and_new_connections() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    let mut c = client(&p);
    c.write_all(b"a").unwrap();
    assert_eq!(read_n(&mut c, 1).0, b"a");
    p.set(Some(Toxic::Reset));
    let (got, err) = read_n(&mut c, 1);
    assert!(got.is_empty());
    assert_eq!(err, Some(ErrorKind::ConnectionReset), "an open connection is reset");
    let mut c2 = client(&p);
    let (_, err) = read_n(&mut c2, 1);
    assert_eq!(err, Some(ErrorKind::ConnectionReset), "a new connection is reset");
    p.set(None);
    let mut c3 = client(&p);
    c3.write_all(b"ok").unwrap();
    assert_eq!(read_n(&mut c3, 2).0, b"ok", "cleared: the link works again");
}

#[test]
fn slow_close_delays_the_close() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    p.set(Some(Toxic::SlowClose { ms: 300 }));
    let mut c = client(&p);
    c.write_all(b"bye").unwrap();
    assert_eq!(read_n(&mut c, 3).0, b"bye");
    let t = Instant::now();
    c.shutdown(Shutdown::Write).unwrap();
    let (got, err) = read_n(&mut c, 1);
    assert!(got.is_empty() && err.is_none(), "the close arrives, as an EOF");
    // delayed going in (our FIN) and coming back (the server's)
    assert!(t.elapsed() >= Duration::from_millis(550), "close took {:?}", t.elapsed());
}

#[test]
fn cut_after_n_bytes() {
    let p = Proxy::start(echo(), 1, None).unwrap();
    p.set(Some(Toxic::CutAfter { bytes: 10 }));
    let mut c = client(&p);
    c.write_all(&[1u8; 100]).unwrap();
    let (got, _) = read_n(&mut c, 100);
    assert!(got.len() <= 10, "at most 10 bytes crossed the link, got {}", got.len());
    // the connection is gone: a second write eventually fails or reads EOF
    let _ = c.write_all(b"more");
    let (more, _) = read_n(&mut c, 1);
    assert!(more.is_empty());
    p.set(None);
    let mut c2 = client(&p);
    c2.write_all(&[2u8; 100]).unwrap();
    assert_eq!(read_n(&mut c2, 100).0.len(), 100, "a new connection after the toxic is whole");
}

/// A transport server stand-in: acks hello with ack_seq 4 and every checkpoint by its seq.
fn fake_transport() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                for line in std::io::BufRead::lines(std::io::BufReader::new(s)) {
                    let Ok(line) = line else { return };
                    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                    let reply = match v["type"].as_str() {
                        Some("hello") => serde_json::json!({"ok": true, "ack_seq": 4}),
                        Some("checkpoint") => serde_json::json!({"ok": true, "seq": v["seq"]}),
                        _ => serde_json::json!({"ok": false, "error": "unknown type"}),
                    };
                    if writeln!(w, "{reply}").is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn records_the_acks_it_forwards() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("proxy.jsonl");
    let p = Proxy::start(fake_transport(), 1, Some(&rec)).unwrap();
    let mut c = client(&p);
    // frames split across writes: the recorder reassembles lines
    c.write_all(b"{\"type\": \"hello\", \"handoff_id\": \"h1\"}\n{\"type\": \"check").unwrap();
    let mut r = std::io::BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    // the hello's ack is back before the checkpoint's line is finished, so
    // the recorded order is fixed (a sleep here raced under load)
    std::io::BufRead::read_line(&mut r, &mut line).unwrap();
    c.write_all(b"point\", \"seq\": 5}\n{\"type\": \"nonsense\"}\n").unwrap();
    for _ in 0..2 {
        line.clear();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
    }
    drop(p);
    let acks = load_acks(&rec).unwrap();
    let got: Vec<(&str, &str, i64)> = acks.iter().map(|a| (a.event.as_str(), a.hid.as_str(), a.seq)).collect();
    assert_eq!(got, vec![("hello-ack", "h1", 4), ("sent", "h1", 5), ("ack", "h1", 5)], "refusals are not acks");
}

/// A throwaway network namespace (root: `ip netns`), deleted on drop.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        // not the harness's `dhpchaos-` prefix: its stale-namespace cleanup would take it
        let name = format!("dhpproxytest-{}", std::process::id());
        let _ = std::process::Command::new("ip").args(["netns", "del", &name]).status();
        let ok = std::process::Command::new("ip").args(["netns", "add", &name]).status().is_ok_and(|s| s.success());
        assert!(ok, "ip netns add {name} failed: this test needs root and iproute2, as --hosts does");
        let ns = Netns(name);
        let ok = std::process::Command::new("ip")
            .args(["-n", &ns.0, "link", "set", "lo", "up"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not bring lo up in {}", ns.0);
        ns
    }

    fn path(&self) -> std::path::PathBuf {
        std::path::Path::new("/run/netns").join(&self.0)
    }

    /// Run `f` on a thread inside the namespace (threads it spawns stay there).
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = self.path();
        std::thread::spawn(move || {
            let fd = std::fs::File::open(&path).unwrap();
            nix::sched::setns(&fd, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn own_netns() -> std::path::PathBuf {
    std::fs::read_link("/proc/thread-self/ns/net").unwrap()
}

/// Under `--hosts` the proxy runs inside a host's namespace: its listener
/// and its upstream connections are that namespace's loopback, not the
/// harness's, and the caller's thread is not moved.
#[test]
fn runs_inside_a_network_namespace() {
    let ns = Netns::new();
    let before = own_netns();
    // the upstream exists only inside the namespace
    let upstream = ns.run(echo);
    let p = Proxy::start_in(Some(&ns.path()), upstream, 1, None).unwrap();
    assert_eq!(own_netns(), before, "starting the proxy must not move the calling thread");
    let addr = p.addr();
    let got = ns.run(move || {
        let mut c = TcpStream::connect(addr).expect("the proxy listens inside the namespace");
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"inside").unwrap();
        read_n(&mut c, 6).0
    });
    assert_eq!(got, b"inside", "forwarded to the namespace's own upstream");
    assert_eq!(p.accepted(), 1);
    // the proxy's threads are in the namespace: a proxy in the harness's
    // own namespace cannot reach that upstream at all
    let outside = Proxy::start(upstream, 1, None).unwrap();
    let mut c = client(&outside);
    let _ = c.write_all(b"x");
    // (nothing, or whatever else listens on that port out here: not our echo)
    assert_ne!(read_n(&mut c, 1).0, b"x", "the namespace's loopback is not the harness's");
}

#[test]
fn a_missing_namespace_is_an_error() {
    let e = Proxy::start_in(Some(Path::new("/run/netns/dhp-no-such-namespace")), echo(), 1, None).unwrap_err();
    assert!(format!("{e:#}").contains("dhp-no-such-namespace"), "{e:#}");
}

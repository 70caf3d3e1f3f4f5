//! A worker whose link to PostgreSQL goes silent — every byte still
//! acknowledged by TCP, none answered (a hung proxy or pooler: the chaos
//! harness's `db-link` blackhole) — notices within max(lease TTL, 1 s) and
//! exits with a store error, instead of blocking in a read for ever. TCP
//! keepalive and `tcp_user_timeout` cannot see such a link (the proxy's
//! kernel acknowledges everything), and the synchronous client has no read
//! timeout: before `dhp work` watched its store calls against that
//! deadline, the worker stayed blocked until the link came back.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lease TTL 1 s (0.5 × 2): the deadline is max(TTL, 1 s) = 1 s.
const ENV: [(&str, &str); 4] = [
    ("DHP_LEASE_INTERVAL_S", "0.5"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];
const DEADLINE: Duration = Duration::from_secs(1);
/// A loaded machine, on top of the deadline.
const SLACK: Duration = Duration::from_secs(6);

/// A TCP forwarder to the server that, once `hold` is set, stops reading
/// (the bytes wait in the kernel buffers, the connections stay open).
fn blackhole_proxy(upstream: SocketAddr, hold: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(upstream) else { continue };
            for (from, to) in [(&client, &server), (&server, &client)] {
                let (mut from, mut to, hold) = (from.try_clone().unwrap(), to.try_clone().unwrap(), hold.clone());
                from.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        if hold.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                        match from.read(&mut buf) {
                            Ok(0) => return,
                            Ok(n) if to.write_all(&buf[..n]).is_ok() => {}
                            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                            _ => return,
                        }
                    }
                });
            }
        }
    });
    addr
}

/// `url` with its host:port replaced by `via` (credentials, database and schema kept).
fn through(url: &str, via: SocketAddr) -> String {
    let start = url.find("://").unwrap() + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host_at = rest[..end].rfind('@').map_or(0, |i| i + 1);
    format!("{}{}{via}{}", &url[..start], &rest[..host_at], &rest[end..])
}

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_worker_behind_a_silent_database_link_gives_up_within_the_deadline() {
    let url = pg_support::fresh_url("link_blackhole");
    let cfg = postgres::Config::from_str(&pg_support::base_url()).unwrap();
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        other => panic!("the test server must be reached over TCP, not {other:?}"),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).unwrap().next().unwrap();
    let hold = Arc::new(AtomicBool::new(false));
    let proxied = through(&url, blackhole_proxy(upstream, hold.clone()));

    let (code, v, err) = dhp(&["dispatch", &url, "--census", "7000000,7400000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let cps = || r.status(&hid).unwrap()["checkpoints"].as_i64().unwrap_or(0);

    let mut w = Kill(
        Command::new(dhp_bin())
            .args(["work", &proxied, "--runner", "wa", "claim", &hid, "--pace", "0.05"])
            .envs(ENV)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while cps() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the worker did not start through the proxy");
        assert!(w.0.try_wait().unwrap().is_none(), "the worker exited early");
        std::thread::sleep(Duration::from_millis(20));
    }

    hold.store(true, Ordering::SeqCst);
    let t_hold = Instant::now();
    let exited = loop {
        if let Some(st) = w.0.try_wait().unwrap() {
            break Some(st);
        }
        if t_hold.elapsed() > DEADLINE + SLACK {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t_hold.elapsed();
    let st = exited.unwrap_or_else(|| {
        panic!("the worker is still blocked {took:?} after its database link went silent (deadline {DEADLINE:?})")
    });
    let mut stderr = String::new();
    w.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    eprintln!("silent link → worker exit in {took:?}: {}", stderr.trim());
    assert_eq!(st.code(), Some(11), "a store error (kind StoreError)\n{stderr}");
    assert!(stderr.contains("no reply"), "{stderr}");
    // it noticed by its deadline, not by a TCP timeout (≥ 4 s) or the link's return
    assert!(took >= DEADLINE, "{took:?}");
    // the link never came back: nothing it sent after the hold was written
    let n = cps();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cps(), n);
}

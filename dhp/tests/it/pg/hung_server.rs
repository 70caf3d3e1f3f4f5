//! A PostgreSQL server that accepts TCP connections and never answers (a
//! stopped postmaster behind a proxy, a stuck pooler) ends every command
//! with a store error within its bounds, instead of hanging: `status`,
//! `dispatch`, `supervisor` and `mcp` give up on the handshake within the
//! connect timeout (which the client library applies to the TCP connect
//! only). A supervisor whose link goes silent after it started honours its
//! SECONDS and SIGTERM.

use crate::common;
use crate::pg_support;

use crate::common::dhp_bin;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A loaded machine, on top of each bound.
const SLACK: Duration = Duration::from_secs(6);

/// A listener that accepts every connection, keeps it open and reads
/// nothing.
fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            held.lock().unwrap().push(c);
        }
    });
    addr
}

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run `dhp ARGS` with stdin kept open; its exit code, stderr and how
/// long it took, or a panic if it is still running after `bound`.
fn run_bounded(args: &[&str], env: &[(&str, &str)], bound: Duration) -> (i32, String, Duration) {
    let t = Instant::now();
    let mut child = Kill(
        Command::new(dhp_bin())
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (st.code().unwrap_or(-1), err, t.elapsed());
        }
        assert!(t.elapsed() < bound, "dhp {args:?} still hangs after {:?} (bound {bound:?})", t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn commands_against_a_server_that_never_answers_give_up_within_the_connect_timeout() {
    let addr = silent_server();
    let url = format!("postgres://u:p@{addr}/db?connect_timeout=2&sslmode=disable");
    let prefer = format!("postgres://u:p@{addr}/db?connect_timeout=2");
    let default = format!("postgres://u:p@{addr}/db?sslmode=disable");
    let two = Duration::from_secs(2);
    for (args, limit) in [
        (vec!["status", url.as_str()], two),
        (vec!["status", prefer.as_str()], two),
        (vec!["dispatch", url.as_str(), "--kind", "t", "--schema", "{}"], two),
        (vec!["supervisor", url.as_str(), "s1", "30"], two),
        (vec!["mcp", "--root", url.as_str()], two),
        // no connect_timeout in the URL: the default, 5 s
        (vec!["status", default.as_str()], Duration::from_secs(5)),
    ] {
        let (code, err, took) = run_bounded(&args, &[], limit + SLACK);
        eprintln!("{args:?}: exit {code} in {took:?}: {}", err.trim());
        assert_eq!(code, 11, "{args:?}: {err}");
        assert!(err.contains("no answer within") && err.contains(&addr.to_string()), "{args:?}: {err}");
        assert!(took >= limit, "{args:?} gave up before its connect timeout: {took:?}");
    }
}

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

/// A supervisor scanning through a proxy to the real server; the link
/// then goes silent.
fn supervisor_on_a_link_that_goes_silent(
    seconds: &str,
) -> (Kill, Arc<AtomicBool>, std::path::PathBuf, tempfile::TempDir) {
    let url = pg_support::fresh_url("hung_sup");
    let (code, _, err) = common::dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 0, "{err}");
    let cfg = postgres::Config::from_str(&pg_support::base_url()).unwrap();
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        other => panic!("the test server must be reached over TCP, not {other:?}"),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).unwrap().next().unwrap();
    let hold = Arc::new(AtomicBool::new(false));
    let proxied = through(&url, blackhole_proxy(upstream, hold.clone()));
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    let sup = Kill(
        Command::new(dhp_bin())
            .args(["supervisor", &proxied, "s1", seconds, "--history"])
            .arg(&history)
            .env("DHP_SUPERVISOR_SCAN_S", "0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while std::fs::read_to_string(&history).unwrap_or_default().lines().filter(|l| l.contains("\"scan\"")).count() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the supervisor did not scan through the proxy");
        std::thread::sleep(Duration::from_millis(20));
    }
    (sup, hold, history, dir)
}

fn wait_exit(sup: &mut Kill, bound: Duration, what: &str) -> (i32, String, Duration) {
    let t = Instant::now();
    loop {
        if let Some(st) = sup.0.try_wait().unwrap() {
            let mut err = String::new();
            sup.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (st.code().unwrap_or(-1), err, t.elapsed());
        }
        assert!(t.elapsed() < bound, "dhp on a silent link ignores {what}: still running after {bound:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_supervisor_on_a_silent_link_ends_at_its_seconds() {
    let (mut sup, hold, _h, _d) = supervisor_on_a_link_that_goes_silent("4");
    let t = Instant::now();
    hold.store(true, Ordering::SeqCst);
    // SECONDS (4 s, of which some passed) + the stop grace (5 s)
    let (code, err, _) = wait_exit(&mut sup, Duration::from_secs(9) + SLACK, "its SECONDS");
    eprintln!("silent link → supervisor exit {code} {:?} after the hold: {}", t.elapsed(), err.trim());
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("still waiting on the store") && err.contains("end of its run"), "{err}");
}

#[test]
fn a_supervisor_on_a_silent_link_ends_on_sigterm() {
    let (mut sup, hold, _h, _d) = supervisor_on_a_link_that_goes_silent("300");
    hold.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup.0.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let (code, err, took) = wait_exit(&mut sup, Duration::from_secs(5) + SLACK, "SIGTERM");
    eprintln!("silent link → supervisor exit {code} {took:?} after SIGTERM: {}", err.trim());
    assert!(t.elapsed() >= Duration::from_secs(4), "{took:?}");
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("still waiting on the store") && err.contains("stop signal"), "{err}");
}

/// `dhp mcp` serving a PostgreSQL store whose link goes silent between two
/// tool calls: the second call's store round trip is given up on after
/// `statement_timeout` + 5 s (35 s by default; here the URL's 3 s, which
/// the bound follows) and the server exits 11, instead of leaving its
/// client waiting for ever.
#[test]
fn mcp_on_a_link_that_goes_silent_gives_up_after_its_call_bound() {
    let url = format!("{}&options=-c%20statement_timeout%3D3000", pg_support::fresh_url("hung_mcp"));
    let (code, v, err) = common::dhp(&["dispatch", &url, "--kind", "t", "--schema", "{}"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let cfg = postgres::Config::from_str(&pg_support::base_url()).unwrap();
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        other => panic!("the test server must be reached over TCP, not {other:?}"),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).unwrap().next().unwrap();
    let hold = Arc::new(AtomicBool::new(false));
    let proxied = through(&url, blackhole_proxy(upstream, hold.clone()));
    let mut mcp = Kill(
        Command::new(dhp_bin())
            .args(["mcp", "--root", &proxied])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdin = mcp.0.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = mcp.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    let init = rx.recv_timeout(Duration::from_secs(30)).expect("an initialize reply");
    assert!(init.contains("\"id\":1"), "{init}");
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let status = |id: u64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "dhp_status", "arguments": {"handoff_id": hid}}})
    };
    send(status(2));
    let first = rx.recv_timeout(Duration::from_secs(30)).expect("a dhp_status reply");
    assert!(first.contains("\"id\":2") && first.contains("pending"), "{first}");

    hold.store(true, Ordering::SeqCst);
    send(status(3));
    let bound = Duration::from_secs(3 + 5);
    let (code, err, took) = wait_exit(&mut mcp, bound + SLACK, "its call bound");
    eprintln!("silent link → mcp exit {code} {took:?} after the call: {}", err.trim());
    assert_eq!(code, 11, "{err}");
    assert!(err.contains("no reply for") && err.contains("limit 8.0 s"), "{err}");
    assert!(took >= bound - Duration::from_secs(1), "{took:?}");
}

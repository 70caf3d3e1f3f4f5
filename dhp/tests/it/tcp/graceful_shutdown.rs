//! Graceful shutdown. In-process: `run` returns once its shutdown future
//! resolves, promptly even with an idle client and a client that never
//! reads its replies connected, after answering the frames it was
//! handling, with stats that add up. As a process: SIGTERM and
//! SIGINT in the middle of a stream exit 0 promptly; every line in the
//! log is whole, and every checkpoint a client got an ack for is in it.
use crate::tcp_support::*;
use dhp_core::transport::net::{self, ServerConfig};
use dhp_core::Config;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn run_stops_on_its_shutdown_future() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let cfg = ServerConfig {
        logdir: tmp.path().join("logs"),
        token: TOKEN.into(),
        cfg: Config::default(),
        idle_timeout: Duration::from_secs(60),
        fsync: true,
        tls: None,
    };
    let server = rt.spawn(net::run(listener, cfg, async move {
        let _ = stop_rx.await;
    }));

    let (env, hid) = envelope(11, 12);
    let mut c = Raw::connect(&addr);
    assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    for s in 0..10 {
        assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
    }
    assert_eq!(c.rpc(&cp_frame(3, &json!({"s": 3}))), json!({"ok": true, "seq": 3}));
    let _idle = std::net::TcpStream::connect(&addr).unwrap(); // never sends
    let mut bad = Raw::connect(&addr);
    assert_eq!(bad.hello(&hid, "nope")["ok"], false);
    // A client that floods frames and never reads its replies: the server
    // ends up blocked writing to it, with a 60 s idle timeout.
    let deaf = {
        use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
        let fd = socket::socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
        socket::setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrIn::new(127, 0, 0, 1, port)).unwrap();
        std::net::TcpStream::from(fd)
    };
    let blocked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = std::thread::spawn({
        let mut w = deaf.try_clone().unwrap();
        let blocked = blocked.clone();
        let hello = format!("{{\"handoff_id\": \"{hid}\", \"token\": \"{TOKEN}\", \"type\": \"hello\"}}\n");
        let batch = "x\n".repeat(63) + &cp_line(0, &json!({"s": 0})) + "\n";
        move || {
            let _ = std::io::Write::write_all(&mut w, hello.as_bytes());
            w.set_write_timeout(Some(Duration::from_millis(300))).unwrap();
            loop {
                match std::io::Write::write_all(&mut w, batch.as_bytes()) {
                    Ok(()) => {}
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        blocked.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    Err(_) => return,
                }
            }
        }
    });
    // Wait until the server has stopped reading from it (it is stuck
    // writing replies nobody reads).
    dhp_testkit::wait_until(Duration::from_secs(20), "the server to block on the deaf client", || {
        blocked.load(std::sync::atomic::Ordering::SeqCst)
    });

    let t0 = Instant::now();
    stop_tx.send(()).unwrap();
    let stats = rt.block_on(server).unwrap().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "shutdown took {:?}", t0.elapsed());
    drop(deaf);
    flood.join().unwrap();
    assert_eq!(stats.connections, 4);
    assert_eq!(stats.hellos_accepted, 2);
    assert_eq!(stats.hellos_rejected, 1);
    assert_eq!(stats.envelopes, 1);
    assert_eq!(stats.checkpoints_appended, 10);
    assert!(stats.checkpoints_duplicate >= 2, "{stats:?}");
    assert_eq!(c.recv(), None, "connections are closed at shutdown");
    assert!(std::net::TcpStream::connect(&addr).is_err(), "no longer accepting");
    assert_eq!(log_seqs(&tmp.path().join("logs").join(format!("{hid}.log"))), (0..10).collect::<Vec<_>>());
}

#[test]
fn sigterm_and_sigint_mid_stream_exit_zero() {
    for sig in [nix::sys::signal::Signal::SIGTERM, nix::sys::signal::Signal::SIGINT] {
        let tmp = tempfile::tempdir().unwrap();
        let mut srv = Server::start(&tmp.path().join("logs"));
        let (env, hid) = envelope(20, 30);
        // A client pipelining checkpoints as fast as it can.
        let addr = srv.addr();
        let streamer = std::thread::spawn(move || {
            let mut c = Raw::connect(&addr);
            assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
            assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
            let mut acked = Vec::new();
            let mut s = 0;
            loop {
                let frames: String =
                    (s..s + 16).map(|q| cp_line(q, &json!({"q": q, "pad": "p".repeat(200)})) + "\n").collect();
                if std::io::Write::write_all(&mut c.w, frames.as_bytes()).is_err() {
                    return (acked, hid);
                }
                for q in s..s + 16 {
                    match c.recv() {
                        Some(r) => {
                            assert_eq!(r, json!({"ok": true, "seq": q}));
                            acked.push(q);
                        }
                        None => return (acked, hid),
                    }
                }
                s += 16;
            }
        });
        let log = srv.logdir.clone();
        dhp_testkit::wait_until(Duration::from_secs(10), "some checkpoints", || {
            std::fs::read_dir(&log).map(|d| d.count() > 0).unwrap_or(false)
                && std::fs::read_dir(&log).unwrap().next().map(|e| line_count(&e.unwrap().path()) > 50).unwrap_or(false)
        });
        let t0 = Instant::now();
        signal(srv.child.id(), sig);
        let st = wait_timeout(&mut srv.child, Duration::from_secs(10)).expect("server did not exit");
        assert_eq!(st.code(), Some(0), "{sig}: {st}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        let (acked, hid) = streamer.join().unwrap();
        let log = srv.log(&hid);
        let have = log_seqs(&log);
        for q in &acked {
            assert!(have.contains(q), "{sig}: acked seq {q} is not in the log");
        }
        let rep = ingest_ours(&tmp.path().join("fresh"), &log);
        assert_eq!(rep["lines_skipped"], 0, "{sig}: a torn line in the log");
        assert_eq!(rep["checkpoints_new"].as_u64(), Some(have.len() as u64));
        assert_eq!(rep["gaps"], json!([]));
    }
}

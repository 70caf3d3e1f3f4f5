//! A client that floods checkpoints and never reads its acks: the journal's
//! sync thread writes acks until the socket is full and hands the rest back
//! to the connection's task, which then blocks writing them. A shutdown
//! must not wait for that write's 60 s idle timeout (fresh-clone CI run 25:
//! it did, when the task was blocked there rather than in `send`). Every
//! reply here is a durable ack, so the task is blocked in that write.
use crate::tcp_support::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn shutdown_does_not_wait_for_a_client_that_never_reads_its_acks() {
    let srv = InProcess::start(true);
    let port: u16 = srv.addr.rsplit(':').next().unwrap().parse().unwrap();
    let (env, hid) = envelope(70_000, 71_000);
    // A tiny receive buffer: the acks fill it quickly.
    let deaf = {
        use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
        let fd = socket::socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
        socket::setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
        socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrIn::new(127, 0, 0, 1, port)).unwrap();
        std::net::TcpStream::from(fd)
    };
    let blocked = Arc::new(AtomicBool::new(false));
    let flood = std::thread::spawn({
        let mut w = deaf.try_clone().unwrap();
        let blocked = blocked.clone();
        let head = format!(
            "{}\n{}\n",
            dhp_core::json::dumps_sorted(&json!({"type": "hello", "handoff_id": hid, "token": TOKEN})).unwrap(),
            dhp_core::json::dumps_sorted(&json!({"type": "envelope", "envelope": env})).unwrap()
        );
        // seq 0 again and again: each one a durable ack (a duplicate's)
        let batch = (cp_line(0, &json!({"s": 0})) + "\n").repeat(64);
        move || {
            use std::io::Write;
            w.write_all(head.as_bytes()).unwrap();
            w.set_write_timeout(Some(Duration::from_millis(300))).unwrap();
            loop {
                match w.write_all(batch.as_bytes()) {
                    Ok(()) => {}
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        blocked.store(true, Ordering::SeqCst);
                    }
                    Err(_) => return,
                }
            }
        }
    });
    // Until the server has stopped reading: blocked writing acks nobody
    // reads (its counts stand still for a second).
    let mut last = (Instant::now(), u64::MAX);
    dhp_testkit::wait_until(Duration::from_secs(60), "the server to stop reading the deaf client", || {
        let n = srv.counters.now().checkpoints_duplicate;
        if n != last.1 {
            last = (Instant::now(), n);
        }
        blocked.load(Ordering::SeqCst) && last.0.elapsed() > Duration::from_secs(1)
    });
    let t0 = Instant::now();
    let stats = srv.stop();
    assert!(t0.elapsed() < Duration::from_secs(5), "shutdown took {:?}", t0.elapsed());
    drop(deaf);
    flood.join().unwrap();
    assert_eq!(stats.envelopes, 1, "{stats:?}");
    assert!(stats.checkpoints_duplicate > 64, "the acks were durable duplicates: {stats:?}");
}

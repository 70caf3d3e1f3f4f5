//! Slow and hostile clients cannot stall the others. While one client
//! connects and never sends, one sends half a hello and stalls, one sends
//! a valid hello and then only half a frame, and one pipelines frames but
//! never reads a reply (with a tiny receive buffer), a `dhp work` worker
//! ships a whole sync-mode run through the same server at full speed.
//! Each stalled connection is closed after the idle timeout.
use crate::tcp_support::*;
use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A client socket with a 4 KiB receive buffer, so that a client that
/// never reads fills up quickly and the server's writes block.
fn tiny_rcvbuf_connect(port: u16) -> TcpStream {
    let fd = socket::socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
    socket::setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
    let addr = SockaddrIn::new(127, 0, 0, 1, port);
    socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr).unwrap();
    TcpStream::from(fd)
}

/// Read until EOF/reset or `d`; true when the server closed.
fn closed_within(s: &mut TcpStream, d: Duration) -> bool {
    s.set_read_timeout(Some(d)).unwrap();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + d;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
        if Instant::now() > deadline {
            return false;
        }
    }
}

#[test]
fn idle_and_stalled_clients_do_not_block_others() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start_with(&tmp.path().join("logs"), 0, &tok(), &["--idle-timeout", "2"]);
    let (env, ehid) = envelope(70, 80);

    // 1. connects and never sends.
    let mut silent = TcpStream::connect(srv.addr()).unwrap();
    // 2. half a hello, then nothing.
    let mut half_hello = TcpStream::connect(srv.addr()).unwrap();
    half_hello.write_all(b"{\"type\": \"hello\", \"handoff_id\": \"").unwrap();
    // 3. a good hello, then half a frame.
    let mut half_frame = Raw::connect(&srv.addr());
    assert_eq!(half_frame.hello(&ehid, TOKEN)["ok"], true);
    half_frame.send(b"{\"type\": \"envelope\", \"envelope\": {\"hand");
    // 4. pipelines duplicate frames forever and never reads a reply.
    let mut deaf = tiny_rcvbuf_connect(srv.port);
    {
        let hello = format!("{{\"handoff_id\": \"{ehid}\", \"token\": \"{TOKEN}\", \"type\": \"hello\"}}\n");
        let env_frame =
            dhp_core::json::dumps_sorted(&serde_json::json!({"type": "envelope", "envelope": env})).unwrap();
        deaf.write_all(format!("{hello}{env_frame}\n").as_bytes()).unwrap();
    }
    let deaf_writer = std::thread::spawn({
        let mut w = deaf.try_clone().unwrap();
        // Cheap frames with long replies (63 refusals, then one good frame
        // so the bad-frame streak never ends the connection) fill the
        // buffers fast.
        let frame = cp_line(0, &serde_json::json!({"n": 0})) + "\n";
        move || {
            let batch = "x\n".repeat(63) + &frame;
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(20) {
                if w.write_all(batch.as_bytes()).is_err() {
                    return true; // the server gave up on us
                }
            }
            false
        }
    });

    // Meanwhile a real worker ships a whole run, in sync mode.
    let root = tmp.path().join("root");
    let hid = census(&root, 2, 10_002, 100); // 100 checkpoints
    let t0 = Instant::now();
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid, &["--ship-to", &srv.addr(), "--ship-mode", "sync"], &tok()),
        Duration::from_secs(30),
    );
    let took = t0.elapsed();
    assert_eq!(code, 0, "worker failed: {out} {err}");
    assert!(took < Duration::from_secs(15), "worker took {took:?}");
    assert_log_matches_store(&srv.log(&hid), &root, &hid, &tmp.path().join("fresh"));

    // The idle timeout (2 s) closes every stalled connection.
    assert!(closed_within(&mut silent, Duration::from_secs(6)), "silent client not closed");
    assert!(closed_within(&mut half_hello, Duration::from_secs(6)), "half-hello client not closed");
    let mut hf = half_frame.w.try_clone().unwrap();
    assert!(closed_within(&mut hf, Duration::from_secs(6)), "half-frame client not closed");
    assert!(deaf_writer.join().unwrap(), "a client that never reads should be dropped");
    // Nothing from the stalled clients beyond the deaf one's single
    // (deduplicated) checkpoint.
    assert_eq!(log_seqs(&srv.log(&ehid)), vec![0]);
}

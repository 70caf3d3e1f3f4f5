//! Replies lost on the link: a proxy between `dhp work` and the server
//! drops one server message and closes the link, so the worker only sees
//! the connection break — an outcome it cannot know without reading back.
//! Once the lost reply is a read's (nothing was written), once the
//! checkpoint write's own (the server committed it). The worker rides
//! through both (dhp/src/ride.rs): it reconnects, reads the last row back
//! under the handoff's lock and writes the checkpoint again only when its
//! seq did not move: every chunk is checkpointed exactly once (not written
//! twice, not skipped), with the same fence, and the census completes.
use crate::common::*;
use crate::pg_support::fresh_url;
use dhp_core::{Config, Runner};
use dhp_workload::census;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A TCP forwarder to `upstream`; once `cut` is set to N, the Nth message
/// from the server from then on is dropped and both sides of that link are
/// closed (`cut` is then 0 again, so the worker's new connection works).
fn lossy_proxy(upstream: SocketAddr, cut: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(upstream) else { continue };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = c_in.read(&mut buf) {
                    if s_out.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
            let cut = cut.clone();
            std::thread::spawn(move || {
                let (mut s_in, mut c_out) = (server, client);
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = s_in.read(&mut buf) {
                    let left = cut.load(Ordering::SeqCst);
                    if left > 1 {
                        cut.store(left - 1, Ordering::SeqCst);
                    } else if left == 1 {
                        cut.store(0, Ordering::SeqCst);
                        let _ = c_out.shutdown(Shutdown::Both);
                        let _ = s_in.shutdown(Shutdown::Both);
                        return;
                    }
                    if c_out.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_checkpoint_whose_reply_was_lost_is_taken_as_committed_not_written_again() {
    let url = fresh_url("lost_reply");
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "1000000,1030000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    // postgres://user:pw@HOST:PORT/db?… → the same through the proxy
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').unwrap();
    let (server, path) = tail.split_once('/').unwrap();
    let upstream: SocketAddr = server.parse().expect("the test server is HOST:PORT");
    let cut = Arc::new(AtomicUsize::new(0));
    let proxy = lossy_proxy(upstream, cut.clone());
    let via = format!("{scheme}://{auth}@{proxy}/{path}");
    // one connection (no liveness keeper, no heartbeat thread): the next
    // server message after the cut is the reply to a checkpoint
    let worker = Command::new(dhp_bin())
        .args(["work", &via, "--runner", "w1", "claim", &hid, "--pace", "0.05", "--json"])
        .args(["--no-liveness", "--no-background-heartbeat"])
        .envs([("DHP_LEASE_INTERVAL_S", "2"), ("DHP_LEASE_MAX_MISSED", "5")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let observer = Runner::open(&url, "observer", Config::default()).unwrap();
    let checkpoints = || observer.status(&hid).unwrap()["checkpoints"].as_i64().unwrap_or(0);
    let wait_for = |n: i64| {
        let end = Instant::now() + Duration::from_secs(30);
        while checkpoints() < n {
            assert!(Instant::now() < end, "the worker did not reach {n} checkpoints");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // Between chunks a checkpoint with steps is two round trips: the
    // envelope read, then the write. Lost: the read's reply (nothing was
    // written), then — once it went on — the write's (committed).
    wait_for(20);
    cut.store(1, Ordering::SeqCst);
    let end = Instant::now() + Duration::from_secs(30);
    while cut.load(Ordering::SeqCst) != 0 {
        assert!(Instant::now() < end, "no reply was cut");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_for(checkpoints() + 20);
    cut.store(2, Ordering::SeqCst);
    let out = worker.wait_with_output().unwrap();
    let werr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the worker rode through the lost replies: {werr}");
    assert_eq!(cut.load(Ordering::SeqCst), 0, "both cuts happened: {werr}");
    assert!(werr.contains("the checkpoint in flight was not committed; writing it again"), "{werr}");
    assert!(werr.contains("the checkpoint in flight was committed"), "settled as committed: {werr}");
    let rows = observer.checkpoints(&hid).unwrap();
    assert_eq!(rows.len(), 300, "every chunk checkpointed exactly once: {werr}");
    assert!(rows.iter().enumerate().all(|(i, r)| r.seq == i as i64), "seqs contiguous");
    let next: Vec<u64> = rows
        .iter()
        .map(|r| serde_json::from_str::<serde_json::Value>(&r.state_json).unwrap()["next_n"].as_u64().unwrap())
        .collect();
    assert!(next.windows(2).all(|w| w[1] == w[0] + 100), "no state written twice or skipped");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (count, sum) = census::chunk(1_000_000, 1_030_000);
    assert_eq!((v["prime_count"].as_u64(), v["prime_sum"].as_u64()), (Some(count), Some(sum)), "{v}");
    assert_eq!(observer.envelope_bare(&hid).unwrap()["execution"]["fence"], 0, "never recovered");
}

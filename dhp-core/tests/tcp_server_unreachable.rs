//! An async-mode worker starts while nothing listens at its --ship-to
//! address, and later loses the server for three seconds. It waits for the
//! server at the start (bounded), runs ahead by at most --ship-max-lag
//! lines during the outage, and once the server is back replays what it
//! lacks: every checkpoint on the server once, nothing duplicated.

mod tcp_support;

use std::time::{Duration, Instant};
use tcp_support::*;

const MAX_LAG: usize = 20;

#[test]
fn server_unreachable_then_back() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let mut srv = Server::start(&tmp.path().join("logs"));
    let addr = srv.addr();
    srv.kill9(); // the port is known, nobody listens there now
    let hid = census(&root, 2, 30_002, 100); // 300 checkpoints
    let log = srv.log(&hid);
    let worker = spawn_work(
        &root,
        "w1",
        &hid,
        &["--ship-to", &addr, "--ship-mode", "async", "--ship-max-lag", &MAX_LAG.to_string(), "--pace", "0.003"],
        &tok(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!log.exists(), "nothing can have been shipped yet");
    srv.restart();

    wait_until("50 checkpoints on the server", Duration::from_secs(30), || log_seqs(&log).len() >= 50);
    srv.kill9();
    let down_at = Instant::now();
    std::thread::sleep(Duration::from_millis(3000));
    // The worker went on without the peer, but only up to the lag bound.
    let peer = log_seqs(&log).len();
    let local = store_rows(&root, &hid).len();
    assert!(local > peer, "an async worker keeps working while the peer is away (store {local}, peer {peer})");
    assert!(local <= peer + MAX_LAG + 1, "lag bound broken: store {local}, peer {peer}, max lag {MAX_LAG}");
    assert!(down_at.elapsed() < Duration::from_secs(10));
    srv.restart();

    let (code, out, err) = finish(worker, Duration::from_secs(60));
    assert_eq!(code, 0, "worker failed: {out} {err}");
    assert_eq!(out["completed"], true);
    assert_eq!(store_rows(&root, &hid).len(), 300);
    assert_log_matches_store(&log, &root, &hid, &tmp.path().join("fresh"));
}

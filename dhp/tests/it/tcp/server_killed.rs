//! The `dhp transport` process is SIGKILLed twice in the middle of a
//! sync-mode worker's stream and restarted on the same port: the worker
//! rides it out, and the server's log ends up holding every checkpoint
//! exactly once (nothing lost, nothing duplicated after ingest).
use crate::tcp_support::*;
use std::time::Duration;

#[test]
fn server_sigkilled_mid_stream_and_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let mut srv = Server::start(&tmp.path().join("logs"));
    let hid = census(&root, 2, 30_002, 100); // 300 checkpoints
    let log = srv.log(&hid);
    let worker =
        spawn_work(&root, "w1", &hid, &["--ship-to", &srv.addr(), "--ship-mode", "sync", "--pace", "0.002"], &tok());

    dhp_testkit::wait_until(Duration::from_secs(30), "60 checkpoints on the server", || log_seqs(&log).len() >= 60);
    srv.kill9();
    std::thread::sleep(Duration::from_millis(400));
    // Sync mode: while the server is down the worker can commit at most one
    // checkpoint beyond what the server holds.
    let peer = log_seqs(&log).len();
    let local = store_rows(&root, &hid).len();
    assert!(local <= peer + 1, "worker ran ahead of the peer: store {local}, peer {peer}");
    srv.restart();

    dhp_testkit::wait_until(Duration::from_secs(30), "160 checkpoints on the server", || log_seqs(&log).len() >= 160);
    srv.restart(); // SIGKILL and immediately back

    let (code, out, err) = finish(worker, Duration::from_secs(60));
    assert_eq!(code, 0, "worker failed: {out} {err}");
    assert_eq!(out["completed"], true);
    assert_eq!(store_rows(&root, &hid).len(), 300);
    assert_log_matches_store(&log, &root, &hid, &tmp.path().join("fresh"));
    // The worker's local buffer log holds the same lines, once each.
    let buffer = root.join("ship-buffer").join(format!("{hid}.log"));
    assert_log_matches_store(&buffer, &root, &hid, &tmp.path().join("fresh2"));
}

//! An async-mode worker starts while nothing listens at its --ship-to
//! address, and later loses the server for three seconds. It waits for the
//! server at the start (bounded), runs ahead by at most --ship-max-lag
//! lines during the outage, and once the server is back replays what it
//! lacks: every checkpoint on the server once, nothing duplicated.
use crate::tcp_support::*;
use std::time::{Duration, Instant};

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

    dhp_testkit::wait_until(Duration::from_secs(30), "50 checkpoints on the server", || log_seqs(&log).len() >= 50);
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

/// Library view of the same outage: a sync ship waits at most its
/// call_timeout, then fails with a typed transport error; the line stays
/// in the local buffer log and in the queue, and reaches the server (in
/// order, once) when it is back.
#[test]
fn bounded_wait_then_typed_error_then_delivery() {
    use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
    use dhp_core::transport::Shipper;
    use dhp_core::Error;
    use serde_json::json;

    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(500, 600);
    let buffer = tmp.path().join("buf");
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            buffer: Some(BufferLog::Dir(buffer.clone())),
            call_timeout: Duration::from_millis(800),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    sh.ship_checkpoint(&hid, 0, &cp_line(0, &json!({"s": 0}))).unwrap();
    srv.kill9();

    for s in 1..3 {
        let t0 = Instant::now();
        let e = sh.ship_checkpoint(&hid, s, &cp_line(s, &json!({"s": s}))).unwrap_err();
        let took = t0.elapsed();
        assert!(
            matches!(e, Error::Transport { kind: dhp_core::TransportKind::Unacknowledged, detail: ref m, .. } if m.contains("not acknowledged")),
            "{e:?}"
        );
        assert_eq!(e.exit_code(), 10);
        assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(3), "waited {took:?}");
    }
    assert_eq!(sh.unacked(), 2);
    let local = buffer.join(format!("{hid}.log"));
    assert_eq!(log_seqs(&local), vec![0, 1, 2], "every line is in the local buffer first");
    assert_eq!(log_seqs(&srv.log(&hid)), vec![0]);

    srv.restart();
    sh.ship_checkpoint(&hid, 3, &cp_line(3, &json!({"s": 3}))).unwrap();
    assert_eq!(log_seqs(&srv.log(&hid)), vec![0, 1, 2, 3]);
    assert_eq!(sh.unacked(), 0);
    sh.close().unwrap();
}

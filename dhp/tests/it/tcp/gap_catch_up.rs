//! The server never acknowledges past a hole: a checkpoint whose seq jumps
//! ahead, or that re-uses a logged seq with another state, is refused with
//! the seq the server expects next, and hello's `ack_seq` is the end of the
//! unbroken run from seq 0. A shipper whose peer lost lines replays them
//! from its local buffer log and catches up; one that has no copy fails
//! loudly instead of retrying forever.
use crate::tcp_support::*;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{log, Shipper};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn gaps_and_conflicts_are_refused_and_a_shipper_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));

    // Raw frames: 0..=3, then a jump to 100 (the case).
    let (env, hid) = envelope(1, 100);
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    let r = c.rpc(&cp_frame(1, &json!({"s": 1})));
    assert_eq!(r, json!({"ok": false, "error": "gap: expected seq 0, got 1", "expect_seq": 0}));
    for s in 0..4 {
        assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
    }
    let r = c.rpc(&cp_frame(100, &json!({"s": 100})));
    assert_eq!(r, json!({"ok": false, "error": "gap: expected seq 4, got 100", "expect_seq": 4}));
    // Same seq, another state: refused, and the logged line stays.
    let r = c.rpc(&cp_frame(2, &json!({"s": "other"})));
    assert_eq!(r, json!({"ok": false, "error": "conflict: seq 2 is logged with another state_hash", "expect_seq": 4}));
    // Same seq, same state: an idempotent resend is still acked.
    assert_eq!(c.rpc(&cp_frame(2, &json!({"s": 2}))), json!({"ok": true, "seq": 2}));
    assert_eq!(log_seqs(&srv.log(&hid)), vec![0, 1, 2, 3]);
    assert_eq!(Raw::connect(&srv.addr()).hello(&hid, TOKEN), json!({"ok": true, "ack_seq": 3}));
    drop(c);

    // A conflict with a seq no longer in the server's memory is found in
    // the file (a restart-free check on an old seq: 70 later seqs).
    for s in 4..75 {
        let mut c = Raw::connect(&srv.addr());
        c.hello(&hid, TOKEN);
        assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
    }
    let mut c = Raw::connect(&srv.addr());
    c.hello(&hid, TOKEN);
    assert_eq!(c.rpc(&cp_frame(1, &json!({"s": "forked"})))["expect_seq"], 75);
    drop(c);

    // A log with a hole (written outside the server): ack_seq stops before it.
    let (env2, hid2) = envelope(2, 100);
    let log2 = srv.log(&hid2);
    log::ship_envelope(&log2, &env2, &Default::default()).unwrap();
    for s in [0, 1, 5] {
        log::ship_checkpoint(&log2, s, &json!({"s": s}), &Default::default()).unwrap();
    }
    assert_eq!(Raw::connect(&srv.addr()).hello(&hid2, TOKEN), json!({"ok": true, "ack_seq": 1}));

    // A shipper with a buffer log ships 0..50; the peer then loses 4..=49
    // (its log is cut back). The next sync ship hits the gap, reconnects,
    // replays 4..=49 from the buffer and lands 50 after them, in order.
    let (env3, hid3) = envelope(3, 100);
    let opts = ShipperOptions {
        token: TOKEN.into(),
        mode: ShipMode::Sync,
        buffer: Some(BufferLog::Dir(tmp.path().join("buf"))),
        call_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(&srv.addr(), opts).unwrap();
    sh.ship_envelope(&hid3, &env3).unwrap();
    for s in 0..50 {
        sh.ship_checkpoint(&hid3, s, &cp_line(s, &json!({"s": s}))).unwrap();
    }
    assert_eq!(sh.acked_seq(&hid3).unwrap(), 49);
    let log3 = srv.log(&hid3);
    let text = std::fs::read_to_string(&log3).unwrap();
    let kept: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log3, kept).unwrap();
    assert_eq!(log_seqs(&log3), vec![0, 1, 2, 3]);
    sh.ship_checkpoint(&hid3, 50, &cp_line(50, &json!({"s": 50}))).unwrap();
    assert_eq!(sh.acked_seq(&hid3).unwrap(), 50);
    assert_eq!(log_seqs(&log3), (0..=50).collect::<Vec<_>>());
    sh.close().unwrap();

    // Without a buffer log the lost lines exist nowhere: the ship fails
    // with the reason, well before its call timeout, and nothing is logged.
    std::fs::write(&log3, text.lines().take(5).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let opts = ShipperOptions { token: TOKEN.into(), call_timeout: Duration::from_secs(20), ..Default::default() };
    let mut bare = TcpShipper::new(&srv.addr(), opts).unwrap();
    bare.ship_envelope(&hid3, &env3).unwrap();
    let t0 = Instant::now();
    let e = bare.ship_checkpoint(&hid3, 60, &cp_line(60, &json!({"s": 60}))).unwrap_err().to_string();
    assert!(e.contains("server expects seq 4"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(log_seqs(&log3), vec![0, 1, 2, 3]);
}

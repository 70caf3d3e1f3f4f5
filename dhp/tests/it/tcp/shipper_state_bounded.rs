//! A long-lived shipper's state stays bounded: the queue of a handoff
//! acknowledged through its last line (and its open local buffer log) is
//! dropped once more than about a thousand are idle, so shipping thousands
//! of handoffs leaves the entry count flat instead of one per handoff
//! forever. A handoff whose entry was dropped ships again normally: its
//! fresh hello learns `ack_seq` from the server.
use crate::tcp_support::*;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Duration;

/// Well past the bound (about 1,000 idle handoffs).
const HANDOFFS: u64 = 2_200;

#[test]
fn finished_handoffs_do_not_accumulate() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let srv = Server::start_with(&logs, 0, &[("DHP_TRANSPORT_TOKEN", TOKEN)], &["--no-fsync"]);
    let opts = ShipperOptions {
        token: TOKEN.into(),
        mode: ShipMode::Async { max_lag: 64 },
        buffer: Some(BufferLog::Dir(tmp.path().join("buffer"))),
        call_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(&srv.addr(), opts).unwrap();
    let mut hids = Vec::new();
    let mut tracked = Vec::new();
    for i in 0..HANDOFFS {
        let (env, hid) = envelope(1_000 + i, 100_000);
        sh.ship_envelope(&hid, &env).unwrap();
        sh.ship_checkpoint(&hid, 0, &cp_line(0, &json!({"i": i}))).unwrap();
        hids.push(hid);
        if (i + 1) % 550 == 0 {
            sh.flush().unwrap();
            tracked.push(sh.tracked_handoffs());
        }
    }
    // Flat past the bound: never one entry per handoff shipped.
    assert!(tracked.iter().all(|&n| n <= 1_100), "entries after each 550 handoffs: {tracked:?}");
    assert!(tracked[3] < HANDOFFS as usize / 2, "{tracked:?}");

    // The first handoff's entry is long gone: it ships on from the
    // server's ack_seq.
    assert_eq!(sh.acked_seq(&hids[0]).unwrap(), 0);
    sh.ship_checkpoint(&hids[0], 1, &cp_line(1, &json!({"i": 0, "again": true}))).unwrap();
    sh.close().unwrap();
    assert_eq!(log_seqs(&srv.log(&hids[0])), vec![0, 1]);
    for h in &hids[1..] {
        assert_eq!(log_seqs(&srv.log(h)), vec![0], "{h}");
    }
}

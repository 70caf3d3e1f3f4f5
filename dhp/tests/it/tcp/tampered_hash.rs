//! Tampering: a checkpoint whose state_hash does not match its state, an
//! envelope whose handoff_id does not match its body, an envelope or a
//! checkpoint for another handoff than the hello named: each is refused
//! with an error reply, nothing of it reaches the log, the connection goes
//! on, and the log still ingests (no TamperError downstream). Our shipper
//! turns a refused hash into a typed `Error::Tamper`.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use dhp_core::Error;
use serde_json::json;
use std::time::Duration;

#[test]
fn tampered_frames_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(100, 200);
    let (other_env, other_hid) = envelope(300, 400);
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));

    // Envelope whose body no longer matches its id.
    let mut bad_env = env.clone();
    bad_env["task"]["inputs"]["inline"]["hi"] = json!(201);
    let r = c.rpc(&json!({"type": "envelope", "envelope": bad_env}));
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("identity"), "{r}");
    // A genuine envelope, but for another handoff than the hello.
    let r = c.rpc(&json!({"type": "envelope", "envelope": other_env}));
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("different handoff"), "{r}");
    assert!(!srv.log(&hid).exists(), "refused envelopes must not create the log");
    // Checkpoint before any envelope header: refused (ingest would skip it).
    let r = c.rpc(&cp_frame(0, &json!({"n": 0})));
    assert_eq!(r["ok"], false, "{r}");

    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    assert_eq!(c.rpc(&cp_frame(0, &json!({"n": 0}))), json!({"ok": true, "seq": 0}));

    // state changed after hashing.
    let mut f = cp_frame(1, &json!({"n": 1}));
    f["state"]["n"] = json!(2);
    assert_eq!(c.rpc(&f), json!({"ok": false, "error": "hash mismatch"}));
    // hash changed.
    let mut f = cp_frame(1, &json!({"n": 1}));
    f["state_hash"] = json!("0".repeat(64));
    assert_eq!(c.rpc(&f), json!({"ok": false, "error": "hash mismatch"}));
    // hash missing.
    let mut f = cp_frame(1, &json!({"n": 1}));
    f.as_object_mut().unwrap().remove("state_hash");
    assert_eq!(c.rpc(&f)["ok"], false);
    // A checkpoint frame that names another handoff.
    let mut f = cp_frame(1, &json!({"n": 1}));
    f["handoff_id"] = json!(other_hid);
    let r = c.rpc(&f);
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("different handoff"), "{r}");

    // The connection is still good.
    assert_eq!(c.rpc(&cp_frame(1, &json!({"n": 1}))), json!({"ok": true, "seq": 1}));
    let mut f = cp_frame(2, &json!({"n": 2}));
    f["handoff_id"] = json!(hid);
    assert_eq!(c.rpc(&f), json!({"ok": true, "seq": 2}));
    assert_eq!(c.rpc(&json!({"type": "bye"})), json!({"ok": true}));

    let log = srv.log(&hid);
    assert_eq!(log_seqs(&log), vec![0, 1, 2]);
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(3), Some(0)));
    assert!(!srv.log(&other_hid).exists());

    // Our shipper: the server's refusal is a typed Tamper error, the line
    // is dropped (not retried forever), and shipping goes on.
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: Duration::from_secs(10),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    let bad = cp_line(3, &json!({"n": 3})).replace("\"n\": 3", "\"n\": 4");
    let e = sh.ship_checkpoint(&hid, 3, &bad).unwrap_err();
    assert!(matches!(e, Error::Tamper { detail: ref m, .. } if m.contains("hash mismatch")), "{e:?}");
    assert_eq!(sh.unacked(), 0);
    sh.ship_checkpoint(&hid, 3, &cp_line(3, &json!({"n": 3}))).unwrap();
    // A tampered envelope never leaves the shipper.
    let mut bad_env = env.clone();
    bad_env["task"]["kind"] = json!("evil");
    assert!(matches!(sh.ship_envelope(&hid, &bad_env).unwrap_err(), Error::Tamper { .. }));
    sh.close().unwrap();
    assert_eq!(log_seqs(&log), vec![0, 1, 2, 3]);
}

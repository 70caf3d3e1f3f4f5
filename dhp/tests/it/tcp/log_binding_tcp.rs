//! Our TCP server gets the same frames as log lines, so it checks the same
//! binding (docs/log-chain.md) when a frame carries it: a frame bound to
//! another handoff, a `prev` that is not the hash of the checkpoint before,
//! and a second state for a seq it holds are refused; bound frames keep
//! their binding in the log, which then ingests; unbound (reference)
//! frames are accepted as before.
use crate::tcp_support::*;
use dhp_core::json::state_text_and_hash;
use dhp_core::transport::chain::bound_checkpoint_line;
use serde_json::{json, Value};

fn bound(hid: &str, seq: i64, state: &Value, prev: Option<&str>) -> (Value, String) {
    let (_, hash) = state_text_and_hash(state).unwrap();
    let line = bound_checkpoint_line(hid, seq, state, &hash, prev, "2026-11-30T00:00:00+00:00").unwrap();
    (serde_json::from_str(&line).unwrap(), hash)
}

#[test]
fn bound_frames_are_verified_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(100, 200);
    let (_, other) = envelope(300, 400);
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));

    let (f0, h0) = bound(&hid, 0, &json!({"n": 0}), None);
    assert_eq!(c.rpc(&f0), json!({"ok": true, "seq": 0}));
    // Bound to another handoff.
    let (f1_foreign, _) = bound(&other, 1, &json!({"n": 1}), Some(&h0));
    let r = c.rpc(&f1_foreign);
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("binding mismatch"), "{r}");
    // prev is not checkpoint 0's hash.
    let (f1_broken, _) = bound(&hid, 1, &json!({"n": 1}), Some(&"0".repeat(64)));
    let r = c.rpc(&f1_broken);
    assert_eq!(r["ok"], false, "{r}");
    // A second state for seq 0 (unbound, as the reference would send it).
    let r = c.rpc(&cp_frame(0, &json!({"n": 99})));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("conflict"), "{r}");
    // The genuine ones go through; a same-state duplicate is acked as before.
    let (f1, h1) = bound(&hid, 1, &json!({"n": 1}), Some(&h0));
    assert_eq!(c.rpc(&f1), json!({"ok": true, "seq": 1}));
    assert_eq!(c.rpc(&f1), json!({"ok": true, "seq": 1}));
    // An unbound (reference) frame is still accepted.
    assert_eq!(c.rpc(&cp_frame(2, &json!({"n": 2}))), json!({"ok": true, "seq": 2}));
    assert_eq!(c.rpc(&json!({"type": "bye"})), json!({"ok": true}));

    let recs = records(&srv.log(&hid));
    let cps: Vec<&Value> = recs.iter().filter(|v| v["type"] == "checkpoint").collect();
    assert_eq!(cps.len(), 3, "{recs:?}");
    assert_eq!((cps[0]["hid"].as_str(), cps[0].get("prev")), (Some(hid.as_str()), None));
    assert_eq!((cps[1]["hid"].as_str(), cps[1]["prev"].as_str()), (Some(hid.as_str()), Some(h0.as_str())));
    assert_eq!(cps[1]["state_hash"], h1.as_str());
    assert!(cps[2].get("hid").is_none());
    let rep = ingest_ours(&tmp.path().join("dst"), &srv.log(&hid));
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(3), Some(0)), "{rep}");
}

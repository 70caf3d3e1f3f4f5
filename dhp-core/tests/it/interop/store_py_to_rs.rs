//! A store made and half-worked by the reference is continued and
//! completed by Rust; the reference then reads the Rust result.
use crate::common::*;
use dhp_core::{supervisor::Supervisor, Config, Runner};
use serde_json::json;

#[test]
fn python_half_worked_store_is_finished_by_rust() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let hid = refctl_ok(
        &["dispatch", root, "--kind", "t", "--inputs", r#"{"n": 1, "s": "é\u2028"}"#, "--schema", SCHEMA_X],
        &[],
    )["hid"]
        .as_str()
        .unwrap()
        .to_string();
    let fence = refctl_ok(&["claim", root, &hid, "--runner", "py-w"], &[])["fence"].as_i64().unwrap();
    for i in 0..3 {
        let st = json!({"i": i, "f": 0.1 + 0.2, "big": 1u128 << 70, "u": "中文😀\u{7f}"}).to_string();
        let seq = refctl_ok(
            &["checkpoint", root, &hid, "--runner", "py-w", "--fence", &fence.to_string(), "--state", &st],
            &[],
        );
        assert_eq!(seq["seq"], i);
    }
    // The Python worker "dies": its lease runs out; a Rust supervisor orphans.
    refctl_ok(&["expire", root, &hid], &[]);
    let sup = Supervisor::open(root, "rs-sup", Config::default()).unwrap();
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].kind().as_str(), "orphaned");

    let r = Runner::open(root, "rs-w", Config::default()).unwrap();
    let mut ctx = r.recover(&hid).unwrap();
    assert_eq!(ctx.fence().get(), 2, "claim 0, orphan 1, recover 2 as in the reference");
    let last = r.last_checkpoint(&hid).unwrap().unwrap();
    assert_eq!(last["i"], 2);
    assert_eq!(last["big"].to_string(), "1180591620717411303424");
    // Our state text for the same value equals the row Python wrote.
    let rows = r.checkpoints(&hid).unwrap();
    let (text, hash) = dhp_core::json::state_text_and_hash(&last).unwrap();
    assert_eq!((text.as_str(), hash.as_str()), (rows[2].state_json.as_str(), rows[2].state_hash.as_str()));
    assert_eq!(ctx.checkpoint(&json!({"i": 3})).unwrap(), 3);
    // The stale Python worker is fenced out.
    let (code, v) =
        refctl(&["checkpoint", root, &hid, "--runner", "py-w", "--fence", &fence.to_string(), "--state", "{}"], &[]);
    assert_eq!((code, v["error_kind"].as_str()), (1, Some("FencingError")), "{v}");
    ctx.complete(&json!({"x": 42})).unwrap();

    // The reference reads what Rust wrote.
    let st = refctl_ok(&["status", root, &hid], &[]);
    assert_eq!(st["status"], "completed");
    assert_eq!(st["result"], json!({"x": 42}));
    assert_eq!(st["checkpoints"], 4);
    assert_eq!(st["attempt"], 1);
    refctl_ok(&["ack", root, &hid], &[]);
    assert_eq!(r.status(&hid).unwrap()["acked"], true);
}

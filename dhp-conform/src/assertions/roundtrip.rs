//! Suspend → resume round trips: everything a handoff carries crosses
//! roots intact, twice, and the suspended original stays shut.

use super::new_handoff;
use crate::check::{Check, Fail};
use crate::client::Adapter;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::{json, Value};

/// `(seq, state_hash)` of the checkpoints `load_envelope` materializes.
fn checkpoint_list(m: &mut Adapter, root: &str, hid: &str) -> Check<Vec<(i64, String)>> {
    let env = m.load_envelope(root, hid)?;
    let list = env.pointer("/execution/checkpoints").and_then(Value::as_array).ok_or_else(|| Fail::failed("load_envelope: no execution.checkpoints list"))?;
    Ok(list.iter().map(|c| (c["seq"].as_i64().unwrap_or(-1), c["state_hash"].as_str().unwrap_or_default().to_string())).collect())
}

fn usage(st: &Value) -> Value {
    json!({"steps": st["steps"], "spend_usd": st["spend_usd"], "checkpoints": st["checkpoints"], "attempt": st["attempt"], "status": st["status"]})
}

/// suspend-resume-round-trip
pub fn suspend_resume_round_trip(cx: &Ctx<'_>) -> Check {
    let (ra, rb, rc) = (cx.root("a")?, cx.root("b")?, cx.root("c")?);
    let mut m = cx.adapter()?;
    for r in [&ra, &rb, &rc] {
        m.open(r)?;
    }
    let hid = new_handoff(&mut m, &ra, 1)?;
    let t = m.claim(&ra, "w1", &hid)?;
    for i in 0..3 {
        m.checkpoint(&t, json!({"s": i}))?;
    }
    m.note_step(&t, 2)?;
    m.op("note_spend", t.with("usd", json!(0.5)))?;
    let hashes = checkpoint_list(&mut m, &ra, &hid)?;
    ensure_eq!(hashes.len(), 3, "checkpoints before suspend");
    let b1 = cx.path("one.bundle");
    m.suspend(&ra, &hid, &b1)?;
    let suspended = m.status(&ra, &hid)?;
    ensure_eq!(suspended["status"], json!("suspended"), "status after suspend");
    m.must_fail("checkpoint", t.with("state", json!({"s": 9})), &["StateError"], "checkpoint of a suspended handoff")?;
    m.must_fail("complete", t.with("result", json!({"x": 9})), &["StateError"], "complete of a suspended handoff")?;

    // first hop: everything arrives, pending for a new owner, attempt + 1
    ensure_eq!(m.resume(&rb, &b1)?, hid, "hid after resume");
    let st = m.status(&rb, &hid)?;
    ensure_eq!(usage(&st), json!({"steps": 2, "spend_usd": 0.5, "checkpoints": 3, "attempt": 1, "status": "pending"}), "status after the first resume");
    ensure!(st["owner"].is_null(), "a resumed handoff has no owner yet: {}", st["owner"]);
    ensure_eq!(checkpoint_list(&mut m, &rb, &hid)?, hashes, "checkpoint seqs and hashes after the first resume");
    ensure_eq!(m.last_checkpoint(&rb, &hid)?, Some(json!({"s": 2})), "last checkpoint after the first resume");

    // second hop, with one more checkpoint
    let t2 = m.claim(&rb, "w2", &hid)?;
    ensure_eq!(m.checkpoint(&t2, json!({"s": 3}))?, 3, "seq of the first checkpoint after resume");
    let b2 = cx.path("two.bundle");
    m.suspend(&rb, &hid, &b2)?;
    ensure_eq!(m.resume(&rc, &b2)?, hid, "hid after the second resume");
    let st = m.status(&rc, &hid)?;
    ensure_eq!(usage(&st), json!({"steps": 2, "spend_usd": 0.5, "checkpoints": 4, "attempt": 2, "status": "pending"}), "status after the second resume");
    ensure_eq!(checkpoint_list(&mut m, &rc, &hid)?.len(), 4, "checkpoints after the second resume");

    // a root that still has the handoff refuses the bundle, unchanged
    m.must_fail("resume", json!({"root": ra, "path": b2}), &["StateError"], "resume onto a root that has the handoff")?;
    ensure_eq!(usage(&m.status(&ra, &hid)?), usage(&suspended), "the original after a refused resume");

    let t3 = m.claim(&rc, "w3", &hid)?;
    m.complete(&t3, json!({"x": 1}))?;
    ensure_eq!(m.status(&rc, &hid)?["result"], json!({"x": 1}), "result after two hops");
    Ok(())
}

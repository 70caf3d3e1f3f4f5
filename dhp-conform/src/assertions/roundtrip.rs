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
    let list = env
        .pointer("/execution/checkpoints")
        .and_then(Value::as_array)
        .ok_or_else(|| Fail::failed("load_envelope: no execution.checkpoints list"))?;
    Ok(list
        .iter()
        .map(|c| (c["seq"].as_i64().unwrap_or(-1), c["state_hash"].as_str().unwrap_or_default().to_string()))
        .collect())
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
    ensure_eq!(
        usage(&st),
        json!({"steps": 2, "spend_usd": 0.5, "checkpoints": 3, "attempt": 1, "status": "pending"}),
        "status after the first resume"
    );
    ensure!(st["owner"].is_null(), "a resumed handoff has no owner yet: {}", st["owner"]);
    ensure_eq!(checkpoint_list(&mut m, &rb, &hid)?, hashes, "checkpoint seqs and hashes after the first resume");
    ensure_eq!(m.last_checkpoint(&rb, &hid)?, Some(json!({"s": 2})), "last checkpoint after the first resume");

    // second hop, with one more checkpoint
    let t2 = m.claim(&rb, "w2", &hid)?;
    ensure_eq!(m.checkpoint(&t2, json!({"s": 3}))?, 3, "seq of the first checkpoint after resume");
    // the second bundle goes to another file system than the adapter's
    // working directory, where the host has one: a bundle is written
    // beside its own path (a temporary file elsewhere cannot be renamed
    // into place across file systems)
    let elsewhere = other_file_system();
    let b2 = match &elsewhere {
        Some(d) => d.path().join("two.bundle").to_string_lossy().into_owned(),
        None => cx.path("two.bundle"),
    };
    m.suspend(&rb, &hid, &b2)?;
    ensure_eq!(m.resume(&rc, &b2)?, hid, "hid after the second resume");
    let st = m.status(&rc, &hid)?;
    ensure_eq!(
        usage(&st),
        json!({"steps": 2, "spend_usd": 0.5, "checkpoints": 4, "attempt": 2, "status": "pending"}),
        "status after the second resume"
    );
    ensure_eq!(checkpoint_list(&mut m, &rc, &hid)?.len(), 4, "checkpoints after the second resume");

    // a root that still has the handoff refuses the bundle, unchanged
    m.must_fail("resume", json!({"root": ra, "path": b2}), &["StateError"], "resume onto a root that has the handoff")?;
    ensure_eq!(usage(&m.status(&ra, &hid)?), usage(&suspended), "the original after a refused resume");

    let t3 = m.claim(&rc, "w3", &hid)?;
    m.complete(&t3, json!({"x": 1}))?;
    ensure_eq!(m.status(&rc, &hid)?["result"], json!({"x": 1}), "result after two hops");
    Ok(())
}

/// A fresh directory on a file system other than the working directory's
/// (which adapters inherit from the runner), if the host has one.
fn other_file_system() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::MetadataExt;
    let here = std::fs::metadata(".").ok()?.dev();
    ["/dev/shm", "/run", "/tmp"]
        .into_iter()
        .filter(|d| std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.dev() != here))
        .find_map(|d| tempfile::Builder::new().prefix("dhp-conform-").tempdir_in(d).ok())
}

/// status-reporting: `status` tells the truth at every step of a
/// handoff's life, field by field.
pub fn status_reporting(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let expect = |m: &mut Adapter, stage: &str, want: Value| -> Check {
        let st = m.status(&root, &hid)?;
        ensure_eq!(st["handoff_id"], json!(hid), "handoff_id when {stage}");
        let mut got = serde_json::Map::new();
        for k in want.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            got.insert(k.clone(), st[&k].clone());
        }
        ensure_eq!(Value::Object(got), want, "status when {stage}");
        Ok(())
    };
    let base = |status: &str, attempt: i64, owner: Value, fence: Value| json!({"status": status, "attempt": attempt, "owner": owner, "fence": fence, "result": null, "acked": false, "error": null});
    let mut pending = base("pending", 0, Value::Null, Value::Null);
    pending["checkpoints"] = json!(0);
    pending["steps"] = json!(0);
    expect(&mut m, "pending", pending)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"a": 1}))?;
    m.note_step(&t, 3)?;
    m.op("note_spend", t.with("usd", json!(0.25)))?;
    let mut running = base("running", 0, json!("w1"), json!(0));
    running["checkpoints"] = json!(1);
    running["steps"] = json!(3);
    running["spend_usd"] = json!(0.25);
    expect(&mut m, "running", running)?;
    m.orphan_via_scan(&t, "s1")?;
    let mut orphaned = base("orphaned", 0, Value::Null, json!(1));
    orphaned.as_object_mut().map(|o| o.remove("owner"));
    orphaned["orphan_reason"] = json!("lease-expired");
    expect(&mut m, "orphaned", orphaned)?;
    let t2 = m.recover(&root, "w2", &hid)?;
    ensure_eq!(t2.fence, 2, "fence handed out by recover after one orphaning");
    expect(&mut m, "recovered", base("running", 1, json!("w2"), json!(2)))?;
    m.complete(&t2, json!({"x": 1}))?;
    let mut done = base("completed", 1, Value::Null, Value::Null);
    done["result"] = json!({"x": 1});
    done["checkpoints"] = json!(1);
    done["steps"] = json!(3);
    expect(&mut m, "completed", done.clone())?;
    m.ack(&root, &hid)?;
    done["acked"] = json!(true);
    expect(&mut m, "acked", done)?;
    Ok(())
}

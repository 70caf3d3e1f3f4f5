//! The `stall-orphan-then-dlq` assertion.

use crate::assertions::{new_handoff_with, spec_with};
use crate::check::Check;
use crate::client::Adapter;
use crate::ops::{action_for, Token};
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

fn repeat_activity(m: &mut Adapter, t: &Token, times: usize) -> Check<i64> {
    let mut last = 0;
    for _ in 0..times {
        let v = m.op("note_activity", t.with("digest", json!("tool:search q=same")))?;
        last = v["repeat_count"].as_i64().unwrap_or(0);
    }
    Ok(last)
}

/// A live worker repeating the same activity is orphaned as stalled; after
/// max_stall_retries stalls it is dead-lettered instead of retried.
pub fn stall_orphan_then_dlq(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"max_stall_retries": 1})))?;
    let t = m.claim(&root, "w1", &hid)?;
    // progress just made: its stall clock (stall_timeout_s, 120 s) is far
    // from running out, and a checkpoint starts the repeat count afresh
    ensure_eq!(m.checkpoint(&t, json!({"k": 1}))?, 0, "seq of the first checkpoint");
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 5, "repeat count after 5 identical activities");
    let other = m.op("note_activity", t.with("digest", json!("tool:fetch url=other")))?;
    ensure_eq!(other["repeat_count"], json!(1), "repeat count of a different activity");
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 5, "repeat count after 5 identical activities");
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &hid).is_none(),
        "scan acted on a worker that checkpointed just now (well within stall_timeout_s) and is below the repeat \
         limit (5 < 10): {acts:?}"
    );
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 10, "repeat count after 10 identical activities");
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(action_for(&acts, &hid), Some("orphaned"), "scan action after 10 repeats (actions {acts:?})");
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("orphaned"), "status after the first stall");
    if !st["orphan_reason"].is_null() {
        ensure_eq!(st["orphan_reason"], json!("stalled"), "orphan_reason");
    }
    let t2 = m.recover(&root, "w2", &hid)?;
    repeat_activity(&mut m, &t2, 10)?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &hid),
        Some("dlq"),
        "scan action on the second stall with max_stall_retries=1 (actions {acts:?})"
    );
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("failed"), "status after the second stall");
    ensure!(st["error"].as_str().is_some_and(|e| !e.is_empty()), "a dead-lettered handoff must say why: {st}");
    if let Some(db) = cx.store(&root)? {
        let env = db.must_envelope(&hid)?;
        ensure_eq!(env.pointer("/execution/stall_count"), Some(&json!(2)), "stored execution.stall_count");
        ensure_eq!(env.pointer("/execution/status"), Some(&json!("failed")), "stored status");
    }
    Ok(())
}

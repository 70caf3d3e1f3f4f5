//! The `release-to-pending` assertion.

use crate::assertions::new_handoff;
use crate::check::Check;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// Release hands the handoff back: pending, no owner, checkpoints kept,
/// the old token dead, claimable again.
pub fn release_to_pending(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    m.release(&t, "shutting down")?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("pending"), "status after release");
    ensure!(st["owner"].is_null(), "owner after release: {}", st["owner"]);
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.status(&hid)?, "pending", "stored status after release");
        ensure!(db.ownership(&hid)?.is_none(), "the ownership row must be deleted by release");
    }
    m.must_refuse("checkpoint", t.with("state", json!({"s": 9})), "checkpoint with a released token")?;
    let t2 = m.claim(&root, "w2", &hid).map_err(|f| f.context("claim after release"))?;
    crate::ensure_json!(
        m.status(&root, &hid)?["attempt"],
        json!(0),
        "§5.3 (claim leaves execution.attempt unchanged; only recover and resume add 1): attempt after release and a second claim"
    );
    ensure_eq!(m.last_checkpoint(&root, &hid)?, Some(json!({"s": 1})), "checkpoints kept across release");
    m.complete(&t2, json!({"x": 1}))?;
    ensure_eq!(m.status(&root, &hid)?["status"], json!("completed"), "status after the second claim completes");
    Ok(())
}

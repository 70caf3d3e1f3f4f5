//! The `idempotent-complete` assertion.

use crate::assertions::new_handoff;
use crate::check::Check;
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// Completing a completed handoff again is a no-op: no error, and the
/// first result stands.
pub fn idempotent_complete(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.complete(&t, json!({"x": 1}))?;
    m.complete(&t, json!({"x": 2})).map_err(|f| f.context("a retried complete must be a no-op"))?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("completed"), "status");
    ensure_eq!(st["result"], json!({"x": 1}), "result after a retried complete");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.must_envelope(&hid)?.pointer("/delivery/result"), Some(&json!({"x": 1})), "stored result");
    }
    Ok(())
}

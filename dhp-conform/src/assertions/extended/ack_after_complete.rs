//! The `ack-after-complete` assertion.

use crate::assertions::new_handoff;
use crate::check::Check;
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// The parent's ack is refused until the handoff completed, then recorded.
pub fn ack_after_complete(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    m.must_fail("ack", json!({"root": root, "hid": hid}), &["StateError"], "ack of a pending handoff")?;
    let t = m.claim(&root, "w1", &hid)?;
    m.must_fail("ack", json!({"root": root, "hid": hid}), &["StateError"], "ack of a running handoff")?;
    ensure_eq!(m.status(&root, &hid)?["acked"], json!(false), "acked before completion");
    m.complete(&t, json!({"x": 1}))?;
    m.ack(&root, &hid)?;
    m.ack(&root, &hid).map_err(|f| f.context("a second ack"))?;
    ensure_eq!(m.status(&root, &hid)?["acked"], json!(true), "acked after ack");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(
            db.must_envelope(&hid)?.pointer("/delivery/outbox/ack"),
            Some(&json!(true)),
            "stored delivery.outbox.ack"
        );
    }
    Ok(())
}

//! The `ack-after-complete` assertion.

use crate::assertions::new_handoff;
use crate::check::Check;
use crate::suite::Ctx;
use crate::{ensure_eq, ensure_json};
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
    // a failed handoff has no result waiting in the outbox: nothing to ack
    let bad = new_handoff(&mut m, &root, 2)?;
    let tb = m.claim(&root, "w1", &bad)?;
    m.must_fail(
        "complete",
        tb.with("result", json!({"x": "not an integer"})),
        &["ValidationError"],
        "complete with a result violating the output schema",
    )?;
    ensure_json!(
        m.status(&root, &bad)?["status"],
        json!("failed"),
        "§6.3: status after a result violating the output schema"
    );
    m.must_fail(
        "ack",
        json!({"root": root, "hid": bad}),
        &["StateError"],
        "§6.3 (ack is allowed only in completed, else StateError): ack of a failed handoff",
    )?;
    ensure_json!(
        m.status(&root, &bad)?["acked"],
        json!(false),
        "§6.3: acked of the failed handoff after a refused ack"
    );
    if let Some(db) = cx.store(&root)? {
        ensure_json!(
            db.must_envelope(&bad)?.pointer("/delivery/outbox/ack").cloned().unwrap_or(serde_json::Value::Null),
            json!(false),
            "§6.3: the store's delivery.outbox.ack of the failed handoff after a refused ack"
        );
    }
    Ok(())
}

//! The `lease-expiry-lease-lost` assertion.

use super::helpers::lease_expiry;
use crate::assertions::new_handoff;
use crate::check::Check;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// A live token whose lease ran out cannot write: LeaseLost, nothing stored.
pub fn lease_expiry_lease_lost(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    // the seconds a heartbeat reports left are the stored lease's
    let left = m.heartbeat(&t)?;
    let stored = lease_expiry(&mut m, &root, &hid)? - cx.now();
    ensure!((left - stored).abs() < 0.5, "heartbeat reported {left:.3} s left; the stored lease has {stored:.3} s");
    ensure!(m.expire_lease(&root, &hid)?, "expire_lease changed nothing");
    m.must_fail("checkpoint", t.with("state", json!({"s": 2})), &["LeaseLost"], "checkpoint after the lease ran out")?;
    m.must_fail("heartbeat", t.args(), &["LeaseLost"], "heartbeat after the lease ran out")?;
    m.must_fail("complete", t.with("result", json!({"x": 1})), &["LeaseLost"], "complete after the lease ran out")?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("running"), "status (only the supervisor may act on an expired lease)");
    ensure_eq!(st["checkpoints"], json!(1), "checkpoints after refused writes");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.verified_states(&hid)?, vec![(0, json!({"s": 1}))], "checkpoint rows");
    }
    Ok(())
}

//! The approval-gate operations of the adapter (feature `approvals`):
//! `Runner::request_approval`, `decide_approval`, `await_approval`, and
//! the approvals of a handoff from `Runner::status`.

use super::{f, s, v, Adapter, R};
use dhp_core::Lease;
use serde_json::{json, Value};
use std::time::Duration;

/// How often `await_approval` looks at a pending approval.
pub(crate) const POLL: Duration = Duration::from_millis(50);

impl Adapter {
    pub(super) fn request_approval(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        r.request_approval(
            &Lease::presented(&hid, fence)?,
            s(a, "action_class")?,
            v(a, "details")?,
            f(a, "timeout_s")?,
        )?;
        Ok(json!({}))
    }

    pub(super) fn approvals(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let hid = self.id_arg(a, "hid")?;
        let st = r.status(&hid)?;
        let list: Vec<Value> = st["approvals"]
            .as_array()
            .map(|l| l.iter().map(|x| json!({"approval_id": x["approval_id"], "action_class": x["action_class"], "status": x["status"]})).collect())
            .unwrap_or_default();
        Ok(json!({"approvals": list}))
    }

    pub(super) fn decide_approval(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let approved =
            a.get("approved").and_then(Value::as_bool).ok_or_else(|| super::bad("args.approved must be a boolean"))?;
        Ok(json!({"decided": r.decide_approval(s(a, "approval_id")?, approved)?}))
    }

    pub(super) fn await_approval(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        r.await_approval(&Lease::presented(&hid, fence)?, s(a, "approval_id")?, POLL)?;
        Ok(json!({}))
    }
}

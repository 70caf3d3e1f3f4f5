//! The approval-gate operations of the adapter (feature `approvals`):
//! `Runner::request_approval`, `decide_approval`, `await_approval`, and
//! the approvals of a handoff from `Runner::status`.

use super::{Adapter, R};
use dhp_adapter_proto::args;
use serde_json::{json, Value};
use std::time::Duration;

/// How often `await_approval` looks at a pending approval.
pub(crate) const POLL: Duration = Duration::from_millis(50);

impl Adapter {
    pub(super) fn request_approval(&mut self, a: &args::RequestApproval) -> R {
        let (r, l) = self.held(&a.token())?;
        r.request_approval(&l, &a.action_class, &Value::Object(a.details.clone()), a.timeout_s)?;
        Ok(json!({}))
    }

    pub(super) fn approvals(&mut self, a: &args::Handoff) -> R {
        let st = self.runner(&a.root)?.status(&a.hid)?;
        let list: Vec<Value> = st["approvals"]
            .as_array()
            .map(|l| l.iter().map(|x| json!({"approval_id": x["approval_id"], "action_class": x["action_class"], "status": x["status"]})).collect())
            .unwrap_or_default();
        Ok(json!({"approvals": list}))
    }

    pub(super) fn decide_approval(&mut self, a: &args::DecideApproval) -> R {
        Ok(json!({"decided": self.runner(&a.root)?.decide_approval(&a.approval_id, a.approved)?}))
    }

    pub(super) fn await_approval(&mut self, a: &args::AwaitApproval) -> R {
        let (r, l) = self.held(&a.token())?;
        r.await_approval(&l, &a.approval_id, POLL)?;
        Ok(json!({}))
    }
}

//! The approval-gate operations of the adapter (feature `approvals`):
//! `Runner::request_approval`, `decide_approval`, `await_approval`, and
//! the approvals of a handoff from `Runner::status`. The approval mutants
//! wrap them here.

use super::{err, f, s, v, Adapter, Mutant, R};
use dhp_core::{Error, Lease};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// How often `await_approval` looks at a pending approval.
const POLL: Duration = Duration::from_millis(50);

impl Adapter {
    pub(super) fn request_approval(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let mut class = s(a, "action_class")?;
        if self.is(Mutant::ApprovalsFailOpen) && matches!(class, "financial" | "destructive") {
            class = "write"; // gated classes pass as if they were plain writes
        }
        if self.is(Mutant::ApprovalUnknownClassPasses)
            && !matches!(class, "read" | "write" | "financial" | "destructive")
        {
            class = "read";
        }
        r.request_approval(&Lease::presented(&hid, fence)?, class, v(a, "details")?, f(a, "timeout_s")?)?;
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
        let root = s(a, "root")?;
        let r = self.runner(root)?;
        let id = s(a, "approval_id")?;
        let approved =
            a.get("approved").and_then(Value::as_bool).ok_or_else(|| super::bad("args.approved must be a boolean"))?;
        let mut decided = r.decide_approval(id, approved)?;
        if !decided && self.is(Mutant::ApprovalRedecide) {
            // a decision overwrites whatever was decided before
            let db = Path::new(root).join("dhp.sqlite3");
            let c = rusqlite::Connection::open(db).map_err(|e| err("StoreError", e.to_string()))?;
            c.busy_timeout(Duration::from_secs(10)).map_err(|e| err("StoreError", e.to_string()))?;
            let status = if approved { "approved" } else { "denied" };
            let n = c
                .execute("UPDATE approvals SET status=?1 WHERE approval_id=?2", rusqlite::params![status, id])
                .map_err(|e| err("StoreError", e.to_string()))?;
            decided = n > 0;
        }
        Ok(json!({"decided": decided}))
    }

    pub(super) fn await_approval(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        match r.await_approval(&Lease::presented(&hid, fence)?, s(a, "approval_id")?, POLL) {
            Err(Error::ApprovalDenied { status, .. })
                if status == "expired" && self.is(Mutant::ExpiredApprovalApproves) =>
            {
                Ok(json!({}))
            }
            other => other.map(|()| json!({})).map_err(Into::into),
        }
    }
}

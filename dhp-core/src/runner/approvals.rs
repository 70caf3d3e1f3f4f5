//! Approval gates for financial and destructive actions.

use super::Runner;
use crate::error::{Error, Result};
use crate::json;
use crate::lease::Lease;
use crate::status::{ApprovalOp, ApprovalStatus};
use crate::store::Approval;
use serde_json::Value;
use std::time::Duration;

impl Runner {
    /// Gate an action. `financial` and `destructive` create a pending
    /// approval and fail closed with [`Error::ApprovalRequired`]; `read` and
    /// `write` pass. Returns `Ok(())` only when no approval is needed.
    pub fn request_approval(&self, lease: &Lease, action_class: &str, details: &Value, timeout_s: f64) -> Result<()> {
        let hid = lease.hid().as_str();
        if !matches!(action_class, "read" | "write" | "financial" | "destructive") {
            return Err(Error::validation(format!("unknown action_class {action_class:?}")));
        }
        let details_json = json::dumps_sorted(details)?;
        let created = self.write_owned(lease, |tx| {
            if !matches!(action_class, "financial" | "destructive") {
                return Ok(None);
            }
            let t = self.now_in(tx)?;
            let approval_id = format!("apr-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
            tx.insert_approval(&Approval {
                approval_id: approval_id.clone(),
                hid: hid.to_string(),
                action_class: action_class.to_string(),
                details_json: details_json.clone(),
                status: ApprovalStatus::Pending,
                created_at: t.secs(),
                expires_at: (t + timeout_s).secs(),
                decided_at: None,
            })?;
            Ok(Some(approval_id))
        })?;
        // Fail closed only after the approval row is committed.
        match created {
            None => Ok(()),
            Some(approval_id) => Err(Error::ApprovalRequired { approval_id, action_class: action_class.to_string() }),
        }
    }

    /// Decide an approval (the human or policy side). `true` if recorded.
    pub fn decide_approval(&self, approval_id: &str, approved: bool) -> Result<bool> {
        self.write(|tx| {
            let t = self.now_in(tx)?;
            tx.decide_approval(approval_id, if approved { ApprovalOp::Approve } else { ApprovalOp::Deny }, t)
        })
    }

    /// Wait for a decision: `Ok(())` when approved, [`Error::ApprovalDenied`]
    /// when denied, expired or timed out.
    pub fn await_approval(&self, lease: &Lease, approval_id: &str, poll: Duration) -> Result<()> {
        loop {
            let ap = self.write_owned(lease, |tx| {
                let ap = tx.approval(approval_id)?.ok_or_else(|| Error::validation("unknown approval_id"))?;
                let t = self.now_in(tx)?;
                let now = ap.status.at(ap.expires_at, t.secs());
                if now != ap.status {
                    tx.expire_approvals(t)?;
                }
                Ok(now)
            })?;
            match ap {
                ApprovalStatus::Approved => return Ok(()),
                ApprovalStatus::Pending => std::thread::sleep(poll),
                status @ (ApprovalStatus::Denied | ApprovalStatus::Expired) => {
                    return Err(Error::ApprovalDenied { approval_id: approval_id.to_string(), status })
                }
            }
        }
    }
}

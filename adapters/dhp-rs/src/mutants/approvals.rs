//! Approval-gate mutants: gated classes, unknown classes, decisions and
//! expiry.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, s, R};
use dhp_adapter_proto::Op;
use dhp_core::{Error, Lease};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// approvals-fail-open / approval-unknown-class-passes: the action class
/// is downgraded before the real request_approval sees it.
pub(super) fn rewrite(ad: &MutantAdapter, op: Op, a: &mut Value) -> bool {
    if op != Op::RequestApproval {
        return false;
    }
    let Some(class) = a.get("action_class").and_then(Value::as_str) else { return false };
    let downgraded = match ad.m {
        // gated classes pass as if they were plain writes
        Mutant::ApprovalsFailOpen if matches!(class, "financial" | "destructive") => "write",
        Mutant::ApprovalUnknownClassPasses if !matches!(class, "read" | "write" | "financial" | "destructive") => {
            "read"
        }
        _ => return false,
    };
    a["action_class"] = json!(downgraded);
    true
}

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::ApprovalRedecide, Op::DecideApproval) => Some(redecide(ad, a)),
        (Mutant::ExpiredApprovalApproves, Op::AwaitApproval) => Some(expired_approves(ad, a)),
        _ => None,
    }
}

/// approval-redecide: a decision overwrites whatever was decided before.
fn redecide(ad: &mut MutantAdapter, a: &Value) -> R {
    let out = ad.inner.handle_args(Op::DecideApproval, a)?;
    if out["decided"] == json!(true) {
        return Ok(out);
    }
    let (root, id) = (s(a, "root")?, s(a, "approval_id")?);
    let status = if a["approved"] == json!(true) { "approved" } else { "denied" };
    let db = Path::new(root).join("dhp.sqlite3");
    let c = rusqlite::Connection::open(db).map_err(|e| err("StoreError", e.to_string()))?;
    c.busy_timeout(Duration::from_secs(10)).map_err(|e| err("StoreError", e.to_string()))?;
    let n = c
        .execute("UPDATE approvals SET status=?1 WHERE approval_id=?2", rusqlite::params![status, id])
        .map_err(|e| err("StoreError", e.to_string()))?;
    Ok(json!({"decided": n > 0}))
}

/// expired-approval-approves: awaiting an approval that expired undecided
/// returns approved.
fn expired_approves(ad: &mut MutantAdapter, a: &Value) -> R {
    let (r, hid, fence) = ad.inner.token(a)?;
    match r.await_approval(&Lease::presented(&hid, fence)?, s(a, "approval_id")?, crate::adapter::POLL) {
        Err(Error::ApprovalDenied { status, .. }) if status == "expired" => Ok(json!({})),
        other => other.map(|()| json!({})).map_err(Into::into),
    }
}

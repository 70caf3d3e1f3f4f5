use super::{ownership_check, require_leader, Lease, OpError};
use crate::state::{Approval, ApprovalStatus, State, Time};

/// §6.6 Request approval: after the ownership check; `read`/`write` pass
/// (`Ok`), `financial`/`destructive` insert a pending approval expiring at
/// `now + timeout` and fail closed with `ApprovalRequired`; any other class
/// is `ValidationError`. [approval-gates] [approval-class-validated]
pub fn approval_request(
    s: &mut State,
    lease: &Lease,
    id: &str,
    class: &str,
    timeout: Time,
    now: Time,
) -> Result<(), OpError> {
    ownership_check(s, lease, now)?;
    match class {
        "read" | "write" => Ok(()),
        "financial" | "destructive" => {
            let a = Approval {
                hid: lease.hid.clone(),
                class: class.to_string(),
                status: ApprovalStatus::Pending,
                expires_at: now + timeout,
            };
            s.approvals.insert(id.to_string(), a);
            Err(OpError::ApprovalRequired)
        }
        other => Err(OpError::ValidationError(format!("unknown action class {other:?}"))),
    }
}

/// §6.6 Decide: `pending` → `approved` or `denied`, only once (a decided
/// or expired approval is refused with `ValidationError`). [approval-gates]
pub fn decide(s: &mut State, id: &str, approve: bool) -> Result<(), OpError> {
    let a = s.approvals.get_mut(id).ok_or_else(|| OpError::ValidationError(format!("no approval {id}")))?;
    if a.status != ApprovalStatus::Pending {
        return Err(OpError::ValidationError(format!("approval {id} already {:?}", a.status)));
    }
    a.status = if approve { ApprovalStatus::Approved } else { ApprovalStatus::Denied };
    Ok(())
}

/// §7.6 Approval expiry: each scan of the leader marks pending approvals
/// with `expires_at < now` as `expired`. Returns how many.
/// [approval-gates]
pub fn approval_expire(s: &mut State, sup: &str, now: Time) -> Result<usize, OpError> {
    require_leader(s, sup, now)?;
    let mut n = 0;
    for a in s.approvals.values_mut() {
        if a.status == ApprovalStatus::Pending && a.expires_at < now {
            a.status = ApprovalStatus::Expired;
            n += 1;
        }
    }
    Ok(n)
}

use super::{status_of, Lease, OpError};
use crate::state::{Ownership, State, Status, Time};

/// §5.3 Claim: only in `pending`; inserts the ownership row with fence 0
/// and a lease of `ttl`, `OwnershipLost` if a row exists; status running,
/// `runner_id`, `claimed_at`; `attempt` unchanged. An over-budget handoff
/// is still claimed and the caller gets `BudgetExceeded` (the claim
/// stands: the state is changed even though `Err` is returned).
/// [claim-race] [release-to-pending] [status-reporting]
pub fn claim(s: &mut State, hid: &str, worker: &str, ttl: Time, now: Time) -> Result<Lease, OpError> {
    let status = status_of(s, hid)?;
    if status != Status::Pending {
        return Err(OpError::StateError(status));
    }
    if s.ownership.contains_key(hid) {
        return Err(OpError::OwnershipLost);
    }
    let own = Ownership { holder: worker.to_string(), fence: 0, lease_expires_at: now + ttl, ttl };
    s.ownership.insert(hid.to_string(), own);
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Running;
    h.runner = Some(worker.to_string());
    h.claimed_at = Some(now);
    h.fence = 0;
    if h.over_budget(now) {
        return Err(OpError::BudgetExceeded);
    }
    Ok(Lease { hid: hid.to_string(), holder: worker.to_string(), fence: 0 })
}

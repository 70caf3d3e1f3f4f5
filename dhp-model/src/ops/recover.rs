use super::{is_orphaned, status_of, Lease, OpError};
use crate::state::{Ownership, State, Status, Time};

/// §5.4 Recover: allowed when the holder is `__orphaned__` (else
/// `OwnershipLost`, dhp-rs; `StateError` in the reference, §13.12) and the
/// status is neither pending nor terminal. A compare-and-set on the fence
/// the recoverer observed: `holder := worker`, `fence := observed + 1`, a
/// new lease; status running, `attempt + 1`, `runner_id`, `claimed_at`
/// (the wall-clock budget restarts, §7.3). Of N racing recoverers exactly
/// one wins. [exactly-one-wins] [no-lost-results] [cross-store]
pub fn recover(
    s: &mut State,
    hid: &str,
    worker: &str,
    observed_fence: i64,
    ttl: Time,
    now: Time,
) -> Result<Lease, OpError> {
    let status = status_of(s, hid)?;
    // The status first: PROTOCOL §4's table refuses recover of a pending
    // or terminal handoff with StateError whatever its ownership row.
    if status == Status::Pending || status.is_terminal() {
        return Err(OpError::StateError(status));
    }
    if !is_orphaned(s, hid) {
        return Err(OpError::OwnershipLost);
    }
    let own = s.ownership.get_mut(hid).ok_or(OpError::OwnershipLost)?;
    if own.fence != observed_fence {
        return Err(OpError::OwnershipLost);
    }
    let fence = observed_fence + 1;
    *own = Ownership { holder: worker.to_string(), fence, lease_expires_at: now + ttl, ttl };
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Running;
    h.attempt += 1;
    h.runner = Some(worker.to_string());
    h.claimed_at = Some(now);
    h.fence = fence;
    Ok(Lease { hid: hid.to_string(), holder: worker.to_string(), fence })
}

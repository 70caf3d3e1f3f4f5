use super::{ownership_check, Lease, OpError};
use crate::state::{State, Status, Time};

/// §5.5 Release: after the ownership check, status `pending`, ownership row
/// deleted; checkpoints kept, the handoff can be claimed again.
/// [release-to-pending]
pub fn release(s: &mut State, lease: &Lease, now: Time) -> Result<(), OpError> {
    ownership_check(s, lease, now)?;
    s.ownership.remove(&lease.hid);
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Pending;
    h.runner = None;
    Ok(())
}

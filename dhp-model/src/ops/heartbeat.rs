use super::{ownership_check, Lease, OpError};
use crate::state::{State, Time};

/// §5.5 Heartbeat: after the ownership check, `lease_expires_at := now +`
/// the TTL stored in the row (not the caller's). Returns the time left.
/// [heartbeat-extends-lease]
pub fn heartbeat(s: &mut State, lease: &Lease, now: Time) -> Result<Time, OpError> {
    ownership_check(s, lease, now)?;
    let own = s.ownership.get_mut(&lease.hid).ok_or(OpError::FencingError)?;
    own.lease_expires_at = now + own.ttl;
    Ok(own.ttl)
}

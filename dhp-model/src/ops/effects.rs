use super::{ownership_check, Lease, OpError};
use crate::state::{State, Time};

/// §6.5 Record an effect: after the ownership check, `(hid, step_id)` →
/// result if absent; first write wins across attempts. Returns whether
/// this call recorded it. An empty step id is `ValidationError`.
/// [effects-first-write-wins]
pub fn record_effect(s: &mut State, lease: &Lease, step_id: &str, result: &str, now: Time) -> Result<bool, OpError> {
    ownership_check(s, lease, now)?;
    if step_id.is_empty() {
        return Err(OpError::ValidationError("empty step_id".into()));
    }
    let key = (lease.hid.clone(), step_id.to_string());
    if s.effects.contains_key(&key) {
        return Ok(false);
    }
    s.effects.insert(key, result.to_string());
    Ok(true)
}

/// §6.5 Note activity: after the ownership check, count repeats of the
/// same digest in a row (a different digest restarts at 1). Returns the
/// count. [stall-orphan-then-dlq]
pub fn note_activity(s: &mut State, lease: &Lease, digest: &str, now: Time) -> Result<u32, OpError> {
    ownership_check(s, lease, now)?;
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    let n = match &h.digest {
        Some((d, n)) if d == digest => n + 1,
        _ => 1,
    };
    h.digest = Some((digest.to_string(), n));
    Ok(n)
}

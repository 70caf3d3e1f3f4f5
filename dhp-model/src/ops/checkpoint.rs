use super::{ownership_check, Lease, OpError};
use crate::state::{Checkpoint, State, Time};

/// §6.2 Checkpoint: after the ownership check, a row with `seq = max + 1`
/// (0 for the first); resets the stall clock. Returns the seq.
/// \[fencing\] [no-lost-results]
///
/// `max_checkpoints` is `DHP_MAX_CHECKPOINTS` (`OversizePayload` in the
/// spec, the model's `ValidationError`).
pub fn checkpoint(s: &mut State, lease: &Lease, hash: &str, max_checkpoints: usize, now: Time) -> Result<i64, OpError> {
    ownership_check(s, lease, now)?;
    if s.checkpoints.get(&lease.hid).map_or(0, Vec::len) >= max_checkpoints {
        return Err(OpError::ValidationError("OversizePayload: DHP_MAX_CHECKPOINTS".into()));
    }
    let seq = s.next_seq(&lease.hid);
    s.checkpoints.entry(lease.hid.clone()).or_default().push(Checkpoint { seq, hash: hash.to_string() });
    if let Some(h) = s.handoffs.get_mut(&lease.hid) {
        h.last_checkpoint_at = Some(now);
        h.digest = None;
    }
    Ok(seq)
}

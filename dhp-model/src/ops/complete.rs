use super::{ownership_check, status_of, Lease, OpError};
use crate::state::{Delivery, State, Status, Time};

/// §6.3 Complete with a valid result: a no-op on a `completed` handoff
/// (the first result stands, whoever calls); otherwise after the ownership
/// check: status `completed`, the result in the outbox, ownership row
/// deleted. [idempotent-complete] [no-untyped-results] [no-lost-results]
pub fn complete(s: &mut State, lease: &Lease, result: &str, now: Time) -> Result<(), OpError> {
    if status_of(s, &lease.hid)? == Status::Completed {
        return Ok(());
    }
    ownership_check(s, lease, now)?;
    s.ownership.remove(&lease.hid);
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Completed;
    h.delivery = Some(Delivery { result: result.to_string(), completed_at: now, acked: false });
    Ok(())
}

/// §6.3 Complete with a result that violates `output_schema`: after the
/// ownership check, status `failed` (the DLQ), ownership row deleted, and
/// the caller gets `ValidationError` — bad output is a failure, not a
/// retry. [no-untyped-results]
///
/// On a `completed` handoff it is refused (`StateError`) and changes
/// nothing, as docs/state-machine.md's `fail` column says; §4 calls the
/// same outcome "completed (no-op)": the first result stands either way.
pub fn fail(s: &mut State, lease: &Lease, why: &str, now: Time) -> Result<(), OpError> {
    if status_of(s, &lease.hid)? == Status::Completed {
        return Err(OpError::StateError(Status::Completed));
    }
    ownership_check(s, lease, now)?;
    s.ownership.remove(&lease.hid);
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Failed;
    h.error = Some(format!("schema validation: {why}"));
    Err(OpError::ValidationError(why.to_string()))
}

/// §6.3 Ack: only in `completed` (else `StateError`); sets
/// `delivery.outbox.ack`. [ack-after-complete]
pub fn ack(s: &mut State, hid: &str) -> Result<(), OpError> {
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    match (h.status, h.delivery.as_mut()) {
        (Status::Completed, Some(d)) => {
            d.acked = true;
            Ok(())
        }
        (st, _) => Err(OpError::StateError(st)),
    }
}

use super::{status_of, OpError};
use crate::state::{Handoff, State, Status};

/// §4 / §10 Suspend: anyone; a `running` handoff becomes `suspended`
/// (suspending a suspended one writes the bundle again). The ownership row
/// stays: the holder's writes are refused because the status is not
/// running (§5.2 step 3). Returns the bundle: the handoff as written out.
/// [no-runner-lock-in] [suspend-resume-round-trip]
pub fn suspend(s: &mut State, hid: &str) -> Result<Handoff, OpError> {
    match status_of(s, hid)? {
        Status::Running | Status::Suspended => {}
        st => return Err(OpError::StateError(st)),
    }
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Suspended;
    Ok(h.clone())
}

/// §10 Resume a bundle on another root: the handoff enters this store as
/// `pending` with `attempt + 1`; a hid that exists here is `StateError`.
/// [cross-bundle] [suspend-resume-round-trip]
pub fn resume(s: &mut State, hid: &str, bundle: &Handoff) -> Result<(), OpError> {
    if let Some(h) = s.handoffs.get(hid) {
        return Err(OpError::StateError(h.status));
    }
    let mut h = Handoff::pending(bundle.budget.clone());
    h.attempt = bundle.attempt + 1;
    h.steps = bundle.steps;
    h.spend_micro = bundle.spend_micro;
    s.handoffs.insert(hid.to_string(), h);
    Ok(())
}

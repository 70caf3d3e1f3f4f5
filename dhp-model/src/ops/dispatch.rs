use super::OpError;
use crate::state::{Budget, Handoff, State};

/// §6.1 Dispatch: insert a pending handoff with its checkpoints emptied.
/// Re-dispatching a hid that exists changes nothing *(dhp-rs)*.
/// [no-crossed-inputs] [idempotent-dispatch]
///
/// The envelope's verification (§1.2) and size limit are dhp-oracle's and
/// dhp-conform's business; the model takes a verified envelope.
pub fn dispatch(s: &mut State, hid: &str, budget: Budget) -> Result<(), OpError> {
    if s.handoffs.contains_key(hid) {
        return Ok(());
    }
    s.handoffs.insert(hid.to_string(), Handoff::pending(budget));
    s.checkpoints.remove(hid);
    Ok(())
}

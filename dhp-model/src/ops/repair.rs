use super::{dead_letter, require_leader, status_of, OpError};
use crate::state::{Ownership, State, Status, Time, ORPHANED};

/// docs/torn-states.md Repairs R1–R6: the leader completes a transition a
/// crashed (or raced) two-statement write of the reference left half done.
/// `settled`: the ownership row was last written at least a lease TTL ago
/// (R2 waits for it). Returns the repair's name; a consistent handoff (or
/// one that must still wait) is refused with `StateError` and unchanged.
/// [—] (dhp-core/tests/it/torn/)
pub fn repair_torn(s: &mut State, sup: &str, hid: &str, settled: bool, now: Time) -> Result<&'static str, OpError> {
    require_leader(s, sup, now)?;
    let status = status_of(s, hid)?;
    let own = s.ownership.get(hid).cloned();
    let exec_fence = s.handoffs.get(hid).map_or(0, |h| h.fence);
    let tomb = |fence| Ownership { holder: ORPHANED.to_string(), fence, lease_expires_at: 0, ttl: 0 };
    let (name, new_own, orphan_it) = match (status, &own) {
        // R1: torn claim / torn release with an expired holder.
        (Status::Pending, Some(o)) if o.holder != ORPHANED && o.lease_expires_at < now => {
            ("torn-claim", Some(tomb(o.fence + 1)), true)
        }
        // R2: a settled tombstone beside pending or running.
        (Status::Pending | Status::Running, Some(o)) if o.holder == ORPHANED && settled => {
            ("torn-release/torn-orphan-unwritten", None, true)
        }
        // R3 / R4: the ownership row is gone.
        (Status::Running, None) => ("lost-ownership-row", Some(tomb(exec_fence + 1)), true),
        (Status::Orphaned, None) => ("lost-ownership-row", Some(tomb(exec_fence + 1)), false),
        // R5: orphaned beside an expired holder.
        (Status::Orphaned, Some(o)) if o.holder != ORPHANED && o.lease_expires_at < now => {
            ("torn-orphan", Some(tomb(o.fence + 1)), false)
        }
        // R6: a terminal status beside a row (a failed one beside its tombstone is the DLQ's).
        (Status::Completed, Some(_)) => ("torn-complete", None, false),
        (Status::Failed, Some(o)) if o.holder != ORPHANED => ("torn-complete", None, false),
        (st, _) => return Err(OpError::StateError(st)),
    };
    if name == "torn-complete" {
        s.ownership.remove(hid);
        return Ok(name);
    }
    if let Some(o) = new_own {
        s.ownership.insert(hid.to_string(), o);
    }
    if orphan_it {
        let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
        h.status = Status::Orphaned;
        h.stall_count = 0;
        dead_letter(s, hid)?;
    }
    Ok(name)
}

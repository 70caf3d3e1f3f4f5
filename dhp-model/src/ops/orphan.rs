use serde::{Deserialize, Serialize};

use super::{require_leader, status_of, OpError};
use crate::state::{State, Status, Time, ORPHANED};

/// Why the supervisor orphans a running handoff (§7.2, §7.4, §7.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum OrphanReason {
    /// `lease_expires_at < now` (§7.2).
    LeaseExpired,
    /// The holder is known dead (its liveness token was free, §7.5; in the
    /// judge: the harness's `Fact::Died`).
    WorkerDied,
    /// A live lease whose stall clock ran out or whose activity digest
    /// repeated (§7.4). The caller decides the stall; the model does not
    /// hold `DHP_STALL_TIMEOUT_S`.
    Stalled,
}

/// §7.2 / §7.4 / §7.5 Orphan: only the leader acts; only a `running`
/// handoff whose holder is not the tombstone; its lease must have expired
/// (`LeaseExpired`), or its holder be dead (`holder_dead`), or it stalled.
/// The compare-and-set of §5.4: `holder := __orphaned__`, `fence + 1`,
/// lease 0. Then [`dead_letter`] if its attempts (or stall retries) are
/// exhausted, else status `orphaned`. Returns the new status.
/// [leader-election] [no-lost-results] [dead-letter-queue]
/// [stall-orphan-then-dlq] [fast-death-detection]
pub fn orphan(
    s: &mut State,
    sup: &str,
    hid: &str,
    reason: OrphanReason,
    holder_dead: bool,
    now: Time,
) -> Result<Status, OpError> {
    require_leader(s, sup, now)?;
    let status = status_of(s, hid)?;
    if status != Status::Running {
        return Err(OpError::StateError(status));
    }
    let own = s.ownership.get(hid).filter(|o| o.holder != ORPHANED).ok_or(OpError::OwnershipLost)?;
    let allowed = match reason {
        OrphanReason::LeaseExpired => own.lease_expires_at < now,
        OrphanReason::WorkerDied => holder_dead,
        OrphanReason::Stalled => true,
    };
    if !allowed {
        // A live lease of a live holder: the orphan CAS must not fire.
        return Err(OpError::OwnershipLost);
    }
    let own = s.ownership.get_mut(hid).ok_or(OpError::OwnershipLost)?;
    own.holder = ORPHANED.to_string();
    own.fence += 1;
    own.lease_expires_at = 0;
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    h.status = Status::Orphaned;
    if reason == OrphanReason::Stalled {
        h.stall_count += 1;
    } else {
        h.stall_count = 0;
    }
    dead_letter(s, hid)
}

/// §7.2 / §7.4 Dead-letter: an orphan whose `attempt ≥ max_attempts`, or
/// whose `stall_count > max_stall_retries` (a livelock), goes to the DLQ
/// (`failed`); checkpoints are kept. Otherwise it stays `orphaned`.
/// Returns the status after. [dead-letter-queue] [stall-orphan-then-dlq]
pub fn dead_letter(s: &mut State, hid: &str) -> Result<Status, OpError> {
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    if h.status != Status::Orphaned {
        return Err(OpError::StateError(h.status));
    }
    if h.stall_count > h.budget.max_stall_retries {
        h.status = Status::Failed;
        h.error = Some("livelock: stall retries exhausted".into());
    } else if h.attempt >= h.budget.max_attempts {
        h.status = Status::Failed;
        h.error = Some(format!("lease expired; max_attempts={} exhausted → DLQ", h.budget.max_attempts));
    }
    Ok(h.status)
}

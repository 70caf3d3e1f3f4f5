//! Every operation of the protocol, one function each: preconditions
//! first (a refused operation returns the spec's error kind, §11, and
//! changes nothing), then the effect. Each cites the docs/PROTOCOL.md rule
//! it encodes and that rule's conformance \[tag\].

mod approval;
mod budget;
mod checkpoint;
mod claim;
mod complete;
mod dispatch;
mod effects;
mod heartbeat;
mod leader;
mod orphan;
mod recover;
mod release;
mod repair;
mod suspend;

pub use approval::{approval_expire, approval_request, decide};
pub use budget::{budget_kill, note_spend, note_step};
pub use checkpoint::checkpoint;
pub use claim::claim;
pub use complete::{ack, complete, fail};
pub use dispatch::dispatch;
pub use effects::{note_activity, record_effect};
pub use heartbeat::heartbeat;
pub use leader::{leader_acquire, leader_renew, leader_resign};
pub use orphan::{dead_letter, orphan, OrphanReason};
pub use recover::recover;
pub use release::release;
pub use repair::repair_torn;
pub use suspend::{resume, suspend};

use serde::{Deserialize, Serialize};

use crate::state::{State, Status, Time, ORPHANED};

/// The spec's error kinds (docs/PROTOCOL.md §11) an operation can refuse with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// The presented `(holder, fence)` is not the current owner (dhp-rs `StaleFence`).
    #[error("FencingError: the presented (holder, fence) is not the current owner")]
    FencingError,
    /// The presented token's lease ran out.
    #[error("LeaseLost: the lease ran out")]
    LeaseLost,
    /// Not allowed in the handoff's status (§4).
    #[error("StateError: not allowed in status {0}")]
    StateError(Status),
    /// Lost a claim or recover race.
    #[error("OwnershipLost: lost the claim or recover compare-and-set")]
    OwnershipLost,
    /// Over the step, spend or wall-clock budget (§6.4).
    #[error("BudgetExceeded")]
    BudgetExceeded,
    /// No handoff with that id.
    #[error("UnknownHandoff")]
    UnknownHandoff,
    /// Bad argument (negative spend, unknown action class, …).
    #[error("ValidationError: {0}")]
    ValidationError(String),
    /// A gated action awaits its decision (§6.6).
    #[error("ApprovalRequired")]
    ApprovalRequired,
    /// A gated action was denied or expired (§6.6).
    #[error("ApprovalDenied")]
    ApprovalDenied,
    /// A supervisor without a live term acts on nothing (§7.1: "Followers
    /// return an empty scan"); not an error kind of §11, the model's name
    /// for that empty answer.
    #[error("NotLeader: only the leader acts")]
    NotLeader,
}

/// What a worker presents with every mutation: the pair it got from claim
/// or recover (§5.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    /// The handoff.
    pub hid: String,
    /// The worker id.
    pub holder: String,
    /// The fence it was granted.
    pub fence: i64,
}

/// §5.2 The ownership check, in its order: the `(holder, fence)` row, then
/// the lease, then the status. \[fencing\] [lease-expiry-lease-lost]
pub fn ownership_check(s: &State, lease: &Lease, now: Time) -> Result<(), OpError> {
    let own = s.ownership.get(&lease.hid).filter(|o| o.holder == lease.holder && o.fence == lease.fence);
    let own = own.ok_or(OpError::FencingError)?;
    if own.lease_expires_at < now {
        return Err(OpError::LeaseLost);
    }
    let status = s.handoffs.get(&lease.hid).map(|h| h.status).ok_or(OpError::UnknownHandoff)?;
    if status != Status::Running {
        return Err(OpError::StateError(status));
    }
    Ok(())
}

/// §7.1 Only the leader acts: `sup` must hold a live term. [leader-election]
pub fn require_leader(s: &State, sup: &str, now: Time) -> Result<(), OpError> {
    if s.leads(sup, now) {
        Ok(())
    } else {
        Err(OpError::NotLeader)
    }
}

/// The holder of `hid`'s ownership row is the tombstone.
pub(crate) fn is_orphaned(s: &State, hid: &str) -> bool {
    s.ownership.get(hid).is_some_and(|o| o.holder == ORPHANED)
}

/// The status of `hid`, or `UnknownHandoff`.
pub(crate) fn status_of(s: &State, hid: &str) -> Result<Status, OpError> {
    s.handoffs.get(hid).map(|h| h.status).ok_or(OpError::UnknownHandoff)
}

#[cfg(test)]
mod ops_test;
#[cfg(test)]
mod table_test;

//! The protocol's state (docs/PROTOCOL.md §3–§7), on an integer clock.
//!
//! Time is [`Time`]: an integer count on the *store's* clock (§5, "Time"
//! in docs/state-machine.md) — microseconds in the judge, which converts
//! audited epoch seconds to it, small integer ticks in the model checker. Integer time keeps the state
//! `Eq + Hash`, which stateright needs.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The store's clock: microseconds (judge) or ticks (checker).
pub type Time = i64;

/// The ownership tombstone's holder (§5.4).
pub const ORPHANED: &str = "__orphaned__";

/// `execution.status` (§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Status {
    /// Dispatched or released, not owned.
    Pending,
    /// Owned by a worker.
    Running,
    /// Written out as a bundle; no worker may write.
    Suspended,
    /// Its holder was fenced out by the supervisor; awaiting recover.
    Orphaned,
    /// Terminal: a valid result.
    Completed,
    /// Terminal: the dead-letter queue.
    Failed,
}

impl Status {
    /// Every status, in docs/state-machine.md's row order.
    pub const ALL: [Status; 6] =
        [Status::Pending, Status::Running, Status::Suspended, Status::Orphaned, Status::Completed, Status::Failed];

    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Suspended => "suspended",
            Status::Orphaned => "orphaned",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }

    /// `completed` or `failed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Status::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| Error::UnknownStatus(s.to_string()))
    }
}

/// `contract.budget` (§6.4) and the retry limits (§7.2, §7.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// `max_steps`.
    pub max_steps: Option<i64>,
    /// `max_spend_usd`, in micro-dollars.
    pub max_spend_micro: Option<i64>,
    /// `max_wallclock_s`, as [`Time`].
    pub max_wall: Option<Time>,
    /// `max_attempts` (default 3).
    pub max_attempts: u32,
    /// `contract.max_stall_retries`.
    pub max_stall_retries: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { max_steps: None, max_spend_micro: None, max_wall: None, max_attempts: 3, max_stall_retries: 2 }
    }
}

/// What a completion delivered (§6.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Delivery {
    /// The result, as its sorted text (abstracted to a label in the checker).
    pub result: String,
    /// When it was accepted.
    pub completed_at: Time,
    /// `delivery.outbox.ack`.
    pub acked: bool,
}

/// One handoff's envelope, as far as the protocol's rules read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Handoff {
    /// `execution.status`.
    pub status: Status,
    /// `execution.attempt`: only recover and resume add to it (§5.3).
    pub attempt: u32,
    /// `contract.budget`.
    pub budget: Budget,
    /// `execution.steps`.
    pub steps: i64,
    /// `execution.spend_usd`, micro-dollars.
    pub spend_micro: i64,
    /// `execution.fence`: the fence of the last claim or recover.
    pub fence: i64,
    /// `execution.claimed_at`.
    pub claimed_at: Option<Time>,
    /// `execution.runner_id`.
    pub runner: Option<String>,
    /// `execution.stall_count`.
    pub stall_count: u32,
    /// The accepted result, once completed.
    pub delivery: Option<Delivery>,
    /// `execution.error` of a failed handoff.
    pub error: Option<String>,
    /// `progress.last_checkpoint_at` (the stall clock, §7.4).
    pub last_checkpoint_at: Option<Time>,
    /// `progress.last_digest` and `digest_repeat_count` (§6.5).
    pub digest: Option<(String, u32)>,
}

impl Handoff {
    /// A freshly dispatched handoff.
    pub fn pending(budget: Budget) -> Self {
        Handoff {
            status: Status::Pending,
            attempt: 0,
            budget,
            steps: 0,
            spend_micro: 0,
            fence: 0,
            claimed_at: None,
            runner: None,
            stall_count: 0,
            delivery: None,
            error: None,
            last_checkpoint_at: None,
            digest: None,
        }
    }

    /// Over budget at `now` (§6.4): steps or spend strictly over, or the
    /// wall clock since the claim strictly over.
    pub fn over_budget(&self, now: Time) -> bool {
        let b = &self.budget;
        b.max_steps.is_some_and(|m| self.steps > m)
            || b.max_spend_micro.is_some_and(|m| self.spend_micro > m)
            || matches!((b.max_wall, self.claimed_at), (Some(m), Some(c)) if now - c > m)
    }
}

/// The `ownership` row (§5.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ownership {
    /// The worker id, or [`ORPHANED`].
    pub holder: String,
    /// The fencing token: only grows for a row.
    pub fence: i64,
    /// `lease_expires_at`.
    pub lease_expires_at: Time,
    /// `heartbeat_interval_s × max_missed` stored at claim / recover.
    pub ttl: Time,
}

/// One checkpoint row (§6.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Checkpoint {
    /// 0, 1, 2, … without gaps.
    pub seq: i64,
    /// `state_hash`.
    pub hash: String,
}

/// The `leadership` row (§7.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Leadership {
    /// The leading supervisor.
    pub holder: String,
    /// The end of its term.
    pub expires_at: Time,
}

/// An approval's status (§6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ApprovalStatus {
    /// Awaiting a decision.
    Pending,
    /// Decided yes.
    Approved,
    /// Decided no.
    Denied,
    /// Not decided before `expires_at`.
    Expired,
}

/// One `approvals` row.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Approval {
    /// The handoff that asked.
    pub hid: String,
    /// `financial` or `destructive` (only gated classes get a row).
    pub class: String,
    /// Its status.
    pub status: ApprovalStatus,
    /// `expires_at`.
    pub expires_at: Time,
}

/// The whole store, as the protocol's rules read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct State {
    /// `handoffs`, by hid.
    pub handoffs: BTreeMap<String, Handoff>,
    /// `ownership`, by hid.
    pub ownership: BTreeMap<String, Ownership>,
    /// `checkpoints`, by hid, in seq order.
    pub checkpoints: BTreeMap<String, Vec<Checkpoint>>,
    /// The `leadership` row.
    pub leadership: Option<Leadership>,
    /// `approvals`, by approval id.
    pub approvals: BTreeMap<String, Approval>,
    /// `effects`: (hid, step_id) → result text; first write wins.
    pub effects: BTreeMap<(String, String), String>,
}

impl State {
    /// The dead-letter queue: the failed handoffs (§4).
    pub fn dlq(&self) -> impl Iterator<Item = &str> {
        self.handoffs.iter().filter(|(_, h)| h.status == Status::Failed).map(|(k, _)| k.as_str())
    }

    /// The next checkpoint seq of `hid` (§6.2: max + 1, 0 for the first).
    pub fn next_seq(&self, hid: &str) -> i64 {
        self.checkpoints.get(hid).and_then(|c| c.last()).map_or(0, |c| c.seq + 1)
    }

    /// Whether `sup` holds a live leadership term at `now` (§7.1).
    pub fn leads(&self, sup: &str, now: Time) -> bool {
        self.leadership.as_ref().is_some_and(|l| l.holder == sup && l.expires_at >= now)
    }
}

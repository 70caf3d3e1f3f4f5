//! The handoff status (`execution.status`) and its state machine, written
//! down once: [`Status::after`] is the table of `docs/state-machine.md`
//! (a unit test parses the document and compares, so they cannot drift).

use crate::error::{Error, Result};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The status of a handoff, as stored in `execution.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Dispatched, waiting for a worker.
    Pending,
    /// Claimed or recovered: a worker holds the lease.
    Running,
    /// Written to a bundle; continues where it is resumed.
    Suspended,
    /// The lease ran out or the worker died: waiting for a standby.
    Orphaned,
    /// Delivered a result that matches the output schema.
    Completed,
    /// Terminal: the dead-letter queue.
    Failed,
}

/// An operation that changes (or keeps) a handoff's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A worker claims a pending handoff.
    Claim,
    /// A fenced write by the holder: heartbeat, checkpoint, steps, spend,
    /// effects, activity, approvals, capability checks.
    Write,
    /// The holder hands the handoff back.
    Release,
    /// The holder completes with a valid result (a no-op when completed).
    Complete,
    /// The holder completes with a result that violates the schema.
    Fail,
    /// The parent acknowledges the result.
    Ack,
    /// The handoff is written to a bundle and parked.
    Suspend,
    /// A standby takes over an orphaned handoff.
    Recover,
    /// The supervisor orphans (lease expired, holder dead, stalled).
    Orphan,
    /// The supervisor would orphan, but the attempts or stall retries are
    /// exhausted.
    DeadLetter,
    /// The supervisor fails a handoff over its budget.
    BudgetKill,
}

impl Status {
    /// Every status, in the order of the document's table.
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

    /// `completed` or `failed`: nothing leaves these.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed)
    }

    /// The status of an envelope; `None` when absent or not one of ours
    /// (a foreign or damaged store).
    pub fn of(env: &Value) -> Option<Status> {
        env.pointer("/execution/status").and_then(Value::as_str).and_then(|s| s.parse().ok())
    }

    /// The state machine: the status after `op`, or `None` when `op` is
    /// refused in this status (and must change nothing).
    pub fn after(self, op: Op) -> Option<Status> {
        use Op::*;
        use Status::*;
        match (self, op) {
            (Pending, Claim) => Some(Running),
            (Running, Write) => Some(Running),
            (Running, Release) => Some(Pending),
            (Running, Complete) => Some(Completed),
            (Running, Fail) => Some(Failed),
            (Running, Suspend) | (Suspended, Suspend) => Some(Suspended),
            (Running, Orphan) => Some(Orphaned),
            (Running, DeadLetter) => Some(Failed),
            (Running, BudgetKill) | (Orphaned, BudgetKill) => Some(Failed),
            (Orphaned, Recover) => Some(Running),
            (Completed, Complete) | (Completed, Ack) => Some(Completed),
            _ => None,
        }
    }
}

impl Op {
    /// Every operation, in the order of the document's table.
    pub const ALL: [Op; 11] = [
        Op::Claim,
        Op::Write,
        Op::Release,
        Op::Complete,
        Op::Fail,
        Op::Ack,
        Op::Suspend,
        Op::Recover,
        Op::Orphan,
        Op::DeadLetter,
        Op::BudgetKill,
    ];

    /// The column name in `docs/state-machine.md`.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Claim => "claim",
            Op::Write => "write",
            Op::Release => "release",
            Op::Complete => "complete",
            Op::Fail => "fail",
            Op::Ack => "ack",
            Op::Suspend => "suspend",
            Op::Recover => "recover",
            Op::Orphan => "orphan",
            Op::DeadLetter => "dead_letter",
            Op::BudgetKill => "budget_kill",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| Error::validation(format!("unknown handoff status {s:?}")))
    }
}

/// The status of an approval request (the `approvals` table's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved: the gated action may run.
    Approved,
    /// Denied.
    Denied,
    /// Not decided before its expiry.
    Expired,
}

/// What happens to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalOp {
    /// The human or policy side approves.
    Approve,
    /// The human or policy side denies.
    Deny,
    /// Its expiry passed undecided.
    Expire,
}

impl ApprovalStatus {
    /// Every approval status.
    pub const ALL: [ApprovalStatus; 4] =
        [ApprovalStatus::Pending, ApprovalStatus::Approved, ApprovalStatus::Denied, ApprovalStatus::Expired];

    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
        }
    }

    /// The state machine: a pending request is decided or expires once;
    /// every decision is final (`None`: refused, nothing changes).
    pub fn after(self, op: ApprovalOp) -> Option<ApprovalStatus> {
        (self == ApprovalStatus::Pending).then_some(op.outcome())
    }

    /// The status as it stands at `now` for a request expiring at
    /// `expires_at`: a pending request past its expiry is expired, whether
    /// or not a supervisor has written that yet.
    pub fn at(self, expires_at: f64, now: f64) -> ApprovalStatus {
        match self {
            ApprovalStatus::Pending if now > expires_at => ApprovalStatus::Expired,
            st => st,
        }
    }
}

impl ApprovalOp {
    /// The status a pending request moves to.
    pub fn outcome(self) -> ApprovalStatus {
        match self {
            ApprovalOp::Approve => ApprovalStatus::Approved,
            ApprovalOp::Deny => ApprovalStatus::Denied,
            ApprovalOp::Expire => ApprovalStatus::Expired,
        }
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalStatus {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ApprovalStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| Error::validation(format!("unknown approval status {s:?}")))
    }
}

/// Compare with stored or wire text (`status == "expired"`).
impl PartialEq<&str> for ApprovalStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ApprovalStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = include_str!("../../docs/state-machine.md");

    /// The rows of the document's transition table: status, then one cell
    /// per operation (`—` = refused).
    fn doc_table() -> (Vec<String>, Vec<Vec<String>>) {
        let rows: Vec<Vec<String>> = DOC
            .lines()
            .skip_while(|l| !l.starts_with("| status"))
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.trim().trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').to_string()).collect())
            .collect();
        assert!(rows.len() > 2, "docs/state-machine.md has no transition table");
        let header = rows[0][1..].to_vec();
        (header, rows[2..].to_vec())
    }

    #[test]
    fn the_code_follows_the_documented_table() {
        let (header, rows) = doc_table();
        let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(header, ops, "the document's columns are the operations, in order");
        let statuses: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        let want: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(statuses, want, "the document's rows are the statuses, in order");
        for (row, st) in rows.iter().zip(Status::ALL) {
            for (cell, op) in row[1..].iter().zip(Op::ALL) {
                let code = st.after(op).map_or("—", Status::as_str);
                assert_eq!(cell, code, "{st} × {}: document says {cell}, code says {code}", op.as_str());
            }
        }
    }

    #[test]
    fn an_approval_is_decided_once_and_expires_only_while_pending() {
        use ApprovalOp::*;
        use ApprovalStatus::*;
        for st in ApprovalStatus::ALL {
            assert_eq!(st.as_str().parse::<ApprovalStatus>().unwrap(), st);
            for op in [Approve, Deny, Expire] {
                assert_eq!(st.after(op).is_some(), st == Pending, "{st} × {op:?}");
            }
            assert_eq!(st.at(10.0, 11.0), if st == Pending { Expired } else { st });
            assert_eq!(st.at(10.0, 10.0), st, "at its expiry instant a request is still {st}");
        }
        assert_eq!(Pending.after(Approve), Some(Approved));
        assert_eq!(Pending.after(Deny), Some(Denied));
        assert_eq!(Pending.after(Expire), Some(Expired));
        assert!("Pending".parse::<ApprovalStatus>().is_err());
    }

    #[test]
    fn text_round_trips_and_unknown_text_is_an_error() {
        for st in Status::ALL {
            assert_eq!(st.as_str().parse::<Status>().unwrap(), st);
        }
        assert!("dead_letter".parse::<Status>().is_err());
        assert!("".parse::<Status>().is_err());
        assert_eq!(Status::of(&serde_json::json!({"execution": {"status": "weird"}})), None);
        assert!(Status::ALL
            .iter()
            .filter(|s| s.is_terminal())
            .all(|s| Op::ALL.iter().all(|o| { s.after(*o).is_none_or(|n| n == *s) })));
    }
}

//! What a supervisor pass did, typed: one [`ScanAction`] per handoff it
//! acted on (or looked at and left).
//!
//! The JSON form ([`ScanAction::to_json`], also its `Serialize` and
//! `Display`) is an interop surface: it is the `supervise` line of `dhp
//! supervisor --history`, the `actions` of `dhp supervisor` and of the
//! conformance adapter's `scan`, shared with the reference (dhp-protocol
//! 1.3.0). It is built key by key in the order the supervisor has always
//! written, so the bytes do not change. [`ScanAction::from_json`] reads it
//! back, with an error (never a panic) for a line that is not one.

use super::repair::Torn;
use super::OrphanReason;
use crate::error::{Error, Result};
use crate::lease::Fence;
use crate::status::Status;
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};
use std::fmt;
use std::str::FromStr;

/// The `action` field: what was done (or found).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionKind {
    /// Orphaned: a standby may recover it.
    Orphaned,
    /// Dead-lettered (status failed): attempts or stall retries exhausted.
    Dlq,
    /// Nothing done: another writer orphaned, released or finished it first.
    AlreadyOrphanedOrReleased,
    /// Failed closed for an exhausted budget.
    BudgetKilled,
    /// Nothing done: the budget holds after all.
    WithinBudget,
    /// Nothing done: not in a status a budget kill applies to.
    AlreadyTerminal,
    /// A torn state repaired.
    Repaired,
    /// Nothing done: the torn state changed before the repair's lock.
    RepairSkipped,
    /// A row the pass cannot handle, reported and skipped.
    Quarantined,
    /// Nothing done: this supervisor's leadership term was no longer live
    /// in the store when its orphan's transaction ran (§7.1).
    NotLeader,
}

impl ActionKind {
    /// Every kind.
    pub const ALL: [ActionKind; 10] = [
        ActionKind::Orphaned,
        ActionKind::Dlq,
        ActionKind::AlreadyOrphanedOrReleased,
        ActionKind::BudgetKilled,
        ActionKind::WithinBudget,
        ActionKind::AlreadyTerminal,
        ActionKind::Repaired,
        ActionKind::RepairSkipped,
        ActionKind::Quarantined,
        ActionKind::NotLeader,
    ];

    /// The text of the `action` field.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Orphaned => "orphaned",
            ActionKind::Dlq => "dlq",
            ActionKind::AlreadyOrphanedOrReleased => "already-orphaned-or-released",
            ActionKind::BudgetKilled => "budget-killed",
            ActionKind::WithinBudget => "within-budget",
            ActionKind::AlreadyTerminal => "already-terminal",
            ActionKind::Repaired => "repaired",
            ActionKind::RepairSkipped => "repair-skipped",
            ActionKind::Quarantined => "quarantined",
            ActionKind::NotLeader => "not-leader",
        }
    }

    /// An outcome that changed nothing (not reported by a pass).
    pub fn is_no_op(self) -> bool {
        matches!(
            self,
            ActionKind::AlreadyOrphanedOrReleased
                | ActionKind::WithinBudget
                | ActionKind::RepairSkipped
                | ActionKind::NotLeader
        )
    }

    /// An orphan or a dead-letter: the orphan rule's two outcomes.
    pub fn is_orphan_rule(self) -> bool {
        matches!(self, ActionKind::Orphaned | ActionKind::Dlq)
    }
}

impl FromStr for ActionKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ActionKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| Error::validation(format!("unknown supervisor action {s:?}")))
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OrphanReason {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        [OrphanReason::LeaseExpired, OrphanReason::WorkerDied, OrphanReason::Stalled]
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| Error::validation(format!("unknown orphan reason {s:?}")))
    }
}

impl FromStr for Torn {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Torn::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| Error::validation(format!("unknown torn state {s:?}")))
    }
}

/// The times an orphan's spans are built from (tracing on).
#[derive(Debug, Clone, Copy)]
pub(super) struct Stamps {
    /// The dead attempt's claim (store seconds), if the envelope had it.
    pub claimed_at: Option<f64>,
    /// The orphan's own time (store seconds, read in its transaction).
    pub orphaned_at: Option<f64>,
    /// When the orphan's transaction began (unix ns, this host).
    pub orphan_start_ns: u64,
}

/// The orphan rule applied: orphaned, or dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphaning {
    /// The handoff.
    pub hid: String,
    /// The next checkpoint seq the orphan's transaction saw (seqs below it
    /// were committed before the orphan).
    pub checkpoints: i64,
    /// Why.
    pub reason: OrphanReason,
    /// The holder that lost it.
    pub previous_holder: String,
    /// Its fence.
    pub previous_fence: Fence,
    /// The tombstone's fence (previous + 1).
    pub fence: Fence,
    /// `true`: dead-lettered (status failed); `false`: orphaned.
    pub dead_lettered: bool,
    /// The envelope's attempt count.
    pub attempt: i64,
    /// The stall count, reported when a stall dead-letters.
    pub stall_count: Option<i64>,
}

/// A torn state repaired (see [`super::repair`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// The handoff.
    pub hid: String,
    /// Which torn combination.
    pub torn: Torn,
    /// The status the pass saw.
    pub status_before: Status,
    /// The ownership row's holder before, if there was a row.
    pub holder_before: Option<String>,
    /// Its fence.
    pub fence_before: Option<Fence>,
    /// The attempt count, when the repair went through the orphan rule.
    pub attempt: Option<i64>,
    /// The status after.
    pub status: Status,
    /// The holder after (the tombstone), if a row is left.
    pub holder: Option<String>,
    /// Its fence.
    pub fence: Option<Fence>,
}

/// One action of a supervisor pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanAction {
    /// Orphaned or dead-lettered by the orphan rule.
    Orphan(Orphaning),
    /// Failed closed for an exhausted budget.
    BudgetKilled {
        /// The handoff.
        hid: String,
        /// What ran out.
        reasons: Vec<String>,
    },
    /// A torn state repaired.
    Repaired(Repair),
    /// A row the pass cannot handle.
    Quarantined {
        /// The handoff.
        hid: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Looked at, nothing done: `kind` says why (one of the no-op kinds or
    /// `already-terminal`).
    Untouched {
        /// The handoff.
        hid: String,
        /// [`ActionKind::AlreadyOrphanedOrReleased`],
        /// [`ActionKind::WithinBudget`], [`ActionKind::AlreadyTerminal`] or
        /// [`ActionKind::RepairSkipped`].
        kind: ActionKind,
    },
}

impl ScanAction {
    /// The handoff acted on.
    pub fn hid(&self) -> &str {
        match self {
            ScanAction::Orphan(o) => &o.hid,
            ScanAction::Repaired(r) => &r.hid,
            ScanAction::BudgetKilled { hid, .. }
            | ScanAction::Quarantined { hid, .. }
            | ScanAction::Untouched { hid, .. } => hid,
        }
    }

    /// The `action` field.
    pub fn kind(&self) -> ActionKind {
        match self {
            ScanAction::Orphan(o) if o.dead_lettered => ActionKind::Dlq,
            ScanAction::Orphan(_) => ActionKind::Orphaned,
            ScanAction::BudgetKilled { .. } => ActionKind::BudgetKilled,
            ScanAction::Repaired(_) => ActionKind::Repaired,
            ScanAction::Quarantined { .. } => ActionKind::Quarantined,
            ScanAction::Untouched { kind, .. } => *kind,
        }
    }

    /// The JSON the supervisor reports (keys in their historical order).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("hid".into(), json!(self.hid()));
        match self {
            ScanAction::Orphan(o) => {
                m.insert("checkpoints".into(), json!(o.checkpoints));
                m.insert("reason".into(), json!(o.reason.as_str()));
                m.insert("previous_holder".into(), json!(o.previous_holder));
                m.insert("previous_fence".into(), json!(o.previous_fence));
                m.insert("fence".into(), json!(o.fence));
                m.insert("action".into(), json!(self.kind().as_str()));
                m.insert("attempt".into(), json!(o.attempt));
                if let Some(n) = o.stall_count {
                    m.insert("stall_count".into(), json!(n));
                }
            }
            ScanAction::BudgetKilled { reasons, .. } => {
                m.insert("action".into(), json!(self.kind().as_str()));
                m.insert("reasons".into(), json!(reasons));
            }
            ScanAction::Repaired(r) => {
                m.insert("action".into(), json!(self.kind().as_str()));
                m.insert("torn".into(), json!(r.torn.as_str()));
                m.insert("status_before".into(), json!(r.status_before.as_str()));
                m.insert("holder_before".into(), json!(r.holder_before));
                m.insert("fence_before".into(), json!(r.fence_before));
                if let Some(a) = r.attempt {
                    m.insert("attempt".into(), json!(a));
                }
                m.insert("status".into(), json!(r.status.as_str()));
                m.insert("holder".into(), json!(r.holder));
                m.insert("fence".into(), json!(r.fence));
            }
            ScanAction::Quarantined { reason, .. } => {
                m.insert("action".into(), json!(self.kind().as_str()));
                m.insert("reason".into(), json!(reason));
            }
            ScanAction::Untouched { kind, .. } => {
                m.insert("action".into(), json!(kind.as_str()));
            }
        }
        Value::Object(m)
    }

    /// Read an action back from its JSON (a history line may carry more
    /// fields; they are ignored). A missing or mistyped field, or an
    /// unknown action, is an error.
    pub fn from_json(v: &Value) -> Result<ScanAction> {
        let bad = |what: &str| Error::validation(format!("supervisor action: {what}"));
        let text = |k: &str| v.get(k).and_then(Value::as_str).ok_or_else(|| bad(&format!("no string {k:?}")));
        let int = |k: &str| v.get(k).and_then(Value::as_i64).ok_or_else(|| bad(&format!("no integer {k:?}")));
        let opt_int = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_i64().map(Some).ok_or_else(|| bad(&format!("{k:?} is not an integer"))),
        };
        let opt_text = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_str().map(|s| Some(s.to_string())).ok_or_else(|| bad(&format!("{k:?} is not a string"))),
        };
        let hid = text("hid")?.to_string();
        let kind: ActionKind = text("action")?.parse()?;
        Ok(match kind {
            ActionKind::Orphaned | ActionKind::Dlq => ScanAction::Orphan(Orphaning {
                hid,
                checkpoints: int("checkpoints")?,
                reason: text("reason")?.parse()?,
                previous_holder: text("previous_holder")?.to_string(),
                previous_fence: int("previous_fence")?.into(),
                fence: int("fence")?.into(),
                dead_lettered: kind == ActionKind::Dlq,
                attempt: int("attempt")?,
                stall_count: opt_int("stall_count")?,
            }),
            ActionKind::BudgetKilled => {
                let reasons = v.get("reasons").and_then(Value::as_array).ok_or_else(|| bad("no array \"reasons\""))?;
                let reasons = reasons
                    .iter()
                    .map(|r| r.as_str().map(String::from).ok_or_else(|| bad("a reason is not a string")))
                    .collect::<Result<_>>()?;
                ScanAction::BudgetKilled { hid, reasons }
            }
            ActionKind::Repaired => ScanAction::Repaired(Repair {
                hid,
                torn: text("torn")?.parse()?,
                status_before: text("status_before")?.parse()?,
                holder_before: opt_text("holder_before")?,
                fence_before: opt_int("fence_before")?.map(Fence::new),
                attempt: opt_int("attempt")?,
                status: text("status")?.parse()?,
                holder: opt_text("holder")?,
                fence: opt_int("fence")?.map(Fence::new),
            }),
            ActionKind::Quarantined => ScanAction::Quarantined { hid, reason: text("reason")?.to_string() },
            kind => ScanAction::Untouched { hid, kind },
        })
    }
}

impl Serialize for ScanAction {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl fmt::Display for ScanAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

impl From<&ScanAction> for Value {
    fn from(a: &ScanAction) -> Value {
        a.to_json()
    }
}

impl From<ScanAction> for Value {
    fn from(a: ScanAction) -> Value {
        a.to_json()
    }
}

/// Callers that collect actions as JSON (the conformance adapter's mutant
/// scans mix the supervisor's actions with their own) extend a JSON list
/// with typed actions directly.
impl Extend<ScanAction> for Vec<Value> {
    fn extend<I: IntoIterator<Item = ScanAction>>(&mut self, iter: I) {
        for a in iter {
            self.push(a.to_json());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<ScanAction> {
        let orphan = Orphaning {
            hid: "h1".into(),
            checkpoints: 4,
            reason: OrphanReason::Stalled,
            previous_holder: "w1".into(),
            previous_fence: Fence::new(2),
            fence: Fence::new(3),
            dead_lettered: true,
            attempt: 1,
            stall_count: Some(3),
        };
        let repair = Repair {
            hid: "h2".into(),
            torn: Torn::Claim,
            status_before: Status::Pending,
            holder_before: Some("w".into()),
            fence_before: Some(Fence::new(5)),
            attempt: Some(0),
            status: Status::Orphaned,
            holder: Some("__orphaned__".into()),
            fence: Some(Fence::new(6)),
        };
        vec![
            ScanAction::Orphan(orphan.clone()),
            ScanAction::Orphan(Orphaning { dead_lettered: false, stall_count: None, ..orphan }),
            ScanAction::BudgetKilled { hid: "h3".into(), reasons: vec!["steps 5 > max_steps 4".into()] },
            ScanAction::Repaired(repair.clone()),
            ScanAction::Repaired(Repair {
                torn: Torn::LostRow,
                attempt: None,
                holder_before: None,
                fence_before: None,
                ..repair
            }),
            ScanAction::Quarantined { hid: "h4".into(), reason: "unknown status \"weird\"".into() },
            ScanAction::Untouched { hid: "h5".into(), kind: ActionKind::AlreadyTerminal },
        ]
    }

    /// The bytes the supervisor wrote before the actions were typed (its
    /// `json!` literals, keys in insertion order).
    #[test]
    fn the_json_is_the_historical_bytes() {
        let want = [
            r#"{"hid":"h1","checkpoints":4,"reason":"stalled","previous_holder":"w1","previous_fence":2,"fence":3,"action":"dlq","attempt":1,"stall_count":3}"#,
            r#"{"hid":"h1","checkpoints":4,"reason":"stalled","previous_holder":"w1","previous_fence":2,"fence":3,"action":"orphaned","attempt":1}"#,
            r#"{"hid":"h3","action":"budget-killed","reasons":["steps 5 > max_steps 4"]}"#,
            r#"{"hid":"h2","action":"repaired","torn":"torn-claim","status_before":"pending","holder_before":"w","fence_before":5,"attempt":0,"status":"orphaned","holder":"__orphaned__","fence":6}"#,
            r#"{"hid":"h2","action":"repaired","torn":"lost-ownership-row","status_before":"pending","holder_before":null,"fence_before":null,"status":"orphaned","holder":"__orphaned__","fence":6}"#,
            r#"{"hid":"h4","action":"quarantined","reason":"unknown status \"weird\""}"#,
            r#"{"hid":"h5","action":"already-terminal"}"#,
        ];
        for (a, w) in samples().iter().zip(want) {
            assert_eq!(a.to_string(), w);
            assert_eq!(serde_json::to_string(a).unwrap(), w);
        }
    }

    #[test]
    fn json_reads_back_and_bad_lines_are_errors() {
        for a in samples() {
            let mut line = a.to_json();
            line["op"] = json!("supervise");
            assert_eq!(ScanAction::from_json(&line).unwrap(), a, "{line}");
        }
        for bad in [
            json!({}),
            json!({"hid": "h", "action": "vanished"}),
            json!({"hid": "h", "action": "orphaned"}),
            json!({"hid": "h", "action": "orphaned", "checkpoints": 1, "reason": "bored", "previous_holder": "w",
                   "previous_fence": 1, "fence": 2, "attempt": 0}),
            json!({"hid": "h", "action": "budget-killed", "reasons": [1]}),
            json!({"hid": 7, "action": "quarantined", "reason": "x"}),
        ] {
            assert!(ScanAction::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds_round_trip_and_no_ops_are_the_four() {
        for k in ActionKind::ALL {
            assert_eq!(k.as_str().parse::<ActionKind>().unwrap(), k);
        }
        let no_ops: Vec<&str> = ActionKind::ALL.iter().filter(|k| k.is_no_op()).map(|k| k.as_str()).collect();
        assert_eq!(no_ops, ["already-orphaned-or-released", "within-budget", "repair-skipped", "not-leader"]);
    }
}

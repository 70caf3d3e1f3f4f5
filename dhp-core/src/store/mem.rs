//! An in-memory backend: the second implementation of [`Backend`]/[`Tx`],
//! proof that the protocol logic needs nothing SQLite-specific (a Postgres
//! backend fits the same way), and a fast store for tests.
//!
//! A transaction works on a copy of the whole state and swaps it in on
//! commit, under one lock: serializable, and an error (or panic) leaves the
//! store as it was. Nothing survives the process.

use super::{
    Approval, Backend, BudgetUsage, CapabilityAudit, CheckpointRow, Leadership, Mode, Ownership, Progress, Tx,
};
use crate::envelope::{self, ORPHANED_HOLDER};
use crate::error::Result;
use crate::status::{ApprovalOp, Status};
use crate::store_time::StoreTime;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Default)]
struct State {
    /// hid → envelope text (as the SQLite store keeps it).
    handoffs: BTreeMap<String, String>,
    checkpoints: BTreeMap<String, BTreeMap<i64, CheckpointRow>>,
    ownership: BTreeMap<String, Ownership>,
    leadership: Option<Leadership>,
    effects: BTreeMap<(String, String), String>,
    approvals: BTreeMap<String, Approval>,
    progress: BTreeMap<String, Progress>,
    audit: BTreeMap<String, Vec<CapabilityAudit>>,
}

/// The in-memory store.
#[derive(Debug, Default)]
pub struct MemStore {
    state: Mutex<State>,
}

impl MemStore {
    /// An empty store (no schema to create: the tables are maps).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Backend for MemStore {
    fn transact(&self, mode: Mode, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut tx = MemTx { s: guard.clone() };
        f(&mut tx)?;
        if mode == Mode::Write {
            *guard = tx.s;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

struct MemTx {
    s: State,
}

impl MemTx {
    /// The handoff's status; `None` when absent, unreadable or unknown.
    fn status_of(&self, hid: &str) -> Option<Status> {
        Status::of(&super::deep::parse(self.s.handoffs.get(hid)?).ok()?)
    }

    fn with_status(&self, status: Status) -> Vec<String> {
        self.s.handoffs.keys().filter(|h| self.status_of(h) == Some(status)).cloned().collect()
    }

    fn running(&self) -> Vec<String> {
        self.with_status(Status::Running)
    }
}

impl Tx for MemTx {
    fn envelope(&mut self, hid: &str) -> Result<Option<Value>> {
        self.s.handoffs.get(hid).map(|t| super::deep::parse(t)).transpose()
    }

    fn status(&mut self, hid: &str) -> Result<Option<String>> {
        match self.s.handoffs.get(hid) {
            None => Ok(None),
            Some(t) => Ok(Some(envelope::status(&super::deep::parse(t)?).to_string())),
        }
    }

    fn insert_envelope(&mut self, hid: &str, envelope_json: &str, _now: StoreTime) -> Result<bool> {
        if self.s.handoffs.contains_key(hid) {
            return Ok(false);
        }
        self.s.handoffs.insert(hid.into(), envelope_json.into());
        Ok(true)
    }

    fn update_envelope(&mut self, hid: &str, envelope_json: &str, _now: StoreTime) -> Result<bool> {
        match self.s.handoffs.get_mut(hid) {
            Some(t) => {
                *t = envelope_json.into();
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn all_hids(&mut self) -> Result<Vec<String>> {
        Ok(self.s.handoffs.keys().cloned().collect())
    }

    fn hids_with_status(&mut self, status: Status) -> Result<Vec<String>> {
        Ok(self.with_status(status))
    }

    fn running_budgets(&mut self) -> Result<Vec<BudgetUsage>> {
        self.running().iter().map(|h| Ok(BudgetUsage::of_envelope(&super::deep::parse(&self.s.handoffs[h])?))).collect()
    }

    fn next_seq(&mut self, hid: &str) -> Result<i64> {
        Ok(self.s.checkpoints.get(hid).and_then(|m| m.keys().next_back()).map_or(0, |s| s + 1))
    }

    fn insert_checkpoint(&mut self, hid: &str, row: &CheckpointRow) -> Result<bool> {
        let rows = self.s.checkpoints.entry(hid.into()).or_default();
        if rows.contains_key(&row.seq) {
            return Ok(false);
        }
        rows.insert(row.seq, row.clone());
        Ok(true)
    }

    fn last_checkpoint(&mut self, hid: &str) -> Result<Option<CheckpointRow>> {
        Ok(self.s.checkpoints.get(hid).and_then(|m| m.values().next_back()).cloned())
    }

    fn checkpoints(&mut self, hid: &str) -> Result<Vec<CheckpointRow>> {
        Ok(self.s.checkpoints.get(hid).map(|m| m.values().cloned().collect()).unwrap_or_default())
    }

    fn checkpoint_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.s.checkpoints.get(hid).map_or(0, |m| m.len() as i64))
    }

    fn ownership(&mut self, hid: &str) -> Result<Option<Ownership>> {
        Ok(self.s.ownership.get(hid).cloned())
    }

    fn insert_ownership(&mut self, o: &Ownership, _now: StoreTime) -> Result<bool> {
        if self.s.ownership.contains_key(&o.hid) {
            return Ok(false);
        }
        self.s.ownership.insert(o.hid.clone(), o.clone());
        Ok(true)
    }

    fn update_ownership(&mut self, o: &Ownership, _now: StoreTime) -> Result<bool> {
        match self.s.ownership.get_mut(&o.hid) {
            Some(cur) => {
                *cur = o.clone();
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn delete_ownership(&mut self, hid: &str) -> Result<()> {
        self.s.ownership.remove(hid);
        Ok(())
    }

    fn expired_leases(&mut self, now: StoreTime) -> Result<Vec<String>> {
        let now = now.secs();
        let running = self.running();
        Ok(running.into_iter().filter(|h| self.s.ownership.get(h).is_some_and(|o| o.lease_expires_at < now)).collect())
    }

    fn held_ownerships(&mut self) -> Result<Vec<Ownership>> {
        Ok(self.s.ownership.values().filter(|o| o.holder != ORPHANED_HOLDER).cloned().collect())
    }

    fn leadership(&mut self) -> Result<Option<Leadership>> {
        Ok(self.s.leadership.clone())
    }

    fn put_leadership(&mut self, l: &Leadership, _now: StoreTime) -> Result<()> {
        self.s.leadership = Some(l.clone());
        Ok(())
    }

    fn insert_effect(&mut self, hid: &str, step_id: &str, result_json: &str, _now: StoreTime) -> Result<bool> {
        let key = (hid.to_string(), step_id.to_string());
        if self.s.effects.contains_key(&key) {
            return Ok(false);
        }
        self.s.effects.insert(key, result_json.into());
        Ok(true)
    }

    fn effect(&mut self, hid: &str, step_id: &str) -> Result<Option<String>> {
        Ok(self.s.effects.get(&(hid.to_string(), step_id.to_string())).cloned())
    }

    fn effect_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.s.effects.keys().filter(|(h, _)| h == hid).count() as i64)
    }

    fn insert_approval(&mut self, a: &Approval) -> Result<()> {
        self.s.approvals.insert(a.approval_id.clone(), a.clone());
        Ok(())
    }

    fn approval(&mut self, approval_id: &str) -> Result<Option<Approval>> {
        Ok(self.s.approvals.get(approval_id).cloned())
    }

    fn decide_approval(&mut self, approval_id: &str, op: ApprovalOp, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        match self.s.approvals.get_mut(approval_id) {
            Some(a) => Ok(decide(a, op, now)),
            None => Ok(false),
        }
    }

    fn expire_approvals(&mut self, now: StoreTime) -> Result<usize> {
        let now = now.secs();
        let mut n = 0;
        for a in self.s.approvals.values_mut().filter(|a| a.expires_at < now) {
            n += usize::from(decide(a, ApprovalOp::Expire, now));
        }
        Ok(n)
    }

    fn approvals_for(&mut self, hid: &str) -> Result<Vec<Approval>> {
        let mut v: Vec<Approval> = self.s.approvals.values().filter(|a| a.hid == hid).cloned().collect();
        v.sort_by(|a, b| a.created_at.total_cmp(&b.created_at));
        Ok(v)
    }

    fn progress(&mut self, hid: &str) -> Result<Option<Progress>> {
        Ok(self.s.progress.get(hid).cloned())
    }

    fn put_progress(&mut self, hid: &str, p: &Progress, _now: StoreTime) -> Result<()> {
        self.s.progress.insert(hid.into(), p.clone());
        Ok(())
    }

    fn stalled(&mut self, now: StoreTime, cutoff: StoreTime, max_repeats: i64) -> Result<Vec<String>> {
        let now = now.secs();
        let cutoff = cutoff.secs();
        let running = self.running();
        Ok(running
            .into_iter()
            .filter(|h| self.s.ownership.get(h).is_some_and(|o| o.lease_expires_at >= now))
            .filter(|h| {
                self.s.progress.get(h).is_some_and(|p| {
                    p.last_checkpoint_at.is_some_and(|t| t < cutoff) || p.digest_repeat_count >= max_repeats
                })
            })
            .collect())
    }

    fn insert_capability_audit(&mut self, hid: &str, a: &CapabilityAudit) -> Result<()> {
        self.s.audit.entry(hid.into()).or_default().push(a.clone());
        Ok(())
    }

    fn capability_audit(&mut self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        Ok(self.s.audit.get(hid).cloned().unwrap_or_default())
    }
}

/// Apply `op` to `a` by the approval state machine; `true` if it moved.
fn decide(a: &mut Approval, op: ApprovalOp, now: f64) -> bool {
    match a.status.after(op) {
        Some(next) => {
            a.status = next;
            a.decided_at = Some(now);
            true
        }
        None => false,
    }
}

//! Lifecycle: dispatch, claim, recover, heartbeat, checkpoint, budget
//! counters, release, complete, ack.

use super::one_trip;
use super::{
    budget_violation, check_owner_as, checked_state, envelope_text, exec_mut, load, save, state_err, LiveLease, Runner,
    TaskContext,
};
use crate::clock::Clock;
use crate::config::{self, Config};
use crate::envelope::{self, ORPHANED_HOLDER};
use crate::error::{Error, Result};
use crate::events::{Ended, Event, Start};
use crate::failpoint;
use crate::id::WorkerId;
use crate::id::{HandoffId, ToHandoffId};
use crate::json;
use crate::lease::Fence;
use crate::lease::Lease;
use crate::status::{Op, Status};
use crate::store::{CheckpointRow, Ownership, Tx};
use serde_json::{json, Value};
use std::time::Duration;

impl Runner {
    /// Accept an envelope: identity and input binding verified, status
    /// pending. Re-dispatching the same envelope returns its id unchanged.
    pub fn dispatch(&self, env: &Value) -> Result<String> {
        let (hid, text) = prepare_dispatch(env, &self.cfg)?;
        self.write(|tx| {
            tx.insert_envelope(hid.as_str(), &text, self.cfg.clock.store_time())?;
            Ok(())
        })?;
        tracing::info!(hid = hid.short(), kind = ?env.pointer("/task/kind"), "dispatch");
        Ok(hid.into())
    }

    /// Claim a pending handoff: ownership row with fence 0, status running.
    pub fn claim(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<TaskContext> {
        let hid = hid.to_handoff_id()?;
        let (env, t) = self.write(|tx| claim_in(tx, &self.cfg, &self.id, hid.as_str()))?;
        let started = Event::AttemptStarted {
            hid: hid.as_str(),
            fence: Fence::FIRST,
            holder: self.id.as_str(),
            how: Start::Claim,
            at_s: t,
        };
        self.cfg.hooks.emit(started);
        if let Some(reason) = budget_violation(&env, t) {
            return Err(Error::BudgetExceeded { hid: hid.into(), reason });
        }
        tracing::info!(hid = hid.short(), runner = %self.id, fence = 0, "claim");
        Ok(TaskContext::new(self.clone(), Lease::granted(hid, Fence::FIRST)))
    }

    /// Recover an orphaned handoff: CAS on the observed fence, so of N
    /// racing recoverers exactly one wins; fence+1, attempt+1.
    pub fn recover(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<TaskContext> {
        let handoff = hid.to_handoff_id()?;
        let hid = handoff.as_str();
        let cfg = &self.cfg;
        let (fence, t) = self.write(|tx| {
            let mut env = load(tx, hid)?;
            // Running or suspended handoffs (and unknown statuses) are refused
            // by the ownership check below: their holder is not the tombstone.
            match Status::of(&env) {
                Some(s) if s.is_terminal() => return Err(state_err(hid, "recover", "handoff is terminal")),
                Some(Status::Pending) => return Err(state_err(hid, "recover", "handoff never claimed; use claim")),
                _ => {}
            }
            let own = tx.ownership(hid)?;
            let Some(own) = own.filter(|o| o.holder == ORPHANED_HOLDER) else {
                return Err(Error::OwnershipLost {
                    hid: hid.to_string(),
                    reason: "not orphaned (another recoverer won, or the owner is alive)".into(),
                });
            };
            let t = self.now_in(tx)?;
            let fence = own.fence.next();
            tx.update_ownership(
                &Ownership {
                    hid: hid.to_string(),
                    holder: self.id.to_string(),
                    fence,
                    lease_expires_at: config::lease_expiry(t.secs(), cfg.lease_interval_s, cfg.lease_max_missed)?,
                    heartbeat_interval_s: cfg.lease_interval_s,
                    max_missed: cfg.lease_max_missed,
                },
                t,
            )?;
            let ex = exec_mut(&mut env)?;
            let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
            let next = Status::Orphaned.after(Op::Recover).unwrap_or(Status::Running);
            ex.insert("status".into(), json!(next.as_str()));
            ex.insert("attempt".into(), json!(attempt + 1));
            ex.insert("runner_id".into(), json!(self.id));
            ex.insert("claimed_at".into(), json::float(t.secs()));
            ex.insert("fence".into(), json!(fence));
            save(tx, hid, &env, cfg)?;
            Ok((fence, t.secs()))
        })?;
        let started = Event::AttemptStarted { hid, fence, holder: self.id.as_str(), how: Start::Recover, at_s: t };
        self.cfg.hooks.emit(started);
        tracing::info!(hid = handoff.short(), runner = %self.id, %fence, "recover");
        Ok(TaskContext::new(self.clone(), Lease::granted(handoff, fence)))
    }

    /// Extend the lease. Returns seconds until it expires.
    pub fn heartbeat(&self, lease: &Lease) -> Result<f64> {
        let hid = lease.hid().as_str();
        failpoint::hit("heartbeat");
        // The one-round-trip path reads the store's clock server-side: a
        // manual clock keeps the transaction.
        if matches!(self.cfg.clock, Clock::Store) {
            if let Some(left) = one_trip::heartbeat(self.store.as_ref(), &self.id, hid, lease.fence())? {
                self.cfg.hooks.emit(Event::LeaseRenewed);
                return Ok(left);
            }
        }
        let left = self.write_owned(lease, |tx| {
            let mut own = tx.ownership(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
            let t = self.now_in(tx)?;
            own.lease_expires_at = config::lease_expiry(t.secs(), own.heartbeat_interval_s, own.max_missed)?;
            tx.update_ownership(&own, t)?;
            Ok(own.lease_expires_at - t.secs())
        })?;
        self.cfg.hooks.emit(Event::LeaseRenewed);
        Ok(left)
    }

    /// Append a checkpoint; returns its seq (0, 1, 2, …).
    pub fn checkpoint(&self, lease: &Lease, state: &Value) -> Result<i64> {
        Ok(self.checkpoint_step(lease, state, 0)?.seq())
    }

    /// Append a checkpoint and, in the same transaction (one fsync instead
    /// of three), count `steps` steps and extend the lease: what a worker
    /// does after each unit of work. The checkpoint is committed even when
    /// the steps go over budget; [`Step::over_budget`] then says why, and
    /// the worker must stop ([`Step::enforce_budget`]).
    pub fn checkpoint_step(&self, lease: &Lease, state: &Value, steps: i64) -> Result<Step> {
        if steps < 0 {
            return Err(Error::validation("steps cannot be negative"));
        }
        let (text, hash) = checked_state(state, &self.cfg)?;
        // The failpoint sits inside the transaction; the one-round-trip path
        // reads the store's clock server-side, so a manual clock keeps the
        // transaction too.
        let once = match failpoint::is_armed("checkpoint.in_tx") || !matches!(self.cfg.clock, Clock::Store) {
            true => None,
            false => one_trip::checkpoint(self.store.as_ref(), &self.cfg, &self.id, lease, &text, &hash, steps)?,
        };
        let (row, env, t) = match once {
            Some(done) => done,
            None => self.write(|tx| {
                let (live, done) = append_checkpoint(tx, &self.cfg, &self.id, lease, &text, &hash, steps)?;
                live.still_live(tx, &self.cfg)?;
                Ok(done)
            })?,
        };
        // No observer: one branch (docs/observability.md).
        self.cfg.hooks.emit(Event::Checkpointed { hid: lease.hid().as_str(), fence: lease.fence(), seq: row.seq });
        let over_budget = env.as_ref().and_then(|e| budget_violation(e, t));
        Ok(Step { hid: lease.hid().clone(), row, over_budget })
    }

    fn bump(&self, lease: &Lease, steps: i64, spend: f64) -> Result<()> {
        let hid = lease.hid().as_str();
        let cfg = &self.cfg;
        let (env, t) = self.write_owned(lease, |tx| {
            let mut env = load(tx, hid)?;
            let ex = exec_mut(&mut env)?;
            // Checked: a sum that does not fit is recorded at the
            // counter's limit, an overrun (crate::budget::add_steps).
            crate::budget::add_steps(ex, steps);
            crate::budget::add_spend(ex, spend);
            save(tx, hid, &env, cfg)?;
            Ok((env, self.now_in(tx)?.secs()))
        })?;
        match budget_violation(&env, t) {
            Some(reason) => Err(Error::BudgetExceeded { hid: hid.to_string(), reason }),
            None => Ok(()),
        }
    }

    /// Count `n` steps; over budget raises [`Error::BudgetExceeded`] (the
    /// steps are recorded, so the supervisor sees the overrun too).
    pub fn note_step(&self, lease: &Lease, n: i64) -> Result<()> {
        if n < 0 {
            return Err(Error::validation("steps cannot be negative"));
        }
        self.bump(lease, n, 0.0)
    }

    /// Record real spend in USD.
    pub fn note_spend(&self, lease: &Lease, usd: f64) -> Result<()> {
        if !(usd.is_finite() && usd >= 0.0) {
            return Err(Error::validation("spend must be a finite, non-negative amount"));
        }
        self.bump(lease, 0, usd)
    }

    /// Hand the handoff back: status pending, ownership row deleted.
    pub fn release(&self, lease: &Lease, reason: &str) -> Result<()> {
        let hid = lease.hid().as_str();
        let cfg = &self.cfg;
        self.write_owned(lease, |tx| {
            let mut env = load(tx, hid)?;
            let ex = exec_mut(&mut env)?;
            ex.insert("status".into(), json!(Status::Running.after(Op::Release).unwrap_or(Status::Pending).as_str()));
            ex.insert("release_reason".into(), json!(reason));
            save(tx, hid, &env, cfg)?;
            tx.delete_ownership(hid)
        })?;
        self.cfg.hooks.emit(Event::AttemptEnded { hid, fence: lease.fence(), how: Ended::Released });
        Ok(())
    }

    /// Complete with a result validated against `output_schema`. A result
    /// that violates it parks the handoff as failed and returns
    /// [`Error::SchemaViolation`]. Completing a completed handoff is a no-op.
    pub fn complete(&self, lease: &Lease, result: &Value) -> Result<()> {
        let hid = lease.hid().as_str();
        let cfg = &self.cfg;
        let size = json::dumps_sorted(result)?.len();
        failpoint::hit("complete");
        let outcome = self.write(|tx| {
            let mut env = load(tx, hid)?;
            // Completing a completed handoff is the table's no-op.
            if Status::of(&env) == Some(Status::Completed) {
                return Ok(Ok(()));
            }
            let live = self.check_owner(tx, lease)?;
            if size > cfg.max_result_bytes {
                return Err(Error::Oversize { what: "result", size, limit: cfg.max_result_bytes });
            }
            let verdict = envelope::validate_result(&env, result);
            let ex = exec_mut(&mut env)?;
            match &verdict {
                Err(e) => {
                    ex.insert("status".into(), json!(Status::Failed.as_str()));
                    ex.insert("error".into(), json!(format!("schema validation: {e}")));
                    ex.insert("failed_at".into(), json!(cfg.clock.now_iso()));
                }
                Ok(()) => {
                    ex.insert("status".into(), json!(Status::Completed.as_str()));
                    ex.insert("completed_at".into(), json!(cfg.clock.now_iso()));
                    let delivery = env
                        .get_mut("delivery")
                        .and_then(Value::as_object_mut)
                        .ok_or_else(|| Error::validation("envelope has no delivery object"))?;
                    delivery.insert("outbox".into(), json!({"ack": false}));
                    delivery.insert("result".into(), result.clone());
                }
            }
            save(tx, hid, &env, cfg)?;
            tx.delete_ownership(hid)?;
            live.still_live(tx, cfg)?;
            // The failed state is committed; the error goes to the caller.
            Ok(verdict)
        })?;
        let how = if outcome.is_ok() { Ended::Completed } else { Ended::SchemaFailed };
        self.cfg.hooks.emit(Event::AttemptEnded { hid, fence: lease.fence(), how });
        if outcome.is_ok() {
            failpoint::hit("complete.after_commit");
            tracing::info!(hid = lease.hid().short(), runner = %self.id, "complete");
        }
        outcome
    }

    /// The parent acknowledges the result (`delivery.outbox.ack`).
    pub fn ack(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<()> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        let cfg = &self.cfg;
        self.write(|tx| {
            let mut env = load(tx, hid)?;
            if Status::of(&env).and_then(|s| s.after(Op::Ack)).is_none() {
                return Err(state_err(hid, "ack", "not completed"));
            }
            match env.pointer_mut("/delivery/outbox").and_then(Value::as_object_mut) {
                Some(outbox) => {
                    outbox.insert("ack".into(), json!(true));
                }
                None => return Err(Error::validation("envelope has no delivery.outbox")),
            }
            save(tx, hid, &env, cfg)
        })
    }

    /// A standby's wait for work to recover: the first orphaned handoff, or
    /// `None` once `timeout` passes. Woken by the store's orphan
    /// announcements (PostgreSQL: `LISTEN`/`NOTIFY`) as soon as a handoff is
    /// orphaned; `poll` bounds each wait, so polling remains the fallback
    /// (and the only way on a store without announcements).
    pub fn wait_for_orphaned(&self, timeout: Duration, poll: Duration) -> Result<Option<String>> {
        let end = std::time::Instant::now() + timeout;
        loop {
            if let Some(hid) = self.read(|tx| tx.hids_with_status(Status::Orphaned))?.into_iter().next() {
                return Ok(Some(hid));
            }
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.store.wait_for_orphan(left.min(poll))?;
        }
    }

    /// Re-open a handoff this runner holds, e.g. after a restart of the
    /// same worker id with a lease it kept (every write still checks it).
    pub fn context(&self, lease: Lease) -> TaskContext {
        TaskContext::new(self.clone(), lease)
    }
}

/// Verify an envelope for dispatch and render its store text (outside any
/// transaction).
pub(super) fn prepare_dispatch(env: &Value, cfg: &Config) -> Result<(HandoffId, String)> {
    let hid = HandoffId::parse(&envelope::verify(env)?)?;
    if Status::of(env) != Some(Status::Pending) {
        return Err(state_err(hid.as_str(), "dispatch", "envelope not pending"));
    }
    Ok((hid, envelope_text(env, cfg)?))
}

/// The claim CAS inside a transaction; returns the claimed envelope and
/// the store's time of the claim.
pub(super) fn claim_in(tx: &mut dyn Tx, cfg: &Config, holder: &WorkerId, hid: &str) -> Result<(Value, f64)> {
    let mut env = load(tx, hid)?;
    let Some(next) = Status::of(&env).and_then(|s| s.after(Op::Claim)) else {
        return Err(state_err(hid, "claim", format!("status is {}", envelope::status(&env))));
    };
    let t = cfg.clock.now_in(tx)?;
    let own = Ownership {
        hid: hid.to_string(),
        holder: holder.to_string(),
        fence: Fence::FIRST,
        lease_expires_at: config::lease_expiry(t.secs(), cfg.lease_interval_s, cfg.lease_max_missed)?,
        heartbeat_interval_s: cfg.lease_interval_s,
        max_missed: cfg.lease_max_missed,
    };
    if !tx.insert_ownership(&own, t)? {
        return Err(Error::OwnershipLost { hid: hid.to_string(), reason: "claim race lost".into() });
    }
    let ex = exec_mut(&mut env)?;
    ex.insert("status".into(), json!(next.as_str()));
    ex.insert("runner_id".into(), json!(holder));
    ex.insert("claimed_at".into(), json::float(t.secs()));
    ex.insert("fence".into(), json!(0));
    ex.entry("steps").or_insert(json!(0));
    ex.entry("spend_usd").or_insert(json::float(0.0));
    save(tx, hid, &env, cfg)?;
    Ok((env, t.secs()))
}

/// An appended checkpoint's row, the envelope when steps were counted, and
/// the store's time.
pub(super) type Appended = (CheckpointRow, Option<Value>, f64);

/// The checkpoint append inside a transaction (see
/// [`Runner::checkpoint_step`]); returns the seq, when steps were counted
/// the updated envelope for the budget check, and the store's time — with
/// the checked lease, which the caller checks again last, before the
/// commit ([`LiveLease::still_live`]).
pub(super) fn append_checkpoint<'a>(
    tx: &mut dyn Tx,
    cfg: &Config,
    holder: &WorkerId,
    lease: &'a Lease,
    text: &str,
    hash: &str,
    steps: i64,
) -> Result<(LiveLease<'a>, Appended)> {
    let live = check_owner_as(tx, cfg, holder, lease)?;
    let hid = lease.hid().as_str();
    let seq = tx.next_seq(hid)?;
    if seq >= cfg.max_checkpoints_per_handoff {
        let limit = cfg.max_checkpoints_per_handoff as usize;
        return Err(Error::Oversize { what: "checkpoint count", size: seq as usize, limit });
    }
    let row =
        CheckpointRow { seq, state_json: text.to_string(), state_hash: hash.to_string(), at: cfg.clock.now_iso() };
    if !tx.insert_checkpoint(hid, &row)? {
        return Err(Error::OwnershipLost { hid: hid.to_string(), reason: format!("checkpoint seq {seq} taken") });
    }
    let t = cfg.clock.now_in(tx)?;
    // A checkpoint resets the stall clock and the digest counter.
    tx.progress_checkpointed(hid, t)?;
    let mut env = None;
    if steps > 0 {
        let mut e = load(tx, hid)?;
        let ex = exec_mut(&mut e)?;
        crate::budget::add_steps(ex, steps);
        save(tx, hid, &e, cfg)?;
        let mut own = tx.ownership(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
        own.lease_expires_at = config::lease_expiry(t.secs(), own.heartbeat_interval_s, own.max_missed)?;
        tx.update_ownership(&own, t)?;
        env = Some(e);
    }
    failpoint::hit("checkpoint.in_tx");
    Ok((live, (row, env, t.secs())))
}

/// A committed checkpoint of [`Runner::checkpoint_step`].
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The handoff checkpointed.
    pub hid: HandoffId,
    /// The row as committed: seq, state text, state hash and `at`, exactly
    /// as stored, so a shipper sends what the store holds without
    /// serialising or hashing the state again.
    pub row: CheckpointRow,
    /// Set when the counted steps put the handoff over its budget.
    pub over_budget: Option<String>,
}

impl Step {
    /// The committed checkpoint's seq.
    pub fn seq(&self) -> i64 {
        self.row.seq
    }

    /// `Err(BudgetExceeded)` when over budget.
    pub fn enforce_budget(&self) -> Result<i64> {
        match &self.over_budget {
            Some(reason) => Err(Error::BudgetExceeded { hid: self.hid.to_string(), reason: reason.clone() }),
            None => Ok(self.row.seq),
        }
    }
}

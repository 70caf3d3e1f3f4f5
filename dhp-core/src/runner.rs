//! The runner: a handoff's lifecycle from dispatch to ack (the reference's
//! `Runner3`), each operation one store transaction.
//!
//! Every mutation by a worker presents its `(holder, fence)` and is checked
//! inside the same transaction that writes: a stale fence is
//! [`Error::StaleFence`], an expired lease [`Error::LeaseLost`], a handoff that
//! is not running [`Error::State`]. A checkpoint costs the same whatever the
//! number of earlier checkpoints: it reads the ownership row, the status and
//! the highest seq (one index seek), and inserts one row.

use crate::config::{self, Config};
use crate::envelope::{self, check_hid, check_worker_id, now, utcnow_iso, ORPHANED_HOLDER};
use crate::error::{Error, Result};
use crate::failpoint;
use crate::json;
use crate::store::{
    self, with_tx, Approval, Backend, BudgetUsage, CapabilityAudit, CheckpointRow, Mode, Ownership, Progress,
    StoreLocation, Tx,
};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

mod one_trip;

/// A worker's handle on the protocol, bound to one worker id.
#[derive(Clone)]
pub struct Runner {
    store: Arc<dyn Backend>,
    cfg: Config,
    id: String,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("id", &self.id).field("store", &self.store.describe()).finish()
    }
}

/// Serialize an envelope for the store: checkpoints emptied (rows are the
/// source of truth), Python `json.dumps` text, size-checked.
pub(crate) fn envelope_text(env: &Value, cfg: &Config) -> Result<String> {
    let mut env = env.clone();
    if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
        ex.insert("checkpoints".into(), json!([]));
    }
    let text = json::dumps(&env)?;
    if text.len() > cfg.max_envelope_bytes {
        return Err(Error::Oversize { what: "envelope", size: text.len(), limit: cfg.max_envelope_bytes });
    }
    Ok(text)
}

pub(crate) fn load(tx: &mut dyn Tx, hid: &str) -> Result<Value> {
    tx.envelope(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })
}

pub(crate) fn save(tx: &mut dyn Tx, hid: &str, env: &Value, cfg: &Config) -> Result<()> {
    if tx.update_envelope(hid, &envelope_text(env, cfg)?, now())? {
        Ok(())
    } else {
        Err(Error::UnknownHandoff { hid: hid.to_string() })
    }
}

fn exec_mut(env: &mut Value) -> Result<&mut Map<String, Value>> {
    env.get_mut("execution")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::validation("envelope has no execution object"))
}

fn state_err(hid: &str, op: &'static str, reason: impl Into<String>) -> Error {
    Error::State { hid: hid.to_string(), op, reason: reason.into() }
}

/// Check a checkpoint state and return its store text and hash.
pub fn checked_state(state: &Value, cfg: &Config) -> Result<(String, String)> {
    if !state.is_object() {
        return Err(Error::validation("checkpoint state must be a JSON object"));
    }
    let (text, hash) = json::state_text_and_hash(state)?;
    if text.len() > cfg.max_checkpoint_bytes {
        return Err(Error::Oversize { what: "checkpoint", size: text.len(), limit: cfg.max_checkpoint_bytes });
    }
    Ok((text, hash))
}

/// Budget check of the reference (`_check_budget`); `None` when within.
pub fn budget_violation(env: &Value, at: f64) -> Option<String> {
    env.get("execution")?;
    BudgetUsage::of_envelope(env).violation(at)
}

impl BudgetUsage {
    /// Read usage and caps from an envelope.
    pub fn of_envelope(env: &Value) -> Self {
        let ex = |k: &str| env.pointer(&format!("/execution/{k}")).and_then(Value::as_f64);
        BudgetUsage {
            hid: env.get("handoff_id").and_then(Value::as_str).unwrap_or_default().to_string(),
            steps: ex("steps"),
            spend_usd: ex("spend_usd"),
            claimed_at: ex("claimed_at"),
            max_steps: envelope::budget_f64(env, "max_steps"),
            max_spend_usd: envelope::budget_f64(env, "max_spend_usd"),
            max_wallclock_s: envelope::budget_f64(env, "max_wallclock_s"),
        }
    }

    /// Why the usage is over budget at time `at`, or `None`.
    pub fn violation(&self, at: f64) -> Option<String> {
        let (steps, spend) = (self.steps.unwrap_or(0.0), self.spend_usd.unwrap_or(0.0));
        let claimed = self.claimed_at.unwrap_or(at);
        let mut reasons = Vec::new();
        if let Some(max) = self.max_steps.filter(|m| steps > *m) {
            reasons.push(format!("steps {steps} > {max}"));
        }
        if let Some(max) = self.max_spend_usd.filter(|m| spend > *m) {
            reasons.push(format!("spend ${spend:.2} > ${max:.2}"));
        }
        if self.max_wallclock_s.is_some_and(|m| at - claimed > m) {
            reasons.push("wallclock exceeded".to_string());
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

impl Runner {
    /// A runner over any backend.
    pub fn new(store: Arc<dyn Backend>, worker_id: &str, cfg: Config) -> Result<Self> {
        check_worker_id(worker_id)?;
        cfg.validate()?;
        Ok(Runner { store, cfg, id: worker_id.to_string() })
    }

    /// Open the store at `root` — a directory (SQLite) or a `postgres://`
    /// URL (see [`StoreLocation`]) — and bind a runner to it.
    pub fn open(root: impl AsRef<Path>, worker_id: &str, cfg: Config) -> Result<Self> {
        check_worker_id(worker_id)?;
        cfg.validate()?;
        Self::new(store::open(&StoreLocation::from_path(root.as_ref())?)?, worker_id, cfg)
    }

    /// Like [`Runner::open`], but a database location must already hold a
    /// store (nothing is created or written).
    pub fn open_existing(root: impl AsRef<Path>, worker_id: &str, cfg: Config) -> Result<Self> {
        check_worker_id(worker_id)?;
        cfg.validate()?;
        Self::new(store::open_existing(&StoreLocation::from_path(root.as_ref())?)?, worker_id, cfg)
    }

    /// This runner's worker id (the lease holder name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The backend.
    pub fn store(&self) -> &Arc<dyn Backend> {
        &self.store
    }

    /// The same store under another worker id.
    pub fn with_id(&self, worker_id: &str) -> Result<Runner> {
        check_worker_id(worker_id)?;
        Ok(Runner { store: self.store.clone(), cfg: self.cfg.clone(), id: worker_id.to_string() })
    }

    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        with_tx(self.store.as_ref(), Mode::Write, f)
    }

    fn read<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        with_tx(self.store.as_ref(), Mode::Read, f)
    }

    /// Inside a transaction: the presented token is the current owner, its
    /// lease is live and the handoff is running.
    fn check_owner(&self, tx: &mut dyn Tx, hid: &str, fence: i64) -> Result<()> {
        check_owner_as(tx, &self.id, hid, fence)
    }

    // ---- lifecycle ----

    /// Accept an envelope: identity and input binding verified, status
    /// pending. Re-dispatching the same envelope returns its id unchanged.
    pub fn dispatch(&self, env: &Value) -> Result<String> {
        let (hid, text) = prepare_dispatch(env, &self.cfg)?;
        self.write(|tx| {
            tx.insert_envelope(&hid, &text, now())?;
            Ok(())
        })?;
        tracing::info!(hid = &hid[..12], kind = ?env.pointer("/task/kind"), "dispatch");
        Ok(hid)
    }

    /// Dispatch several envelopes in one transaction (one fsync for all).
    /// Each gets its own id or its own error; `Err` only when the
    /// transaction as a whole failed, and then nothing was stored.
    pub fn dispatch_many(&self, envs: &[Value]) -> Result<Vec<Result<String>>> {
        let prepared: Vec<Result<(String, String)>> = envs.iter().map(|e| prepare_dispatch(e, &self.cfg)).collect();
        let mut out = Vec::with_capacity(envs.len());
        self.store.transact(Mode::Write, &mut |tx| {
            out.clear();
            for p in &prepared {
                out.push(match p {
                    Ok((hid, text)) => Some(tx.insert_envelope(hid, text, now()).map(|_| hid.clone())),
                    Err(_) => None,
                });
            }
            Ok(())
        })?;
        Ok(merge(prepared, out))
    }

    /// Claim a pending handoff: ownership row with fence 0, status running.
    pub fn claim(&self, hid: &str) -> Result<TaskContext> {
        check_hid(hid)?;
        let (env, t) = self.write(|tx| claim_in(tx, &self.cfg, &self.id, hid))?;
        if let Some(reason) = budget_violation(&env, t) {
            return Err(Error::BudgetExceeded { hid: hid.to_string(), reason });
        }
        tracing::info!(hid = &hid[..12], runner = %self.id, fence = 0, "claim");
        Ok(TaskContext::new(self.clone(), hid, 0))
    }

    /// Claim several pending handoffs in one transaction (one fsync for
    /// all), each with the writes and checks of [`Runner::claim`].
    pub fn claim_many(&self, hids: &[String]) -> Result<Vec<Result<TaskContext>>> {
        let mut envs = Vec::with_capacity(hids.len());
        self.store.transact(Mode::Write, &mut |tx| {
            envs.clear();
            for hid in hids {
                envs.push(check_hid(hid).map(|_| ()).and_then(|()| claim_in(tx, &self.cfg, &self.id, hid)));
            }
            Ok(())
        })?;
        Ok(hids
            .iter()
            .zip(envs)
            .map(|(hid, env)| {
                let (env, t) = env?;
                match budget_violation(&env, t) {
                    Some(reason) => Err(Error::BudgetExceeded { hid: hid.clone(), reason }),
                    None => Ok(TaskContext::new(self.clone(), hid, 0)),
                }
            })
            .collect())
    }

    /// Recover an orphaned handoff: CAS on the observed fence, so of N
    /// racing recoverers exactly one wins; fence+1, attempt+1.
    pub fn recover(&self, hid: &str) -> Result<TaskContext> {
        check_hid(hid)?;
        let cfg = &self.cfg;
        let fence = self.write(|tx| {
            let mut env = load(tx, hid)?;
            match envelope::status(&env) {
                "completed" | "failed" => return Err(state_err(hid, "recover", "handoff is terminal")),
                "pending" => return Err(state_err(hid, "recover", "handoff never claimed; use claim")),
                _ => {}
            }
            let own = tx.ownership(hid)?;
            let Some(own) = own.filter(|o| o.holder == ORPHANED_HOLDER) else {
                return Err(Error::OwnershipLost {
                    hid: hid.to_string(),
                    reason: "not orphaned (another recoverer won, or the owner is alive)".into(),
                });
            };
            let t = tx.now()?;
            let fence = own.fence + 1;
            tx.update_ownership(
                &Ownership {
                    hid: hid.to_string(),
                    holder: self.id.clone(),
                    fence,
                    lease_expires_at: config::lease_expiry(t, cfg.lease_interval_s, cfg.lease_max_missed)?,
                    heartbeat_interval_s: cfg.lease_interval_s,
                    max_missed: cfg.lease_max_missed,
                },
                t,
            )?;
            let ex = exec_mut(&mut env)?;
            let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
            ex.insert("status".into(), json!("running"));
            ex.insert("attempt".into(), json!(attempt + 1));
            ex.insert("runner_id".into(), json!(self.id));
            ex.insert("claimed_at".into(), json::float(t));
            ex.insert("fence".into(), json!(fence));
            save(tx, hid, &env, cfg)?;
            Ok(fence)
        })?;
        tracing::info!(hid = &hid[..12], runner = %self.id, fence, "recover");
        Ok(TaskContext::new(self.clone(), hid, fence))
    }

    /// Extend the lease. Returns seconds until it expires.
    pub fn heartbeat(&self, hid: &str, fence: i64) -> Result<f64> {
        check_hid(hid)?;
        failpoint::hit("heartbeat");
        if let Some(left) = one_trip::heartbeat(self.store.as_ref(), &self.id, hid, fence)? {
            return Ok(left);
        }
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let mut own = tx.ownership(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
            let t = tx.now()?;
            own.lease_expires_at = config::lease_expiry(t, own.heartbeat_interval_s, own.max_missed)?;
            tx.update_ownership(&own, t)?;
            Ok(own.lease_expires_at - t)
        })
    }

    /// Append a checkpoint; returns its seq (0, 1, 2, …).
    pub fn checkpoint(&self, hid: &str, fence: i64, state: &Value) -> Result<i64> {
        Ok(self.checkpoint_step(hid, fence, state, 0)?.seq)
    }

    /// Append a checkpoint and, in the same transaction (one fsync instead
    /// of three), count `steps` steps and extend the lease: what a worker
    /// does after each unit of work. The checkpoint is committed even when
    /// the steps go over budget; [`Step::over_budget`] then says why, and
    /// the worker must stop ([`Step::enforce_budget`]).
    pub fn checkpoint_step(&self, hid: &str, fence: i64, state: &Value, steps: i64) -> Result<Step> {
        check_hid(hid)?;
        if steps < 0 {
            return Err(Error::validation("steps cannot be negative"));
        }
        let (text, hash) = checked_state(state, &self.cfg)?;
        let once = match failpoint::is_armed("checkpoint.in_tx") {
            true => None, // the failpoint sits inside the transaction
            false => one_trip::checkpoint(self.store.as_ref(), &self.cfg, &self.id, hid, fence, &text, &hash, steps)?,
        };
        let (seq, env, t) = match once {
            Some(done) => done,
            None => self.write(|tx| append_checkpoint(tx, &self.cfg, &self.id, hid, fence, &text, &hash, steps))?,
        };
        let over_budget = env.as_ref().and_then(|e| budget_violation(e, t));
        Ok(Step { hid: hid.to_string(), seq, over_budget })
    }

    fn bump(&self, hid: &str, fence: i64, steps: i64, spend: f64) -> Result<()> {
        check_hid(hid)?;
        let cfg = &self.cfg;
        let (env, t) = self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let mut env = load(tx, hid)?;
            let ex = exec_mut(&mut env)?;
            let s = ex.get("steps").and_then(Value::as_i64).unwrap_or(0) + steps;
            let sp = ex.get("spend_usd").and_then(Value::as_f64).unwrap_or(0.0) + spend;
            ex.insert("steps".into(), json!(s));
            ex.insert("spend_usd".into(), json::float(sp));
            save(tx, hid, &env, cfg)?;
            Ok((env, tx.now()?))
        })?;
        match budget_violation(&env, t) {
            Some(reason) => Err(Error::BudgetExceeded { hid: hid.to_string(), reason }),
            None => Ok(()),
        }
    }

    /// Count `n` steps; over budget raises [`Error::BudgetExceeded`] (the
    /// steps are recorded, so the supervisor sees the overrun too).
    pub fn note_step(&self, hid: &str, fence: i64, n: i64) -> Result<()> {
        if n < 0 {
            return Err(Error::validation("steps cannot be negative"));
        }
        self.bump(hid, fence, n, 0.0)
    }

    /// Record real spend in USD.
    pub fn note_spend(&self, hid: &str, fence: i64, usd: f64) -> Result<()> {
        if !(usd.is_finite() && usd >= 0.0) {
            return Err(Error::validation("spend must be a finite, non-negative amount"));
        }
        self.bump(hid, fence, 0, usd)
    }

    /// Hand the handoff back: status pending, ownership row deleted.
    pub fn release(&self, hid: &str, fence: i64, reason: &str) -> Result<()> {
        check_hid(hid)?;
        let cfg = &self.cfg;
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let mut env = load(tx, hid)?;
            let ex = exec_mut(&mut env)?;
            ex.insert("status".into(), json!("pending"));
            ex.insert("release_reason".into(), json!(reason));
            save(tx, hid, &env, cfg)?;
            tx.delete_ownership(hid)
        })
    }

    /// Complete with a result validated against `output_schema`. A result
    /// that violates it parks the handoff as failed and returns
    /// [`Error::SchemaViolation`]. Completing a completed handoff is a no-op.
    pub fn complete(&self, hid: &str, fence: i64, result: &Value) -> Result<()> {
        check_hid(hid)?;
        let cfg = &self.cfg;
        let size = json::dumps_sorted(result)?.len();
        failpoint::hit("complete");
        let outcome = self.write(|tx| {
            let mut env = load(tx, hid)?;
            if envelope::status(&env) == "completed" {
                return Ok(Ok(()));
            }
            self.check_owner(tx, hid, fence)?;
            if size > cfg.max_result_bytes {
                return Err(Error::Oversize { what: "result", size, limit: cfg.max_result_bytes });
            }
            let verdict = envelope::validate_result(&env, result);
            let ex = exec_mut(&mut env)?;
            match &verdict {
                Err(e) => {
                    ex.insert("status".into(), json!("failed"));
                    ex.insert("error".into(), json!(format!("schema validation: {e}")));
                    ex.insert("failed_at".into(), json!(utcnow_iso()));
                }
                Ok(()) => {
                    ex.insert("status".into(), json!("completed"));
                    ex.insert("completed_at".into(), json!(utcnow_iso()));
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
            // The failed state is committed; the error goes to the caller.
            Ok(verdict)
        })?;
        if outcome.is_ok() {
            failpoint::hit("complete.after_commit");
            tracing::info!(hid = &hid[..12], runner = %self.id, "complete");
        }
        outcome
    }

    /// The parent acknowledges the result (`delivery.outbox.ack`).
    pub fn ack(&self, hid: &str) -> Result<()> {
        check_hid(hid)?;
        let cfg = &self.cfg;
        self.write(|tx| {
            let mut env = load(tx, hid)?;
            if envelope::status(&env) != "completed" {
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

    // ---- reads ----

    /// The stored envelope with `execution.checkpoints` materialized from
    /// the rows, as the reference's `_load` returns it.
    pub fn envelope(&self, hid: &str) -> Result<Value> {
        check_hid(hid)?;
        self.read(|tx| {
            let mut env = load(tx, hid)?;
            materialize(tx, hid, &mut env)?;
            Ok(env)
        })
    }

    /// The stored envelope without checkpoints (cheap).
    pub fn envelope_bare(&self, hid: &str) -> Result<Value> {
        check_hid(hid)?;
        self.read(|tx| load(tx, hid))
    }

    /// The last checkpointed state, or `None`.
    pub fn last_checkpoint(&self, hid: &str) -> Result<Option<Value>> {
        check_hid(hid)?;
        self.read(|tx| tx.last_checkpoint(hid)?.map(|r| json::parse(&r.state_json)).transpose())
    }

    /// The last checkpoint's seq and state.
    pub fn last_checkpoint_row(&self, hid: &str) -> Result<Option<CheckpointRow>> {
        check_hid(hid)?;
        self.read(|tx| tx.last_checkpoint(hid))
    }

    /// All checkpoint rows, in seq order.
    pub fn checkpoints(&self, hid: &str) -> Result<Vec<CheckpointRow>> {
        check_hid(hid)?;
        self.read(|tx| {
            load(tx, hid)?;
            tx.checkpoints(hid)
        })
    }

    /// The ownership row, if any.
    pub fn ownership(&self, hid: &str) -> Result<Option<Ownership>> {
        check_hid(hid)?;
        self.read(|tx| tx.ownership(hid))
    }

    /// Every handoff id in the store.
    pub fn all_hids(&self) -> Result<Vec<String>> {
        self.read(|tx| tx.all_hids())
    }

    /// A summary like the reference's `dhp.status`.
    pub fn status(&self, hid: &str) -> Result<Value> {
        check_hid(hid)?;
        self.read(|tx| {
            let env = load(tx, hid)?;
            let ex = &env["execution"];
            let own = tx.ownership(hid)?;
            let approvals: Vec<Value> = tx
                .approvals_for(hid)?
                .into_iter()
                .map(|a| {
                    json!({"approval_id": a.approval_id, "action_class": a.action_class, "status": a.status,
                           "created_at": json::float(a.created_at), "decided_at": a.decided_at.map(json::float)})
                })
                .collect();
            let mut out = json!({
                "handoff_id": hid,
                "status": envelope::status(&env),
                "checkpoints": tx.next_seq(hid)?,
                "attempt": ex.get("attempt").cloned().unwrap_or(json!(0)),
                "owner": own.as_ref().map(|o| o.holder.clone()),
                "fence": own.as_ref().map(|o| o.fence),
                "effects": tx.effect_count(hid)?,
                "approvals": approvals,
                "steps": ex.get("steps").cloned().unwrap_or(json!(0)),
                "spend_usd": ex.get("spend_usd").cloned().unwrap_or(json::float(0.0)),
            });
            if envelope::status(&env) == "completed" {
                out["result"] = env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
                out["acked"] = env.pointer("/delivery/outbox/ack").cloned().unwrap_or(json!(false));
            }
            if let Some(e) = ex.get("error").filter(|e| !e.is_null()) {
                out["error"] = e.clone();
            }
            Ok(out)
        })
    }

    // ---- suspend / resume ----

    /// Suspend a running handoff and return its portable bundle: canonical
    /// bytes of `{"dhp_bundle": "1.0", "envelope", "checkpoints"}`. The
    /// status change is committed before this returns: a caller that then
    /// fails to keep the bytes has a suspended handoff and no bundle, so
    /// prefer [`Runner::suspend_to`].
    pub fn suspend(&self, hid: &str) -> Result<Vec<u8>> {
        check_hid(hid)?;
        self.write(|tx| suspend_in(tx, &self.cfg, hid))
    }

    /// Suspend into the file `out`. The bundle is written to a temporary
    /// file beside `out`, fsynced and renamed over `out` inside the write
    /// transaction, before the status change commits; if any of that
    /// fails the transaction rolls back (the handoff stays as it was) and
    /// no file is left behind. Returns the bundle's size in bytes.
    pub fn suspend_to(&self, hid: &str, out: &Path) -> Result<usize> {
        check_hid(hid)?;
        let mut placed = false;
        let res = self.write(|tx| {
            let blob = suspend_in(tx, &self.cfg, hid)?;
            write_file_atomic(out, &blob)?;
            placed = true;
            Ok(blob.len())
        });
        if res.is_err() && placed {
            // The commit failed after the file was placed: take it back.
            let _ = std::fs::remove_file(out);
        }
        res
    }

    /// Import a bundle onto this store. The handoff arrives pending with
    /// attempt+1 and its checkpoints; a tampered bundle changes nothing.
    pub fn resume(&self, bundle: &[u8]) -> Result<String> {
        if bundle.len() > self.cfg.max_envelope_bytes {
            return Err(Error::Oversize { what: "bundle", size: bundle.len(), limit: self.cfg.max_envelope_bytes });
        }
        let data = json::parse_bytes(bundle)?;
        match data.get("dhp_bundle").and_then(Value::as_str) {
            Some("0.3") | Some("1.0") => {}
            Some(other) => return Err(Error::validation(format!("unknown bundle version {other}"))),
            None => return Err(Error::validation("not a DHP bundle: no \"dhp_bundle\" version field")),
        }
        let mut env = data.get("envelope").cloned().ok_or_else(|| Error::validation("bundle has no envelope"))?;
        // Identity and input binding: an envelope whose inputs were swapped
        // and whose id was recomputed is refused here as at dispatch (the
        // reference checks only the id).
        let hid = envelope::verify(&env).map_err(|e| match e {
            e @ Error::Tamper { .. } => e.tamper_within("bundle envelope"),
            other => other,
        })?;
        let items = match data.get("checkpoints") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(Error::validation("bundle checkpoints must be a list")),
        };
        let mut rows = Vec::with_capacity(items.len());
        let at = utcnow_iso();
        for item in &items {
            let seq = item.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0);
            let (Some(seq), Some(state)) = (seq, item.get("state")) else {
                return Err(Error::validation("bundle checkpoint needs a non-negative seq and a state"));
            };
            let (text, hash) = checked_state(state, &self.cfg)?;
            if let Some(claimed) = item.get("state_hash") {
                if claimed.as_str() != Some(hash.as_str()) {
                    return Err(Error::tamper(format!("bundle checkpoint {seq}: state hash mismatch")));
                }
            }
            rows.push(CheckpointRow { seq, state_json: text, state_hash: hash, at: at.clone() });
        }
        let ex = exec_mut(&mut env)?;
        let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
        ex.insert("status".into(), json!("pending"));
        ex.insert("attempt".into(), json!(attempt + 1));
        let text = envelope_text(&env, &self.cfg)?;
        self.write(|tx| {
            if !tx.insert_envelope(&hid, &text, now())? {
                return Err(state_err(&hid, "resume", "handoff already exists here"));
            }
            for r in &rows {
                tx.insert_checkpoint(&hid, r)?;
            }
            Ok(())
        })?;
        Ok(hid)
    }

    // ---- effects, activity, approvals, capabilities ----

    /// Record a side effect; first write wins (`false` if already present).
    pub fn record_effect(&self, hid: &str, fence: i64, step_id: &str, result: &Value) -> Result<bool> {
        check_hid(hid)?;
        if step_id.is_empty() {
            return Err(Error::validation("step_id must be a non-empty string"));
        }
        let text = json::dumps_sorted(result)?;
        if text.len() > self.cfg.max_checkpoint_bytes {
            return Err(Error::Oversize {
                what: "effect result",
                size: text.len(),
                limit: self.cfg.max_checkpoint_bytes,
            });
        }
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let t = tx.now()?;
            tx.insert_effect(hid, step_id, &text, t)
        })
    }

    /// The recorded result of `step_id`, if it already ran.
    pub fn effect_done(&self, hid: &str, fence: i64, step_id: &str) -> Result<Option<Value>> {
        check_hid(hid)?;
        self.read(|tx| {
            self.check_owner(tx, hid, fence)?;
            tx.effect(hid, step_id)?.map(|t| json::parse(&t)).transpose()
        })
    }

    /// Report an activity digest; returns how many times in a row it repeated.
    pub fn note_activity(&self, hid: &str, fence: i64, digest: &str) -> Result<i64> {
        check_hid(hid)?;
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let t = tx.now()?;
            let p = tx.progress(hid)?;
            let count = match &p {
                Some(p) if p.last_digest.as_deref() == Some(digest) => p.digest_repeat_count + 1,
                _ => 1,
            };
            let last_checkpoint_at = p.and_then(|p| p.last_checkpoint_at);
            tx.put_progress(
                hid,
                &Progress { last_checkpoint_at, last_digest: Some(digest.to_string()), digest_repeat_count: count },
                t,
            )?;
            Ok(count)
        })
    }

    /// Gate an action. `financial` and `destructive` create a pending
    /// approval and fail closed with [`Error::ApprovalRequired`]; `read` and
    /// `write` pass. Returns `Ok(())` only when no approval is needed.
    pub fn request_approval(
        &self,
        hid: &str,
        fence: i64,
        action_class: &str,
        details: &Value,
        timeout_s: f64,
    ) -> Result<()> {
        check_hid(hid)?;
        if !matches!(action_class, "read" | "write" | "financial" | "destructive") {
            return Err(Error::validation(format!("unknown action_class {action_class:?}")));
        }
        let details_json = json::dumps_sorted(details)?;
        let created = self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            if !matches!(action_class, "financial" | "destructive") {
                return Ok(None);
            }
            let t = tx.now()?;
            let approval_id = format!("apr-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
            tx.insert_approval(&Approval {
                approval_id: approval_id.clone(),
                hid: hid.to_string(),
                action_class: action_class.to_string(),
                details_json: details_json.clone(),
                status: "pending".into(),
                created_at: t,
                expires_at: t + timeout_s,
                decided_at: None,
            })?;
            Ok(Some(approval_id))
        })?;
        // Fail closed only after the approval row is committed.
        match created {
            None => Ok(()),
            Some(approval_id) => Err(Error::ApprovalRequired { approval_id, action_class: action_class.to_string() }),
        }
    }

    /// Decide an approval (the human or policy side). `true` if recorded.
    pub fn decide_approval(&self, approval_id: &str, approved: bool) -> Result<bool> {
        self.write(|tx| {
            let t = tx.now()?;
            tx.decide_approval(approval_id, if approved { "approved" } else { "denied" }, t)
        })
    }

    /// Wait for a decision: `Ok(())` when approved, [`Error::ApprovalDenied`]
    /// when denied, expired or timed out.
    pub fn await_approval(&self, hid: &str, fence: i64, approval_id: &str, poll: Duration) -> Result<()> {
        loop {
            let ap = self.write(|tx| {
                self.check_owner(tx, hid, fence)?;
                let ap = tx.approval(approval_id)?.ok_or_else(|| Error::validation("unknown approval_id"))?;
                let t = tx.now()?;
                if ap.status == "pending" && t > ap.expires_at {
                    tx.expire_approvals(t)?;
                    return Ok(Approval { status: "expired".into(), ..ap });
                }
                Ok(ap)
            })?;
            match ap.status.as_str() {
                "approved" => return Ok(()),
                "pending" => std::thread::sleep(poll),
                other => {
                    return Err(Error::ApprovalDenied { approval_id: approval_id.to_string(), status: other.into() })
                }
            }
        }
    }

    /// Fail-closed capability check, audited. The `dhp` domain is always
    /// allowed; anything else must be declared in `contract.capabilities`.
    pub fn require_capability(&self, hid: &str, fence: i64, domain: &str, resource: &str) -> Result<()> {
        check_hid(hid)?;
        let granted = self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let granted = domain == "dhp" || {
                let env = load(tx, hid)?;
                env.pointer("/contract/capabilities")
                    .and_then(|c| c.get(domain))
                    .and_then(Value::as_array)
                    .is_some_and(|list| list.iter().any(|r| r.as_str() == Some(resource)))
            };
            let at = tx.now()?;
            tx.insert_capability_audit(
                hid,
                &CapabilityAudit { domain: domain.into(), resource: resource.into(), granted, at },
            )?;
            Ok(granted)
        })?;
        if granted {
            Ok(())
        } else {
            Err(Error::CapabilityDenied { hid: hid.to_string(), domain: domain.into(), resource: resource.into() })
        }
    }

    /// The capability audit trail of a handoff.
    pub fn capability_audit(&self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        check_hid(hid)?;
        self.read(|tx| tx.capability_audit(hid))
    }

    /// A standby's wait for work to recover: the first orphaned handoff, or
    /// `None` once `timeout` passes. Woken by the store's orphan
    /// announcements (PostgreSQL: `LISTEN`/`NOTIFY`) as soon as a handoff is
    /// orphaned; `poll` bounds each wait, so polling remains the fallback
    /// (and the only way on a store without announcements).
    pub fn wait_for_orphaned(&self, timeout: Duration, poll: Duration) -> Result<Option<String>> {
        let end = std::time::Instant::now() + timeout;
        loop {
            if let Some(hid) = self.read(|tx| tx.hids_with_status("orphaned"))?.into_iter().next() {
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
    /// same worker id (fence must match).
    pub fn context(&self, hid: &str, fence: i64) -> Result<TaskContext> {
        check_hid(hid)?;
        Ok(TaskContext::new(self.clone(), hid, fence))
    }
}

/// Inside a transaction: `(holder, fence)` is the current owner, its lease
/// is live and the handoff is running.
fn check_owner_as(tx: &mut dyn Tx, holder: &str, hid: &str, fence: i64) -> Result<()> {
    let own = tx.ownership(hid)?;
    let t = match &own {
        Some(o) if o.holder == holder && o.fence == fence => tx.now()?,
        _ => f64::NAN, // not read: the fence check fails first
    };
    owner_checks(holder, hid, fence, own, t)?;
    running_check(hid, tx.status(hid)?)
}

/// The fence and lease checks on an ownership row read at store time `t`
/// (shared by the transactions and the one-round-trip writes).
fn owner_checks(holder: &str, hid: &str, fence: i64, own: Option<Ownership>, t: f64) -> Result<()> {
    match &own {
        Some(o) if o.holder == holder && o.fence == fence => {
            if o.lease_expires_at < t {
                return Err(Error::LeaseLost { hid: hid.to_string(), expired_ago_s: t - o.lease_expires_at });
            }
            Ok(())
        }
        _ => Err(Error::StaleFence {
            hid: hid.to_string(),
            holder: holder.to_string(),
            presented: fence,
            current: own.as_ref().map(|o| o.fence),
            current_holder: own.map(|o| o.holder),
        }),
    }
}

/// The status check after [`owner_checks`]: the handoff exists and runs.
fn running_check(hid: &str, status: Option<String>) -> Result<()> {
    match status {
        None => Err(Error::UnknownHandoff { hid: hid.to_string() }),
        Some(s) if s == "running" => Ok(()),
        Some(s) => Err(state_err(hid, "write", format!("not running (status={s})"))),
    }
}

/// Verify an envelope for dispatch and render its store text (outside any
/// transaction).
fn prepare_dispatch(env: &Value, cfg: &Config) -> Result<(String, String)> {
    let hid = envelope::verify(env)?;
    if envelope::status(env) != "pending" {
        return Err(state_err(&hid, "dispatch", "envelope not pending"));
    }
    Ok((hid.clone(), envelope_text(env, cfg)?))
}

/// The claim CAS inside a transaction; returns the claimed envelope and
/// the store's time of the claim.
fn claim_in(tx: &mut dyn Tx, cfg: &Config, holder: &str, hid: &str) -> Result<(Value, f64)> {
    let mut env = load(tx, hid)?;
    let st = envelope::status(&env).to_string();
    if st != "pending" {
        return Err(state_err(hid, "claim", format!("status is {st}")));
    }
    let t = tx.now()?;
    let own = Ownership {
        hid: hid.to_string(),
        holder: holder.to_string(),
        fence: 0,
        lease_expires_at: config::lease_expiry(t, cfg.lease_interval_s, cfg.lease_max_missed)?,
        heartbeat_interval_s: cfg.lease_interval_s,
        max_missed: cfg.lease_max_missed,
    };
    if !tx.insert_ownership(&own, t)? {
        return Err(Error::OwnershipLost { hid: hid.to_string(), reason: "claim race lost".into() });
    }
    let ex = exec_mut(&mut env)?;
    ex.insert("status".into(), json!("running"));
    ex.insert("runner_id".into(), json!(holder));
    ex.insert("claimed_at".into(), json::float(t));
    ex.insert("fence".into(), json!(0));
    ex.entry("steps").or_insert(json!(0));
    ex.entry("spend_usd").or_insert(json::float(0.0));
    save(tx, hid, &env, cfg)?;
    Ok((env, t))
}

/// The checkpoint append inside a transaction (see
/// [`Runner::checkpoint_step`]); returns the seq, when steps were counted
/// the updated envelope for the budget check, and the store's time.
#[allow(clippy::too_many_arguments)]
fn append_checkpoint(
    tx: &mut dyn Tx,
    cfg: &Config,
    holder: &str,
    hid: &str,
    fence: i64,
    text: &str,
    hash: &str,
    steps: i64,
) -> Result<(i64, Option<Value>, f64)> {
    check_owner_as(tx, holder, hid, fence)?;
    let seq = tx.next_seq(hid)?;
    if seq >= cfg.max_checkpoints_per_handoff {
        let limit = cfg.max_checkpoints_per_handoff as usize;
        return Err(Error::Oversize { what: "checkpoint count", size: seq as usize, limit });
    }
    let row = CheckpointRow { seq, state_json: text.to_string(), state_hash: hash.to_string(), at: utcnow_iso() };
    if !tx.insert_checkpoint(hid, &row)? {
        return Err(Error::OwnershipLost { hid: hid.to_string(), reason: format!("checkpoint seq {seq} taken") });
    }
    let t = tx.now()?;
    // A checkpoint resets the stall clock and the digest counter.
    let last_digest = tx.progress(hid)?.and_then(|p| p.last_digest);
    tx.put_progress(hid, &Progress { last_checkpoint_at: Some(t), last_digest, digest_repeat_count: 0 }, t)?;
    let mut env = None;
    if steps > 0 {
        let mut e = load(tx, hid)?;
        let ex = exec_mut(&mut e)?;
        let s = ex.get("steps").and_then(Value::as_i64).unwrap_or(0) + steps;
        ex.insert("steps".into(), json!(s));
        save(tx, hid, &e, cfg)?;
        let mut own = tx.ownership(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
        own.lease_expires_at = config::lease_expiry(t, own.heartbeat_interval_s, own.max_missed)?;
        tx.update_ownership(&own, t)?;
        env = Some(e);
    }
    failpoint::hit("checkpoint.in_tx");
    Ok((seq, env, t))
}

/// One checkpoint of a batch: who presents which token for which handoff.
#[derive(Debug, Clone)]
pub struct CheckpointItem {
    pub hid: String,
    pub holder: String,
    pub fence: i64,
    pub state: Value,
}

/// Group commit: append one checkpoint per item — of any handoffs and
/// holders — in ONE write transaction, hence one fsync. Each item gets the
/// checks of [`Runner::checkpoint`] and its own seq or error; `Err` only
/// when the transaction as a whole failed (then nothing was written).
pub fn checkpoint_many(store: &dyn Backend, cfg: &Config, items: &[CheckpointItem]) -> Result<Vec<Result<i64>>> {
    // Hash outside the write lock, as Runner::checkpoint does.
    let prepared: Vec<Result<(String, String)>> =
        items.iter().map(|it| check_hid(&it.hid).map(|_| ()).and_then(|()| checked_state(&it.state, cfg))).collect();
    let mut out = Vec::with_capacity(items.len());
    store.transact(Mode::Write, &mut |tx| {
        out.clear();
        for (it, p) in items.iter().zip(&prepared) {
            out.push(match p {
                Ok((text, hash)) => {
                    Some(append_checkpoint(tx, cfg, &it.holder, &it.hid, it.fence, text, hash, 0).map(|(seq, ..)| seq))
                }
                Err(_) => None,
            });
        }
        Ok(())
    })?;
    Ok(merge(prepared, out))
}

/// Per-item results of a batch: an item refused before the transaction
/// keeps its own (typed) error, the others their outcome inside it.
fn merge<P, R>(prepared: Vec<Result<P>>, done: Vec<Option<Result<R>>>) -> Vec<Result<R>> {
    prepared
        .into_iter()
        .zip(done)
        .map(|(p, d)| match (p, d) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(r)) => r,
            (Ok(_), None) => unreachable!("every prepared item has an outcome"),
        })
        .collect()
}

/// Inside a write transaction: status suspended and the bundle bytes.
fn suspend_in(tx: &mut dyn Tx, cfg: &Config, hid: &str) -> Result<Vec<u8>> {
    let mut env = load(tx, hid)?;
    let st = envelope::status(&env);
    if st != "running" && st != "suspended" {
        return Err(state_err(hid, "suspend", format!("not active (status={st})")));
    }
    exec_mut(&mut env)?.insert("status".into(), json!("suspended"));
    save(tx, hid, &env, cfg)?;
    let rows = materialize(tx, hid, &mut env)?;
    let cps: Vec<Value> = rows
        .iter()
        .map(|r| Ok(json!({"seq": r.seq, "state": crate::store::deep::parse(&r.state_json)?})))
        .collect::<Result<_>>()?;
    let blob = json::canonical(&json!({"dhp_bundle": "1.0", "envelope": env, "checkpoints": cps}))?;
    if blob.len() > cfg.max_envelope_bytes {
        return Err(Error::Oversize { what: "bundle", size: blob.len(), limit: cfg.max_envelope_bytes });
    }
    Ok(blob)
}

/// Write `data` to `path` all or nothing: a temporary file in the same
/// directory, fsynced, renamed over `path`, and the directory fsynced. On
/// failure the temporary file is removed and `path` is untouched.
fn write_file_atomic(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name =
        path.file_name().ok_or_else(|| Error::validation(format!("bundle path {} names no file", path.display())))?;
    let tmp =
        dir.join(format!(".{}.tmp-{}-{:016x}", name.to_string_lossy(), std::process::id(), rand::random::<u64>()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    // The rename is durable once the directory is; a failure here leaves
    // the complete file in place, so it is not an error worth a rollback.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Fill `execution.checkpoints` from the rows, as the reference does.
fn materialize(tx: &mut dyn Tx, hid: &str, env: &mut Value) -> Result<Vec<CheckpointRow>> {
    let rows = tx.checkpoints(hid)?;
    let list: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"seq": r.seq, "state_hash": r.state_hash, "at": r.at,
                   "state_uri": format!("sqlite:checkpoints/{hid}/{}", r.seq)})
        })
        .collect();
    exec_mut(env)?.insert("checkpoints".into(), Value::Array(list));
    Ok(rows)
}

/// A committed checkpoint of [`Runner::checkpoint_step`].
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub hid: String,
    pub seq: i64,
    /// Set when the counted steps put the handoff over its budget.
    pub over_budget: Option<String>,
}

impl Step {
    /// `Err(BudgetExceeded)` when over budget.
    pub fn enforce_budget(&self) -> Result<i64> {
        match &self.over_budget {
            Some(reason) => Err(Error::BudgetExceeded { hid: self.hid.clone(), reason: reason.clone() }),
            None => Ok(self.seq),
        }
    }
}

/// What a worker holds after claim or recover: the handoff id and its
/// fencing token. Every call re-validates against the store.
pub struct TaskContext {
    runner: Runner,
    hid: String,
    fence: i64,
    heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext").field("hid", &self.hid).field("fence", &self.fence).finish()
    }
}

impl TaskContext {
    fn new(runner: Runner, hid: &str, fence: i64) -> Self {
        TaskContext { runner, hid: hid.to_string(), fence, heartbeat: None }
    }

    pub fn hid(&self) -> &str {
        &self.hid
    }

    pub fn fence(&self) -> i64 {
        self.fence
    }

    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// Heartbeat in a background thread every `interval` (default: half
    /// the lease interval) until complete, release, drop or a lost lease.
    pub fn start_heartbeat(&mut self, interval: Option<Duration>) {
        if self.heartbeat.is_some() {
            return;
        }
        // A validated config keeps the interval within (0, MAX_KNOB_S].
        let half = config::duration_from_secs(
            "DHP_LEASE_INTERVAL_S / 2",
            self.runner.cfg.lease_interval_s / 2.0,
            config::MAX_KNOB_S,
        );
        let interval = interval.or(half.ok()).unwrap_or(Duration::from_secs(1));
        let (tx, rx) = mpsc::channel::<()>();
        let (runner, hid, fence) = (self.runner.clone(), self.hid.clone(), self.fence);
        let handle = std::thread::Builder::new()
            .name(format!("dhp-hb-{}", &hid[..8]))
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                    if let Err(e) = runner.heartbeat(&hid, fence) {
                        // The next explicit call surfaces the real error.
                        tracing::debug!(error = %e, "background heartbeat stopped");
                        break;
                    }
                }
            })
            .expect("spawning the heartbeat thread");
        self.heartbeat = Some((tx, handle));
    }

    /// Stop the background heartbeat, if running.
    pub fn stop_heartbeat(&mut self) {
        if let Some((tx, handle)) = self.heartbeat.take() {
            drop(tx);
            let _ = handle.join();
        }
    }

    pub fn checkpoint(&self, state: &Value) -> Result<i64> {
        self.runner.checkpoint(&self.hid, self.fence, state)
    }

    /// Checkpoint, count steps and extend the lease in one transaction.
    pub fn checkpoint_step(&self, state: &Value, steps: i64) -> Result<Step> {
        self.runner.checkpoint_step(&self.hid, self.fence, state, steps)
    }

    pub fn heartbeat(&self) -> Result<f64> {
        self.runner.heartbeat(&self.hid, self.fence)
    }

    pub fn note_step(&self, n: i64) -> Result<()> {
        self.runner.note_step(&self.hid, self.fence, n)
    }

    pub fn note_spend(&self, usd: f64) -> Result<()> {
        self.runner.note_spend(&self.hid, self.fence, usd)
    }

    pub fn last_checkpoint(&self) -> Result<Option<Value>> {
        self.runner.last_checkpoint(&self.hid)
    }

    pub fn record_effect(&self, step_id: &str, result: &Value) -> Result<bool> {
        self.runner.record_effect(&self.hid, self.fence, step_id, result)
    }

    pub fn effect_done(&self, step_id: &str) -> Result<Option<Value>> {
        self.runner.effect_done(&self.hid, self.fence, step_id)
    }

    pub fn note_activity(&self, digest: &str) -> Result<i64> {
        self.runner.note_activity(&self.hid, self.fence, digest)
    }

    pub fn request_approval(&self, action_class: &str, details: &Value, timeout_s: f64) -> Result<()> {
        self.runner.request_approval(&self.hid, self.fence, action_class, details, timeout_s)
    }

    pub fn await_approval(&self, approval_id: &str, poll: Duration) -> Result<()> {
        self.runner.await_approval(&self.hid, self.fence, approval_id, poll)
    }

    pub fn require_capability(&self, domain: &str, resource: &str) -> Result<()> {
        self.runner.require_capability(&self.hid, self.fence, domain, resource)
    }

    pub fn complete(&mut self, result: &Value) -> Result<()> {
        self.stop_heartbeat();
        self.runner.complete(&self.hid, self.fence, result)
    }

    pub fn release(&mut self, reason: &str) -> Result<()> {
        self.stop_heartbeat();
        self.runner.release(&self.hid, self.fence, reason)
    }
}

impl Drop for TaskContext {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

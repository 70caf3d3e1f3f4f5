//! The runner: a handoff's lifecycle from dispatch to ack (the reference's
//! `Runner3`), each operation one store transaction.
//!
//! Every mutation by a worker presents its [`Lease`] (handoff id and fence,
//! granted by claim or recover) under its worker id, and is checked inside
//! the same transaction that writes: a stale fence is
//! [`Error::StaleFence`], an expired lease [`Error::LeaseLost`], a handoff that
//! is not running [`Error::State`]. A checkpoint costs the same whatever the
//! number of earlier checkpoints: it reads the ownership row, the status and
//! the highest seq (one index seek), and inserts one row.

mod approvals;
mod batch;
mod bundle;
mod capabilities;
mod context;
mod effects;
mod lifecycle;
mod live_lease;
mod one_trip;
mod reads;

pub use batch::{checkpoint_many, CheckpointItem};
pub use context::TaskContext;
pub use lifecycle::Step;

use live_lease::LiveLease;

use crate::config::Config;
use crate::envelope::{self, check_worker_id};
use crate::error::{Error, Result};
use crate::id::WorkerId;
use crate::json;
use crate::lease::Fence;
use crate::lease::Lease;
use crate::status::{Op, Status};
use crate::store::{self, with_tx, Backend, BudgetUsage, Mode, Ownership, StoreLocation, Tx};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Arc;

/// A worker's handle on the protocol, bound to one worker id.
#[derive(Clone)]
pub struct Runner {
    store: Arc<dyn Backend>,
    cfg: Config,
    id: WorkerId,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("id", &self.id).field("store", &self.store.describe()).finish()
    }
}

/// Serialize an envelope for the store: checkpoints emptied (rows are the
/// source of truth), Python `json.dumps` text, size-checked.
pub(crate) fn envelope_text(env: &Value, cfg: &Config) -> Result<String> {
    // The stored text's checkpoint list is always empty. An envelope read
    // from a store has it so already: written as it is, not deep-copied
    // first (the copy was a third of a claim's envelope work).
    let text = match env.get("execution").and_then(Value::as_object) {
        Some(ex) if ex.get("checkpoints").and_then(Value::as_array).is_none_or(|a| !a.is_empty()) => {
            let mut env = env.clone();
            if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
                ex.insert("checkpoints".into(), json!([]));
            }
            json::dumps(&env)?
        }
        _ => json::dumps(env)?,
    };
    if text.len() > cfg.max_envelope_bytes {
        return Err(Error::Oversize { what: "envelope", size: text.len(), limit: cfg.max_envelope_bytes });
    }
    Ok(text)
}

pub(crate) fn load(tx: &mut dyn Tx, hid: &str) -> Result<Value> {
    tx.envelope(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })
}

pub(crate) fn save(tx: &mut dyn Tx, hid: &str, env: &Value, cfg: &Config) -> Result<()> {
    if tx.update_envelope(hid, &envelope_text(env, cfg)?, cfg.clock.store_time())? {
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
        let execution = env.get("execution");
        let ex = |k: &str| execution.and_then(|e| e.get(k)).and_then(Value::as_f64);
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
        // A counter at its limit (a sum that did not fit) is an overrun
        // with or without a cap: fail closed.
        reasons.extend(crate::budget::at_limit(steps, spend));
        let steps_full = crate::budget::at_limit(steps, 0.0).is_some();
        if let Some(max) = self.max_steps.filter(|m| steps > *m && !steps_full) {
            reasons.push(format!("steps {steps} > {max}"));
        }
        let spend_full = crate::budget::at_limit(0.0, spend).is_some();
        if let Some(max) = self.max_spend_usd.filter(|m| spend > *m && !spend_full) {
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
        let id = WorkerId::parse(worker_id)?;
        cfg.validate()?;
        Ok(Runner { store, cfg, id })
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
    pub fn id(&self) -> &WorkerId {
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
        let id = WorkerId::parse(worker_id)?;
        Ok(Runner { store: self.store.clone(), cfg: self.cfg.clone(), id })
    }

    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        with_tx(self.store.as_ref(), Mode::Write, f)
    }

    fn read<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        with_tx(self.store.as_ref(), Mode::Read, f)
    }

    /// Protocol time inside a transaction (the configured [`Clock`]).
    ///
    /// [`Clock`]: crate::clock::Clock
    fn now_in(&self, tx: &mut dyn Tx) -> Result<crate::StoreTime> {
        self.cfg.clock.now_in(tx)
    }

    /// Inside a transaction: the presented lease is the current owner's,
    /// still live, and the handoff is running.
    fn check_owner<'a>(&self, tx: &mut dyn Tx, lease: &'a Lease) -> Result<LiveLease<'a>> {
        check_owner_as(tx, &self.cfg, &self.id, lease)
    }

    /// A worker's write transaction: the lease is checked first, and is
    /// still live after `f`'s last stamp, just before the commit
    /// ([`LiveLease::still_live`]).
    fn write_owned<R>(&self, lease: &Lease, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.write(|tx| {
            let live = self.check_owner(tx, lease)?;
            let out = f(tx)?;
            live.still_live(tx, &self.cfg)?;
            Ok(out)
        })
    }
}

/// Inside a transaction: `holder` presenting `lease` is the current owner,
/// its lease is live and the handoff's status admits a write. A write must
/// check the returned lease again before it commits.
fn check_owner_as<'a>(tx: &mut dyn Tx, cfg: &Config, holder: &WorkerId, lease: &'a Lease) -> Result<LiveLease<'a>> {
    let (hid, fence) = (lease.hid().as_str(), lease.fence());
    let own = tx.ownership(hid)?;
    let (t, until) = match &own {
        Some(o) if o.holder == holder && o.fence == fence => (cfg.clock.now_in(tx)?.secs(), o.lease_expires_at),
        _ => (f64::NAN, f64::NAN), // not read: the fence check fails first
    };
    owner_checks(holder, hid, fence, own, t)?;
    running_check(hid, tx.status(hid)?)?;
    Ok(LiveLease::new(hid, until))
}

/// The fence and lease checks on an ownership row read at store time `t`
/// (shared by the transactions and the one-round-trip writes).
fn owner_checks(holder: &WorkerId, hid: &str, fence: Fence, own: Option<Ownership>, t: f64) -> Result<()> {
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

/// The status check after [`owner_checks`]: the handoff exists and its
/// status admits a write.
fn running_check(hid: &str, status: Option<String>) -> Result<()> {
    match status {
        None => Err(Error::UnknownHandoff { hid: hid.to_string() }),
        Some(s) if s.parse::<Status>().ok().and_then(|s| s.after(Op::Write)).is_some() => Ok(()),
        Some(s) => Err(state_err(hid, "write", format!("not running (status={s})"))),
    }
}

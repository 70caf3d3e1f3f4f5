//! Storage behind a trait.
//!
//! A [`Backend`] hands out transactions; a [`Tx`] offers plain storage
//! primitives (rows in, rows out) and no protocol decisions. All protocol
//! logic — who may write, when a lease is lost, what orphaning means — lives
//! in [`crate::runner`] and [`crate::supervisor`] and runs inside one
//! transaction per operation, so a compare-and-set is exactly as atomic as
//! the backend's transaction. A Postgres backend implements the same two
//! traits (`BEGIN; SELECT … FOR UPDATE`) without touching that logic.
//!
//! [`sqlite::SqliteStore`] is the implementation shared with the reference:
//! the same file, schema v3, WAL mode, and `BEGIN IMMEDIATE` for writes.
//! [`mem::MemStore`] is a second, in-memory implementation; the same
//! protocol scenarios run on both (`tests/it/backends.rs`).
//! [`postgres::PgStore`] keeps the same tables in a PostgreSQL schema, so
//! workers and supervisors on many hosts share one store; [`open`] picks
//! the backend from a ROOT string ([`location::StoreLocation`]).

pub mod dashboard_view;
pub mod deadline;
pub mod deep;
pub mod location;
pub mod mem;
pub mod postgres;
pub mod root;
pub mod sqlite;

use crate::error::Result;
use crate::id::WorkerId;
use crate::lease::Fence;
use crate::status::{ApprovalOp, ApprovalStatus, Status};
use crate::store_time::StoreTime;
use serde_json::Value;

pub use location::StoreLocation;
pub use mem::MemStore;
pub use postgres::PgStore;
pub use root::{open_root, OpenMode, OpenedRoot};
pub use sqlite::writer_queue;
pub use sqlite::SqliteStore;

/// The schema version this crate reads and writes.
pub const SCHEMA_VERSION: i64 = 3;

/// One row of the `ownership` table: the lease and fencing token.
#[derive(Debug, Clone, PartialEq)]
pub struct Ownership {
    /// The handoff.
    pub hid: String,
    /// The runner holding the lease.
    pub holder: String,
    /// The fencing token: grows by one with every claim or recovery.
    pub fence: Fence,
    /// When the lease runs out (store clock, Unix seconds).
    pub lease_expires_at: f64,
    /// The holder's heartbeat interval in seconds.
    pub heartbeat_interval_s: f64,
    /// Heartbeats the holder may miss before the lease expires.
    pub max_missed: i64,
}

/// One row of the `checkpoints` table.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRow {
    /// Sequence number, from 0 without gaps.
    pub seq: i64,
    /// `json.dumps(state, sort_keys=True)`.
    pub state_json: String,
    /// SHA-256 (hex) of `state_json`.
    pub state_hash: String,
    /// ISO-8601 UTC.
    pub at: String,
}

/// The `leadership` row.
#[derive(Debug, Clone, PartialEq)]
pub struct Leadership {
    /// The supervisor that leads.
    pub holder: String,
    /// When the leadership runs out unless renewed (store clock, Unix seconds).
    pub expires_at: f64,
}

/// A row of the `approvals` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The approval request's id.
    pub approval_id: String,
    /// The handoff that asked.
    pub hid: String,
    /// The contract's action class needing approval.
    pub action_class: String,
    /// What the action would do, as JSON text.
    pub details_json: String,
    /// Pending, approved, denied or expired.
    pub status: ApprovalStatus,
    /// When it was requested (Unix seconds).
    pub created_at: f64,
    /// When a pending request expires (Unix seconds).
    pub expires_at: f64,
    /// When it was decided, if it was (Unix seconds).
    pub decided_at: Option<f64>,
}

/// A row of the `progress` table (stall detection).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// When the last checkpoint was written (Unix seconds).
    pub last_checkpoint_at: Option<f64>,
    /// Digest of the last checkpoint state.
    pub last_digest: Option<String>,
    /// How many checkpoints in a row had that digest.
    pub digest_repeat_count: i64,
}

/// A row of the `capability_audit` table.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityAudit {
    /// The capability's domain.
    pub domain: String,
    /// The resource asked for.
    pub resource: String,
    /// Whether the contract allowed it.
    pub granted: bool,
    /// When it was asked (Unix seconds).
    pub at: f64,
}

/// Budget usage and caps of a handoff (execution counters and contract
/// budget), as the supervisor's budget check needs them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BudgetUsage {
    /// The handoff.
    pub hid: String,
    /// Steps taken so far.
    pub steps: Option<f64>,
    /// Spend so far, in US dollars.
    pub spend_usd: Option<f64>,
    /// When the handoff was first claimed (Unix seconds).
    pub claimed_at: Option<f64>,
    /// The contract's step cap.
    pub max_steps: Option<f64>,
    /// The contract's spend cap, in US dollars.
    pub max_spend_usd: Option<f64>,
    /// The contract's wall-clock cap, in seconds.
    pub max_wallclock_s: Option<f64>,
}

/// A handoff's status beside its ownership row: what the supervisor's
/// consistency pass (torn states, quarantine) looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairing {
    /// The handoff.
    pub hid: String,
    /// `execution.status` when the backend could read it as a string;
    /// `None` when it could not (corrupt or very deep JSON, no status, a
    /// status that is not a string): the caller parses the envelope itself.
    pub status: Option<String>,
    /// Its ownership row, if there is one.
    pub ownership: Option<Ownership>,
    /// When the ownership row was last written, if the backend keeps it.
    pub ownership_updated_at: Option<f64>,
}

/// What a one-round-trip write ([`Backend::checkpoint_once`],
/// [`Backend::heartbeat_once`]) read under the handoff's lock, before it
/// decided whether to write: the runner judges it with the same checks as
/// its transactions (fence, lease, status), so errors are identical.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerSeen {
    /// The handoff's ownership row, if any.
    pub ownership: Option<Ownership>,
    /// `execution.status` (`""` when unset); `None`: no such handoff.
    pub status: Option<String>,
    /// The store's time when the lock was granted ([`Tx::now`]).
    pub now: f64,
}

/// From the stored envelope text, the new one (`None`: cannot; leave it to
/// the transaction).
pub type EnvelopeBump<'a> = &'a mut dyn FnMut(&str) -> Option<String>;

/// A checkpoint for [`Backend::checkpoint_once`].
pub struct CheckpointReq<'a> {
    /// The runner presenting the lease.
    pub holder: &'a WorkerId,
    /// The handoff.
    pub hid: &'a str,
    /// The fencing token presented.
    pub fence: Fence,
    /// `json.dumps(state, sort_keys=True)`.
    pub state_json: &'a str,
    /// SHA-256 (hex) of `state_json`.
    pub state_hash: &'a str,
    /// ISO-8601 UTC time of the checkpoint.
    pub at: &'a str,
    /// The most checkpoints the handoff may have.
    pub max_checkpoints: i64,
    /// Counted steps: from the stored envelope text, the new one (`steps`
    /// added); `None` leaves the whole checkpoint to the transaction. The
    /// lease is then extended as well.
    pub bump: Option<EnvelopeBump<'a>>,
}

/// Outcome of [`Backend::checkpoint_once`]. When the checks passed, the
/// seq is under the cap and nothing was inserted, the caller runs its
/// transaction (the backend left the decision to it).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointOnce {
    /// What the write read under the lock.
    pub seen: OwnerSeen,
    /// The next seq, when the ownership checks passed.
    pub seq: Option<i64>,
    /// The row was inserted (and the progress row reset): committed.
    pub inserted: bool,
    /// With counted steps: the new lease expiry, written with the row.
    pub lease_expires_at: Option<f64>,
}

/// Outcome of [`Backend::heartbeat_once`].
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatOnce {
    /// What the write read under the lock.
    pub seen: OwnerSeen,
    /// The new lease expiry, when written (committed). `None` with passing
    /// checks: the backend left this lease to the generic transaction.
    pub lease_expires_at: Option<f64>,
}

/// Whether a transaction may write. Writers serialize at begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read only: may run beside other readers and a writer.
    Read,
    /// May write: serialized with every other writer.
    Write,
}

/// A durable store of handoffs.
pub trait Backend: Send + Sync {
    /// Run `f` in one transaction: committed if `f` returns `Ok`, rolled
    /// back otherwise (including on panic).
    fn transact(&self, mode: Mode, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// A short description (path) for messages.
    fn describe(&self) -> String;

    /// Publish a liveness token for `holder` that this backend's
    /// supervisors can test ([`Tx::dead_holders`]); dropping it withdraws
    /// it. `Ok(None)`: the backend has none (same-host `flock` tokens under
    /// the store directory are then used, see [`crate::liveness`]).
    fn publish_liveness(&self, holder: &WorkerId) -> Result<Option<LivenessToken>> {
        let _ = holder;
        Ok(None)
    }

    /// A whole checkpoint append — the checks and writes of the runner's
    /// checkpoint transaction (the owner's fence and live lease, status
    /// running, seq under the cap, the row inserted, the progress row's
    /// stall clock reset; with counted steps also the envelope's `steps`
    /// and the lease) — as one transaction in one round trip (two with
    /// steps), where the backend can run it server-side. `Ok(None)`: not
    /// offered; the caller runs its generic transaction.
    fn checkpoint_once(&self, req: CheckpointReq<'_>) -> Result<Option<CheckpointOnce>> {
        let _ = req;
        Ok(None)
    }

    /// A heartbeat (owner checks, lease extended by its interval × max
    /// missed) as one transaction in one round trip; `Ok(None)`: not
    /// offered, as for [`Backend::checkpoint_once`].
    fn heartbeat_once(&self, holder: &WorkerId, hid: &str, fence: Fence) -> Result<Option<HeartbeatOnce>> {
        let _ = (holder, hid, fence);
        Ok(None)
    }

    /// Block until an orphan is announced or `timeout` passes; `true` if
    /// woken by an announcement. Backends without announcements sleep.
    fn wait_for_orphan(&self, timeout: std::time::Duration) -> Result<bool> {
        std::thread::sleep(timeout);
        Ok(false)
    }
}

/// Open an existing store only: a location without a DHP store is an
/// error ([`crate::Error::NoStore`], [`crate::Error::NotAStore`]) and
/// nothing is written.
pub fn open_existing(root: &StoreLocation) -> Result<std::sync::Arc<dyn Backend>> {
    Ok(match root {
        StoreLocation::Dir(dir) => open_root(dir, OpenMode::Existing)?.backend,
        StoreLocation::Postgres(pg) => std::sync::Arc::new(PgStore::open_existing(pg)?),
    })
}

/// A held liveness token: dropping it withdraws it.
pub type LivenessToken = Box<dyn std::any::Any + Send>;

/// Open the store at a ROOT: a directory (SQLite, created if needed) or a
/// `postgres://` URL (the schema and its tables created on first use).
pub fn open(root: &StoreLocation) -> Result<std::sync::Arc<dyn Backend>> {
    Ok(match root {
        StoreLocation::Dir(dir) => std::sync::Arc::new(SqliteStore::open(dir)?),
        StoreLocation::Postgres(pg) => std::sync::Arc::new(PgStore::open(pg)?),
    })
}

/// Run `f` in a transaction and return its value.
pub fn with_tx<R>(b: &dyn Backend, mode: Mode, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
    let mut out = None;
    b.transact(mode, &mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    Ok(out.expect("transact returned Ok without running the closure"))
}

/// Storage primitives inside one transaction. No protocol rules here.
pub trait Tx {
    // ---- handoffs ----
    /// The stored envelope (its `execution.checkpoints` is empty).
    fn envelope(&mut self, hid: &str) -> Result<Option<Value>>;
    /// `execution.status` without parsing the whole envelope.
    fn status(&mut self, hid: &str) -> Result<Option<String>>;
    /// Insert; `false` if the hid exists already.
    fn insert_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool>;
    /// Replace; `false` if the hid does not exist.
    fn update_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool>;
    /// Every hid, sorted.
    fn all_hids(&mut self) -> Result<Vec<String>>;
    /// Hids whose `execution.status` is `status`.
    fn hids_with_status(&mut self, status: Status) -> Result<Vec<String>>;
    /// Budget usage of every running handoff, without materializing the
    /// envelopes (one query for the supervisor's scan).
    fn running_budgets(&mut self) -> Result<Vec<BudgetUsage>>;
    /// Every handoff that may be torn or unreadable, with its ownership
    /// row. A backend may leave out rows that are certainly consistent
    /// (e.g. `completed` with no ownership row); this default returns all,
    /// built from the primitives above, and never fails because one
    /// envelope is unreadable.
    fn pairings(&mut self) -> Result<Vec<Pairing>> {
        let mut out = Vec::new();
        for hid in self.all_hids()? {
            let status = self.status(&hid).ok().flatten().filter(|s| !s.is_empty());
            let ownership = self.ownership(&hid)?;
            out.push(Pairing { hid, status, ownership, ownership_updated_at: None });
        }
        Ok(out)
    }

    /// [`Tx::pairings`] of just these hids, consistent ones included (the
    /// consistency pass between full passes: the rows written since).
    fn pairings_of(&mut self, hids: &[String]) -> Result<Vec<Pairing>> {
        let want: std::collections::HashSet<&str> = hids.iter().map(String::as_str).collect();
        Ok(self.pairings()?.into_iter().filter(|p| want.contains(p.hid.as_str())).collect())
    }

    /// At most `limit` hids greater than `after` (all when `None`), sorted:
    /// one page of a listing that never loads the whole table.
    fn hids_page(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        Ok(self.all_hids()?.into_iter().filter(|h| after.is_none_or(|a| h.as_str() > a)).take(limit).collect())
    }
    /// [`Tx::running_budgets`] of just these hids (those running).
    fn running_budgets_of(&mut self, hids: &[String]) -> Result<Vec<BudgetUsage>> {
        let want: std::collections::HashSet<&str> = hids.iter().map(String::as_str).collect();
        Ok(self.running_budgets()?.into_iter().filter(|u| want.contains(u.hid.as_str())).collect())
    }
    /// Rows written at or after `since`: `(hid, updated_at)` of every
    /// `handoffs`, `ownership` and `progress` row whose `updated_at` is not
    /// earlier (a hid may appear once per table). `Ok(None)`: the backend
    /// cannot tell cheaply, and the caller looks at everything.
    fn changed_since(&mut self, since: StoreTime) -> Result<Option<Vec<(String, f64)>>> {
        let _ = since;
        Ok(None)
    }

    // ---- checkpoints ----
    /// Next seq: one past the highest (0 when none). O(log n).
    fn next_seq(&mut self, hid: &str) -> Result<i64>;
    /// `INSERT OR IGNORE`; `true` if inserted.
    fn insert_checkpoint(&mut self, hid: &str, row: &CheckpointRow) -> Result<bool>;
    /// The row with the highest seq, if any.
    fn last_checkpoint(&mut self, hid: &str) -> Result<Option<CheckpointRow>>;
    /// All rows in seq order.
    fn checkpoints(&mut self, hid: &str) -> Result<Vec<CheckpointRow>>;
    /// How many checkpoint rows the handoff has.
    fn checkpoint_count(&mut self, hid: &str) -> Result<i64>;

    // ---- ownership ----
    /// The handoff's ownership row, if any.
    fn ownership(&mut self, hid: &str) -> Result<Option<Ownership>>;
    /// `INSERT OR IGNORE`; `true` if inserted.
    fn insert_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool>;
    /// Overwrite the row for `o.hid`; `true` if a row was updated.
    fn update_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool>;
    /// Delete the handoff's ownership row (none is fine).
    fn delete_ownership(&mut self, hid: &str) -> Result<()>;
    /// Running handoffs whose lease expired before `now`.
    fn expired_leases(&mut self, now: StoreTime) -> Result<Vec<String>>;
    /// Every ownership row not held by the orphan tombstone (cheap: the
    /// caller re-checks the handoff's status before acting).
    fn held_ownerships(&mut self) -> Result<Vec<Ownership>>;

    /// The ownership rows held by `holder`.
    fn ownerships_held_by(&mut self, holder: &str) -> Result<Vec<Ownership>> {
        Ok(self.held_ownerships()?.into_iter().filter(|o| o.holder == holder).collect())
    }

    // ---- leadership ----
    /// The supervisors' leadership row, if any.
    fn leadership(&mut self) -> Result<Option<Leadership>>;
    /// Write the leadership row (insert or overwrite).
    fn put_leadership(&mut self, l: &Leadership, now: StoreTime) -> Result<()>;

    // ---- effects ----
    /// Record an effect's result once; `true` if inserted, `false` if the step was already recorded.
    fn insert_effect(&mut self, hid: &str, step_id: &str, result_json: &str, now: StoreTime) -> Result<bool>;
    /// The recorded result (JSON text) of a step, if any.
    fn effect(&mut self, hid: &str, step_id: &str) -> Result<Option<String>>;
    /// How many effects the handoff recorded.
    fn effect_count(&mut self, hid: &str) -> Result<i64>;

    // ---- approvals ----
    /// Insert an approval request.
    fn insert_approval(&mut self, a: &Approval) -> Result<()>;
    /// The approval request with this id, if any.
    fn approval(&mut self, approval_id: &str) -> Result<Option<Approval>>;
    /// Apply `op` to a pending approval (see [`ApprovalStatus::after`]);
    /// `true` if it was pending.
    fn decide_approval(&mut self, approval_id: &str, op: ApprovalOp, now: StoreTime) -> Result<bool>;
    /// Mark pending approvals past their expiry as expired; returns how many.
    fn expire_approvals(&mut self, now: StoreTime) -> Result<usize>;
    /// Every approval request of a handoff.
    fn approvals_for(&mut self, hid: &str) -> Result<Vec<Approval>>;
    /// Whether [`Tx::expire_approvals`] would expire anything (a read, so
    /// that a scan with nothing to expire takes no write lock). `true`
    /// when the backend cannot tell.
    fn approvals_to_expire(&mut self, now: StoreTime) -> Result<bool> {
        let _ = now;
        Ok(true)
    }

    // ---- progress ----
    /// The handoff's progress row (stall detection), if any.
    fn progress(&mut self, hid: &str) -> Result<Option<Progress>>;
    /// Write the handoff's progress row (insert or overwrite).
    fn put_progress(&mut self, hid: &str, p: &Progress, now: StoreTime) -> Result<()>;
    /// A checkpoint at `t`: the stall clock restarts and the digest counter
    /// goes to 0, the last digest is kept (the row is made if missing).
    /// Backends may do it in one statement instead of a read and a write.
    fn progress_checkpointed(&mut self, hid: &str, t: StoreTime) -> Result<()> {
        let last_digest = self.progress(hid)?.and_then(|p| p.last_digest);
        self.put_progress(hid, &Progress { last_checkpoint_at: Some(t.secs()), last_digest, digest_repeat_count: 0 }, t)
    }
    /// Live, running handoffs with no checkpoint since `cutoff` or a digest
    /// repeated `max_repeats` times.
    fn stalled(&mut self, now: StoreTime, cutoff: StoreTime, max_repeats: i64) -> Result<Vec<String>>;
    /// [`Tx::stalled`] among just these hids.
    fn stalled_of(
        &mut self,
        hids: &[String],
        now: StoreTime,
        cutoff: StoreTime,
        max_repeats: i64,
    ) -> Result<Vec<String>> {
        let want: std::collections::HashSet<&str> = hids.iter().map(String::as_str).collect();
        Ok(self.stalled(now, cutoff, max_repeats)?.into_iter().filter(|h| want.contains(h.as_str())).collect())
    }

    // ---- capability audit ----
    /// Append a capability check to the audit.
    fn insert_capability_audit(&mut self, hid: &str, a: &CapabilityAudit) -> Result<()>;
    /// The handoff's capability checks, oldest first.
    fn capability_audit(&mut self, hid: &str) -> Result<Vec<CapabilityAudit>>;

    // ---- time and liveness (defaults: local clock, no tokens) ----
    /// The time leases and leadership are measured in, seconds since the
    /// epoch. One clock for every process sharing the store: the local
    /// clock for a file store, the database server's for PostgreSQL.
    fn now(&mut self) -> Result<StoreTime> {
        Ok(StoreTime::now_local())
    }
    /// [`Tx::now`] read again now, for a store whose `now` keeps the
    /// transaction's first reading.
    fn now_fresh(&mut self) -> Result<StoreTime> {
        self.now()
    }
    /// Of `holders`, those that published a liveness token in this store
    /// ([`Backend::publish_liveness`]) and no longer hold it.
    fn dead_holders(&mut self, holders: &[String]) -> Result<Vec<String>> {
        let _ = holders;
        Ok(Vec::new())
    }
    /// Withdraw the liveness listing of `holder`, found dead and its rows
    /// orphaned, unless its token is held again by now: a process that
    /// later reuses the id without a token is lease-only, not dead.
    /// Returns whether a listing went.
    fn forget_dead_holder(&mut self, holder: &str) -> Result<bool> {
        let _ = holder;
        Ok(false)
    }
    /// Announce, at commit, that `hid` was orphaned (wakes standbys in
    /// [`Backend::wait_for_orphan`]).
    fn announce_orphan(&mut self, hid: &str) -> Result<()> {
        let _ = hid;
        Ok(())
    }
}

//! Riding through a lost database server in `dhp work` on PostgreSQL: a
//! failover or switchover (a multi-host URL), a restart, a network blip.
//!
//! When a call fails because the server was lost ([`Error::is_server_lost`]:
//! the connection broke, or the server turned read-only / is in recovery),
//! the worker does not exit. Within its lease it reconnects — the store
//! handle opens a new connection on the next call, to whichever host of the
//! URL now takes writes — has its liveness keeper take the lock again (a
//! new primary or a restarted server holds no advisory locks), and re-reads
//! its ownership under the handoff's lock, with the server's clock:
//! - a checkpoint whose outcome is unknown (the connection broke during
//!   the call) is settled by that read: the next seq holds this state →
//!   it was committed (never written twice); the seq did not move → it was
//!   not, and it is written again through the normal call, whose fence and
//!   lease check is in the same transaction as the write (never skipped);
//! - a worker that no longer holds the lease with its fence is refused by
//!   that normal call with today's typed error (fenced out, as before).
//!
//! Reconnecting is bounded by the lease: past the last renewal's start plus
//! the lease TTL the lease has run out on the server's clock too, and the
//! worker exits with the store error (11) as before. The read under the
//! lock waits behind a commit of this worker's still in flight on the same
//! server (it holds that lock), so that commit cannot land after the read.

use dhp_core::error::{Error, Result};
use dhp_core::json;
use dhp_core::lease::Lease;
use dhp_core::runner::{Runner, Step, TaskContext};
use dhp_core::store::postgres::live::PgToken;
use dhp_core::store::{with_tx, CheckpointRow, Mode, Ownership};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Pause between reconnect attempts while no host takes writes.
const RETRY: Duration = Duration::from_millis(100);

/// What the worker reads back after reconnecting, under the handoff's lock.
#[derive(Debug)]
struct Seen {
    status: Option<String>,
    ownership: Option<Ownership>,
    last: Option<CheckpointRow>,
    /// The server's clock (Unix seconds).
    now: f64,
}

/// The riding state of one worker run.
pub struct Ride {
    runner: Runner,
    lease: Lease,
    ttl: Duration,
    /// When the last call that renewed the lease began (a conservative
    /// start of the lease on the server's clock).
    renewed: Arc<Mutex<Instant>>,
    heartbeat: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Ride {
    /// Ride through for the lease of `ctx`, begun at `claimed` (the instant
    /// the claim or recovery was sent).
    pub fn new(ctx: &TaskContext, claimed: Instant) -> Ride {
        let cfg = ctx.runner().config();
        Ride {
            runner: ctx.runner().clone(),
            lease: ctx.lease().clone(),
            ttl: Duration::try_from_secs_f64(cfg.lease_ttl_s()).unwrap_or(Duration::ZERO),
            renewed: Arc::new(Mutex::new(claimed)),
            heartbeat: None,
        }
    }

    /// When the lease runs out at the latest without another renewal.
    fn deadline(&self) -> Instant {
        *self.renewed.lock().unwrap_or_else(|p| p.into_inner()) + self.ttl
    }

    fn renewed_at(&self, sent: Instant) {
        let mut r = self.renewed.lock().unwrap_or_else(|p| p.into_inner());
        *r = (*r).max(sent);
    }

    /// Heartbeat from a thread of its own every half lease interval. Unlike
    /// [`TaskContext::start_heartbeat`] it goes on after a lost server
    /// (each call reconnects), so the lease is renewed as soon as a host
    /// takes writes again; it stops when the lease is refused.
    pub fn start_heartbeat(&mut self) -> Result<()> {
        let every = Duration::try_from_secs_f64(self.runner.config().lease_interval_s / 2.0)
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(10));
        let stop = Arc::new(AtomicBool::new(false));
        let (runner, lease, renewed, flag) =
            (self.runner.clone(), self.lease.clone(), self.renewed.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("dhp-hb-ride".into())
            .spawn(move || {
                while sleep_unless(&flag, every) {
                    let sent = Instant::now();
                    match runner.heartbeat(&lease) {
                        Ok(_) => {
                            let mut r = renewed.lock().unwrap_or_else(|p| p.into_inner());
                            *r = (*r).max(sent);
                        }
                        Err(e) if e.is_server_lost() => tracing::debug!(error = %e, "heartbeat: server lost"),
                        Err(e) => {
                            // The next checkpoint surfaces the real error.
                            tracing::debug!(error = %e, "background heartbeat stopped");
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::validation_from(format!("cannot start the heartbeat thread: {e}"), e))?;
        self.heartbeat = Some((stop, handle));
        Ok(())
    }

    /// Stop the heartbeat thread (before completing or releasing).
    pub fn stop_heartbeat(&mut self) {
        if let Some((stop, handle)) = self.heartbeat.take() {
            stop.store(true, Ordering::SeqCst);
            let _ = handle.join();
        }
    }

    /// Checkpoint `state` (one step) after the row `prev` (the last seq
    /// this lease knows), riding through a lost server (see the module).
    pub fn checkpoint(
        &self,
        ctx: &TaskContext,
        token: Option<&PgToken>,
        state: &Value,
        prev: Option<i64>,
    ) -> Result<Step> {
        loop {
            let sent = Instant::now();
            let lost = match ctx.checkpoint_step(state, 1) {
                Ok(step) => {
                    self.renewed_at(sent);
                    return Ok(step);
                }
                Err(e) if e.is_server_lost() => e,
                Err(e) => return Err(e),
            };
            let seen = self.back(token, lost)?;
            if !self.still_held(&seen) {
                continue; // the normal call refuses it with the typed error
            }
            match settle(seen.last, prev, state)? {
                Settled::Committed(row) => {
                    tracing::warn!(seq = row.seq, "the checkpoint in flight was committed");
                    // Its steps were counted in the same transaction.
                    let over_budget = match ctx.note_step(0) {
                        Err(Error::BudgetExceeded { reason, .. }) => Some(reason),
                        other => other.map(|()| None)?,
                    };
                    return Ok(Step { hid: ctx.hid().clone(), row, over_budget });
                }
                Settled::NotCommitted => tracing::warn!("the checkpoint in flight was not committed; writing it again"),
            }
        }
    }

    /// Complete with `result`, riding through a lost server: completing a
    /// completed handoff is a no-op, so the call is simply made again.
    pub fn complete(&mut self, ctx: &mut TaskContext, token: Option<&PgToken>, result: &Value) -> Result<()> {
        self.stop_heartbeat();
        loop {
            match ctx.complete(result) {
                Err(e) if e.is_server_lost() => {
                    self.back(token, e)?;
                }
                other => return other,
            }
        }
    }

    /// The lease as read back is still this worker's, with its fence, on
    /// the server's clock; then the lease's end there bounds the next ride.
    fn still_held(&self, seen: &Seen) -> bool {
        let ok = seen.status.as_deref() == Some("running")
            && seen.ownership.as_ref().is_some_and(|o| {
                o.holder == self.runner.id() && o.fence == self.lease.fence() && o.lease_expires_at > seen.now
            });
        if let (true, Some(o)) = (ok, &seen.ownership) {
            let left = Duration::try_from_secs_f64(o.lease_expires_at - seen.now).unwrap_or(Duration::ZERO);
            if let Some(start) = (Instant::now() + left).checked_sub(self.ttl) {
                self.renewed_at(start);
            }
        }
        ok
    }

    /// Wait for the store to take writes again (within the lease), retake
    /// the liveness lock, and read the handoff back; `lost` when the lease
    /// ran out first.
    fn back(&self, token: Option<&PgToken>, lost: Error) -> Result<Seen> {
        tracing::warn!(error = %lost, "lost the database server; reconnecting within the lease");
        let t0 = Instant::now();
        loop {
            // A lease already run out (a process stopped past it) rides nothing.
            if Instant::now() >= self.deadline() {
                return Err(lost);
            }
            match self.read_back() {
                Ok(_) => break,
                Err(e) if e.is_server_lost() => std::thread::sleep(RETRY),
                Err(e) => return Err(e),
            }
        }
        if let Some(t) = token {
            if !t.retaken(self.deadline()) {
                tracing::warn!("liveness lock not taken again within the lease; going on lease-only");
            }
        }
        let seen = self.read_back()?;
        tracing::warn!(waited_s = t0.elapsed().as_secs_f64(), "reconnected to the database; going on");
        Ok(seen)
    }

    /// One write transaction (so it takes the handoff's lock) that reads.
    fn read_back(&self) -> Result<Seen> {
        let hid = self.lease.hid().as_str();
        with_tx(self.runner.store().as_ref(), Mode::Write, |tx| {
            Ok(Seen {
                status: tx.status(hid)?,
                ownership: tx.ownership(hid)?,
                last: tx.last_checkpoint(hid)?,
                now: tx.now()?.secs(),
            })
        })
    }
}

/// What became of a checkpoint whose call failed.
#[derive(Debug, PartialEq)]
enum Settled {
    /// The row after `prev` holds this state: it was committed.
    Committed(CheckpointRow),
    /// The last row is still `prev`: nothing was written.
    NotCommitted,
}

/// Settle a checkpoint of `state` after row `prev` from the last row read
/// back under the handoff's lock while this worker still holds the lease
/// with its fence (so no one else wrote since).
fn settle(last: Option<CheckpointRow>, prev: Option<i64>, state: &Value) -> Result<Settled> {
    let next = prev.map_or(0, |p| p + 1);
    match last {
        Some(row) if row.seq == next && json::parse(&row.state_json)? == *state => Ok(Settled::Committed(row)),
        None if prev.is_none() => Ok(Settled::NotCommitted),
        Some(row) if Some(row.seq) == prev => Ok(Settled::NotCommitted),
        other => Err(Error::validation(format!(
            "the last checkpoint read back is {:?}, after {prev:?} under this worker's lease: not its own",
            other.map(|r| r.seq)
        ))),
    }
}

impl Drop for Ride {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

/// Sleep `d`, waking every 50 ms to look at `stop`; false when stopped.
fn sleep_unless(stop: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(seq: i64, state: &Value) -> CheckpointRow {
        let text = json::dumps_sorted(state).unwrap();
        CheckpointRow { seq, state_json: text, state_hash: String::new(), at: String::new() }
    }

    #[test]
    fn a_checkpoint_in_flight_is_settled_by_the_row_read_back() {
        let (a, b) = (json!({"next_n": 200}), json!({"next_n": 300}));
        // committed: the next seq holds this very state
        assert_eq!(settle(Some(row(3, &b)), Some(2), &b).unwrap(), Settled::Committed(row(3, &b)));
        assert_eq!(settle(Some(row(0, &a)), None, &a).unwrap(), Settled::Committed(row(0, &a)));
        // not committed: the seq did not move
        assert_eq!(settle(Some(row(2, &a)), Some(2), &b).unwrap(), Settled::NotCommitted);
        assert_eq!(settle(None, None, &a).unwrap(), Settled::NotCommitted);
        // anything else is not this worker's doing: never taken as its own
        assert!(settle(Some(row(3, &a)), Some(2), &b).is_err(), "another state at the next seq");
        assert!(settle(Some(row(5, &b)), Some(2), &b).is_err(), "rows beyond the next");
        assert!(settle(None, Some(2), &b).is_err(), "rows gone");
        assert!(settle(Some(row(1, &a)), Some(2), &b).is_err(), "fewer rows");
    }
}

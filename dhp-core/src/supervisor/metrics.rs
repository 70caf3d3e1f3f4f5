//! The supervisor's counters: the one count of each of its events (the
//! `dhp` program's Prometheus endpoint and its exit summary read them;
//! latencies go to the event hooks instead).

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// The supervisor's counters: the one count of each event (the `dhp`
/// program's Prometheus endpoint and its exit summary read these).
#[derive(Debug, Default)]
pub struct Metrics {
    /// Passes run as leader.
    pub scans: AtomicU64,
    /// Handoffs orphaned, by reason ([`super::OrphanReason::index`]).
    pub orphans: [AtomicU64; 3],
    /// Handoffs dead-lettered (status failed), by [`crate::events::DeadLetter`]; the
    /// fourth slot counts those a repair dead-lettered.
    pub dlq: [AtomicU64; 4],
    /// Handoffs failed for exceeding their budget.
    pub budget_kills: AtomicU64,
    /// Stopped processes SIGKILLed for holding the store's write lock.
    pub stalled_writers_killed: AtomicU64,
    /// Times this supervisor took or lost the leadership.
    pub leadership_changes: AtomicU64,
    /// Leader-lease writes: a renewal or a takeover of the `leadership` row.
    pub leader_renewals: AtomicU64,
    /// Scans (and liveness polls) that failed.
    pub errors: AtomicU64,
    /// Torn states repaired.
    pub repairs: AtomicU64,
    /// Rows quarantined (counted once per row and reason).
    pub quarantined: AtomicU64,
}

/// The slot of [`Metrics::dlq`] that counts a repair's dead-letters.
pub const DLQ_REPAIR: usize = 3;

pub(super) fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

impl Metrics {
    /// The counters as a JSON object.
    pub fn snapshot(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let sum = |a: &[AtomicU64]| a.iter().map(g).sum::<u64>();
        json!({
            "scans": g(&self.scans), "orphans": sum(&self.orphans), "dlq": sum(&self.dlq),
            "budget_kills": g(&self.budget_kills), "leadership_changes": g(&self.leadership_changes),
            "stalled_writers_killed": g(&self.stalled_writers_killed),
            "errors": g(&self.errors), "repairs": g(&self.repairs), "quarantined": g(&self.quarantined),
        })
    }
}

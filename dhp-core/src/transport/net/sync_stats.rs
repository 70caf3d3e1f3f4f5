//! What group commit costs and how well it groups: counters the journal's
//! sync thread and the connections keep, reported in `ServerStats` (the
//! figures docs/transport.md explains come from them).

use crate::metrics::{Histogram, SYNC_BUCKETS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Journal sync counters (nanosecond totals; divide by the counts).
pub(crate) struct SyncStats {
    base: Instant,
    /// `fdatasync` calls of the journal that covered records.
    pub(crate) syncs: AtomicU64,
    /// Records those syncs covered.
    pub(crate) records: AtomicU64,
    /// Time inside those `fdatasync` calls.
    pub(crate) sync_ns: AtomicU64,
    /// Over every record: from its write to the start of the sync that
    /// covered it.
    pub(crate) wait_ns: AtomicU64,
    /// Held ack batches sent, and over them: from the end of the sync
    /// that covered them to their write to the socket returning.
    pub(crate) acks: AtomicU64,
    pub(crate) ack_ns: AtomicU64,
    /// Time inside each of those syncs, as a histogram.
    pub(crate) sync_seconds: Histogram,
}

impl Default for SyncStats {
    fn default() -> Self {
        SyncStats {
            base: Instant::now(),
            syncs: AtomicU64::new(0),
            records: AtomicU64::new(0),
            sync_ns: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            acks: AtomicU64::new(0),
            ack_ns: AtomicU64::new(0),
            sync_seconds: Histogram::new(&SYNC_BUCKETS),
        }
    }
}

/// Records written and not yet taken by a sync: their count and the sum
/// of their write times, enough for the mean wait without a list.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) n: u64,
    sum_ns: u128,
}

fn add(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Ordering::Relaxed);
}

impl SyncStats {
    /// Nanoseconds since the server started (saturating).
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A record was written at `at_ns`.
    pub(crate) fn written(p: &mut Pending, at_ns: u64) {
        p.n += 1;
        p.sum_ns += u128::from(at_ns);
    }

    /// A sync that started at `start_ns` and took `took_ns` covered `p`.
    pub(crate) fn synced(&self, p: Pending, start_ns: u64, took_ns: u64) {
        if p.n == 0 {
            return;
        }
        let waited = (u128::from(p.n) * u128::from(start_ns)).saturating_sub(p.sum_ns);
        add(&self.syncs, 1);
        add(&self.records, p.n);
        add(&self.sync_ns, took_ns);
        add(&self.wait_ns, u64::try_from(waited).unwrap_or(u64::MAX));
        self.sync_seconds.observe_secs(took_ns as f64 / 1e9);
    }

    /// A batch of held acks left `ns` after the sync covering it ended.
    pub(crate) fn acked(&self, ns: u64) {
        add(&self.acks, 1);
        add(&self.ack_ns, ns);
    }

    pub(crate) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

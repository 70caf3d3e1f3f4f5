//! Counters and histograms: the primitives. Nothing counts twice: the
//! supervisor and the runner report through [`crate::events`], the
//! transport server keeps its own counts (`ServerStats`, read live through
//! `transport::net::StatsHandle`), and the `dhp` program renders them at
//! `GET /metrics` (docs/observability.md).
//!
//! Every count is a relaxed atomic add on a `static`: no lock, no
//! allocation, no branch on whether anything is scraping. A labelled
//! counter has a fixed set of label values (an array indexed by an enum),
//! so recording never looks a label up. A histogram has fixed bucket
//! bounds; an observation is one linear walk over at most 16 bounds and
//! two relaxed adds (its bucket and the sum, kept in nanoseconds).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A monotonically increasing count.
#[derive(Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero.
    pub const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }

    /// Add one.
    #[inline]
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Add `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for Counter {
    fn default() -> Self {
        Counter::new()
    }
}

/// A counter per value of one label, the values fixed at compile time.
#[derive(Debug)]
pub struct LabeledCounter<const N: usize> {
    /// The label's name.
    pub label: &'static str,
    /// Its values, in the order of `counts`.
    pub values: [&'static str; N],
    counts: [Counter; N],
}

impl<const N: usize> LabeledCounter<N> {
    /// Counters at zero for each of `values`.
    pub const fn new(label: &'static str, values: [&'static str; N]) -> Self {
        LabeledCounter { label, values, counts: [const { Counter::new() }; N] }
    }

    /// Add one to the counter of the `i`th value (out of range: ignored).
    #[inline]
    pub fn inc(&self, i: usize) {
        if let Some(c) = self.counts.get(i) {
            c.inc();
        }
    }

    /// The count of the `i`th value (0 when out of range).
    pub fn get(&self, i: usize) -> u64 {
        self.counts.get(i).map_or(0, Counter::get)
    }

    /// The count of the value named `v` (0 for an unknown one).
    pub fn get_named(&self, v: &str) -> u64 {
        self.values.iter().position(|x| *x == v).map_or(0, |i| self.get(i))
    }
}

/// Bucket bounds (seconds) of the latency histograms: 1 ms to 60 s.
pub const LATENCY_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0];

/// Bucket bounds (seconds) of the fsync histogram: 50 µs to 1 s.
pub const SYNC_BUCKETS: [f64; 12] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0];

/// Most buckets a histogram may have (besides `+Inf`).
pub const MAX_BUCKETS: usize = 16;

/// A histogram of durations with fixed bucket bounds, in seconds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Non-cumulative: `counts[i]` holds observations in
    /// `(bounds[i-1], bounds[i]]`; the last slot used is `+Inf`.
    counts: [Counter; MAX_BUCKETS + 1],
    sum_ns: Counter,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending, at most
    /// [`MAX_BUCKETS`]; extra bounds are ignored).
    pub const fn new(bounds: &'static [f64]) -> Self {
        Histogram { bounds, counts: [const { Counter::new() }; MAX_BUCKETS + 1], sum_ns: Counter::new() }
    }

    fn used_bounds(&self) -> &'static [f64] {
        let n = self.bounds.len().min(MAX_BUCKETS);
        self.bounds.get(..n).unwrap_or_default()
    }

    /// Record one observation of `seconds` (negative or NaN: recorded as
    /// 0; one past `u64::MAX` ns: saturates).
    #[inline]
    pub fn observe_secs(&self, seconds: f64) {
        let s = if seconds.is_finite() && seconds > 0.0 {
            seconds
        } else if seconds > 0.0 {
            f64::MAX
        } else {
            0.0
        };
        let bounds = self.used_bounds();
        let i = bounds.iter().position(|b| s <= *b).unwrap_or(bounds.len());
        self.counts[i].inc();
        // `as` saturates: a huge value is u64::MAX ns.
        self.sum_ns.add((s * 1e9) as u64);
    }

    /// Record one observation.
    #[inline]
    pub fn observe(&self, d: Duration) {
        self.observe_secs(d.as_secs_f64());
    }

    /// Cumulative counts per bound (the last is `+Inf`), the total count
    /// and the sum in seconds, as of one pass over the counters.
    pub fn snapshot(&self) -> (Vec<(f64, u64)>, u64, f64) {
        let bounds = self.used_bounds();
        let mut acc = 0u64;
        let mut out = Vec::with_capacity(bounds.len() + 1);
        for (i, b) in bounds.iter().chain(std::iter::once(&f64::INFINITY)).enumerate() {
            acc = acc.saturating_add(self.counts[i].get());
            out.push((*b, acc));
        }
        (out, acc, self.sum_ns.get() as f64 / 1e9)
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.snapshot().1
    }
}

/// Why a server refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// At the connection cap (`server busy`, HTTP 503).
    Busy = 0,
    /// Its hello was refused (bad token, version, handoff id).
    Hello = 1,
    /// Closed before its hello to make room for a newer connection.
    Evicted = 2,
    /// Its TLS handshake failed.
    Tls = 3,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        static H: Histogram = Histogram::new(&[0.1, 1.0]);
        for s in [0.05, 0.1, 0.5, 1.0, 7.0, -3.0, f64::NAN] {
            H.observe_secs(s);
        }
        let (b, n, sum) = H.snapshot();
        assert_eq!(b, vec![(0.1, 4), (1.0, 6), (f64::INFINITY, 7)]);
        assert_eq!(n, 7);
        assert!((sum - 8.65).abs() < 1e-6, "{sum}");
    }

    #[test]
    fn labeled_counter_ignores_out_of_range() {
        static L: LabeledCounter<2> = LabeledCounter::new("x", ["a", "b"]);
        L.inc(1);
        L.inc(5);
        assert_eq!((L.get(0), L.get_named("b"), L.get_named("zz")), (0, 1, 0));
    }
}

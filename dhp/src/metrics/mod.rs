//! The `dhp` program's metrics, rendered in the Prometheus text
//! exposition format (version 0.0.4) by [`render`]; `dhp supervisor`,
//! `dhp transport`, `dhp a2a` and `dhp dashboard` serve it at
//! `GET /metrics` when given `--metrics ADDR` (docs/observability.md lists
//! every metric). The supervisor's counts are its own counters
//! ([`dhp_core::supervisor::Metrics`], registered with [`supervisor`]);
//! latencies and the runner's counts come from the library's event hooks
//! ([`crate::observe`]); the transport server's are the server's own
//! (`ServerStats`, registered with [`transport`]).
//!
//! Only [`render`] allocates (the text it returns), on the scraping thread.

mod expo;

pub use dhp_core::metrics::*;
pub use expo::{render, Families, CONTENT_TYPE};

use dhp_core::supervisor::Metrics as SupervisorMetrics;
use std::sync::{Arc, OnceLock};

static SUPERVISOR: OnceLock<Arc<SupervisorMetrics>> = OnceLock::new();

/// The counters of this process's supervisor, for [`render`] (once).
pub fn supervisor(m: Arc<SupervisorMetrics>) {
    let _ = SUPERVISOR.set(m);
}

fn supervisor_metrics() -> Option<&'static SupervisorMetrics> {
    SUPERVISOR.get().map(|m| m.as_ref())
}

static TRANSPORT: OnceLock<dhp_core::transport::net::StatsHandle> = OnceLock::new();

/// The counters of this process's transport server, for [`render`] (once).
pub fn transport(h: dhp_core::transport::net::StatsHandle) {
    let _ = TRANSPORT.set(h);
}

fn transport_stats() -> Option<&'static dhp_core::transport::net::StatsHandle> {
    TRANSPORT.get()
}

/// The orphan reasons, in label order.
pub const REASONS: [&str; 3] = ["lease-expired", "worker-died", "stalled"];

// --- supervisor (latencies; the counts are the supervisor's own) ---

/// Seconds from lease expiry (lease-expired), from the last liveness poll
/// that could have seen the worker alive (worker-died) or from the stall
/// deadline (stalled) to the orphan's commit; per reason.
pub static DETECTION: [Histogram; 3] = [const { Histogram::new(&LATENCY_BUCKETS) }; 3];
/// Wall time of each leader pass.
pub static SCAN_DURATION: Histogram = Histogram::new(&LATENCY_BUCKETS);

// --- runner (workers) ---

/// Checkpoints committed by this process's workers.
pub static CHECKPOINTS: Counter = Counter::new();
/// Lease renewals (heartbeats) that extended a lease.
pub static LEASE_RENEWALS: Counter = Counter::new();

/// Connections refused by `dhp a2a`, by reason (only `busy` is counted).
pub static A2A_REFUSED: LabeledCounter<4> = LabeledCounter::new("reason", ["busy", "hello", "evicted", "tls"]);

// --- a2a ---

/// A2A task state changes this bridge made, by the state entered.
pub static A2A_TASKS: LabeledCounter<2> = LabeledCounter::new("state", ["submitted", "canceled"]);

// --- dashboard ---

/// Requests `dhp dashboard` answered, by result: `ok` (served), `refused`
/// (a foreign Host or Origin: 403), `unauthorized` (no or a wrong token: 401).
pub static DASHBOARD_REQUESTS: LabeledCounter<3> = LabeledCounter::new("result", ["ok", "refused", "unauthorized"]);
/// Store polls of the dashboard's poller.
pub static DASHBOARD_POLLS: Counter = Counter::new();
/// Time each poll took (the store's delta, leadership and liveness reads).
pub static DASHBOARD_POLL_SECONDS: Histogram = Histogram::new(&LATENCY_BUCKETS);
/// Delta events the poller broadcast to open pages.
pub static DASHBOARD_EVENTS: Counter = Counter::new();

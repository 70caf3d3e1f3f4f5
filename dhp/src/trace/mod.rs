//! OpenTelemetry traces across attempts (docs/observability.md).
//!
//! One trace per handoff: its trace id is the first 16 bytes of the
//! handoff id, so every process on every host names the same trace
//! without talking. Each attempt (a claim or a recover, i.e. one fence) is
//! a span whose id is derived from `(handoff id, fence)`; it ends with a
//! complete, a release, or the holder's death. A worker killed with
//! SIGKILL cannot end its span, so the supervisor that orphans the
//! handoff emits the dead attempt's span (from the claim time and the
//! checkpoints in the store) together with its own `dhp.orphan` span, which
//! lives in a trace of its own and links to the dead attempt. The
//! recoverer's attempt links back to both.
//!
//! The library reports claims, checkpoints, ends and deaths through its
//! event hooks (`dhp_core::events`, fed here by [`crate::observe`]).
//! Tracing is off unless [`otlp::init_from_env`] found an OTLP endpoint
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`); off, every hook is one relaxed load of
//! a flag and a branch ([`enabled`]), nothing else, on the checkpoint path
//! too.

pub mod otlp;

pub use dhp_core::events::{now_ns, secs_to_ns};
use dhp_core::events::{Death, Ended, Start};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Checkpoint events kept per attempt span; later ones are counted as
/// dropped (`dropped_events_count`), as the OpenTelemetry SDKs do at 128.
pub const MAX_EVENTS: usize = 128;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether spans are being recorded (an exporter is installed).
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A span attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

/// How a span ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanStatus {
    /// Not set (a release: neither success nor failure).
    Unset,
    /// Completed.
    Ok,
    /// Failed, with why.
    Error(String),
}

/// An event on a span (a checkpoint).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Event name.
    pub name: &'static str,
    /// Unix time, nanoseconds.
    pub time_ns: u64,
    /// Attributes.
    pub attrs: Vec<(&'static str, Value)>,
}

/// A link to a span of the same or another trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The linked span's trace.
    pub trace_id: [u8; 16],
    /// The linked span.
    pub span_id: [u8; 8],
    /// Attributes.
    pub attrs: Vec<(&'static str, Value)>,
}

/// A finished span, ready for export.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Trace id.
    pub trace_id: [u8; 16],
    /// Span id.
    pub span_id: [u8; 8],
    /// Span name (`dhp.attempt`, `dhp.orphan`).
    pub name: &'static str,
    /// Unix time, nanoseconds.
    pub start_ns: u64,
    /// Unix time, nanoseconds.
    pub end_ns: u64,
    /// Attributes.
    pub attrs: Vec<(&'static str, Value)>,
    /// Events (checkpoints).
    pub events: Vec<Event>,
    /// Events not kept (over [`MAX_EVENTS`]).
    pub dropped_events: u32,
    /// Links.
    pub links: Vec<Link>,
    /// Status.
    pub status: SpanStatus,
}

/// Where finished spans go (the exporter installs it).
type Sink = Box<dyn Fn(Span) + Send + Sync>;
static SINK: OnceLock<Sink> = OnceLock::new();

/// Install `sink` and turn recording on (once per process; a second call
/// is refused and returns false).
pub fn install(sink: Sink) -> bool {
    let ok = SINK.set(sink).is_ok();
    if ok {
        ENABLED.store(true, Ordering::Relaxed);
    }
    ok
}

fn emit(span: Span) {
    if let Some(s) = SINK.get() {
        s(span);
    }
}

fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    h.finalize().into()
}

fn first<const N: usize>(d: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, b) in out.iter_mut().zip(d) {
        *o = *b;
    }
    out
}

/// The handoff's trace id: the first 16 bytes of its id (a hex SHA-256);
/// an id that is not hex is hashed instead. Never all zeros.
pub fn trace_id(hid: &str) -> [u8; 16] {
    let id = match hex::decode(hid.get(..32).unwrap_or(hid)) {
        Ok(b) if b.len() == 16 => first(&b),
        _ => first(&digest(&[b"dhp.trace", hid.as_bytes()])),
    };
    if id == [0; 16] {
        first(&digest(&[b"dhp.trace.zero", hid.as_bytes()]))
    } else {
        id
    }
}

/// The span id of the attempt of `hid` under `fence`.
pub fn attempt_span_id(hid: &str, fence: i64) -> [u8; 8] {
    nonzero(first(&digest(&[b"dhp.attempt", hid.as_bytes(), &fence.to_be_bytes()])))
}

/// The trace id of the supervisor's orphan of `hid` that left the
/// tombstone fence `tomb_fence`.
pub fn orphan_trace_id(hid: &str, tomb_fence: i64) -> [u8; 16] {
    let id = first(&digest(&[b"dhp.orphan.trace", hid.as_bytes(), &tomb_fence.to_be_bytes()]));
    if id == [0; 16] {
        [1; 16]
    } else {
        id
    }
}

/// The span id of that orphan.
pub fn orphan_span_id(hid: &str, tomb_fence: i64) -> [u8; 8] {
    nonzero(first(&digest(&[b"dhp.orphan", hid.as_bytes(), &tomb_fence.to_be_bytes()])))
}

fn nonzero(id: [u8; 8]) -> [u8; 8] {
    if id == [0; 8] {
        [1; 8]
    } else {
        id
    }
}

/// An attempt in progress in this process.
struct Live {
    start_ns: u64,
    holder: String,
    how: &'static str,
    events: Vec<Event>,
    dropped: u32,
    links: Vec<Link>,
}

fn live() -> std::sync::MutexGuard<'static, HashMap<(String, i64), Live>> {
    static LIVE: OnceLock<Mutex<HashMap<(String, i64), Live>>> = OnceLock::new();
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Attempts tracked at once in one process; more are not traced.
pub const MAX_LIVE: usize = 10_000;

/// Attempts not traced because [`MAX_LIVE`] were in progress.
pub static UNTRACKED_ATTEMPTS: AtomicU64 = AtomicU64::new(0);

/// Checkpoints committed by attempts this process did not start (no
/// event recorded for them).
pub static UNTRACKED_CHECKPOINTS: AtomicU64 = AtomicU64::new(0);

fn checkpoint_event(seq: i64, time_ns: u64) -> Event {
    Event { name: "dhp.checkpoint", time_ns, attrs: vec![("dhp.checkpoint.seq", Value::Int(seq))] }
}

/// A claim (`how` = "claim") or recover committed at store time
/// `start_s`. A recover under fence `f` links to the attempt it follows
/// (fence `f - 2`) and to the orphan that left tombstone `f - 1`.
pub(crate) fn attempt_started(hid: &str, fence: i64, holder: &str, how: Start, start_s: f64) {
    if !enabled() {
        return;
    }
    let how = how.as_str();
    let mut links = Vec::new();
    if how == "recover" && fence >= 2 {
        let tomb = fence - 1;
        links.push(Link {
            trace_id: trace_id(hid),
            span_id: attempt_span_id(hid, tomb - 1),
            attrs: vec![("dhp.link", Value::Str("previous-attempt".into()))],
        });
        links.push(Link {
            trace_id: orphan_trace_id(hid, tomb),
            span_id: orphan_span_id(hid, tomb),
            attrs: vec![("dhp.link", Value::Str("orphan".into()))],
        });
    }
    let start_ns = match secs_to_ns(start_s) {
        0 => now_ns(),
        t => t,
    };
    let l = Live { start_ns, holder: holder.to_string(), how, events: Vec::new(), dropped: 0, links };
    let mut g = live();
    // Attempts that never end here (fenced out, abandoned) stay until the
    // process exits: bounded, so a long-lived process cannot grow without end.
    if g.len() < MAX_LIVE {
        g.insert((hid.to_string(), fence), l);
    } else {
        UNTRACKED_ATTEMPTS.fetch_add(1, Ordering::Relaxed);
    }
}

/// A checkpoint committed under `(hid, fence)` (an event on its span).
pub(crate) fn checkpoint(hid: &str, fence: i64, seq: i64) {
    if !enabled() {
        return;
    }
    let t = now_ns();
    let mut g = live();
    match g.get_mut(&(hid.to_string(), fence)) {
        Some(l) if l.events.len() < MAX_EVENTS => l.events.push(checkpoint_event(seq, t)),
        Some(l) => l.dropped = l.dropped.saturating_add(1),
        None => {
            UNTRACKED_CHECKPOINTS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The attempt `(hid, fence)` ended here: its span is exported.
pub(crate) fn attempt_ended(hid: &str, fence: i64, how: Ended) {
    if !enabled() {
        return;
    }
    let Some(l) = live().remove(&(hid.to_string(), fence)) else {
        return;
    };
    let (outcome, status) = match how {
        Ended::Completed => ("complete", SpanStatus::Ok),
        Ended::SchemaFailed => ("failed", SpanStatus::Error("result failed the output schema".into())),
        Ended::Released => ("release", SpanStatus::Unset),
    };
    emit(Span {
        trace_id: trace_id(hid),
        span_id: attempt_span_id(hid, fence),
        name: "dhp.attempt",
        start_ns: l.start_ns,
        end_ns: now_ns().max(l.start_ns),
        attrs: vec![
            ("dhp.handoff_id", Value::Str(hid.to_string())),
            ("dhp.fence", Value::Int(fence)),
            ("dhp.worker", Value::Str(l.holder)),
            ("dhp.attempt.start", Value::Str(l.how.into())),
            ("dhp.attempt.outcome", Value::Str(outcome.into())),
            ("dhp.attempt.closed_by", Value::Str("worker".into())),
        ],
        events: l.events,
        dropped_events: l.dropped,
        links: l.links,
        status,
    });
}

/// A supervisor orphaned (or dead-lettered) an attempt: emit the dead
/// attempt's span, which its worker could not end, and the orphan's own
/// span linked to it.
pub(crate) fn attempt_died(d: &Death<'_>) {
    if !enabled() {
        return;
    }
    let hid = d.hid;
    let start_ns = d.claimed_at.map(secs_to_ns).filter(|t| *t > 0).unwrap_or(d.orphan_start_ns);
    let dropped = d.checkpoints.len().saturating_sub(MAX_EVENTS);
    let events: Vec<Event> = d.checkpoints.iter().skip(dropped).map(|(seq, t)| checkpoint_event(*seq, *t)).collect();
    let outcome = if d.dead_lettered { "dead-letter" } else { "death" };
    let attempt = attempt_span_id(hid, d.fence.get());
    emit(Span {
        trace_id: trace_id(hid),
        span_id: attempt,
        name: "dhp.attempt",
        start_ns,
        end_ns: d.orphan_end_ns.max(start_ns),
        attrs: vec![
            ("dhp.handoff_id", Value::Str(hid.to_string())),
            ("dhp.fence", Value::Int(d.fence.get())),
            ("dhp.worker", Value::Str(d.holder.to_string())),
            ("dhp.attempt.start", Value::Str(if d.fence.get() == 0 { "claim" } else { "recover" }.into())),
            ("dhp.attempt.outcome", Value::Str(outcome.into())),
            ("dhp.attempt.closed_by", Value::Str(format!("supervisor {}", d.supervisor))),
            ("dhp.orphan.reason", Value::Str(d.reason.into())),
        ],
        events,
        dropped_events: u32::try_from(dropped).unwrap_or(u32::MAX),
        links: vec![Link {
            trace_id: orphan_trace_id(hid, d.tomb_fence.get()),
            span_id: orphan_span_id(hid, d.tomb_fence.get()),
            attrs: vec![("dhp.link", Value::Str("orphan".into()))],
        }],
        status: SpanStatus::Error(format!("{outcome}: {}", d.reason)),
    });
    emit(Span {
        trace_id: orphan_trace_id(hid, d.tomb_fence.get()),
        span_id: orphan_span_id(hid, d.tomb_fence.get()),
        name: if d.dead_lettered { "dhp.dead_letter" } else { "dhp.orphan" },
        start_ns: d.orphan_start_ns,
        end_ns: d.orphan_end_ns.max(d.orphan_start_ns),
        attrs: vec![
            ("dhp.handoff_id", Value::Str(hid.to_string())),
            ("dhp.orphan.reason", Value::Str(d.reason.into())),
            ("dhp.previous_holder", Value::Str(d.holder.to_string())),
            ("dhp.previous_fence", Value::Int(d.fence.get())),
            ("dhp.fence", Value::Int(d.tomb_fence.get())),
            ("dhp.attempt", Value::Int(d.attempt)),
            ("dhp.supervisor", Value::Str(d.supervisor.to_string())),
            ("dhp.dead_lettered", Value::Bool(d.dead_lettered)),
        ],
        events: Vec::new(),
        dropped_events: 0,
        links: vec![Link {
            trace_id: trace_id(hid),
            span_id: attempt,
            attrs: vec![("dhp.link", Value::Str("orphaned-attempt".into()))],
        }],
        status: SpanStatus::Unset,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_distinct() {
        let hid = "217740d038afbda200105fd31d9362c8f573b8102829b343cfe2be44bd4c9d9f";
        assert_eq!(hex::encode(trace_id(hid)), "217740d038afbda200105fd31d9362c8");
        assert_eq!(attempt_span_id(hid, 0), attempt_span_id(hid, 0));
        assert_ne!(attempt_span_id(hid, 0), attempt_span_id(hid, 2));
        assert_ne!(orphan_trace_id(hid, 1), trace_id(hid));
        assert_ne!(trace_id("not hex at all"), [0; 16]);
        assert_ne!(trace_id(&"0".repeat(64)), [0; 16]);
    }
}

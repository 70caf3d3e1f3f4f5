//! What a server counts while it runs, and the summary it returns — the
//! one count of each event: `dhp transport`'s `/metrics` reads the same
//! counters through a [`super::StatsHandle`].

use std::sync::atomic::{AtomicU64, Ordering};

/// What a server did, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Hellos accepted (right token, known version).
    pub hellos_accepted: u64,
    /// Hellos refused.
    pub hellos_rejected: u64,
    /// Envelope frames appended.
    pub envelopes: u64,
    /// Checkpoint frames appended to a log.
    pub checkpoints_appended: u64,
    /// Checkpoints already in the log with the same hash (acked again).
    pub checkpoints_duplicate: u64,
    /// Checkpoints refused because an earlier seq is missing.
    pub checkpoints_gap: u64,
    /// Checkpoints refused because the log holds that seq with another hash.
    pub checkpoints_conflict: u64,
    /// Frames refused (malformed, unauthenticated, tampered).
    pub frames_rejected: u64,
    /// Lines over the line limit (the connection is closed).
    pub lines_too_long: u64,
    /// Connections that ended inside a line.
    pub partial_lines: u64,
    /// Connections closed for idling past the idle timeout.
    pub idle_timeouts: u64,
    /// Connections refused at the connection limit (`server busy`).
    pub busy_rejections: u64,
    /// TLS handshakes that failed (untrusted, expired or missing
    /// certificate; a plaintext client), and TLS ClientHellos sent to a
    /// plaintext server.
    pub tls_failures: u64,
    /// Connections closed before their hello to make room for newer ones.
    pub unauthenticated_evicted: u64,
    /// Handoff logs held in memory when the server stopped, and dropped
    /// from memory (unused) while it ran.
    pub logs_cached: u64,
    /// Handoff logs dropped from memory while the server ran.
    pub logs_evicted: u64,
    /// Group commit (fsync on): journal syncs that covered lines, and the
    /// lines they covered (their ratio is the lines per sync).
    pub journal_syncs: u64,
    /// Lines (journal records) covered by those syncs.
    pub journal_lines_synced: u64,
    /// Total time inside those syncs, ns.
    pub journal_sync_ns: u64,
    /// Over every line: from its journal write to the start of the sync
    /// that covered it, ns (total).
    pub journal_wait_ns: u64,
    /// Batches of held acks sent.
    pub durable_acks: u64,
    /// Over those batches: from the end of the covering sync to the
    /// reply's write returning, ns (total).
    pub durable_ack_ns: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) connections: AtomicU64,
    pub(super) hellos_accepted: AtomicU64,
    pub(super) hellos_rejected: AtomicU64,
    pub(super) envelopes: AtomicU64,
    pub(super) checkpoints_appended: AtomicU64,
    pub(super) checkpoints_duplicate: AtomicU64,
    pub(super) checkpoints_gap: AtomicU64,
    pub(super) checkpoints_conflict: AtomicU64,
    pub(super) frames_rejected: AtomicU64,
    pub(super) lines_too_long: AtomicU64,
    pub(super) partial_lines: AtomicU64,
    pub(super) idle_timeouts: AtomicU64,
    pub(super) busy_rejections: AtomicU64,
    pub(super) tls_failures: AtomicU64,
}

pub(super) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A refused hello.
pub(super) fn hello_refused(c: &Counters) {
    bump(&c.hellos_rejected);
}

impl Counters {
    pub(super) fn snapshot(&self) -> ServerStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ServerStats {
            connections: g(&self.connections),
            hellos_accepted: g(&self.hellos_accepted),
            hellos_rejected: g(&self.hellos_rejected),
            envelopes: g(&self.envelopes),
            checkpoints_appended: g(&self.checkpoints_appended),
            checkpoints_duplicate: g(&self.checkpoints_duplicate),
            checkpoints_gap: g(&self.checkpoints_gap),
            checkpoints_conflict: g(&self.checkpoints_conflict),
            frames_rejected: g(&self.frames_rejected),
            lines_too_long: g(&self.lines_too_long),
            partial_lines: g(&self.partial_lines),
            idle_timeouts: g(&self.idle_timeouts),
            busy_rejections: g(&self.busy_rejections),
            tls_failures: g(&self.tls_failures),
            unauthenticated_evicted: 0,
            logs_cached: 0,
            logs_evicted: 0,
            ..Default::default()
        }
    }
}

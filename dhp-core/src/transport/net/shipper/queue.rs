//! The state shared by the callers of a [`TcpShipper`](super::TcpShipper)
//! and its shipping thread: per-handoff queues of lines, tickets callers
//! wait on, and the outcomes the thread settles them with.

use crate::error::Error;
use crate::TransportKind;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A server refusal, kept until the caller it concerns collects it.
#[derive(Debug, Clone)]
pub(super) enum Refusal {
    Tamper(String),
    Transport(String),
    /// The TLS handshake failed (untrusted, expired or missing
    /// certificate; a plaintext peer).
    Tls {
        context: String,
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl Refusal {
    pub(super) fn classify(what: &str, msg: &str) -> Self {
        let text = format!("server refused {what}: {msg}");
        if msg.contains("hash mismatch") || msg.contains("identity") || msg.contains("binding mismatch") {
            Refusal::Tamper(text)
        } else {
            Refusal::Transport(text)
        }
    }

    pub(super) fn into_error(self) -> Error {
        match self {
            Refusal::Tamper(m) => Error::tamper(m),
            Refusal::Transport(m) => Error::transport(TransportKind::Refused, m),
            Refusal::Tls { context, source } => Error::Tls { context, source },
        }
    }

    /// The error a caller gets while the server refuses our connection.
    pub(super) fn connection_error(&self) -> Error {
        match self {
            Refusal::Tls { context, source } => Error::Tls { context: context.clone(), source: source.clone() },
            Refusal::Tamper(m) | Refusal::Transport(m) => {
                Error::transport(TransportKind::Refused, format!("server refused the connection: {m}"))
            }
        }
    }
}

/// Replies that say "try again later" rather than "never".
pub(super) fn transient(msg: &str) -> bool {
    msg.starts_with("server cannot") || msg.starts_with("server busy") || msg.contains("log writer task failed")
}

#[derive(Debug)]
pub(super) struct Item {
    pub(super) ticket: u64,
    pub(super) seq: i64,
    pub(super) line: Arc<str>,
}

#[derive(Debug, Default)]
pub(super) struct HidQ {
    /// The envelope frame, re-sent after every hello.
    pub(super) envelope: Option<Arc<str>>,
    pub(super) env_ticket: u64,
    pub(super) env_acked: bool,
    pub(super) items: VecDeque<Item>,
    /// The server's `ack_seq` as of the last hello, raised by acks since.
    pub(super) server_ack: Option<i64>,
    pub(super) want_hello: bool,
    /// The server refused our hello (bad token, ...) or the TLS handshake
    /// failed.
    pub(super) rejected: Option<Refusal>,
    pub(super) retry_at: Option<Instant>,
    pub(super) backoff: Duration,
    /// Callers of `acked_seq` waiting for this handoff's hello.
    pub(super) waiters: usize,
}

impl HidQ {
    pub(super) fn has_work(&self) -> bool {
        (self.envelope.is_some() && !self.env_acked) || !self.items.is_empty() || self.want_hello
    }

    /// Everything acknowledged through the last line, nobody waiting, no
    /// refusal to report: the entry can go (a later line for the handoff
    /// starts a fresh one, and its hello learns `ack_seq` again).
    pub(super) fn idle(&self) -> bool {
        !self.has_work() && self.waiters == 0 && self.rejected.is_none()
    }
}

/// Idle handoff queues kept (their `ack_seq` answers `acked_seq` without a
/// round trip, and their envelope is re-sent after a reconnect); past
/// this, idle ones are dropped, so a shipper that ships many handoffs over
/// its life holds state only for the recent and the unfinished ones.
pub(super) const MAX_IDLE_QUEUES: usize = 1024;

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) queues: HashMap<String, HidQ>,
    pub(super) next_ticket: u64,
    /// Lines queued and not yet acknowledged, over all handoffs.
    pub(super) unacked: usize,
    /// Tickets a caller is waiting on.
    pub(super) waiting: HashSet<u64>,
    pub(super) outcomes: HashMap<u64, std::result::Result<(), Refusal>>,
    /// Refusals of lines nobody waited for (async), reported by the next call.
    pub(super) failures: VecDeque<Refusal>,
    pub(super) last_error: Option<String>,
    pub(super) stop: bool,
    /// Prune idle queues when the map reaches this size (doubles when most
    /// entries are busy, so pruning stays amortised O(1) per handoff).
    pub(super) prune_at: usize,
}

impl State {
    /// Drop idle queues once the map is over its bound, except `keep`'s.
    pub(super) fn prune(&mut self, keep: &str) {
        if self.queues.len() < self.prune_at.max(MAX_IDLE_QUEUES) {
            return;
        }
        self.queues.retain(|h, q| h == keep || !q.idle());
        self.prune_at = (self.queues.len() * 2).max(MAX_IDLE_QUEUES);
    }

    pub(super) fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    pub(super) fn resolve(&mut self, ticket: u64, r: std::result::Result<(), Refusal>) {
        if self.waiting.remove(&ticket) {
            self.outcomes.insert(ticket, r);
        } else if let Err(f) = r {
            self.failures.push_back(f);
        }
    }
}

pub(super) struct Shared {
    pub(super) st: Mutex<State>,
    /// Wakes the shipping thread.
    pub(super) work: Condvar,
    /// Wakes callers.
    pub(super) done: Condvar,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }
}

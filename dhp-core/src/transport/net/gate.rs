//! Admission of connections that have not said hello yet. They get a
//! short deadline, a tiny line cap, and a bounded number of slots (in all
//! and per peer address). A newcomer is never refused for want of a slot:
//! the oldest unauthenticated connection (of the same peer, when that peer
//! is at its own cap) is closed instead, so idle strangers can never lock
//! out a client that is about to say hello.
//!
//! Every cap fits the process's descriptor budget ([`Limits::for_nofile`]):
//! with a low RLIMIT_NOFILE the caps shrink, so `accept` never fails for
//! want of a descriptor while strangers hold the slots.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// Connections served at once (at most; fewer under a low RLIMIT_NOFILE);
/// more are told `server busy` and closed.
pub(crate) const MAX_CONNECTIONS: usize = 4096;
/// Unauthenticated connections held at once, over all peers.
pub(crate) const MAX_UNAUTH: usize = 1024;
/// Unauthenticated connections held at once from one peer address.
pub(crate) const MAX_UNAUTH_PER_PEER: usize = 256;
/// Time a new connection has to complete its hello.
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest line read before a hello succeeds (a hello is ~150 bytes).
pub(crate) const PRE_HELLO_MAX_LINE: usize = 4096;

/// Descriptors kept out of the connection budget: the journal, logs being
/// replayed or trimmed, the runtime's own, TLS files, stdio.
pub(crate) const FD_RESERVE: u64 = 64;

/// The caps a server runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Connections at once.
    pub(crate) connections: usize,
    /// Of those, without a hello yet.
    pub(crate) unauth: usize,
    /// Without a hello, from one peer address.
    pub(crate) unauth_per_peer: usize,
}

impl Limits {
    /// The caps under a soft RLIMIT_NOFILE of `soft`: each connection may
    /// hold three descriptors (its socket, a second one of it for the acks
    /// the journal's sync thread writes, and its handoff's log) beside
    /// [`FD_RESERVE`]; a quarter of the connections are kept for clients
    /// that said hello (strangers are evicted before they reach them).
    pub(crate) fn for_nofile(soft: u64) -> Limits {
        let budget = usize::try_from(soft.saturating_sub(FD_RESERVE) / 3).unwrap_or(MAX_CONNECTIONS);
        let connections = budget.clamp(4, MAX_CONNECTIONS);
        let unauth = (connections * 3 / 4).clamp(1, MAX_UNAUTH);
        Limits { connections, unauth, unauth_per_peer: unauth.min(MAX_UNAUTH_PER_PEER) }
    }

    /// The caps under this process's soft RLIMIT_NOFILE.
    pub(crate) fn of_process() -> Limits {
        Limits::for_nofile(nofile_soft())
    }
}

/// The soft RLIMIT_NOFILE, from `/proc/self/limits` (1024 when unreadable).
pub fn nofile_soft() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("Max open files"))?;
            l.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(1024)
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// By admission order: the first entry is the oldest.
    conns: BTreeMap<u64, (IpAddr, Arc<Notify>)>,
    per_peer: HashMap<IpAddr, usize>,
}

impl Inner {
    fn remove(&mut self, id: u64) -> Option<Arc<Notify>> {
        let (ip, n) = self.conns.remove(&id)?;
        if let Some(c) = self.per_peer.get_mut(&ip) {
            *c -= 1;
            if *c == 0 {
                self.per_peer.remove(&ip);
            }
        }
        Some(n)
    }
}

/// True at most once per wall-clock second per `last` (rate-limits warnings).
pub(crate) fn once_per_second(last: &AtomicU64) -> bool {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    last.swap(now, Ordering::Relaxed) != now
}

pub(crate) struct Gate {
    pub(crate) limits: Limits,
    inner: Mutex<Inner>,
    pub(crate) evictions: AtomicU64,
    last_warn: AtomicU64,
}

/// A pre-hello slot; dropping it (hello done, or connection gone) frees it.
pub(crate) struct Pass {
    gate: Arc<Gate>,
    id: u64,
    /// Notified when the gate closes this connection to make room.
    pub(crate) evict: Arc<Notify>,
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.gate.lock().remove(self.id);
    }
}

impl Gate {
    pub(crate) fn new(limits: Limits) -> Gate {
        Gate { limits, inner: Mutex::default(), evictions: AtomicU64::new(0), last_warn: AtomicU64::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for a new connection from `ip`, closing the oldest one in
    /// its way when the caps are reached.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Pass {
        let mut g = self.lock();
        let victim = if g.per_peer.get(&ip).copied().unwrap_or(0) >= self.limits.unauth_per_peer {
            g.conns.iter().find(|(_, (p, _))| *p == ip).map(|(id, _)| *id)
        } else if g.conns.len() >= self.limits.unauth {
            g.conns.keys().next().copied()
        } else {
            None
        };
        if let Some(n) = victim.and_then(|v| g.remove(v)) {
            n.notify_one();
            self.evicted(ip);
        }
        g.next += 1;
        let id = g.next;
        let evict = Arc::new(Notify::new());
        g.conns.insert(id, (ip, evict.clone()));
        *g.per_peer.entry(ip).or_insert(0) += 1;
        Pass { gate: self.clone(), id, evict }
    }

    /// True at most once per wall-clock second: limit warnings stay
    /// visible without a flood being able to flood the log.
    pub(crate) fn warn_now(&self) -> bool {
        once_per_second(&self.last_warn)
    }

    /// Count an eviction; warn at most once a second so a flood cannot
    /// flood the log too.
    fn evicted(&self, ip: IpAddr) {
        let n = self.evictions.fetch_add(1, Ordering::Relaxed) + 1;
        if self.warn_now() {
            tracing::warn!(
                newest_peer = %ip,
                evicted_total = n,
                max_unauthenticated = self.limits.unauth,
                max_per_peer = self.limits.unauth_per_peer,
                "transport: too many connections without a hello; closing the oldest"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_is_evicted_per_peer_then_overall() {
        let gate = Arc::new(Gate::new(Limits::for_nofile(1 << 20)));
        let a: IpAddr = [10, 0, 0, 1].into();
        let mut passes: Vec<Pass> = (0..MAX_UNAUTH_PER_PEER).map(|_| gate.admit(a)).collect();
        let first = passes[0].evict.clone();
        passes.push(gate.admit(a));
        // The permit is stored: the oldest of peer `a` was told to go.
        assert!(futures_ready(&first));
        assert_eq!(gate.lock().per_peer[&a], MAX_UNAUTH_PER_PEER);
        for i in 0..(MAX_UNAUTH - MAX_UNAUTH_PER_PEER) {
            passes.push(gate.admit(IpAddr::from([10, 1, (i >> 8) as u8, i as u8])));
        }
        assert_eq!(gate.lock().conns.len(), MAX_UNAUTH);
        passes.push(gate.admit([10, 2, 0, 0].into()));
        assert_eq!(gate.lock().conns.len(), MAX_UNAUTH);
        assert_eq!(gate.evictions.load(Ordering::Relaxed), 2);
        drop(passes);
        assert!(gate.lock().conns.is_empty() && gate.lock().per_peer.is_empty());
    }

    #[test]
    fn the_caps_fit_the_descriptor_budget() {
        // a generous limit: the fixed caps
        let big = Limits::for_nofile(1 << 20);
        assert_eq!(
            big,
            Limits { connections: MAX_CONNECTIONS, unauth: MAX_UNAUTH, unauth_per_peer: MAX_UNAUTH_PER_PEER }
        );
        for soft in [0, 16, 64, 128, 256, 1024, 4096, 20_000] {
            let l = Limits::for_nofile(soft);
            // three descriptors a connection beside the reserve, when the limit allows any
            if soft >= FD_RESERVE + 12 {
                assert!((l.connections as u64) * 3 + FD_RESERVE <= soft, "{soft}: {l:?}");
            }
            // strangers never hold every slot: room is kept for clients with a hello
            assert!(l.unauth < l.connections && l.unauth_per_peer <= l.unauth, "{soft}: {l:?}");
        }
        assert_eq!(Limits::for_nofile(128), Limits { connections: 21, unauth: 15, unauth_per_peer: 15 });
    }

    fn futures_ready(n: &Notify) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_millis(50), n.notified()).await.is_ok() })
    }
}

//! Admission of connections that have not said hello yet. They get a
//! short deadline, a tiny line cap, and a bounded number of slots (in all
//! and per peer address). A newcomer is never refused for want of a slot:
//! the oldest unauthenticated connection (of the same peer, when that peer
//! is at its own cap) is closed instead, so idle strangers can never lock
//! out a client that is about to say hello.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// Unauthenticated connections held at once, over all peers.
pub(crate) const MAX_UNAUTH: usize = 1024;
/// Unauthenticated connections held at once from one peer address.
pub(crate) const MAX_UNAUTH_PER_PEER: usize = 256;
/// Time a new connection has to complete its hello.
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest line read before a hello succeeds (a hello is ~150 bytes).
pub(crate) const PRE_HELLO_MAX_LINE: usize = 4096;

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

#[derive(Default)]
pub(crate) struct Gate {
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
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for a new connection from `ip`, closing the oldest one in
    /// its way when the caps are reached.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Pass {
        let mut g = self.lock();
        let victim = if g.per_peer.get(&ip).copied().unwrap_or(0) >= MAX_UNAUTH_PER_PEER {
            g.conns.iter().find(|(_, (p, _))| *p == ip).map(|(id, _)| *id)
        } else if g.conns.len() >= MAX_UNAUTH {
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
        crate::metrics::TRANSPORT_REFUSED.inc(crate::metrics::Refusal::Evicted as usize);
        if self.warn_now() {
            tracing::warn!(
                newest_peer = %ip,
                evicted_total = n,
                max_unauthenticated = MAX_UNAUTH,
                max_per_peer = MAX_UNAUTH_PER_PEER,
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
        let gate = Arc::new(Gate::default());
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

    fn futures_ready(n: &Notify) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_millis(50), n.notified()).await.is_ok() })
    }
}

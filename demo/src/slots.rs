//! The mirror's connection table, so no client can exhaust it: at most
//! [`cap`] connections at once (fewer under a low RLIMIT_NOFILE), each
//! request head whole within [`HEAD_TIMEOUT`] of its first byte, an idle
//! keep-alive connection closed after [`IDLE_TIMEOUT`], and at the cap the
//! oldest connection not being answered is closed for the newcomer (idle
//! or trickling clients cannot keep a page worker out). When every slot is
//! being answered (held requests), the newcomer gets 503.

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections at once, at most.
pub const MAX_CONNECTIONS: usize = 64;
/// Time from a request's first byte to the end of its head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a keep-alive connection may wait for its next request's first byte.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The connection cap under a soft RLIMIT_NOFILE of `soft`: each
/// connection holds two descriptors (its socket and the table's handle on
/// it), and the rest of the process (the demo's children, logs, the other
/// listeners) keeps at least half.
pub fn cap_for(soft: u64) -> usize {
    usize::try_from(soft / 4).unwrap_or(MAX_CONNECTIONS).clamp(2, MAX_CONNECTIONS)
}

/// The cap under this process's limit.
pub fn cap() -> usize {
    cap_for(dhp_core::transport::net::nofile_soft())
}

struct Slot {
    id: u64,
    since: Instant,
    sock: TcpStream,
    answering: Arc<AtomicBool>,
}

/// Every connection being served.
pub struct Slots {
    cap: usize,
    next: AtomicU64,
    open: Mutex<Vec<Slot>>,
}

/// One admitted connection; dropping it frees its slot.
pub struct Ticket {
    slots: Arc<Slots>,
    id: u64,
    /// Set while its request is handled and answered: not evicted then.
    pub answering: Arc<AtomicBool>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.slots.lock().retain(|s| s.id != self.id);
    }
}

impl Slots {
    /// A table of `cap` slots.
    pub fn new(cap: usize) -> Arc<Slots> {
        Arc::new(Slots { cap, next: AtomicU64::new(0), open: Mutex::new(Vec::new()) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A slot for `sock`; at the cap the oldest connection not being
    /// answered is shut down to make room. `None` when every slot is being
    /// answered (or the socket cannot be cloned): answer 503 and close.
    pub fn admit(self: &Arc<Self>, sock: &TcpStream) -> Option<Ticket> {
        let handle = sock.try_clone().ok()?;
        let mut open = self.lock();
        if open.len() >= self.cap {
            let idle = open.iter().enumerate().filter(|(_, s)| !s.answering.load(Ordering::SeqCst));
            let oldest = idle.min_by_key(|(_, s)| s.since).map(|(i, _)| i)?;
            let _ = open.remove(oldest).sock.shutdown(Shutdown::Both);
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let answering = Arc::new(AtomicBool::new(false));
        open.push(Slot { id, since: Instant::now(), sock: handle, answering: answering.clone() });
        Some(Ticket { slots: self.clone(), id, answering })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair(l: &TcpListener) -> (TcpStream, TcpStream) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn at_the_cap_the_oldest_idle_one_makes_room_and_answering_ones_are_kept() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let slots = Slots::new(2);
        let (_c1, s1) = pair(&l);
        let (_c2, s2) = pair(&l);
        let (_c3, s3) = pair(&l);
        let t1 = slots.admit(&s1).unwrap();
        t1.answering.store(true, Ordering::SeqCst);
        let _t2 = slots.admit(&s2).unwrap();
        // the oldest idle one (2; 1 is being answered) is shut down for 3
        let t3 = slots.admit(&s3).unwrap();
        assert_eq!(slots.len(), 2);
        let mut buf = [0u8; 1];
        use std::io::Read;
        assert_eq!((&s2).read(&mut buf).unwrap(), 0, "2 was shut down");
        t3.answering.store(true, Ordering::SeqCst);
        let (_c4, s4) = pair(&l);
        assert!(slots.admit(&s4).is_none(), "every slot is being answered: 503");
        drop(t1);
        assert_eq!(slots.len(), 1);
    }

    #[test]
    fn the_cap_fits_the_descriptor_limit() {
        assert_eq!(cap_for(1 << 20), MAX_CONNECTIONS);
        for soft in [8, 64, 128, 256, 1024] {
            assert!((cap_for(soft) as u64) * 2 <= soft / 2, "{soft}: {}", cap_for(soft));
        }
        assert_eq!(cap_for(128), 32);
    }
}

//! The connection cap: the descriptor budget and the table of open
//! connections that [`crate::AtCap::MakeRoom`] picks a victim from.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::oneshot;

/// A quarter of the soft RLIMIT_NOFILE (each connection may hold two
/// descriptors; the process needs the rest), at least 1.
pub fn descriptor_budget() -> usize {
    usize::try_from(nofile_soft() / 4).unwrap_or(usize::MAX).max(1)
}

/// The soft RLIMIT_NOFILE, from `/proc/self/limits` (1024 when unreadable).
fn nofile_soft() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("Max open files"))?;
            l.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(1024)
}

/// One open connection: when it came, whether it is inside a request, and
/// how to cut it.
struct Slot {
    id: u64,
    since: Instant,
    busy: Arc<AtomicBool>,
    cut: Option<oneshot::Sender<()>>,
}

/// The open connections of one server.
#[derive(Default)]
pub(crate) struct Table {
    slots: Mutex<Vec<Slot>>,
    next: std::sync::atomic::AtomicU64,
}

/// A connection's place in the table: `busy` is set while it is inside
/// a request; `cut` fires when it is dropped to make room.
pub(crate) struct Entry {
    pub id: u64,
    pub busy: Arc<AtomicBool>,
    pub cut: oneshot::Receiver<()>,
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take a place for a new connection, at most `cap` in all; over the
    /// cap, with `make_room`, cut the oldest connection not inside a
    /// request. `None`: no place (the connection is refused).
    pub fn admit(&self, cap: usize, make_room: bool) -> Option<Entry> {
        let mut g = self.lock();
        if g.len() >= cap {
            if !make_room {
                return None;
            }
            let idle = g.iter().enumerate().filter(|(_, s)| !s.busy.load(Ordering::SeqCst));
            let i = idle.min_by_key(|(_, s)| s.since).map(|(i, _)| i)?;
            if let Some(cut) = g.remove(i).cut.take() {
                let _ = cut.send(());
            }
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, cut) = oneshot::channel();
        let busy = Arc::new(AtomicBool::new(false));
        g.push(Slot { id, since: Instant::now(), busy: busy.clone(), cut: Some(tx) });
        Some(Entry { id, busy, cut })
    }

    /// The connection `id` has ended.
    pub fn leave(&self, id: u64) {
        self.lock().retain(|s| s.id != id);
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().len()
    }
}

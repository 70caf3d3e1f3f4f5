//! A deadline on every round trip to a store over the network.
//!
//! TCP keepalive and `tcp_user_timeout` (see [`super::postgres`]) notice a
//! dead peer or network: the kernel stops getting acknowledgements. They
//! cannot notice a link that still acknowledges every byte but never
//! answers — a hung proxy or pooler between the client and the database
//! (the chaos harness's `db-link` blackhole): the client's socket is
//! healthy and its read blocks until the bytes move again, for ever if they
//! never do. The synchronous PostgreSQL client has no read timeout of its
//! own.
//!
//! [`Deadline`] wraps a [`Backend`] and watches its calls from a thread of
//! its own: when one has been waiting longer than the limit it calls the
//! owner's `on_expired` (once). A worker's lease cannot outlive a call that
//! long — its heartbeats wait behind that call on the same connection — so
//! `dhp work` then exits with a store error: it has lost its lease, and a
//! crash-stop is always safe (the supervisor orphans the handoff; a late
//! write would be fenced).

use super::{Backend, CheckpointOnce, CheckpointReq, HeartbeatOnce, LivenessToken, Mode, Tx};
use crate::error::{Error, Result, StoreErrorKind};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The calls in flight, by id, with when they began and how long they may take.
#[derive(Default)]
struct Watch {
    calls: Mutex<BTreeMap<u64, (Instant, Duration)>>,
    next: AtomicU64,
    stop: AtomicBool,
}

/// One call in flight; unregistered when dropped (returned or unwound).
pub struct InFlight<'a>(&'a Watch, u64);

impl Watch {
    fn begin(&self, limit: Duration) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (Instant::now(), limit));
        InFlight(self, id)
    }

    /// A call in flight past its limit: how long it waited, and its limit.
    fn overdue(&self) -> Option<(Duration, Duration)> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.values().map(|(t, limit)| (t.elapsed(), *limit)).find(|(waited, limit)| waited > limit)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.1);
    }
}

/// The watcher: a thread that calls the owner's `on_expired` (once) when a
/// call it watches has waited longer than the limit. Stopped when dropped.
pub struct Watchdog {
    watch: Arc<Watch>,
    limit: Duration,
    connect_limit: Duration,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog").field("limit", &self.limit).finish()
    }
}

/// The error a call that outlived its deadline stands for (kind
/// `StoreError`, [`StoreErrorKind::Connection`]).
pub fn expired(waited: Duration, limit: Duration) -> Error {
    let detail = format!(
        "no reply for {:.1} s (limit {:.1} s): the link to the database, or the server, hangs or is too slow to keep a lease",
        waited.as_secs_f64(),
        limit.as_secs_f64()
    );
    Error::Store {
        context: "store round trip".into(),
        kind: StoreErrorKind::Connection,
        source: Box::new(std::io::Error::new(std::io::ErrorKind::TimedOut, detail.clone())),
        detail,
    }
}

impl Watchdog {
    /// Start watching: `on_expired` gets the error of the first call found
    /// waiting longer than `limit` — `connect_limit` for one that opens a
    /// connection (its handshake is several round trips) — checked every
    /// `limit / 10`, at most every 100 ms.
    pub fn start(
        limit: Duration,
        connect_limit: Duration,
        on_expired: impl FnOnce(Error) + Send + 'static,
    ) -> Result<Watchdog> {
        let watch = Arc::new(Watch::default());
        let w = watch.clone();
        let tick = (limit / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        std::thread::Builder::new()
            .name("dhp-store-deadline".into())
            .spawn(move || {
                while !w.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    if let Some((waited, limit)) = w.overdue() {
                        on_expired(expired(waited, limit));
                        return;
                    }
                }
            })
            .map_err(|e| Error::validation_from(format!("cannot start the store deadline watcher: {e}"), e))?;
        Ok(Watchdog { watch, limit, connect_limit: connect_limit.max(limit) })
    }

    /// Watch one round trip until the guard is dropped.
    pub fn call(&self) -> InFlight<'_> {
        self.watch.begin(self.limit)
    }

    /// Watch one call that opens a connection (opening the store: its
    /// handshake can hang too) until the guard is dropped.
    pub fn connecting(&self) -> InFlight<'_> {
        self.watch.begin(self.connect_limit)
    }

    /// Watch every call of `inner` from now on.
    pub fn wrap(self, inner: Arc<dyn Backend>) -> Arc<Deadline> {
        Arc::new(Deadline { inner, dog: self })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.watch.stop.store(true, Ordering::Relaxed);
    }
}

/// A [`Backend`] whose calls are watched against a deadline (see the module).
pub struct Deadline {
    inner: Arc<dyn Backend>,
    dog: Watchdog,
}

impl std::fmt::Debug for Deadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline").field("store", &self.inner.describe()).field("limit", &self.dog.limit).finish()
    }
}

impl Backend for Deadline {
    fn transact(&self, mode: Mode, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let _call = self.dog.call();
        self.inner.transact(mode, f)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn publish_liveness(&self, holder: &crate::id::WorkerId) -> Result<Option<LivenessToken>> {
        // a new connection: its handshake can hang behind the same link
        let _call = self.dog.connecting();
        self.inner.publish_liveness(holder)
    }

    fn checkpoint_once(&self, req: CheckpointReq<'_>) -> Result<Option<CheckpointOnce>> {
        let _call = self.dog.call();
        self.inner.checkpoint_once(req)
    }

    fn heartbeat_once(
        &self,
        holder: &crate::id::WorkerId,
        hid: &str,
        fence: crate::lease::Fence,
    ) -> Result<Option<HeartbeatOnce>> {
        let _call = self.dog.call();
        self.inner.heartbeat_once(holder, hid, fence)
    }

    /// Not watched: it waits for an announcement by design.
    fn wait_for_orphan(&self, timeout: Duration) -> Result<bool> {
        self.inner.wait_for_orphan(timeout)
    }
}

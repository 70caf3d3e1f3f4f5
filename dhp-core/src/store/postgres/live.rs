//! Cross-host liveness on PostgreSQL: a holder (worker or supervisor)
//! takes a session-level advisory lock derived from its id on a connection
//! of its own and keeps it for as long as it works. When the process dies
//! its connection closes and the server releases the lock; a host that
//! vanishes without closing is dropped by the server's TCP keepalive /
//! `tcp_user_timeout` (a few seconds, inside the lease TTL).
//!
//! The holder is also listed in the `liveness` table (after the lock is
//! taken), so "published and lock gone" — dead — is told apart from "never
//! published" — lease-only, like the reference's workers. The leader tests
//! every running holder in ONE query per poll ([`DEAD_HOLDERS_SQL`]).
//!
//! A holder whose own connection to the database breaks (the database
//! restarted, failed over, a partition) loses its lock as if it had died;
//! its keeper takes it again once a server takes writes ([`PgToken::retaken`]
//! lets a worker that rides through wait for that). If a leader orphaned its
//! handoffs meanwhile, they are fenced and its next write fails with a
//! typed error.

use super::PgStore;
use crate::error::{Error, Result};
use crate::id::WorkerId;
use postgres::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The lock key of `holder` in the store of `schema` (the bigint advisory
/// key space, apart from the int4-pair space of transaction locks).
pub fn lock_key(schema: &str, holder: &str) -> i64 {
    super::fnv64(&["dhp-live", schema, holder]) as i64
}

/// "No session holds the lock of listing `lv`": pg_locks shows a bigint
/// advisory key as classid (high 32 bits) and objid (low 32 bits) with
/// objsubid 1.
macro_rules! lock_not_held {
    () => {
        "NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND l.classid::bigint = ((lv.lock_key >> 32) & 4294967295) \
         AND l.objid::bigint = (lv.lock_key & 4294967295))"
    };
}

/// How long after a store handle REconnected (its connection broke: the
/// database restarted, failed over to a standby, a network cut) it declares
/// no holder dead, in seconds. On a restarted server or a newly promoted
/// primary no advisory lock exists (locks are not replicated): every live
/// holder's keeper needs a ping ([`PING`]) and a connection to take its
/// lock again, and the asker, just reconnected itself, would otherwise see
/// them all dead at once. A real death in that window is found this much
/// later (the lease bounds it either way). A handle's first connection has
/// no grace: the server was there before it.
pub const RETAKE_GRACE_S: f64 = 2.5;

/// Of the holders in `$1` (text[]), those listed in `liveness` whose lock no
/// session holds.
pub const DEAD_HOLDERS_SQL: &str = concat!(
    "SELECT lv.holder FROM liveness lv WHERE lv.holder = ANY($1) AND ",
    lock_not_held!(),
    " ORDER BY lv.holder"
);

/// Remove the listing of holder `$1` if its lock is still not held (so a
/// process of that id that took the lock again keeps its listing).
pub const FORGET_DEAD_SQL: &str = concat!("DELETE FROM liveness lv WHERE lv.holder = $1 AND ", lock_not_held!());

/// A held liveness lock; dropping it (clean exit) withdraws the listing and
/// releases the lock. A keeper thread pings the connection every half
/// second and, if it broke (the database restarted, a network blip),
/// reconnects and takes the lock again, so a live holder is seen as live
/// again within a second of the database coming back.
pub struct PgToken {
    holder: String,
    stop: Arc<AtomicBool>,
    /// The keeper's view: its connection held the lock at the last ping.
    held: Arc<AtomicBool>,
    /// Set to make the keeper ping (and retake) now rather than at its next tick.
    nudge: Arc<AtomicBool>,
    keeper: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PgToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgToken").field("holder", &self.holder).finish()
    }
}

const PING: Duration = Duration::from_millis(500);

/// Take the lock and list the holder; `Ok(false)`: another session holds it.
fn take(client: &mut Client, holder: &str, key: i64) -> Result<bool> {
    let got: bool = client.query_one("SELECT pg_try_advisory_lock($1::bigint)", &[&key])?.get(0);
    if got {
        client.execute(
            "INSERT INTO liveness (holder, lock_key, published_at) \
             VALUES ($1, $2, extract(epoch FROM clock_timestamp())::float8) \
             ON CONFLICT (holder) DO UPDATE SET lock_key = excluded.lock_key, published_at = excluded.published_at",
            &[&holder, &key],
        )?;
    }
    Ok(got)
}

impl PgToken {
    /// Take the lock for `holder` on a new connection and list it. Fails if
    /// another live session holds it (the same id running elsewhere).
    pub fn publish(store: &PgStore, holder: &WorkerId) -> Result<Self> {
        let holder = holder.as_str();
        let key = lock_key(&store.location().schema, holder);
        let mut client = store.connect()?;
        if !take(&mut client, holder, key)? {
            return Err(Error::validation(format!(
                "liveness lock of {holder} in {} is held by another live session",
                store.location()
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (held, nudge) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
        let reconnect = store.connector();
        let who = holder.to_string();
        let flags = Flags { stop: stop.clone(), held: held.clone(), nudge: nudge.clone() };
        let keeper = std::thread::Builder::new()
            .name("dhp-liveness".into())
            .spawn(move || keep(client, reconnect, &who, key, &flags))
            .map_err(|e| Error::validation_from(format!("cannot start the liveness keeper: {e}"), e))?;
        Ok(PgToken { holder: holder.to_string(), stop, held, nudge, keeper: Some(keeper) })
    }

    /// Wait until the keeper holds the lock again (after a broken
    /// connection: a restarted server or a new primary has no advisory
    /// locks), pinging at once rather than at its next tick; false when it
    /// does not by `until`.
    pub fn retaken(&self, until: std::time::Instant) -> bool {
        self.nudge.store(true, Ordering::SeqCst);
        // The keeper clears the nudge once it has pinged.
        while self.nudge.load(Ordering::SeqCst) || !self.held.load(Ordering::SeqCst) {
            if std::time::Instant::now() >= until {
                return false;
            }
            if !self.nudge.load(Ordering::SeqCst) {
                self.nudge.store(true, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// The holder this token speaks for.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}

/// The keeper's signals (see [`PgToken`]).
struct Flags {
    stop: Arc<AtomicBool>,
    held: Arc<AtomicBool>,
    nudge: Arc<AtomicBool>,
}

/// The keeper loop: hold the lock until `stop`, re-taking it after a
/// broken connection; on stop, unlist and unlock.
fn keep(client: Client, reconnect: impl Fn() -> Result<Client>, holder: &str, key: i64, flags: &Flags) {
    let Flags { stop, held, nudge } = flags;
    let mut conn = Some(client);
    let tick = Duration::from_millis(50);
    'keep: loop {
        // Sleep a ping interval, waking at once on stop or a nudge.
        let mut slept = Duration::ZERO;
        while slept < PING && !nudge.load(Ordering::SeqCst) {
            if stop.load(Ordering::SeqCst) {
                break 'keep;
            }
            std::thread::sleep(tick);
            slept += tick;
        }
        let alive = conn.as_mut().is_some_and(|c| !c.is_closed() && c.simple_query("SELECT 1").is_ok());
        if !alive {
            conn = None;
            if let Ok(mut c) = reconnect() {
                match take(&mut c, holder, key) {
                    Ok(true) => {
                        tracing::info!(holder, "liveness lock taken again after a broken connection");
                        conn = Some(c);
                    }
                    Ok(false) => tracing::warn!(holder, "liveness lock held by another session; running lease-only"),
                    Err(e) => tracing::debug!(error = %e, "liveness lock not retaken yet"),
                }
            }
        }
        held.store(conn.is_some(), Ordering::SeqCst);
        nudge.store(false, Ordering::SeqCst);
    }
    if let Some(mut c) = conn {
        // Unlist first, so no one sees a listed holder without its lock.
        let _ = c.execute("DELETE FROM liveness WHERE holder = $1", &[&holder]);
        let _ = c.execute("SELECT pg_advisory_unlock($1::bigint)", &[&key]);
    }
}

impl Drop for PgToken {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
    }
}

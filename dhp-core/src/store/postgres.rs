//! The PostgreSQL backend: the schema v3 tables in one PostgreSQL schema,
//! shared by workers and supervisors on any number of hosts.
//!
//! Semantics are the SQLite backend's (see `docs/postgres.md`):
//! - every protocol operation is one transaction; a process killed
//!   mid-transaction leaves nothing (the server rolls it back when the
//!   connection drops);
//! - a write transaction takes a transaction-level advisory lock per handoff
//!   before it reads or writes that handoff (and one for the leadership
//!   row), so each compare-and-set runs exactly as under SQLite's single
//!   writer, while writes to different handoffs proceed in parallel;
//!   reads run in one `REPEATABLE READ, READ ONLY` snapshot;
//! - lease and leadership times come from the server's clock
//!   ([`crate::store::Tx::now`]), never the client's;
//! - liveness: a session-level advisory lock per holder on its own
//!   connection ([`live`]); orphans are announced with `NOTIFY`.
//!
//! Client crate: the synchronous `postgres` crate. dhp-core's store is
//! synchronous (one transaction per call, a closure per transaction), so a
//! blocking client fits without an async runtime in the library's API; one
//! connection per store handle, as one SQLite connection per handle today,
//! so no pool is needed.

mod ddl;
mod hot;
pub(crate) mod lane;
pub mod live;
mod one_trip;
pub mod passfile;
pub mod tls;
mod tx;

pub use ddl::{SCHEMA_SQL, TABLES};

use super::location::PgLocation;
use super::{Backend, CheckpointOnce, CheckpointReq, HeartbeatOnce, LivenessToken, Mode, Tx};
use crate::error::{Error, Result};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Statement};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Connect timeout when the URL gives none (`connect_timeout=` overrides).
/// It bounds a whole connection attempt per host — TCP connect, TLS,
/// start-up and authentication — not only the TCP connect (a server that
/// accepts and never answers is given up on within it).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The least `statement_timeout` a session gets (see [`statement_timeout_ms`]).
pub const MIN_STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// `statement_timeout` for every session of a store handle: twice
/// [`idle_in_transaction_ms`] (a statement may wait that long for a lock
/// held by a stalled writer, which the server cuts off), at least
/// [`MIN_STATEMENT_TIMEOUT_MS`]. A statement still running (or waiting)
/// after that is cancelled by the server and the call fails with a store
/// error. A URL's own `options=-c statement_timeout=…` wins.
pub fn statement_timeout_ms() -> u64 {
    idle_in_transaction_ms().saturating_mul(2).clamp(MIN_STATEMENT_TIMEOUT_MS, i32::MAX as u64)
}

/// The `statement_timeout` (ms) the sessions of a store at `url` (a
/// [`PgLocation::url`]) run with: the URL's own when its `options` set one
/// (`-c statement_timeout=…`, in the server's units: `ms`, `s`, `min`,
/// `h`, `d`, plain milliseconds), else [`statement_timeout_ms`]. `0`:
/// none (the server's meaning).
pub fn effective_statement_timeout_ms(url: &str) -> u64 {
    let options = postgres::Config::from_str(url).ok().and_then(|c| c.get_options().map(str::to_string));
    options.as_deref().and_then(|o| setting_ms(o, "statement_timeout")).unwrap_or_else(statement_timeout_ms)
}

/// The value of the last `-c NAME=VALUE` (`-cNAME=…`, `--NAME=…`) of a
/// libpq `options` string, in milliseconds.
fn setting_ms(options: &str, name: &str) -> Option<u64> {
    let mut found = None;
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let kv = match w {
            "-c" => match words.next() {
                Some(kv) => kv,
                None => break,
            },
            _ => match w.strip_prefix("-c").or_else(|| w.strip_prefix("--")) {
                Some(kv) => kv,
                None => continue,
            },
        };
        if let Some((k, v)) = kv.split_once('=') {
            if k.replace('-', "_") == name {
                found = duration_ms(v).or(found);
            }
        }
    }
    found
}

/// `5000`, `5000ms`, `5s`, `2min`, `1h`, `1d` → milliseconds.
fn duration_ms(v: &str) -> Option<u64> {
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = (n * scale).ceil();
    (ms.is_finite() && ms >= 0.0).then_some(ms.min(i32::MAX as f64) as u64)
}

/// Server-side socket settings for every session: a client host that
/// vanishes without closing its connections is dropped (and its advisory
/// locks released) within about four seconds, inside the default 6 s lease.
const SERVER_SOCKET_OPTIONS: &str =
    "-c tcp_keepalives_idle=1 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 -c tcp_user_timeout=4000";

/// The least `idle_in_transaction_session_timeout` a session gets (see
/// [`idle_in_transaction_ms`]): a lease TTL shorter than this does not cut
/// a transaction whose process was merely descheduled on a loaded host.
const MIN_IDLE_IN_TRANSACTION_MS: u64 = 1_000;

/// `idle_in_transaction_session_timeout` for every session of a store
/// handle: the lease TTL of this process's configuration (`DHP_*`
/// variables; the defaults when they are unset or invalid), at least
/// [`MIN_IDLE_IN_TRANSACTION_MS`]. DHP's transactions never wait for
/// anything but the server between their statements, so a session idle
/// inside one for that long belongs to a stopped or hung process (a
/// SIGSTOP, a debugger, a frozen VM). The server then ends the session and
/// rolls the transaction back, releasing its advisory and row locks: the
/// supervisor's orphaning of that handoff — and the rest of its scan,
/// which orphans one handoff after another — waits at most this long
/// behind a stalled writer, instead of until the writer wakes. A URL's own
/// `options=-c idle_in_transaction_session_timeout=…` wins.
pub fn idle_in_transaction_ms() -> u64 {
    let ttl_ms = crate::Config::from_env().unwrap_or_default().lease_ttl_s() * 1_000.0;
    // A validated TTL is finite and positive; the server's limit is i32::MAX ms.
    let ms = if ttl_ms.is_finite() { ttl_ms.ceil().min(i32::MAX as f64) as u64 } else { i32::MAX as u64 };
    ms.max(MIN_IDLE_IN_TRANSACTION_MS)
}

/// How often a write transaction that hit a deadlock is retried.
const DEADLOCK_RETRIES: usize = 20;

/// FNV-1a, 64 bit: stable advisory-lock keys across processes and hosts.
pub(crate) fn fnv64(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        for b in p.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// The two-int4 advisory key space of one store: `(store, item)`.
pub(crate) fn store_key(schema: &str) -> i32 {
    fnv64(&["dhp-store", schema]) as u32 as i32
}

/// Item keys: a handoff, the leadership row, store initialisation.
pub(crate) fn item_key(item: &str) -> i32 {
    fnv64(&["dhp-item", item]) as u32 as i32
}

/// The transaction-level advisory lock of `item` (a hid, `leadership`,
/// `init`) in the store held by `schema`: the two `int4` keys of
/// `pg_advisory_xact_lock`, for operators and tests that must serialise
/// with DHP's writers (docs/postgres.md).
pub fn advisory_keys(schema: &str, item: &str) -> (i32, i32) {
    (store_key(schema), item_key(item))
}

/// The NOTIFY channel of a store's orphans.
pub(crate) fn orphan_channel(schema: &str) -> String {
    format!("dhp_orphaned_{schema}")
}

/// One connection and its prepared statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) stmts: HashMap<&'static str, Statement>,
    /// Set when this connection replaced a broken one: until then no holder
    /// is declared dead ([`live::RETAKE_GRACE_S`]).
    pub(crate) retake_until: Option<std::time::Instant>,
}

/// A PostgreSQL store handle.
pub struct PgStore {
    loc: PgLocation,
    config: postgres::Config,
    tls: tls::MakeRustls,
    conn: Mutex<Option<Conn>>,
    listener: Mutex<Option<Client>>,
    /// A connection attempt that outlived its bound ([`connect_bounded`]).
    pending: Arc<Mutex<Option<PendingConnect>>>,
    key: i32,
    /// The one-round-trip functions exist ([`one_trip`]).
    one_trip: AtomicBool,
    /// `dhp_checkpoint_v2` exists ([`one_trip`]).
    one_trip_v2: AtomicBool,
    /// A connection was made before: the next one is a reconnection.
    connected_once: AtomicBool,
    /// The checkpoint lane ([`lane`]).
    lane: Mutex<hot::LaneSlot>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("location", &self.loc.to_string()).finish()
    }
}

static ROLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Name this process's connections `dhp-<role>-<pid>` (the `dhp` program
/// passes its subcommand: `work`, `supervisor`, …), so operators and the
/// chaos harness can tell a process's backends apart in
/// `pg_stat_activity`. Set once; a role that is not 1 to 16 of `[a-z0-9-]`
/// starting with a letter is ignored (returns false), as is a second call.
pub fn set_application_role(role: &str) -> bool {
    let ok = (1..=16).contains(&role.len())
        && role.starts_with(|c: char| c.is_ascii_lowercase())
        && role.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    ok && ROLE.set(role.to_string()).is_ok()
}

/// `dhp-<role>-<pid>` ([`set_application_role`]; `client` when unset). A
/// URL's own `application_name=` wins.
pub fn application_name() -> String {
    format!("dhp-{}-{}", ROLE.get().map_or("client", String::as_str), std::process::id())
}

/// Every host of the URL is a Unix-socket directory (`host=/dir`, or a
/// percent-encoded `/dir` as the URL's host) and no `hostaddr` sends the
/// connection over TCP instead.
fn unix_sockets_only(config: &postgres::Config) -> bool {
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && config.get_hostaddrs().is_empty()
        && hosts.iter().all(|h| matches!(h, postgres::config::Host::Unix(_)))
}

/// A connection attempt running on a thread of its own: its result, when
/// the server answers.
type PendingConnect = mpsc::Receiver<std::result::Result<Client, postgres::Error>>;

/// Open a connection, the whole handshake bounded by the connect timeout
/// (per host of the URL). The client library bounds only the TCP connect,
/// and a server (or proxy) that accepts the connection and never answers
/// would block the start-up exchange for ever; so the attempt runs on a
/// thread of its own and is given up on after the bound. An attempt given
/// up on is kept (`pending`): the next call waits for it again rather than
/// starting another, so a hung server costs one blocked thread per store
/// handle, not one per retry; it ends when the server answers or the
/// connection drops.
fn connect_bounded(
    config: &postgres::Config,
    tls: &tls::MakeRustls,
    pending: &Mutex<Option<PendingConnect>>,
) -> Result<Client> {
    let hosts = config.get_hosts().len().max(config.get_hostaddrs().len()).max(1) as u32;
    let limit = config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT) * hosts;
    let mut slot = pending.lock().unwrap_or_else(|p| p.into_inner());
    let rx = match slot.take() {
        Some(rx) => rx,
        None => {
            let (tx, rx) = mpsc::sync_channel(1);
            let (c, t) = (config.clone(), tls.clone());
            std::thread::Builder::new()
                .name("dhp-pg-connect".into())
                .spawn(move || {
                    let _ = tx.send(c.connect(t));
                })
                .map_err(|e| Error::validation_from(format!("cannot start a connection thread: {e}"), e))?;
            rx
        }
    };
    match rx.recv_timeout(limit) {
        Ok(res) => res.map_err(|source| Error::pg_connect(target(config), source)),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            *slot = Some(rx);
            Err(Error::pg_connect_timeout(target(config), limit))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(Error::validation(format!("the connection attempt to {} ended without a result", target(config))))
        }
    }
}

/// `host:port/db` for messages (never the password); every host of a
/// multi-host URL (`h1:p1,h2:p2/db`: libpq's, tried in order, the first
/// that suits `target_session_attrs` taken).
fn target(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| match h {
            postgres::config::Host::Tcp(h) => format!("{h}:{}", port(i)),
            postgres::config::Host::Unix(p) => format!("{}:{}", p.display(), port(i)),
        })
        .collect();
    let hosts = if hosts.is_empty() { format!("localhost:{}", port(0)) } else { hosts.join(",") };
    format!("{hosts}/{}", config.get_dbname().unwrap_or("(default database)"))
}

impl PgStore {
    /// Open the store at `loc`, creating its schema and tables on first
    /// use. Refuses a newer schema version or a schema that holds other
    /// tables before writing anything.
    pub fn open(loc: &PgLocation) -> Result<Self> {
        Self::open_with(loc, true)
    }

    /// Open an existing store only: a missing schema or store is
    /// [`Error::NotAStore`] and nothing is written.
    pub fn open_existing(loc: &PgLocation) -> Result<Self> {
        Self::open_with(loc, false)
    }

    fn open_with(loc: &PgLocation, create: bool) -> Result<Self> {
        let mut config = postgres::Config::from_str(&loc.url).map_err(|e| Error::StoreLocation {
            location: loc.to_string(),
            reason: format!("not a valid PostgreSQL URL: {e}"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        passfile::fill_password(&mut config, loc.passfile.as_deref());
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            // libpq would guess a socket directory; say what to give instead.
            return Err(Error::StoreLocation {
                location: loc.to_string(),
                reason: "the URL names no host: give host[:port], or host=/socket/directory for a Unix socket".into(),
            });
        }
        // libpq: a host that starts with `/` is a Unix-socket directory, and
        // `sslmode` is ignored over a socket (the server offers no TLS there).
        if unix_sockets_only(&config) {
            config.ssl_mode(postgres::config::SslMode::Disable);
        }
        // The client notices a dead server or network within seconds too.
        config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(1))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3)
            .tcp_user_timeout(Duration::from_secs(4));
        if config.get_application_name().is_none() {
            config.application_name(&application_name());
        }
        let user_options = config.get_options().unwrap_or("").to_string();
        // Ours first, so that the URL's `options` can override the timeout.
        let (idle, statement) = (idle_in_transaction_ms(), statement_timeout_ms());
        config.options(&format!(
            "-c idle_in_transaction_session_timeout={idle} -c statement_timeout={statement} {user_options} \
             -c search_path={} {SERVER_SOCKET_OPTIONS}",
            loc.schema
        ));
        let store = PgStore {
            loc: loc.clone(),
            config,
            tls: tls::MakeRustls::new(loc)?,
            conn: Mutex::new(None),
            listener: Mutex::new(None),
            pending: Arc::new(Mutex::new(None)),
            key: store_key(&loc.schema),
            one_trip: AtomicBool::new(false),
            one_trip_v2: AtomicBool::new(false),
            connected_once: AtomicBool::new(false),
            lane: Mutex::new(hot::LaneSlot::default()),
        };
        let mut guard = store.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = store.connected(&mut guard)?;
        let mut t = conn.client.transaction()?;
        t.execute("SELECT pg_advisory_xact_lock($1::int4, $2::int4)", &[&store.key, &item_key("init")])?;
        ddl::prepare(&mut t, loc, create)?;
        let one_trip = one_trip::ensure(&mut t, &loc.schema)?;
        t.commit()?;
        store.one_trip.store(one_trip.v1, std::sync::atomic::Ordering::Relaxed);
        store.one_trip_v2.store(one_trip.v2, std::sync::atomic::Ordering::Relaxed);
        drop(guard);
        Ok(store)
    }

    /// The location (password masked when displayed).
    pub fn location(&self) -> &PgLocation {
        &self.loc
    }

    pub(crate) fn connect(&self) -> Result<Client> {
        (self.connector())()
    }

    /// A function that opens a new connection to this store (for threads
    /// that outlive a borrow of the store).
    pub(crate) fn connector(&self) -> impl Fn() -> Result<Client> + Send + 'static {
        let (config, tls, pending) = (self.config.clone(), self.tls.clone(), self.pending.clone());
        move || connect_bounded(&config, &tls, &pending)
    }

    /// The live connection, reconnecting if the last one broke.
    fn connected<'a>(&self, slot: &'a mut Option<Conn>) -> Result<&'a mut Conn> {
        if slot.as_ref().is_some_and(|c| c.client.is_closed()) {
            *slot = None;
        }
        if slot.is_none() {
            let client = self.connect()?;
            let again = self.connected_once.swap(true, std::sync::atomic::Ordering::SeqCst);
            let retake_until = again.then(|| std::time::Instant::now() + Duration::from_secs_f64(live::RETAKE_GRACE_S));
            *slot = Some(Conn { client, stmts: HashMap::new(), retake_until });
        }
        slot.as_mut().ok_or_else(|| Error::validation("no connection"))
    }

    /// Run raw SQL in the store's schema (tests, fault injection).
    pub fn execute_raw(&self, sql: &str) -> Result<()> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = self.connected(&mut guard)?;
        conn.client.batch_execute(sql)?;
        Ok(())
    }

    /// One attempt; the flag says whether a statement hit a deadlock (then
    /// the whole transaction, rolled back, may be run again).
    fn run_once(
        &self,
        conn: &mut Conn,
        mode: Mode,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> (Result<()>, bool) {
        let grace = conn.retake_until.is_some_and(|t| std::time::Instant::now() < t);
        let mut tx = tx::PgTx::new(&mut conn.client, &mut conn.stmts, mode, self.key, &self.loc.schema);
        tx.retake_grace = grace;
        let res = f(&mut tx);
        let deadlocked = tx.deadlocked;
        // On error the transaction is dropped here: ROLLBACK.
        (res.and_then(|()| tx.commit()), deadlocked)
    }
}

fn is_deadlock(e: &Error) -> bool {
    e.is_pg_deadlock()
}

impl Backend for PgStore {
    fn transact(&self, mode: Mode, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let mut attempt = 0;
        loop {
            let conn = self.connected(&mut guard)?;
            match self.run_once(conn, mode, &mut *f) {
                // Two batches locking the same handoffs in opposite orders:
                // the server aborted one; nothing of it was written.
                (Err(e), deadlocked) if (deadlocked || is_deadlock(&e)) && attempt < DEADLOCK_RETRIES => attempt += 1,
                (Err(e), _) => {
                    // Reconnect on the next call: the connection broke, or
                    // its server no longer takes writes (demoted, in
                    // recovery): the next may find the new primary.
                    if e.is_server_lost() || guard.as_ref().is_some_and(|c| c.client.is_closed()) {
                        *guard = None;
                    }
                    return Err(e);
                }
                (Ok(()), _) => return Ok(()),
            }
        }
    }

    fn describe(&self) -> String {
        self.loc.to_string()
    }

    fn checkpoint_once(&self, req: CheckpointReq<'_>) -> Result<Option<CheckpointOnce>> {
        self.checkpoint_call(req)
    }

    fn heartbeat_once(
        &self,
        holder: &crate::id::WorkerId,
        hid: &str,
        fence: crate::lease::Fence,
    ) -> Result<Option<HeartbeatOnce>> {
        let item = item_key(hid);
        let params = [
            lane::Param::I4(self.key),
            lane::Param::I4(item),
            lane::Param::T(hid),
            lane::Param::T(holder.as_str()),
            lane::Param::I8(fence.get()),
        ];
        self.heartbeat_call(&params, hid)
    }

    fn publish_liveness(&self, holder: &crate::id::WorkerId) -> Result<Option<LivenessToken>> {
        let token = live::PgToken::publish(self, holder)?;
        Ok(Some(Box::new(token)))
    }

    fn wait_for_orphan(&self, timeout: Duration) -> Result<bool> {
        let mut guard = self.listener.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_ref().is_some_and(|c| c.is_closed()) {
            *guard = None;
        }
        let client = match guard.as_mut() {
            Some(c) => c,
            None => {
                let mut c = self.connect()?;
                c.batch_execute(&format!("LISTEN {}", orphan_channel(&self.loc.schema)))?;
                guard.insert(c)
            }
        };
        let mut n = client.notifications();
        let woken = n.timeout_iter(timeout).next()?.is_some();
        // Drain what else is queued: one wake-up per wait.
        let mut rest = n.iter();
        while rest.next()?.is_some() {}
        Ok(woken)
    }
}

#[cfg(test)]
mod timeout_tests {
    use super::*;

    #[test]
    fn a_urls_statement_timeout_is_read() {
        assert_eq!(setting_ms("-c statement_timeout=5000", "statement_timeout"), Some(5000));
        assert_eq!(setting_ms("-cstatement_timeout=5s -c x=1", "statement_timeout"), Some(5000));
        assert_eq!(setting_ms("--statement-timeout=2min", "statement_timeout"), Some(120_000));
        assert_eq!(setting_ms("-c statement_timeout=1 -c statement_timeout=0", "statement_timeout"), Some(0));
        assert_eq!(setting_ms("-c lock_timeout=5", "statement_timeout"), None);
        assert_eq!(setting_ms("-c statement_timeout=soon", "statement_timeout"), None);
        assert_eq!(setting_ms("-c", "statement_timeout"), None);
        assert_eq!(effective_statement_timeout_ms("postgres://h/db"), statement_timeout_ms());
        assert_eq!(effective_statement_timeout_ms("postgres://h/db?options=-c%20statement_timeout%3D90s"), 90_000);
    }
}

//! The SQLite backend: `<root>/dhp.sqlite3`, schema v3, WAL.
//!
//! What survives a crash: every transaction that returned `Ok`. Its WAL
//! frames are synced before it returns: by `COMMIT` itself while a store is
//! created or migrated, and afterwards by [`sync_wal`] once the writer lock
//! is handed on, so that concurrent writer processes share flushes
//! (store/wal_sync.rs). A process killed mid-transaction leaves nothing of it: SQLite
//! rolls the WAL back on the next open.
//!
//! The reference opens the same file from Python in autocommit mode; both
//! use SQLite's own locking, so the two may run against one store at once.

use super::{
    Approval, Backend, BudgetUsage, CapabilityAudit, CheckpointRow, Leadership, Mode, Ownership, Pairing, Progress, Tx,
    SCHEMA_VERSION,
};
use crate::envelope::{self, ORPHANED_HOLDER};
use crate::error::{Error, Result};

use super::wal_sync::sync_wal;
use super::writer_queue::WriterQueue;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

#[cfg(test)]
#[path = "sqlite_plans.rs"]
mod plans;

/// The reference's DDL (`dhp/store.py`), verbatim.
pub const SCHEMA_SQL: &str = r#"
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    hid TEXT PRIMARY KEY,
    envelope_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    hid TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    state_hash TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (hid, seq)
);
CREATE INDEX IF NOT EXISTS idx_checkpoints_hid ON checkpoints(hid);
CREATE TABLE IF NOT EXISTS ownership (
    hid TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    fence INTEGER NOT NULL,
    lease_expires_at REAL NOT NULL,
    heartbeat_interval_s REAL NOT NULL,
    max_missed INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leadership (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
-- v2: effect log (idempotency keyed by step_id)
CREATE TABLE IF NOT EXISTS effects (
    hid TEXT NOT NULL,
    step_id TEXT NOT NULL,
    result_json TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (hid, step_id)
);
CREATE INDEX IF NOT EXISTS idx_effects_hid ON effects(hid);
-- v2: approval gates for irreversible actions
CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY,
    hid TEXT NOT NULL,
    action_class TEXT NOT NULL,
    details_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    decided_at REAL
);
CREATE INDEX IF NOT EXISTS idx_approvals_hid ON approvals(hid);
-- v2: progress tracking for stall detection
CREATE TABLE IF NOT EXISTS progress (
    hid TEXT PRIMARY KEY,
    last_checkpoint_at REAL,
    last_digest TEXT,
    digest_repeat_count INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
);
-- v3: capability audit trail
CREATE TABLE IF NOT EXISTS capability_audit (
    hid TEXT NOT NULL,
    domain TEXT NOT NULL,
    resource TEXT NOT NULL,
    granted INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_cap_audit_hid ON capability_audit(hid);
"#;

/// Indexes dhp-rs adds to the reference's schema so that the supervisor's
/// scan and liveness poll read only what changed or expired (see
/// docs/scale.md). Only extra indexes: the tables stay byte-for-byte the
/// reference's, and the reference opens, reads and writes a store that has
/// them (SQLite keeps indexes up to date for every writer).
///
/// The status index's expression is [`STATUS`] verbatim (a query uses the
/// index only when it spells the expression the same way); it is NULL for
/// an envelope SQLite cannot read, so a corrupt row never fails a write.
pub const EXTRA_INDEXES_SQL: &str = r#"
CREATE INDEX IF NOT EXISTS dhprs_ownership_lease ON ownership(lease_expires_at) WHERE holder != '__orphaned__';
CREATE INDEX IF NOT EXISTS dhprs_ownership_holder ON ownership(holder, hid);
CREATE INDEX IF NOT EXISTS dhprs_ownership_updated ON ownership(updated_at, hid);
CREATE INDEX IF NOT EXISTS dhprs_handoffs_updated ON handoffs(updated_at, hid);
CREATE INDEX IF NOT EXISTS dhprs_progress_repeats ON progress(updated_at, hid, digest_repeat_count) WHERE digest_repeat_count > 0;
CREATE INDEX IF NOT EXISTS dhprs_checkpoints_first ON checkpoints(at, hid) WHERE seq = 0;
CREATE INDEX IF NOT EXISTS dhprs_approvals_pending ON approvals(expires_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS dhprs_handoffs_status ON handoffs((CASE WHEN json_valid(envelope_json) THEN json_extract(envelope_json, '$.execution.status') END), hid);
"#;

/// Indexes of earlier dhp-rs versions that [`EXTRA_INDEXES_SQL`] replaced,
/// dropped on open: `dhprs_progress_updated` (every progress row by
/// `updated_at`) cost every checkpoint one more WAL page, rewriting its
/// entry, for changes the scan need not see (docs/scale.md).
pub const DROPPED_INDEXES_SQL: &str = "DROP INDEX IF EXISTS dhprs_progress_updated;";

/// The file next to the database that dhp-rs writers `flock` before
/// `BEGIN IMMEDIATE`: waiting writers sleep in the kernel and are woken
/// when the lock is free, instead of polling SQLite's lock (which, with
/// tens of writer processes on a few cores, burns the CPU the holder
/// needs). Processes that do not take it (the reference) still serialize
/// through SQLite's own lock and busy handler.
pub const WRITER_LOCK_FILE: &str = "dhp.sqlite3-writer";

/// How long a writer waits for the lock before `SQLITE_BUSY`, like the
/// reference's 30 s timeout.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Busy handler: SQLite's default ladder sleeps 1, 2, 5, 10 … 100 ms
/// between retries, so a loser of a short `BEGIN IMMEDIATE` race waits far
/// longer than the winner's transaction. Poll every 100 µs for the first
/// 10 ms, then every 1 ms, and give up after [`BUSY_TIMEOUT`].
fn busy_wait(attempt: i32) -> bool {
    const FINE: i32 = 100; // 100 × 100 µs = 10 ms
    let waited_ms = if attempt < FINE { attempt as u64 / 10 } else { 10 + (attempt - FINE) as u64 };
    if waited_ms >= BUSY_TIMEOUT.as_millis() as u64 {
        return false;
    }
    std::thread::sleep(if attempt < FINE { Duration::from_micros(100) } else { Duration::from_millis(1) });
    true
}

/// The file name inside a store root.
pub const DB_FILE: &str = "dhp.sqlite3";

/// A store root with its SQLite connection.
pub struct SqliteStore {
    root: PathBuf,
    conn: Mutex<Connection>,
    /// The writers' queue, mapped at the first write transaction.
    queue: OnceLock<Option<WriterQueue>>,
    /// The connection runs `synchronous=NORMAL` in WAL mode, so every
    /// write transaction syncs the WAL itself after handing the lock on.
    sync_after: bool,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("root", &self.root).finish()
    }
}

impl SqliteStore {
    /// Open the store under `root`, creating `root` and a new store if
    /// there is none (library default; the CLI goes through
    /// [`super::open_root`], which creates only when asked). An existing
    /// `dhp.sqlite3` must be a DHP store: an empty, foreign or non-SQLite
    /// file is refused ([`Error::NoStore`]), never re-initialised. Refuses a
    /// store whose schema is newer than v3 before changing anything in it.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(root, true)
    }

    /// Open the store under `root`; with `create`, make `root` and a new
    /// store if `dhp.sqlite3` does not exist, else refuse ([`Error::NoStore`])
    /// without creating anything.
    pub fn open_with(root: impl AsRef<Path>, create: bool) -> Result<Self> {
        let root = root.as_ref();
        let no_store = |reason: &str| Error::NoStore { root: root.to_path_buf(), reason: reason.to_string() };
        if create {
            std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        } else if !root.exists() {
            return Err(no_store("no such directory"));
        }
        if !root.is_dir() {
            return Err(no_store("not a directory"));
        }
        let root = root.canonicalize().map_err(|e| Error::io(root, e))?;
        let db = root.join(DB_FILE);
        match std::fs::metadata(&db) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Err(no_store(&format!("no {DB_FILE} (`dhp dispatch --create` makes a new store)")));
                }
                create_fresh(&root)?;
            }
            Err(e) => return Err(Error::io(&db, e)),
            Ok(m) if !m.is_file() => return Err(no_store(&format!("{DB_FILE} is not a regular file"))),
            Ok(m) if m.len() == 0 => {
                return Err(no_store(&format!("{DB_FILE} is empty (0 bytes); move it away to start a new store")))
            }
            Ok(_) => {}
        }
        // No SQLITE_OPEN_CREATE: the file exists (checked above), and if it
        // vanished meanwhile nothing is created behind the caller's back.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&db, flags)?;
        conn.busy_handler(Some(busy_wait))?;
        // Identify the file before writing anything to it (even the WAL
        // pragma rewrites the header of a foreign database).
        let has_version_table = match conn
            .query_row("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'", [], |_| Ok(()))
            .optional()
        {
            Ok(found) => found.is_some(),
            Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::NotADatabase => {
                return Err(no_store(&format!("{DB_FILE} is not an SQLite database")))
            }
            Err(e) => return Err(e.into()),
        };
        if !has_version_table {
            return Err(no_store(&format!("{DB_FILE} is not a DHP store (no schema_version table)")));
        }
        let found: Option<i64> = conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
        if let Some(v) = found {
            if v > SCHEMA_VERSION {
                return Err(Error::NewerSchema { found: v, supported: SCHEMA_VERSION });
            }
        }
        // Durable like the reference: WAL with a full sync at commit while
        // migrating. Afterwards `COMMIT` only writes the WAL frames and
        // `transact` syncs them once the writer lock is handed on (group
        // commit across processes, store/wal_sync.rs). A file system
        // without WAL keeps `synchronous=FULL`.
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous=FULL;")?;
        migrate(&conn)?;
        let sync_after = mode.eq_ignore_ascii_case("wal");
        if sync_after {
            conn.execute_batch("PRAGMA synchronous=NORMAL;")?;
        }
        Ok(SqliteStore { root, conn: Mutex::new(conn), queue: OnceLock::new(), sync_after })
    }

    /// The store root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of the database file.
    pub fn db_path(&self) -> PathBuf {
        self.root.join(DB_FILE)
    }

    /// Count, from now on, the SQLite virtual-machine instructions this
    /// store's connection runs (every row a statement visits costs a few;
    /// an index seek is one whatever the table's size): what the scale
    /// tests count for a supervisor pass with nothing to do, instead of
    /// timing it. Instrumentation for tests and benches: every instruction
    /// then calls back. Replaces an earlier counter of this store.
    #[cfg(feature = "harness")]
    pub fn count_vm_steps(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        use std::sync::atomic::{AtomicU64, Ordering};
        let n = std::sync::Arc::new(AtomicU64::new(0));
        let counter = n.clone();
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.progress_handler(
            1,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        );
        n
    }

    /// Run raw SQL (tests, fault injection, the conformance harness).
    pub fn execute_raw(&self, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<usize> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let n = conn.execute(sql, args)?;
        if self.sync_after {
            sync_wal(&conn, &self.root)?;
        }
        Ok(n)
    }
}

/// Bring a v1/v2 store (or a fresh one) to v3: additive, idempotent.
fn migrate(conn: &Connection) -> Result<()> {
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(SCHEMA_SQL)?;
    tx.execute_batch(DROPPED_INDEXES_SQL)?;
    tx.execute_batch(EXTRA_INDEXES_SQL)?;
    let found: Option<i64> = tx.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
    if found.is_none_or(|v| v < SCHEMA_VERSION) {
        // v1/v2 → v3 is additive: the CREATE IF NOT EXISTS above did it.
        tx.execute(
            "INSERT OR IGNORE INTO schema_version (version, applied_at) VALUES (?1, ?2)",
            params![SCHEMA_VERSION, crate::envelope::now()],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// Prefix of the scratch file a new store is built in.
pub(crate) const SCRATCH_PREFIX: &str = ".dhp.sqlite3.new-";

/// Create `root/dhp.sqlite3` atomically: build the schema in a scratch file,
/// then hard-link it into place. Nobody ever sees a half-initialised store
/// (which [`SqliteStore::open_with`] would refuse as foreign), and of two
/// concurrent creators the second simply opens the first one's store.
fn create_fresh(root: &Path) -> Result<()> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let scratch = root.join(format!("{SCRATCH_PREFIX}{}-{nanos}", std::process::id()));
    let built = (|| -> Result<()> {
        let conn = Connection::open(&scratch)?;
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        conn.execute_batch("PRAGMA synchronous=FULL;")?;
        migrate(&conn)?;
        // Closing the only connection checkpoints the WAL into the file.
        conn.close().map_err(|(_, e)| Error::from(e))
    })();
    let db = root.join(DB_FILE);
    let linked = built.and_then(|()| match std::fs::hard_link(&scratch, &db) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()), // another creator won
        // A file system without hard links: rename, which is atomic but
        // not exclusive, so only if no store appeared meanwhile.
        Err(_) if !db.exists() => std::fs::rename(&scratch, &db).map_err(|e| Error::io(&db, e)),
        Err(e) => Err(Error::io(&db, e)),
    });
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", scratch.display()));
    }
    linked?;
    // The new name is durable only once the directory is synced.
    std::fs::File::open(root).and_then(|d| d.sync_all()).map_err(|e| Error::io(root, e))
}

impl Backend for SqliteStore {
    fn transact(&self, mode: Mode, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let behavior = match mode {
            Mode::Read => TransactionBehavior::Deferred,
            // Take the write lock at BEGIN so a read-then-write CAS cannot be
            // interleaved by another process.
            Mode::Write => TransactionBehavior::Immediate,
        };
        // Queue for the writer lock first, then take it (both held until
        // the transaction ends; the lock is released first, then the turn).
        let _turn = match mode {
            Mode::Write => self.queue.get_or_init(|| WriterQueue::open(&self.root)).as_ref().and_then(|q| q.enter()),
            Mode::Read => None,
        };
        let _writer = match mode {
            Mode::Write => writer_lock(&self.root),
            Mode::Read => None,
        };
        let changes_before = conn.total_changes();
        let tx = conn.transaction_with_behavior(behavior)?;
        f(&mut SqliteTx { c: &tx })?;
        tx.commit()?;
        // Sync after handing the lock on: the next writer's transaction
        // runs meanwhile, and one sync covers every commit before it. A
        // transaction that changed no row wrote no WAL frame.
        drop(_writer);
        drop(_turn);
        if self.sync_after && conn.total_changes() != changes_before {
            sync_wal(&conn, &self.root)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.db_path().display().to_string()
    }
}

/// Block (sleeping, not polling) until this process holds the store's
/// writer lock ([`WRITER_LOCK_FILE`]); released when the returned guard
/// drops, or by the kernel if the process dies. `None` if the lock file
/// cannot be opened (a read-only directory): the writer then relies on
/// SQLite's busy handler alone, as the reference does.
fn writer_lock(root: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let path = root.join(WRITER_LOCK_FILE);
    let mut file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).ok()?;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive) {
            Ok(lock) => return Some(lock),
            Err((f, nix::errno::Errno::EINTR)) => file = f,
            Err((_, errno)) => {
                tracing::debug!(%errno, path = %path.display(), "writer lock unavailable; SQLite's busy handler alone");
                return None;
            }
        }
    }
}

struct SqliteTx<'a> {
    c: &'a Connection,
}

fn ownership_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ownership> {
    Ok(Ownership {
        hid: r.get(0)?,
        holder: r.get(1)?,
        fence: r.get(2)?,
        lease_expires_at: r.get(3)?,
        heartbeat_interval_s: r.get(4)?,
        max_missed: r.get(5)?,
    })
}

fn checkpoint_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CheckpointRow> {
    Ok(CheckpointRow { seq: r.get(0)?, state_json: r.get(1)?, state_hash: r.get(2)?, at: r.get(3)? })
}

fn approval_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Approval> {
    Ok(Approval {
        approval_id: r.get(0)?,
        hid: r.get(1)?,
        action_class: r.get(2)?,
        details_json: r.get(3)?,
        status: r.get(4)?,
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
        decided_at: r.get(7)?,
    })
}

const OWNERSHIP_COLS: &str = "hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed";

/// `execution.status` of `handoffs h`, NULL for a row SQLite cannot read
/// (`json_extract` alone raises "malformed JSON" and would fail a whole
/// query over one bad row). Spelled exactly as the expression of the
/// `dhprs_handoffs_status` index ([`EXTRA_INDEXES_SQL`]), so that queries
/// on it read the index instead of parsing envelopes.
const STATUS: &str =
    "(CASE WHEN json_valid(h.envelope_json) THEN json_extract(h.envelope_json, '$.execution.status') END)";

/// The stall condition over `ownership o` and `progress p` (?1 now,
/// ?2 the checkpoint cutoff, ?3 the digest repeats), as the reference's.
const STALLED: &str = "o.lease_expires_at >= ?1 AND ((p.last_checkpoint_at IS NOT NULL AND p.last_checkpoint_at < ?2) \
                       OR p.digest_repeat_count >= ?3)";
/// One handoff beside its ownership row (?1 the hid), as
/// [`pairing_row`] reads it.
const PAIRING_OF: &str = "SELECT h.hid, (CASE WHEN json_valid(h.envelope_json) THEN \
                          json_extract(h.envelope_json, '$.execution.status') END), o.holder, o.fence, \
                          o.lease_expires_at, o.heartbeat_interval_s, o.max_missed, o.updated_at \
                          FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid WHERE h.hid = ?1";

/// Running handoffs whose lease expired before ?1, through the partial
/// lease index `dhprs_ownership_lease` (CROSS JOIN keeps ownership
/// outermost): leases that have not expired are never read. Rows held by
/// the orphan tombstone are left out; orphaning them again changes
/// nothing. The holder test is spelled as the index's WHERE, which is
/// what lets SQLite use the partial index. No ORDER BY: with one, SQLite
/// walked the whole ownership table in hid order to save a sort (the
/// caller sorts the few rows found).
const EXPIRED_LEASES: &str = "SELECT o.hid FROM ownership o \
                              CROSS JOIN handoffs h ON h.hid = o.hid \
                              WHERE o.holder != '__orphaned__' AND o.lease_expires_at < ?1 \
                              AND (CASE WHEN json_valid(h.envelope_json) THEN \
                              json_extract(h.envelope_json, '$.execution.status') END) = 'running'";

/// Rows written at or after ?1 (?2: the same time as the reference's ISO
/// text), four covering index ranges, no table reads: handoffs and
/// ownership rows; progress rows with a repeated digest (the writes that
/// bring a stall closer); and first checkpoints (seq 0, `at` compared as
/// text: one format, UTC, fixed width up to the seconds), which give a
/// handoff its first stall deadline. A later checkpoint only moves that
/// deadline later: the deadline already tracked falls due early, the
/// handoff is checked and not stalled, and its new deadline is read then
/// (`supervisor/tracker.rs`). Leaving those out of the indexes is what
/// keeps a checkpoint from rewriting an index page (docs/scale.md).
const CHANGED_SINCE: &str = "SELECT hid, updated_at FROM handoffs WHERE updated_at >= ?1 \
                             UNION ALL SELECT hid, updated_at FROM ownership WHERE updated_at >= ?1 \
                             UNION ALL SELECT hid, updated_at FROM progress \
                             WHERE digest_repeat_count > 0 AND updated_at >= ?1 \
                             UNION ALL SELECT hid, (julianday(at) - 2440587.5) * 86400.0 FROM checkpoints \
                             WHERE seq = 0 AND at >= ?2";

/// Whether a pending approval expired before ?1 (the pending index).
const APPROVALS_TO_EXPIRE: &str = "SELECT 1 FROM approvals WHERE status='pending' AND expires_at < ?1 LIMIT 1";

const APPROVAL_COLS: &str = "approval_id, hid, action_class, details_json, status, created_at, expires_at, decided_at";

impl SqliteTx<'_> {
    fn strings(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<String>> {
        let mut st = self.c.prepare_cached(sql)?;
        let rows = st.query_map(args, |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Budget usage of the handoffs matching `filter` (SQL over `h`).
    fn budgets(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<BudgetUsage>> {
        let mut st = self.c.prepare_cached(&format!(
            "SELECT h.hid, json_extract(h.envelope_json, '$.execution.steps'), \
             json_extract(h.envelope_json, '$.execution.spend_usd'), json_extract(h.envelope_json, '$.execution.claimed_at'), \
             json_extract(h.envelope_json, '$.contract.budget.max_steps'), \
             json_extract(h.envelope_json, '$.contract.budget.max_spend_usd'), \
             json_extract(h.envelope_json, '$.contract.budget.max_wallclock_s') \
             FROM handoffs h WHERE {filter} ORDER BY h.hid"
        ))?;
        // Non-numeric JSON (a string where a number belongs) reads as None,
        // as the envelope path's as_f64 does.
        let num = |r: &rusqlite::Row<'_>, i: usize| -> rusqlite::Result<Option<f64>> {
            Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Integer(n) => Some(n as f64),
                rusqlite::types::ValueRef::Real(f) => Some(f),
                _ => None,
            })
        };
        let rows = st.query_map(args, |r| {
            Ok(BudgetUsage {
                hid: r.get(0)?,
                steps: num(r, 1)?,
                spend_usd: num(r, 2)?,
                claimed_at: num(r, 3)?,
                max_steps: num(r, 4)?,
                max_spend_usd: num(r, 5)?,
                max_wallclock_s: num(r, 6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn pairings_with(&self, status: &str) -> Result<Vec<Pairing>> {
        // Leaves out only the combinations that are consistent whatever
        // the lease says; the supervisor classifies the rest.
        // The status is extracted once per row (a materialized CTE), not
        // once per use in the filter.
        // Candidates: rows with an ownership row, and rows whose status is
        // not one that is consistent without one — the second read from
        // the (status, hid) index alone, so the envelopes of a million
        // completed handoffs are not parsed.
        let mut st = self.c.prepare_cached(&format!(
            "WITH s AS MATERIALIZED ( \
               SELECT h.hid, {status} AS st FROM ownership o0 CROSS JOIN handoffs h ON h.hid = o0.hid \
               UNION SELECT h.hid, {status} AS st FROM handoffs h \
               WHERE NOT COALESCE({status} IN ('pending', 'completed', 'failed', 'suspended'), 0)) \
             SELECT s.hid, s.st, o.holder, o.fence, o.lease_expires_at, o.heartbeat_interval_s, o.max_missed, \
             o.updated_at FROM s LEFT JOIN ownership o ON o.hid = s.hid \
             WHERE NOT COALESCE( \
               (s.st IN ('pending', 'completed', 'failed', 'suspended') AND o.hid IS NULL) \
               OR (s.st = 'running' AND o.holder != '{ORPHANED_HOLDER}') \
               OR (s.st IN ('orphaned', 'failed') AND o.holder = '{ORPHANED_HOLDER}') \
               OR s.st = 'suspended', 0) \
             ORDER BY s.hid"
        ))?;
        let rows = st.query_map([], pairing_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// A [`Pairing`] from `hid, status, holder, fence, lease_expires_at,
/// heartbeat_interval_s, max_missed, ownership updated_at` (the ownership
/// columns NULL when there is no row).
fn pairing_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Pairing> {
    let status = match r.get::<_, rusqlite::types::Value>(1)? {
        rusqlite::types::Value::Text(s) if !s.is_empty() => Some(s),
        _ => None,
    };
    let holder: Option<String> = r.get(2)?;
    let ownership = match holder {
        None => None,
        Some(holder) => Some(Ownership {
            hid: r.get(0)?,
            holder,
            fence: r.get(3)?,
            lease_expires_at: r.get(4)?,
            heartbeat_interval_s: r.get(5)?,
            max_missed: r.get(6)?,
        }),
    };
    Ok(Pairing { hid: r.get(0)?, status, ownership, ownership_updated_at: r.get(7)? })
}

impl Tx for SqliteTx<'_> {
    fn envelope(&mut self, hid: &str) -> Result<Option<Value>> {
        let text: Option<String> = self
            .c
            .prepare_cached("SELECT envelope_json FROM handoffs WHERE hid=?1")?
            .query_row([hid], |r| r.get(0))
            .optional()?;
        text.map(|t| super::deep::parse(&t)).transpose()
    }

    fn status(&mut self, hid: &str) -> Result<Option<String>> {
        let row: Option<(bool, Option<rusqlite::types::Value>)> = self
            .c
            .prepare_cached(&format!("SELECT json_valid(h.envelope_json), {STATUS} FROM handoffs h WHERE h.hid=?1"))?
            .query_row([hid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match row {
            None => Ok(None),
            Some((true, Some(rusqlite::types::Value::Text(s)))) => Ok(Some(s)),
            Some((true, _)) => Ok(Some(String::new())),
            // Deeper than SQLite's JSON parser goes, or corrupt: parse it
            // here (a corrupt row is a typed Json error).
            Some((false, _)) => Ok(self.envelope(hid)?.map(|e| envelope::status(&e).to_string())),
        }
    }

    fn insert_envelope(&mut self, hid: &str, envelope_json: &str, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached("INSERT OR IGNORE INTO handoffs (hid, envelope_json, updated_at) VALUES (?1, ?2, ?3)")?
            .execute(params![hid, envelope_json, now])?;
        Ok(n > 0)
    }

    fn update_envelope(&mut self, hid: &str, envelope_json: &str, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached("UPDATE handoffs SET envelope_json=?1, updated_at=?2 WHERE hid=?3")?
            .execute(params![envelope_json, now, hid])?;
        Ok(n > 0)
    }

    fn all_hids(&mut self) -> Result<Vec<String>> {
        self.strings("SELECT hid FROM handoffs ORDER BY hid", [])
    }

    fn hids_with_status(&mut self, status: &str) -> Result<Vec<String>> {
        // Through the status index (an unreadable row is NULL there).
        self.strings(&format!("SELECT h.hid FROM handoffs h WHERE {STATUS}=?1 ORDER BY h.hid"), [status])
    }

    fn running_budgets(&mut self) -> Result<Vec<BudgetUsage>> {
        self.budgets(&format!("{STATUS}='running'"), params![])
    }

    fn running_budgets_of(&mut self, hids: &[String]) -> Result<Vec<BudgetUsage>> {
        let mut out = Vec::new();
        for hid in hids {
            out.extend(self.budgets(&format!("h.hid=?1 AND {STATUS}='running'"), [hid])?);
        }
        Ok(out)
    }

    fn hids_page(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.strings(
            "SELECT hid FROM handoffs WHERE hid > ?1 ORDER BY hid LIMIT ?2",
            params![after.unwrap_or(""), limit],
        )
    }

    fn changed_since(&mut self, since: f64) -> Result<Option<Vec<(String, f64)>>> {
        let mut st = self.c.prepare_cached(CHANGED_SINCE)?;
        let iso = envelope::iso_of(since);
        let rows =
            st.query_map(params![since, iso], |r| Ok((r.get(0)?, r.get::<_, Option<f64>>(1)?.unwrap_or(since))))?;
        Ok(Some(rows.collect::<rusqlite::Result<_>>()?))
    }

    fn pairings(&mut self) -> Result<Vec<Pairing>> {
        // The indexed, tolerant expression: an unreadable row's status is
        // NULL here and the caller parses that envelope itself.
        self.pairings_with(STATUS)
    }

    fn pairings_of(&mut self, hids: &[String]) -> Result<Vec<Pairing>> {
        // One primary-key lookup per hid, consistent rows included.
        let mut st = self.c.prepare_cached(PAIRING_OF)?;
        let mut out = Vec::with_capacity(hids.len());
        for hid in hids {
            if let Some(p) = st.query_row([hid], pairing_row).optional()? {
                out.push(p);
            }
        }
        Ok(out)
    }

    fn next_seq(&mut self, hid: &str) -> Result<i64> {
        // MAX over the (hid, seq) primary key is one index seek, not a scan.
        Ok(self
            .c
            .prepare_cached("SELECT COALESCE(MAX(seq), -1) + 1 FROM checkpoints WHERE hid=?1")?
            .query_row([hid], |r| r.get(0))?)
    }

    fn insert_checkpoint(&mut self, hid: &str, row: &CheckpointRow) -> Result<bool> {
        let n = self
            .c
            .prepare_cached(
                "INSERT OR IGNORE INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![hid, row.seq, row.state_json, row.state_hash, row.at])?;
        Ok(n > 0)
    }

    fn last_checkpoint(&mut self, hid: &str) -> Result<Option<CheckpointRow>> {
        Ok(self
            .c
            .prepare_cached(
                "SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row([hid], checkpoint_row)
            .optional()?)
    }

    fn checkpoints(&mut self, hid: &str) -> Result<Vec<CheckpointRow>> {
        let mut st = self
            .c
            .prepare_cached("SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=?1 ORDER BY seq")?;
        let rows = st.query_map([hid], checkpoint_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn checkpoint_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.c.prepare_cached("SELECT COUNT(*) FROM checkpoints WHERE hid=?1")?.query_row([hid], |r| r.get(0))?)
    }

    fn ownership(&mut self, hid: &str) -> Result<Option<Ownership>> {
        Ok(self
            .c
            .prepare_cached(&format!("SELECT {OWNERSHIP_COLS} FROM ownership WHERE hid=?1"))?
            .query_row([hid], ownership_row)
            .optional()?)
    }

    fn insert_ownership(&mut self, o: &Ownership, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached(
                "INSERT OR IGNORE INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, \
                 max_missed, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                o.hid,
                o.holder,
                o.fence,
                o.lease_expires_at,
                o.heartbeat_interval_s,
                o.max_missed,
                now
            ])?;
        Ok(n > 0)
    }

    fn update_ownership(&mut self, o: &Ownership, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached(
                "UPDATE ownership SET holder=?2, fence=?3, lease_expires_at=?4, heartbeat_interval_s=?5, \
                 max_missed=?6, updated_at=?7 WHERE hid=?1",
            )?
            .execute(params![
                o.hid,
                o.holder,
                o.fence,
                o.lease_expires_at,
                o.heartbeat_interval_s,
                o.max_missed,
                now
            ])?;
        Ok(n > 0)
    }

    fn delete_ownership(&mut self, hid: &str) -> Result<()> {
        self.c.prepare_cached("DELETE FROM ownership WHERE hid=?1")?.execute([hid])?;
        Ok(())
    }

    fn expired_leases(&mut self, now: f64) -> Result<Vec<String>> {
        let mut hids = self.strings(EXPIRED_LEASES, [now])?;
        hids.sort();
        Ok(hids)
    }

    fn ownerships_held_by(&mut self, holder: &str) -> Result<Vec<Ownership>> {
        let mut st =
            self.c.prepare_cached(&format!("SELECT {OWNERSHIP_COLS} FROM ownership WHERE holder=?1 ORDER BY hid"))?;
        let rows = st.query_map([holder], ownership_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn held_ownerships(&mut self) -> Result<Vec<Ownership>> {
        // No JSON join: polled every few milliseconds by the leader.
        let mut st = self.c.prepare_cached(&format!(
            "SELECT {OWNERSHIP_COLS} FROM ownership WHERE holder != '{ORPHANED_HOLDER}' ORDER BY hid"
        ))?;
        let rows = st.query_map([], ownership_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn leadership(&mut self) -> Result<Option<Leadership>> {
        Ok(self
            .c
            .prepare_cached("SELECT holder, expires_at FROM leadership WHERE id=1")?
            .query_row([], |r| Ok(Leadership { holder: r.get(0)?, expires_at: r.get(1)? }))
            .optional()?)
    }

    fn put_leadership(&mut self, l: &Leadership, now: f64) -> Result<()> {
        self.c
            .prepare_cached(
                "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3) \
                 ON CONFLICT(id) DO UPDATE SET holder=excluded.holder, expires_at=excluded.expires_at, \
                 updated_at=excluded.updated_at",
            )?
            .execute(params![l.holder, l.expires_at, now])?;
        Ok(())
    }

    fn insert_effect(&mut self, hid: &str, step_id: &str, result_json: &str, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached("INSERT OR IGNORE INTO effects (hid, step_id, result_json, at) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![hid, step_id, result_json, now])?;
        Ok(n > 0)
    }

    fn effect(&mut self, hid: &str, step_id: &str) -> Result<Option<String>> {
        Ok(self
            .c
            .prepare_cached("SELECT result_json FROM effects WHERE hid=?1 AND step_id=?2")?
            .query_row([hid, step_id], |r| r.get(0))
            .optional()?)
    }

    fn effect_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.c.prepare_cached("SELECT COUNT(*) FROM effects WHERE hid=?1")?.query_row([hid], |r| r.get(0))?)
    }

    fn insert_approval(&mut self, a: &Approval) -> Result<()> {
        self.c
            .prepare_cached(&format!(
                "INSERT INTO approvals ({APPROVAL_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?
            .execute(params![
                a.approval_id,
                a.hid,
                a.action_class,
                a.details_json,
                a.status,
                a.created_at,
                a.expires_at,
                a.decided_at
            ])?;
        Ok(())
    }

    fn approval(&mut self, approval_id: &str) -> Result<Option<Approval>> {
        Ok(self
            .c
            .prepare_cached(&format!("SELECT {APPROVAL_COLS} FROM approvals WHERE approval_id=?1"))?
            .query_row([approval_id], approval_row)
            .optional()?)
    }

    fn decide_approval(&mut self, approval_id: &str, status: &str, now: f64) -> Result<bool> {
        let n = self
            .c
            .prepare_cached("UPDATE approvals SET status=?1, decided_at=?2 WHERE approval_id=?3 AND status='pending'")?
            .execute(params![status, now, approval_id])?;
        Ok(n > 0)
    }

    fn expire_approvals(&mut self, now: f64) -> Result<usize> {
        Ok(self
            .c
            .prepare_cached(
                "UPDATE approvals SET status='expired', decided_at=?1 WHERE status='pending' AND expires_at < ?1",
            )?
            .execute([now])?)
    }

    fn approvals_to_expire(&mut self, now: f64) -> Result<bool> {
        Ok(self.c.prepare_cached(APPROVALS_TO_EXPIRE)?.query_row([now], |_| Ok(())).optional()?.is_some())
    }

    fn approvals_for(&mut self, hid: &str) -> Result<Vec<Approval>> {
        let mut st = self
            .c
            .prepare_cached(&format!("SELECT {APPROVAL_COLS} FROM approvals WHERE hid=?1 ORDER BY created_at"))?;
        let rows = st.query_map([hid], approval_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn progress(&mut self, hid: &str) -> Result<Option<Progress>> {
        Ok(self
            .c
            .prepare_cached("SELECT last_checkpoint_at, last_digest, digest_repeat_count FROM progress WHERE hid=?1")?
            .query_row([hid], |r| {
                Ok(Progress { last_checkpoint_at: r.get(0)?, last_digest: r.get(1)?, digest_repeat_count: r.get(2)? })
            })
            .optional()?)
    }

    fn put_progress(&mut self, hid: &str, p: &Progress, now: f64) -> Result<()> {
        self.c
            .prepare_cached(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(hid) DO UPDATE SET \
                 last_checkpoint_at=excluded.last_checkpoint_at, last_digest=excluded.last_digest, \
                 digest_repeat_count=excluded.digest_repeat_count, updated_at=excluded.updated_at",
            )?
            .execute(params![hid, p.last_checkpoint_at, p.last_digest, p.digest_repeat_count, now])?;
        Ok(())
    }

    fn progress_checkpointed(&mut self, hid: &str, t: f64) -> Result<()> {
        // One upsert, no read: the last digest stays as it is.
        self.c
            .prepare_cached(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, NULL, 0, ?2) ON CONFLICT(hid) DO UPDATE SET \
                 last_checkpoint_at=excluded.last_checkpoint_at, digest_repeat_count=0, updated_at=excluded.updated_at",
            )?
            .execute(params![hid, t])?;
        Ok(())
    }

    fn stalled(&mut self, now: f64, cutoff: f64, max_repeats: i64) -> Result<Vec<String>> {
        // Running handoffs first (status index), not every progress row
        // ever written (completed handoffs keep theirs).
        self.strings(
            &format!(
                "SELECT h.hid FROM handoffs h CROSS JOIN ownership o ON o.hid = h.hid \
                 CROSS JOIN progress p ON p.hid = h.hid WHERE {STATUS} = 'running' AND {STALLED} ORDER BY h.hid"
            ),
            params![now, cutoff, max_repeats],
        )
    }

    fn stalled_of(&mut self, hids: &[String], now: f64, cutoff: f64, max_repeats: i64) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for hid in hids {
            out.extend(self.strings(
                &format!(
                    "SELECT h.hid FROM handoffs h JOIN ownership o ON o.hid = h.hid JOIN progress p ON p.hid = h.hid \
                     WHERE h.hid = ?4 AND {STATUS} = 'running' AND {STALLED}"
                ),
                params![now, cutoff, max_repeats, hid],
            )?);
        }
        Ok(out)
    }

    fn insert_capability_audit(&mut self, hid: &str, a: &CapabilityAudit) -> Result<()> {
        self.c
            .prepare_cached(
                "INSERT INTO capability_audit (hid, domain, resource, granted, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![hid, a.domain, a.resource, a.granted as i64, a.at])?;
        Ok(())
    }

    fn capability_audit(&mut self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        let mut st = self
            .c
            .prepare_cached("SELECT domain, resource, granted, at FROM capability_audit WHERE hid=?1 ORDER BY at")?;
        let rows = st.query_map([hid], |r| {
            Ok(CapabilityAudit {
                domain: r.get(0)?,
                resource: r.get(1)?,
                granted: r.get::<_, i64>(2)? != 0,
                at: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

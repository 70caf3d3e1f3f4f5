//! Opening a store: identify the file, refuse a foreign or newer one,
//! migrate v1/v2 to v3, and create a new store atomically.

use super::ddl::{DROPPED_INDEXES_SQL, EXTRA_INDEXES_SQL, SCHEMA_SQL};
use super::{SqliteStore, DB_FILE};
use crate::error::{Error, Result};
use crate::store::SCHEMA_VERSION;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

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

impl SqliteStore {
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
        // commit across processes, store/sqlite/wal_sync.rs). A file system
        // without WAL keeps `synchronous=FULL`.
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous=FULL;")?;
        migrate(&conn)?;
        let sync_after = mode.eq_ignore_ascii_case("wal");
        if sync_after {
            conn.execute_batch("PRAGMA synchronous=NORMAL;")?;
        }
        Ok(SqliteStore { root, conn: Mutex::new(conn), queue: OnceLock::new(), writer: OnceLock::new(), sync_after })
    }
}

/// Bring a v1/v2 store (or a fresh one) to v3: additive, idempotent.
///
/// First as a deferred transaction: on a store that is up to date every
/// statement is a no-op that takes no write lock, so a process can open the
/// store while another holds the write lock (a supervisor must, to run the
/// stalled-writer watchdog that frees it). When something must be written,
/// a deferred transaction that read the schema must upgrade its read lock,
/// and in WAL mode an upgrade after another process committed fails at once
/// with `database is locked`, without the busy handler: of many processes
/// opening a store the reference made, some died of that (issue 33 item
/// 14). So a failed deferred attempt (rolled back) is repeated under `BEGIN
/// IMMEDIATE`, which takes the write lock first, through the busy handler;
/// a real error recurs there and is returned.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    migrate_as(conn, rusqlite::TransactionBehavior::Deferred)
        .or_else(|_| migrate_as(conn, rusqlite::TransactionBehavior::Immediate))
}

fn migrate_as(conn: &Connection, behavior: rusqlite::TransactionBehavior) -> Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, behavior)?;
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

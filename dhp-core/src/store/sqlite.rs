//! The SQLite backend: `<root>/dhp.sqlite3`, schema v3, WAL.
//!
//! What survives a crash: every transaction that returned `Ok`. Its WAL
//! frames are synced before it returns: by `COMMIT` itself while a store is
//! created or migrated, and afterwards by [`sync_wal`] once the writer lock
//! is handed on, so that concurrent writer processes share flushes
//! (store/sqlite/wal_sync.rs). A process killed mid-transaction leaves nothing of it: SQLite
//! rolls the WAL back on the next open.
//!
//! The reference opens the same file from Python in autocommit mode; both
//! use SQLite's own locking, so the two may run against one store at once.
//!
//! The parts: [`ddl`] (the schema), `open` (open, migrate, create),
//! `writer_lock` and [`writer_queue`] (how writer processes take turns),
//! `wal_sync` (group commit), `sql` (SQL and row mappers), `tx` (the
//! [`Tx`] implementation).

mod ddl;
mod open;
mod sql;
mod tx;
mod wal_sync;
mod writer_lock;
pub mod writer_queue;

#[cfg(test)]
mod plans;

pub use ddl::{DROPPED_INDEXES_SQL, EXTRA_INDEXES_SQL, SCHEMA_SQL};
pub use open::BUSY_TIMEOUT;
pub(crate) use open::SCRATCH_PREFIX;
pub use writer_lock::WRITER_LOCK_FILE;

use super::{Backend, Mode, Tx};
use crate::error::Result;
use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tx::SqliteTx;
use wal_sync::sync_wal;
use writer_lock::WriterLock;
use writer_queue::WriterQueue;

/// The file name inside a store root.
pub const DB_FILE: &str = "dhp.sqlite3";

/// A store root with its SQLite connection.
pub struct SqliteStore {
    root: PathBuf,
    conn: Mutex<Connection>,
    /// The writers' queue, mapped at the first write transaction.
    queue: OnceLock<Option<WriterQueue>>,
    /// The writer lock's descriptor, opened at the first write transaction.
    writer: OnceLock<WriterLock>,
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
            Mode::Write => self.writer.get_or_init(|| WriterLock::open(&self.root)).lock(),
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

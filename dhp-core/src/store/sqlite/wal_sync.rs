//! Group commit for SQLite writer processes: the WAL is made durable after
//! the writer lock is handed on, not while it is held.
//!
//! With `synchronous=FULL`, SQLite syncs the WAL inside `COMMIT`, while it
//! holds the store's write lock, so N writer processes pay N flushes one
//! after another and each waits for all of them before its turn. dhp-rs
//! connections run `synchronous=NORMAL` instead (SQLite writes the
//! commit's WAL frames but does not sync them), hand the writer lock on,
//! and then [`sync_wal`] syncs the WAL before the operation returns. The
//! next writer's transaction runs during this flush, and one flush makes
//! every frame written before it durable, so concurrent writers share
//! flushes instead of queueing behind them.
//!
//! The sync goes through SQLite's own handle of the WAL file, the call
//! `COMMIT` makes at `synchronous=FULL`. (An `fdatasync` on a second
//! descriptor of the same file cost a single writer about 25 % of its
//! checkpoint rate here; SQLite's handle costs nothing extra.)
//!
//! What still holds:
//! - An operation that returned `Ok` is on disk, as before.
//! - What survives a power loss is a prefix of the commit order: WAL
//!   frames carry a cumulative checksum and recovery stops at the first
//!   frame that is missing or torn, so a later commit never survives
//!   without an earlier one.
//! - SQLite still syncs the WAL header and every checkpoint (WAL →
//!   database file) itself at `NORMAL`.
//!
//! What changes: between its commit and its flush (one sync, about 0.2 ms
//! here), another process may read a commit that a power loss would still
//! undo, together with everything committed after it; the writer itself
//! has not yet been told that its operation succeeded.

use super::DB_FILE;
use crate::error::{Error, Result};
use rusqlite::{ffi, Connection};
use std::path::Path;

/// Sync the WAL of `conn`'s main database, the store `root/`[`DB_FILE`],
/// through SQLite's own file handle. Should no journal file be open (not
/// expected in WAL mode), the database file is synced instead: never less
/// durable than `synchronous=FULL`. Paths are built only for an error or
/// that fallback: this runs after every write transaction.
pub(crate) fn sync_wal(conn: &Connection, root: &Path) -> Result<()> {
    match sync_through_sqlite(conn) {
        Some(ffi::SQLITE_OK) => Ok(()),
        Some(code) => Err(Error::io(
            root.join(format!("{DB_FILE}-wal")),
            std::io::Error::other(format!("syncing the WAL failed: {}", ffi::code_to_str(code))),
        )),
        None => {
            let db = root.join(DB_FILE);
            let f = std::fs::File::open(&db).map_err(|e| Error::io(&db, e))?;
            f.sync_data().map_err(|e| Error::io(&db, e))
        }
    }
}

/// `Some(rc)` of the WAL file's `xSync`, or `None` if the main database
/// has no open journal file.
#[allow(unsafe_code)]
fn sync_through_sqlite(conn: &Connection) -> Option<std::ffi::c_int> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `conn.handle()` is the live connection, which the caller
    // holds exclusively (the store's connection mutex; SQLite's own mutex
    // is off, SQLITE_OPEN_NO_MUTEX), so nothing else uses it or its files
    // during this call. SQLITE_FCNTL_JOURNAL_POINTER writes one
    // `sqlite3_file*` (the WAL's in WAL mode, else the rollback journal's)
    // into `file`, which is a valid place for it.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_JOURNAL_POINTER,
            (&mut file as *mut *mut ffi::sqlite3_file).cast(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: `file` points to the pager's journal file object, owned by
    // the connection and alive while it is open; a closed journal has no
    // methods (`pMethods` null), which is checked before use. `xSync` is
    // the VFS's own sync, called with the flags `COMMIT` uses at
    // `synchronous=FULL` (SQLITE_SYNC_NORMAL: fsync).
    unsafe {
        let methods = (*file).pMethods;
        if methods.is_null() {
            return None;
        }
        let sync = (*methods).xSync?;
        Some(sync(file, ffi::SQLITE_SYNC_NORMAL))
    }
}

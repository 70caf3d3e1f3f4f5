//! The runner holding a standard store's write lock itself, on its own
//! connection, while the implementation writes (`write-lock-wait`): on
//! SQLite `BEGIN IMMEDIATE` on `<root>/dhp.sqlite3`, on PostgreSQL a row
//! lock (`FOR UPDATE`) on the handoff's `handoffs` row. Like
//! [`crate::store_view`], it uses rusqlite and the `postgres` client
//! directly, never dhp-core's store code.

use crate::check::{Check, Fail};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A write lock the runner holds; a thread lets it go after the hold.
pub struct HeldLock {
    release: Option<JoinHandle<Check<Instant>>>,
}

impl HeldLock {
    /// Take the write lock of the store at `root` (a directory, or a
    /// `postgres://…?schema=` URL: there the lock is on `hid`'s row) and
    /// let it go after `hold`. Returns once the lock is held.
    pub fn take(root: &str, hid: &str, hold: Duration) -> Check<HeldLock> {
        let release = if crate::stores::is_postgres(root) { pg(root, hid, hold)? } else { sqlite(root, hold)? };
        Ok(HeldLock { release: Some(release) })
    }

    /// Wait until the lock is let go. Returns the instant just before it
    /// was: a write to the locked store can only have finished after it.
    pub fn released(mut self) -> Check<Instant> {
        self.join()
    }

    fn join(&mut self) -> Check<Instant> {
        match self.release.take() {
            Some(h) => h.join().map_err(|_| Fail::Errored("the runner's lock-holding thread panicked".into()))?,
            None => Err(Fail::Errored("the runner's write lock was already released".into())),
        }
    }
}

impl Drop for HeldLock {
    /// Never leave the lock held past the assertion (its store is removed
    /// or its schema dropped next).
    fn drop(&mut self) {
        if self.release.is_some() {
            let _ = self.join();
        }
    }
}

fn errored(what: &str, e: impl std::fmt::Display) -> Fail {
    Fail::Errored(format!("the runner could not {what}: {e}"))
}

/// `BEGIN IMMEDIATE` on a connection of the runner's own: SQLite's write
/// lock (WAL mode: the one writer), without writing anything.
fn sqlite(root: &str, hold: Duration) -> Check<JoinHandle<Check<Instant>>> {
    let path = Path::new(root).join("dhp.sqlite3");
    if !path.exists() {
        return Err(Fail::failed(format!("adapter declares standard-store but {} does not exist", path.display())));
    }
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| errored("open the store to lock it", e))?;
    // the implementation may be writing right now: wait for it, then hold
    conn.busy_timeout(Duration::from_secs(10)).map_err(|e| errored("set a busy timeout", e))?;
    conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| errored("take the store's write lock", e))?;
    Ok(std::thread::spawn(move || {
        std::thread::sleep(hold);
        let at = Instant::now();
        conn.execute_batch("ROLLBACK").map_err(|e| errored("release the store's write lock", e))?;
        Ok(at)
    }))
}

/// `SELECT … FOR UPDATE` of the handoff's row in a transaction of the
/// runner's own: every write that changes the handoff's envelope (claim,
/// complete) must update that row, and waits for the lock.
fn pg(url: &str, hid: &str, hold: Duration) -> Check<JoinHandle<Check<Instant>>> {
    let (_, schema) = crate::stores::split_schema(url);
    let schema = schema.ok_or_else(|| Fail::Errored(format!("{}: no schema=", crate::stores::mask(url))))?;
    let mut c = crate::stores::client(url).map_err(|e| Fail::Errored(e.to_string()))?;
    // the schema name was made by the runner: [a-z0-9_] only
    c.batch_execute(&format!("SET search_path TO \"{schema}\"; BEGIN"))
        .map_err(|e| errored("begin a transaction", e))?;
    let rows = c
        .query("SELECT hid FROM handoffs WHERE hid = $1 FOR UPDATE", &[&hid])
        .map_err(|e| errored("lock the handoff's row", e))?;
    if rows.is_empty() {
        return Err(Fail::failed(format!("store has no handoffs row for {}", crate::store_view::short(hid))));
    }
    Ok(std::thread::spawn(move || {
        std::thread::sleep(hold);
        let at = Instant::now();
        c.batch_execute("ROLLBACK").map_err(|e| errored("release the handoff's row lock", e))?;
        Ok(at)
    }))
}

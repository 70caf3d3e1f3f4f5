//! The writer lock: a `flock` on a file next to the database, taken by
//! dhp-rs writers before `BEGIN IMMEDIATE`.

use std::path::Path;

/// The file next to the database that dhp-rs writers `flock` before
/// `BEGIN IMMEDIATE`: waiting writers sleep in the kernel and are woken
/// when the lock is free, instead of polling SQLite's lock (which, with
/// tens of writer processes on a few cores, burns the CPU the holder
/// needs). Processes that do not take it (the reference) still serialize
/// through SQLite's own lock and busy handler.
pub const WRITER_LOCK_FILE: &str = "dhp.sqlite3-writer";

/// Block (sleeping, not polling) until this process holds the store's
/// writer lock ([`WRITER_LOCK_FILE`]); released when the returned guard
/// drops, or by the kernel if the process dies. `None` if the lock file
/// cannot be opened (a read-only directory): the writer then relies on
/// SQLite's busy handler alone, as the reference does.
pub(super) fn writer_lock(root: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
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

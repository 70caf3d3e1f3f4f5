//! The writer lock: a `flock` on a file next to the database, taken by
//! dhp-rs writers before `BEGIN IMMEDIATE`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The file next to the database that dhp-rs writers `flock` before
/// `BEGIN IMMEDIATE`: waiting writers sleep in the kernel and are woken
/// when the lock is free, instead of polling SQLite's lock (which, with
/// tens of writer processes on a few cores, burns the CPU the holder
/// needs). Processes that do not take it (the reference) still serialize
/// through SQLite's own lock and busy handler.
pub const WRITER_LOCK_FILE: &str = "dhp.sqlite3-writer";

/// A store handle's descriptor of [`WRITER_LOCK_FILE`], opened once (at
/// its first write transaction) and locked for each: an `open` and `close`
/// per transaction were 3–4 % of a per-call dispatch's or claim's CPU.
/// Each handle has its own open file, so two handles of one process
/// exclude each other as two processes do (a `flock` belongs to the open
/// file); the handle's connection mutex serializes its own transactions.
#[derive(Debug)]
pub(super) struct WriterLock {
    file: Option<File>,
}

/// The lock, held until dropped.
#[derive(Debug)]
pub(super) struct Held<'a> {
    file: &'a File,
}

impl WriterLock {
    /// The descriptor for the store at `root`; without one (a read-only
    /// directory) every writer relies on SQLite's busy handler alone, as
    /// the reference does.
    pub(super) fn open(root: &Path) -> WriterLock {
        let path = root.join(WRITER_LOCK_FILE);
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path);
        if let Err(e) = &file {
            tracing::debug!(error = %e, path = %path.display(), "writer lock unavailable; SQLite's busy handler alone");
        }
        WriterLock { file: file.ok() }
    }

    /// Block (sleeping, not polling) until this handle holds the lock;
    /// released when the guard drops, or by the kernel if the process dies.
    /// `None` where the lock cannot be had (see [`WriterLock::open`]).
    pub(super) fn lock(&self) -> Option<Held<'_>> {
        let file = self.file.as_ref()?;
        loop {
            match flock(file, nix::fcntl::FlockArg::LockExclusive) {
                Ok(()) => return Some(Held { file }),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(errno) => {
                    tracing::debug!(%errno, "writer lock unavailable; SQLite's busy handler alone");
                    return None;
                }
            }
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Unlocking a lock this open file holds cannot fail but for EINTR
        // (retried) or a bad descriptor (none: the file is borrowed).
        while flock(self.file, nix::fcntl::FlockArg::Unlock) == Err(nix::errno::Errno::EINTR) {}
    }
}

/// `flock(2)` on a descriptor kept open: nix's `Flock` guard would take
/// the file (and close it on unlock), which is what this avoids.
#[allow(deprecated)]
fn flock(file: &File, arg: nix::fcntl::FlockArg) -> nix::Result<()> {
    nix::fcntl::flock(file.as_raw_fd(), arg)
}

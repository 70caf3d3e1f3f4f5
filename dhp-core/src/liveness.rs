//! Same-host liveness tokens: notice a dead worker in milliseconds.
//!
//! A worker process takes an exclusive `flock` on `<root>/live/<worker>.lock`
//! before it claims anything, and holds it for its whole life. The kernel
//! drops the lock the instant the process dies (SIGKILL included), so a
//! supervisor on the same host that can take the lock knows the holder is
//! gone and orphans its handoffs at once, with the usual fence bump.
//!
//! Limits, by design:
//! - Only for workers that publish a token. Workers that publish none (the
//!   Python reference, workers on other hosts) keep the lease-only path.
//! - A SIGSTOPped worker keeps its lock: it is paused, not dead, and lease
//!   expiry plus fencing handle it as before.
//! - `flock` must be reliable on the store's filesystem (local disks are;
//!   some network filesystems are not — do not publish tokens there).
//! - Worker ids must be unique per live process on a host; a second live
//!   process with the same id cannot take the token and runs lease-only.

use crate::envelope::check_worker_id;
use crate::error::{Error, Result};
use crate::id::WorkerId;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Directory of tokens inside a store root.
pub const DIR: &str = "live";

fn token_path(root: &Path, worker_id: &str) -> PathBuf {
    root.join(DIR).join(format!("{worker_id}.lock"))
}

/// A held liveness token. Dropping it (clean exit) removes the file.
#[derive(Debug)]
pub struct Token {
    path: PathBuf,
    _lock: Flock<File>,
}

/// Take the token for `worker_id`. Fails if another live process holds it.
pub fn publish(root: &Path, worker_id: &WorkerId) -> Result<Token> {
    let worker_id = worker_id.as_str();
    let dir = root.join(DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = token_path(root, worker_id);
    // A supervisor reaping the dead previous holder's file (see [`reap`])
    // holds its lock for microseconds and then unlinks it: retry briefly,
    // and make sure the locked file is still the one at `path`.
    let mut last = None;
    for _ in 0..PUBLISH_TRIES {
        let file =
            OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) if same_file(&lock, &path) => return Ok(Token { path, _lock: lock }),
            Ok(_) => continue, // reaped between our open and our lock: open the new file
            Err((_, errno)) => last = Some(errno),
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let msg = |why: &str| format!("liveness token {} is held by a live process ({why})", path.display());
    Err(match last {
        Some(errno) => Error::validation_from(msg(&errno.to_string()), errno),
        None => Error::validation(msg("replaced while locking")),
    })
}

/// Attempts [`publish`] makes before it reports the token as held.
const PUBLISH_TRIES: usize = 5;

/// Whether the open file behind `lock` is the file now at `path`.
fn same_file(lock: &Flock<File>, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (lock.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        // Unlink while still holding the lock, so no one sees a free token.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// True only if `holder` published a token here and no process holds it.
pub fn is_dead(root: &Path, holder: &str) -> bool {
    if check_worker_id(holder).is_err() {
        return false;
    }
    let path = token_path(root, holder);
    let Ok(file) = OpenOptions::new().write(true).open(&path) else {
        return false; // no token: lease-only path
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => {
            // Free: the holder is gone. Release at once (drop unlocks).
            drop(lock);
            true
        }
        Err(_) => false,
    }
}

/// The holders whose token file under `root` is not held by any process:
/// they published a token and died. One `flock` attempt per token file —
/// the cost follows the number of worker processes, not of handoffs.
/// Files that are not tokens (other names) are ignored.
pub fn dead_tokens(root: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(root.join(DIR)) else { return Vec::new() };
    let mut dead: Vec<String> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".lock").map(str::to_string))
        .filter(|holder| is_dead(root, holder))
        .collect();
    dead.sort();
    dead
}

/// Remove the token file of a dead `holder` once its handoffs are
/// orphaned, so that later polls do not test it again. The file is
/// unlinked while locked, so a process publishing the same id at that
/// moment retries on a fresh file ([`publish`]); a live holder's token is
/// never removed. Returns whether a file was removed.
pub fn reap(root: &Path, holder: &str) -> bool {
    if check_worker_id(holder).is_err() {
        return false;
    }
    let path = token_path(root, holder);
    let Ok(file) = OpenOptions::new().write(true).open(&path) else { return false };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) if same_file(&lock, &path) => std::fs::remove_file(&path).is_ok(),
        _ => false,
    }
}

// ---- a paused process holding the store's write lock ----
//
// SQLite has one writer. A process stopped (SIGSTOP, a debugger) inside a
// write transaction holds the WAL write lock — a POSIX lock on byte 120 of
// `dhp.sqlite3-shm` — and every other writer waits until it resumes or
// dies. [`stalled_writer`] finds such a process from /proc/locks; the
// supervisor SIGKILLs it once it has blocked the store for a lease TTL, but
// only if it holds a liveness token of this store (a DHP worker or
// supervisor on this host; never a foreign process). The kernel then drops
// its locks, SQLite rolls its transaction back, and its handoffs are
// orphaned by the token path as for any dead worker.

/// Byte of the `-shm` file that SQLite's WAL write lock covers.
const WAL_WRITE_LOCK_BYTE: u64 = 120;

struct LockLine {
    kind: String,
    write: bool,
    pid: i32,
    dev: (u64, u64),
    ino: u64,
    start: u64,
}

fn proc_locks() -> Vec<LockLine> {
    let Ok(text) = std::fs::read_to_string("/proc/locks") else { return Vec::new() };
    text.lines()
        .filter(|l| !l.contains("->")) // waiters, not holders
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dev: Vec<&str> = f.get(5)?.split(':').collect();
            Some(LockLine {
                kind: f.get(1)?.to_string(),
                write: *f.get(3)? == "WRITE",
                pid: f.get(4)?.parse().ok()?,
                dev: (u64::from_str_radix(dev.first()?, 16).ok()?, u64::from_str_radix(dev.get(1)?, 16).ok()?),
                ino: dev.get(2)?.parse().ok()?,
                start: f.get(6)?.parse().ok()?,
            })
        })
        .collect()
}

fn file_id(path: &Path) -> Option<((u64, u64), u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let dev = m.dev();
    Some(((nix::sys::stat::major(dev), nix::sys::stat::minor(dev)), m.ino()))
}

/// Whether process `pid` is stopped (SIGSTOP, or traced): state T or t in `/proc/PID/stat`.
pub fn is_stopped(pid: i32) -> bool {
    // /proc/PID/stat: "pid (comm) S ..." — the state follows the last ')'.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()))
        .is_some_and(|c| c == 'T' || c == 't')
}

/// A stopped process holding the store's write lock — SQLite's WAL write
/// lock, or the writer lock dhp-rs processes queue on before `BEGIN
/// IMMEDIATE` ([`crate::store::sqlite::WRITER_LOCK_FILE`]) — with the
/// liveness token (worker or supervisor id) it holds in this store.
pub fn stalled_writer(root: &Path) -> Option<(i32, String)> {
    let wal = file_id(&root.join(format!("{}-shm", crate::store::sqlite::DB_FILE)));
    let queue = file_id(&root.join(crate::store::sqlite::WRITER_LOCK_FILE));
    if wal.is_none() && queue.is_none() {
        return None;
    }
    let locks = proc_locks();
    let holds = |l: &LockLine| {
        let at = Some((l.dev, l.ino));
        l.write
            && ((l.kind == "POSIX" && at == wal && l.start == WAL_WRITE_LOCK_BYTE)
                || (l.kind == "FLOCK" && at == queue))
    };
    let mut pids: Vec<i32> = locks.iter().filter(|l| holds(l)).map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let pid = pids.into_iter().find(|p| is_stopped(*p))?;
    let dir = std::fs::read_dir(root.join(DIR)).ok()?;
    for entry in dir.flatten() {
        let path = entry.path();
        let Some(id) = file_id(&path) else { continue };
        if locks.iter().any(|l| l.kind == "FLOCK" && l.pid == pid && (l.dev, l.ino) == id) {
            let name = path.file_stem()?.to_string_lossy().into_owned();
            return Some((pid, name));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_lifecycle() {
        let d = tempfile::tempdir().unwrap();
        assert!(!is_dead(d.path(), "w1"), "no token means lease-only, not dead");
        let w1 = WorkerId::parse("w1").unwrap();
        let t = publish(d.path(), &w1).unwrap();
        assert!(!is_dead(d.path(), "w1"));
        assert!(publish(d.path(), &w1).is_err());
        drop(t);
        assert!(!is_dead(d.path(), "w1"), "clean exit removes the token");
    }
}

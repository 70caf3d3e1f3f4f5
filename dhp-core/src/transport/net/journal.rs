//! The server-wide journal: group commit across connections and handoffs.
//!
//! Every line the server appends to a `<hid>.log` is first appended to one
//! journal file in the log directory; one `fdatasync` of the journal, run
//! by a dedicated thread, makes every line written before it durable,
//! whichever connection or handoff it belongs to; on a plaintext
//! connection that thread also writes the acks the sync released
//! (direct_ack.rs). The per-handoff logs are
//! written without syncing; they are synced at a checkpoint (when the
//! journal grows past [`ROTATE_BYTES`], and on a clean shutdown), after
//! which the journal up to that point is deleted. On start, the journals
//! left by a crash are replayed into the logs (by seq: a line a log
//! already holds is not appended again), the logs synced, the journals
//! deleted.
//!
//! File format (docs/transport.md): `journal-<gen>.dhpj`, `<gen>` 16
//! decimal digits, first line `dhp-transport-journal 1`, then one record
//! per line: `<hid> <check> <line>` where `<hid>` is the handoff id (64
//! hex), `<check>` the first 8 hex digits of SHA-256 of `<hid> <line>`,
//! and `<line>` the log line exactly as appended to `<hid>.log`.
//!
//! The file is preallocated with zeros (written and synced, so its blocks
//! are allocated and its size is on disk) and overwritten in place: an
//! `fdatasync` then flushes data only, with no metadata to commit, which
//! is what makes a sync cheap. It grows by [`GROW_BYTES`] of zeros ahead
//! of the writes. Replay therefore stops at the first zero byte, and at the
//! first record whose check fails (a torn write): nothing after it was
//! ever acknowledged.

use super::direct_ack::DirectAck;
use super::sync_stats::{Pending, SyncStats};
use crate::error::{Error, Result};
use crate::TransportKind;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// A journal file past this size is rotated and checkpointed.
pub(crate) const ROTATE_BYTES: u64 = 32 << 20;
/// Zeros written ahead of the records: a new file gets this many, and the
/// sync thread adds as many again when fewer than [`GROW_BELOW`] are left.
const GROW_BYTES: u64 = 4 << 20;
const GROW_BELOW: u64 = 1 << 20;
const HEADER: &str = "dhp-transport-journal 1\n";
const PREFIX: &str = "journal-";
const SUFFIX: &str = ".dhpj";

/// A connection waiting for its held acks: released by the first sync
/// that covers `pos`, and by no other — a sync wakes only the connections
/// it acknowledges. With `direct`, that sync's thread writes the acks
/// itself before it wakes the connection (direct_ack.rs). Dropped unsent
/// when the journal fails or stops.
struct Waiter {
    pos: u64,
    release: Release,
}

/// How a waiter is released.
enum Release {
    /// Wake the connection's task (sent the end time of the sync,
    /// [`SyncStats::now_ns`]), which writes the acks.
    Task(oneshot::Sender<u64>),
    /// Write the acks from the sync thread.
    Direct(DirectAck),
}

struct Inner {
    /// Shared with the sync thread, which syncs it without the lock.
    file: Arc<File>,
    path: PathBuf,
    gen: u64,
    /// Logical end of the stream (bytes over every generation).
    written: u64,
    /// Bytes of records (and header) in the current file.
    file_len: u64,
    /// Size of the current file: zeros from `file_len` up to here.
    zeroed_to: u64,
    /// A write failed part-way: the next record starts on a new line.
    torn: bool,
    /// Handoffs whose log got lines recorded in the current file.
    dirty: HashSet<String>,
    /// What the sync thread has made durable: every byte of the stream
    /// below this, unless a sync failed (see [`Journal::failed`]).
    synced: u64,
    /// When the sync that made `synced` durable ended.
    synced_at_ns: u64,
    /// Connections whose acks wait for a sync past `synced`.
    waiters: Vec<Waiter>,
    /// Records written since the sync thread last took the pending ones.
    pending: Pending,
    /// The sync thread sleeps on `wake` (an append must notify it).
    waiting: bool,
    stop: bool,
}

pub(crate) struct Journal {
    dir: PathBuf,
    inner: Mutex<Inner>,
    wake: Condvar,
    /// Set once a journal write or sync failed: nothing more is ever
    /// acknowledged (after a failed fsync the page cache cannot be trusted).
    failed: watch::Sender<Option<Arc<str>>>,
    /// Test failpoint: pause before each journal sync.
    pause: Duration,
    rotate_bytes: u64,
    pub(crate) stats: SyncStats,
}

/// A finished journal file and the logs whose lines it holds: once these
/// are synced, the file may go.
struct Retired {
    path: PathBuf,
    dirty: HashSet<String>,
}

/// The running journal with its sync and checkpoint threads.
pub(crate) struct JournalHandle {
    pub(crate) journal: Arc<Journal>,
    sync_thread: Option<JoinHandle<()>>,
    checkpoint_thread: Option<JoinHandle<()>>,
}

fn journal_name(gen: u64) -> String {
    format!("{PREFIX}{gen:016}{SUFFIX}")
}

fn check(hid: &str, line: &str) -> String {
    let mut h = Sha256::new();
    h.update(hid.as_bytes());
    h.update(b" ");
    h.update(line.as_bytes());
    hex::encode(&h.finalize()[..4])
}

/// Journal files in `dir`, oldest first.
pub(crate) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(gen) = name.strip_prefix(PREFIX).and_then(|n| n.strip_suffix(SUFFIX)) else { continue };
        if let Ok(g) = gen.parse::<u64>() {
            // A journal is read and deleted at start: never through a link.
            super::logdir_fs::entry(&e.path())?;
            out.push((g, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The valid records of one journal file, in order: `(hid, line)`, and
/// how many lines were not used. The records end at the first zero byte
/// (the preallocated rest of the file) and at the first record that is
/// torn (no newline) or whose check fails: it and every line after it
/// were never acknowledged, as no sync covered them.
pub(crate) fn records(path: &Path) -> Result<(Vec<(String, String)>, usize)> {
    let data = super::logdir_fs::read(path)?;
    let data = &data[..data.iter().position(|b| *b == 0).unwrap_or(data.len())];
    let mut out = Vec::new();
    let mut lines = data.split(|b| *b == b'\n');
    // An empty file: created but its header never reached the disk.
    let _header = lines.next();
    let complete = data.last() == Some(&b'\n');
    let mut lines = lines.filter(|l| !l.is_empty()).peekable();
    while let Some(raw) = lines.next() {
        let torn = lines.peek().is_none() && !complete;
        let parsed = std::str::from_utf8(raw).ok().filter(|_| !torn).and_then(|t| {
            let (hid, rest) = t.split_once(' ')?;
            let (chk, line) = rest.split_once(' ')?;
            (check(hid, line) == chk).then(|| (hid.to_string(), line.to_string()))
        });
        match parsed {
            Some(r) => out.push(r),
            None => return Ok((out, 1 + lines.count())),
        }
    }
    Ok((out, 0))
}

fn sync_failed(f: &str) -> Error {
    Error::transport(TransportKind::Journal, format!("journal sync failed: {f}"))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, e))
}

/// Write `len` zeros at `at` (not moving the file's cursor).
fn write_zeros(f: &File, at: u64, len: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(zeros.len() as u64);
        f.write_all_at(&zeros[..n as usize], at + done)?;
        done += n;
    }
    Ok(())
}

/// How many bytes of zeros to put ahead of the records: [`GROW_BYTES`], but
/// at most a quarter of the space left on the journal's file system, in
/// whole 4 KiB pages (0 when that is under a page). A small or nearly full
/// disk then still takes records — appended, so their syncs also commit
/// the file's size — instead of failing to preallocate (a 256 KiB disk
/// used to keep the server from starting at all).
fn prealloc_step(dir: &Path) -> u64 {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => {
            let avail: u64 = s.blocks_available().saturating_mul(s.fragment_size());
            GROW_BYTES.min(avail / 4) & !4095
        }
        Err(_) => GROW_BYTES,
    }
}

/// Create journal file `gen` with its header and [`prealloc_step`] bytes of
/// zeros, durably (data, size and entry), its cursor after the header.
/// Returns the file, its path and how many zeros it has.
fn create(dir: &Path, gen: u64) -> Result<(File, PathBuf, u64)> {
    let path = dir.join(journal_name(gen));
    // A new file, never one in the way (a link there is refused, not
    // followed and truncated).
    let mut f = super::logdir_fs::open(std::fs::OpenOptions::new().create_new(true).write(true), &path)?;
    let step = prealloc_step(dir);
    f.write_all(HEADER.as_bytes())
        .and_then(|_| write_zeros(&f, HEADER.len() as u64, step))
        .and_then(|_| f.sync_data())
        .map_err(|e| Error::io(&path, e))?;
    sync_dir(dir)?;
    Ok((f, path, step))
}

/// Past this many dirty logs a checkpoint syncs the whole file system
/// (`syncfs`, one call) instead of one `fdatasync` per log (a few ms each).
#[cfg(target_os = "linux")]
const SYNCFS_OVER: usize = 64;

/// `fdatasync` the logs of `hids` (a missing one is skipped: removed by
/// an operator), then the directory (for logs created since).
pub(crate) fn sync_logs(dir: &Path, hids: &HashSet<String>) -> Result<()> {
    #[cfg(target_os = "linux")]
    if hids.len() > SYNCFS_OVER {
        use std::os::fd::AsRawFd;
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        return nix::unistd::syncfs(d.as_raw_fd()).map_err(|e| Error::io(dir, e.into()));
    }
    for hid in hids {
        let path = dir.join(format!("{hid}.log"));
        // Not through a link: a log replaced by one is refused.
        match super::logdir_fs::open_read(&path) {
            Ok(f) => f.sync_data().map_err(|e| Error::io(&path, e))?,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    sync_dir(dir)
}

impl Journal {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record `line` of handoff `hid`; returns the stream position the
    /// sync thread must pass before the line may be acknowledged.
    pub(crate) fn append(&self, hid: &str, line: &str) -> Result<u64> {
        if let Some(f) = &*self.failed.borrow() {
            return Err(Error::transport(TransportKind::Journal, format!("journal sync failed earlier: {f}")));
        }
        let mut rec = String::with_capacity(hid.len() + line.len() + 12);
        let mut g = self.lock();
        if g.torn {
            rec.push('\n');
        }
        rec.push_str(hid);
        rec.push(' ');
        rec.push_str(&check(hid, line));
        rec.push(' ');
        rec.push_str(line);
        rec.push('\n');
        if let Err(e) = (&*g.file).write_all(rec.as_bytes()) {
            // The line may be in its log already, unrecorded: no further
            // ack until a restart (a retry is then journaled as a duplicate).
            g.torn = true;
            let e = Error::io(&g.path, e);
            drop(g);
            self.fail(&e);
            return Err(e);
        }
        g.torn = false;
        let n = rec.len() as u64;
        g.written += n;
        g.file_len += n;
        if !g.dirty.contains(hid) {
            g.dirty.insert(hid.to_string());
        }
        let pos = g.written;
        let now = self.stats.now_ns();
        SyncStats::written(&mut g.pending, now);
        // One wake-up per batch: the sync thread, once woken, takes every
        // record written before it locks again.
        let wake = g.waiting;
        drop(g);
        if wake {
            self.wake.notify_one();
        }
        Ok(pos)
    }

    /// The stream position after everything recorded so far.
    pub(crate) fn position(&self) -> u64 {
        self.lock().written
    }

    /// Hand acks to the sync that makes the stream durable up to `pos`,
    /// which writes them (direct_ack.rs). `Some`: durable already, the
    /// caller writes them.
    pub(crate) fn hand(&self, pos: u64, ack: DirectAck) -> Result<Option<DirectAck>> {
        let mut g = self.lock();
        if g.synced >= pos {
            return Ok(Some(ack));
        }
        // As in `wait`: refused here or dropped by `fail`.
        if let Some(f) = &*self.failed.borrow() {
            return Err(sync_failed(f));
        }
        g.waiters.push(Waiter { pos, release: Release::Direct(ack) });
        Ok(None)
    }

    /// Wait until the stream is durable up to `pos`; returns when the sync
    /// that made it so ended ([`SyncStats::now_ns`]).
    pub(crate) async fn wait(&self, pos: u64) -> Result<u64> {
        let rx = {
            let mut g = self.lock();
            if g.synced >= pos {
                return Ok(g.synced_at_ns);
            }
            // Checked under the lock [`Journal::fail`] takes to drop the
            // waiters: a waiter is either refused here or dropped there.
            if let Some(f) = &*self.failed.borrow() {
                return Err(sync_failed(f));
            }
            let (tx, rx) = oneshot::channel();
            g.waiters.push(Waiter { pos, release: Release::Task(tx) });
            rx
        };
        match rx.await {
            Ok(at_ns) => Ok(at_ns),
            Err(_) => match &*self.failed.borrow() {
                Some(f) => Err(sync_failed(f)),
                None => Err(Error::transport(TransportKind::Journal, "journal sync thread stopped")),
            },
        }
    }

    /// Resolves when a journal write or sync failed (never otherwise): the
    /// journal file it hit can no longer be trusted, so the server stops.
    pub(crate) async fn failure(&self) -> Arc<str> {
        let mut rx = self.failed.subscribe();
        let got = rx.wait_for(Option::is_some).await.ok().and_then(|f| f.clone());
        match got {
            Some(f) => f,
            // the sync thread is gone (a clean stop): no failure to report
            None => std::future::pending().await,
        }
    }

    pub(crate) fn fail(&self, e: &Error) {
        tracing::error!(error = %e, "transport: journal sync failed; the server stops (restart it: it recovers from the journal)");
        let msg: Arc<str> = Arc::from(e.to_string());
        self.failed.send_modify(|f| *f = Some(msg));
        // Their acks never leave: each waiting connection closes.
        let dropped = std::mem::take(&mut self.lock().waiters);
        drop(dropped);
    }

    /// The stream is durable below `pos`: release the waiters it covers
    /// (outside the lock; appends go on meanwhile).
    fn publish(&self, pos: u64) {
        let at_ns = self.stats.now_ns();
        let ready: Vec<Waiter> = {
            let mut g = self.lock();
            g.synced = g.synced.max(pos);
            g.synced_at_ns = at_ns;
            let synced = g.synced;
            let (ready, held) = std::mem::take(&mut g.waiters).into_iter().partition(|w| w.pos <= synced);
            g.waiters = held;
            ready
        };
        for w in ready {
            match w.release {
                Release::Task(tx) => {
                    let _ = tx.send(at_ns);
                }
                Release::Direct(ack) => {
                    // written, or (a full socket) handed back to the task
                    ack.release();
                    self.stats.acked(self.stats.now_ns().saturating_sub(at_ns));
                }
            }
        }
    }

    /// The sync thread: one `fdatasync` covers whatever is pending.
    fn sync_loop(self: Arc<Self>, retire: mpsc::Sender<Retired>) {
        loop {
            let (target, file, path, rotate, grow, pending) = {
                let mut g = self.lock();
                while g.written == g.synced && !g.stop {
                    g.waiting = true;
                    g = self.wake.wait(g).unwrap_or_else(|p| p.into_inner());
                    g.waiting = false;
                }
                if g.written == g.synced {
                    return; // stopping, nothing pending
                }
                let rotate = g.file_len >= self.rotate_bytes;
                let grow = !rotate && g.zeroed_to.saturating_sub(g.file_len) < GROW_BELOW;
                let pending = std::mem::take(&mut g.pending);
                (g.written, g.file.clone(), g.path.clone(), rotate, grow, pending)
            };
            if !self.pause.is_zero() {
                std::thread::sleep(self.pause);
            }
            let start = self.stats.now_ns();
            if let Err(e) = file.sync_data() {
                return self.fail(&Error::io(&path, e));
            }
            self.stats.synced(pending, start, self.stats.now_ns().saturating_sub(start));
            self.publish(target);
            let next = if rotate {
                self.rotate().map(|r| {
                    let _ = retire.send(r);
                })
            } else if grow {
                self.grow()
            } else {
                Ok(())
            };
            if let Err(e) = next {
                return self.fail(&e);
            }
        }
    }

    /// Add [`GROW_BYTES`] of zeros past the records and sync them (size
    /// and allocation), so that the syncs covering the next records flush
    /// data only. Appends wait meanwhile (the zeros go to the page cache:
    /// a millisecond or so per [`GROW_BYTES`]).
    fn grow(&self) -> Result<()> {
        let step = prealloc_step(&self.dir);
        let (file, path) = {
            let mut g = self.lock();
            // A small disk gets small steps, and never more than one ahead
            // (zeros must not crowd out the logs); a full one none.
            if step == 0 || g.zeroed_to.saturating_sub(g.file_len) >= step / 4 {
                return Ok(());
            }
            let at = g.zeroed_to.max(g.file_len);
            write_zeros(&g.file, at, step).map_err(|e| Error::io(&g.path, e))?;
            g.zeroed_to = at + step;
            (g.file.clone(), g.path.clone())
        };
        file.sync_data().map_err(|e| Error::io(&path, e))
    }

    /// Start a new journal file; the old one (synced to its end) is
    /// returned with its dirty logs, to be checkpointed.
    fn rotate(&self) -> Result<Retired> {
        let gen = self.lock().gen + 1;
        let (file, path, step) = create(&self.dir, gen)?;
        let (old, old_path, dirty, end) = {
            let mut g = self.lock();
            let old = std::mem::replace(&mut g.file, Arc::new(file));
            let old_path = std::mem::replace(&mut g.path, path);
            g.gen = gen;
            g.file_len = HEADER.len() as u64;
            g.zeroed_to = g.file_len + step;
            g.torn = false;
            (old, old_path, std::mem::take(&mut g.dirty), g.written)
        };
        // Records that reached the old file after the last sync.
        old.sync_data().map_err(|e| Error::io(&old_path, e))?;
        self.publish(end);
        Ok(Retired { path: old_path, dirty })
    }
}

/// Sync the logs of each retired journal, then delete it.
fn checkpoint_loop(dir: PathBuf, rx: mpsc::Receiver<Retired>, journal: Arc<Journal>) {
    for r in rx {
        match sync_logs(&dir, &r.dirty).and_then(|_| std::fs::remove_file(&r.path).map_err(|e| Error::io(&r.path, e))) {
            Ok(()) => tracing::debug!(logs = r.dirty.len(), "transport: journal checkpointed"),
            Err(e) => {
                // The journal stays (replayed on the next start); acks
                // stop, as the logs may not reach the disk.
                journal.fail(&e);
            }
        }
    }
}

impl JournalHandle {
    /// Start a fresh journal in `dir` (after any old ones were replayed and
    /// removed), with its threads.
    pub(crate) fn start(dir: &Path, pause: Duration, rotate_bytes: u64) -> Result<Self> {
        let gen = list(dir)?.last().map_or(1, |(g, _)| g + 1);
        let (file, path, step) = create(dir, gen)?;
        let journal = Arc::new(Journal {
            dir: dir.to_path_buf(),
            inner: Mutex::new(Inner {
                file: Arc::new(file),
                path,
                gen,
                written: 0,
                file_len: HEADER.len() as u64,
                zeroed_to: HEADER.len() as u64 + step,
                torn: false,
                dirty: HashSet::new(),
                synced: 0,
                synced_at_ns: 0,
                waiters: Vec::new(),
                pending: Pending::default(),
                waiting: false,
                stop: false,
            }),
            wake: Condvar::new(),
            failed: watch::Sender::new(None),
            pause,
            rotate_bytes,
            stats: SyncStats::default(),
        });
        let (tx, rx) = mpsc::channel();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(|e| Error::transport(TransportKind::Start, format!("cannot start the {name} thread: {e}")))
        };
        let j = journal.clone();
        let sync_thread = spawn("dhp-journal-sync", Box::new(move || j.sync_loop(tx)))?;
        let (j, d) = (journal.clone(), dir.to_path_buf());
        let checkpoint_thread = spawn("dhp-journal-ckpt", Box::new(move || checkpoint_loop(d, rx, j)))?;
        Ok(JournalHandle { journal, sync_thread: Some(sync_thread), checkpoint_thread: Some(checkpoint_thread) })
    }

    /// Clean shutdown: sync what is pending, checkpoint every log, delete
    /// the journal files.
    pub(crate) fn close(mut self) -> Result<()> {
        self.journal.lock().stop = true;
        self.journal.wake.notify_all();
        if let Some(t) = self.sync_thread.take() {
            let _ = t.join();
        }
        // The sync thread held the retire sender; its exit ends the loop.
        if let Some(t) = self.checkpoint_thread.take() {
            let _ = t.join();
        }
        let j = &self.journal;
        if let Some(f) = &*j.failed.borrow() {
            return Err(Error::transport(TransportKind::Journal, format!("journal not checkpointed: {f}")));
        }
        let (path, dirty) = {
            let mut g = j.lock();
            (g.path.clone(), std::mem::take(&mut g.dirty))
        };
        sync_logs(&j.dir, &dirty)?;
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        sync_dir(&j.dir)
    }
}

impl Drop for JournalHandle {
    fn drop(&mut self) {
        // Not closed (an error path): stop the threads, keep the files
        // that hold records. A journal that never got one (a server that
        // could not bind after starting it) goes: nothing to replay.
        let unused = {
            let mut g = self.journal.lock();
            g.stop = true;
            (g.written == 0).then(|| g.path.clone())
        };
        self.journal.wake.notify_all();
        if let Some(path) = unused {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of `path` up to the preallocated zeros.
    fn written_part(path: &Path) -> Vec<u8> {
        let data = std::fs::read(path).unwrap();
        let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
        data[..end].to_vec()
    }

    #[test]
    fn records_round_trip_and_replay_stops_at_a_torn_or_corrupt_record() {
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::ZERO, ROTATE_BYTES).unwrap();
        let hid = "a".repeat(64);
        let p1 = h.journal.append(&hid, "{\"seq\": 0}").unwrap();
        let p2 = h.journal.append(&hid, "{\"seq\": 1}").unwrap();
        let p3 = h.journal.append(&hid, "{\"seq\": 2}").unwrap();
        assert!(p1 < p2 && p2 < p3);
        let files = list(dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        let path = files[0].1.clone();
        let (recs, bad) = records(&path).unwrap();
        let want: Vec<_> = (0..3).map(|i| (hid.clone(), format!("{{\"seq\": {i}}}"))).collect();
        assert_eq!(recs, want);
        assert_eq!(bad, 0, "the preallocated zeros are not records");
        // A corrupted record ends the replay: the valid one after it was
        // never covered by a sync (the corrupt one would have been).
        let mut data = written_part(&path);
        // Line ends: the header's, then each record's.
        let ends: Vec<usize> = data.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i).collect();
        let third = ends[2] + 1;
        data[third - 3] = b'X';
        std::fs::write(&path, &data).unwrap();
        let (recs, bad) = records(&path).unwrap();
        assert_eq!(recs, want[..1]);
        assert_eq!(bad, 2);
        // A torn last record (no newline) is not replayed.
        let mut data = written_part(&path);
        data.truncate(third - 1);
        std::fs::write(&path, &data).unwrap();
        assert_eq!(records(&path).unwrap(), (want[..1].to_vec(), 1));
        drop(h);
    }

    #[test]
    fn replay_stops_at_the_first_zero_byte() {
        // A power loss can persist a later page of an unsynced write and
        // not an earlier one: a hole of zeros, then a valid-looking record.
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::ZERO, ROTATE_BYTES).unwrap();
        let hid = "c".repeat(64);
        h.journal.append(&hid, "{\"seq\": 0}").unwrap();
        let path = list(dir.path()).unwrap()[0].1.clone();
        let mut data = written_part(&path);
        let rec = data[HEADER.len()..].to_vec();
        data.extend_from_slice(&[0u8; 100]);
        data.extend_from_slice(&rec);
        std::fs::write(&path, &data).unwrap();
        assert_eq!(records(&path).unwrap(), (vec![(hid, "{\"seq\": 0}".to_string())], 0));
        drop(h);
    }

    #[tokio::test]
    async fn records_overwrite_the_preallocated_file_in_place() {
        // The point of preallocating: a sync after an append must not
        // change the file's size (a size change makes `fdatasync` commit
        // metadata, several times the cost of flushing the data).
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::ZERO, ROTATE_BYTES).unwrap();
        let path = list(dir.path()).unwrap()[0].1.clone();
        let size = || std::fs::metadata(&path).unwrap().len();
        let start = size();
        assert_eq!(start, HEADER.len() as u64 + GROW_BYTES);
        let hid = "d".repeat(64);
        let line = format!("{{\"pad\": \"{}\"}}", "p".repeat(900));
        let mut pos = 0;
        for n in 0..50 {
            pos = h.journal.append(&hid, &line).unwrap();
            h.journal.wait(pos).await.unwrap();
            assert_eq!(size(), start, "record {n} changed the file's size");
        }
        let mut n = 50;
        // Past the low-water mark, the sync thread adds zeros ahead (after
        // the sync that finds it there; the next sync follows the growth).
        while pos < GROW_BYTES - GROW_BELOW / 2 {
            pos = h.journal.append(&hid, &line).unwrap();
            n += 1;
        }
        h.journal.wait(pos).await.unwrap();
        let pos = h.journal.append(&hid, &line).unwrap();
        h.journal.wait(pos).await.unwrap();
        n += 1;
        let grown = size();
        assert!(grown >= start + GROW_BYTES, "grown to {grown}");
        assert_eq!(grown % GROW_BYTES, start % GROW_BYTES, "grown in whole steps");
        let (recs, bad) = records(&path).unwrap();
        assert_eq!((recs.len(), bad), (n, 0));
        h.close().unwrap();
    }

    /// The sync thread writes a covered waiter's acks itself, as its sync
    /// ends; a failed journal writes none and fails the connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sync_writes_its_waiters_acks_itself() {
        use super::super::direct_ack::{DirectConn, Take};
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::from_millis(100), ROTATE_BYTES).unwrap();
        let j = h.journal.clone();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        // an ack that never comes fails the test instead of hanging it
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let (server, _) = l.accept().await.unwrap();
        let conn = DirectConn::of(&server).unwrap();
        let hid = "d".repeat(64);
        let ack = b"{\"ok\": true, \"seq\": 0}\n".to_vec();
        let p = j.append(&hid, "{\"seq\": 0}").unwrap();
        assert!(j.hand(p, conn.hand(ack.clone())).unwrap().is_none(), "queued for the sync");
        let mut got = vec![0u8; ack.len()];
        client.read_exact(&mut got).unwrap();
        assert_eq!(got, ack, "written by the sync thread");
        // Counted once the write returned, which may be after the client
        // read it (fresh-clone CI run 29 caught the count still at 0).
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while SyncStats::get(&j.stats.acks) == 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(SyncStats::get(&j.stats.acks), 1, "and counted");
        assert!(matches!(conn.take(true), Take::Clear));
        // Durable already: handed back, for the task to write.
        let back = j.hand(p, conn.hand(ack.clone())).unwrap().expect("durable already");
        assert_eq!(back.into_bytes(), ack);
        // A failure before the sync: no ack leaves, the connection fails.
        let p2 = j.append(&hid, "{\"seq\": 1}").unwrap();
        assert!(j.hand(p2, conn.hand(ack.clone())).unwrap().is_none());
        j.fail(&Error::io(dir.path(), std::io::Error::from_raw_os_error(5)));
        assert!(matches!(conn.take(false), Take::Failed));
        assert!(j.hand(p2, conn.hand(ack)).is_err(), "refused once failed");
        client.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut more = [0u8; 1];
        assert!(client.read(&mut more).is_err(), "no ack for a line the failed journal did not make durable");
        drop(server);
        drop(h);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sync_releases_only_the_waiters_it_covers() {
        // Each sync waits 300 ms first: the waiters register before it.
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::from_millis(300), ROTATE_BYTES).unwrap();
        let j = h.journal.clone();
        let hid = "e".repeat(64);
        let waiter = |pos: u64| {
            let j = j.clone();
            tokio::spawn(async move { j.wait(pos).await })
        };
        let p1 = j.append(&hid, "{\"seq\": 0}").unwrap();
        let (w1, beyond) = (waiter(p1), waiter(p1 + 1));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!w1.is_finished(), "released before the sync covering it");
        w1.await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!beyond.is_finished(), "released by a sync that does not cover it");
        let p2 = j.append(&hid, "{\"seq\": 1}").unwrap();
        assert!(p2 > p1);
        beyond.await.unwrap().unwrap();
        assert!(j.wait(p2).await.is_ok(), "covered already: no wait");
        // A failure before the sync: the waiter gets the error, never an ack.
        let p3 = j.append(&hid, "{\"seq\": 2}").unwrap();
        let w3 = waiter(p3);
        tokio::time::sleep(Duration::from_millis(50)).await;
        j.fail(&Error::io(dir.path(), std::io::Error::from_raw_os_error(5)));
        let e = w3.await.unwrap().unwrap_err().to_string();
        assert!(e.contains("journal sync failed"), "{e}");
        assert!(j.wait(p3).await.is_err());
        drop(h);
    }

    #[test]
    fn many_dirty_logs_are_synced_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let hids: HashSet<String> = (0..100).map(|i| format!("{i:064x}")).collect();
        for h in hids.iter().take(50) {
            std::fs::write(dir.path().join(format!("{h}.log")), b"x\n").unwrap();
        }
        sync_logs(dir.path(), &hids).unwrap();
        sync_logs(dir.path(), &hids.iter().take(3).cloned().collect()).unwrap();
        let missing = tempfile::tempdir().unwrap().path().join("gone");
        assert!(sync_logs(&missing, &hids).is_err());
    }

    #[tokio::test]
    async fn acks_wait_for_the_sync_and_close_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let h = JournalHandle::start(dir.path(), Duration::ZERO, 200).unwrap();
        let hid = "b".repeat(64);
        std::fs::write(dir.path().join(format!("{hid}.log")), b"x\n").unwrap();
        let mut last = 0;
        for i in 0..20 {
            last = h.journal.append(&hid, &format!("{{\"seq\": {i}}}")).unwrap();
        }
        h.journal.wait(last).await.unwrap();
        h.close().unwrap();
        assert!(list(dir.path()).unwrap().is_empty(), "journals left after a clean close");
    }
}

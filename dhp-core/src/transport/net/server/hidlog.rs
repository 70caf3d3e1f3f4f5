//! What the server keeps in memory per handoff log: its header, the seqs
//! it holds, recent hashes, and the append handle; and the bounded cache of
//! those states.

use super::super::journal::Journal;
use super::super::seqset::SeqSet;
use super::super::{ends_torn, logdir_fs, Appender};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::transport::log::{self, Line};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex as AsyncMutex;

/// What the server knows about one `<hid>.log`. Kept in memory so that a
/// hello costs a `stat`, not a scan; re-read whenever the file changed
/// behind our back (size or inode differ from what we wrote).
pub(super) struct HidLog {
    pub(super) hid: String,
    /// Where every appended line is recorded first (`None` without fsync,
    /// and while replaying a journal).
    pub(super) journal: Option<Arc<Journal>>,
    pub(super) out: Appender,
    pub(super) loaded: bool,
    pub(super) len: u64,
    pub(super) ino: u64,
    /// `handoff_id` of the first envelope record, if any.
    pub(super) header: Option<String>,
    pub(super) seqs: SeqSet,
    /// `state_hash` of the most recently appended seqs, so a re-sent
    /// checkpoint is compared without reading the file.
    pub(super) recent: VecDeque<(i64, String)>,
}

/// Hashes kept per handoff for duplicate checks; older ones are read back
/// from the log.
const RECENT_HASHES: usize = 16;
/// Handoff logs whose state is kept in memory when no connection uses
/// them; past this, unused ones are dropped and re-read from disk on their
/// next hello.
pub(super) const MAX_CACHED_LOGS: usize = 1024;

#[cfg(unix)]
fn ino_of(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}
#[cfg(not(unix))]
fn ino_of(_m: &std::fs::Metadata) -> u64 {
    0
}

impl HidLog {
    pub(super) fn new(hid: String, path: PathBuf, journal: Option<Arc<Journal>>) -> Self {
        HidLog {
            hid,
            journal,
            out: Appender::no_follow(path),
            loaded: false,
            len: 0,
            ino: 0,
            header: None,
            seqs: SeqSet::new(),
            recent: VecDeque::new(),
        }
    }

    /// Bring the in-memory view up to date with the file.
    pub(super) fn refresh(&mut self, cfg: &Config) -> Result<()> {
        // Not following a link: a planted `<hid>.log` link is refused.
        match logdir_fs::entry(&self.out.path)? {
            None => {
                let (hid, path, journal) =
                    (std::mem::take(&mut self.hid), std::mem::take(&mut self.out.path), self.journal.take());
                *self = HidLog { loaded: true, ..HidLog::new(hid, path, journal) };
                Ok(())
            }
            Some(m) if self.loaded && m.len() == self.len && ino_of(&m) == self.ino => Ok(()),
            Some(_) => self.rescan(cfg),
        }
    }

    pub(super) fn rescan(&mut self, cfg: &Config) -> Result<()> {
        let path = &self.out.path;
        let mut f = logdir_fs::open_read(path)?;
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut data).map_err(|e| Error::io(path, e))?;
        let m = f.metadata().map_err(|e| Error::io(path, e))?;
        let mut header = None;
        let mut seqs = SeqSet::new();
        let mut last: Option<(i64, String)> = None;
        for line in log::parse_lines(&data, cfg) {
            let Line::Record(v) = line else { continue };
            match v["type"].as_str() {
                Some("envelope") if header.is_none() => {
                    header = v.pointer("/envelope/handoff_id").and_then(Value::as_str).map(str::to_string);
                }
                // Ingest skips checkpoints before the header; so do we.
                Some("checkpoint") if header.is_some() => {
                    if let Some(s) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) {
                        seqs.insert(s);
                        if last.as_ref().is_none_or(|(l, _)| s > *l) {
                            last = v.get("state_hash").and_then(Value::as_str).map(|h| (s, h.to_string()));
                        }
                    }
                }
                _ => {}
            }
        }
        self.loaded = true;
        self.len = data.len() as u64;
        self.ino = ino_of(&m);
        self.out.reset();
        self.out.torn = ends_torn(&data);
        self.header = header;
        self.seqs = seqs;
        self.recent.clear();
        if self.len != m.len() {
            // Appended to while we read: read again on next use.
            self.loaded = false;
        }
        Ok(())
    }

    /// The `state_hash` logged for `seq` (the first copy after the header).
    pub(super) fn logged_hash(&self, seq: i64, cfg: &Config) -> Result<Option<String>> {
        if let Some((_, h)) = self.recent.iter().find(|(s, _)| *s == seq) {
            return Ok(Some(h.clone()));
        }
        let data = logdir_fs::read(&self.out.path)?;
        let mut header = false;
        for line in log::parse_lines(&data, cfg) {
            let Line::Record(v) = line else { continue };
            match v["type"].as_str() {
                Some("envelope") => header = true,
                Some("checkpoint") if header && v.get("seq").and_then(Value::as_i64) == Some(seq) => {
                    return Ok(v.get("state_hash").and_then(Value::as_str).map(str::to_string));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    pub(super) fn remember(&mut self, seq: i64, hash: String) {
        if self.recent.len() >= RECENT_HASHES {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, hash));
    }

    /// Append `line` to the log (synced only at a journal checkpoint),
    /// then record it in the journal (whose sync makes it durable). In
    /// this order a checkpoint that retires the journal record always
    /// finds the log line written.
    pub(super) fn append(&mut self, line: &str) -> Result<()> {
        let n = self.out.append(line.as_bytes())?;
        if self.len == 0 {
            if let Ok(Some(m)) = logdir_fs::entry(&self.out.path) {
                self.ino = ino_of(&m);
            }
        }
        self.len += n;
        self.journal_line(line)
    }

    /// Record a line the log already holds in the journal again, before
    /// acking a duplicate: the log's copy may never have been synced (a
    /// server killed after writing it and before its journal record).
    pub(super) fn journal_line(&self, line: &str) -> Result<()> {
        match &self.journal {
            Some(j) => j.append(&self.hid, line).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// Per-handoff log state. An entry no connection holds (the map's `Arc`
/// is the only one) can be dropped at any time: it is rebuilt from the
/// file. Entries in use are never dropped, so one handoff never has two
/// appenders.
#[derive(Default)]
pub(super) struct LogCache {
    pub(super) map: HashMap<String, Arc<AsyncMutex<HidLog>>>,
    /// Sweep when the map reaches this size (doubles when most entries
    /// are in use, so a sweep stays amortised O(1) per insert).
    pub(super) sweep_at: usize,
    pub(super) evicted: u64,
    pub(super) journal: Option<Arc<Journal>>,
}

impl LogCache {
    pub(super) fn get(&mut self, hid: &str, path: PathBuf) -> Arc<AsyncMutex<HidLog>> {
        if let Some(l) = self.map.get(hid) {
            return l.clone();
        }
        if self.map.len() >= self.sweep_at.max(MAX_CACHED_LOGS) {
            let before = self.map.len();
            self.map.retain(|_, l| Arc::strong_count(l) > 1);
            self.evicted += (before - self.map.len()) as u64;
            self.sweep_at = (self.map.len() * 2).max(MAX_CACHED_LOGS);
        }
        let l = Arc::new(AsyncMutex::new(HidLog::new(hid.to_string(), path, self.journal.clone())));
        self.map.insert(hid.to_string(), l.clone());
        l
    }
}

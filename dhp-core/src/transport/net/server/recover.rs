//! Replaying the journals an unclean stop left into the handoff logs, by
//! the same append rules as live frames.

use super::super::journal;
use super::hidlog::HidLog;
use crate::config::Config;
use crate::envelope;
use crate::error::{Error, Result};
use crate::json;
use crate::transport::log;
use serde_json::Value;
use std::collections::HashMap;

/// What replaying one journal record did.
enum Replayed {
    Appended,
    Present,
    Refused,
}

impl HidLog {
    /// Apply one journal record by the append rules: an envelope only to a
    /// log without a header; a checkpoint only at the end of the unbroken
    /// run of seqs (a seq the log holds is not appended again).
    fn replay(&mut self, line: &str) -> Result<Replayed> {
        let Ok(v) = json::parse(line) else { return Ok(Replayed::Refused) };
        match v["type"].as_str() {
            Some("envelope") => {
                let owner = v.pointer("/envelope/handoff_id").and_then(Value::as_str);
                match &self.header {
                    Some(h) if Some(h.as_str()) == owner => Ok(Replayed::Present),
                    Some(_) => Ok(Replayed::Refused),
                    None if owner == Some(self.hid.as_str()) => {
                        self.append(line)?;
                        self.header = Some(self.hid.clone());
                        Ok(Replayed::Appended)
                    }
                    None => Ok(Replayed::Refused),
                }
            }
            Some("checkpoint") if self.header.is_some() => {
                let Some(seq) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) else {
                    return Ok(Replayed::Refused);
                };
                if self.seqs.contains(seq) {
                    return Ok(Replayed::Present);
                }
                if seq != self.seqs.prefix_end() + 1 {
                    return Ok(Replayed::Refused);
                }
                self.append(line)?;
                self.seqs.insert(seq);
                Ok(Replayed::Appended)
            }
            _ => Ok(Replayed::Refused),
        }
    }
}

/// Replay the journals a crash left into the logs, sync the logs, delete
/// the journals.
pub(super) fn recover(logdir: &std::path::Path, cfg: &Config) -> Result<()> {
    let files = journal::list(logdir)?;
    if files.is_empty() {
        return Ok(());
    }
    crate::failpoint::hit("transport.recover");
    let mut logs: HashMap<String, HidLog> = HashMap::new();
    let (mut appended, mut present, mut refused, mut bad) = (0u64, 0u64, 0u64, 0usize);
    for (_, path) in &files {
        let (recs, b) = journal::records(path)?;
        bad += b;
        for (hid, line) in recs {
            if envelope::check_hid(&hid).is_err() {
                bad += 1;
                continue;
            }
            let l = match logs.entry(hid) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let path = log::log_path(logdir, e.key())?;
                    let hid = e.key().clone();
                    e.insert(HidLog::new(hid, path, None))
                }
            };
            l.refresh(cfg)?;
            match l.replay(&line)? {
                Replayed::Appended => appended += 1,
                Replayed::Present => present += 1,
                Replayed::Refused => refused += 1,
            }
            // No open file per handoff while replaying many.
            l.out.reset();
        }
    }
    journal::sync_logs(logdir, &logs.keys().cloned().collect())?;
    for (_, path) in &files {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
    }
    std::fs::File::open(logdir).and_then(|d| d.sync_all()).map_err(|e| Error::io(logdir, e))?;
    tracing::warn!(
        journals = files.len(),
        appended,
        present,
        refused,
        unreadable = bad,
        "transport: replayed the journal left by an unclean stop"
    );
    Ok(())
}

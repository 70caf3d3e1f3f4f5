//! The shipper's local buffer log: every line is written there before it
//! is queued, and what a server lacks after a reconnect is replayed from it.

use super::options::BufferLog;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::json;
use crate::transport::log::{self, Line};
use crate::transport::net::seqset::SeqSet;
use crate::transport::net::{ends_torn, over_cap, Appender};
use crate::TransportKind;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// What the caller side knows about a handoff's local buffer log.
#[derive(Debug)]
pub(super) struct LocalLog {
    pub(super) out: Appender,
    pub(super) seqs: SeqSet,
}

/// Seqs already in a local buffer log, and whether it ends torn. A log
/// whose header names another handoff is refused.
pub(super) fn scan_local(path: &std::path::Path, hid: &str, cfg: &Config) -> Result<(SeqSet, bool)> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((SeqSet::new(), false)),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut seqs = SeqSet::new();
    let mut header = false;
    for line in log::parse_lines(&data, cfg) {
        let Line::Record(v) = line else { continue };
        match v["type"].as_str() {
            Some("envelope") => {
                let h = v.pointer("/envelope/handoff_id").and_then(Value::as_str).unwrap_or("");
                if h != hid {
                    return Err(Error::transport(
                        TransportKind::Address,
                        format!("buffer log {} holds handoff {h:?}, not {hid}", path.display()),
                    ));
                }
                header = true;
            }
            // Ingest skips checkpoints before the header; so do we.
            Some("checkpoint") if header => {
                if let Some(s) = v.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0) {
                    seqs.insert(s);
                }
            }
            _ => {}
        }
    }
    Ok((seqs, ends_torn(&data)))
}

/// Checkpoint lines above `ack` in the local buffer log (first copy of
/// each seq; torn and foreign lines skipped), in seq order.
pub(super) fn replay_lines(buffer: Option<&BufferLog>, cfg: &Config, hid: &str, ack: i64) -> Vec<(i64, Arc<str>)> {
    let Some(path) = buffer.and_then(|b| b.path_for(hid).ok()) else { return Vec::new() };
    let Ok(data) = std::fs::read(&path) else { return Vec::new() };
    let max = cfg.transport_max_line_bytes;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut ours = false;
    for raw in data.split(|b| *b == b'\n') {
        let raw = raw.trim_ascii();
        if raw.is_empty() || over_cap(raw.len(), max) {
            continue;
        }
        let Ok(v) = json::parse_bytes(raw) else { continue };
        match v.get("type").and_then(Value::as_str) {
            Some("envelope") => ours = v.pointer("/envelope/handoff_id").and_then(Value::as_str) == Some(hid),
            Some("checkpoint") if ours => {
                let Some(seq) = v.get("seq").and_then(Value::as_i64).filter(|s| *s > ack) else { continue };
                if seen.insert(seq) {
                    if let Ok(text) = std::str::from_utf8(raw) {
                        out.push((seq, Arc::from(text)));
                    }
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|(s, _)| *s);
    out
}

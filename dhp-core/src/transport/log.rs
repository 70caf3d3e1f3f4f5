//! The transport log (docs/PROTOCOL.md §8): `<dir>/<hid>.log`, JSON lines written
//! as Python `json.dumps(obj, sort_keys=True)`.
//!
//! ```text
//! {"envelope": {...}, "type": "envelope"}
//! {"at": "...", "seq": 0, "state": {...}, "state_hash": "...", "type": "checkpoint"}
//! ```
//!
//! Reading tolerates what a crash leaves behind (a truncated last line,
//! garbage, invalid UTF-8): such lines are skipped and counted. Ingest
//! verifies the envelope's identity and every state hash; a mismatch is
//! [`Error::Tamper`] and the whole ingest is rolled back, leaving the store
//! unchanged. Re-ingesting is idempotent.
//!
//! Our writers also bind every checkpoint line to its handoff and its
//! predecessor ([`super::chain`]); ingest verifies that binding when a line
//! carries it, and refuses a seq that arrives with two different states.

use crate::config::Config;
use crate::envelope;
use crate::error::{Error, Result};
use crate::json;
use crate::runner::{checked_state, envelope_text};
use crate::store::{with_tx, Backend, CheckpointRow, Mode};
use crate::transport::chain::{self, Link};
use crate::transport::net::{ends_torn, Appender};
use crate::TransportKind;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// `<dir>/<hid>.log`, with the hid validated.
pub fn log_path(dir: &Path, hid: &str) -> Result<PathBuf> {
    envelope::check_hid(hid)?;
    Ok(dir.join(format!("{hid}.log")))
}

/// The envelope header line (without trailing newline); checkpoints emptied.
pub fn envelope_line(env: &Value) -> Result<String> {
    let mut env = env.clone();
    if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
        ex.insert("checkpoints".into(), json!([]));
    }
    json::dumps_sorted(&json!({"type": "envelope", "envelope": env}))
}

/// A checkpoint line (without trailing newline).
pub fn checkpoint_line(seq: i64, state: &Value, state_hash: &str, at: &str) -> Result<String> {
    json::dumps_sorted(&json!({"type": "checkpoint", "seq": seq, "state": state, "state_hash": state_hash, "at": at}))
}

fn check_line(line: &str, cfg: &Config) -> Result<()> {
    let n = line.len() + 1;
    if n > cfg.transport_max_line_bytes {
        return Err(Error::Oversize { what: "transport line", size: n, limit: cfg.transport_max_line_bytes });
    }
    Ok(())
}

/// Does the file end in a torn line (a crash or a full disk cut its last
/// write short)? A missing or empty file does not.
fn tail_is_torn(path: &Path) -> Result<bool> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, e)),
    };
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1)).and_then(|_| f.read_exact(&mut last)).map_err(|e| Error::io(path, e))?;
    Ok(ends_torn(&last))
}

/// Does the file hold no complete first line (its header write was cut
/// short)? Looks at most one line cap into the file.
fn header_is_torn(path: &Path, cfg: &Config) -> Result<bool> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::new();
    let cap = u64::try_from(cfg.transport_max_line_bytes).unwrap_or(u64::MAX).saturating_add(1);
    BufReader::new(f).take(cap).read_until(b'\n', &mut head).map_err(|e| Error::io(path, e))?;
    Ok(!head.is_empty() && ends_torn(&head))
}

/// Append one line with a single `write(2)`; `fsync` when asked. A torn
/// last line is ended first (in the same write), so the fragment stays one
/// skipped line and the new line is intact.
pub fn append_line(path: &Path, line: &str, cfg: &Config, fsync: bool) -> Result<()> {
    check_line(line, cfg)?;
    let mut out = Appender::new(path.to_path_buf(), tail_is_torn(path)?);
    out.append(line.as_bytes())?;
    if fsync {
        out.sync_data()?;
    }
    Ok(())
}

/// Write the envelope header. First writer wins: a log that already has a
/// complete first line is left as it is; one holding only a torn fragment
/// gets the header after it.
pub fn ship_envelope(path: &Path, env: &Value, cfg: &Config) -> Result<()> {
    if std::fs::metadata(path).map(|m| m.len() > 0).unwrap_or(false) {
        if header_is_torn(path, cfg)? {
            return append_line(path, &envelope_line(env)?, cfg, false);
        }
        return Ok(());
    }
    let line = envelope_line(env)?;
    check_line(&line, cfg)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut f) => {
            f.write_all(format!("{line}\n").as_bytes()).map_err(|e| Error::io(path, e))?;
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Append a checkpoint line for `state` at `seq`.
pub fn ship_checkpoint(path: &Path, seq: i64, state: &Value, cfg: &Config) -> Result<()> {
    let (_, hash) = checked_state(state, cfg)?;
    append_line(path, &checkpoint_line(seq, state, &hash, &cfg.clock.now_iso())?, cfg, false)
}

/// One line of a log, as read.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A JSON object with a `type` field.
    Record(Value),
    /// A line that is not a transport record; the reason says why.
    Skipped(String),
}

/// Read every line. I/O errors opening the file are errors; bad lines are
/// [`Line::Skipped`], never fatal.
pub fn read_log(path: &Path, cfg: &Config) -> Result<Vec<Line>> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(parse_lines(&data, cfg))
}

/// Split and parse log bytes (see [`read_log`]).
pub fn parse_lines(data: &[u8], cfg: &Config) -> Vec<Line> {
    let mut out = Vec::new();
    for (i, raw) in data.split(|b| *b == b'\n').enumerate() {
        let lineno = i + 1;
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            continue;
        }
        if raw.len() > cfg.transport_max_line_bytes {
            out.push(Line::Skipped(format!("line {lineno}: exceeds max line bytes")));
            continue;
        }
        match json::parse_bytes(raw) {
            Ok(v) if v.get("type").is_some() && v.is_object() => out.push(Line::Record(v)),
            Ok(_) => out.push(Line::Skipped(format!("line {lineno}: not a transport record"))),
            Err(e) => out.push(Line::Skipped(format!("line {lineno}: {e}"))),
        }
    }
    out
}

/// Highest checkpoint seq in a log, -1 if none (or no file).
pub fn max_seq(path: &Path, cfg: &Config) -> i64 {
    let Ok(lines) = read_log(path, cfg) else { return -1 };
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Record(v) if v["type"] == "checkpoint" => v.get("seq").and_then(Value::as_i64),
            _ => None,
        })
        .max()
        .unwrap_or(-1)
}

/// What an ingest did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IngestReport {
    /// The handoff the log is about.
    pub handoff_id: String,
    /// Verified checkpoint lines (duplicates included, as the reference counts).
    pub checkpoints_ingested: usize,
    /// Rows that were new to this store.
    pub checkpoints_new: usize,
    /// Lines that were torn, not JSON or of an unknown type.
    pub lines_skipped: usize,
    /// The handoff was created by this ingest (it arrives pending).
    pub created: bool,
    /// The highest checkpoint seq in the store after ingest (-1 when none).
    pub max_seq: i64,
    /// Seqs missing below `max_seq` in the store after ingest.
    pub gaps: Vec<i64>,
}

/// Replay a log into a store: verified, idempotent, all-or-nothing.
pub fn ingest(store: &dyn Backend, path: &Path, cfg: &Config) -> Result<IngestReport> {
    let lines = read_log(path, cfg)?;
    ingest_lines(store, &lines, cfg)
}

/// [`ingest`] over lines already read.
pub fn ingest_lines(store: &dyn Backend, lines: &[Line], cfg: &Config) -> Result<IngestReport> {
    let mut env: Option<Value> = None;
    let mut hid: Option<String> = None;
    let mut rows: Vec<CheckpointRow> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut skipped = 0usize;
    for line in lines {
        let rec = match line {
            Line::Skipped(reason) => {
                tracing::warn!(%reason, "transport ingest: line skipped");
                skipped += 1;
                continue;
            }
            Line::Record(v) => v,
        };
        match rec["type"].as_str() {
            Some("envelope") => {
                let e = rec.get("envelope").cloned().unwrap_or(Value::Null);
                let h = envelope::verify(&e).map_err(|err| match err {
                    e @ Error::Tamper { .. } => e.tamper_within("transport log envelope"),
                    other => other,
                })?;
                match &hid {
                    Some(prev) if prev != &h => {
                        return Err(Error::tamper(format!("transport log mixes handoffs {prev} and {h}")));
                    }
                    Some(_) => {}
                    None => {
                        hid = Some(h);
                        env = Some(e);
                    }
                }
            }
            Some("checkpoint") => {
                let Some(owner) = hid.as_deref() else {
                    skipped += 1;
                    continue;
                };
                let (Some(state), Some(seq)) = (
                    rec.get("state").filter(|s| s.is_object()),
                    rec.get("seq").and_then(Value::as_i64).filter(|s| *s >= 0),
                ) else {
                    skipped += 1;
                    continue;
                };
                let (text, hash) = json::state_text_and_hash(state)?;
                if rec.get("state_hash").and_then(Value::as_str) != Some(hash.as_str()) {
                    return Err(Error::tamper(format!("transport log checkpoint {seq}: hash mismatch")));
                }
                let prev = chain::claimed_prev(rec, owner, seq)?.map(str::to_string);
                links.push(Link { seq, state_hash: hash.clone(), prev });
                let at = rec.get("at").and_then(Value::as_str).unwrap_or("").to_string();
                rows.push(CheckpointRow { seq, state_json: text, state_hash: hash, at });
            }
            _ => skipped += 1,
        }
    }
    let (Some(hid), Some(mut env)) = (hid, env) else {
        return Err(Error::transport(TransportKind::Log, "transport log has no envelope header"));
    };
    if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
        ex.insert("status".into(), json!("pending"));
    }
    let text = envelope_text(&env, cfg)?;
    let (created, new, max_seq, gaps) = with_tx(store, Mode::Write, |tx| {
        let created = tx.envelope(&hid)?.is_none() && tx.insert_envelope(&hid, &text, cfg.clock.store_time())?;
        // Rows already held are the truth: a line must agree with them.
        let stored: HashMap<i64, String> = if created || links.is_empty() {
            HashMap::new()
        } else {
            tx.checkpoints(&hid)?.into_iter().map(|r| (r.seq, r.state_hash)).collect()
        };
        chain::verify_links(&links, &stored)?;
        let mut new = 0;
        for r in &rows {
            new += usize::from(tx.insert_checkpoint(&hid, r)?);
        }
        // inside the write transaction: the stalled-writer test stops here
        crate::failpoint::hit("ingest.in_tx");
        let next = tx.next_seq(&hid)?;
        let count = tx.checkpoint_count(&hid)?;
        let gaps = if count == next {
            Vec::new()
        } else {
            let have: std::collections::HashSet<i64> = tx.checkpoints(&hid)?.into_iter().map(|r| r.seq).collect();
            (0..next).filter(|s| !have.contains(s)).collect()
        };
        Ok((created, new, next - 1, gaps))
    })?;
    tracing::info!(hid = crate::id::short(&hid), ingested = rows.len(), new, skipped, "transport ingest");
    Ok(IngestReport {
        handoff_id: hid,
        checkpoints_ingested: rows.len(),
        checkpoints_new: new,
        lines_skipped: skipped,
        created,
        max_seq,
        gaps,
    })
}

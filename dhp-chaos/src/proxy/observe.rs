//! What the proxy saw the server acknowledge, written down as JSON lines
//! (one `write(2)` each) and read back by the checker.

use super::pump::Dir;
use super::Conn;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// A partial line longer than this is not a protocol frame: stop parsing it.
const MAX_FRAME: usize = 1 << 20;

pub(super) struct Recorder {
    file: Mutex<File>,
}

impl Recorder {
    pub(super) fn open(path: &Path) -> Result<Recorder> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening the proxy record {}", path.display()))?;
        Ok(Recorder { file: Mutex::new(file) })
    }

    fn write(&self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // a lost record only weakens the check (fewer acks to verify), never fakes a pass
        let _ = f.write_all(line.as_bytes());
    }
}

/// Splits one direction's byte stream into frames (newline-terminated JSON).
#[derive(Default)]
pub(super) struct Frames {
    partial: Vec<u8>,
    overrun: bool,
}

impl Frames {
    pub(super) fn feed(&mut self, rec: &Recorder, conn: &Conn, dir: Dir, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            if !self.overrun {
                self.partial.extend_from_slice(&rest[..i]);
                if let Ok(v) = serde_json::from_slice::<Value>(&self.partial) {
                    frame(rec, conn, dir, &v);
                }
            }
            self.partial.clear();
            self.overrun = false;
            rest = &rest[i + 1..];
        }
        if !self.overrun {
            self.partial.extend_from_slice(rest);
            if self.partial.len() > MAX_FRAME {
                self.partial.clear();
                self.overrun = true;
            }
        }
    }
}

fn frame(rec: &Recorder, conn: &Conn, dir: Dir, v: &Value) {
    let t = crate::hist::now();
    match dir {
        Dir::Up => match v["type"].as_str() {
            Some("hello") => {
                if let Some(h) = v["handoff_id"].as_str() {
                    *conn.hid.lock().unwrap_or_else(|p| p.into_inner()) = Some(h.to_string());
                }
            }
            Some("checkpoint") => {
                let hid = conn.hid.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let (Some(hid), Some(seq)) = (hid, v["seq"].as_i64()) {
                    rec.write(json!({"t": t, "event": "sent", "conn": conn.id, "hid": hid, "seq": seq}));
                }
            }
            _ => {}
        },
        Dir::Down => {
            if v["ok"].as_bool() != Some(true) {
                return;
            }
            let hid = conn.hid.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(hid) = hid else { return };
            if let Some(seq) = v["seq"].as_i64() {
                rec.write(json!({"t": t, "event": "ack", "conn": conn.id, "hid": hid, "seq": seq}));
            } else if let Some(seq) = v["ack_seq"].as_i64() {
                rec.write(json!({"t": t, "event": "hello-ack", "conn": conn.id, "hid": hid, "seq": seq}));
            }
        }
    }
}

/// One record of the proxy: `sent` (a checkpoint frame forwarded to the
/// server), `ack` (its ack forwarded back), `hello-ack` (every seq up to
/// `seq` held: the server's contiguous prefix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// When the proxy forwarded the frame, epoch seconds.
    pub t: f64,
    /// `sent`, `ack` or `hello-ack`.
    pub event: String,
    /// The proxy's id of the connection.
    pub conn: u64,
    /// The handoff the connection's hello named.
    pub hid: String,
    /// The checkpoint's seq (`hello-ack`: the top of the server's contiguous prefix).
    pub seq: i64,
}

/// The records in `path` (none if the file does not exist); a torn
/// last line (the harness killed mid-write) is skipped.
pub fn load_acks(path: &Path) -> Result<Vec<Ack>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

//! Operation history for the chaos checker (Jepsen style): every protocol
//! operation a process attempts is one JSON line `invoke`, then `ok` or
//! `fail`, with holder, fence, seq and wall time. Lines are written with one
//! `write(2)` each, so a SIGKILL loses at most the operation in flight.
//! The checker reads them as detail only: every verdict rests on what the
//! harness observed itself (docs/chaos/checker.md, "What the checker trusts").

use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall time in seconds since the epoch, as every history line carries it.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// An append-only history file shared by the threads of one process.
#[derive(Debug)]
pub struct History {
    file: Option<Mutex<File>>,
    process: String,
}

impl History {
    /// Record nothing.
    pub fn disabled() -> Self {
        History { file: None, process: String::new() }
    }

    /// Append to `path` as `process`.
    pub fn open(path: &Path, process: &str) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(History { file: Some(Mutex::new(file)), process: process.to_string() })
    }

    /// Record one event; `fields` is merged into the line.
    pub fn record(&self, op: &str, kind: &str, fields: Value) {
        let Some(f) = &self.file else { return };
        let mut line = json!({"t": now(), "pid": std::process::id(), "process": self.process, "op": op, "type": kind});
        if let (Some(m), Value::Object(extra)) = (line.as_object_mut(), fields) {
            m.extend(extra);
        }
        let mut text = line.to_string();
        text.push('\n');
        let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(text.as_bytes());
    }
}

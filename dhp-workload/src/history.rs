//! Operation history for the chaos checker (Jepsen style): every protocol
//! operation a process attempts is one JSON line `invoke`, then `ok` or
//! `fail`, with holder, fence, seq and wall time. Lines are written with one
//! `write(2)` each, so a SIGKILL loses at most the operation in flight.
//! The checker reads them as detail only: every verdict rests on what the
//! harness observed itself (docs/chaos/checker.md, "What the checker trusts").
//!
//! A line is a [`Line`]: the members every line has, typed, and the rest
//! as written; [`Line::parse`] holds it to `spec/chaos/history.schema.json`
//! (this crate's tests check the two agree, both ways).

use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall time in seconds since the epoch, as every history line carries it.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// A line's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An operation begins.
    Invoke,
    /// It succeeded.
    Ok,
    /// It failed.
    Fail,
    /// Not an operation (the harness's lines).
    Event,
}

impl Kind {
    /// Its name in a line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invoke => "invoke",
            Kind::Ok => "ok",
            Kind::Fail => "fail",
            Kind::Event => "event",
        }
    }

    /// The kind named `s`.
    pub fn from_name(s: &str) -> Option<Kind> {
        [Kind::Invoke, Kind::Ok, Kind::Fail, Kind::Event].into_iter().find(|k| k.as_str() == s)
    }
}

/// The process name of the harness's own lines.
pub const HARNESS: &str = "chaos";

/// The protocol operations the checker reads from processes under test.
pub const PROTOCOL_OPS: &[&str] = &["claim", "recover", "checkpoint", "complete"];

/// A history line that breaks `spec/chaos/history.schema.json`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("history line: {0}")]
pub struct LineError(String);

/// One history line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Wall-clock seconds since the epoch (the writer's clock).
    pub t: f64,
    /// The writer's pid.
    pub pid: i64,
    /// The id the harness gave the writer ([`HARNESS`] for itself).
    pub process: String,
    /// The operation (`claim`, …, `supervise`; the harness's `spawn`, `fault`, …).
    pub op: String,
    /// `invoke`, `ok`, `fail` or `event`.
    pub kind: Kind,
    /// The other members (`hid`, `holder`, `fence`, …), as written.
    pub fields: Map<String, Value>,
}

impl Line {
    /// A line of this process, now; `fields` (an object) adds its members.
    pub fn new(process: &str, op: &str, kind: Kind, fields: Value) -> Line {
        let fields = match fields {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Line { t: now(), pid: i64::from(std::process::id()), process: process.into(), op: op.into(), kind, fields }
    }

    /// The line as written (one JSON object; a member of `fields` named
    /// like one of the others is written over it, as writers always did).
    pub fn to_value(&self) -> Value {
        let mut v =
            json!({"t": self.t, "pid": self.pid, "process": self.process, "op": self.op, "type": self.kind.as_str()});
        if let Some(m) = v.as_object_mut() {
            m.extend(self.fields.clone());
        }
        v
    }

    /// Read a line as the history schema has it.
    pub fn parse(v: &Map<String, Value>) -> Result<Line, LineError> {
        let bad = |m: String| Err(LineError(m));
        let t = v.get("t").and_then(Value::as_f64).ok_or_else(|| LineError("t must be a number".into()))?;
        let pid = v.get("pid").and_then(Value::as_i64).ok_or_else(|| LineError("pid must be an integer".into()))?;
        let process = match v.get("process").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => p.to_string(),
            _ => return bad("process must be a non-empty string".into()),
        };
        let op =
            v.get("op").and_then(Value::as_str).ok_or_else(|| LineError("op must be a string".into()))?.to_string();
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .and_then(Kind::from_name)
            .ok_or_else(|| LineError("type must be invoke, ok, fail or event".into()))?;
        let fields: Map<String, Value> = v
            .iter()
            .filter(|(k, _)| !["t", "pid", "process", "op", "type"].contains(&k.as_str()))
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect();
        let line = Line { t, pid, process, op, kind, fields };
        line.check()?;
        Ok(line)
    }

    /// The schema's rules beyond the members every line has.
    fn check(&self) -> Result<(), LineError> {
        let f = &self.fields;
        let is = |k: &str, ok: fn(&Value) -> bool| f.get(k).is_none_or(ok);
        let uint = |x: &Value| x.is_u64();
        let int_or_null = |x: &Value| x.is_i64() || x.is_u64() || x.is_null();
        let mut wrong = Vec::new();
        if !is("hid", Value::is_string) {
            wrong.push("hid must be a string");
        }
        if !is("t_clock", Value::is_number) {
            wrong.push("t_clock must be a number");
        }
        if PROTOCOL_OPS.contains(&self.op.as_str()) {
            if !f.contains_key("hid") {
                wrong.push("a protocol operation names its hid");
            }
            if self.kind == Kind::Event {
                wrong.push("a protocol operation is invoke, ok or fail");
            }
            for (k, ok, why) in [
                ("holder", Value::is_string as fn(&Value) -> bool, "holder must be a string"),
                ("fence", |x: &Value| x.is_i64() || x.is_u64(), "fence must be an integer"),
                ("next_n", uint, "next_n must be an integer from 0"),
                ("seq", uint, "seq must be an integer from 0"),
                ("error", Value::is_string, "error must be a string"),
                ("result", Value::is_object, "result must be an object"),
            ] {
                if !is(k, ok) {
                    wrong.push(why);
                }
            }
        }
        if self.op == "supervise" {
            if self.kind != Kind::Ok {
                wrong.push("a supervise line is ok");
            }
            let reason = |x: &Value| matches!(x.as_str(), Some("lease-expired" | "worker-died" | "stalled"));
            let string_or_null = |x: &Value| x.is_string() || x.is_null();
            for (k, ok, why) in [
                ("action", Value::is_string as fn(&Value) -> bool, "action must be a string"),
                ("reason", reason, "reason must be lease-expired, worker-died or stalled"),
                ("previous_holder", string_or_null, "previous_holder must be a string or null"),
                ("previous_fence", int_or_null, "previous_fence must be an integer or null"),
                ("fence", int_or_null, "fence must be an integer or null"),
                ("checkpoints", uint, "checkpoints must be an integer from 0"),
            ] {
                if !is(k, ok) {
                    wrong.push(why);
                }
            }
            if matches!(f.get("action").and_then(Value::as_str), Some("orphaned" | "dlq")) && !f.contains_key("hid") {
                wrong.push("an orphan names its hid");
            }
        }
        if self.process == HARNESS && self.kind != Kind::Event {
            wrong.push("the harness's lines are events");
        }
        match wrong.is_empty() {
            true => Ok(()),
            false => Err(LineError(wrong.join("; "))),
        }
    }
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
    pub fn record(&self, op: &str, kind: Kind, fields: Value) {
        let Some(f) = &self.file else { return };
        let mut text = Line::new(&self.process, op, kind, fields).to_value().to_string();
        text.push('\n');
        let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(text.as_bytes());
    }
}

//! The round's history: JSON lines from every process under test (workers,
//! supervisors) in `history.jsonl`, and the harness's own events (process
//! `chaos`) in a file of its own, `harness.jsonl` ([`harness_path`]):
//! created 0600 and never passed to a child, so the judged cannot write the
//! judge's facts. A `chaos` line in `history.jsonl` is a forgery: [`load`]
//! drops it and counts it ([`History::forged`]). Written with one
//! `write(2)` per line on an `O_APPEND` descriptor, so lines from
//! concurrent processes do not interleave and a SIGKILL loses at most the
//! line in flight. History is detail, not the ground truth: verdicts rest
//! on the harness's own sources (its own file, the store audit, the workload
//! service, the processes it spawned); with `--impl-history off` only the
//! harness's own lines are read (CONTRACT.md §4).

use crate::error::{Error, Result};
use dhp_workload::history::{Kind, Line, HARNESS};
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Wall-clock seconds since the Unix epoch (same clock as every process).
pub fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// The `action` of a `supervise` line that the checker acts on
/// (CONTRACT.md §4: `orphaned` or `dlq`, the orphan rule's two outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// Orphaned: a standby may recover it.
    Orphaned,
    /// Dead-lettered (status failed).
    Dlq,
}

impl ActionKind {
    /// The action's text in a history line.
    pub fn parse(s: &str) -> Option<ActionKind> {
        match s {
            "orphaned" => Some(ActionKind::Orphaned),
            "dlq" => Some(ActionKind::Dlq),
            _ => None,
        }
    }
    /// An orphan or a dead-letter: the orphan rule's two outcomes.
    pub fn is_orphan_rule(self) -> bool {
        matches!(self, ActionKind::Orphaned | ActionKind::Dlq)
    }
}

/// The harness's own file beside the history file `history`:
/// `history.jsonl` → `harness.jsonl`, `net-history.jsonl` → `net-harness.jsonl`.
pub fn harness_path(history: &Path) -> PathBuf {
    let name = history.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let own = if name.contains("history") { name.replacen("history", "harness", 1) } else { format!("{name}.harness") };
    history.with_file_name(own)
}

/// The harness's own history writer: appends to [`harness_path`] of the
/// history file (which it creates empty, for the processes under test).
#[derive(Debug)]
pub struct Writer {
    file: File,
    pid: u32,
}

impl Writer {
    /// Create the history file at `path` for the processes under test and
    /// open the harness's own file beside it (0600) for appending.
    pub fn open(path: &Path) -> Result<Writer> {
        OpenOptions::new().create(true).append(true).open(path).map_err(Error::io("opening history", path))?;
        let own = harness_path(path);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&own)
            .map_err(Error::io("opening the harness's history", &own))?;
        Ok(Writer { file, pid: std::process::id() })
    }

    /// Record a harness event; returns its timestamp.
    pub fn record(&mut self, op: &str, fields: Value) -> f64 {
        let t = now();
        self.record_at(t, op, fields);
        t
    }

    /// Record a harness event stamped `t` (epoch seconds) instead of now.
    pub fn record_at(&mut self, t: f64, op: &str, fields: Value) {
        let mut line = Line::new(HARNESS, op, Kind::Event, fields);
        (line.t, line.pid) = (t, i64::from(self.pid));
        let mut text = line.to_value().to_string();
        text.push('\n');
        // One write per line; a failure here is a harness error surfaced later
        // by the checker as missing events, never silently "passing".
        if let Err(e) = self.file.write_all(text.as_bytes()) {
            eprintln!("dhp-chaos: cannot append to history: {e}");
        }
    }
}

/// One history line, with typed accessors.
#[derive(Debug, Clone)]
pub struct Ev {
    /// Position in the file (ties in `t` keep file order).
    pub idx: usize,
    /// The line's JSON object ([`load`] moves a faked clock's `t` to `t_clock`).
    pub v: Map<String, Value>,
    /// Read from the harness's own file ([`harness_path`]), not from what
    /// the processes under test write.
    pub harness: bool,
}

impl Ev {
    /// The event's time on the harness's clock, epoch seconds (0 when absent).
    pub fn t(&self) -> f64 {
        self.v.get("t").and_then(Value::as_f64).unwrap_or(0.0)
    }
    /// Field `k` as a string, if it is one.
    pub fn s(&self, k: &str) -> Option<&str> {
        self.v.get(k).and_then(Value::as_str)
    }
    /// Field `k` as an `i64`, if it is one.
    pub fn i(&self, k: &str) -> Option<i64> {
        self.v.get(k).and_then(Value::as_i64)
    }
    /// A `supervise` line's `action`, typed; `None` when absent or not one
    /// the checker acts on (a foreign supervisor's line is untrusted text).
    pub fn action(&self) -> Option<ActionKind> {
        self.s("action").and_then(ActionKind::parse)
    }
    /// Field `k` as a `u64`, if it is one.
    pub fn u(&self, k: &str) -> Option<u64> {
        self.v.get(k).and_then(Value::as_u64)
    }
    /// The writer's process id (-1 when absent).
    pub fn pid(&self) -> i64 {
        self.i("pid").unwrap_or(-1)
    }
    /// The operation (`claim`, `checkpoint`, `fault`, …; empty when absent).
    pub fn op(&self) -> &str {
        self.s("op").unwrap_or("")
    }
    /// The record type: `invoke`, `ok`, `fail` or `event` (empty when absent).
    pub fn ty(&self) -> &str {
        self.s("type").unwrap_or("")
    }
    /// The writing process's name (`chaos` for the harness; empty when absent).
    pub fn process(&self) -> &str {
        self.s("process").unwrap_or("")
    }
    /// The handoff the event concerns, if any.
    pub fn hid(&self) -> Option<&str> {
        self.s("hid")
    }
    /// Written by the harness itself: read from its own file (a `chaos`
    /// line in `history.jsonl` is a forgery [`load`] drops).
    pub fn is_chaos(&self) -> bool {
        self.harness
    }
    /// Field `k`, any JSON type.
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.v.get(k)
    }
}

/// Everything in a history file: parsed lines and the count of lines that
/// were not JSON objects (a torn write would show up here).
#[derive(Debug, Default)]
pub struct History {
    /// The lines that parsed as JSON objects, in file order.
    pub events: Vec<Ev>,
    /// Non-empty lines that were not JSON objects.
    pub malformed: usize,
    /// Lines of `history.jsonl` claiming to be the harness's (process
    /// `chaos`): written by a process under test, dropped.
    pub forged: usize,
    /// Lines kept that break spec/chaos/history.schema.json (read as
    /// [`Line`]): detail only, so they stay, and are counted.
    pub off_schema: usize,
}

/// Read a history file and the harness's own file beside it, putting the
/// events of processes on a faked clock back on the harness's clock; the
/// two are merged in time order (file order on ties, harness first). A
/// missing harness file means no harness facts (never the history's).
pub fn load(path: &Path) -> Result<History> {
    let data = std::fs::read(path).map_err(Error::io("reading history", path))?;
    let mut h = History::default();
    let mut theirs = parse(&data, false, &mut h.malformed);
    let before = theirs.len();
    theirs.retain(|e| e.process() != "chaos");
    h.forged = before - theirs.len();
    let own_path = harness_path(path);
    let own = match std::fs::read(&own_path) {
        Ok(d) => parse(&d, true, &mut h.malformed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io("reading the harness's history", &own_path)(e)),
    };
    unskew(&own, &mut theirs);
    h.off_schema = own.iter().chain(&theirs).filter(|e| Line::parse(&e.v).is_err()).count();
    h.events = own;
    h.events.extend(theirs);
    h.events.sort_by(|a, b| a.t().total_cmp(&b.t()));
    for (idx, e) in h.events.iter_mut().enumerate() {
        e.idx = idx;
    }
    Ok(h)
}

/// The JSON-object lines of `data`, counting the others in `malformed`.
fn parse(data: &[u8], harness: bool, malformed: &mut usize) -> Vec<Ev> {
    let mut out = Vec::new();
    for (idx, raw) in data.split(|b| *b == b'\n').enumerate() {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(raw) {
            Ok(Value::Object(v)) if !harness || v.get("process").and_then(Value::as_str) == Some("chaos") => {
                out.push(Ev { idx, v, harness })
            }
            _ => *malformed += 1,
        }
    }
    out
}

/// Processes started under a faked clock (`--clock`) wrote their history
/// in their own time: put their events back on the harness's clock (the
/// faked value is kept as `t_clock`), so every check compares real times.
fn unskew(own: &[Ev], theirs: &mut [Ev]) {
    use std::collections::HashMap;
    let skews: HashMap<String, (f64, crate::clock::Skew)> = own
        .iter()
        .filter(|e| e.op() == "spawn")
        .filter_map(|e| {
            let skew = serde_json::from_value(e.get("clock")?.clone()).ok()?;
            Some((e.s("name")?.to_string(), (e.t(), skew)))
        })
        .collect();
    if skews.is_empty() {
        return;
    }
    for e in theirs.iter_mut() {
        let Some((start, skew)) = skews.get(e.process()) else { continue };
        let t = e.t();
        e.v.insert("t_clock".into(), json!(t));
        e.v.insert("t".into(), json!(skew.real_time(*start, t)));
    }
}

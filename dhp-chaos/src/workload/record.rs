//! The workload service's record, read back by the checker.

use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// One chunk the service served.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// When it was served (epoch seconds, the harness's clock).
    pub t: f64,
    /// The token the worker must carry in the chunk's checkpoint.
    pub stamp: String,
    /// The handoff.
    pub hid: String,
    /// The chunk `[n, end)`.
    pub n: u64,
    /// End of the chunk (exclusive): the checkpoint's `next_n`.
    pub end: u64,
    /// Who asked (the runner id the harness gave the process).
    pub holder: String,
    /// The fence it said it held.
    pub fence: i64,
}

/// A round's record: every chunk served, and how many requests were refused.
#[derive(Debug, Default)]
pub struct Workload {
    /// In the order served.
    pub served: Vec<Served>,
    /// Requests the service refused (malformed, or no chunk of the round).
    pub refused: Vec<String>,
    by_stamp: HashMap<String, usize>,
}

impl Workload {
    /// The request that got `stamp`, if the service issued it.
    pub fn by_stamp(&self, stamp: &str) -> Option<&Served> {
        self.by_stamp.get(stamp).map(|&i| &self.served[i])
    }

    /// Chunks served to `holder` for `hid`, in order.
    pub fn served_to<'a>(&'a self, holder: &'a str, hid: &'a str) -> impl Iterator<Item = &'a Served> + 'a {
        self.served.iter().filter(move |s| s.holder == holder && s.hid == hid)
    }
}

/// Read `dir/workload.jsonl`; `None` when the round ran no service.
pub fn load(dir: &Path) -> Result<Option<Workload>> {
    let path = dir.join(super::FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("reading", &path)(e)),
    };
    let mut w = Workload::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        // the harness wrote every line whole; a torn last line (a harness
        // killed mid-write) is dropped
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if let Some(bad) = v.get("bad").and_then(Value::as_str) {
            w.refused.push(bad.to_string());
            continue;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        let u = |k: &str| v.get(k).and_then(Value::as_u64);
        if let (Some(stamp), Some(hid), Some(n), Some(end), Some(holder), Some(fence)) =
            (s("stamp"), s("hid"), u("n"), u("end"), s("holder"), v.get("fence").and_then(Value::as_i64))
        {
            let t = v.get("t").and_then(Value::as_f64).unwrap_or(0.0);
            w.by_stamp.insert(stamp.clone(), w.served.len());
            w.served.push(Served { t, stamp, hid, n, end, holder, fence });
        }
    }
    Ok(Some(w))
}

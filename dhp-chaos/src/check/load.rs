//! Reading a round directory: the SQLite store (read-only), and the saved report.

use super::report::RoundReport;
use crate::error::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One committed checkpoint of a handoff, as the store holds it.
#[derive(Debug, Clone)]
pub struct Ckpt {
    /// Its sequence number (continuous from 0 when intact).
    pub seq: i64,
    /// The `state_json` column as stored.
    pub state_json: String,
    /// The stored `state_hash` column (SHA-256 hex of `state_json`; the checkpoints invariant recomputes it).
    pub state_hash: String,
    /// `state_json` parsed (`Null` if it is not JSON).
    pub state: Value,
}

/// One handoff of the store: its envelope, checkpoints and ownership row.
#[derive(Debug, Clone)]
pub struct Handoff {
    /// The handoff id.
    pub hid: String,
    /// The envelope as stored.
    pub env: Value,
    /// The envelope's `execution.status` (empty when absent).
    pub status: String,
    /// Its checkpoints, by `seq`.
    pub ckpts: Vec<Ckpt>,
    /// The ownership row (holder, fence), if there is one.
    pub own: Option<(String, i64)>,
}

impl Handoff {
    /// The store holds the checkpoint an acknowledgement named: its `seq`
    /// and the chunk (`next_n`) it carried, where the acknowledgement says.
    pub(crate) fn holds_checkpoint(&self, seq: Option<i64>, next_n: Option<u64>) -> bool {
        self.ckpts
            .iter()
            .any(|c| seq.is_none_or(|s| s == c.seq) && next_n.is_none_or(|n| c.state["next_n"].as_u64() == Some(n)))
    }
}

/// Read a SQLite store (read-only).
pub(crate) fn load_store(db: &Path) -> Result<BTreeMap<String, Handoff>> {
    let cx = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|source| Error::Sqlite { doing: format!("opening store {}", db.display()), source })?;
    let (handoffs, ckpts, owns) = read_tables(&cx)
        .map_err(|source| Error::Sqlite { doing: format!("reading store {}", db.display()), source })?;
    let mut out = BTreeMap::new();
    for (hid, text) in handoffs {
        let env: Value = serde_json::from_str(&text).map_err(|source| Error::Envelope { hid: hid.clone(), source })?;
        let status = env.pointer("/execution/status").and_then(Value::as_str).unwrap_or("").to_string();
        out.insert(hid.clone(), Handoff { hid, env, status, ckpts: Vec::new(), own: None });
    }
    for (hid, seq, state_json, state_hash) in ckpts {
        let state = serde_json::from_str(&state_json).unwrap_or(Value::Null);
        if let Some(h) = out.get_mut(&hid) {
            h.ckpts.push(Ckpt { seq, state_json, state_hash, state });
        }
    }
    for (hid, holder, fence) in owns {
        if let Some(h) = out.get_mut(&hid) {
            h.own = Some((holder, fence));
        }
    }
    Ok(out)
}

type Tables = (Vec<(String, String)>, Vec<(String, i64, String, String)>, Vec<(String, String, i64)>);

/// The handoffs, checkpoints and ownership rows of a SQLite store.
fn read_tables(cx: &Connection) -> rusqlite::Result<Tables> {
    cx.busy_timeout(std::time::Duration::from_secs(10))?;
    let mut st = cx.prepare("SELECT hid, envelope_json FROM handoffs")?;
    let handoffs = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    let mut st = cx.prepare("SELECT hid, seq, state_json, state_hash FROM checkpoints ORDER BY hid, seq")?;
    let ckpts =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect::<rusqlite::Result<_>>()?;
    let mut st = cx.prepare("SELECT hid, holder, fence FROM ownership")?;
    let owns = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<rusqlite::Result<_>>()?;
    Ok((handoffs, ckpts, owns))
}

/// The JSON export of a PostgreSQL round's store (`store/export.json`,
/// written by [`crate::pg::export`]), read into the same structures.
pub fn load_export(path: &Path) -> Result<BTreeMap<String, Handoff>> {
    let bytes = std::fs::read(path).map_err(Error::io("reading", path))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: path.into(), source })?;
    let bad = |problem: String| Error::CheckerInput { path: path.into(), problem };
    let rows = |table: &str| -> Result<Vec<Value>> {
        v.get(table).and_then(Value::as_array).cloned().ok_or_else(|| bad(format!("no {table} array")))
    };
    let text = |r: &Value, k: &str| -> Result<String> {
        r.get(k).and_then(Value::as_str).map(String::from).ok_or_else(|| bad(format!("row without {k}: {r}")))
    };
    let int = |r: &Value, k: &str| -> Result<i64> {
        r.get(k).and_then(Value::as_i64).ok_or_else(|| bad(format!("row without {k}: {r}")))
    };
    let mut out = BTreeMap::new();
    for r in rows("handoffs")? {
        let hid = text(&r, "hid")?;
        let env: Value = serde_json::from_str(&text(&r, "envelope_json")?)
            .map_err(|source| Error::Envelope { hid: hid.clone(), source })?;
        let status = env.pointer("/execution/status").and_then(Value::as_str).unwrap_or("").to_string();
        out.insert(hid.clone(), Handoff { hid, env, status, ckpts: Vec::new(), own: None });
    }
    for r in rows("checkpoints")? {
        let (hid, state_json) = (text(&r, "hid")?, text(&r, "state_json")?);
        let state = serde_json::from_str(&state_json).unwrap_or(Value::Null);
        if let Some(h) = out.get_mut(&hid) {
            h.ckpts.push(Ckpt { seq: int(&r, "seq")?, state_json, state_hash: text(&r, "state_hash")?, state });
        }
    }
    for h in out.values_mut() {
        h.ckpts.sort_by_key(|c| c.seq);
    }
    for r in rows("ownership")? {
        if let Some(h) = out.get_mut(&text(&r, "hid")?) {
            h.own = Some((text(&r, "holder")?, int(&r, "fence")?));
        }
    }
    Ok(out)
}

/// The round's store: the PostgreSQL export when the round ran on
/// PostgreSQL, else the SQLite file.
pub fn load_round_store(store_dir: &Path) -> Result<BTreeMap<String, Handoff>> {
    let export = store_dir.join("export.json");
    if export.exists() {
        load_export(&export)
    } else {
        load_store(&store_dir.join("dhp.sqlite3"))
    }
}

/// Leftover check for `analyze`: is this a round directory?
pub fn is_round_dir(p: &Path) -> bool {
    p.join("round.json").exists() && p.join("history.jsonl").exists()
}

/// A round directory a nightly pruned after it passed: `round.json` and
/// `round-report.json` kept, the history and the store removed.
pub fn is_pruned_round_dir(p: &Path) -> bool {
    p.join("round.json").exists() && p.join("round-report.json").exists() && !p.join("history.jsonl").exists()
}

/// The report saved in a round directory (`round-report.json`).
pub fn load_saved_report(dir: &Path) -> Result<RoundReport> {
    let path = dir.join("round-report.json");
    let bytes = std::fs::read(&path).map_err(Error::io("reading", &path))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::CheckerInput { path: path.clone(), problem: format!("not a round report: {e}") })
}

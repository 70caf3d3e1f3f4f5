//! The runner's own reader of the standard store (`<root>/dhp.sqlite3`,
//! schema v3): what the implementation reports is checked against what it
//! actually wrote.

use crate::check::{Check, Fail};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One checkpoint row.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRow {
    pub seq: i64,
    pub state_json: String,
    pub state_hash: String,
    pub at: String,
}

/// One ownership row.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnershipRow {
    pub holder: String,
    pub fence: i64,
    pub lease_expires_at: f64,
}

/// A connection to a standard store, opened without creating anything.
pub struct StoreView {
    conn: Connection,
    path: PathBuf,
}

impl StoreView {
    /// Open `<root>/dhp.sqlite3`; a missing file fails the assertion (the
    /// adapter declared `standard-store`).
    pub fn open(root: &Path) -> Check<StoreView> {
        let path = root.join("dhp.sqlite3");
        if !path.exists() {
            return Err(Fail::failed(format!("adapter declares standard-store but {} does not exist", path.display())));
        }
        let conn =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        Ok(StoreView { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The stored envelope JSON, parsed.
    pub fn envelope(&self, hid: &str) -> Check<Option<Value>> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT envelope_json FROM handoffs WHERE hid=?1", params![hid], |r| r.get(0))
            .optional()?;
        text.map(|t| {
            serde_json::from_str::<Value>(&t)
                .map_err(|e| Fail::failed(format!("handoffs.envelope_json is not JSON: {e}")))
        })
        .transpose()
    }

    /// The stored envelope, which must exist.
    pub fn must_envelope(&self, hid: &str) -> Check<Value> {
        self.envelope(hid)?.ok_or_else(|| Fail::failed(format!("store has no handoffs row for {}", short(hid))))
    }

    /// `execution.status` of the stored envelope.
    pub fn status(&self, hid: &str) -> Check<String> {
        Ok(self.must_envelope(hid)?.pointer("/execution/status").and_then(Value::as_str).unwrap_or("").to_string())
    }

    pub fn handoff_count(&self) -> Check<i64> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM handoffs", [], |r| r.get(0))?)
    }

    /// Checkpoint rows in seq order.
    pub fn checkpoints(&self, hid: &str) -> Check<Vec<CheckpointRow>> {
        let mut st =
            self.conn.prepare("SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=?1 ORDER BY seq")?;
        let rows = st
            .query_map(params![hid], |r| {
                Ok(CheckpointRow { seq: r.get(0)?, state_json: r.get(1)?, state_hash: r.get(2)?, at: r.get(3)? })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Checkpoint rows, each checked: `state_json` is Python's
    /// `json.dumps(state, sort_keys=True)` and `state_hash` its SHA-256.
    /// Returns the parsed states in seq order.
    pub fn verified_states(&self, hid: &str) -> Check<Vec<(i64, Value)>> {
        let mut out = Vec::new();
        for row in self.checkpoints(hid)? {
            let state: Value = serde_json::from_str(&row.state_json)
                .map_err(|e| Fail::failed(format!("checkpoint {} state_json is not JSON: {e}", row.seq)))?;
            let text = dhp_oracle::json::sorted(&state).map_err(|e| Fail::failed(e.to_string()))?;
            crate::ensure!(
                text == row.state_json,
                "checkpoint {} state_json {:?} is not json.dumps(state, sort_keys=True) {:?}",
                row.seq,
                row.state_json,
                text
            );
            let hash = dhp_oracle::sha256_hex(row.state_json.as_bytes());
            crate::ensure!(
                hash == row.state_hash,
                "checkpoint {} state_hash {} != sha256(state_json) {}",
                row.seq,
                row.state_hash,
                hash
            );
            out.push((row.seq, state));
        }
        Ok(out)
    }

    pub fn ownership(&self, hid: &str) -> Check<Option<OwnershipRow>> {
        Ok(self
            .conn
            .query_row("SELECT holder, fence, lease_expires_at FROM ownership WHERE hid=?1", params![hid], |r| {
                Ok(OwnershipRow { holder: r.get(0)?, fence: r.get(1)?, lease_expires_at: r.get(2)? })
            })
            .optional()?)
    }

    /// `(holder, expires_at)` of the leadership row.
    pub fn leadership(&self) -> Check<Option<(String, f64)>> {
        Ok(self
            .conn
            .query_row("SELECT holder, expires_at FROM leadership WHERE id=1", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    pub fn max_schema_version(&self) -> Check<Option<i64>> {
        Ok(self.conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?)
    }

    /// `(step_id, result_json)` rows.
    pub fn effects(&self, hid: &str) -> Check<Vec<(String, String)>> {
        let mut st = self.conn.prepare("SELECT step_id, result_json FROM effects WHERE hid=?1 ORDER BY step_id")?;
        let rows = st.query_map(params![hid], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// `(domain, resource, granted)` rows in insertion order.
    pub fn capability_audit(&self, hid: &str) -> Check<Vec<(String, String, bool)>> {
        let mut st =
            self.conn.prepare("SELECT domain, resource, granted FROM capability_audit WHERE hid=?1 ORDER BY rowid")?;
        let rows = st
            .query_map(params![hid], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// First 12 characters of an id, for messages.
pub fn short(hid: &str) -> &str {
    hid.get(..12).unwrap_or(hid)
}

//! The runner's own reader of the standard store (`<root>/dhp.sqlite3`,
//! schema v3, or the same tables in a PostgreSQL schema, docs/postgres.md):
//! what the implementation reports is checked against what it actually
//! wrote. It uses rusqlite and the `postgres` client directly, never
//! dhp-core's store code.

use crate::check::{Check, Fail};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde_json::Value;
use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

/// One checkpoint row.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRow {
    /// 0, 1, 2, … per handoff.
    pub seq: i64,
    /// The state as stored (`json.dumps(sort_keys=True)` text).
    pub state_json: String,
    /// The stored hash of that text.
    pub state_hash: String,
    /// When it was written (ISO 8601 text).
    pub at: String,
}

/// One ownership row.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnershipRow {
    /// The worker id holding the lease (`__orphaned__` for a tombstone).
    pub holder: String,
    /// The fencing token.
    pub fence: i64,
    /// When the lease runs out (Unix seconds).
    pub lease_expires_at: f64,
}

/// A connection to a standard store, opened without creating anything:
/// the SQLite file of a directory, or a schema of a PostgreSQL database
/// (docs/postgres.md: the same tables and values), read with plain SQL.
pub struct StoreView {
    db: Db,
    location: String,
    /// Where the runner's own writes are written down, for messages.
    edits: Option<EditLog>,
}

/// The runner's direct edits of the stores of one assertion, in order:
/// a failure message names them (what the runner changed behind the
/// implementation's back, and so what the verdict rests on).
#[derive(Debug, Clone, Default)]
pub struct EditLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl EditLog {
    /// Write one edit down.
    pub fn push(&self, edit: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(edit);
    }

    /// The edits so far.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

enum Db {
    Sqlite(Connection),
    Postgres(Box<RefCell<postgres::Client>>),
}

/// One value from a PostgreSQL row, the type mismatch as a failure.
fn pg<'a, T: postgres::types::FromSql<'a>>(row: &'a postgres::Row, i: usize) -> Check<T> {
    row.try_get(i).map_err(Fail::from)
}

impl StoreView {
    /// Open the store at a location handed to the adapter: a directory
    /// (`<root>/dhp.sqlite3`) or a `postgres://…?schema=NAME` URL. A
    /// missing store fails the assertion (the adapter declared it).
    pub fn open_location(root: &str) -> Check<StoreView> {
        if crate::stores::is_postgres(root) {
            Self::open_postgres(root)
        } else {
            Self::open(Path::new(root))
        }
    }

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
        Ok(StoreView { db: Db::Sqlite(conn), location: path.to_string_lossy().into_owned(), edits: None })
    }

    /// Connect to the database of `url` and look only inside its schema.
    fn open_postgres(url: &str) -> Check<StoreView> {
        let (_, schema) = crate::stores::split_schema(url);
        let schema = schema.ok_or_else(|| Fail::Errored(format!("{}: no schema=", crate::stores::mask(url))))?;
        let mut c = crate::stores::client(url).map_err(|e| Fail::Errored(e.to_string()))?;
        let found = c
            .query_opt(
                "SELECT 1 FROM information_schema.tables WHERE table_schema=$1 AND table_name='handoffs'",
                &[&schema],
            )?
            .is_some();
        if !found {
            return Err(Fail::failed(format!(
                "adapter declares postgres-store but schema {schema} has no handoffs table"
            )));
        }
        // the schema name was made by the runner: [a-z0-9_] only
        c.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        Ok(StoreView { db: Db::Postgres(Box::new(RefCell::new(c))), location: format!("schema {schema}"), edits: None })
    }

    /// Write this view's edits down in `log` too.
    pub fn logging(mut self, log: EditLog) -> StoreView {
        self.edits = Some(log);
        self
    }

    /// Note one of the runner's writes: `sql` with its arguments as JSON.
    fn note(&self, sql: &str, args: &[serde_json::Value], rows: u64) {
        if let Some(log) = &self.edits {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            log.push(format!("{sql} [{}] ({rows} rows, {})", args.join(", "), self.location));
        }
    }

    /// The SQLite file, or `schema NAME`, for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Rows of a PostgreSQL query.
    fn pg_rows(
        &self,
        c: &RefCell<postgres::Client>,
        sql: &str,
        args: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Check<Vec<postgres::Row>> {
        Ok(c.borrow_mut().query(sql, args)?)
    }

    /// The stored envelope JSON, parsed.
    pub fn envelope(&self, hid: &str) -> Check<Option<Value>> {
        let text: Option<String> = match &self.db {
            Db::Sqlite(conn) => conn
                .query_row("SELECT envelope_json FROM handoffs WHERE hid=?1", params![hid], |r| r.get(0))
                .optional()?,
            Db::Postgres(c) => {
                match self.pg_rows(c, "SELECT envelope_json FROM handoffs WHERE hid=$1", &[&hid])?.first() {
                    Some(r) => Some(pg(r, 0)?),
                    None => None,
                }
            }
        };
        text.map(|t| {
            serde_json::from_str::<Value>(&t)
                .map_err(|e| Fail::failed(format!("handoffs.envelope_json is not JSON: {e}")))
        })
        .transpose()
    }

    /// The stored `handoffs.envelope_json` text, as written.
    pub fn envelope_text(&self, hid: &str) -> Check<Option<String>> {
        Ok(match &self.db {
            Db::Sqlite(conn) => conn
                .query_row("SELECT envelope_json FROM handoffs WHERE hid=?1", params![hid], |r| r.get(0))
                .optional()?,
            Db::Postgres(c) => {
                match self.pg_rows(c, "SELECT envelope_json FROM handoffs WHERE hid=$1", &[&hid])?.first() {
                    Some(r) => Some(pg(r, 0)?),
                    None => None,
                }
            }
        })
    }

    /// The journal mode the SQLite file's header records (`"wal"` when
    /// bytes 18 and 19, the file format write and read versions, are 2;
    /// `"rollback"` when they are 1); `None` on PostgreSQL. Read from the
    /// file, so asking changes nothing.
    pub fn journal_mode(&self) -> Check<Option<String>> {
        if !matches!(self.db, Db::Sqlite(_)) {
            return Ok(None);
        }
        let mut head = [0u8; 20];
        let mut f = std::fs::File::open(&self.location)?;
        std::io::Read::read_exact(&mut f, &mut head)?;
        Ok(Some(match (head[18], head[19]) {
            (2, 2) => "wal".to_string(),
            (1, 1) => "rollback".to_string(),
            (w, r) => format!("unknown (header bytes 18, 19 = {w}, {r})"),
        }))
    }

    /// The stored envelope, which must exist.
    pub fn must_envelope(&self, hid: &str) -> Check<Value> {
        self.envelope(hid)?.ok_or_else(|| Fail::failed(format!("store has no handoffs row for {}", short(hid))))
    }

    /// `execution.status` of the stored envelope.
    pub fn status(&self, hid: &str) -> Check<String> {
        Ok(self.must_envelope(hid)?.pointer("/execution/status").and_then(Value::as_str).unwrap_or("").to_string())
    }

    /// How many handoffs the store holds.
    pub fn handoff_count(&self) -> Check<i64> {
        match &self.db {
            Db::Sqlite(conn) => Ok(conn.query_row("SELECT COUNT(*) FROM handoffs", [], |r| r.get(0))?),
            Db::Postgres(c) => {
                self.pg_rows(c, "SELECT COUNT(*) FROM handoffs", &[])?.first().map_or(Ok(0), |r| pg(r, 0))
            }
        }
    }

    /// Checkpoint rows in seq order.
    pub fn checkpoints(&self, hid: &str) -> Check<Vec<CheckpointRow>> {
        const SQL: &str = "SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=$1 ORDER BY seq";
        match &self.db {
            Db::Sqlite(conn) => {
                let mut st = conn.prepare(&SQL.replace("$1", "?1"))?;
                let rows = st
                    .query_map(params![hid], |r| {
                        Ok(CheckpointRow {
                            seq: r.get(0)?,
                            state_json: r.get(1)?,
                            state_hash: r.get(2)?,
                            at: r.get(3)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            }
            Db::Postgres(c) => self
                .pg_rows(c, SQL, &[&hid])?
                .iter()
                .map(|r| {
                    Ok(CheckpointRow { seq: pg(r, 0)?, state_json: pg(r, 1)?, state_hash: pg(r, 2)?, at: pg(r, 3)? })
                })
                .collect(),
        }
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

    /// The ownership row of `hid`, if any.
    pub fn ownership(&self, hid: &str) -> Check<Option<OwnershipRow>> {
        const SQL: &str = "SELECT holder, fence, lease_expires_at FROM ownership WHERE hid=$1";
        match &self.db {
            Db::Sqlite(conn) => Ok(conn
                .query_row(&SQL.replace("$1", "?1"), params![hid], |r| {
                    Ok(OwnershipRow { holder: r.get(0)?, fence: r.get(1)?, lease_expires_at: r.get(2)? })
                })
                .optional()?),
            Db::Postgres(c) => self
                .pg_rows(c, SQL, &[&hid])?
                .first()
                .map(|r| Ok(OwnershipRow { holder: pg(r, 0)?, fence: pg(r, 1)?, lease_expires_at: pg(r, 2)? }))
                .transpose(),
        }
    }

    /// `(holder, expires_at)` of the leadership row.
    pub fn leadership(&self) -> Check<Option<(String, f64)>> {
        const SQL: &str = "SELECT holder, expires_at FROM leadership WHERE id=1";
        match &self.db {
            Db::Sqlite(conn) => Ok(conn.query_row(SQL, [], |r| Ok((r.get(0)?, r.get(1)?))).optional()?),
            Db::Postgres(c) => self.pg_rows(c, SQL, &[])?.first().map(|r| Ok((pg(r, 0)?, pg(r, 1)?))).transpose(),
        }
    }

    /// The highest `schema_version` row (`None`: the table is empty).
    pub fn max_schema_version(&self) -> Check<Option<i64>> {
        const SQL: &str = "SELECT MAX(version) FROM schema_version";
        match &self.db {
            Db::Sqlite(conn) => Ok(conn.query_row(SQL, [], |r| r.get(0))?),
            Db::Postgres(c) => self.pg_rows(c, SQL, &[])?.first().map_or(Ok(None), |r| pg(r, 0)),
        }
    }

    /// Add a `schema_version` row (to simulate a store written by a newer
    /// implementation).
    pub fn add_schema_version(&self, version: i64, applied_at: f64) -> Check {
        const SQL: &str = "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)";
        let n = match &self.db {
            Db::Sqlite(conn) => conn.execute(&SQL.replace('$', "?"), params![version, applied_at])? as u64,
            Db::Postgres(c) => c.borrow_mut().execute(SQL, &[&version, &applied_at])?,
        };
        self.note(SQL, &[version.into(), applied_at.into()], n);
        Ok(())
    }

    /// Remove the `schema_version` row `version` (undoing
    /// [`StoreView::add_schema_version`]); the rows removed.
    pub fn drop_schema_version(&self, version: i64) -> Check<u64> {
        const SQL: &str = "DELETE FROM schema_version WHERE version = $1";
        let n = match &self.db {
            Db::Sqlite(conn) => conn.execute(&SQL.replace('$', "?"), params![version])? as u64,
            Db::Postgres(c) => c.borrow_mut().execute(SQL, &[&version])?,
        };
        self.note(SQL, &[version.into()], n);
        Ok(n)
    }

    /// Make the store read as one of an older version: `schema_version`
    /// holds the single row `version` (the tables stay as they are; every
    /// migration to 3 is additive).
    pub fn set_schema_version(&self, version: i64, applied_at: f64) -> Check {
        const SQL: &str = "DELETE FROM schema_version";
        let n = match &self.db {
            Db::Sqlite(conn) => conn.execute(SQL, [])? as u64,
            Db::Postgres(c) => c.borrow_mut().execute(SQL, &[])?,
        };
        self.note(SQL, &[], n);
        self.add_schema_version(version, applied_at)
    }

    /// Move the leadership term's end to `expires_at` (a term about to run
    /// out, without waiting for it); the rows changed.
    pub fn set_leadership_expiry(&self, expires_at: f64) -> Check<u64> {
        const SQL: &str = "UPDATE leadership SET expires_at = $1 WHERE id = 1";
        self.update(SQL, expires_at, None)
    }

    /// Insert an ownership row for `hid` held by `holder` at `fence`, with
    /// a lease that runs 60 s: what a claim killed between its two writes
    /// leaves behind (the reference writes the row before the envelope).
    pub fn insert_ownership(&self, hid: &str, holder: &str, fence: i64, now: f64) -> Check {
        const SQL: &str = "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, \
                           max_missed, updated_at) VALUES ($1, $2, $3, $4, 2.0, 3, $5)";
        let lease = now + 60.0;
        let n = match &self.db {
            Db::Sqlite(conn) => conn.execute(&SQL.replace('$', "?"), params![hid, holder, fence, lease, now])? as u64,
            Db::Postgres(c) => c.borrow_mut().execute(SQL, &[&hid, &holder, &fence, &lease, &now])?,
        };
        self.note(SQL, &[hid.into(), holder.into(), fence.into(), lease.into(), now.into()], n);
        Ok(())
    }

    /// Set the lease terms stored in a handoff's ownership row (what a
    /// claim made with other settings leaves); the rows changed.
    pub fn set_lease_terms(&self, hid: &str, heartbeat_interval_s: f64, max_missed: i64) -> Check<u64> {
        const SQL: &str = "UPDATE ownership SET heartbeat_interval_s = $1, max_missed = $2 WHERE hid = $3";
        let n = match &self.db {
            Db::Sqlite(conn) => {
                conn.execute(&SQL.replace('$', "?"), params![heartbeat_interval_s, max_missed, hid])? as u64
            }
            Db::Postgres(c) => c.borrow_mut().execute(SQL, &[&heartbeat_interval_s, &max_missed, &hid])?,
        };
        self.note(SQL, &[heartbeat_interval_s.into(), max_missed.into(), hid.into()], n);
        Ok(n)
    }

    /// Move the `updated_at` stamps of a handoff's `handoffs` and
    /// `ownership` rows `secs` back (its claim is old news, without
    /// waiting); the rows changed.
    pub fn backdate_stamps(&self, hid: &str, secs: f64) -> Check<u64> {
        let a = self.update("UPDATE handoffs SET updated_at = updated_at - $1 WHERE hid = $2", secs, Some(hid))?;
        let b = self.update("UPDATE ownership SET updated_at = updated_at - $1 WHERE hid = $2", secs, Some(hid))?;
        Ok(a + b)
    }

    /// Date a handoff's last checkpoint back to `at` (its stall clock ran
    /// out, without waiting for it); the rows changed.
    pub fn set_last_checkpoint_at(&self, hid: &str, at: f64) -> Check<u64> {
        const SQL: &str = "UPDATE progress SET last_checkpoint_at = $1 WHERE hid = $2";
        self.update(SQL, at, Some(hid))
    }

    fn update(&self, sql: &str, x: f64, hid: Option<&str>) -> Check<u64> {
        let n = match (&self.db, hid) {
            (Db::Sqlite(conn), None) => conn.execute(&sql.replace('$', "?"), params![x])? as u64,
            (Db::Sqlite(conn), Some(h)) => conn.execute(&sql.replace('$', "?"), params![x, h])? as u64,
            (Db::Postgres(c), None) => c.borrow_mut().execute(sql, &[&x])?,
            (Db::Postgres(c), Some(h)) => c.borrow_mut().execute(sql, &[&x, &h])?,
        };
        let mut args = vec![serde_json::Value::from(x)];
        args.extend(hid.map(serde_json::Value::from));
        self.note(sql, &args, n);
        Ok(n)
    }

    /// `(created_at, expires_at)` of an approval row.
    pub fn approval_term(&self, approval_id: &str) -> Check<Option<(f64, f64)>> {
        const SQL: &str = "SELECT created_at, expires_at FROM approvals WHERE approval_id=$1";
        match &self.db {
            Db::Sqlite(conn) => Ok(conn
                .query_row(&SQL.replace("$1", "?1"), params![approval_id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?),
            Db::Postgres(c) => {
                self.pg_rows(c, SQL, &[&approval_id])?.first().map(|r| Ok((pg(r, 0)?, pg(r, 1)?))).transpose()
            }
        }
    }

    /// `(step_id, result_json)` rows.
    pub fn effects(&self, hid: &str) -> Check<Vec<(String, String)>> {
        const SQL: &str = "SELECT step_id, result_json FROM effects WHERE hid=$1 ORDER BY step_id";
        match &self.db {
            Db::Sqlite(conn) => {
                let mut st = conn.prepare(&SQL.replace("$1", "?1"))?;
                let rows =
                    st.query_map(params![hid], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            }
            Db::Postgres(c) => self.pg_rows(c, SQL, &[&hid])?.iter().map(|r| Ok((pg(r, 0)?, pg(r, 1)?))).collect(),
        }
    }

    /// `(domain, resource, granted)` rows in insertion order (PostgreSQL
    /// has no rowid: by time, then physical order, which is insertion
    /// order in a table that is only appended to).
    pub fn capability_audit(&self, hid: &str) -> Check<Vec<(String, String, bool)>> {
        match &self.db {
            Db::Sqlite(conn) => {
                let mut st =
                    conn.prepare("SELECT domain, resource, granted FROM capability_audit WHERE hid=?1 ORDER BY rowid")?;
                let rows = st
                    .query_map(params![hid], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0)))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            }
            Db::Postgres(c) => self
                .pg_rows(
                    c,
                    "SELECT domain, resource, granted FROM capability_audit WHERE hid=$1 ORDER BY at, ctid",
                    &[&hid],
                )?
                .iter()
                .map(|r| Ok((pg(r, 0)?, pg(r, 1)?, pg::<i64>(r, 2)? != 0)))
                .collect(),
        }
    }
}

/// First 12 characters of an id, for messages.
pub fn short(hid: &str) -> &str {
    hid.get(..12).unwrap_or(hid)
}

//! Read-only views of a store for `dhp dashboard` (docs/dashboard.md).
//!
//! [`View`] opens its own connection that cannot write: a SQLite store
//! with `SQLITE_OPEN_READ_ONLY` and `PRAGMA query_only`, a PostgreSQL
//! store in a session whose transactions are all `READ ONLY`
//! (`default_transaction_read_only=on`, refused by the server otherwise).
//! Nothing here runs DDL or a migration, so a dashboard never changes the
//! store it shows, not even its schema.
//!
//! Every query is bounded by an index (docs/dashboard.md, "Cost"): a page
//! is a keyset range of at most `limit` rows, on the primary key or on
//! the status index; what changed since the last look comes from the
//! `updated_at` indexes and the rowid of the append-only tables; an idle
//! SQLite store is noticed with `PRAGMA data_version` alone (no table is
//! read while nothing was committed).

use crate::error::{Error, Result};
use crate::store::location::StoreLocation;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most rows one page returns.
pub const MAX_PAGE: usize = 500;
/// Most checkpoints a detail view lists (the newest).
pub const DETAIL_CHECKPOINTS: usize = 200;
/// Most effects, approvals or audit rows a detail view lists.
pub const DETAIL_ROWS: usize = 200;
/// Most rows one delta carries; more changed rows make it `truncated`
/// (the page then reloads the rows it shows).
pub const MAX_DELTA_ROWS: usize = 2_000;
/// How far back (seconds) each look at the `updated_at` indexes reaches
/// before the newest stamp already seen: a writer's clock a little behind
/// ours, or a transaction that committed after a later one began, is
/// still seen. Rows seen before are told apart by their stamp.
pub const SLACK_S: f64 = 2.0;

/// The statuses a handoff may have, in the order the page shows them.
pub const STATUSES: [&str; 6] = ["pending", "running", "suspended", "orphaned", "completed", "failed"];

/// `execution.status` of `handoffs h`, spelled exactly as the expression of
/// the `dhprs_handoffs_status` index (see `sqlite/ddl.rs`) so that a query
/// on it reads the index.
const STATUS: &str =
    "(CASE WHEN json_valid(h.envelope_json) THEN json_extract(h.envelope_json, '$.execution.status') END)";

/// A member of the envelope, NULL when the envelope is not valid JSON.
fn member(path: &str) -> String {
    format!("(CASE WHEN json_valid(h.envelope_json) THEN json_extract(h.envelope_json, '{path}') END)")
}

/// The columns of a [`Row`], over `handoffs h LEFT JOIN ownership o`.
fn row_cols() -> String {
    format!(
        "h.hid, {STATUS}, {}, {}, o.holder, o.fence, o.lease_expires_at, h.updated_at, \
         (SELECT COALESCE(MAX(c.seq) + 1, 0) FROM checkpoints c WHERE c.hid = h.hid), {}, {}, {}",
        member("$.task.kind"),
        member("$.execution.attempt"),
        member("$.execution.error"),
        member("$.execution.orphan_reason"),
        member("$.execution.runner_id"),
    )
}

/// One handoff as a list shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// The handoff id.
    pub hid: String,
    /// `execution.status`; `None` for an unreadable envelope.
    pub status: Option<String>,
    /// `task.kind`.
    pub kind: Value,
    /// `execution.attempt`.
    pub attempt: Value,
    /// The ownership row's holder (`__orphaned__` once orphaned).
    pub holder: Option<String>,
    /// The fencing token.
    pub fence: Option<i64>,
    /// When the lease runs out (store clock, Unix seconds).
    pub lease_expires_at: Option<f64>,
    /// When the handoff row was last written (Unix seconds).
    pub updated_at: f64,
    /// How many checkpoints it has.
    pub checkpoints: i64,
    /// `execution.error`: why a failed handoff is in the DLQ.
    pub error: Value,
    /// `execution.orphan_reason`: why it was last orphaned.
    pub orphan_reason: Value,
    /// `execution.runner_id`: the last runner that claimed or recovered it.
    pub runner_id: Value,
}

fn sql_json(v: SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => json!(i),
        SqlValue::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        SqlValue::Text(t) => Value::String(t),
        SqlValue::Blob(b) => Value::String(hex::encode(b)),
    }
}

fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let text = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(match r.get::<_, SqlValue>(i)? {
            SqlValue::Text(t) => Some(t),
            SqlValue::Null => None,
            other => Some(sql_json(other).to_string()),
        })
    };
    Ok(Row {
        hid: r.get(0)?,
        status: text(1)?,
        kind: sql_json(r.get(2)?),
        attempt: sql_json(r.get(3)?),
        holder: r.get(4)?,
        fence: r.get(5)?,
        lease_expires_at: r.get(6)?,
        updated_at: r.get::<_, Option<f64>>(7)?.unwrap_or(0.0),
        checkpoints: r.get(8)?,
        error: sql_json(r.get(9)?),
        orphan_reason: sql_json(r.get(10)?),
        runner_id: sql_json(r.get(11)?),
    })
}

/// Which handoffs a page lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only this status.
    pub status: Option<String>,
    /// Only ids starting with these hex digits.
    pub hid_prefix: Option<String>,
    /// Only handoffs whose ownership row names this holder.
    pub holder: Option<String>,
}

impl Filter {
    /// A filter from the page's status and search box: a search of hex
    /// digits (at most 64) is an id prefix, anything else a holder id.
    /// An unknown status is refused.
    pub fn new(status: Option<&str>, search: Option<&str>) -> Result<Filter> {
        let status = status.map(str::trim).filter(|s| !s.is_empty() && *s != "all");
        if let Some(s) = status {
            if !STATUSES.contains(&s) {
                return Err(Error::validation(format!("unknown status {s:?} (one of {})", STATUSES.join(", "))));
            }
        }
        let search = search.map(str::trim).filter(|s| !s.is_empty());
        let (mut hid_prefix, mut holder) = (None, None);
        if let Some(q) = search {
            if q.len() > 256 {
                return Err(Error::validation("the search is longer than 256 characters"));
            }
            if q.len() <= 64 && q.bytes().all(|b| b.is_ascii_hexdigit()) {
                hid_prefix = Some(q.to_ascii_lowercase());
            } else {
                holder = Some(q.to_string());
            }
        }
        Ok(Filter { status: status.map(str::to_string), hid_prefix, holder })
    }
}

/// The exclusive upper bound of the ids starting with a hex `prefix`
/// (`None`: no bound, the prefix is all `f`s or empty).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        let next = match last {
            b'0'..=b'8' | b'a'..=b'e' => last + 1,
            b'9' => b'a',
            _ => continue,
        };
        b.push(next);
        return String::from_utf8(b).ok();
    }
    None
}

/// Where the last look at the store stopped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watermark {
    /// SQLite's `PRAGMA data_version` at the last look.
    data_version: Option<i64>,
    /// Newest `handoffs.updated_at` seen.
    handoffs: f64,
    /// Newest `ownership.updated_at` seen.
    ownership: f64,
    /// Highest checkpoint rowid seen.
    checkpoints: i64,
    /// Highest effect rowid seen.
    effects: i64,
    /// Highest approval rowid seen, and how many were pending.
    approvals: (i64, i64),
    /// Stamps seen within the slack window: (table, hid) → stamp.
    recent: HashMap<(u8, String), f64>,
    /// PostgreSQL: the server's WAL position at the last look, and the
    /// newest `progress.updated_at`, `effects.at`, approval stamp seen.
    lsn: Option<String>,
    pg_marks: [f64; 3],
}

impl Watermark {
    /// The stamps already in the slack window are not changes.
    fn seeded(mut self, c: &Connection) -> Result<Watermark> {
        for (tab, sql, newest) in [
            (0u8, "SELECT hid, updated_at FROM handoffs WHERE updated_at >= ?1", self.handoffs),
            (1u8, "SELECT hid, updated_at FROM ownership WHERE updated_at >= ?1", self.ownership),
        ] {
            let mut st = c.prepare(sql)?;
            let mut rows = st.query(params![newest - SLACK_S])?;
            while let Some(r) = rows.next()? {
                self.recent.insert((tab, r.get(0)?), r.get(1)?);
            }
        }
        Ok(self)
    }
}

/// What changed since a [`Watermark`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Delta {
    /// The changed handoffs as they are now (at most [`MAX_DELTA_ROWS`]).
    pub rows: Vec<Row>,
    /// More handoffs changed than `rows` holds.
    pub truncated: bool,
    /// Pending approvals were added or decided (the hids may not be known).
    pub approvals_changed: bool,
}

impl Delta {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && !self.truncated && !self.approvals_changed
    }
}

/// A read-only view of one store.
pub struct View {
    db: Db,
    /// The store's directory (same-host liveness tokens); `None` on PostgreSQL.
    root: Option<PathBuf>,
}

enum Db {
    Lite(Mutex<Connection>),
    Pg(Mutex<postgres::Client>),
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("root", &self.root).finish()
    }
}

impl View {
    /// Open the store at ROOT read-only: a directory that holds a DHP
    /// store, or a `postgres://` URL whose schema holds one.
    pub fn open(root: &Path) -> Result<View> {
        let dir = match StoreLocation::from_path(root)? {
            StoreLocation::Dir(d) => d,
            StoreLocation::Postgres(loc) => {
                return Ok(View { db: Db::Pg(Mutex::new(pg::open(&loc)?)), root: None });
            }
        };
        let no_store = |reason: &str| Error::NoStore { root: dir.clone(), reason: reason.to_string() };
        if !dir.is_dir() {
            return Err(no_store("no such directory"));
        }
        let dir = dir.canonicalize().map_err(|e| Error::io(&dir, e))?;
        let db = dir.join(super::sqlite::DB_FILE);
        match std::fs::metadata(&db) {
            Ok(m) if m.is_file() && m.len() > 0 => {}
            Ok(_) => return Err(no_store("dhp.sqlite3 is empty or not a regular file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_store("no dhp.sqlite3")),
            Err(e) => return Err(Error::io(&db, e)),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&db, flags)?;
        conn.busy_timeout(super::sqlite::BUSY_TIMEOUT)?;
        conn.execute_batch("PRAGMA query_only = 1;")?;
        let found = conn
            .query_row("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'", [], |_| Ok(()))
            .optional()
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                    no_store("dhp.sqlite3 is not an SQLite database")
                }
                e => e.into(),
            })?;
        if found.is_none() {
            return Err(no_store("dhp.sqlite3 is not a DHP store (no schema_version table)"));
        }
        Ok(View { db: Db::Lite(Mutex::new(conn)), root: Some(dir) })
    }

    /// The store's directory (`None` for PostgreSQL).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Run `f` in one read transaction (one consistent snapshot) of a
    /// SQLite store (the PostgreSQL ones go to [`pg`]).
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = match &self.db {
            Db::Lite(c) => lock(c),
            Db::Pg(_) => return Err(Error::validation("a SQLite read on a PostgreSQL view")),
        };
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Deferred)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Whether the connection can write at all (it cannot: for the tests).
    pub fn try_write(&self) -> Result<()> {
        match &self.db {
            Db::Lite(c) => {
                lock(c).execute("UPDATE handoffs SET updated_at = updated_at WHERE 0", [])?;
            }
            Db::Pg(c) => {
                lock(c).batch_execute("UPDATE handoffs SET updated_at = updated_at WHERE false")?;
            }
        }
        Ok(())
    }

    /// One page of handoffs after `after`, in id order, and the `after` of
    /// the next page (`None` on the last).
    pub fn page(&self, filter: &Filter, after: Option<&str>, limit: usize) -> Result<(Vec<Row>, Option<String>)> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, |t| pg::page(t, filter, after, limit.clamp(1, MAX_PAGE)));
        }
        let limit = limit.clamp(1, MAX_PAGE);
        let (sql, args) = page_query(filter, after, limit);
        let mut rows = self.read(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args.iter()), row_of)?;
            Ok(rows.collect::<rusqlite::Result<Vec<Row>>>()?)
        })?;
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|r| r.hid.clone())
        } else {
            None
        };
        Ok((rows, next))
    }

    /// The rows of these hids, as they are now (unknown ones left out).
    pub fn rows_of(&self, hids: &[String]) -> Result<Vec<Row>> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, |t| pg::rows_of(t, hids));
        }
        self.read(|c| rows_of(c, hids))
    }

    /// Every handoff's status, fed to `each` (once, at start: the status
    /// index is read, not the envelopes).
    pub fn each_status(&self, mut each: impl FnMut(String, Option<String>)) -> Result<()> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, |t| pg::each_status(t, &mut each));
        }
        self.read(|c| {
            let mut st = c.prepare(&format!("SELECT h.hid, {STATUS} FROM handoffs h"))?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                let status = match r.get::<_, SqlValue>(1)? {
                    SqlValue::Text(t) => Some(t),
                    _ => None,
                };
                each(r.get(0)?, status);
            }
            Ok(())
        })
    }

    /// The leadership row: holder, expires_at, updated_at.
    pub fn leadership(&self) -> Result<Option<(String, f64, f64)>> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, pg::leadership);
        }
        self.read(|c| {
            Ok(c.query_row("SELECT holder, expires_at, updated_at FROM leadership WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?)
        })
    }

    /// A watermark at the store's present state (what is there now is
    /// not a change).
    pub fn watermark(&self) -> Result<Watermark> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, pg::watermark);
        }
        self.read(|c| {
            let one =
                |sql: &str| -> Result<f64> { Ok(c.query_row(sql, [], |r| r.get::<_, Option<f64>>(0))?.unwrap_or(0.0)) };
            let int =
                |sql: &str| -> Result<i64> { Ok(c.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))?.unwrap_or(0)) };
            Watermark {
                data_version: Some(int("PRAGMA data_version")?),
                handoffs: one("SELECT MAX(updated_at) FROM handoffs")?,
                ownership: one("SELECT MAX(updated_at) FROM ownership")?,
                checkpoints: int("SELECT MAX(rowid) FROM checkpoints")?,
                effects: int("SELECT MAX(rowid) FROM effects")?,
                approvals: (
                    int("SELECT MAX(rowid) FROM approvals")?,
                    int("SELECT COUNT(*) FROM approvals WHERE status = 'pending' AND expires_at > -1e300")?,
                ),
                recent: HashMap::new(),
                lsn: None,
                pg_marks: [0.0; 3],
            }
            .seeded(c)
        })
    }

    /// What changed since `wm`, and `wm` moved on. When no transaction
    /// committed since (SQLite's `data_version`), no table is read.
    pub fn changes(&self, wm: &mut Watermark) -> Result<Delta> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, |t| pg::changes(t, wm));
        }
        self.read(|c| {
            let dv: i64 = c.query_row("PRAGMA data_version", [], |r| r.get(0))?;
            if wm.data_version == Some(dv) {
                return Ok(Delta::default());
            }
            let mut hids: Vec<String> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut add = |h: String, hids: &mut Vec<String>| {
                if seen.insert(h.clone()) {
                    hids.push(h);
                }
            };
            // updated_at tables: the slack window, each (table, hid, stamp) once
            for (tab, sql) in [
                (0u8, "SELECT hid, updated_at FROM handoffs WHERE updated_at >= ?1 ORDER BY updated_at"),
                (1u8, "SELECT hid, updated_at FROM ownership WHERE updated_at >= ?1 ORDER BY updated_at"),
            ] {
                let newest = if tab == 0 { wm.handoffs } else { wm.ownership };
                let from = newest - SLACK_S;
                let mut st = c.prepare_cached(sql)?;
                let mut rows = st.query(params![from])?;
                let mut top = newest;
                while let Some(r) = rows.next()? {
                    let (h, t): (String, f64) = (r.get(0)?, r.get(1)?);
                    top = top.max(t);
                    let key = (tab, h);
                    if wm.recent.get(&key) != Some(&t) {
                        add(key.1.clone(), &mut hids);
                        wm.recent.insert(key, t);
                    }
                }
                if tab == 0 {
                    wm.handoffs = top;
                } else {
                    wm.ownership = top;
                }
            }
            let (h_cut, o_cut) = (wm.handoffs - SLACK_S, wm.ownership - SLACK_S);
            wm.recent.retain(|(tab, _), t| *t >= if *tab == 0 { h_cut } else { o_cut });
            // append-only tables: by rowid
            for (which, sql) in [
                (0, "SELECT rowid, hid FROM checkpoints WHERE rowid > ?1 ORDER BY rowid"),
                (1, "SELECT rowid, hid FROM effects WHERE rowid > ?1 ORDER BY rowid"),
                (2, "SELECT rowid, hid FROM approvals WHERE rowid > ?1 ORDER BY rowid"),
            ] {
                let mark = match which {
                    0 => &mut wm.checkpoints,
                    1 => &mut wm.effects,
                    _ => &mut wm.approvals.0,
                };
                let mut st = c.prepare_cached(sql)?;
                let mut rows = st.query(params![*mark])?;
                while let Some(r) = rows.next()? {
                    let (id, h): (i64, String) = (r.get(0)?, r.get(1)?);
                    *mark = (*mark).max(id);
                    add(h, &mut hids);
                }
            }
            // approvals decided or expired change no rowid: the pending count
            let pending: i64 = c.query_row(
                "SELECT COUNT(*) FROM approvals WHERE status = 'pending' AND expires_at > -1e300",
                [],
                |r| r.get(0),
            )?;
            let approvals_changed = pending != wm.approvals.1;
            wm.approvals.1 = pending;
            wm.data_version = Some(dv);
            let truncated = hids.len() > MAX_DELTA_ROWS;
            hids.truncate(MAX_DELTA_ROWS);
            Ok(Delta { rows: rows_of(c, &hids)?, truncated, approvals_changed })
        })
    }

    /// Everything the store holds about one handoff; `None`: no such id.
    pub fn detail(&self, hid: &str) -> Result<Option<(Row, Value)>> {
        if let Db::Pg(c) = &self.db {
            return pg::read(c, |t| pg::detail(t, hid));
        }
        self.read(|c| {
            let Some(row) = rows_of(c, &[hid.to_string()])?.pop() else { return Ok(None) };
            let text: String = c.query_row("SELECT envelope_json FROM handoffs WHERE hid = ?1", [hid], |r| r.get(0))?;
            let envelope = crate::json::parse(&text).unwrap_or(Value::String(text));
            let ownership = c
                .query_row(
                    "SELECT holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, updated_at \
                     FROM ownership WHERE hid = ?1",
                    [hid],
                    |r| {
                        Ok(json!({"holder": r.get::<_, String>(0)?, "fence": r.get::<_, i64>(1)?,
                                  "lease_expires_at": sql_json(r.get(2)?), "heartbeat_interval_s": sql_json(r.get(3)?),
                                  "max_missed": sql_json(r.get(4)?), "updated_at": sql_json(r.get(5)?)}))
                    },
                )
                .optional()?;
            let progress = c
                .query_row(
                    "SELECT last_checkpoint_at, last_digest, digest_repeat_count, updated_at FROM progress WHERE hid = ?1",
                    [hid],
                    |r| {
                        Ok(json!({"last_checkpoint_at": sql_json(r.get(0)?), "last_digest": sql_json(r.get(1)?),
                                  "digest_repeat_count": sql_json(r.get(2)?), "updated_at": sql_json(r.get(3)?)}))
                    },
                )
                .optional()?;
            let list = |sql: &str, names: &[&str]| -> Result<Vec<Value>> {
                let mut st = c.prepare_cached(sql)?;
                let rows = st.query_map(params![hid, DETAIL_ROWS as i64], |r| {
                    let mut m = Map::new();
                    for (i, n) in names.iter().enumerate() {
                        m.insert((*n).to_string(), sql_json(r.get(i)?));
                    }
                    Ok(Value::Object(m))
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            };
            let mut checkpoints = {
                let mut st = c.prepare_cached(
                    "SELECT seq, at, state_hash, length(state_json), substr(state_json, 1, 240) FROM checkpoints \
                     WHERE hid = ?1 ORDER BY seq DESC LIMIT ?2",
                )?;
                let rows = st.query_map(params![hid, DETAIL_CHECKPOINTS as i64], |r| {
                    Ok(json!({"seq": r.get::<_, i64>(0)?, "at": sql_json(r.get(1)?), "state_hash": sql_json(r.get(2)?),
                              "state_bytes": sql_json(r.get(3)?), "state_head": sql_json(r.get(4)?)}))
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            checkpoints.reverse();
            let effects = list(
                "SELECT step_id, at, substr(result_json, 1, 240) FROM effects WHERE hid = ?1 ORDER BY at LIMIT ?2",
                &["step_id", "at", "result_head"],
            )?;
            let approvals = list(
                "SELECT approval_id, action_class, status, created_at, expires_at, decided_at, \
                 substr(details_json, 1, 240) FROM approvals WHERE hid = ?1 ORDER BY created_at LIMIT ?2",
                &["approval_id", "action_class", "status", "created_at", "expires_at", "decided_at", "details_head"],
            )?;
            let audit = list(
                "SELECT domain, resource, granted, at FROM capability_audit WHERE hid = ?1 ORDER BY at LIMIT ?2",
                &["domain", "resource", "granted", "at"],
            )?;
            let out = json!({
                "row": row, "envelope": envelope, "ownership": ownership, "progress": progress,
                "checkpoints": checkpoints, "effects": effects, "approvals": approvals,
                "capability_audit": audit,
            });
            Ok(Some((row, out)))
        })
    }

    /// The same-host liveness tokens under the store (`live/*.lock`) and
    /// whether a process holds each, read from `/proc/locks` without
    /// taking any lock ourselves: `(holder, Some(pid))` live, `(holder,
    /// None)` published and dead (or unknown where `/proc/locks` is not).
    pub fn liveness(&self) -> Vec<(String, Option<i32>)> {
        use std::os::unix::fs::MetadataExt;
        if let Db::Pg(c) = &self.db {
            return pg::read(c, pg::liveness).unwrap_or_default();
        }
        let Some(root) = &self.root else { return Vec::new() };
        let Ok(dir) = std::fs::read_dir(root.join(crate::liveness::DIR)) else { return Vec::new() };
        let held = held_flocks();
        let mut out: Vec<(String, Option<i32>)> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.strip_suffix(".lock")?.to_string();
                let ino = e.metadata().ok()?.ino();
                Some((name, held.get(&ino).copied()))
            })
            .collect();
        out.sort();
        out
    }
}

/// Inode → pid of every `FLOCK` lock `/proc/locks` lists.
fn held_flocks() -> HashMap<u64, i32> {
    let text = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (blocked
            // waiters are "1: -> FLOCK ..." and are not holders)
            if f.get(1) != Some(&"FLOCK") {
                return None;
            }
            let pid = f.get(4)?.parse().ok()?;
            let ino = f.get(5)?.rsplit(':').next()?.parse().ok()?;
            Some((ino, pid))
        })
        .collect()
}

/// The SQL and arguments of one page: `limit + 1` rows (the extra one
/// says whether there is a next page).
fn page_query(filter: &Filter, after: Option<&str>, limit: usize) -> (String, Vec<SqlValue>) {
    let after = after.unwrap_or("");
    let lo = filter.hid_prefix.clone().unwrap_or_default();
    let lo = if lo.as_str() > after { lo } else { String::new() };
    let hi = filter.hid_prefix.as_deref().and_then(prefix_end);
    let mut sql = format!("SELECT {} FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid", row_cols());
    let mut conds = vec!["h.hid > ?1".to_string(), "h.hid >= ?2".to_string()];
    let mut args: Vec<SqlValue> = vec![SqlValue::Text(after.into()), SqlValue::Text(lo)];
    if let Some(hi) = hi {
        args.push(SqlValue::Text(hi));
        conds.push(format!("h.hid < ?{}", args.len()));
    }
    if let Some(s) = &filter.status {
        args.push(SqlValue::Text(s.clone()));
        conds.push(format!("{STATUS} = ?{}", args.len()));
    }
    if let Some(holder) = &filter.holder {
        // the (holder, hid) index: the holder's rows in id order
        args.push(SqlValue::Text(holder.clone()));
        conds.push(format!("h.hid IN (SELECT hid FROM ownership WHERE holder = ?{} AND hid > ?1)", args.len()));
    }
    args.push(SqlValue::Integer(limit as i64 + 1));
    sql.push_str(&format!(" WHERE {} ORDER BY h.hid LIMIT ?{}", conds.join(" AND "), args.len()));
    (sql, args)
}

fn rows_of(c: &Connection, hids: &[String]) -> Result<Vec<Row>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {} FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid WHERE h.hid = ?1",
        row_cols()
    ))?;
    let mut out = Vec::with_capacity(hids.len());
    for h in hids {
        if let Some(r) = st.query_row([h], row_of).optional()? {
            out.push(r);
        }
    }
    Ok(out)
}

/// The same views on a PostgreSQL store: a session whose every
/// transaction is `READ ONLY` (the server refuses any write), in the
/// store's schema. The schema has no `updated_at` indexes (its DDL is the
/// backend's, and a read-only view adds none), so a look that finds the
/// server's WAL moved reads the changed stamps with a scan of the
/// `handoffs`, `ownership` and `progress` tables; an idle server costs
/// one `pg_current_wal_lsn()` per poll (docs/dashboard.md).
mod pg;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(prefix_end("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_end("a9").as_deref(), Some("aa"));
        assert_eq!(prefix_end("af").as_deref(), Some("b"));
        assert_eq!(prefix_end("ff"), None);
        assert_eq!(prefix_end(""), None);
    }

    /// Every page and delta query reads an index, never the whole table
    /// (checked against SQLite's plan on a store with dhp-rs's indexes).
    #[test]
    fn queries_use_indexes() {
        let dir = tempfile::tempdir().unwrap();
        drop(crate::store::SqliteStore::open(dir.path()).unwrap());
        let v = View::open(dir.path()).unwrap();
        let plan = |sql: &str, args: &[SqlValue]| -> String {
            let Db::Lite(c) = &v.db else { panic!("a SQLite view") };
            let c = c.lock().unwrap();
            let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let rows = st.query_map(rusqlite::params_from_iter(args.iter()), |r| r.get::<_, String>(3)).unwrap();
            rows.map(|r| r.unwrap()).collect::<Vec<_>>().join(" | ")
        };
        let a = "ab".repeat(32);
        for (filter, want) in [
            (Filter::default(), "SEARCH h USING INDEX sqlite_autoindex_handoffs_1 (hid>?)"),
            (Filter::new(Some("running"), None).unwrap(), "SEARCH h USING INDEX dhprs_handoffs_status"),
            (Filter::new(None, Some("ab1")).unwrap(), "SEARCH h USING INDEX sqlite_autoindex_handoffs_1"),
            (Filter::new(None, Some("w-1")).unwrap(), "USING COVERING INDEX dhprs_ownership_holder"),
        ] {
            for after in [None, Some(a.as_str())] {
                let (sql, args) = page_query(&filter, after, 50);
                let p = plan(&sql, &args);
                assert!(p.contains(want), "{filter:?}: {p}");
                assert!(!p.contains("SCAN h") && !p.contains("SCAN o"), "{filter:?} scans: {p}");
            }
        }
        for sql in [
            "SELECT hid, updated_at FROM handoffs WHERE updated_at >= ?1 ORDER BY updated_at",
            "SELECT hid, updated_at FROM ownership WHERE updated_at >= ?1 ORDER BY updated_at",
            "SELECT rowid, hid FROM checkpoints WHERE rowid > ?1 ORDER BY rowid",
            "SELECT COUNT(*) FROM approvals WHERE status = 'pending' AND expires_at > ?1",
        ] {
            let p = plan(sql, &[SqlValue::Real(0.0)]);
            assert!(p.contains("SEARCH") && !p.contains("SCAN"), "{sql}: {p}");
        }
    }

    #[test]
    fn the_connection_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        drop(crate::store::SqliteStore::open(dir.path()).unwrap());
        let v = View::open(dir.path()).unwrap();
        let e = v.try_write().unwrap_err();
        assert!(e.to_string().contains("readonly") || e.to_string().contains("read-only"), "{e}");
    }

    #[test]
    fn filters() {
        assert_eq!(Filter::new(Some("all"), None).unwrap(), Filter::default());
        assert!(Filter::new(Some("bogus"), None).is_err());
        let f = Filter::new(Some("running"), Some("AB12")).unwrap();
        assert_eq!(f.hid_prefix.as_deref(), Some("ab12"));
        assert_eq!(f.status.as_deref(), Some("running"));
        let f = Filter::new(None, Some("worker-1")).unwrap();
        assert_eq!(f.holder.as_deref(), Some("worker-1"));
    }
}

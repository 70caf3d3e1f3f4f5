//! The audit on SQLite: `AFTER` row triggers appending to [`super::TABLE`].

use super::{parse, Event, TABLE};

/// Rows an insert may be about to replace, keyed by table and primary key
/// (harness-owned, like [`TABLE`]).
pub const PENDING: &str = "dhpchaos_audit_pending";
use crate::error::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// The writer's clock as epoch seconds (works on every SQLite, 3.40 included).
const NOW: &str = "(julianday('now') - 2440587.5) * 86400.0";

/// A row of `table` as a JSON object, from the trigger's `r` (`NEW` or `OLD`).
fn row_json(table: &str, r: &str) -> String {
    match table {
        "ownership" => format!(
            "json_object('hid', {r}.hid, 'holder', {r}.holder, 'fence', {r}.fence, \
             'lease_expires_at', {r}.lease_expires_at, 'heartbeat_interval_s', {r}.heartbeat_interval_s, \
             'max_missed', {r}.max_missed, 'updated_at', {r}.updated_at)"
        ),
        "handoffs" => format!(
            "json_object('hid', {r}.hid, 'updated_at', {r}.updated_at, \
             'status', CASE WHEN json_valid({r}.envelope_json) THEN json_extract({r}.envelope_json, '$.execution.status') END, \
             'execution', CASE WHEN json_valid({r}.envelope_json) THEN json(json_extract({r}.envelope_json, '$.execution')) END, \
             'budget', CASE WHEN json_valid({r}.envelope_json) THEN json(json_extract({r}.envelope_json, '$.contract.budget')) END)"
        ),
        "checkpoints" => format!(
            "json_object('hid', {r}.hid, 'seq', {r}.seq, 'state_json', {r}.state_json, \
             'state_hash', {r}.state_hash, 'at', {r}.at)"
        ),
        _ => format!("json_object('id', {r}.id, 'holder', {r}.holder, 'expires_at', {r}.expires_at, 'updated_at', {r}.updated_at)"),
    }
}

/// The primary key of an audited row `r`, as one text (the pending table's key).
fn key(table: &str, r: &str) -> String {
    match table {
        "checkpoints" => format!("json_array({r}.hid, {r}.seq)"),
        "leadership" => format!("CAST({r}.id AS TEXT)"),
        _ => format!("{r}.hid"),
    }
}

/// The primary key's columns of `table`, compared between rows `a` and `b`.
fn same_key(table: &str, a: &str, b: &str) -> String {
    match table {
        "checkpoints" => format!("{a}.hid = {b}.hid AND {a}.seq = {b}.seq"),
        "leadership" => format!("{a}.id = {b}.id"),
        _ => format!("{a}.hid = {b}.hid"),
    }
}

/// The DDL: the audit table, the pending table and four triggers per
/// audited table.
///
/// `INSERT OR REPLACE` / `REPLACE INTO` deletes the row it replaces without
/// firing DELETE triggers (unless the writer set `recursive_triggers`,
/// which the harness does not control), so a `BEFORE INSERT` trigger
/// stashes the row with the same key, if any, in [`PENDING`], and the
/// `AFTER INSERT` trigger records it as op `REPLACE` just before the
/// INSERT. A stash whose insert then did not happen (`INSERT OR IGNORE`,
/// an upsert that updated instead, a failed statement) is never recorded:
/// no AFTER INSERT fires for it, and the next BEFORE INSERT of that key
/// overwrites it. With `recursive_triggers` on, the DELETE trigger fires
/// for the replaced row and drops the stash, so the row is recorded once,
/// as a DELETE.
pub(crate) fn ddl() -> String {
    let mut s = format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, \
         op TEXT NOT NULL, hid TEXT, old_json TEXT, new_json TEXT, at REAL NOT NULL);\n\
         CREATE TABLE IF NOT EXISTS {PENDING} (tbl TEXT NOT NULL, k TEXT NOT NULL, old_json TEXT NOT NULL, \
         PRIMARY KEY (tbl, k));\n"
    );
    for t in super::TABLES {
        let hid = |r: &str| if t == "leadership" { "NULL".to_string() } else { format!("{r}.hid") };
        let (kn, ko) = (key(t, "NEW"), key(t, "OLD"));
        let unstash = |k: &str| format!("DELETE FROM {PENDING} WHERE tbl = '{t}' AND k = {k};");
        s.push_str(&format!(
            "CREATE TRIGGER IF NOT EXISTS {TABLE}_{t}_pre BEFORE INSERT ON {t} BEGIN {} \
             INSERT INTO {PENDING} (tbl, k, old_json) SELECT '{t}', {kn}, {} FROM {t} AS o WHERE {}; END;\n",
            unstash(&kn),
            row_json(t, "o"),
            same_key(t, "o", "NEW"),
        ));
        let replaced = format!(
            "INSERT INTO {TABLE} (tbl, op, hid, old_json, new_json, at) SELECT '{t}', 'REPLACE', {}, old_json, NULL, {NOW} \
             FROM {PENDING} WHERE tbl = '{t}' AND k = {kn}; {}",
            hid("NEW"),
            unstash(&kn)
        );
        for (op, when, old, new, h, before) in [
            ("INSERT", "ins", "NULL".to_string(), row_json(t, "NEW"), hid("NEW"), replaced),
            ("UPDATE", "upd", row_json(t, "OLD"), row_json(t, "NEW"), hid("NEW"), String::new()),
            ("DELETE", "del", row_json(t, "OLD"), "NULL".to_string(), hid("OLD"), unstash(&ko)),
        ] {
            s.push_str(&format!(
                "CREATE TRIGGER IF NOT EXISTS {TABLE}_{t}_{when} AFTER {op} ON {t} BEGIN {before} \
                 INSERT INTO {TABLE} (tbl, op, hid, old_json, new_json, at) VALUES ('{t}', '{op}', {h}, {old}, {new}, {NOW}); END;\n"
            ));
        }
    }
    s
}

/// Install the audit in the SQLite store `db` (the store must exist: it is
/// installed after the implementation created its tables).
pub fn install(db: &Path) -> Result<()> {
    let failed = |doing: String| move |source| Error::Sqlite { doing, source };
    let mut c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(failed(format!("opening {} to install the audit", db.display())))?;
    let installing = || failed(format!("installing the store audit in {}", db.display()));
    c.busy_timeout(Duration::from_secs(30)).map_err(installing())?;
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(installing())?;
    tx.execute_batch(&ddl()).map_err(installing())?;
    tx.commit().map_err(installing())
}

/// The audit of the SQLite store `db`, in commit order (`None`: no audit table).
pub fn read(db: &Path) -> Result<Option<Vec<Event>>> {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|source| Error::Sqlite { doing: format!("opening store {}", db.display()), source })?;
    read_from(&c)
        .map_err(|source| Error::Sqlite { doing: format!("reading the store audit of {}", db.display()), source })
}

fn read_from(c: &Connection) -> rusqlite::Result<Option<Vec<Event>>> {
    c.busy_timeout(Duration::from_secs(10))?;
    let present =
        c.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [TABLE], |r| {
            r.get::<_, i64>(0)
        })? > 0;
    if !present {
        return Ok(None);
    }
    let mut st = c.prepare(&format!("SELECT seq, tbl, op, hid, old_json, new_json, at FROM {TABLE} ORDER BY seq"))?;
    let rows = st
        .query_map([], |r| {
            Ok(Event {
                seq: r.get(0)?,
                table: r.get(1)?,
                op: r.get(2)?,
                hid: r.get(3)?,
                old: parse(r.get(4)?),
                new: parse(r.get(5)?),
                at: r.get(6)?,
                xid: None,
                began: None,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(rows))
}

#[cfg(test)]
mod tests;

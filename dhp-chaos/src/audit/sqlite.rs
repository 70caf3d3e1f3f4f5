//! The audit on SQLite: `AFTER` row triggers appending to [`super::TABLE`].

use super::{parse, Event, TABLE};
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

/// The DDL: the audit table and three triggers per audited table.
pub(crate) fn ddl() -> String {
    let mut s = format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, \
         op TEXT NOT NULL, hid TEXT, old_json TEXT, new_json TEXT, at REAL NOT NULL);\n"
    );
    for t in super::TABLES {
        let hid = |r: &str| if t == "leadership" { "NULL".to_string() } else { format!("{r}.hid") };
        for (op, when, old, new, h) in [
            ("INSERT", "ins", "NULL".to_string(), row_json(t, "NEW"), hid("NEW")),
            ("UPDATE", "upd", row_json(t, "OLD"), row_json(t, "NEW"), hid("NEW")),
            ("DELETE", "del", row_json(t, "OLD"), "NULL".to_string(), hid("OLD")),
        ] {
            s.push_str(&format!(
                "CREATE TRIGGER IF NOT EXISTS {TABLE}_{t}_{when} AFTER {op} ON {t} BEGIN \
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
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(rows))
}

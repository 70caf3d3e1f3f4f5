//! The audit on PostgreSQL: deferred constraint triggers, serialized at
//! commit by a transaction advisory lock, appending to [`super::TABLE`].

use super::{Event, TABLE};
use crate::error::{Error, Result};
use serde_json::{json, Value};

/// The advisory lock class (two-key form; dhp-core's liveness locks use
/// the one-bigint form, a separate key space).
const LOCK_CLASS: i32 = 0x6468_7063; // "dhpc"

/// The DDL, run with `search_path` set to the round's schema.
pub(crate) fn ddl() -> String {
    let mut s = format!(
        r#"
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq BIGSERIAL PRIMARY KEY, tbl TEXT NOT NULL, op TEXT NOT NULL, hid TEXT,
    old_json TEXT, new_json TEXT, at DOUBLE PRECISION NOT NULL, xid BIGINT
);
-- the transaction's start (audits installed before this column had none)
ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS began DOUBLE PRECISION;
CREATE OR REPLACE FUNCTION {TABLE}_row(t TEXT, r JSONB) RETURNS JSONB LANGUAGE plpgsql AS $f$
DECLARE env JSONB;
BEGIN
    IF r IS NULL THEN RETURN NULL; END IF;
    IF t = 'handoffs' THEN
        env := (r->>'envelope_json')::jsonb;
        RETURN jsonb_build_object('hid', r->'hid', 'updated_at', r->'updated_at',
            'status', env #> '{{execution,status}}', 'execution', env->'execution',
            'budget', env #> '{{contract,budget}}');
    END IF;
    RETURN r - 'status';
END $f$;
CREATE OR REPLACE FUNCTION {TABLE}_fn() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE o JSONB; n JSONB;
BEGIN
    PERFORM pg_advisory_xact_lock({LOCK_CLASS}, hashtext(current_schema()));
    IF TG_OP <> 'INSERT' THEN o := {TABLE}_row(TG_TABLE_NAME, to_jsonb(OLD)); END IF;
    IF TG_OP <> 'DELETE' THEN n := {TABLE}_row(TG_TABLE_NAME, to_jsonb(NEW)); END IF;
    INSERT INTO {TABLE} (tbl, op, hid, old_json, new_json, at, xid, began)
    VALUES (TG_TABLE_NAME, TG_OP, COALESCE(n->>'hid', o->>'hid'), o::text, n::text,
            extract(epoch FROM clock_timestamp()), txid_current(),
            extract(epoch FROM transaction_timestamp()));
    RETURN NULL;
END $f$;
"#
    );
    for t in super::TABLES {
        s.push_str(&format!(
            "DROP TRIGGER IF EXISTS {TABLE}_{t} ON {t};\n\
             CREATE CONSTRAINT TRIGGER {TABLE}_{t} AFTER INSERT OR UPDATE OR DELETE ON {t} \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {TABLE}_fn();\n"
        ));
    }
    s
}

/// Install the audit in the round's schema (the client's `search_path`).
pub fn install(c: &mut postgres::Client) -> Result<()> {
    let failed = |source| Error::Postgres { doing: "installing the store audit (PostgreSQL)".into(), source };
    let mut tx = c.transaction().map_err(failed)?;
    tx.batch_execute(&ddl()).map_err(failed)?;
    tx.commit().map_err(failed)
}

/// The audit as JSON rows for the store export (`None`: no audit table).
pub fn export(c: &mut postgres::Client) -> Result<Option<Value>> {
    let present: bool = c
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&TABLE])
        .map(|r| r.get(0))
        .map_err(|source| Error::Postgres { doing: "looking for the audit table".into(), source })?;
    if !present {
        return Ok(None);
    }
    let rows = c
        .query(&format!("SELECT seq, tbl, op, hid, old_json, new_json, at, xid, began FROM {TABLE} ORDER BY seq"), &[])
        .map_err(|source| Error::Postgres { doing: "reading the store audit".into(), source })?;
    let parse = |t: Option<String>| t.map(|t| serde_json::from_str::<Value>(&t).unwrap_or(Value::String(t)));
    let events: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!(Event {
                seq: r.get(0),
                table: r.get(1),
                op: r.get(2),
                hid: r.get(3),
                old: parse(r.get(4)),
                new: parse(r.get(5)),
                at: r.get(6),
                xid: r.get(7),
                began: r.get(8),
            })
        })
        .collect();
    Ok(Some(Value::Array(events)))
}

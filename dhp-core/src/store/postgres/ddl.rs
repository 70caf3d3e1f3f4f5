//! The PostgreSQL layout of a DHP store: the schema v3 tables of the
//! reference's SQLite store in PostgreSQL types, inside one schema.
//! Documented, with the rules, in `docs/postgres.md`.
//!
//! Differences from the SQLite DDL, all additive:
//! - `handoffs.status` is a stored generated column (`execution.status` of
//!   the envelope text), so status filters need not parse envelopes;
//! - `hid` columns use the `C` collation, so `ORDER BY hid` is byte order
//!   as in SQLite whatever the database's locale;
//! - `liveness` lists the holders that published a session advisory lock
//!   (cross-host liveness); a store without rows there is lease-only.

use crate::error::{Error, Result};
use crate::store::location::PgLocation;
use crate::store::SCHEMA_VERSION;
use postgres::Transaction;

/// The tables, created with `IF NOT EXISTS` inside the store's schema (the
/// session's `search_path`).
pub const SCHEMA_SQL: &str = r#"
CREATE TABLE IF NOT EXISTS schema_version (
    version BIGINT PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    hid TEXT COLLATE "C" PRIMARY KEY,
    envelope_json TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    status TEXT GENERATED ALWAYS AS ((envelope_json::json) #>> '{execution,status}') STORED
);
CREATE INDEX IF NOT EXISTS idx_handoffs_status ON handoffs(status);
CREATE TABLE IF NOT EXISTS checkpoints (
    hid TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    state_json TEXT NOT NULL,
    state_hash TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (hid, seq)
);
CREATE TABLE IF NOT EXISTS ownership (
    hid TEXT COLLATE "C" PRIMARY KEY,
    holder TEXT NOT NULL,
    fence BIGINT NOT NULL,
    lease_expires_at DOUBLE PRECISION NOT NULL,
    heartbeat_interval_s DOUBLE PRECISION NOT NULL,
    max_missed BIGINT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS leadership (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    holder TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS effects (
    hid TEXT COLLATE "C" NOT NULL,
    step_id TEXT NOT NULL,
    result_json TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (hid, step_id)
);
CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY,
    hid TEXT COLLATE "C" NOT NULL,
    action_class TEXT NOT NULL,
    details_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    decided_at DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS idx_approvals_hid ON approvals(hid);
CREATE TABLE IF NOT EXISTS progress (
    hid TEXT COLLATE "C" PRIMARY KEY,
    last_checkpoint_at DOUBLE PRECISION,
    last_digest TEXT,
    digest_repeat_count BIGINT NOT NULL DEFAULT 0,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS capability_audit (
    hid TEXT COLLATE "C" NOT NULL,
    domain TEXT NOT NULL,
    resource TEXT NOT NULL,
    granted BIGINT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_cap_audit_hid ON capability_audit(hid);
CREATE TABLE IF NOT EXISTS liveness (
    holder TEXT COLLATE "C" PRIMARY KEY,
    lock_key BIGINT NOT NULL,
    published_at DOUBLE PRECISION NOT NULL
);
"#;

/// The tables a complete store has.
pub const TABLES: &[&str] = &[
    "schema_version",
    "handoffs",
    "checkpoints",
    "ownership",
    "leadership",
    "effects",
    "approvals",
    "progress",
    "capability_audit",
    "liveness",
];

fn not_a_store(loc: &PgLocation, reason: impl Into<String>) -> Error {
    Error::NotAStore { location: loc.to_string(), reason: reason.into() }
}

/// Inside one transaction that holds the store's init lock: check what the
/// schema holds, refuse a newer version or a foreign schema before writing
/// anything, then (when `create`) create what is missing.
pub fn prepare(t: &mut Transaction<'_>, loc: &PgLocation, create: bool) -> Result<()> {
    let schema = loc.schema.as_str();
    let exists = t.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])?.is_some();
    let tables: Vec<String> = if exists {
        t.query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname",
            &[&schema],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect()
    } else {
        Vec::new()
    };
    let has = |name: &str| tables.iter().any(|t| t == name);
    if has("schema_version") {
        let cols: Vec<String> = t
            .query(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = $1 \
                 AND table_name = 'schema_version'",
                &[&schema],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !cols.iter().any(|c| c == "version") {
            return Err(not_a_store(loc, "its schema_version table has no version column: not a DHP store"));
        }
        let found: Option<i64> = t.query_one("SELECT MAX(version)::bigint FROM schema_version", &[])?.get(0);
        if let Some(v) = found.filter(|v| *v > SCHEMA_VERSION) {
            return Err(Error::NewerSchema { found: v, supported: SCHEMA_VERSION });
        }
        let missing: Vec<&str> = TABLES.iter().copied().filter(|n| !has(n)).collect();
        if found == Some(SCHEMA_VERSION) && missing.is_empty() {
            return Ok(());
        }
        if !create && found.is_none() {
            return Err(not_a_store(loc, "schema_version is empty: the store was never initialised"));
        }
    } else if !tables.is_empty() {
        let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
        return Err(not_a_store(
            loc,
            format!("schema {schema} holds other tables ({}) and no schema_version: not a DHP store", shown.join(", ")),
        ));
    } else if !create {
        let what = if exists { "is empty" } else { "does not exist" };
        return Err(not_a_store(loc, format!("no DHP store here: schema {schema} {what}")));
    }
    if !exists {
        t.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))?;
    }
    t.batch_execute(SCHEMA_SQL)?;
    t.execute(
        "INSERT INTO schema_version (version, applied_at) VALUES ($1, extract(epoch FROM clock_timestamp())::float8) \
         ON CONFLICT (version) DO NOTHING",
        &[&SCHEMA_VERSION],
    )?;
    Ok(())
}

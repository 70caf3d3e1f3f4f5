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

/// The columns of each table of [`SCHEMA_SQL`], in order, with their types
/// as `format_type` names them: read from the
/// DDL itself, so the check of an existing store and the creation of a new
/// one cannot disagree.
pub fn layout() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut tables = Vec::new();
    let mut current: Option<(&'static str, Vec<(&'static str, &'static str)>)> = None;
    for line in SCHEMA_SQL.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("CREATE TABLE IF NOT EXISTS ") {
            current = Some((rest.trim_end_matches(" (").trim(), Vec::new()));
        } else if line.starts_with(");") {
            tables.extend(current.take());
        } else if let Some((_, cols)) = current.as_mut() {
            if line.starts_with("PRIMARY KEY") {
                continue;
            }
            let Some((name, rest)) = line.split_once(' ') else { continue };
            let ty = if rest.starts_with("DOUBLE PRECISION") {
                "double precision"
            } else if rest.starts_with("BIGINT") {
                "bigint"
            } else {
                "text"
            };
            cols.push((name, ty));
        }
    }
    tables
}

/// Every column of every relation of a schema: `(table, column, type)`,
/// the type as `format_type` spells it (`text`, `bigint`, `double
/// precision`). From the catalog, not `information_schema`, which hides
/// the columns of tables the role has no privilege on.
const COLUMNS_SQL: &str = "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod) \
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE n.nspname = $1 AND a.attnum > 0 AND NOT a.attisdropped";

/// The tables every DHP schema version has (v1 and v2 lack only tables
/// that v3 added: the reference's upgrade is additive).
const CORE_TABLES: &[&str] = &["handoffs", "checkpoints", "ownership"];

/// How a non-empty schema differs from the v3 layout: the tables of
/// [`SCHEMA_SQL`] it lacks, and the columns of those it has that are
/// missing or of another type.
struct Gaps {
    missing_tables: Vec<&'static str>,
    wrong_columns: Vec<String>,
}

impl Gaps {
    fn read(t: &mut Transaction<'_>, schema: &str, tables: &[String]) -> Result<Gaps> {
        let mut gaps = Gaps { missing_tables: Vec::new(), wrong_columns: Vec::new() };
        let rows = t.query(COLUMNS_SQL, &[&schema])?;
        for (table, cols) in layout() {
            if !tables.iter().any(|n| n == table) {
                gaps.missing_tables.push(table);
                continue;
            }
            for (col, ty) in cols {
                let found = rows.iter().find(|r| r.get::<_, String>(0) == table && r.get::<_, String>(1) == col);
                match found.map(|r| r.get::<_, String>(2)) {
                    None => gaps.wrong_columns.push(format!("{table}.{col} is missing")),
                    Some(t) if t != ty => gaps.wrong_columns.push(format!("{table}.{col} is {t}, not {ty}")),
                    Some(_) => {}
                }
            }
        }
        Ok(gaps)
    }

    /// In words, for a message.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.missing_tables.is_empty() {
            parts.push(format!("no table {}", self.missing_tables.join(", ")));
        }
        if !self.wrong_columns.is_empty() {
            parts.push(self.wrong_columns.iter().take(5).cloned().collect::<Vec<_>>().join(", "));
        }
        parts.join("; ")
    }

    fn none(&self) -> bool {
        self.missing_tables.is_empty() && self.wrong_columns.is_empty()
    }

    /// An older DHP layout: every table it has is DHP's to the column, and
    /// it has the tables every version has.
    fn older_dhp(&self) -> bool {
        self.wrong_columns.is_empty() && CORE_TABLES.iter().all(|c| !self.missing_tables.contains(c))
    }
}

/// Inside one transaction that holds the store's init lock: check what the
/// schema holds, refuse a newer version or anything that is not a complete
/// DHP store before writing anything, then (when `create`, and only in a
/// missing or empty schema) create the store.
///
/// A schema is a DHP store when it holds every table of [`SCHEMA_SQL`]
/// with every column (name and type) and `schema_version` holds version
/// [`SCHEMA_VERSION`]. A `schema_version` table (DHP's columns) at a newer
/// version is [`Error::NewerSchema`]; one at an older version in a schema
/// whose tables are DHP's to the column, `handoffs`, `checkpoints` and
/// `ownership` among them, is an older DHP store and is upgraded (the
/// missing tables created, version 3 recorded). Any other non-empty schema
/// — an application's own `schema_version` (a common migration-tool
/// name), a partial or altered layout, foreign tables — is
/// [`Error::NotAStore`], whatever the command: a store is created only
/// where there is nothing.
pub fn prepare(t: &mut Transaction<'_>, loc: &PgLocation, create: bool) -> Result<()> {
    let schema = loc.schema.as_str();
    let exists = t.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])?.is_some();
    let tables: Vec<String> = if exists {
        t.query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname",
            &[&schema],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect()
    } else {
        Vec::new()
    };
    if tables.is_empty() {
        if !create {
            let what = if exists { "is empty" } else { "does not exist" };
            return Err(not_a_store(loc, format!("no DHP store here: schema {schema} {what}")));
        }
        if !exists {
            t.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))?;
        }
        t.batch_execute(SCHEMA_SQL)?;
        return insert_version(t);
    }
    let foreign = |why: String| not_a_store(loc, format!("schema {schema} is not a DHP store: {why}"));
    let has_version = tables.iter().any(|n| n == "schema_version");
    if !has_version {
        let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
        return Err(foreign(format!("it holds other tables ({}) and no schema_version", shown.join(", "))));
    }
    // DHP's schema_version first: a newer store is told apart from a foreign one
    let version_cols: Vec<(String, String)> = t
        .query(COLUMNS_SQL, &[&schema])?
        .iter()
        .filter(|r| r.get::<_, String>(0) == "schema_version")
        .map(|r| (r.get(1), r.get(2)))
        .collect();
    let dhp_version_table = layout()
        .into_iter()
        .find(|(name, _)| *name == "schema_version")
        .is_some_and(|(_, cols)| cols.iter().all(|(c, ty)| version_cols.iter().any(|(n, t)| n == c && t == ty)));
    if !dhp_version_table {
        let shown: Vec<String> = version_cols.iter().map(|(n, t)| format!("{n} {t}")).collect();
        return Err(foreign(format!(
            "its schema_version table ({}) is not DHP's (version bigint, applied_at double precision)",
            shown.join(", ")
        )));
    }
    let found: Option<i64> = t.query_one("SELECT MAX(version)::bigint FROM schema_version", &[])?.get(0);
    if let Some(v) = found.filter(|v| *v > SCHEMA_VERSION) {
        return Err(Error::NewerSchema { found: v, supported: SCHEMA_VERSION });
    }
    let gaps = Gaps::read(t, schema, &tables)?;
    match found {
        Some(SCHEMA_VERSION) if gaps.none() => Ok(()),
        Some(SCHEMA_VERSION) => Err(foreign(format!("the layout is incomplete ({})", gaps.describe()))),
        // an older DHP store is brought to v3 on open (PROTOCOL §3.1: the
        // upgrade only adds tables), whatever the command, as on SQLite
        Some(_) if gaps.older_dhp() => {
            t.batch_execute(SCHEMA_SQL)?;
            insert_version(t)
        }
        Some(v) => Err(foreign(format!(
            "schema_version holds version {v}, not {SCHEMA_VERSION}, and the layout is not DHP's ({})",
            gaps.describe()
        ))),
        // every table and no version: only a tampered store; a creating
        // command initialises it, as the reference does
        None if gaps.none() && create => insert_version(t),
        None if gaps.none() => Err(foreign("schema_version is empty: the store was never initialised".into())),
        None => Err(foreign(format!("schema_version is empty and the layout is incomplete ({})", gaps.describe()))),
    }
}

/// Record version 3.
fn insert_version(t: &mut Transaction<'_>) -> Result<()> {
    t.execute(
        "INSERT INTO schema_version (version, applied_at) VALUES ($1, extract(epoch FROM clock_timestamp())::float8) \
         ON CONFLICT (version) DO NOTHING",
        &[&SCHEMA_VERSION],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_read_from_the_ddl() {
        let l = layout();
        let names: Vec<&str> = l.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, TABLES);
        let handoffs = &l.iter().find(|(n, _)| *n == "handoffs").unwrap().1;
        assert_eq!(
            handoffs,
            &[("hid", "text"), ("envelope_json", "text"), ("updated_at", "double precision"), ("status", "text")]
        );
        let version = &l[0].1;
        assert_eq!(version, &[("version", "bigint"), ("applied_at", "double precision")]);
        let n: usize = l.iter().map(|(_, c)| c.len()).sum();
        assert_eq!(n, SCHEMA_SQL.lines().filter(|l| l.starts_with("    ") && !l.contains("PRIMARY KEY (")).count());
    }
}

//! The schema: the reference's DDL verbatim and the indexes dhp-rs adds.

/// The reference's DDL (`dhp/store.py`), verbatim.
pub const SCHEMA_SQL: &str = r#"
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    hid TEXT PRIMARY KEY,
    envelope_json TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    hid TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    state_hash TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (hid, seq)
);
CREATE INDEX IF NOT EXISTS idx_checkpoints_hid ON checkpoints(hid);
CREATE TABLE IF NOT EXISTS ownership (
    hid TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    fence INTEGER NOT NULL,
    lease_expires_at REAL NOT NULL,
    heartbeat_interval_s REAL NOT NULL,
    max_missed INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leadership (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
-- v2: effect log (idempotency keyed by step_id)
CREATE TABLE IF NOT EXISTS effects (
    hid TEXT NOT NULL,
    step_id TEXT NOT NULL,
    result_json TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (hid, step_id)
);
CREATE INDEX IF NOT EXISTS idx_effects_hid ON effects(hid);
-- v2: approval gates for irreversible actions
CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY,
    hid TEXT NOT NULL,
    action_class TEXT NOT NULL,
    details_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    decided_at REAL
);
CREATE INDEX IF NOT EXISTS idx_approvals_hid ON approvals(hid);
-- v2: progress tracking for stall detection
CREATE TABLE IF NOT EXISTS progress (
    hid TEXT PRIMARY KEY,
    last_checkpoint_at REAL,
    last_digest TEXT,
    digest_repeat_count INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
);
-- v3: capability audit trail
CREATE TABLE IF NOT EXISTS capability_audit (
    hid TEXT NOT NULL,
    domain TEXT NOT NULL,
    resource TEXT NOT NULL,
    granted INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_cap_audit_hid ON capability_audit(hid);
"#;

/// Indexes dhp-rs adds to the reference's schema so that the supervisor's
/// scan and liveness poll read only what changed or expired (see
/// docs/scale.md). Only extra indexes: the tables stay byte-for-byte the
/// reference's, and the reference opens, reads and writes a store that has
/// them (SQLite keeps indexes up to date for every writer).
///
/// The status index's expression is [`super::sql::STATUS`] verbatim (a query uses the
/// index only when it spells the expression the same way); it is NULL for
/// an envelope SQLite cannot read, so a corrupt row never fails a write.
pub const EXTRA_INDEXES_SQL: &str = r#"
CREATE INDEX IF NOT EXISTS dhprs_ownership_lease ON ownership(lease_expires_at) WHERE holder != '__orphaned__';
CREATE INDEX IF NOT EXISTS dhprs_ownership_holder ON ownership(holder, hid);
CREATE INDEX IF NOT EXISTS dhprs_ownership_updated ON ownership(updated_at, hid);
CREATE INDEX IF NOT EXISTS dhprs_handoffs_updated ON handoffs(updated_at, hid);
CREATE INDEX IF NOT EXISTS dhprs_progress_repeats ON progress(updated_at, hid, digest_repeat_count) WHERE digest_repeat_count > 0;
CREATE INDEX IF NOT EXISTS dhprs_checkpoints_first ON checkpoints(at, hid) WHERE seq = 0;
CREATE INDEX IF NOT EXISTS dhprs_approvals_pending ON approvals(expires_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS dhprs_handoffs_status ON handoffs((CASE WHEN json_valid(envelope_json) THEN json_extract(envelope_json, '$.execution.status') END), hid);
"#;

/// Indexes of earlier dhp-rs versions that [`EXTRA_INDEXES_SQL`] replaced,
/// dropped on open: `dhprs_progress_updated` (every progress row by
/// `updated_at`) cost every checkpoint one more WAL page, rewriting its
/// entry, for changes the scan need not see (docs/scale.md).
pub const DROPPED_INDEXES_SQL: &str = "DROP INDEX IF EXISTS dhprs_progress_updated;";

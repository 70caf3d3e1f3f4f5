//! Optional features an adapter may declare in its `hello` result.

/// The store is `<root>/dhp.sqlite3` in the reference's schema v3: the
/// runner cross-checks it with its own SQLite reader (and writes it to
/// simulate a newer schema).
pub const STANDARD_STORE: &str = "standard-store";
/// Honors the `DHP_*` environment variables (lease timing, size limits).
pub const ENV_CONFIG: &str = "env-config";
/// `note_activity`, and `scan` orphans / dead-letters stalled work.
pub const STALL_DETECTION: &str = "stall-detection";
/// `record_effect` / `effect_done`.
pub const EFFECTS: &str = "effects";
/// `require_capability`.
pub const CAPABILITIES: &str = "capabilities";
/// `canonical` / `handoff_id` of JSON text.
pub const CANONICAL: &str = "canonical";
/// `liveness_publish`: a supervisor on the same host notices a
/// SIGKILLed worker long before its lease runs out.
pub const FAST_DEATH_DETECTION: &str = "fast-death-detection";
/// `request_approval`, `approvals`, `decide_approval`, `await_approval`:
/// approval gates for financial and destructive actions.
pub const APPROVALS: &str = "approvals";
/// Takes a `postgres://…?schema=NAME` URL wherever it takes a store
/// root, and keeps the store in that schema with the layout of
/// docs/postgres.md (the runner reads it with its own reader).
pub const POSTGRES_STORE: &str = "postgres-store";
/// Honors a request's `clock_offset_s`: while answering it, the
/// implementation's protocol clock reads real time plus the offset, so
/// the runner moves time on instead of sleeping through leases,
/// stalls, wall-clock budgets and approval timeouts.
pub const CLOCK_CONTROL: &str = "clock-control";

/// All of them, in the order of the schema's enum.
pub const ALL: &[&str] = &[
    STANDARD_STORE,
    ENV_CONFIG,
    STALL_DETECTION,
    EFFECTS,
    CAPABILITIES,
    CANONICAL,
    FAST_DEATH_DETECTION,
    APPROVALS,
    POSTGRES_STORE,
    CLOCK_CONTROL,
];

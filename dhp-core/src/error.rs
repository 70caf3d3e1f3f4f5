//! The one error type of dhp-core.
//!
//! Variants follow the reference's taxonomy (`dhp/errors.py`); [`Error::kind`]
//! returns the reference's class name so adapters and scripts can compare
//! failures across implementations, and [`Error::exit_code`] is what the `dhp`
//! binary exits with.

use std::path::PathBuf;

/// Result alias for dhp-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in DHP, typed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- validation ----
    /// A handoff, worker or supervisor id that is not well formed.
    #[error("malformed {what}: {reason}")]
    MalformedId { what: &'static str, reason: String },
    /// Input that is structurally wrong (not an object, missing field, ...).
    #[error("invalid input: {0}")]
    Validation(String),
    /// A result that violates the contract's `output_schema`.
    #[error("result violates output_schema: {detail}")]
    SchemaViolation { hid: String, detail: String },
    /// No handoff with that id in this store.
    #[error("unknown handoff {}", short(hid))]
    UnknownHandoff { hid: String },
    /// A payload larger than its configured limit.
    #[error("{what} is {size} bytes, over the limit of {limit}")]
    Oversize { what: &'static str, size: usize, limit: usize },
    /// JSON text that does not parse.
    #[error("bad JSON: {0}")]
    Json(String),
    /// NaN or an infinity, which JSON cannot carry.
    #[error("non-finite number {0} cannot be written as JSON")]
    NonFinite(String),
    /// A number (a duration, a count) outside its documented range.
    #[error("{name}={value} is out of range: want {range}")]
    OutOfRange { name: String, value: String, range: String },

    // ---- ownership / fencing ----
    /// Lost a compare-and-set race (claim, recover, checkpoint seq).
    #[error("ownership lost for {}: {reason}", short(hid))]
    OwnershipLost { hid: String, reason: String },
    /// Holder and fence match but the lease ran out.
    #[error("lease lost for {}: expired {expired_ago_s:.3}s ago", short(hid))]
    LeaseLost { hid: String, expired_ago_s: f64 },
    /// The presented (holder, fence) is not the current owner.
    #[error(
        "stale fence for {}: presented {presented} as {holder}, current {current:?} held by {current_holder:?}",
        short(hid)
    )]
    StaleFence { hid: String, holder: String, presented: i64, current: Option<i64>, current_holder: Option<String> },

    // ---- lifecycle ----
    /// The operation is not allowed in the handoff's current status.
    #[error("{op} rejected for {}: {reason}", short(hid))]
    State { hid: String, op: &'static str, reason: String },
    /// Steps, spend or wall clock over the contract's budget.
    #[error("budget exceeded for {}: {reason}", short(hid))]
    BudgetExceeded { hid: String, reason: String },
    /// A content address did not verify.
    #[error("tampered or corrupt: {0}")]
    Tamper(String),

    // ---- approvals / capabilities ----
    /// An irreversible action needs an approval first.
    #[error("{action_class} action needs approval: {approval_id}")]
    ApprovalRequired { approval_id: String, action_class: String },
    /// No approval request with that id in this store.
    #[error("unknown approval {approval_id}")]
    UnknownApproval { approval_id: String },
    /// The approval was already decided (or expired): a decision is final.
    #[error("approval {approval_id} is already {status}")]
    ApprovalDecided { approval_id: String, status: String },
    /// The approval was denied or expired.
    #[error("approval {approval_id} {status}")]
    ApprovalDenied { approval_id: String, status: String },
    /// The contract does not declare this capability.
    #[error("capability denied: {domain}:{resource} not in the contract of {}", short(hid))]
    CapabilityDenied { hid: String, domain: String, resource: String },

    // ---- transport ----
    /// TCP or log transport failure.
    #[error("transport: {0}")]
    Transport(String),

    // ---- environment ----
    /// The store was written by a newer dhp.
    #[error("store schema v{found} is newer than this dhp (v{supported}); upgrade dhp first")]
    NewerSchema { found: i64, supported: i64 },
    /// A DHP_* setting that does not validate.
    #[error("configuration: {0}")]
    Config(String),
    /// ROOT holds no usable DHP store (missing, empty or foreign file) and
    /// the caller did not ask to create one.
    #[error("no DHP store at {}: {reason}", root.display())]
    NoStore { root: PathBuf, reason: String },
    /// SQLite failure.
    #[error("store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// File system failure, with the path involved.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A ROOT that is neither a directory nor a `postgres://` URL.
    #[error("store location {location}: {reason}")]
    StoreLocation { location: String, reason: String },
    /// PostgreSQL failure (a statement, a lost connection).
    #[error("postgres: {}", pg_message(.0))]
    Postgres(#[from] postgres::Error),
    /// PostgreSQL could not be reached or refused the login.
    #[error("cannot connect to PostgreSQL at {target}: {}", pg_message(.source))]
    PgConnect { target: String, source: postgres::Error },
    /// The location holds no DHP store, or something that is not one.
    #[error("{location}: {reason}")]
    NotAStore { location: String, reason: String },

    /// TLS set-up or a handshake failed: an unreadable PEM file, a peer
    /// certificate that is untrusted, expired or missing, or a peer that
    /// speaks plaintext where TLS is expected (or the other way round).
    #[error("TLS: {context}: {source}")]
    Tls { context: String, source: std::sync::Arc<dyn std::error::Error + Send + Sync> },
}

/// The server's message when there is one, else the client's.
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(cause) = src {
                let c = cause.to_string();
                if !s.contains(&c) {
                    s = format!("{s}: {c}");
                }
                src = cause.source();
            }
            s
        }
    }
}

fn short(hid: &str) -> &str {
    hid.get(..12).unwrap_or(hid)
}

impl Error {
    /// True when this error is about one stored row (unparsable JSON, an
    /// unknown status, a bad envelope) rather than the store as a whole
    /// (I/O, a busy or corrupt database, a lost connection). Scans and
    /// listings quarantine the row and go on; anything else stops them.
    pub fn concerns_one_row(&self) -> bool {
        use rusqlite::ErrorCode as C;
        match self {
            Error::Io { .. }
            | Error::NewerSchema { .. }
            | Error::Config(_)
            | Error::Postgres(_)
            | Error::PgConnect { .. }
            | Error::NotAStore { .. }
            | Error::StoreLocation { .. } => false,
            Error::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => !matches!(
                f.code,
                C::DatabaseBusy
                    | C::DatabaseLocked
                    | C::SystemIoFailure
                    | C::DiskFull
                    | C::CannotOpen
                    | C::ReadOnly
                    | C::OutOfMemory
                    | C::PermissionDenied
                    | C::NotADatabase
                    | C::DatabaseCorrupt
            ),
            _ => true,
        }
    }

    /// The reference's exception class name for this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::MalformedId { .. }
            | Error::Validation(_)
            | Error::Json(_)
            | Error::NonFinite(_)
            | Error::OutOfRange { .. } => "ValidationError",
            Error::SchemaViolation { .. } => "ValidationError",
            Error::UnknownHandoff { .. } => "UnknownHandoff",
            Error::Oversize { .. } => "OversizePayload",
            Error::OwnershipLost { .. } => "OwnershipLost",
            Error::LeaseLost { .. } => "LeaseLost",
            Error::StaleFence { .. } => "FencingError",
            Error::State { .. } => "StateError",
            Error::BudgetExceeded { .. } => "BudgetExceeded",
            Error::Tamper(_) => "TamperError",
            Error::ApprovalRequired { .. } => "ApprovalRequired",
            Error::UnknownApproval { .. } => "UnknownApproval",
            Error::ApprovalDecided { .. } => "StateError",
            Error::ApprovalDenied { .. } => "ApprovalDenied",
            Error::CapabilityDenied { .. } => "CapabilityDenied",
            Error::Transport(_) | Error::Tls { .. } => "TransportError",
            Error::NewerSchema { .. } => "ValidationError",
            Error::Config(_) => "ConfigError",
            Error::Sqlite(_) | Error::NoStore { .. } => "StoreError",
            Error::Io { .. } => "IoError",
            Error::StoreLocation { .. } => "ConfigError",
            Error::Postgres(_) | Error::PgConnect { .. } | Error::NotAStore { .. } => "StoreError",
        }
    }

    /// Exit code of the `dhp` binary for this error (documented in the README).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::MalformedId { .. }
            | Error::Validation(_)
            | Error::Json(_)
            | Error::NonFinite(_)
            | Error::OutOfRange { .. }
            | Error::SchemaViolation { .. }
            | Error::Oversize { .. } => 3,
            Error::UnknownHandoff { .. } | Error::UnknownApproval { .. } => 4,
            Error::OwnershipLost { .. } | Error::LeaseLost { .. } | Error::StaleFence { .. } => 5,
            Error::State { .. } | Error::ApprovalDecided { .. } => 6,
            Error::BudgetExceeded { .. } => 7,
            Error::Tamper(_) => 8,
            Error::ApprovalRequired { .. } | Error::ApprovalDenied { .. } | Error::CapabilityDenied { .. } => 9,
            Error::Transport(_) | Error::Tls { .. } => 10,
            Error::NewerSchema { .. }
            | Error::Config(_)
            | Error::Sqlite(_)
            | Error::NoStore { .. }
            | Error::Io { .. } => 11,
            Error::StoreLocation { .. } | Error::Postgres(_) | Error::PgConnect { .. } | Error::NotAStore { .. } => 11,
        }
    }

    /// True for the ownership family (lost race, lost lease, stale fence).
    pub fn is_ownership(&self) -> bool {
        matches!(self, Error::OwnershipLost { .. } | Error::LeaseLost { .. } | Error::StaleFence { .. })
    }

    /// A file-system failure on `path` (kind `IoError`).
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

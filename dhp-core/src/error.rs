//! The one error type of dhp-core.
//!
//! Variants follow the reference's taxonomy (`dhp/errors.py`); [`Error::kind`]
//! returns the reference's class name so adapters and scripts can compare
//! failures across implementations, and [`Error::exit_code`] is what the `dhp`
//! binary exits with.

use crate::status::ApprovalStatus;
use std::path::PathBuf;

/// Result alias for dhp-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The underlying error a variant keeps as its [`source`](std::error::Error::source).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What kind of store failure an [`Error::Store`] is, independent of the
/// engine (SQLite or PostgreSQL) that reported it. The classification
/// decides whether a scan skips one row or stops ([`Error::concerns_one_row`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Another connection holds a lock the operation needs (SQLite busy or
    /// locked past the busy timeout). Store-wide; retrying later may work.
    Busy,
    /// The database aborted this transaction to resolve a conflict with
    /// another one (PostgreSQL deadlock or serialization failure);
    /// nothing of it was written.
    Conflict,
    /// The store cannot be used at all: an I/O failure, a full disk, a
    /// read-only or unopenable file, no permission, out of memory.
    Unavailable,
    /// The file is not a database, or the database is corrupt.
    Corrupt,
    /// The database server could not be reached, refused the login, or the
    /// connection broke.
    Connection,
    /// The database server rejected a statement (any PostgreSQL server
    /// error not classified above). Store-wide.
    Statement,
    /// A statement violated a constraint of the embedded database
    /// (SQLite). Concerns the rows it touched.
    Constraint,
    /// Anything else the embedded database reported, such as a stored value
    /// that cannot be read as its column's type. Concerns one row.
    Other,
}

impl StoreErrorKind {
    /// True when the failure is about the rows a statement touched rather
    /// than the store as a whole.
    pub fn concerns_one_row(self) -> bool {
        matches!(self, StoreErrorKind::Constraint | StoreErrorKind::Other)
    }
}

/// Which part of the transport an [`Error::Transport`] comes from, so a
/// caller can decide what to do without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// The peer answered and refused: a wrong token, a line over the
    /// limit, a busy server, a seq it cannot take. Retrying the same
    /// request will not help.
    Refused,
    /// No acknowledgement within the ship timeout (the peer is down, slow
    /// or cut off); what was sent is kept in the local buffer and queue.
    Unacknowledged,
    /// A `HOST:PORT` that does not parse, or a buffer log that cannot be
    /// used for this handoff: fix the arguments.
    Address,
    /// The server's durable journal failed to sync or checkpoint: it
    /// acknowledges nothing more until restarted.
    Journal,
    /// A file that is not a transport log (no envelope header).
    Log,
    /// An entry of the transport server's log directory that is a symbolic
    /// link or not a regular file (a planted `<hid>.log` or journal name):
    /// refused, never followed or written through.
    Link,
    /// A thread, runtime, listener or signal watch could not be started.
    Start,
    /// A server (TCP transport, MCP, A2A) failed while running.
    Server,
}

/// Everything that can go wrong in DHP, typed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- validation ----
    /// A handoff, worker or supervisor id that is not well formed.
    #[error("malformed {what}: {reason}")]
    MalformedId {
        /// Which id ("handoff id", "runner id", ...).
        what: &'static str,
        /// Why it is not well formed.
        reason: String,
    },
    /// Input that is structurally wrong (not an object, missing field, ...).
    #[error("invalid input: {reason}")]
    Validation {
        /// What is wrong with the input.
        reason: String,
        /// The parse or conversion error behind it, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// A result that violates the contract's `output_schema`.
    #[error("result violates output_schema: {detail}")]
    SchemaViolation {
        /// The handoff whose result it is.
        hid: String,
        /// The schema validator's findings.
        detail: String,
    },
    /// No handoff with that id in this store.
    #[error("unknown handoff {}", short(hid))]
    UnknownHandoff {
        /// The id asked for.
        hid: String,
    },
    /// A payload larger than its configured limit.
    #[error("{what} is {size} bytes, over the limit of {limit}")]
    Oversize {
        /// Which payload (checkpoint, envelope, result, line).
        what: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The configured limit in bytes.
        limit: usize,
    },
    /// JSON text that does not parse.
    #[error("bad JSON: {detail}")]
    Json {
        /// The parser's message.
        detail: String,
        /// The parser's error, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// NaN or an infinity, which JSON cannot carry.
    #[error("non-finite number {0} cannot be written as JSON")]
    NonFinite(
        /// The number as Rust prints it.
        String,
    ),
    /// A number (a duration, a count) outside its documented range.
    #[error("{name}={value} is out of range: want {range}")]
    OutOfRange {
        /// The setting, flag or argument.
        name: String,
        /// The value given.
        value: String,
        /// The accepted range, in words.
        range: String,
    },

    // ---- ownership / fencing ----
    /// Lost a compare-and-set race (claim, recover, checkpoint seq).
    #[error("ownership lost for {}: {reason}", short(hid))]
    OwnershipLost {
        /// The handoff.
        hid: String,
        /// Who or what won the race.
        reason: String,
    },
    /// Holder and fence match but the lease ran out.
    #[error("lease lost for {}: expired {expired_ago_s:.3}s ago", short(hid))]
    LeaseLost {
        /// The handoff.
        hid: String,
        /// Seconds since the lease expired, by the store's clock.
        expired_ago_s: f64,
    },
    /// The presented (holder, fence) is not the current owner.
    #[error(
        "stale fence for {}: presented {presented} as {holder}, current {current:?} held by {current_holder:?}",
        short(hid)
    )]
    StaleFence {
        /// The handoff.
        hid: String,
        /// The runner that presented the fence.
        holder: String,
        /// The fencing token presented.
        presented: crate::lease::Fence,
        /// The current fencing token, if the handoff is owned.
        current: Option<crate::lease::Fence>,
        /// The current holder, if the handoff is owned.
        current_holder: Option<String>,
    },

    /// An MCP session acted under a worker id it did not claim or recover
    /// the handoff with (`dhp mcp` binds each worker id to its session).
    #[error(
        "{worker} did not claim or recover {} in this session: only the session that did may act for it",
        short(hid)
    )]
    UnboundWorker {
        /// The handoff.
        hid: String,
        /// The worker id presented.
        worker: String,
    },

    // ---- lifecycle ----
    /// The operation is not allowed in the handoff's current status.
    #[error("{op} rejected for {}: {reason}", short(hid))]
    State {
        /// The handoff.
        hid: String,
        /// The operation refused (claim, checkpoint, complete, ...).
        op: &'static str,
        /// Why (usually the current status).
        reason: String,
    },
    /// Steps, spend or wall clock over the contract's budget.
    #[error("budget exceeded for {}: {reason}", short(hid))]
    BudgetExceeded {
        /// The handoff.
        hid: String,
        /// Which budget and by how much.
        reason: String,
    },
    /// A content address did not verify.
    #[error("tampered or corrupt: {detail}")]
    Tamper {
        /// What did not verify.
        detail: String,
        /// The failed check underneath (e.g. an envelope's own tamper
        /// error inside a bundle or log), if any.
        #[source]
        source: Option<BoxError>,
    },

    // ---- approvals / capabilities ----
    /// An irreversible action needs an approval first.
    #[error("{action_class} action needs approval: {approval_id}")]
    ApprovalRequired {
        /// The approval request created for it.
        approval_id: String,
        /// The contract's action class.
        action_class: String,
    },
    /// No approval request with that id in this store.
    #[error("unknown approval {approval_id}")]
    UnknownApproval {
        /// The id asked for.
        approval_id: String,
    },
    /// The approval was already decided (or expired): a decision is final.
    #[error("approval {approval_id} is already {status}")]
    ApprovalDecided {
        /// The approval request.
        approval_id: String,
        /// Its status (approved, denied, expired).
        status: ApprovalStatus,
    },
    /// The approval was denied or expired.
    #[error("approval {approval_id} {status}")]
    ApprovalDenied {
        /// The approval request.
        approval_id: String,
        /// Its status (denied, expired).
        status: ApprovalStatus,
    },
    /// The contract does not declare this capability.
    #[error("capability denied: {domain}:{resource} not in the contract of {}", short(hid))]
    CapabilityDenied {
        /// The handoff.
        hid: String,
        /// The capability's domain.
        domain: String,
        /// The resource asked for.
        resource: String,
    },

    // ---- transport ----
    /// TCP or log transport failure.
    #[error("transport: {detail}")]
    Transport {
        /// Which part of the transport failed: what a caller can act on
        /// without reading `detail`.
        kind: TransportKind,
        /// What failed, with the peer or file involved.
        detail: String,
        /// The socket, protocol or I/O error underneath, if any.
        #[source]
        source: Option<BoxError>,
    },

    // ---- environment ----
    /// The store was written by a newer dhp.
    #[error("store schema v{found} is newer than this dhp (v{supported}); upgrade dhp first")]
    NewerSchema {
        /// The store's schema version.
        found: i64,
        /// The newest schema version this dhp knows.
        supported: i64,
    },
    /// A DHP_* setting that does not validate.
    #[error("configuration: {detail}")]
    Config {
        /// Which setting and why (names the variable).
        detail: String,
        /// The parse error underneath, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// ROOT holds no usable DHP store (missing, empty or foreign file) and
    /// the caller did not ask to create one.
    #[error("no DHP store at {}: {reason}", root.display())]
    NoStore {
        /// The store directory.
        root: PathBuf,
        /// What is there instead.
        reason: String,
    },
    /// The database engine behind the store failed (SQLite or PostgreSQL).
    #[error("{context}: {detail}")]
    Store {
        /// What was being done (`store`, `postgres`, `cannot connect to
        /// PostgreSQL at HOST:PORT/DB`).
        context: String,
        /// The engine-neutral classification.
        kind: StoreErrorKind,
        /// The engine's message (for PostgreSQL the server's, with its
        /// SQLSTATE).
        detail: String,
        /// The engine's error.
        #[source]
        source: BoxError,
    },
    /// File system failure, with the path involved.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A ROOT that is neither a directory nor a `postgres://` URL.
    #[error("store location {location}: {reason}")]
    StoreLocation {
        /// The location as given (password masked).
        location: String,
        /// Why it is not usable.
        reason: String,
    },
    /// The location holds no DHP store, or something that is not one.
    #[error("{location}: {reason}")]
    NotAStore {
        /// The location (password masked).
        location: String,
        /// What is there instead.
        reason: String,
    },
    /// TLS set-up or a handshake failed: an unreadable PEM file, a peer
    /// certificate that is untrusted, expired or missing, or a peer that
    /// speaks plaintext where TLS is expected (or the other way round).
    #[error("TLS: {context}: {source}")]
    Tls {
        /// What was being set up or who the peer was.
        context: String,
        /// The TLS library's or the file reader's error.
        #[source]
        source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
}

#[doc(hidden)]
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        let kind = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => StoreErrorKind::Busy,
                C::SystemIoFailure
                | C::DiskFull
                | C::CannotOpen
                | C::ReadOnly
                | C::OutOfMemory
                | C::PermissionDenied => StoreErrorKind::Unavailable,
                C::NotADatabase | C::DatabaseCorrupt => StoreErrorKind::Corrupt,
                C::ConstraintViolation => StoreErrorKind::Constraint,
                _ => StoreErrorKind::Other,
            },
            _ => StoreErrorKind::Other,
        };
        Error::Store { context: "store".into(), kind, detail: e.to_string(), source: Box::new(e) }
    }
}

#[doc(hidden)]
impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        Error::Store { context: "postgres".into(), kind: pg_kind(&e), detail: pg_message(&e), source: Box::new(e) }
    }
}

#[doc(hidden)]
impl From<crate::store::postgres::lane::LaneError> for Error {
    fn from(e: crate::store::postgres::lane::LaneError) -> Self {
        use crate::store::postgres::lane::LaneError;
        let kind = match &e {
            LaneError::Db { code, .. } => code_kind(code),
            _ => StoreErrorKind::Connection,
        };
        Error::Store { context: "postgres".into(), kind, detail: e.to_string(), source: Box::new(e) }
    }
}

/// The kind of a server error by its SQLSTATE (as [`pg_kind`]).
fn code_kind(code: &str) -> StoreErrorKind {
    match code {
        "40P01" | "40001" => StoreErrorKind::Conflict,
        c if c.starts_with("08") => StoreErrorKind::Connection,
        _ => StoreErrorKind::Statement,
    }
}

/// The SQLSTATE of a PostgreSQL failure from either client.
fn pg_code<'a>(source: &'a (dyn std::error::Error + Send + Sync + 'static)) -> Option<&'a str> {
    if let Some(p) = source.downcast_ref::<postgres::Error>() {
        return p.code().map(postgres::error::SqlState::code);
    }
    source.downcast_ref::<crate::store::postgres::lane::LaneError>().and_then(|l| l.code())
}

/// SQLSTATEs of a server that no longer takes this client's writes:
/// read_only_sql_transaction, admin_shutdown, crash_shutdown,
/// cannot_connect_now (starting up, or in recovery).
const SERVER_LOST_STATES: [&str; 4] = ["25006", "57P01", "57P02", "57P03"];

/// The engine-neutral kind of a PostgreSQL failure: a client-side failure
/// (no server error) is the connection's.
fn pg_kind(e: &postgres::Error) -> StoreErrorKind {
    use postgres::error::SqlState;
    match e.code() {
        None => StoreErrorKind::Connection,
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE => {
            StoreErrorKind::Conflict
        }
        Some(c) if c.code().starts_with("08") => StoreErrorKind::Connection,
        Some(_) => StoreErrorKind::Statement,
    }
}

impl Error {
    /// PostgreSQL at `target` could not be reached or refused the login.
    pub(crate) fn pg_connect(target: String, e: postgres::Error) -> Self {
        Error::Store {
            context: format!("cannot connect to PostgreSQL at {target}"),
            kind: StoreErrorKind::Connection,
            detail: pg_message(&e),
            source: Box::new(e),
        }
    }

    /// PostgreSQL at `target` accepted the connection but did not finish
    /// the handshake (TLS, start-up, authentication) within `limit`.
    pub(crate) fn pg_connect_timeout(target: String, limit: std::time::Duration) -> Self {
        let detail = format!(
            "no answer within {:.1} s (connect_timeout): the server, or a proxy in front of it, accepts connections but does not answer",
            limit.as_secs_f64()
        );
        Error::Store {
            context: format!("cannot connect to PostgreSQL at {target}"),
            kind: StoreErrorKind::Connection,
            source: Box::new(std::io::Error::new(std::io::ErrorKind::TimedOut, detail.clone())),
            detail,
        }
    }

    /// True when this is a PostgreSQL deadlock (the server aborted the
    /// transaction; running it again may succeed).
    pub(crate) fn is_pg_deadlock(&self) -> bool {
        match self {
            Error::Store { source, .. } => pg_code(source.as_ref()) == Some("40P01"),
            _ => false,
        }
    }
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
        match self {
            Error::Io { .. }
            | Error::NewerSchema { .. }
            | Error::Config { .. }
            | Error::NotAStore { .. }
            | Error::StoreLocation { .. } => false,
            Error::Store { kind, .. } => kind.concerns_one_row(),
            _ => true,
        }
    }

    /// The reference's exception class name for this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::MalformedId { .. }
            | Error::Validation { .. }
            | Error::Json { .. }
            | Error::NonFinite(_)
            | Error::OutOfRange { .. } => "ValidationError",
            Error::SchemaViolation { .. } => "ValidationError",
            Error::UnknownHandoff { .. } => "UnknownHandoff",
            Error::Oversize { .. } => "OversizePayload",
            Error::OwnershipLost { .. } => "OwnershipLost",
            Error::LeaseLost { .. } => "LeaseLost",
            Error::StaleFence { .. } | Error::UnboundWorker { .. } => "FencingError",
            Error::State { .. } => "StateError",
            Error::BudgetExceeded { .. } => "BudgetExceeded",
            Error::Tamper { .. } => "TamperError",
            Error::ApprovalRequired { .. } => "ApprovalRequired",
            Error::UnknownApproval { .. } => "UnknownApproval",
            Error::ApprovalDecided { .. } => "StateError",
            Error::ApprovalDenied { .. } => "ApprovalDenied",
            Error::CapabilityDenied { .. } => "CapabilityDenied",
            Error::Transport { .. } | Error::Tls { .. } => "TransportError",
            Error::NewerSchema { .. } => "ValidationError",
            Error::Config { .. } => "ConfigError",
            Error::Store { .. } | Error::NoStore { .. } | Error::NotAStore { .. } => "StoreError",
            Error::Io { .. } => "IoError",
            Error::StoreLocation { .. } => "ConfigError",
        }
    }

    /// Exit code of the `dhp` binary for this error (documented in the README).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::MalformedId { .. }
            | Error::Validation { .. }
            | Error::Json { .. }
            | Error::NonFinite(_)
            | Error::OutOfRange { .. }
            | Error::SchemaViolation { .. }
            | Error::Oversize { .. } => 3,
            Error::UnknownHandoff { .. } | Error::UnknownApproval { .. } => 4,
            Error::OwnershipLost { .. }
            | Error::LeaseLost { .. }
            | Error::StaleFence { .. }
            | Error::UnboundWorker { .. } => 5,
            Error::State { .. } | Error::ApprovalDecided { .. } => 6,
            Error::BudgetExceeded { .. } => 7,
            Error::Tamper { .. } => 8,
            Error::ApprovalRequired { .. } | Error::ApprovalDenied { .. } | Error::CapabilityDenied { .. } => 9,
            Error::Transport { .. } | Error::Tls { .. } => 10,
            Error::NewerSchema { .. }
            | Error::Config { .. }
            | Error::Store { .. }
            | Error::NoStore { .. }
            | Error::Io { .. }
            | Error::StoreLocation { .. }
            | Error::NotAStore { .. } => 11,
        }
    }

    /// True for the ownership family (lost race, lost lease, stale fence).
    pub fn is_ownership(&self) -> bool {
        matches!(
            self,
            Error::OwnershipLost { .. }
                | Error::LeaseLost { .. }
                | Error::StaleFence { .. }
                | Error::UnboundWorker { .. }
        )
    }

    /// The store's classification of an [`Error::Store`], else `None`.
    pub fn store_kind(&self) -> Option<StoreErrorKind> {
        match self {
            Error::Store { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The call failed because this client lost its database server, not
    /// because of anything it asked: the connection broke (or could not be
    /// made), or the server no longer takes writes — read-only, in recovery
    /// (a demoted primary, a standby), shutting down. A new connection,
    /// perhaps to another host of a multi-host URL, may succeed; whether a
    /// write in flight was committed is unknown until it is read back.
    pub fn is_server_lost(&self) -> bool {
        match self {
            Error::Store { kind: StoreErrorKind::Connection, .. } => true,
            Error::Store { source, .. } => pg_code(source.as_ref()).is_some_and(|c| SERVER_LOST_STATES.contains(&c)),
            _ => false,
        }
    }

    /// A file-system failure on `path` (kind `IoError`).
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// Invalid input, with no underlying error.
    pub fn validation(reason: impl Into<String>) -> Self {
        Error::Validation { reason: reason.into(), source: None }
    }

    /// Invalid input found by a parser or conversion that failed with `source`.
    pub fn validation_from(reason: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Validation { reason: reason.into(), source: Some(source.into()) }
    }

    /// JSON text that does not parse, with no underlying error.
    pub fn json(detail: impl Into<String>) -> Self {
        Error::Json { detail: detail.into(), source: None }
    }

    /// JSON text the parser rejected with `source` (its message is the detail).
    pub fn json_from(source: serde_json::Error) -> Self {
        Error::Json { detail: source.to_string(), source: Some(Box::new(source)) }
    }

    /// A content address that did not verify.
    pub fn tamper(detail: impl Into<String>) -> Self {
        Error::Tamper { detail: detail.into(), source: None }
    }

    /// A tamper error found inside `what` (a bundle, a log): the message
    /// names `what`, the original error is the source. Other errors pass.
    pub(crate) fn tamper_within(self, what: &str) -> Self {
        match self {
            Error::Tamper { ref detail, .. } => {
                Error::Tamper { detail: format!("{what}: {detail}"), source: Some(Box::new(self)) }
            }
            other => other,
        }
    }

    /// A transport failure of `kind` with no underlying error.
    pub fn transport(kind: TransportKind, detail: impl Into<String>) -> Self {
        Error::Transport { kind, detail: detail.into(), source: None }
    }

    /// A transport failure of `kind` caused by `source` (a socket or protocol error).
    pub fn transport_from(kind: TransportKind, detail: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Transport { kind, detail: detail.into(), source: Some(source.into()) }
    }

    /// The transport failure's kind, for an [`Error::Transport`]; `None` otherwise.
    pub fn transport_kind(&self) -> Option<TransportKind> {
        match self {
            Error::Transport { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// A configuration error with no underlying error.
    pub fn config(detail: impl Into<String>) -> Self {
        Error::Config { detail: detail.into(), source: None }
    }

    /// A configuration error caused by `source` (a parse error).
    pub fn config_from(detail: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Config { detail: detail.into(), source: Some(source.into()) }
    }
}

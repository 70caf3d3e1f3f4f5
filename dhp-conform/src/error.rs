//! The library's error: what a `--store` value, a report path, an
//! expectations file, a protocol line or a timestamp can be wrong with.
//! The CLI (`main.rs`) prints it; every message is the one the runner has
//! always printed.

use std::path::PathBuf;

/// An error of the dhp-conform library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `--store` value that is neither a PostgreSQL URL nor a directory.
    #[error("--store {value}: {problem}")]
    StoreArg {
        /// The value given.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A `--store` PostgreSQL URL that cannot be used.
    #[error("--store {url}: {source}")]
    Store {
        /// The URL, password masked.
        url: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// A `--store` URL that names a schema: each assertion gets its own.
    #[error("give a base URL without schema= (each assertion gets its own schema)")]
    SchemaInBaseUrl,
    /// A PostgreSQL URL the client library does not parse.
    #[error("bad PostgreSQL URL {url}: {source}")]
    PgUrl {
        /// The URL, password masked.
        url: String,
        /// The client library's error.
        #[source]
        source: postgres::Error,
    },
    /// A connection that failed.
    #[error("connecting to {url}: {}", crate::stores::explain(.source))]
    PgConnect {
        /// The URL, password masked.
        url: String,
        /// The client library's error.
        #[source]
        source: postgres::Error,
    },
    /// A server that accepted the connection and never answered.
    #[error(
        "connecting to {url}: no answer within {timeout_s:.1} s (connect_timeout): the server, or a proxy in front \
         of it, accepts connections but does not answer"
    )]
    PgConnectTimeout {
        /// The URL, password masked.
        url: String,
        /// The connect timeout, seconds.
        timeout_s: f64,
    },
    /// A schema handed out to an assertion that could not be dropped.
    #[error("dropping schema {schema}: {}", crate::stores::explain(.source))]
    DropSchema {
        /// The schema.
        schema: String,
        /// The client library's error.
        #[source]
        source: postgres::Error,
    },
    /// A report path (`--junit`, `--html`, `--badge`) that cannot be used.
    #[error("{flag} {}: {problem}", path.display())]
    ReportPath {
        /// The flag.
        flag: &'static str,
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A report directory that cannot be made or written in.
    #[error("{flag} {}: {doing}{source}", path.display())]
    ReportDir {
        /// The flag.
        flag: &'static str,
        /// The directory.
        path: PathBuf,
        /// What failed ("" for creating it, "cannot write in it: " for the
        /// probe file).
        doing: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A request or reply line that breaks the adapter protocol's schema.
    #[error("{errors}")]
    Schema {
        /// The first validation errors, with where they are.
        errors: String,
    },
    /// A reply to an operation the protocol has no result schema for.
    #[error("no result schema for op {op:?}")]
    NoResultSchema {
        /// The operation.
        op: String,
    },
    /// An ok reply whose result breaks the operation's result schema.
    #[error("result of {op}: {errors}")]
    ResultSchema {
        /// The operation.
        op: String,
        /// The first validation errors.
        errors: String,
    },
    /// A text that is not Python's `isoformat()` of a UTC time.
    #[error("{text:?}: {problem}")]
    Timestamp {
        /// The text.
        text: String,
        /// What is wrong with it, and where.
        problem: String,
    },
    /// An expectations file without its `implementations` object.
    #[error("no \"implementations\" object")]
    NoImplementations,
    /// An implementation's pins that are not an object.
    #[error("implementations.{label} is not an object")]
    PinsNotAnObject {
        /// The implementation label.
        label: String,
    },
    /// A pin naming an assertion that does not exist.
    #[error("{label}: unknown assertion id {id:?} (see dhp-conform --list)")]
    UnknownAssertion {
        /// The implementation label.
        label: String,
        /// The id.
        id: String,
    },
    /// A pin whose outcome is not one of the four.
    #[error("{label}.{id}: outcome must be one of {allowed}, or a list of them (intermittent)")]
    BadOutcome {
        /// The implementation label.
        label: String,
        /// The assertion id.
        id: String,
        /// The outcomes allowed, comma-separated.
        allowed: String,
    },
    /// A pin without its reason.
    #[error("{label}.{id}: a pin needs a \"why\"")]
    PinWithoutWhy {
        /// The implementation label.
        label: String,
        /// The assertion id.
        id: String,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

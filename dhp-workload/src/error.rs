//! The one error type of the workload crate.

use std::num::ParseIntError;

/// Why a census specification was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A number outside the range the census supports.
    #[error("{name}={value} is out of range: want {range}")]
    OutOfRange {
        /// What the number is (`census HI`, `census CHUNK`).
        name: String,
        /// The value given.
        value: String,
        /// The range allowed, in words.
        range: String,
    },
    /// The workload service could not be used.
    #[error("workload service: {detail}")]
    Service {
        /// What went wrong, for a caller to act on.
        failure: ServiceFailure,
        /// The service and what failed.
        detail: String,
        /// The socket error underneath, if any.
        #[source]
        source: Option<std::io::Error>,
    },
    /// A malformed specification.
    #[error("invalid input: {message}")]
    Invalid {
        /// What is wrong, with the text given.
        message: String,
        /// The integer parse that failed, if one did.
        #[source]
        source: Option<ParseIntError>,
    },
}

/// Why the workload service could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceFailure {
    /// The URL is not `http://HOST:PORT`, or does not resolve.
    Address,
    /// No connection or no answer within the timeout.
    Unreachable,
    /// The service answered and refused, or answered something else.
    Refused,
}

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid { message: message.into(), source: None }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

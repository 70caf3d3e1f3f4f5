//! The crate's error type (bad input to the model's vocabulary).

/// Bad input: a name outside the model's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not one of the audited tables.
    #[error("unknown audited table {0:?} (expected ownership, handoffs, checkpoints or leadership)")]
    UnknownTable(String),
    /// Not INSERT, UPDATE, DELETE or REPLACE.
    #[error("unknown row operation {0:?} (expected INSERT, UPDATE, DELETE or REPLACE)")]
    UnknownRowOp(String),
    /// Not a status of docs/PROTOCOL.md §4.
    #[error("unknown status {0:?}")]
    UnknownStatus(String),
}

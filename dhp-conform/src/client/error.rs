//! What can go wrong talking to an adapter, and its answers.

use super::MAX_REPLY_LINE;
use serde_json::Value;

/// What went wrong talking to an adapter.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AdapterError {
    /// The adapter process could not be started.
    #[error("could not start adapter `{cmd}`: {reason}")]
    Spawn {
        /// The adapter command line.
        cmd: String,
        /// Why it could not start.
        reason: String,
    },
    /// No reply within the per-request timeout.
    #[error("adapter did not answer {op} within {secs:.1}s{tail}")]
    Timeout {
        /// The operation asked.
        op: String,
        /// The timeout, seconds.
        secs: f64,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// The adapter process exited with a request outstanding.
    #[error("adapter exited ({status}) while {op} was pending{tail}")]
    Exited {
        /// The operation asked.
        op: String,
        /// The exit status, as the OS reported it.
        status: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// A stdout line that is not a JSON reply object.
    #[error("adapter printed a line that is not a JSON reply while {op} was pending: {line:?}{tail}")]
    Garbage {
        /// The operation asked.
        op: String,
        /// The line (truncated for the message).
        line: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// A reply line over the runner's line limit.
    #[error("adapter's reply to {op} is longer than {} MiB, the runner's limit for one line; stopped reading it{tail}", MAX_REPLY_LINE >> 20)]
    TooLong {
        /// The operation asked.
        op: String,
        /// The adapter's last stderr lines, formatted for the message.
        tail: String,
    },
    /// An earlier request timed out: the process is not asked again.
    #[error("adapter hung: {0}")]
    Hung(String),
    /// A reply whose `id` is not the request's.
    #[error("adapter answered {op} (id {expected}) with id {got}")]
    WrongId {
        /// The operation asked.
        op: String,
        /// The request's id.
        expected: u64,
        /// The id the reply carried (as JSON text).
        got: String,
    },
    /// A reply that violates `reply.schema.json` or the op's result schema.
    #[error("adapter reply to {op} violates reply.schema.json: {detail}")]
    Schema {
        /// The operation asked.
        op: String,
        /// What the schema check reported.
        detail: String,
    },
    /// The `hello` exchange failed or declared an unusable protocol.
    #[error("handshake: {0}")]
    Handshake(String),
    /// The runner's own request violates the request schema (a bug here,
    /// not in the implementation).
    #[error("runner built an invalid {op} request (a dhp-conform bug): {detail}")]
    BadRequest {
        /// The operation.
        op: String,
        /// What the schema check reported.
        detail: String,
    },
    /// Writing the request to the adapter's stdin failed.
    #[error("writing to adapter: {0}")]
    Io(String),
}

/// An adapter's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `{"ok": true, "result": …}`: the result.
    Ok(Value),
    /// `{"ok": false, "error": …}`: the typed error.
    Err(ErrorReply),
}

/// A typed error reply: `kind` is the reference's exception class name.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReply {
    /// The error class (`FencingError`, `StateError`, … or `Unsupported`).
    pub kind: String,
    /// The implementation's message.
    pub message: String,
}

impl std::fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

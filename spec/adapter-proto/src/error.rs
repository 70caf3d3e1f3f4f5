//! What is wrong with a message.

/// A line or a message that does not fit the protocol.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtoError {
    /// The line is not a JSON object.
    #[error("not a JSON object: {0}")]
    NotAnObject(String),
    /// `op` names no operation of the protocol.
    #[error("unknown op {0:?}")]
    UnknownOp(String),
    /// A member of the line itself (`id`, `op`, `at`, `clock_offset_s`,
    /// `ok`, `error`) is missing or of the wrong type.
    #[error("{0}")]
    BadMember(String),
    /// The op's arguments do not fit its shape.
    #[error("{op}: bad args: {detail}")]
    BadArgs {
        /// The operation.
        op: &'static str,
        /// What serde reported.
        detail: String,
    },
    /// An ok reply's result does not fit the op's result shape.
    #[error("{op}: bad result: {detail}")]
    BadResult {
        /// The operation answered.
        op: &'static str,
        /// What serde reported.
        detail: String,
    },
}

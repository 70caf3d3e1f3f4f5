//! How an assertion ends, and the small vocabulary assertions are written in.

use crate::client::{AdapterError, ErrorReply};

/// Why an assertion did not pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Fail {
    /// The implementation broke a guarantee (or answered wrongly).
    Failed(String),
    /// The adapter exchange broke (crash, hang, garbage, wrong id, bad
    /// reply shape, unsupported operation): no verdict on the implementation.
    Errored(String),
    /// An optional feature this assertion needs is not declared.
    Skipped(String),
}

impl Fail {
    /// A broken guarantee, with `msg` saying which.
    pub fn failed(msg: impl Into<String>) -> Fail {
        Fail::Failed(msg.into())
    }

    /// The message, whatever the outcome.
    pub fn message(&self) -> &str {
        match self {
            Fail::Failed(m) | Fail::Errored(m) | Fail::Skipped(m) => m,
        }
    }

    /// Prefix the message with what was being done.
    pub fn context(self, what: &str) -> Fail {
        match self {
            Fail::Failed(m) => Fail::Failed(format!("{what}: {m}")),
            Fail::Errored(m) => Fail::Errored(format!("{what}: {m}")),
            Fail::Skipped(m) => Fail::Skipped(m),
        }
    }
}

impl From<AdapterError> for Fail {
    fn from(e: AdapterError) -> Fail {
        Fail::Errored(e.to_string())
    }
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Fail {
        Fail::Failed(format!("reading the standard store: {e}"))
    }
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Fail {
        Fail::Failed(format!("reading the standard store (PostgreSQL): {e}"))
    }
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Fail {
        Fail::Errored(format!("runner I/O: {e}"))
    }
}

/// Result of an assertion.
pub type Check<T = ()> = Result<T, Fail>;

/// Fail the assertion unless `cond`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if $cond {
        } else {
            return Err($crate::check::Fail::Failed(format!($($fmt)+)));
        }
    };
}

/// Fail unless `left == right`, showing both as JSON text (not Rust
/// `Debug`: `null`, not `None`; `"orphaned"`, not `Some("orphaned")`).
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($fmt:tt)+) => {
        match (&$left, &$right) {
            (l, r) => {
                if l != r {
                    return Err($crate::check::Fail::Failed(format!(
                        "{}: got {}, want {}",
                        format!($($fmt)+),
                        serde_json::to_string(l).unwrap_or_else(|e| format!("<not JSON: {e}>")),
                        serde_json::to_string(r).unwrap_or_else(|e| format!("<not JSON: {e}>"))
                    )));
                }
            }
        }
    };
}

/// Scan actions (or any JSON values) whose `Debug` form (`{acts:?}` in a
/// message) is their JSON text, not Rust's `Object {…}`.
#[derive(Clone, PartialEq, Default)]
pub struct Values(pub Vec<serde_json::Value>);

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::Value::from(self.0.clone()).to_string())
    }
}

impl std::ops::Deref for Values {
    type Target = Vec<serde_json::Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl From<Values> for serde_json::Value {
    fn from(v: Values) -> Self {
        serde_json::Value::Array(v.0)
    }
}

/// Fail unless `got == want` (JSON values), showing both as JSON text
/// (not Rust `Debug`): `WHAT: got G, want W`.
#[macro_export]
macro_rules! ensure_json {
    ($got:expr, $want:expr, $($fmt:tt)+) => {
        match (&$got, &$want) {
            (g, w) => {
                if g != w {
                    return Err($crate::check::Fail::Failed(format!("{}: got {}, want {}", format!($($fmt)+), g, w)));
                }
            }
        }
    };
}

/// The ownership family of error kinds: a stale or lost token.
pub const OWNERSHIP_KINDS: &[&str] = &["FencingError", "LeaseLost", "OwnershipLost"];

/// Check an error reply's kind against the accepted ones.
pub fn kind_in(e: &ErrorReply, kinds: &[&str], what: &str) -> Check {
    if kinds.contains(&e.kind.as_str()) {
        Ok(())
    } else {
        Err(Fail::Failed(format!("{what}: rejected with {e}, want one of {}", kinds.join("/"))))
    }
}

//! # dhp-oracle — DHP's verifying functions, written again from the spec
//!
//! The conformance and chaos harnesses check what an implementation wrote
//! (store rows, transport logs, envelopes). When a checker verifies with the
//! same code that wrote the data, a bug shared by writer and checker stays
//! invisible. This crate re-implements, from `docs/PROTOCOL.md` alone and
//! without depending on dhp-core, exactly the functions such a check needs:
//!
//! - the two JSON renderings that are hashed ([`json::canonical`], §2.2, and
//!   [`json::sorted`], §2.3), including Python's float `repr`;
//! - [`sha256_hex`], [`state_hash`], [`input_hash`], [`handoff_id`] and the
//!   envelope check [`verifies`] (§1.2), and the id syntax [`is_handoff_id`];
//! - the transport-log reader [`log::parse`] (§8.1, §8.3).
//!
//! Its tests pin it to vectors produced by the Python reference
//! (`spec/vectors/`, `scripts/pyref/gen_vectors.py`) and to
//! dhp-core on the same inputs, so the two implementations can only drift
//! apart by failing a test.
//!
//! ```
//! use serde_json::json;
//! let state = json!({"page": "Zürich", "n": 2, "f": 1.5e-7, "g": 10.0});
//! assert_eq!(dhp_oracle::json::sorted(&state).unwrap(), r#"{"f": 1.5e-07, "g": 10.0, "n": 2, "page": "Z\u00fcrich"}"#);
//! assert_eq!(dhp_oracle::json::canonical(&state).unwrap(), r#"{"f":1.5e-07,"g":10.0,"n":2,"page":"Zürich"}"#);
//! assert_eq!(
//!     dhp_oracle::state_hash(&state).unwrap(),
//!     "d51746e814810c08aaf1df43961d6905828065bf77b6532ce630bba0cb9da3be"
//! );
//! ```

pub mod json;
pub mod log;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A value the renderings refuse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OracleError {
    /// NaN and the infinities are not JSON (§2.1).
    #[error("not a finite JSON number: {0}")]
    NonFinite(String),
    /// A number whose text is not a JSON number.
    #[error("not a JSON number: {0}")]
    BadNumber(String),
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `state_hash = sha256_hex(sorted(state))` (§2.3).
pub fn state_hash(state: &Value) -> Result<String, OracleError> {
    Ok(sha256_hex(json::sorted(state)?.as_bytes()))
}

/// `input_hash = sha256_hex(canonical(inputs))` (§1.2).
pub fn input_hash(inputs: &Value) -> Result<String, OracleError> {
    Ok(sha256_hex(json::canonical(inputs)?.as_bytes()))
}

/// `handoff_id = sha256_hex(canonical(spec))`, spec = version, task,
/// contract, provenance and `delivery.idempotency_key` (§1.2). `None` when a
/// member is missing (the envelope cannot verify).
pub fn handoff_id(envelope: &Value) -> Option<Result<String, OracleError>> {
    let mut spec = Map::new();
    for k in ["version", "task", "contract", "provenance"] {
        spec.insert(k.to_string(), envelope.get(k)?.clone());
    }
    spec.insert("idempotency_key".into(), envelope.get("delivery")?.get("idempotency_key")?.clone());
    Some(json::canonical(&Value::Object(spec)).map(|c| sha256_hex(c.as_bytes())))
}

/// The envelope's `handoff_id` is its recomputed id (the id check of §1.2).
pub fn id_verifies(envelope: &Value) -> bool {
    matches!(handoff_id(envelope), Some(Ok(id)) if envelope.get("handoff_id").and_then(Value::as_str) == Some(id.as_str()))
}

/// The envelope's `task.input_hash` is the hash of its `task.inputs`.
pub fn inputs_verify(envelope: &Value) -> bool {
    let task = envelope.get("task");
    let inputs = task.and_then(|t| t.get("inputs")).cloned().unwrap_or_else(|| Value::Object(Map::new()));
    matches!(input_hash(&inputs), Ok(h) if task.and_then(|t| t.get("input_hash")).and_then(Value::as_str) == Some(h.as_str()))
}

/// An envelope *verifies*: id and input hash both recompute (§1.2).
pub fn verifies(envelope: &Value) -> bool {
    id_verifies(envelope) && inputs_verify(envelope)
}

/// Exactly 64 characters of `[0-9a-f]` (§1.2).
pub fn is_handoff_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

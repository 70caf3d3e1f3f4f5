//! Entry point for the `adapter` fuzz target in `fuzz/` (docs/fuzzing.md):
//! the adapter protocol's parsers, fed arbitrary lines.
//!
//! Each line is parsed as JSON and checked both as a request (what an
//! adapter receives) and as a reply to every op (what the runner receives
//! from an adapter it does not trust). A schema violation is a fine
//! outcome; a panic is a bug.

use crate::protocol::{validate_reply, validate_request, OPS};
use serde_json::Value;

/// Arbitrary adapter-protocol bytes.
pub fn adapter(data: &[u8]) {
    for line in data.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        let _ = validate_request(&v);
        for op in OPS {
            if validate_reply(op, &v).is_ok() {
                // What the runner reads out of an accepted reply.
                assert!(v.get("ok").is_some_and(Value::is_boolean), "accepted reply without a boolean ok: {v}");
            }
        }
        if let Some(op) = v.get("op").and_then(Value::as_str) {
            let _ = validate_reply(op, &v);
        }
    }
}

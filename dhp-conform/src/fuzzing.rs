//! Entry point for the `adapter` fuzz target in `fuzz/` (docs/fuzzing.md):
//! the adapter protocol's parsers, fed arbitrary lines.
//!
//! Each line is parsed as JSON and checked both as a request (what an
//! adapter receives) and as a reply to every op (what the runner receives
//! from an adapter it does not trust), by the schemas and by the typed
//! readers of dhp-adapter-proto. A schema violation is a fine outcome; a
//! panic is a bug.

use crate::protocol::{validate_reply, validate_request, Op};
use dhp_adapter_proto::{ReplyLine, RequestLine, Response};
use serde_json::Value;

/// Arbitrary adapter-protocol bytes.
pub fn adapter(data: &[u8]) {
    for line in data.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        let _ = validate_request(&v);
        if let Ok(req) = RequestLine::parse(&v) {
            let _ = req.to_value();
        }
        let reply = ReplyLine::parse(&v);
        for op in Op::ALL {
            if validate_reply(op.as_str(), &v).is_ok() {
                // What the runner reads out of an accepted reply.
                assert!(v.get("ok").is_some_and(Value::is_boolean), "accepted reply without a boolean ok: {v}");
                assert!(reply.is_ok(), "the schema accepts a reply the type refuses: {v}");
            }
            if let Ok(ReplyLine { outcome: Ok(result), .. }) = &reply {
                let _ = Response::from_result(*op, Value::Object(result.clone()));
            }
        }
        if let Some(op) = v.get("op").and_then(Value::as_str) {
            let _ = validate_reply(op, &v);
        }
    }
}

//! The adapter protocol's messages and their JSON Schemas.
//!
//! The schemas are the files in `dhp-conform/schema/`, compiled into the
//! runner: every request the runner sends is validated against
//! `request.schema.json` (a runner bug is caught before an adapter sees it)
//! and every reply against `reply.schema.json` — the generic reply shape at
//! the root, then the op's result at `#/$defs/<op>`.

use crate::error::Error;
use serde_json::Value;
use std::sync::OnceLock;

/// Version of the adapter protocol described in `ADAPTERS.md`.
pub const ADAPTER_PROTOCOL: i64 = 1;

/// `schema/request.schema.json`.
pub const REQUEST_SCHEMA: &str = include_str!("../schema/request.schema.json");
/// `schema/reply.schema.json`.
pub const REPLY_SCHEMA: &str = include_str!("../schema/reply.schema.json");

/// Every operation of the protocol, in the order ADAPTERS.md lists them.
pub const OPS: &[&str] = &[
    "hello",
    "shutdown",
    "open",
    "build_envelope",
    "dispatch",
    "claim",
    "recover",
    "checkpoint",
    "heartbeat",
    "note_step",
    "note_spend",
    "complete",
    "release",
    "ack",
    "last_checkpoint",
    "status",
    "load_envelope",
    "ownership",
    "leadership",
    "ensure_leadership",
    "scan",
    "expire_lease",
    "expire_leadership",
    "ship_envelope",
    "ship_checkpoint",
    "ingest",
    "suspend",
    "resume",
    "record_effect",
    "effect_done",
    "note_activity",
    "require_capability",
    "canonical",
    "handoff_id",
    "liveness_publish",
    "request_approval",
    "approvals",
    "decide_approval",
    "await_approval",
];

/// Optional features an adapter may declare in its `hello` result.
pub mod feature {
    /// The store is `<root>/dhp.sqlite3` in the reference's schema v3: the
    /// runner cross-checks it with its own SQLite reader (and writes it to
    /// simulate a newer schema).
    pub const STANDARD_STORE: &str = "standard-store";
    /// Honors the `DHP_*` environment variables (lease timing, size limits).
    pub const ENV_CONFIG: &str = "env-config";
    /// `note_activity`, and `scan` orphans / dead-letters stalled work.
    pub const STALL_DETECTION: &str = "stall-detection";
    /// `record_effect` / `effect_done`.
    pub const EFFECTS: &str = "effects";
    /// `require_capability`.
    pub const CAPABILITIES: &str = "capabilities";
    /// `canonical` / `handoff_id` of JSON text.
    pub const CANONICAL: &str = "canonical";
    /// `liveness_publish`: a supervisor on the same host notices a
    /// SIGKILLed worker long before its lease runs out.
    pub const FAST_DEATH_DETECTION: &str = "fast-death-detection";
    /// `request_approval`, `approvals`, `decide_approval`, `await_approval`:
    /// approval gates for financial and destructive actions.
    pub const APPROVALS: &str = "approvals";
    /// Takes a `postgres://…?schema=NAME` URL wherever it takes a store
    /// root, and keeps the store in that schema with the layout of
    /// docs/postgres.md (the runner reads it with its own reader).
    pub const POSTGRES_STORE: &str = "postgres-store";
    /// Honors a request's `clock_offset_s`: while answering it, the
    /// implementation's protocol clock reads real time plus the offset, so
    /// the runner moves time on instead of sleeping through leases,
    /// stalls, wall-clock budgets and approval timeouts.
    pub const CLOCK_CONTROL: &str = "clock-control";

    /// All of them.
    pub const ALL: &[&str] = &[
        STANDARD_STORE,
        ENV_CONFIG,
        STALL_DETECTION,
        EFFECTS,
        CAPABILITIES,
        CANONICAL,
        FAST_DEATH_DETECTION,
        APPROVALS,
        POSTGRES_STORE,
        CLOCK_CONTROL,
    ];
}

struct Schemas {
    request: jsonschema::Validator,
    reply: jsonschema::ValidatorMap,
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let req: Value = serde_json::from_str(REQUEST_SCHEMA).expect("request.schema.json is JSON");
        let rep: Value = serde_json::from_str(REPLY_SCHEMA).expect("reply.schema.json is JSON");
        Schemas {
            request: jsonschema::validator_for(&req).expect("request.schema.json compiles"),
            reply: jsonschema::validator_map_for(&rep).expect("reply.schema.json compiles"),
        }
    })
}

fn first_errors<'a>(it: impl Iterator<Item = jsonschema::ValidationError<'a>>) -> Option<String> {
    let errs: Vec<String> = it.take(3).map(|e| format!("{e} (at {})", e.instance_path())).collect();
    (!errs.is_empty()).then(|| errs.join("; "))
}

/// Validate a request line before it is sent.
pub fn validate_request(req: &Value) -> Result<(), Error> {
    match first_errors(schemas().request.iter_errors(req)) {
        None => Ok(()),
        Some(errors) => Err(Error::Schema { errors }),
    }
}

/// Validate a reply to `op`: the generic shape, then an ok result against
/// the op's result schema.
pub fn validate_reply(op: &str, reply: &Value) -> Result<(), Error> {
    let s = schemas();
    let root = s.reply.get("#").expect("root validator");
    if let Some(errors) = first_errors(root.iter_errors(reply)) {
        return Err(Error::Schema { errors });
    }
    if reply.get("ok") == Some(&Value::Bool(true)) {
        let v = s.reply.get(&format!("#/$defs/{op}")).ok_or_else(|| Error::NoResultSchema { op: op.to_string() })?;
        if let Some(errors) = first_errors(v.iter_errors(&reply["result"])) {
            return Err(Error::ResultSchema { op: op.to_string(), errors });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_cover_exactly_the_ops() {
        let req: Value = serde_json::from_str(REQUEST_SCHEMA).unwrap();
        let rep: Value = serde_json::from_str(REPLY_SCHEMA).unwrap();
        let enum_ops: Vec<&str> =
            req["properties"]["op"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(enum_ops, OPS);
        let branches = req["allOf"].as_array().unwrap();
        assert_eq!(branches.len(), OPS.len());
        for op in OPS {
            assert!(req["$defs"].get(*op).is_some(), "request args schema for {op}");
            assert!(rep["$defs"].get(*op).is_some(), "reply result schema for {op}");
        }
        let features: Vec<&str> = rep["$defs"]["hello"]["properties"]["features"]["items"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(features, feature::ALL);
    }

    #[test]
    fn requests_are_checked_per_op() {
        validate_request(&json!({"id": 1, "op": "claim", "args": {"root": "/r", "worker": "w", "hid": "h"}})).unwrap();
        assert!(validate_request(&json!({"id": 1, "op": "claim", "args": {"root": "/r", "worker": "w"}})).is_err());
        assert!(validate_request(&json!({"id": 1, "op": "teleport", "args": {}})).is_err());
        assert!(validate_request(&json!({"id": -1, "op": "open", "args": {"root": "/r"}})).is_err());
    }

    #[test]
    fn replies_are_checked_against_the_op() {
        validate_reply("claim", &json!({"id": 3, "ok": true, "result": {"fence": 0}})).unwrap();
        validate_reply("claim", &json!({"id": 3, "ok": false, "error": {"kind": "StateError", "message": "x"}}))
            .unwrap();
        assert!(validate_reply("claim", &json!({"id": 3, "ok": true, "result": {"fence": "0"}})).is_err());
        assert!(validate_reply("claim", &json!({"id": 3, "ok": true})).is_err());
        assert!(validate_reply("claim", &json!({"id": 3, "ok": false, "error": {"kind": ""}})).is_err());
        assert!(validate_reply("claim", &json!({"ok": true, "result": {"fence": 1}})).is_err());
    }
}

#[cfg(test)]
mod doc_tests {
    /// ADAPTERS.md documents every op, every feature and every assertion.
    #[test]
    fn adapters_md_is_complete() {
        let doc = include_str!("../ADAPTERS.md");
        for op in super::OPS {
            assert!(doc.contains(&format!("| `{op}` |")), "ADAPTERS.md has no row for op {op}");
        }
        for f in super::feature::ALL {
            assert!(doc.contains(&format!("| `{f}` |")), "ADAPTERS.md has no row for feature {f}");
        }
        for a in crate::assertions::all() {
            assert!(doc.contains(&format!("`{}`", a.name)), "ADAPTERS.md does not list assertion {}", a.name);
        }
        for x in crate::assertions::cross::all() {
            assert!(doc.contains(&format!("`{}`", x.name)), "ADAPTERS.md does not list {}", x.name);
        }
    }
}

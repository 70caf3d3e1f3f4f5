//! The adapter protocol's messages and their JSON Schemas.
//!
//! The messages are the types of `dhp-adapter-proto` (spec/adapter-proto),
//! the schemas the files in `spec/adapter/`, compiled into the runner:
//! every request the runner sends is built as a typed request and
//! validated against `request.schema.json` (a runner bug is caught before
//! an adapter sees it), and every reply validated against
//! `reply.schema.json` — the generic reply shape at the root, then the
//! op's result at `#/$defs/<op>` — then read as the typed reply.

use crate::error::Error;
pub use dhp_adapter_proto::{feature, Op, ADAPTER_PROTOCOL, REPLY_SCHEMA, REQUEST_SCHEMA};
use serde_json::Value;
use std::sync::OnceLock;

/// Every operation of the protocol, in the order ADAPTERS.md lists them.
pub fn ops() -> impl Iterator<Item = &'static str> {
    Op::ALL.iter().map(|o| o.as_str())
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
        assert_eq!(enum_ops, ops().collect::<Vec<_>>());
        let branches = req["allOf"].as_array().unwrap();
        assert_eq!(branches.len(), Op::ALL.len());
        for op in ops() {
            assert!(req["$defs"].get(op).is_some(), "request args schema for {op}");
            assert!(rep["$defs"].get(op).is_some(), "reply result schema for {op}");
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
        for op in super::ops() {
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

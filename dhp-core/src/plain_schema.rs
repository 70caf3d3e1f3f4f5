//! A result check for plain output schemas that needs no schema compiler.
//!
//! [`crate::envelope::validate_result`] checks a result with `jsonschema`,
//! which first validates the schema against the draft's meta-schema and
//! compiles that meta-schema's regular expressions: about 2.8 MB of program
//! text touched, for a worker the largest part of its peak RSS
//! (benches/RESULTS.md, issue 49 item 5). Most contracts' schemas are plain
//! — `type`, `properties`, `required`, `title`, `description` — and for
//! those the answer "valid" is certain without the compiler: a plain schema
//! is always valid against the meta-schema, and these keywords mean the same
//! in every draft. [`plainly_valid`] says yes only then; anything else (a
//! richer schema, an invalid one, a result that fails, a number it cannot
//! classify for certain) goes to `jsonschema`, so every verdict and message
//! is the one it gives.

use serde_json::{Map, Value};

/// The result is valid against the schema, and the schema is plain (see
/// the module); false when not certain.
pub fn plainly_valid(schema: &Value, v: &Value) -> bool {
    match schema {
        Value::Object(s) => plain(s) && holds(s, v),
        _ => false,
    }
}

/// Every keyword of `s` is a plain one with a well-formed value, recursively.
fn plain(s: &Map<String, Value>) -> bool {
    s.iter().all(|(k, v)| match k.as_str() {
        "type" => v.as_str().is_some_and(|t| TYPES.contains(&t)),
        "properties" => v.as_object().is_some_and(|p| p.values().all(|sub| sub.as_object().is_some_and(plain))),
        "required" => v
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string) && r.iter().enumerate().all(|(i, a)| !r[..i].contains(a))),
        "title" | "description" => v.is_string(),
        _ => false,
    })
}

const TYPES: [&str; 7] = ["object", "array", "string", "integer", "number", "boolean", "null"];

/// `v` satisfies the plain schema `s`.
fn holds(s: &Map<String, Value>, v: &Value) -> bool {
    let typed = match s.get("type").and_then(Value::as_str) {
        None => true,
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        // 1.0 or 10^30 are integers too, but not certainly so here: left
        // to jsonschema.
        Some("integer") => v.as_number().is_some_and(|n| n.is_i64() || n.is_u64()),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some(_) => false,
    };
    let Some(obj) = v.as_object() else { return typed }; // the rest applies to objects only
    let required = s
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(|r| r.iter().all(|k| k.as_str().is_some_and(|k| obj.contains_key(k))));
    let properties = s.get("properties").and_then(Value::as_object).is_none_or(|p| {
        p.iter().all(|(k, sub)| obj.get(k).is_none_or(|x| sub.as_object().is_some_and(|sub| holds(sub, x))))
    });
    typed && required && properties
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// jsonschema's verdict: the schema compiles and the value passes.
    fn full(schema: &Value, v: &Value) -> bool {
        jsonschema::validator_for(schema).is_ok_and(|c| c.is_valid(v))
    }

    #[test]
    fn plainly_valid_only_where_jsonschema_agrees() {
        let census = json!({"type": "object",
            "properties": {"lo": {"type": "integer"}, "hi": {"type": "integer"}},
            "required": ["lo", "hi"], "title": "census"});
        let schemas = [
            census.clone(),
            json!({}),
            json!({"type": "object"}),
            json!({"type": "array"}),
            json!({"type": "string", "description": "x"}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
            json!({"type": "null"}),
            json!({"properties": {"a": {"properties": {"b": {"type": "string"}}, "required": ["b"]}}}),
        ];
        let values = [
            json!({"lo": 1, "hi": 2}),
            json!({"lo": 1}),
            json!({"lo": "1", "hi": 2}),
            json!({"lo": -1, "hi": 18446744073709551615_u64, "x": null}),
            json!({"lo": 1.5, "hi": 2}),
            json!([1]),
            json!("s"),
            json!(2.5),
            json!(true),
            json!(null),
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": 1}}),
            json!({"a": {}}),
            json!({"a": 3}),
        ];
        let mut yes = 0;
        for s in &schemas {
            for v in &values {
                if plainly_valid(s, v) {
                    yes += 1;
                    assert!(full(s, v), "plainly valid, but jsonschema refuses: {s} {v}");
                }
            }
        }
        assert!(yes >= 20, "the fast path answers for plain schemas ({yes})");
        // the census result, valid: answered here
        assert!(plainly_valid(&census, &json!({"lo": 1, "hi": 2})));
        assert!(plainly_valid(&census, &json!({"lo": 1, "hi": 2, "extra": [1]})));
        assert!(plainly_valid(&json!({"type": "integer"}), &json!(-7)));
    }

    #[test]
    fn anything_not_plain_or_not_certain_goes_to_jsonschema() {
        let int = json!({"type": "integer"});
        // integers it cannot classify for certain; jsonschema accepts them
        assert!(!plainly_valid(&int, &json!(1.0)) && full(&int, &json!(1.0)));
        // richer or invalid schemas
        for s in [
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": ["object", "null"]}),
            json!({"type": "objekt"}),
            json!({"required": ["a", "a"]}),
            json!({"required": [1]}),
            json!({"properties": {"a": 1}}),
            json!({"properties": {"a": {"minimum": 3}}}),
            json!({"title": 3}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
            json!(true),
            json!([]),
        ] {
            assert!(!plainly_valid(&s, &json!({"a": 5})), "{s}");
        }
        // failing results: never answered here
        assert!(!plainly_valid(&json!({"required": ["a"]}), &json!({})));
        assert!(!plainly_valid(&json!({"type": "string"}), &json!(1)));
        assert!(!plainly_valid(&json!({"properties": {"a": {"type": "string"}}}), &json!({"a": 1})));
    }
}

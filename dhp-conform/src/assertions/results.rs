//! How `contract.output_schema` is read (docs/PROTOCOL.md §6.3): JSON
//! Schema draft 2020-12 unless the schema's `$schema` names another draft,
//! `format` an annotation only, and a number with a zero fraction (`1.0`)
//! an integer — as the reference's `jsonschema.validate` reads it.

use super::{new_handoff_with, spec_with};
use crate::check::Check;
use crate::suite::Ctx;
use serde_json::{json, Value};

const RULE: &str = "§6.3 (output_schema is JSON Schema 2020-12 unless its $schema names another draft; format only annotates; 1.0 is an integer)";

/// Complete a fresh handoff with `schema` and `result`: `Ok(true)` when it
/// completed, `Ok(false)` when it was refused with ValidationError.
fn completes(m: &mut crate::client::Adapter, root: &str, n: i64, schema: &Value, result: &Value) -> Check<bool> {
    let hid = new_handoff_with(m, root, spec_with(n, json!({"output_schema": schema})))?;
    let t = m.claim(root, "w1", &hid)?;
    match m.try_op("complete", t.with("result", result.clone()))? {
        Ok(_) => Ok(true),
        Err(e) if e.kind == "ValidationError" => Ok(false),
        Err(e) => Err(crate::check::Fail::failed(format!(
            "{RULE}: complete with result {result} under output_schema {schema}: {e}, want success or ValidationError"
        ))),
    }
}

/// output-schema-reading
pub fn output_schema_reading(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let int = json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
    let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                        "properties": {"x": {"type": "number", "minimum": 0, "exclusiveMinimum": true}}});
    let big: Value = serde_json::from_str(r#"{"x": 100000000000000000000}"#)
        .map_err(|e| crate::check::Fail::Errored(e.to_string()))?;
    let cases = [
        (&int, json!({"x": 1.0}), true, "1.0 is an integer (a number with a zero fraction)"),
        (&int, big, true, "an integer beyond 64 bits is an integer"),
        (&int, json!({"x": 1.5}), false, "1.5 is not an integer"),
        (
            &json!({"type": "object", "dependentRequired": {"a": ["b"]}}),
            json!({"a": 1}),
            false,
            "dependentRequired (a 2020-12 keyword) applies without $schema",
        ),
        (
            &json!({"type": "object", "properties": {"x": {"type": "array", "prefixItems": [{"type": "integer"}]}}}),
            json!({"x": ["a"]}),
            false,
            "prefixItems (2020-12) applies without $schema",
        ),
        (&draft4, json!({"x": 0}), false, "under $schema draft-04 a boolean exclusiveMinimum excludes the minimum"),
        (&draft4, json!({"x": 1}), true, "under $schema draft-04 a boolean exclusiveMinimum is a valid schema"),
        (
            &json!({"type": "object", "properties": {"x": {"type": "string", "format": "email"}}}),
            json!({"x": "not-an-email"}),
            true,
            "format only annotates: it is not asserted",
        ),
    ];
    for (i, (schema, result, want, why)) in cases.into_iter().enumerate() {
        let got = completes(&mut m, &root, 100 + i as i64, schema, &result)?;
        crate::ensure!(
            got == want,
            "{RULE}: {why}: complete with result {result} under output_schema {schema} {}, want it {}",
            if got { "completed" } else { "was refused with ValidationError" },
            if want { "completed" } else { "refused with ValidationError (status failed)" }
        );
    }
    Ok(())
}

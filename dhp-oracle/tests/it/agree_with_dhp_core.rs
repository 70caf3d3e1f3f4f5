//! The oracle and dhp-core agree on the reference's vectors and on values
//! of every shape: the harnesses verify dhp-core with the oracle, so the
//! two must only ever differ by a failing test.

use serde_json::{json, Value};

fn vectors(name: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/vectors").join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn agree(v: &Value) {
    assert_eq!(
        dhp_oracle::json::canonical(v).unwrap().into_bytes(),
        dhp_core::json::canonical(v).unwrap(),
        "canonical of {v}"
    );
    assert_eq!(dhp_oracle::json::sorted(v).unwrap(), dhp_core::json::dumps_sorted(v).unwrap(), "sorted of {v}");
}

#[test]
fn renderings_agree_on_every_vector() {
    for v in vectors("canonical.json") {
        let text = v["input"].as_str().unwrap();
        agree(&dhp_core::json::parse(text).unwrap());
    }
}

#[test]
fn ids_agree_on_every_envelope_vector_and_on_built_envelopes() {
    let mut envs: Vec<Value> = vectors("envelopes.json")
        .iter()
        .map(|e| dhp_core::json::parse(e["envelope_text"].as_str().unwrap()).unwrap())
        .collect();
    for (kind, inputs) in [("t", json!({"inline": {"n": 1.5e-7, "s": "Zürich\u{2028}"}})), ("prime.census", json!({}))]
    {
        envs.push(dhp_core::envelope::build(kind, inputs, json!({"type": "object"}), Default::default()).unwrap());
    }
    for env in &envs {
        assert_eq!(
            dhp_oracle::handoff_id(env).unwrap().unwrap(),
            dhp_core::envelope::handoff_id(env).unwrap(),
            "{env}"
        );
        assert_eq!(
            dhp_oracle::verifies(env),
            dhp_core::envelope::verify_id(env) && dhp_core::envelope::verify_inputs(env)
        );
    }
}

#[test]
fn state_hashes_agree_on_generated_values() {
    // A deterministic spread of shapes: numbers of every kind, escapes, nesting.
    let atoms = [
        json!(0),
        json!(-17),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(0.1),
        json!(-2.5e-9),
        json!(1e300),
        json!(123456.0),
        json!("plain"),
        json!("tab\tquote\"back\\slash"),
        json!("\u{0}\u{1f}\u{7f}\u{80}\u{ffff}\u{10ffff}"),
        json!(true),
        json!(null),
    ];
    for (i, a) in atoms.iter().enumerate() {
        let b = &atoms[(i * 7 + 3) % atoms.len()];
        let state = json!({"a": a, "nested": {"z": [a, b, {}], "é": b}, "list": [[a], []]});
        agree(&state);
        assert_eq!(
            dhp_oracle::state_hash(&state).unwrap(),
            dhp_core::json::state_text_and_hash(&state).unwrap().1,
            "{state}"
        );
    }
}

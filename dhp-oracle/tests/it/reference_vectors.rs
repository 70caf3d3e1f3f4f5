//! The oracle reproduces, byte for byte, what the Python reference wrote
//! for every vector of `spec/vectors/` (made by
//! `scripts/pyref/gen_vectors.py` against dhp-protocol 1.3.0): canonical
//! text and its hash, sorted state text and state_hash, handoff ids and
//! input hashes.

use serde_json::Value;

fn vectors(name: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/vectors").join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn canonical_and_sorted_texts_and_hashes_match_the_reference() {
    let vs = vectors("canonical.json");
    assert!(vs.len() >= 90, "{} vectors", vs.len());
    for v in &vs {
        let name = v["name"].as_str().unwrap();
        let input: Value = serde_json::from_str(v["input"].as_str().unwrap()).unwrap();
        let canon = dhp_oracle::json::canonical(&input).unwrap();
        assert_eq!(hex(&canon), v["canonical_hex"].as_str().unwrap(), "{name}: canonical {canon}");
        assert_eq!(dhp_oracle::sha256_hex(canon.as_bytes()), v["sha256_canonical"].as_str().unwrap(), "{name}");
        if let Some(want) = v.get("state_json").and_then(Value::as_str) {
            assert_eq!(dhp_oracle::json::sorted(&input).unwrap(), want, "{name}: sorted");
            assert_eq!(dhp_oracle::state_hash(&input).unwrap(), v["state_hash"].as_str().unwrap(), "{name}");
        }
    }
}

#[test]
fn handoff_ids_and_input_hashes_match_the_reference() {
    let es = vectors("envelopes.json");
    assert!(es.len() >= 20, "{} vectors", es.len());
    for e in &es {
        let name = e["name"].as_str().unwrap();
        let env: Value = serde_json::from_str(e["envelope_text"].as_str().unwrap()).unwrap();
        let id = dhp_oracle::handoff_id(&env).unwrap().unwrap();
        assert_eq!(id, e["handoff_id"].as_str().unwrap(), "{name}");
        assert_eq!(
            dhp_oracle::input_hash(&env["task"]["inputs"]).unwrap(),
            e["input_hash"].as_str().unwrap(),
            "{name}"
        );
        assert!(dhp_oracle::verifies(&env), "{name}");
        assert!(dhp_oracle::is_handoff_id(&id));
        // one changed byte of the spec and it no longer verifies
        let mut tampered = env.clone();
        tampered["task"]["kind"] = Value::String(format!("{}x", env["task"]["kind"].as_str().unwrap()));
        assert!(!dhp_oracle::id_verifies(&tampered), "{name}: tampered kind still verifies");
        let mut crossed = env.clone();
        crossed["task"]["inputs"] = serde_json::json!({"inline": {"other": true}});
        assert!(!dhp_oracle::inputs_verify(&crossed), "{name}: crossed inputs still verify");
    }
}

#[test]
fn the_worked_examples_of_the_spec() {
    // docs/PROTOCOL.md §1.2 and §2.3
    let inputs: Value = serde_json::from_str(r#"{"inline":{"n":1}}"#).unwrap();
    assert_eq!(
        dhp_oracle::input_hash(&inputs).unwrap(),
        "2102c333f3d7c91b5d34d87f0f6a56a9490293ea7e3420ae0e412ce8dbddec54"
    );
    assert!(!dhp_oracle::is_handoff_id("2102C333f3d7c91b5d34d87f0f6a56a9490293ea7e3420ae0e412ce8dbddec54"));
    assert!(!dhp_oracle::is_handoff_id("2102c333"));
}

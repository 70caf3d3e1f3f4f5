//! The `canonical-vectors` assertion.

use crate::check::{Check, Fail};
use crate::ensure;
use crate::suite::Ctx;
use serde_json::{json, Value};

const CANONICAL_VECTORS: &str = include_str!("../../../../spec/vectors/canonical.json");

const ENVELOPE_VECTORS: &str = include_str!("../../../../spec/vectors/envelopes.json");

/// Canonical JSON, state hashes and handoff ids agree with vectors
/// generated from the reference (`scripts/pyref/gen_vectors.py`).
pub fn canonical_vectors(cx: &Ctx<'_>) -> Check {
    let mut m = cx.adapter()?;
    let vectors: Vec<Value> = serde_json::from_str(CANONICAL_VECTORS).map_err(|e| Fail::Errored(e.to_string()))?;
    let envelopes: Vec<Value> = serde_json::from_str(ENVELOPE_VECTORS).map_err(|e| Fail::Errored(e.to_string()))?;
    let mut bad = Vec::new();
    for v in &vectors {
        let name = v["name"].as_str().unwrap_or("?");
        match m.try_op("canonical", json!({"text": v["input"]}))? {
            Err(e) => bad.push(format!("{name}: refused: {e}")),
            Ok(r) => {
                let mut diffs = Vec::new();
                if r["canonical_hex"] != v["canonical_hex"] {
                    diffs.push(format!("canonical {} want {}", hex_text(&r["canonical_hex"]), v["canonical_text"]));
                }
                if r["sha256"] != v["sha256_canonical"] {
                    diffs.push("sha256".to_string());
                }
                let want_state = v.get("state_json").cloned().unwrap_or(Value::Null);
                if r["state_json"] != want_state {
                    diffs.push(format!("state_json {} want {}", r["state_json"], want_state));
                }
                if r["state_hash"] != v.get("state_hash").cloned().unwrap_or(Value::Null) {
                    diffs.push("state_hash".to_string());
                }
                if !diffs.is_empty() {
                    bad.push(format!("{name}: {}", diffs.join(", ")));
                }
            }
        }
    }
    for e in &envelopes {
        let name = e["name"].as_str().unwrap_or("?");
        match m.try_op("handoff_id", json!({"text": e["envelope_text"]}))? {
            Err(err) => bad.push(format!("{name}: refused: {err}")),
            Ok(r) => {
                if r["handoff_id"] != e["handoff_id"] || r["input_hash"] != e["input_hash"] {
                    bad.push(format!(
                        "{name}: handoff_id/input_hash {}/{} want {}/{}",
                        r["handoff_id"], r["input_hash"], e["handoff_id"], e["input_hash"]
                    ));
                }
            }
        }
    }
    ensure!(
        bad.is_empty(),
        "{} of {} vectors differ from the reference; first: {}",
        bad.len(),
        vectors.len() + envelopes.len(),
        bad.iter().take(4).cloned().collect::<Vec<_>>().join(" | ")
    );
    Ok(())
}

fn hex_text(v: &Value) -> String {
    let h = v.as_str().unwrap_or_default();
    let bytes: Vec<u8> =
        (0..h.len() / 2).filter_map(|i| u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()).collect();
    let s = String::from_utf8_lossy(&bytes);
    let s: String = s.chars().take(60).collect();
    format!("{s:?}")
}

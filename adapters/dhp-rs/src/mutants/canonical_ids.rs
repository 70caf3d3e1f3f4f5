//! Canonical-JSON mutants that reach the ids (issue 45): the three bugs a
//! clean-room implementer found pass every fixed assertion unless the
//! adapter declares `canonical` — a float with a zero fraction written
//! as an integer, an integer above 2^53 rounded through a double,
//! non-ASCII written as `\uXXXX` (canonical JSON keeps it raw, §2.2). Each mutant computes `handoff_id`,
//! `input_hash` and the `canonical` op with its bug, and verifies
//! dispatched envelopes with it, so its own envelopes go through.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, s, v, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope::{check_hid, spec_of};
use dhp_core::json;
use dhp_core::store::{with_tx, Mode};
use serde_json::{json, Value};

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    if !matches!(ad.m, Mutant::IdsFloatAsInt | Mutant::IdsBigIntRounded | Mutant::IdsEscapedNonAscii) {
        return None;
    }
    match op {
        Op::BuildEnvelope => Some(build(ad, a)),
        Op::Dispatch => Some(dispatch(ad, a)),
        Op::Canonical => Some(canonical_op(ad.m, a)),
        _ => None,
    }
}

/// The value as the buggy writer sees it before writing.
fn bend(m: Mutant, v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| bend(m, x)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), bend(m, x))).collect()),
        Value::Number(n) => {
            let text = n.to_string();
            let integral = !text.contains(['.', 'e', 'E']);
            let x = n.as_f64().unwrap_or(0.0);
            let bent = match m {
                // 1.0 → 1
                Mutant::IdsFloatAsInt if !integral && x.fract() == 0.0 && x.abs() < 9.0e15 => {
                    Some(format!("{}", x as i64))
                }
                // 9007199254740993 → 9007199254740992
                Mutant::IdsBigIntRounded if integral && x.abs() >= 9_007_199_254_740_992.0 => Some(format!("{x:.0}")),
                _ => None,
            };
            bent.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_else(|| v.clone())
        }
        _ => v.clone(),
    }
}

/// Non-ASCII characters escaped as `\uXXXX` (surrogate pairs beyond
/// the BMP), as `ensure_ascii=True` writes them; canonical JSON keeps them raw.
fn escape_non_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            out.push_str(&format!("\\u{:04x}", u));
        }
    }
    out
}

/// The buggy canonical bytes.
fn canonical(m: Mutant, v: &Value) -> R<Vec<u8>> {
    let bytes = json::canonical(&bend(m, v))?;
    if m != Mutant::IdsEscapedNonAscii {
        return Ok(bytes);
    }
    Ok(escape_non_ascii(&String::from_utf8_lossy(&bytes)).into_bytes())
}

fn ids(m: Mutant, env: &Value) -> R<(String, String)> {
    let inputs = env.pointer("/task/inputs").cloned().unwrap_or_else(|| json!({}));
    let input_hash = json::sha256_hex(&canonical(m, &inputs)?);
    let mut e = env.clone();
    e["task"]["input_hash"] = json!(input_hash);
    Ok((json::sha256_hex(&canonical(m, &spec_of(&e)?)?), input_hash))
}

/// The real envelope, its ids recomputed with the bug.
fn build(ad: &mut MutantAdapter, a: &Value) -> R {
    let mut out = ad.inner.handle_args(Op::BuildEnvelope, a)?;
    let (hid, input_hash) = ids(ad.m, &out["envelope"])?;
    out["envelope"]["task"]["input_hash"] = json!(input_hash);
    out["envelope"]["handoff_id"] = json!(hid);
    Ok(out)
}

/// Dispatch verifying with the bug, then storing as the real one does.
fn dispatch(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let r = ad.inner.runner(s(a, "root")?)?;
    let env = v(a, "envelope")?;
    let (hid, input_hash) = ids(ad.m, env)?;
    if env["handoff_id"] != json!(hid) || env["task"]["input_hash"] != json!(input_hash) {
        return Err(err("TamperError", "envelope does not verify"));
    }
    let hid = check_hid(&hid)?.to_string();
    if r.envelope_bare(&hid).is_ok() {
        return Ok(json!({"hid": hid}));
    }
    let text = super::identity::stored_text(env)?;
    if text.len() > ad.inner.cfg.max_envelope_bytes {
        return Err(err("OversizePayload", "envelope exceeds max_envelope_bytes"));
    }
    with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_envelope(&hid, &text, clock.store_time()))?;
    Ok(json!({"hid": hid}))
}

/// The `canonical` op with the bug.
fn canonical_op(m: Mutant, a: &Value) -> R {
    let value = json::parse(s(a, "text")?)?;
    let bytes = canonical(m, &value)?;
    let (state_json, state_hash) = if value.is_object() {
        let t = String::from_utf8_lossy(&bytes).into_owned();
        (Some(t), Some(json::sha256_hex(&bytes)))
    } else {
        (None, None)
    };
    Ok(json!({"canonical_hex": hex::encode(&bytes), "sha256": json::sha256_hex(&bytes),
              "state_json": state_json, "state_hash": state_hash}))
}

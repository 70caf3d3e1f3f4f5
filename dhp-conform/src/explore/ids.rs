//! Ids and stored envelope text, checked for every implementation (issue
//! 45: canonical-JSON bugs showed only under the optional `canonical`
//! feature). The runner recomputes `handoff_id` and `input_hash` with the
//! oracle from what it reads itself — the envelope `build_envelope`
//! answered, `handoffs.envelope_json` in the store, `load_envelope` on the
//! wire — and compares the stored text with the plain rendering. The
//! inputs carry a float with a zero fraction, an integer above 2^53 and
//! non-ASCII text, which a non-canonical writer changes.

use super::compare::Divergence;
use super::gen::Step;
use super::world::World;
use crate::check::Check;
use serde_json::{json, Value};

const IDS: &str = "§1.2 handoff_id = sha256(canonical(spec)) and input_hash = sha256(canonical(inputs)), canonical JSON of §2 (floats keep their form, integers exact, non-ASCII escaped) [no-crossed-inputs] [canonical-vectors]";
const TEXT: &str = "§3.1 the store holds the envelope in the plain rendering (json.dumps: members in order), execution.checkpoints [], the store in WAL mode [store-layout]";
const LOADED: &str = "§3.1 readers materialize execution.checkpoints as {seq, state_hash, at, state_uri: sqlite:checkpoints/<hid>/<seq>} [store-layout] [timestamps-iso8601]";
const CREATED: &str = "§3 provenance.created_at is isoformat() UTC text [timestamps-iso8601]";

/// The inputs every explored handoff carries beside its `n`.
pub fn tricky_inputs(n: i64) -> Value {
    // parsed, not built with json!: 1.0 must stay a float with its fraction
    let text =
        format!(r#"{{"inline": {{"n": {n}, "f": 1.0, "big": 9007199254740993, "e": 1.5e-7, "u": "Zürich ☃ 😀"}}}}"#);
    serde_json::from_str(&text).unwrap_or_else(|_| json!({"inline": {"n": n}}))
}

fn div(what: String, want: String, got: String, rule: &str) -> Option<Divergence> {
    let key = what.split_once(' ').map_or(what.clone(), |(_, k)| k.to_string());
    Some(Divergence { step: 0, what, key, want, got, rule: rule.into(), timing: false })
}

fn oracle_id(env: &Value) -> String {
    match dhp_oracle::handoff_id(env) {
        Some(Ok(id)) => id,
        Some(Err(e)) => format!("(no id: {e})"),
        None => "(no spec)".into(),
    }
}

fn oracle_input_hash(env: &Value) -> String {
    dhp_oracle::input_hash(&env["task"]["inputs"]).unwrap_or_else(|e| format!("(no hash: {e})"))
}

/// The envelopes as built: ids recomputed, created_at's form.
pub fn built(w: &World, envs: &[Value]) -> Option<Divergence> {
    for (h, env) in envs.iter().enumerate() {
        if !w.s.handoffs.contains_key(w.hid(h as u8)) {
            continue; // checked once it is dispatched: the sequence shows it
        }
        let (want, got) = (oracle_id(env), env["handoff_id"].as_str().unwrap_or_default().to_string());
        if want != got {
            return div(format!("h{h} built handoff_id"), want, got, IDS);
        }
        let (want, got) = (oracle_input_hash(env), env["task"]["input_hash"].as_str().unwrap_or_default().to_string());
        if want != got {
            return div(format!("h{h} built input_hash"), want, got, IDS);
        }
        let at = env["provenance"]["created_at"].as_str().unwrap_or_default();
        if let Err(e) = crate::assertions::timestamps::parse_isoformat_utc(at) {
            return div(format!("h{h} built created_at"), "isoformat() UTC".into(), e.to_string(), CREATED);
        }
    }
    None
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

/// Every stored envelope's text: the plain rendering of an envelope
/// whose ids the oracle recomputes, checkpoints empty, members in the
/// built order; and the file in WAL mode.
pub fn stored(db: &crate::store_view::StoreView, w: &World, envs: &[Value]) -> Check<Option<Divergence>> {
    if let Some(mode) = db.journal_mode()? {
        if mode != "wal" {
            return Ok(div("store journal_mode".into(), "wal".into(), mode, TEXT));
        }
    }
    for (h, env) in envs.iter().enumerate() {
        let hid = w.hid(h as u8);
        let Some(text) = db.envelope_text(hid)? else { continue };
        let what = |x: &str| format!("h{h} stored {x}");
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            return Ok(div(what("envelope_json"), "JSON".into(), text, TEXT));
        };
        let plain = dhp_oracle::json::plain(&v).unwrap_or_default();
        if plain != text || !keys(&v).starts_with(&keys(env)) {
            return Ok(div(what("envelope_json text"), plain, text, TEXT));
        }
        if v["execution"]["checkpoints"] != json!([]) {
            return Ok(div(
                what("execution.checkpoints"),
                "[]".into(),
                v["execution"]["checkpoints"].to_string(),
                TEXT,
            ));
        }
        let id = oracle_id(&v);
        if id != hid || v["handoff_id"] != json!(hid) {
            return Ok(div(what("handoff_id"), hid.to_string(), format!("{} (recomputed {id})", v["handoff_id"]), IDS));
        }
        if oracle_input_hash(&v) != v["task"]["input_hash"].as_str().unwrap_or_default() {
            return Ok(div(what("input_hash"), oracle_input_hash(&v), v["task"]["input_hash"].to_string(), IDS));
        }
    }
    Ok(None)
}

/// After a dispatch or checkpoint of `h`: `load_envelope` on the wire —
/// its id recomputed, its checkpoints materialized as the model holds them.
pub fn loaded(m: &mut crate::client::Adapter, root: &str, w: &World, step: &Step) -> Check<Option<Divergence>> {
    let h = match step {
        Step::Dispatch { h } | Step::Checkpoint { h, .. } => *h,
        _ => return Ok(None),
    };
    let hid = w.hid(h).to_string();
    let Some(cps) = w.s.checkpoints.get(&hid).cloned().or_else(|| w.s.handoffs.get(&hid).map(|_| Vec::new())) else {
        return Ok(None);
    };
    let Ok(env) = m.try_op("load_envelope", json!({"root": root, "hid": hid}))? else { return Ok(None) };
    let env = env["envelope"].clone();
    if oracle_id(&env) != hid {
        return Ok(div(format!("h{h} loaded handoff_id"), hid.clone(), oracle_id(&env), IDS));
    }
    let want: Vec<Value> =
        cps.iter().map(|c| json!([c.seq, c.hash, format!("sqlite:checkpoints/{hid}/{}", c.seq)])).collect();
    let list = env["execution"]["checkpoints"].as_array().cloned().unwrap_or_default();
    let got: Vec<Value> = list.iter().map(|c| json!([c["seq"], c["state_hash"], c["state_uri"]])).collect();
    if want != got {
        return Ok(div(format!("h{h} loaded checkpoints"), json!(want).to_string(), json!(got).to_string(), LOADED));
    }
    for c in &list {
        let at = c["at"].as_str().unwrap_or_default();
        if let Err(e) = crate::assertions::timestamps::parse_isoformat_utc(at) {
            return Ok(div(format!("h{h} loaded checkpoint at"), "isoformat() UTC".into(), e.to_string(), LOADED));
        }
    }
    Ok(None)
}

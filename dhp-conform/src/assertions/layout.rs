//! What a handoff looks like in the standard store and to its readers
//! (docs/PROTOCOL.md §3.1), and dispatch of an envelope that is already
//! there (§6.1). Failure messages name the rule, what the runner did and
//! what it expected, with values as JSON.

use super::spec;
use crate::check::{Check, Fail};
use crate::suite::Ctx;
use crate::{ensure, ensure_json};
use serde_json::{json, Value};

/// `json.dumps(x)` of `v`, as the oracle renders it.
fn plain(v: &Value) -> Check<String> {
    dhp_oracle::json::plain(v).map_err(|e| Fail::Errored(e.to_string()))
}

/// The file header must say WAL (§3.1).
fn wal(db: &crate::store_view::StoreView, when: &str) -> Check {
    if let Some(mode) = db.journal_mode()? {
        ensure!(
            mode == "wal",
            "§3.1 (the store is one file in WAL mode, PRAGMA journal_mode=WAL): {when}, the header of {} records journal mode {}, want \"wal\"",
            db.location(),
            json!(mode)
        );
    }
    Ok(())
}

/// The top-level member names of an object, in order.
fn keys(v: &Value) -> Vec<String> {
    v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

/// `handoff_id` and `input_hash` of `env` are the oracle's (§1.2, §2.2).
fn ids_recomputed(env: &Value, what: &str) -> Check {
    let err = |e: dhp_oracle::OracleError| Fail::Errored(e.to_string());
    let id = dhp_oracle::handoff_id(env).ok_or_else(|| Fail::failed(format!("{what} has no spec")))?.map_err(err)?;
    let ih = dhp_oracle::input_hash(&env["task"]["inputs"]).map_err(err)?;
    ensure!(
        env["handoff_id"] == json!(id) && env["task"]["input_hash"] == json!(ih),
        "§1.2 (handoff_id = sha256(canonical(spec)), input_hash = sha256(canonical(inputs)), canonical JSON of §2.2): {what} has handoff_id {} and input_hash {}, want {} and {} (inputs {})",
        env["handoff_id"],
        env["task"]["input_hash"],
        json!(id),
        json!(ih),
        env["task"]["inputs"]
    );
    Ok(())
}

/// store-layout: WAL, `envelope_json` in the plain rendering with
/// `execution.checkpoints` empty, and readers materializing checkpoints
/// with their `state_uri`.
pub fn store_layout(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let db = cx.store(&root)?;
    if let Some(db) = &db {
        wal(db, "after open of a new root")?;
    }
    // inputs a non-canonical writer changes: 1.0, an integer above 2^53,
    // non-ASCII (issue 45: ids checked without the `canonical` feature)
    let mut env = m.build(super::spec_with(1, json!({"inputs": crate::explore::ids::tricky_inputs(1)})))?;
    ids_recomputed(&env, "build_envelope's envelope")?;
    // a member no rule knows, outside the spec the id covers (§1.1: kept, in place)
    env["x_extension"] = json!({"note": "kept", "n": 1});
    let hid = m.dispatch(&root, &env)?;
    let mut want = env.clone();
    want["execution"]["checkpoints"] = json!([]);
    if let Some(db) = &db {
        let text = db.envelope_text(&hid)?.ok_or_else(|| Fail::failed("§6.1: dispatch stored no handoffs row"))?;
        let want_text = plain(&want)?;
        ensure!(
            text == want_text,
            "§3.1 (envelope_json holds the envelope in the plain rendering, json.dumps(envelope): members in the envelope's own order, \", \" and \": \", with execution.checkpoints []): after dispatch the store's handoffs.envelope_json is {}, want {}",
            json!(text),
            json!(want_text)
        );
    }
    if let Some(db) = &db {
        ids_recomputed(&db.must_envelope(&hid)?, "the store's handoffs.envelope_json")?;
    }
    let t = m.claim(&root, "w1", &hid)?;
    let states = [json!({"s": 0}), json!({"page": "Zürich", "f": 1.5e-7})];
    for s in &states {
        m.checkpoint(&t, s.clone())?;
    }
    let loaded = m.load_envelope(&root, &hid)?;
    let got = loaded.pointer("/execution/checkpoints").cloned().unwrap_or(Value::Null);
    let want_cps: Vec<Value> = match &db {
        Some(db) => db
            .checkpoints(&hid)?
            .into_iter()
            .map(|r| {
                json!({"seq": r.seq, "state_hash": r.state_hash, "at": r.at,
                       "state_uri": format!("sqlite:checkpoints/{hid}/{}", r.seq)})
            })
            .collect(),
        None => {
            let mut out = Vec::new();
            for (i, s) in states.iter().enumerate() {
                let h = dhp_oracle::state_hash(s).map_err(|e| Fail::Errored(e.to_string()))?;
                let at = got.get(i).and_then(|c| c.get("at")).cloned().unwrap_or(Value::Null);
                out.push(
                    json!({"seq": i, "state_hash": h, "at": at, "state_uri": format!("sqlite:checkpoints/{hid}/{i}")}),
                );
            }
            out
        }
    };
    ensure_json!(
        got,
        Value::Array(want_cps),
        "§3.1 (readers materialize execution.checkpoints as [{{seq, state_hash, at, state_uri: \"sqlite:checkpoints/<hid>/<seq>\"}}] in seq order): after two checkpoints, load_envelope's execution.checkpoints"
    );
    if let Some(db) = &db {
        let text = db.envelope_text(&hid)?.unwrap_or_default();
        let stored: Value = serde_json::from_str(&text)
            .map_err(|e| Fail::failed(format!("§3.1: handoffs.envelope_json is not JSON after claim: {e}")))?;
        ensure_json!(
            stored.pointer("/execution/checkpoints").cloned().unwrap_or(Value::Null),
            json!([]),
            "§3.1 (writers MUST NOT store materialized checkpoints): after two checkpoints, the store's envelope_json execution.checkpoints"
        );
        ensure!(
            text == plain(&stored)? && keys(&stored).starts_with(&keys(&want)),
            "§3.1 (envelope_json is the plain rendering, members kept in their order): after claim and two checkpoints, handoffs.envelope_json is {}, whose top-level members are {}, want the plain text of that envelope with the dispatched order {}",
            json!(text),
            json!(keys(&stored)),
            json!(keys(&want))
        );
        wal(db, "after dispatch, claim and two checkpoints")?;
    }
    Ok(())
}

/// idempotent-dispatch (dhp-rs, §6.1): dispatching an envelope whose hid
/// is already in the store returns the hid and changes nothing.
pub fn idempotent_dispatch(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let env = m.build(spec(1))?;
    let hid = m.dispatch(&root, &env)?;
    let again = m
        .dispatch(&root, &env)
        .map_err(|f| f.context("§6.1 (re-dispatching a hid that exists returns the hid and changes nothing): a second dispatch of the same pending envelope"))?;
    ensure_json!(json!(again), json!(hid), "§6.1: the hid a second dispatch returns");
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    let db = cx.store(&root)?;
    let before_text = match &db {
        Some(db) => db.envelope_text(&hid)?,
        None => None,
    };
    let before = m.status(&root, &hid)?;
    let third = m.dispatch(&root, &env).map_err(|f| {
        f.context("§6.1 (re-dispatching a hid that exists returns the hid and changes nothing): dispatch of the original pending envelope of a running handoff")
    })?;
    ensure_json!(json!(third), json!(hid), "§6.1: the hid a re-dispatch of a running handoff returns");
    ensure_json!(
        m.status(&root, &hid)?,
        before,
        "§6.1 (a re-dispatch changes nothing): status of the running handoff after the original envelope was dispatched again"
    );
    if let Some(db) = &db {
        ensure_json!(
            json!(db.envelope_text(&hid)?),
            json!(before_text),
            "§6.1 (a re-dispatch changes nothing): the store's handoffs.envelope_json after a re-dispatch"
        );
        ensure_json!(
            json!(db.handoff_count()?),
            json!(1),
            "§6.1: handoffs rows after three dispatches of one envelope"
        );
    }
    Ok(())
}

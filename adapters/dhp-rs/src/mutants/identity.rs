//! Identity, integrity and store-format mutants: ids, hashes, canonical
//! JSON, the schema version and the size limits.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, s, v, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope::{self, check_hid};
use dhp_core::store::{with_tx, Mode};
use dhp_core::{json, Config};
use serde_json::{json, Value};
use std::path::Path;

/// no-size-limits: the largest limits a valid configuration allows.
pub(super) fn configure(m: Mutant, cfg: &mut Config) {
    if m == Mutant::NoSizeLimits {
        let huge = dhp_core::config::MAX_BYTES;
        cfg.max_checkpoint_bytes = huge;
        cfg.max_result_bytes = huge;
        cfg.max_envelope_bytes = huge;
        cfg.transport_max_line_bytes = huge;
    }
}

/// lenient-ids: malformed ids are normalized instead of refused;
/// ids-match-before-newline and reserved-ids-accepted: see [`edge_ids`].
pub(super) fn rewrite(ad: &MutantAdapter, a: &mut Value) -> bool {
    if ad.is(Mutant::IdsMatchBeforeNewline) || ad.is(Mutant::ReservedIdsAccepted) {
        return edge_ids(ad, a);
    }
    if !ad.is(Mutant::LenientIds) {
        return false;
    }
    if let Some(raw) = a.get("hid").and_then(Value::as_str) {
        let h: String = raw.trim().to_lowercase().chars().filter(char::is_ascii_hexdigit).take(64).collect();
        a["hid"] = json!(h);
    }
    for key in ["worker", "supervisor"] {
        if let Some(raw) = a.get(key).and_then(Value::as_str) {
            let w: String = raw
                .chars()
                .take(128)
                .map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' })
                .collect();
            a[key] = json!(if w.is_empty() { "anon".into() } else { w });
        }
    }
    true
}

/// ids-match-before-newline: an id with one trailing newline is the id
/// (`re.match(r"^…$")` matches before a final `\n`). reserved-ids-accepted:
/// a reserved worker or supervisor id (`__name__`, dots only) runs under an
/// unreserved alias (`r` + the id) instead of being refused.
fn edge_ids(ad: &MutantAdapter, a: &mut Value) -> bool {
    let mut changed = false;
    for key in ["hid", "worker", "supervisor"] {
        let Some(raw) = a.get(key).and_then(Value::as_str) else { continue };
        let new = if ad.is(Mutant::IdsMatchBeforeNewline) {
            raw.strip_suffix('\n').map(str::to_string)
        } else {
            let reserved = (raw.len() >= 2 && raw.starts_with("__") && raw.ends_with("__"))
                || (!raw.is_empty() && raw.bytes().all(|b| b == b'.'));
            (key != "hid" && reserved).then(|| format!("r{raw}"))
        };
        if let Some(n) = new {
            a[key] = json!(n);
            changed = true;
        }
    }
    changed
}

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::JournalDelete, Op::Open) => Some(open_journal_delete(ad, a)),
        (Mutant::EnvelopeSortedText, Op::Dispatch) => Some(dispatch_sorted_text(ad, a)),
        (Mutant::NoIdCheck | Mutant::NoInputHashCheck, Op::Dispatch) => Some(dispatch(ad, a)),
        (Mutant::CanonicalSerde, Op::Canonical) => Some(canonical_serde(a)),
        (Mutant::IgnoreSchemaVersion, Op::Open) => Some(open_any_version(ad, a)),
        _ => None,
    }
}

/// The stored form of an envelope (checkpoints emptied), as Python writes it.
pub(super) fn stored_text(env: &Value) -> R<String> {
    let mut env = env.clone();
    if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
        ex.insert("checkpoints".into(), json!([]));
    }
    Ok(json::dumps(&env)?)
}

/// no-id-check / no-input-hash-check: dispatch verifies only one of the
/// two bindings, then stores the envelope itself.
fn dispatch(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let r = ad.inner.runner(s(a, "root")?)?;
    let env = v(a, "envelope")?;
    let verified = if ad.is(Mutant::NoIdCheck) { envelope::verify_inputs(env) } else { envelope::verify_id(env) };
    if !verified {
        return Err(err("TamperError", "envelope does not verify"));
    }
    let hid = check_hid(env["handoff_id"].as_str().unwrap_or_default())?.to_string();
    let text = stored_text(env)?;
    if text.len() > ad.inner.cfg.max_envelope_bytes {
        return Err(err("OversizePayload", "envelope exceeds max_envelope_bytes"));
    }
    with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_envelope(&hid, &text, clock.store_time()))?;
    Ok(json!({"hid": hid}))
}

/// journal-delete: after a real open, the store file is switched to the
/// rollback journal (`journal_mode=DELETE`); the next operation's open
/// switches it back to WAL. A switch that another connection blocks is
/// given up.
fn open_journal_delete(ad: &mut MutantAdapter, a: &Value) -> R {
    let out = ad.inner.handle_args(Op::Open, a)?;
    let root = s(a, "root")?;
    if !crate::pg::is_postgres(root) {
        ad.inner.close(root);
        if let Ok(c) = rusqlite::Connection::open(Path::new(root).join("dhp.sqlite3")) {
            let _ = c.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(()));
        }
    }
    Ok(out)
}

/// envelope-sorted-text: dispatch, then write the new handoff's stored
/// envelope in the sorted rendering (`json.dumps(sort_keys=True)`).
fn dispatch_sorted_text(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let r = ad.inner.runner(s(a, "root")?)?;
    let existed =
        v(a, "envelope")?.get("handoff_id").and_then(Value::as_str).is_some_and(|h| r.envelope_bare(h).is_ok());
    let out = ad.inner.handle_args(Op::Dispatch, a)?;
    if existed {
        return Ok(out);
    }
    let hid = s(&out, "hid")?.to_string();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let Some(env) = tx.envelope(&hid)? else { return Ok(false) };
        tx.update_envelope(&hid, &json::dumps_sorted(&env)?, clock.store_time())
    })?;
    Ok(out)
}

/// canonical-serde: canonical JSON is serde_json's default output.
fn canonical_serde(a: &Value) -> R {
    let value = json::parse(s(a, "text")?)?;
    let bytes = serde_json::to_vec(&value).map_err(|e| err("Internal", e.to_string()))?;
    let (state_json, state_hash) = if value.is_object() {
        let (t, h) = json::state_text_and_hash(&value)?;
        (Some(t), Some(h))
    } else {
        (None, None)
    };
    Ok(
        json!({"canonical_hex": hex::encode(&bytes), "sha256": json::sha256_hex(&bytes), "state_json": state_json, "state_hash": state_hash}),
    )
}

/// ignore-schema-version: open deletes schema_version rows newer than 3
/// instead of refusing the store.
fn open_any_version(ad: &mut MutantAdapter, a: &Value) -> R {
    let root = s(a, "root")?;
    if crate::pg::is_postgres(root) {
        drop_newer_versions_pg(root)?;
        return ad.inner.handle_args(Op::Open, a);
    }
    let db = Path::new(root).join("dhp.sqlite3");
    if db.exists() {
        let c = rusqlite::Connection::open(&db).map_err(|e| err("StoreError", e.to_string()))?;
        c.execute("DELETE FROM schema_version WHERE version > 3", []).map_err(|e| err("StoreError", e.to_string()))?;
    }
    ad.inner.handle_args(Op::Open, a)
}

/// The same on a PostgreSQL store: the rows live in the URL's `schema=`.
fn drop_newer_versions_pg(url: &str) -> Result<(), crate::adapter::AErr> {
    let (_, schema) = crate::pg::split_schema(url);
    let Some(schema) = schema else { return Ok(()) };
    let mut c = crate::pg::client(url).map_err(|e| err("StoreError", e))?;
    let made = c
        .query_opt(
            "SELECT 1 FROM information_schema.tables WHERE table_schema=$1 AND table_name='schema_version'",
            &[&schema],
        )
        .map_err(|e| err("StoreError", e.to_string()))?
        .is_some();
    if made {
        // the schema name was made by the runner: [a-z0-9_] only
        c.batch_execute(&format!("DELETE FROM \"{schema}\".schema_version WHERE version > 3"))
            .map_err(|e| err("StoreError", e.to_string()))?;
    }
    Ok(())
}

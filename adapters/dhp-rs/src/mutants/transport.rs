//! Transport mutants: the log's line format, ingest's checks and
//! tolerance, suspend's bundle and resume's checks.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, i, s, v, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope;
use dhp_core::store::{with_tx, Mode};
use dhp_core::transport::log;
use dhp_core::{json, Error};
use serde_json::{json, Value};
use std::path::PathBuf;

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::ShipCompactJson, Op::ShipCheckpoint) => Some(ship_compact(ad, a)),
        (Mutant::ShipHidesWriteErrors, Op::ShipEnvelope) => Some(ship_hiding_errors(ad, a)),
        (Mutant::IngestNoIdCheck | Mutant::IngestNoHashCheck | Mutant::IngestStrict, Op::Ingest) => {
            Some(ingest_rewritten(ad, a))
        }
        (Mutant::BundleDropsCheckpoints | Mutant::BundleKeepsLastCheckpoint, Op::Suspend) => Some(suspend_lossy(ad, a)),
        (Mutant::ResumeNoVerify, Op::Resume) => Some(resume_no_verify(ad, a)),
        (Mutant::ResumeResetsUsage, Op::Resume) => Some(resume_resets_usage(ad, a)),
        _ => None,
    }
}

/// Recompute an envelope's input_hash and handoff_id (what a mutant does
/// instead of verifying them).
fn reidentify(env: &mut Value) -> R<()> {
    let inputs = env.pointer("/task/inputs").cloned().unwrap_or(Value::Null);
    env["task"]["input_hash"] = json!(envelope::input_hash(&inputs)?);
    env["handoff_id"] = json!(envelope::handoff_id(env)?);
    Ok(())
}

/// ship-compact-json: checkpoint log lines are compact (canonical) JSON
/// instead of json.dumps(sort_keys=True).
fn ship_compact(ad: &mut MutantAdapter, a: &Value) -> R {
    let path = PathBuf::from(s(a, "log")?);
    let seq = i(a, "seq")?;
    let state = v(a, "state")?.clone();
    let (_, hash) = json::state_text_and_hash(&state)?;
    let rec = json!({"type": "checkpoint", "seq": seq, "state": state, "state_hash": hash, "at": ad.inner.cfg.clock.now_iso()});
    let line = String::from_utf8(json::canonical(&rec)?).map_err(|e| err("Internal", e.to_string()))?;
    log::append_line(&path, &line, &ad.inner.cfg, false)?;
    Ok(json!({}))
}

/// ship-hides-write-errors: an I/O error of the real ship_envelope (the
/// log file could not be created) is answered as success, as dhp-core's
/// `ship_envelope` does when its `AlreadyExists` guard matches every error.
fn ship_hiding_errors(ad: &mut MutantAdapter, a: &Value) -> R {
    match ad.inner.handle_args(Op::ShipEnvelope, a) {
        Err(e) if e.kind == "IoError" => Ok(json!({})),
        other => other,
    }
}

/// ingest-no-id-check / ingest-no-hash-check / ingest-strict: the log is
/// rewritten (re-identified envelope, recomputed hashes, or refused for a
/// malformed line) into `LOG.mutant`, which the real ingest then reads.
fn ingest_rewritten(ad: &mut MutantAdapter, a: &Value) -> R {
    ad.inner.runner(s(a, "root")?)?;
    let mut path = PathBuf::from(s(a, "log")?);
    let text = std::fs::read_to_string(&path).map_err(|e| err("TransportError", e.to_string()))?;
    let mut out = Vec::new();
    for line in text.split('\n') {
        let parsed = json::parse(line.trim()).ok().filter(|v| v.get("type").is_some());
        match (ad.m, parsed) {
            (Mutant::IngestStrict, None) if !line.trim().is_empty() => {
                return Err(err("TransportError", format!("malformed log line {line:?}")));
            }
            (Mutant::IngestNoIdCheck, Some(mut v)) if v["type"] == "envelope" => {
                reidentify(&mut v["envelope"])?;
                out.push(json::dumps_sorted(&v)?);
            }
            (Mutant::IngestNoHashCheck, Some(mut v)) if v["type"] == "checkpoint" => {
                v["state_hash"] = json!(json::state_text_and_hash(&v["state"])?.1);
                out.push(json::dumps_sorted(&v)?);
            }
            _ => out.push(line.to_string()),
        }
    }
    path.set_extension("mutant");
    std::fs::write(&path, out.join("\n")).map_err(|e| err("TransportError", e.to_string()))?;
    let mut a = a.clone();
    a["log"] = json!(path.to_string_lossy());
    ad.inner.handle_args(Op::Ingest, &a)
}

/// bundle-drops-checkpoints / bundle-keeps-last-checkpoint: the bundle
/// the real suspend wrote loses all its checkpoints or all but the last.
fn suspend_lossy(ad: &mut MutantAdapter, a: &Value) -> R {
    ad.inner.handle_args(Op::Suspend, a)?;
    let path = s(a, "path")?;
    let bundle = std::fs::read(path).map_err(|e| err("StoreError", e.to_string()))?;
    let mut doc = json::parse_bytes(&bundle)?;
    if ad.is(Mutant::BundleDropsCheckpoints) {
        doc["checkpoints"] = json!([]);
    } else {
        if let Some(list) = doc["checkpoints"].as_array_mut() {
            let keep = list.len().saturating_sub(1);
            list.drain(..keep);
        }
        if let Some(list) = doc.pointer_mut("/envelope/execution/checkpoints").and_then(Value::as_array_mut) {
            let keep = list.len().saturating_sub(1);
            list.drain(..keep);
        }
    }
    let bundle = json::canonical(&doc)?;
    std::fs::write(path, &bundle).map_err(|e| err("StoreError", e.to_string()))?;
    Ok(json!({"bytes": bundle.len()}))
}

/// resume-no-verify: resume re-identifies the bundle envelope and drops
/// checkpoint hashes instead of verifying them.
fn resume_no_verify(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.runner(s(a, "root")?)?;
    let bundle = std::fs::read(s(a, "path")?).map_err(|e| err("ValidationError", e.to_string()))?;
    // the size limit is still the file's (re-serializing changes its size)
    let limit = r.config().max_envelope_bytes;
    if bundle.len() > limit {
        return Err(err("OversizePayload", format!("bundle of {} bytes over {limit}", bundle.len())));
    }
    let mut doc = json::parse_bytes(&bundle)?;
    reidentify(&mut doc["envelope"])?;
    for c in doc["checkpoints"].as_array_mut().into_iter().flatten() {
        if let Some(m) = c.as_object_mut() {
            m.remove("state_hash");
        }
    }
    Ok(json!({"hid": r.resume(&json::canonical(&doc)?)?}))
}

/// resume-resets-usage: resume starts steps and spend from zero.
fn resume_resets_usage(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let out = ad.inner.handle_args(Op::Resume, a)?;
    let r = ad.inner.runner(s(a, "root")?)?;
    let hid = s(&out, "hid")?.to_string();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let mut env = tx.envelope(&hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.clone() })?;
        env["execution"]["steps"] = json!(0);
        env["execution"]["spend_usd"] = json::float(0.0);
        tx.update_envelope(&hid, &json::dumps(&env)?, clock.store_time())
    })?;
    Ok(out)
}

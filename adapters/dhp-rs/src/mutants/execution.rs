//! Execution mutants: checkpoints, arguments, output schema, completion,
//! ack, effects and capabilities.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, s, v, AErr, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope;
use dhp_core::store::{with_tx, Mode};
use dhp_core::{json, Error, Lease};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A checkpoint accepted but not written yet (volatile-checkpoints).
pub(super) struct Pending {
    root: String,
    worker: String,
    hid: String,
    fence: i64,
    state: Value,
}

/// lenient-arguments: a negative spend counts as 0 and a checkpoint state
/// that is not an object is wrapped in one.
pub(super) fn rewrite(ad: &MutantAdapter, op: Op, a: &mut Value) -> bool {
    if !ad.is(Mutant::LenientArguments) {
        return false;
    }
    match op {
        Op::NoteSpend => {
            if let Some(usd) = a.get("usd").and_then(Value::as_f64) {
                a["usd"] = json!(usd.max(0.0));
            }
        }
        Op::Checkpoint => {
            if let Some(state) = a.get("state").filter(|st| !st.is_object()) {
                a["state"] = json!({"value": state});
            }
        }
        _ => return false,
    }
    true
}

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::VolatileCheckpoints, Op::Checkpoint) => Some(buffer_checkpoint(ad, a)),
        (Mutant::NoSchemaValidation, Op::Complete) => Some(complete_any_result(ad, a)),
        (Mutant::CompleteNotIdempotent, Op::Complete) => Some(complete_once(ad, a)),
        (Mutant::AckBeforeComplete, Op::Ack) => Some(ack_any_status(ad, a)),
        (Mutant::AckFailed, Op::Ack) => Some(ack_failed_too(ad, a)),
        (Mutant::IntegralFloatNotInteger, Op::Complete) => Some(complete_refusing_integral_floats(ad, a)),
        (Mutant::SchemaDialectIgnored, Op::Complete) => Some(complete_ignoring_dialect(ad, a)),
        (Mutant::DispatchNotIdempotent, Op::Dispatch) => Some(dispatch_once(ad, a)),
        (Mutant::RedispatchRequeuesTerminal, Op::Dispatch) => Some(dispatch_requeues_terminal(ad, a)),
        (Mutant::CheckpointsNoStateUri, Op::LoadEnvelope) => Some(load_without_state_uri(ad, a)),
        (Mutant::EffectsLastWriteWins, Op::RecordEffect) => Some(record_effect_overwrites(ad, a)),
        (Mutant::CapabilitiesFailOpen, Op::RequireCapability) => Some(capabilities_fail_open(ad, a)),
        _ => None,
    }
}

impl MutantAdapter {
    /// Write buffered checkpoints (volatile-checkpoints); a write that
    /// fails now is logged and lost, like a failed write-behind.
    pub(super) fn flush(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let res = self
                .inner
                .runner(&p.root)
                .and_then(|r| Ok(r.with_id(&p.worker)?.checkpoint(&Lease::presented(&p.hid, p.fence)?, &p.state)?));
            if let Err(e) = res {
                eprintln!("dhp-mutant-adapter: buffered checkpoint of {} lost: {}: {}", p.hid, e.kind, e.message);
            }
        }
    }
}

/// volatile-checkpoints: validated now (state, token, lease), written at
/// the next request: a killed worker loses them.
fn buffer_checkpoint(ad: &mut MutantAdapter, a: &Value) -> R {
    let (r, hid, fence) = ad.inner.token(a)?;
    let state = v(a, "state")?.clone();
    dhp_core::runner::checked_state(&state, &ad.inner.cfg)?;
    r.effect_done(&Lease::presented(&hid, fence)?, "volatile-checkpoints probe")?; // the owner check, no writes
    let stored = r.last_checkpoint_row(&hid)?.map(|c| c.seq + 1).unwrap_or(0);
    let buffered = ad.pending.iter().filter(|p| p.hid == hid).count() as i64;
    ad.pending.push(Pending { root: s(a, "root")?.into(), worker: r.id().into(), hid, fence, state });
    Ok(json!({"seq": stored + buffered}))
}

/// no-schema-validation: the output schema is emptied before completing.
fn complete_any_result(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let (r, hid, _) = ad.inner.token(a)?;
    v(a, "result")?;
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        if let Some(mut env) = tx.envelope(&hid)? {
            env["contract"]["output_schema"] = json!({});
            let text = json::dumps(&env)?;
            tx.update_envelope(&hid, &text, clock.store_time())?;
        }
        Ok(())
    })?;
    ad.inner.handle_args(Op::Complete, a)
}

/// complete-not-idempotent: completing a completed handoff is an error.
fn complete_once(ad: &mut MutantAdapter, a: &Value) -> R {
    let (r, hid, _) = ad.inner.token(a)?;
    v(a, "result")?;
    if envelope::status(&r.envelope_bare(&hid)?) == "completed" {
        return Err(err("StateError", "already completed"));
    }
    ad.inner.handle_args(Op::Complete, a)
}

/// ack-before-complete: ack is recorded whatever the status.
fn ack_any_status(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let r = ad.inner.runner(s(a, "root")?)?;
    let hid = s(a, "hid")?.to_string();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let mut env = tx.envelope(&hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.clone() })?;
        env["delivery"]["outbox"]["ack"] = json!(true);
        let text = json::dumps(&env)?;
        tx.update_envelope(&hid, &text, clock.store_time())
    })?;
    Ok(json!({}))
}

/// Whether `v` holds a number written as a float with a zero fraction (`1.0`).
fn has_integral_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            let t = n.to_string();
            t.contains(['.', 'e', 'E']) && n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Value::Array(a) => a.iter().any(has_integral_float),
        Value::Object(m) => m.values().any(has_integral_float),
        _ => false,
    }
}

/// integral-float-not-integer: a result holding a float with a zero
/// fraction is refused as a schema violation (1.0 read as not an integer).
fn complete_refusing_integral_floats(ad: &mut MutantAdapter, a: &Value) -> R {
    if has_integral_float(v(a, "result")?) {
        return Err(err("ValidationError", "result violates output_schema: 1.0 is not of type 'integer'"));
    }
    ad.inner.handle_args(Op::Complete, a)
}

/// schema-dialect-ignored: the stored output_schema loses its `$schema`
/// before completing (every schema read as 2020-12).
fn complete_ignoring_dialect(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let (r, hid, _) = ad.inner.token(a)?;
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        if let Some(mut env) = tx.envelope(&hid)? {
            if let Some(o) = env["contract"]["output_schema"].as_object_mut() {
                if o.remove("$schema").is_some() {
                    let text = json::dumps(&env)?;
                    tx.update_envelope(&hid, &text, clock.store_time())?;
                }
            }
        }
        Ok(())
    })?;
    ad.inner.handle_args(Op::Complete, a)
}

/// ack-failed: ack of a failed handoff is recorded as if it had completed.
fn ack_failed_too(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.runner(s(a, "root")?)?;
    let hid = s(a, "hid")?.to_string();
    if envelope::status(&r.envelope_bare(&hid)?) == "failed" {
        return ack_any_status(ad, a);
    }
    ad.inner.handle_args(Op::Ack, a)
}

/// dispatch-not-idempotent: a hid already stored is refused.
fn dispatch_once(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.runner(s(a, "root")?)?;
    if let Some(hid) = v(a, "envelope")?.get("handoff_id").and_then(Value::as_str) {
        if r.envelope_bare(hid).is_ok() {
            return Err(err("StateError", format!("handoff {hid} already exists")));
        }
    }
    ad.inner.handle_args(Op::Dispatch, a)
}

/// redispatch-requeues-terminal: a re-dispatch of a completed or failed
/// handoff puts it back to pending, as if retrying from the DLQ. Only
/// `--explore` catches it: no fixed assertion re-dispatches terminal work
/// (PROTOCOL §4: completed and failed are terminal; §6.1: a re-dispatch
/// changes nothing).
fn dispatch_requeues_terminal(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let out = ad.inner.handle_args(Op::Dispatch, a)?;
    let r = ad.inner.runner(s(a, "root")?)?;
    let hid = s(&out, "hid")?.to_string();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        if let Some(mut env) = tx.envelope(&hid)? {
            if matches!(envelope::status(&env), "completed" | "failed") {
                env["execution"]["status"] = json!("pending");
                tx.update_envelope(&hid, &json::dumps(&env)?, clock.store_time())?;
                tx.delete_ownership(&hid)?;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// checkpoints-no-state-uri: the materialized checkpoints lack state_uri.
fn load_without_state_uri(ad: &mut MutantAdapter, a: &Value) -> R {
    let mut out = ad.inner.handle_args(Op::LoadEnvelope, a)?;
    if let Some(cps) = out.pointer_mut("/envelope/execution/checkpoints").and_then(Value::as_array_mut) {
        for c in cps.iter_mut().filter_map(Value::as_object_mut) {
            c.remove("state_uri");
        }
    }
    Ok(out)
}

/// effects-last-write-wins: record_effect overwrites an existing effect.
fn record_effect_overwrites(ad: &mut MutantAdapter, a: &Value) -> R {
    let out = ad.inner.handle_args(Op::RecordEffect, a)?;
    if out["recorded"] == json!(true) {
        return Ok(out);
    }
    let (_, hid, _) = ad.inner.token(a)?;
    let db = Path::new(s(a, "root")?).join("dhp.sqlite3");
    let c = rusqlite::Connection::open(db).map_err(|e| err("StoreError", e.to_string()))?;
    c.busy_timeout(Duration::from_secs(10)).map_err(|e| err("StoreError", e.to_string()))?;
    c.execute(
        "UPDATE effects SET result_json=?1 WHERE hid=?2 AND step_id=?3",
        rusqlite::params![json::dumps_sorted(v(a, "result")?)?, hid, s(a, "step_id")?],
    )
    .map_err(|e| err("StoreError", e.to_string()))?;
    Ok(json!({"recorded": true}))
}

/// capabilities-fail-open: a contract without capabilities grants
/// everything.
fn capabilities_fail_open(ad: &mut MutantAdapter, a: &Value) -> R {
    match ad.inner.handle_args(Op::RequireCapability, a) {
        Err(e) if e.kind == "CapabilityDenied" => {
            let (r, hid, _) = ad.inner.token(a)?;
            if r.envelope_bare(&hid)?.pointer("/contract/capabilities").is_none() {
                return Ok(json!({}));
            }
            Err::<Value, AErr>(e)
        }
        other => other,
    }
}

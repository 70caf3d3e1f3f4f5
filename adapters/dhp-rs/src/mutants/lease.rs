//! Ownership and lease mutants: fencing, claim and recover, lease expiry,
//! heartbeat, release, the fence `status` reports, liveness.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, i, s, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope::{self, ORPHANED_HOLDER};
use dhp_core::store::{with_tx, Mode, Ownership};
use dhp_core::{json, Error, Runner};
use serde_json::{json, Value};
use std::time::Duration;

/// The operations that present a worker's (hid, fence) token.
const TOKEN_OPS: &[Op] = &[
    Op::Checkpoint,
    Op::Heartbeat,
    Op::NoteStep,
    Op::NoteSpend,
    Op::Complete,
    Op::Release,
    Op::RecordEffect,
    Op::EffectDone,
    Op::NoteActivity,
    Op::RequireCapability,
    Op::RequestApproval,
    Op::AwaitApproval,
];

/// no-fence-check: a presented token is replaced by the current owner's.
pub(super) fn rewrite(ad: &mut MutantAdapter, op: Op, a: &mut Value) -> R<bool> {
    if !ad.is(Mutant::NoFenceCheck) || !TOKEN_OPS.contains(&op) {
        return Ok(false);
    }
    let r = ad.inner.worker(a)?;
    i(a, "fence")?;
    let Some(o) = r.ownership(s(a, "hid")?)? else { return Ok(false) };
    a["worker"] = json!(o.holder);
    a["fence"] = json!(o.fence);
    Ok(true)
}

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::NonAtomicClaim, Op::Claim) => Some(claim_non_atomic(ad, a)),
        (Mutant::NonAtomicRecover, Op::Recover) => Some(recover_non_atomic(ad, a)),
        (Mutant::RecoverPending, Op::Recover) => Some(recover_pending(ad, a)),
        (Mutant::IgnoreLeaseExpiry, Op::Checkpoint | Op::Heartbeat | Op::Complete) => Some(renew_and_retry(ad, op, a)),
        (Mutant::HeartbeatNoop, Op::Heartbeat) => Some(heartbeat_noop(ad, a)),
        (Mutant::HeartbeatConfiguredTtl, Op::Heartbeat) => Some(heartbeat_configured_ttl(ad, a)),
        (Mutant::ReleaseKeepsLease, Op::Release) => Some(release_keeps_lease(ad, a)),
        (Mutant::StatusFenceFromEnvelope, Op::Status) => Some(status_fence_from_envelope(ad, a)),
        (Mutant::NoLiveness, Op::LivenessPublish) => Some(Ok(json!({}))),
        _ => None,
    }
}

/// Take ownership with a plain read-then-write (non-atomic mutants).
fn overwrite_owner(ad: &MutantAdapter, r: &Runner, hid: &str, fence: i64, recovering: bool) -> R<()> {
    let clock = ad.inner.cfg.clock.clone();
    std::thread::sleep(Duration::from_millis(100));
    let cfg = ad.inner.cfg.clone();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let st = clock.store_time();
        let t = st.secs();
        let own = Ownership {
            hid: hid.to_string(),
            holder: r.id().to_string(),
            fence: fence.into(),
            lease_expires_at: t + cfg.lease_ttl_s(),
            heartbeat_interval_s: cfg.lease_interval_s,
            max_missed: cfg.lease_max_missed,
        };
        tx.delete_ownership(hid)?;
        tx.insert_ownership(&own, st)?;
        let mut env = tx.envelope(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
        let ex = &mut env["execution"];
        ex["status"] = json!("running");
        ex["runner_id"] = json!(r.id());
        ex["claimed_at"] = json::float(t);
        ex["fence"] = json!(fence);
        if recovering {
            ex["attempt"] = json!(ex["attempt"].as_i64().unwrap_or(0) + 1);
        }
        let text = json::dumps(&env)?;
        tx.update_envelope(hid, &text, st)?;
        Ok(())
    })?;
    Ok(())
}

/// non-atomic-claim: claim reads pending, waits, then overwrites the
/// ownership row.
fn claim_non_atomic(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.worker(a)?;
    let hid = s(a, "hid")?;
    let st = envelope::status(&r.envelope_bare(hid)?).to_string();
    if st != "pending" {
        return Err(err("StateError", format!("claim rejected: status is {st}")));
    }
    overwrite_owner(ad, &r, hid, 0, false)?;
    Ok(json!({"fence": 0}))
}

/// non-atomic-recover: recover reads the orphaned row, waits, then writes
/// without a compare-and-set.
fn recover_non_atomic(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.worker(a)?;
    let hid = s(a, "hid")?;
    let st = envelope::status(&r.envelope_bare(hid)?).to_string();
    if matches!(st.as_str(), "completed" | "failed" | "pending") {
        return Err(err("StateError", format!("recover rejected: status is {st}")));
    }
    let own = r.ownership(hid)?.filter(|o| o.holder == ORPHANED_HOLDER);
    let Some(own) = own else { return Err(err("OwnershipLost", "not orphaned")) };
    overwrite_owner(ad, &r, hid, own.fence.get() + 1, true)?;
    Ok(json!({"fence": own.fence.get() + 1}))
}

/// recover-pending: recover of a pending handoff takes it over.
fn recover_pending(ad: &mut MutantAdapter, a: &Value) -> R {
    let r = ad.inner.worker(a)?;
    let hid = s(a, "hid")?;
    if envelope::status(&r.envelope_bare(hid)?) == "pending" {
        overwrite_owner(ad, &r, hid, 1, true)?;
        return Ok(json!({"fence": 1}));
    }
    ad.inner.handle_args(Op::Recover, a)
}

/// ignore-lease-expiry: a write refused for an expired lease renews the
/// lease of the presented token and retries.
fn renew_and_retry(ad: &mut MutantAdapter, op: Op, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    match ad.inner.handle_args(op, a) {
        Err(e) if e.kind == "LeaseLost" => {
            let (r, hid, _) = ad.inner.token(a)?;
            let ttl = ad.inner.cfg.lease_ttl_s();
            with_tx(r.store().as_ref(), Mode::Write, |tx| {
                if let Some(mut o) = tx.ownership(&hid)? {
                    o.lease_expires_at = clock.now() + ttl;
                    tx.update_ownership(&o, clock.store_time())?;
                }
                Ok(())
            })?;
            ad.inner.handle_args(op, a)
        }
        other => other,
    }
}

/// heartbeat-noop: heartbeat answers without extending the lease.
fn heartbeat_noop(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let (r, hid, fence) = ad.inner.token(a)?;
    match r.ownership(&hid)? {
        Some(o) if o.holder == r.id() && o.fence.get() == fence && o.lease_expires_at < clock.now() => {
            Err(err("LeaseLost", "lease expired"))
        }
        Some(o) if o.holder == r.id() && o.fence.get() == fence => {
            Ok(json!({"expires_in_s": o.lease_expires_at - clock.now()}))
        }
        _ => Err(err("FencingError", "stale token")),
    }
}

/// heartbeat-configured-ttl: the real heartbeat, then the lease is set to
/// now + this process's configured TTL, whatever terms the row stores.
fn heartbeat_configured_ttl(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    ad.inner.handle_args(Op::Heartbeat, a)?;
    let (r, hid, _) = ad.inner.token(a)?;
    let ttl = ad.inner.cfg.lease_ttl_s();
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.ownership(&hid)? {
        Some(mut o) => {
            let t = clock.store_time();
            o.lease_expires_at = (t + ttl).secs();
            tx.update_ownership(&o, t)
        }
        None => Ok(false),
    })?;
    Ok(json!({"expires_in_s": ttl}))
}

/// release-keeps-lease: release marks the handoff pending but leaves the
/// ownership row.
fn release_keeps_lease(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let (r, hid, _) = ad.inner.token(a)?;
    let before = r.ownership(&hid)?;
    let out = ad.inner.handle_args(Op::Release, a)?;
    if let Some(o) = before {
        with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_ownership(&o, clock.store_time()))?;
    }
    Ok(out)
}

/// status-fence-from-envelope: status reports the fence recorded in the
/// envelope, not the ownership row's.
fn status_fence_from_envelope(ad: &mut MutantAdapter, a: &Value) -> R {
    let mut out = ad.inner.handle_args(Op::Status, a)?;
    let r = ad.inner.runner(s(a, "root")?)?;
    let env = r.envelope_bare(s(a, "hid")?)?;
    out["fence"] = env.pointer("/execution/fence").cloned().unwrap_or(Value::Null);
    Ok(out)
}

//! Supervisor mutants: leadership, stall detection and the dead-letter
//! queue.

use super::{Mutant, MutantAdapter};
use crate::adapter::{s, R};
use dhp_adapter_proto::Op;
use dhp_core::envelope::ORPHANED_HOLDER;
use dhp_core::store::{with_tx, Mode};
use dhp_core::{json, Runner};
use serde_json::{json, Value};

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::TwoLeaders, Op::EnsureLeadership | Op::Scan) => Some(take_leadership(ad, op, a)),
        (Mutant::NoDlq, Op::Scan) => Some(scan_without_dlq(ad, a)),
        (Mutant::LeaderNeverRenews, Op::EnsureLeadership) => Some(lead_without_renewing(ad, a)),
        _ => None,
    }
}

/// stall-by-repeats-only: a handoff counts as stalled only by repeated
/// activity; its checkpoint age never makes it stall.
pub(super) fn configure(m: Mutant, cfg: &mut dhp_core::Config) {
    if m == Mutant::StallByRepeatsOnly {
        cfg.stall_timeout_s = 86_400.0; // the largest a config admits: a day
    }
}

/// leader-never-renews: a leader whose term is still live answers "leader"
/// without writing a new term, so its term runs out under it.
fn lead_without_renewing(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let (root, id) = (s(a, "root")?, s(a, "supervisor")?);
    let r = ad.inner.runner(root)?;
    if dhp_testkit::store::leader(&r)?.is_some_and(|l| l.holder == id && l.expires_at > clock.now()) {
        return Ok(json!({"leader": true}));
    }
    ad.inner.handle_args(Op::EnsureLeadership, a)
}

/// two-leaders: a supervisor takes leadership whether or not another
/// holds a live term (the other's term is expired first).
fn take_leadership(ad: &mut MutantAdapter, op: Op, a: &Value) -> R {
    let (root, id) = (s(a, "root")?, s(a, "supervisor")?);
    let r = ad.inner.runner(root)?;
    if dhp_testkit::store::leader(&r)?.is_some_and(|l| l.holder != id) {
        dhp_testkit::store::expire_leadership(&r)?;
    }
    ad.inner.handle_args(op, a)
}

/// no-dlq: an expired lease is always orphaned for retry, never
/// dead-lettered; the rest of the scan is the real one.
fn scan_without_dlq(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let root = s(a, "root")?.to_string();
    let id = s(a, "supervisor")?.to_string();
    let r = ad.inner.runner(&root)?;
    let sup = ad.inner.supervisor(&root, &id)?;
    let mut actions = Vec::new();
    if sup.ensure_leadership()? {
        let expired = with_tx(r.store().as_ref(), Mode::Read, |tx| tx.expired_leases(clock.store_time()))?;
        for hid in expired {
            actions.push(orphan_without_dlq(&r, &hid)?);
        }
    }
    actions.extend(sup.scan()?);
    Ok(json!({"actions": actions}))
}

/// Orphan for retry whatever the attempt count.
fn orphan_without_dlq(r: &Runner, hid: &str) -> R {
    let clock = r.config().clock.clone();
    let st = clock.store_time();
    let t = st.secs();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let Some(mut own) = tx.ownership(hid)? else { return Ok(()) };
        own.holder = ORPHANED_HOLDER.into();
        own.fence = own.fence.next();
        own.lease_expires_at = 0.0;
        tx.update_ownership(&own, st)?;
        if let Some(mut env) = tx.envelope(hid)? {
            env["execution"]["status"] = json!("orphaned");
            env["execution"]["orphaned_at"] = json::float(t);
            env["execution"]["orphan_reason"] = json!("lease-expired");
            let text = json::dumps(&env)?;
            tx.update_envelope(hid, &text, st)?;
        }
        Ok(())
    })?;
    Ok(json!({"hid": hid, "action": "orphaned"}))
}

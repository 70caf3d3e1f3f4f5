//! Budget and stall mutants: step and spend limits, wallclock, the
//! supervisor's budget kill, stall detection.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, f, i, s, R};
use dhp_adapter_proto::Op;
use dhp_core::store::{with_tx, Mode};
use dhp_core::supervisor::OrphanReason;
use dhp_core::Config;
use serde_json::{json, Value};

/// no-stall-detection: the largest stall limits a valid configuration
/// allows (never stalled).
pub(super) fn configure(m: Mutant, cfg: &mut Config) {
    if m == Mutant::NoStallDetection {
        cfg.stall_max_repeats = dhp_core::config::MAX_STALL_REPEATS;
        cfg.stall_timeout_s = dhp_core::config::MAX_KNOB_S;
    }
}

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::NegativeStepsIgnored, Op::NoteStep) => Some(negative_steps_ignored(ad, a)),
        (Mutant::NoBudgetCheck, Op::NoteStep | Op::NoteSpend) => Some(swallow_budget(ad, op, a, |_| true)),
        (Mutant::WallclockUnchecked, Op::NoteStep | Op::NoteSpend) => {
            Some(swallow_budget(ad, op, a, |message| message.contains("wallclock")))
        }
        (Mutant::NoBudgetKill, Op::Scan) => Some(scan_without_budget_kill(ad, a)),
        (Mutant::NegativeSpendAccepted, Op::NoteSpend) => Some(negative_spend_accepted(ad, a)),
        _ => None,
    }
}

/// negative-steps-ignored: note_step with a negative count is accepted.
fn negative_steps_ignored(ad: &mut MutantAdapter, a: &Value) -> R {
    ad.inner.token(a)?;
    if i(a, "n")? < 0 {
        return Ok(json!({}));
    }
    ad.inner.handle_args(Op::NoteStep, a)
}

/// negative-spend-accepted: a negative amount is added to spend_usd (for
/// the token's owner), handing budget back.
fn negative_spend_accepted(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let usd = f(a, "usd")?;
    if usd >= 0.0 {
        return ad.inner.handle_args(Op::NoteSpend, a);
    }
    let (r, hid, fence) = ad.inner.token(a)?;
    let worker = r.id().to_string();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let own = tx.ownership(&hid)?;
        if !own.is_some_and(|o| o.holder == worker && o.fence.get() == fence) {
            return Ok(false);
        }
        let Some(mut env) = tx.envelope(&hid)? else { return Ok(false) };
        let spent = env["execution"]["spend_usd"].as_f64().unwrap_or(0.0);
        env["execution"]["spend_usd"] = dhp_core::json::float(spent + usd);
        let text = dhp_core::json::dumps(&env)?;
        tx.update_envelope(&hid, &text, clock.store_time())
    })?
    .then_some(json!({}))
    .ok_or_else(|| err("FencingError", "not the current owner"))
}

/// no-budget-check / wallclock-unchecked: a BudgetExceeded whose message
/// `swallowed` accepts is answered as a success.
fn swallow_budget(ad: &mut MutantAdapter, op: Op, a: &Value, swallowed: fn(&str) -> bool) -> R {
    match ad.inner.handle_args(op, a) {
        Err(e) if e.kind == "BudgetExceeded" && swallowed(&e.message) => Ok(json!({})),
        other => other,
    }
}

/// no-budget-kill: the supervisor scan does everything but budget
/// enforcement.
fn scan_without_budget_kill(ad: &mut MutantAdapter, a: &Value) -> R {
    let clock = ad.inner.cfg.clock.clone();
    let root = s(a, "root")?.to_string();
    let id = s(a, "supervisor")?.to_string();
    let r = ad.inner.runner(&root)?;
    let cfg = ad.inner.cfg.clone();
    let sup = ad.inner.supervisor(&root, &id)?;
    let mut actions = Vec::new();
    if sup.ensure_leadership()? {
        let t = clock.store_time();
        let (expired, stalled) = with_tx(r.store().as_ref(), Mode::Read, |tx| {
            Ok((tx.expired_leases(t)?, tx.stalled(t, t - cfg.stall_timeout_s, cfg.stall_max_repeats)?))
        })?;
        for hid in expired {
            actions.push(sup.orphan(&hid, OrphanReason::LeaseExpired, None)?);
        }
        actions.extend(sup.dead_workers()?);
        for hid in stalled {
            actions.push(sup.orphan(&hid, OrphanReason::Stalled, None)?);
        }
        actions.retain(|a| a["action"] != "already-orphaned-or-released");
        // everything else a scan does still happens
        with_tx(r.store().as_ref(), Mode::Write, |tx| tx.expire_approvals(clock.store_time()))?;
    }
    Ok(json!({"actions": actions}))
}

//! outcome: every handoff completed, or parked in the DLQ after
//! max_attempts; nothing left running, orphaned or pending.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::load::Handoff;
use crate::check::{opt, short, CHECK_THEN_WRITE, TORN_START};
use crate::round::ORPHANED;
use serde_json::Value;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let final_state = cx.meta.get("final").cloned().unwrap_or(Value::Null);
    for hid in &cx.hids {
        let Some(h) = cx.store.get(hid) else {
            out.of(hid, format!("{}: dispatched but not in the store", short(hid)));
            continue;
        };
        if !cx.facts.contains_key(hid) {
            out.of(hid, format!("{}: not a census handoff", short(hid)));
            continue;
        }
        out.checked += 1;
        match h.status.as_str() {
            "completed" => {}
            "failed" => match dlq_park(h) {
                Ok(attempt) => out.note(format!(
                    "{}: in the DLQ after {attempt} attempts ({} checkpoints kept)",
                    short(hid),
                    h.ckpts.len()
                )),
                Err((attempt, max_att, err)) => out.of(
                    hid,
                    format!(
                        "{}: failed but not a max-attempts DLQ park: attempt {attempt}/{max_att}, error {err:?}",
                        short(hid)
                    ),
                ),
            },
            other if cx.moved_to_standby(hid) => out.note(format!(
                "{}: {other:?} when its host died; moved to the standby (checked there and by failover)",
                short(hid)
            )),
            other => {
                let f = &final_state[hid.as_str()];
                let alive = f["owner_alive"].as_bool().unwrap_or(false);
                // a reference worker killed inside claim/recover left its ownership row behind
                if let Some((holder, _)) = &h.own {
                    let torn = cx.imp_of(holder) == "python"
                        && cx.ix.exits.contains_key(holder)
                        && cx.ix.ops.iter().any(|o| {
                            &o.process == holder
                                && &o.hid == hid
                                && (o.op == "claim" || o.op == "recover")
                                && o.ok.is_none()
                        });
                    if torn {
                        out.taint(hid, TORN_START);
                    }
                    // "orphaned" over a holder's row that was never moved: only a
                    // supervisor that writes the envelope apart from the row leaves
                    // this (a reference supervisor's late orphan write after a
                    // recover took the row); our supervisors repair it, the
                    // reference's do not (docs/torn-states.md)
                    let late_orphan = other == "orphaned"
                        && holder != ORPHANED
                        && cx.ix.spawns.values().any(|s| s.role == "supervisor" && s.imp == "python")
                        && !cx.ix.spawns.values().any(|s| s.role == "supervisor" && s.imp != "python");
                    if late_orphan {
                        out.taint(hid, CHECK_THEN_WRITE);
                    }
                }
                out.of(
                    hid,
                    format!(
                        "{}: stuck in {other:?} at the end (holder {}, fence {}, owner process alive: {alive})",
                        short(hid),
                        opt(h.own.as_ref().map(|o| &o.0)),
                        opt(h.own.as_ref().map(|o| o.1))
                    ),
                );
            }
        }
    }
    out
}

/// A failed handoff parked in the DLQ after max_attempts: `Ok(attempt)`;
/// otherwise `Err((attempt, max_attempts, error))`.
pub(crate) fn dlq_park(h: &Handoff) -> Result<i64, (i64, i64, String)> {
    let env = &h.env;
    let err = env.pointer("/execution/error").and_then(Value::as_str).unwrap_or("");
    let attempt = env.pointer("/execution/attempt").and_then(Value::as_i64).unwrap_or(0);
    let max_att = env.pointer("/contract/budget/max_attempts").and_then(Value::as_i64).unwrap_or(3);
    if err.contains("DLQ") && attempt >= max_att {
        Ok(attempt)
    } else {
        Err((attempt, max_att, err.to_string()))
    }
}

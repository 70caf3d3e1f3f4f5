//! zombies: a paused worker woken after it was replaced commits nothing.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::history::Op;
use crate::check::report::Zombies;
use crate::check::{iso_to_epoch, short, CHECK_THEN_WRITE};
use serde_json::Value;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    walk(cx).0
}

/// The zombie counts of the report.
pub(crate) fn tally(cx: &Ctx<'_>) -> Zombies {
    walk(cx).1
}

/// How many workers the harness stopped were woken after the store audit
/// shows their `(holder, fence)` taken away (what `zombies` must check).
pub(crate) fn woken_replaced(cx: &Ctx<'_>) -> usize {
    let Some(a) = cx.audit else { return 0 };
    cx.ix
        .faults
        .iter()
        .filter(|f| f.s("signal") == Some("STOP"))
        .filter(|f| {
            let (Some(victim), Some(hid), Some(fence)) = (f.s("victim"), f.hid(), f.i("lease_fence")) else {
                return false;
            };
            let Some(tc) = cx.woken_at(victim, f.t()) else { return false };
            a.superseded(hid, victim, fence).is_some_and(|(t, _)| t < tc)
        })
        .count()
}

/// Checkpoints of `hid` committed after `victim` was woken at `tc` (and
/// before it exited) that only a stale writer can have made, by the store
/// audit alone: committed while the handoff was orphaned or unowned, or
/// repeating a chunk (`next_n`) already committed — computed from a
/// superseded state.
fn audit_stale_writes(cx: &Ctx<'_>, hid: &str, victim: &str, tc: f64) -> Vec<String> {
    let Some(a) = cx.audit else { return Vec::new() };
    let exit = cx.ix.exits.get(victim).copied().unwrap_or(f64::INFINITY);
    let mut seen_n = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in a.checkpoint_inserts(hid) {
        let n = crate::check::audit::next_n(e);
        let dup = n.is_some_and(|n| !seen_n.insert(n));
        if e.at + 1e-3 < tc || e.at > exit + 1.0 {
            continue;
        }
        let seq = e.new_i("seq").unwrap_or(-1);
        match a.ownership_seen(hid, e.seq) {
            None => out.push(format!("seq {seq} with no ownership row")),
            Some((h, _)) if h == crate::round::ORPHANED => out.push(format!("seq {seq} while orphaned")),
            _ if dup => out.push(format!("seq {seq} repeats chunk next_n {}", n.unwrap_or(0))),
            _ => {}
        }
    }
    out
}

fn walk(cx: &Ctx<'_>) -> (Findings, Zombies) {
    let mut out = Findings::default();
    let mut zombies = Zombies::default();
    for f in cx.ix.faults.iter().filter(|f| f.s("signal") == Some("STOP")) {
        zombies.paused += 1;
        let victim = f.s("victim").unwrap_or("");
        let Some(hid) = f.hid() else { continue };
        let Some(fence) = f.i("lease_fence") else { continue };
        let Some(tc) = cx.woken_at(victim, f.t()) else { continue };
        let ts = f.t();
        // ops in flight when it was stopped finish after waking (their invoke is before the stop)
        let in_flight_commits: Vec<&Op> = cx
            .ix
            .ops
            .iter()
            .filter(|o| o.process == victim && o.invoke_t <= ts && (o.op == "checkpoint" || o.op == "complete"))
            .filter(|o| o.ok == Some(true) && o.out_t.is_some_and(|t| t >= tc))
            .collect();
        let audited = cx.audit.and_then(|a| a.superseded(hid, victim, fence)).filter(|(t, _)| *t < tc);
        let replaced = cx.superseded_at(hid, fence).is_some_and(|(t, _)| t < tc) || audited.is_some();
        if !replaced {
            if !in_flight_commits.is_empty() {
                out.note(format!(
                    "{}: {victim} was stopped inside a write and committed on waking, before anyone else could act (on SQLite it held the write lock while stopped; on PostgreSQL the server committed it while the worker was stopped)",
                    short(hid)
                ));
            }
            continue;
        }
        zombies.woken_after_replacement += 1;
        out.checked += 1;
        let after: Vec<&Op> = cx.ix.ops.iter().filter(|o| o.process == victim && o.invoke_t >= tc).collect();
        let wrote: Vec<&&Op> = after.iter().filter(|o| o.ok == Some(true) && o.op == "checkpoint").collect();
        // on the real clock when the facts have it (a faked clock may have stamped it)
        let completed_at = cx.facts.get(hid).and_then(|f| f.completed_at).or_else(|| {
            cx.store
                .get(hid)
                .and_then(|h| h.env.pointer("/execution/completed_at").and_then(Value::as_str).and_then(iso_to_epoch))
        });
        // a complete the store shows was the idempotent no-op is no zombie write
        let noop = |o: &Op| cx.facts.get(hid).is_some_and(|f| f.late_complete(o));
        let bad_complete = after.iter().any(|o| {
            o.op == "complete"
                && o.ok == Some(true)
                && completed_at.is_none_or(|ca| ca + 1e-6 >= o.invoke_t)
                && !noop(o)
        });
        // an in-flight checkpoint the server committed before the orphan (in
        // the store's order) only had its reply read late: not a zombie write
        let (early, in_flight_commits): (Vec<&Op>, Vec<&Op>) =
            in_flight_commits.into_iter().partition(|o| cx.committed_before_supersede(o, fence));
        for o in &early {
            out.note(format!(
                "{}: {victim}'s in-flight checkpoint seq {} was committed before the orphan of fence {fence} (store order); it read the reply on waking",
                short(hid),
                o.seq.unwrap_or(-1)
            ));
        }
        // a completion that was already committed when the zombie's complete began is the idempotent no-op
        let in_flight_bad: Vec<&&Op> = in_flight_commits
            .iter()
            .filter(|o| o.op == "checkpoint" || completed_at.is_none_or(|ca| ca + 1e-6 >= o.invoke_t))
            .collect();
        let stale = audit_stale_writes(cx, hid, victim, tc);
        if wrote.is_empty() && !bad_complete && in_flight_bad.is_empty() && !stale.is_empty() {
            zombies.wrote += 1;
            let known = (cx.imp_of(victim) == "python").then_some(CHECK_THEN_WRITE);
            let msg = format!(
                "{}: {victim} (fence {fence}) was replaced while stopped (store audit) and, after waking, stale checkpoints were committed: {}",
                short(hid),
                stale.join("; ")
            );
            out.found.push(crate::check::findings::Finding { msg, hid: Some(hid.to_string()), known });
        } else if !wrote.is_empty() || bad_complete || !in_flight_bad.is_empty() {
            zombies.wrote += 1;
            let msg = format!(
                "{}: {victim} (fence {fence}) was replaced while stopped and, after waking, committed {} new checkpoint(s){}{}",
                short(hid),
                wrote.len(),
                if bad_complete { " and a completion" } else { "" },
                if in_flight_bad.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; its in-flight {} committed after its replacement{}",
                        in_flight_bad.iter().map(|o| o.op.as_str()).collect::<Vec<_>>().join(" and "),
                        if cx.orphan_counted(hid, fence) {
                            ""
                        } else {
                            " (judged by when it read the reply: the orphan of its fence left no record, so the store's order is unknown)"
                        }
                    )
                }
            );
            // a tainted handoff's zombie is the taint's; otherwise a reference
            // zombie is its check-then-write
            let known = (cx.imp_of(victim) == "python").then_some(CHECK_THEN_WRITE);
            out.found.push(crate::check::findings::Finding { msg, hid: Some(hid.to_string()), known });
        } else if after.first().is_some_and(|o| o.ok == Some(false)) || !after.is_empty() {
            zombies.fenced += 1;
        } else {
            zombies.silent += 1;
        }
    }
    (out, zombies)
}

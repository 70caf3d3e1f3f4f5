//! no-lost-commits-across-db-crash, across failovers (`db-failover`,
//! `--pg-cluster`): every checkpoint and completion a worker saw return Ok
//! before the primary crashed must be on the standby that was promoted. The
//! harness read that standby once its received WAL was replayed and before
//! it was promoted (`db-failover-snapshot`: the highest checkpoint seq per
//! handoff and the completed handoffs), so work redone after the failover
//! cannot hide a loss. With synchronous replication nothing acknowledged is
//! missing; with asynchronous replication the acknowledgements the
//! promoted standby never received are named here, seq by seq. Under
//! pg_auto_failover (quorum `ANY 1`) the record is of both standbys (the
//! higher seq per handoff): an acknowledgement must be on one of them.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};

/// Orphans this long after the cluster is whole again still belong to the
/// failover (the keepers' retake, [`crate::check::db_link::RETAKE_S`]).
const FALSE_ORPHAN_AFTER_UP_S: f64 = crate::check::db_link::RETAKE_S;

pub(super) fn check(cx: &Ctx<'_>, out: &mut Findings) {
    let mut n = 0;
    let mut orphaned = 0;
    let mut manager = String::new();
    for f in cx.ix.faults.iter().filter(|f| f.s("kind") == Some("db-failover")) {
        let id = f.u("fault_id");
        let of = |what: &str| cx.ix.observes.iter().find(|o| o.s("what") == Some(what) && o.u("fault_id") == id);
        let (Some(crash), Some(snap)) = (of("db-primary-crashed"), of("db-failover-snapshot")) else {
            if of("db-primary-crashed").is_some() {
                out.plain(format!("failover {}: the promoted standby was not read before promotion", opt(id)));
            }
            continue;
        };
        if let Some(e) = snap.s("error") {
            out.plain(format!("failover {}: the promoted standby could not be read before promotion: {e}", opt(id)));
            continue;
        }
        // under a quorum (ANY 1) an acknowledgement may be on the unread standby alone
        let unread: Vec<&str> = snap
            .get("unread")
            .and_then(|v| v.as_array())
            .map_or(Vec::new(), |a| a.iter().filter_map(|v| v.as_str()).collect());
        if !unread.is_empty() {
            out.plain(format!(
                "failover {}: not every standby of the quorum could be read at the loss ({}): its acknowledgements cannot be judged",
                opt(id),
                unread.join("; ")
            ));
            continue;
        }
        n += 1;
        let crashed = crash.t();
        if let Some(m) = f.s("failover_manager") {
            manager = m.to_string();
        }
        orphaned += false_orphans(cx, f, of("db-up").map_or(f64::INFINITY, |o| o.t()), out);
        let node = snap.s("node").unwrap_or("?");
        let (holds, has) = if crate::pg_cluster::Manager::is_auto(f.s("failover_manager")) {
            (format!("the standbys {node}, read at the loss, hold"), format!("neither standby ({node}) has"))
        } else {
            (format!("promoted standby {node} holds"), format!("the promoted standby {node} does not have"))
        };
        lost_acks(cx, snap, Failover { id, crashed, holds: &holds, has: &has }, out);
    }
    if n > 0 {
        let against = if crate::pg_cluster::Manager::is_auto(Some(&manager)) {
            "both standbys (the quorum that acknowledges), read before the monitor promoted one"
        } else {
            "the promoted standby, read before promotion"
        };
        out.note(format!(
            "{n} failover(s) (failover-manager: {manager}); acknowledgements before each primary crash were checked against {against}"
        ));
        out.note(format!(
            "{orphaned} worker-died orphan(s) of live holders caused by the failover(s) (false orphans: fenced, by design; bound: each handoff at most once per failover)"
        ));
    }
}

/// Orphans of live holders that failover `f` caused: worker-died (the lock
/// was not on the new primary) between the fault and the cluster's return
/// (`up`, plus the keepers' retake), of a holder no process fault touched.
/// Bound: each handoff at most once per failover. Returns how many.
fn false_orphans(cx: &Ctx<'_>, f: &crate::hist::Ev, up: f64, out: &mut Findings) -> usize {
    let false_orphans: Vec<&str> = cx
        .ix
        .orphans
        .iter()
        .filter(|o| o.reason.as_deref() == Some("worker-died") && o.t >= f.t() && o.t <= up + FALSE_ORPHAN_AFTER_UP_S)
        .filter(|o| {
            o.previous_holder
                .as_deref()
                .is_some_and(|h| !cx.ix.faults.iter().any(|pf| pf.s("victim") == Some(h) && pf.t() <= o.t + 0.001))
        })
        .map(|o| o.hid.as_str())
        .collect();
    let mut distinct = false_orphans.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < false_orphans.len() {
        out.plain(format!(
            "failover {}: {} worker-died orphans of live holders for {} handoffs: a handoff was orphaned more than once by one failover (bound: once per handoff)",
            opt(f.u("fault_id")), false_orphans.len(), distinct.len()
        ));
    }
    false_orphans.len()
}

/// One failover, as its findings name it.
struct Failover<'a> {
    id: Option<u64>,
    /// When the primary crashed.
    crashed: f64,
    /// "… holds" / "… does not have": the standby (or standbys) read.
    holds: &'a str,
    has: &'a str,
}

/// Every checkpoint and completion acknowledged before the crash must be
/// in the snapshot `snap` of the standby (or standbys) read at the loss.
fn lost_acks(cx: &Ctx<'_>, snap: &crate::hist::Ev, fo: Failover<'_>, out: &mut Findings) {
    let t0 = cx.meta["t0"].as_f64().unwrap_or(0.0);
    let Failover { id, crashed, holds, has } = fo;
    let max_seq = snap.get("max_seq");
    let completed: Vec<&str> = snap
        .get("completed")
        .and_then(|v| v.as_array())
        .map_or(Vec::new(), |a| a.iter().filter_map(|v| v.as_str()).collect());
    for (hid, facts) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|x| (hid, x))) {
        let held = max_seq.and_then(|m| m.get(hid.as_str())).and_then(|v| v.as_i64());
        let mut lost = Vec::new();
        for o in facts.ops.iter().filter(|o| o.ok == Some(true) && o.out_t.is_some_and(|t| t < crashed)) {
            let acked = o.out_t.unwrap_or(o.invoke_t);
            match o.op.as_str() {
                "checkpoint" => {
                    out.checked += 1;
                    if o.seq.is_some_and(|s| held.is_none_or(|h| s > h)) {
                        lost.push(format!(
                            "{} (next_n {}, {} at +{:.3}s)",
                            opt(o.seq),
                            opt(o.next_n),
                            o.holder,
                            acked - t0
                        ));
                    }
                }
                "complete" => {
                    out.checked += 1;
                    if !completed.contains(&hid.as_str()) {
                        out.of(hid, format!(
                            "{}: {} was told its completion committed at +{:.3}s; the primary crashed at +{:.3}s and {has} it",
                            short(hid), o.holder, acked - t0, crashed - t0
                        ));
                    }
                }
                _ => {}
            }
        }
        if !lost.is_empty() {
            out.of(hid, format!(
                "{}: acknowledged checkpoint seq(s) lost in failover {} (primary crashed at +{:.3}s, {holds} up to seq {}): {}",
                short(hid), opt(id), crashed - t0, opt(held), lost.join(", ")
            ));
        }
    }
}

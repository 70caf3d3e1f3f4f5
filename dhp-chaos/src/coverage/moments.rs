//! Where in the protocol each process fault landed, from the harness's
//! fault record, the store audit (grants, committed checkpoints, orphans)
//! and the workload service's record (the chunk a worker was served).

use super::{Column, Moment};
use crate::check::audit::{next_n, Kind};
use crate::check::Ctx;
use crate::hist::Ev;
use std::collections::BTreeMap;

/// Hits per (moment, column).
pub(super) fn place(cx: &Ctx<'_>) -> BTreeMap<(Moment, Column), u64> {
    let mut hits: BTreeMap<(Moment, Column), u64> = BTreeMap::new();
    for (_, col, ms) in place_each(cx) {
        for m in ms {
            *hits.entry((m, col)).or_default() += 1;
        }
    }
    hits
}

/// Each process fault (one line per victim), its column and the moments it hit.
pub(super) fn place_each<'a>(cx: &'a Ctx<'_>) -> Vec<(&'a Ev, Column, Vec<Moment>)> {
    let mut out = Vec::new();
    for f in &cx.ix.faults {
        let Some(col) = column(f) else { continue };
        out.push((*f, col, moments(cx, f, col)));
    }
    out
}

fn column(f: &Ev) -> Option<Column> {
    match (f.s("kind").unwrap_or(""), f.s("signal")) {
        ("teardown" | "resume", _) => None,
        ("failpoint", _) => Some(Column::Failpoint),
        ("kill-at-commit" | "pause-at-commit", _) => Some(Column::AtCommit),
        (_, Some("KILL")) => Some(Column::Sigkill),
        (_, Some("STOP")) => Some(Column::Sigstop),
        _ => None,
    }
}

/// The moments fault `f` hit (a fault on a lease holder hits `renew` too).
fn moments(cx: &Ctx<'_>, f: &Ev, col: Column) -> Vec<Moment> {
    match f.s("role") {
        Some("supervisor") => supervisor(cx, f),
        Some("worker") if col == Column::Failpoint => failpoint(f).into_iter().collect(),
        Some("worker") => worker(cx, f),
        _ => Vec::new(),
    }
}

/// The harness armed the failpoint, so its name is the moment.
fn failpoint(f: &Ev) -> Option<Moment> {
    match f.s("failpoint")? {
        "heartbeat" => Some(Moment::Renew),
        "ship.after_commit" => Some(Moment::CheckpointAfterAck),
        "complete" | "complete.after_commit" => Some(Moment::Complete),
        _ => Some(Moment::CheckpointBeforeAck),
    }
}

fn supervisor(cx: &Ctx<'_>, f: &Ev) -> Vec<Moment> {
    let mut out = Vec::new();
    if f.get("leader").and_then(serde_json::Value::as_bool) == Some(true) {
        out.push(Moment::LeaderHandover);
    }
    // killed the moment the harness saw its orphan commit in the audit
    if f.s("moment") == Some("orphan") || orphan_due(cx, f.t()) {
        out.push(Moment::Orphan);
    }
    out
}

/// At `t`, a worker the harness had faulted earlier still held its
/// handoff in the store: an orphan was due (store audit).
fn orphan_due(cx: &Ctx<'_>, t: f64) -> bool {
    let Some(a) = cx.audit else { return false };
    cx.ix.faults.iter().filter(|w| w.s("role") == Some("worker") && w.t() < t).any(|w| {
        let (Some(victim), Some(hid), Some(fence)) = (w.s("victim"), w.hid(), w.i("lease_fence")) else {
            return false;
        };
        a.superseded(hid, victim, fence).is_none_or(|(at, _)| at > t)
            && cx.facts.get(hid).and_then(|x| x.completed_at).is_none_or(|c| c > t)
    })
}

fn worker(cx: &Ctx<'_>, f: &Ev) -> Vec<Moment> {
    let (Some(victim), Some(hid)) = (f.s("victim"), f.hid()) else { return Vec::new() };
    let t = f.t();
    let granted = f.i("lease_fence").is_some()
        || cx.audit.is_some_and(|a| {
            a.transitions()
                .iter()
                .any(|tr| tr.hid == hid && tr.at <= t && tr.new.as_ref().is_some_and(|(h, _)| h == victim))
        });
    if !granted {
        // before its grant: a recoverer when the handoff had an owner before
        let owned_before = cx
            .audit
            .is_some_and(|a| a.transitions().iter().any(|tr| tr.hid == hid && tr.at <= t && tr.kind == Kind::Claim));
        return vec![if owned_before { Moment::Recover } else { Moment::Claim }];
    }
    let mut out = vec![Moment::Renew];
    let (Some(w), Some(a)) = (&cx.workload, cx.audit) else { return out };
    let Some(last) = w.served_to(victim, hid).filter(|s| s.t <= t).last() else { return out };
    let committed = a.checkpoint_inserts(hid).any(|e| e.at <= t && next_n(e) == Some(last.end));
    let hi = w.served.iter().filter(|s| s.hid == hid).map(|s| s.end).max().unwrap_or(u64::MAX);
    out.push(match (committed, last.end >= hi) {
        (false, _) => Moment::CheckpointBeforeAck,
        (true, true) => Moment::Complete,
        (true, false) => Moment::CheckpointAfterAck,
    });
    out
}

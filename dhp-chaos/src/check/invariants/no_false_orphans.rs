//! no-false-orphans: a handoff orphaned as worker-died (liveness token
//! dropped) was held by a process that had really died.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::history::Orphan;
use crate::check::{opt, short};
use crate::round::ORPHANED;

/// Seconds after the database is back within which a holder's keeper has
/// retaken its lock (it pings every 0.5 s, then reconnects).
const RETAKE_S: f64 = 2.0;

/// A worker-died orphan whose holder had not been faulted and had not
/// exited (its exit is reaped within milliseconds of death; allow 1 s for a
/// loaded machine): the liveness mechanism took a live worker's handoff.
/// Lease-expired orphans of unfaulted workers are the lease working as
/// designed (fenced), counted in a note.
///
/// On PostgreSQL the liveness token is a session advisory lock: a database
/// fault that cuts the holder's own liveness session (its backend
/// terminated, the server crashed) drops the lock as a death would — by
/// design, the holder is fenced and told at its next write. Such orphans
/// are counted in a note; an orphan while the holder's session was intact
/// is a violation (terminating one of the worker's other backends does not
/// excuse it; a stopped worker, `db-stall`, is faulted like a paused one).
/// A `db-link` toxic that closes connections (reset, cut-after, a blackhole
/// with a timeout) cuts the liveness session the same way: counted in a
/// note too (`check/db_link.rs`).
/// The orphans to judge: the store audit's (ownership moved to
/// `__orphaned__`, with the reason its transaction wrote into the
/// envelope) when the round has an audit, else the supervisors' history.
fn orphans(cx: &Ctx<'_>) -> Vec<Orphan> {
    if cx.audit.is_none() {
        return cx.ix.orphans.clone();
    }
    cx.audit_orphans()
        .into_iter()
        .map(|(t, reason, _)| Orphan {
            t: t.at,
            hid: t.hid.clone(),
            reason,
            previous_holder: t.old.as_ref().map(|o| o.0.clone()),
            previous_fence: t.old.as_ref().map(|o| o.1),
            fence: t.new.as_ref().map(|n| n.1),
            checkpoints: None,
            supervisor: format!("the leader (store audit seq {})", t.seq),
        })
        .collect()
}

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let mut lease_orphans_of_unfaulted = 0usize;
    let mut session_cut = 0usize;
    let outages = crate::check::faults::db_outages(cx);
    let links = crate::check::db_link::windows(cx.ix, cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    let mut link_cut = 0usize;
    for o in &orphans(cx) {
        let Some(holder) = o.previous_holder.as_deref() else { continue };
        if holder == ORPHANED {
            continue;
        }
        let faulted = cx.ix.faults.iter().any(|f| {
            f.s("victim") == Some(holder)
                && f.t() <= o.t + 0.001
                && (f.s("kind") != Some("db-terminate-backend")
                    || f.get("liveness_connection").and_then(serde_json::Value::as_bool) == Some(true))
        });
        // the keeper retakes its lock within a ping of the server's return
        let cut_by_crash = outages.iter().any(|(a, b)| o.t >= *a && o.t <= b + RETAKE_S);
        let exited = cx.ix.exits.get(holder).is_some_and(|et| *et <= o.t + 1.0);
        // a history line written after the orphan proves the holder was alive
        // then, whatever made it exit soon after (being fenced, typically)
        let wrote_after = cx.ix.ops.iter().any(|op| op.process == holder && op.out_t.unwrap_or(op.invoke_t) > o.t);
        match o.reason.as_deref() {
            Some("worker-died") => {
                out.checked += 1;
                if faulted || (exited && !wrote_after) {
                } else if cut_by_crash {
                    session_cut += 1;
                } else if crate::check::db_link::explains(&links, o.reason.as_deref(), o.t, 0.0) {
                    link_cut += 1;
                } else {
                    let why = if exited {
                        "was not faulted and recorded operations after the orphan (alive)"
                    } else {
                        "was neither faulted nor exited"
                    };
                    out.plain(format!(
                        "{}: orphaned as worker-died from {holder} (fence {}) by {}, but {holder} {why}",
                        short(&o.hid),
                        opt(o.previous_fence),
                        o.supervisor
                    ));
                }
            }
            Some("lease-expired") if !faulted && !exited => lease_orphans_of_unfaulted += 1,
            _ => {}
        }
    }
    if session_cut > 0 {
        out.note(format!(
            "{session_cut} worker-died orphan(s) of live workers whose liveness session the database crash cut (the lock went with the server; fenced, by design)"
        ));
    }
    if link_cut > 0 {
        out.note(format!(
            "{link_cut} worker-died orphan(s) of live workers whose liveness connection a db-link fault cut (the lock went with the connection; fenced, by design)"
        ));
    }
    if lease_orphans_of_unfaulted > 0 {
        out.note(format!(
            "{lease_orphans_of_unfaulted} lease-expired orphan(s) of workers that were never faulted (a lease missed under load: fenced, not a violation)"
        ));
    }
    out
}

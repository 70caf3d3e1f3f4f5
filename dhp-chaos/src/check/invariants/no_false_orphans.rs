//! no-false-orphans: a handoff orphaned as worker-died (liveness token
//! dropped) was held by a process that had really died.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};
use crate::round::ORPHANED;

/// A worker-died orphan whose holder had not been faulted and had not
/// exited (its exit is reaped within milliseconds of death; allow 1 s for a
/// loaded machine): the liveness mechanism took a live worker's handoff.
/// Lease-expired orphans of unfaulted workers are the lease working as
/// designed (fenced), counted in a note.
pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let mut lease_orphans_of_unfaulted = 0usize;
    for o in &cx.ix.orphans {
        let Some(holder) = o.previous_holder.as_deref() else { continue };
        if holder == ORPHANED {
            continue;
        }
        let faulted = cx.ix.faults.iter().any(|f| f.s("victim") == Some(holder) && f.t() <= o.t + 0.001);
        let exited = cx.ix.exits.get(holder).is_some_and(|et| *et <= o.t + 1.0);
        match o.reason.as_deref() {
            Some("worker-died") => {
                out.checked += 1;
                if !faulted && !exited {
                    out.plain(format!(
                        "{}: orphaned as worker-died from {holder} (fence {}) by {}, but {holder} was neither faulted nor exited",
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
    if lease_orphans_of_unfaulted > 0 {
        out.note(format!(
            "{lease_orphans_of_unfaulted} lease-expired orphan(s) of workers that were never faulted (a lease missed under load: fenced, not a violation)"
        ));
    }
    out
}

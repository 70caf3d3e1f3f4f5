//! fencing: along commit order fences never go backwards, no two holders'
//! writes interleave, no write after its fence was superseded, every
//! acknowledged write is in the store.

use crate::check::ctx::{in_flight_writers, Ctx, Facts};
use crate::check::findings::Findings;
use crate::check::load::Ckpt;
use crate::check::{opt, short, CHECK_THEN_WRITE};
use std::collections::HashMap;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    super::fencing_audit::check(cx, &mut out);
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        acknowledged_writes(hid, f, cx.ingested(hid), &mut out);
        fence_ledger(cx, hid, f, &mut out);
        commit_order(cx, hid, f, &mut out);
    }
    out
}

/// Every acknowledged checkpoint is in the store as acknowledged, once;
/// every committed checkpoint was written by a recorded operation.
fn acknowledged_writes(hid: &str, f: &Facts<'_>, ingested: i64, out: &mut Findings) {
    let by_seq: HashMap<i64, &Ckpt> = f.h.ckpts.iter().map(|c| (c.seq, c)).collect();
    let mut acked: HashMap<i64, &str> = HashMap::new();
    for o in f.ops.iter().filter(|o| o.op == "checkpoint" && o.ok == Some(true)) {
        out.checked += 1;
        let Some(seq) = o.seq else { continue };
        match by_seq.get(&seq) {
            None => out.of(hid, format!(
                "{}: {} was told seq {seq} committed (fence {}) but the store has no seq {seq}: an acknowledged write was lost",
                short(hid), o.holder, opt(o.fence)
            )),
            Some(c) if o.next_n.is_some() && c.state["next_n"].as_u64() != o.next_n => out.of(hid, format!(
                "{}: {} was told seq {seq} committed with next_n {}, the store's seq {seq} has next_n {}: overwritten",
                short(hid), o.holder, opt(o.next_n), opt(c.state["next_n"].as_u64())
            )),
            Some(_) => {}
        }
        if let Some(prev) = acked.get(&seq) {
            out.of(hid, format!("{}: seq {seq} acknowledged to both {prev} and {}", short(hid), o.holder));
        }
        acked.insert(seq, o.holder.as_str());
    }
    let mut unattributed = Vec::new();
    // a standby's ingested seqs were written on the dead host (checked there)
    for c in f.h.ckpts.iter().filter(|c| !acked.contains_key(&c.seq) && c.seq >= ingested) {
        match in_flight_writers(&f.ops, c).len() {
            1 => {}
            0 => unattributed.push(c.seq),
            many => out.note(format!(
                "{}: seq {} committed without acknowledgement; {many} in-flight writers could have made it (not attributed)",
                short(hid), c.seq
            )),
        }
    }
    if !unattributed.is_empty() {
        let msg = format!("{}: seqs {unattributed:?} were committed but no recorded operation wrote them", short(hid));
        if f.hist_complete {
            out.of(hid, msg);
        } else {
            out.note(format!("{msg} (some workers of this handoff record no history)"));
        }
    }
    let unack = f.writers.values().filter(|w| !w.acknowledged).count();
    if unack > 0 {
        out.note(format!(
            "{}: {unack} checkpoint(s) committed but the writer died before recording ok (attributed via its invoke)",
            short(hid)
        ));
    }
}

/// One holder per fence, one claim, orphans advance the fence by one.
fn fence_ledger(cx: &Ctx<'_>, hid: &str, f: &Facts<'_>, out: &mut Findings) {
    let mut fence_holder: HashMap<i64, &str> = HashMap::new();
    for g in &f.grants {
        out.checked += 1;
        let fence = g.fence.unwrap_or(-1);
        if let Some(prev) = fence_holder.get(&fence) {
            if *prev != g.holder {
                out.of(
                    hid,
                    format!(
                        "{}: fence {fence} granted to both {prev} and {} (split brain at {})",
                        short(hid),
                        g.holder,
                        g.op
                    ),
                );
            }
        }
        fence_holder.insert(fence, g.holder.as_str());
    }
    let claims = f.grants.iter().filter(|g| g.op == "claim").count();
    if claims > 1 {
        out.of(hid, format!("{}: claimed {claims} times (exactly one claimer must win)", short(hid)));
    }
    // With the store audit the store's own record decides every orphan's
    // bump (fencing_audit); a supervisor's history line is detail, and the
    // reference's shim reads the fence after the orphan returned, so a
    // recover that raced in between shows as a jump of two.
    if cx.audit.is_some() {
        return;
    }
    let mut orphan_to: HashMap<i64, usize> = HashMap::new();
    for o in cx.ix.orphans.iter().filter(|o| o.hid == hid) {
        if let (Some(p), Some(to)) = (o.previous_fence, o.fence) {
            if to != p + 1 {
                out.of(hid, format!("{}: {} orphaned fence {p} to fence {to} (must be +1)", short(hid), o.supervisor));
            }
            *orphan_to.entry(to).or_default() += 1;
        }
    }
    for (to, n) in orphan_to {
        if n > 1 {
            out.of(hid, format!("{}: orphaned to fence {to} {n} times", short(hid)));
        }
    }
}

/// Along commit order fences never go backwards, holders do not
/// interleave, and no write begins after its fence was superseded.
fn commit_order(cx: &Ctx<'_>, hid: &str, f: &Facts<'_>, out: &mut Findings) {
    let mut max_f: Option<(i64, i64, String)> = None; // (fence, seq, holder)
    for (seq, w) in &f.writers {
        if let Some(gh) = f.fence_holder.get(&w.fence) {
            if gh != &w.holder {
                out.of(
                    hid,
                    format!(
                        "{}: seq {seq} written by {} with fence {}, which was granted to {gh}",
                        short(hid),
                        w.holder,
                        w.fence
                    ),
                );
            }
        } else if f.hist_complete && w.fence >= 0 {
            out.of(
                hid,
                format!(
                    "{}: seq {seq} written by {} with fence {} that was never granted",
                    short(hid),
                    w.holder,
                    w.fence
                ),
            );
        }
        if let Some((mf, ms, mh)) = &max_f {
            if w.fence < *mf {
                // the reference's check passed before it was superseded; its write landed after
                if cx.imp_of(&w.process) == "python"
                    && cx.superseded_at(hid, w.fence).is_none_or(|(t, _)| t >= w.invoke_t)
                {
                    out.taint(hid, CHECK_THEN_WRITE);
                }
                out.of(hid, format!(
                    "{}: fence went backwards along commit order: seq {seq} by {} (fence {}) after seq {ms} by {mh} (fence {mf}) — split brain",
                    short(hid), w.holder, w.fence
                ));
            }
            if w.fence == *mf && &w.holder != mh {
                out.of(
                    hid,
                    format!(
                        "{}: seqs {ms} and {seq} written by {mh} and {} with the same fence {mf}",
                        short(hid),
                        w.holder
                    ),
                );
            }
        }
        if max_f.as_ref().is_none_or(|(mf, _, _)| w.fence >= *mf) {
            max_f = Some((w.fence, *seq, w.holder.clone()));
        }
        if let Some((t, why)) = cx.superseded_at(hid, w.fence) {
            // Times only approximate the order; the orphan's own count is the
            // order: a row it counted was committed before it (a supervisor
            // on a faked clock is put back on the real clock to a ms or so).
            if w.invoke_t > t && !counted_by_orphan(cx, hid, w.fence, *seq) {
                out.of(hid, format!(
                    "{}: seq {seq} committed by {} with fence {} although it was invoked {:.3}s after {why} (stale write accepted)",
                    short(hid), w.holder, w.fence, w.invoke_t - t
                ));
            }
        }
    }
}

/// The orphan that took fence `fence` away counted the checkpoint at `seq`
/// among those committed before its own transaction.
fn counted_by_orphan(cx: &Ctx<'_>, hid: &str, fence: i64, seq: i64) -> bool {
    cx.ix
        .orphans
        .iter()
        .filter(|o| o.hid == hid && o.previous_fence == Some(fence))
        .filter_map(|o| o.checkpoints)
        .min()
        .is_some_and(|c| seq < c)
}

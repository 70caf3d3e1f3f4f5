//! The part of `fencing` read from the store audit alone: every change of
//! every ownership row in commit order, and every checkpoint's commit
//! against the ownership row its transaction saw (docs/PROTOCOL.md §5).

use crate::check::audit::Kind;
use crate::check::ctx::Ctx;
use crate::check::findings::{Finding, Findings};
use crate::check::{short, CHECK_THEN_WRITE};
use crate::round::ORPHANED;
use std::collections::{BTreeMap, BTreeSet};

/// Fences only grow, an orphan and a recover each bump the fence by one,
/// one recover per orphan, no holder replaced without an orphan, one holder
/// per fence; no checkpoint committed while nobody held a valid fence; and,
/// where the history names the writer's fence, none below the fence the
/// store had at its commit.
pub(super) fn check(cx: &Ctx<'_>, out: &mut Findings) {
    let Some(a) = cx.audit else { return };
    let mut holders: BTreeMap<(String, i64), BTreeSet<String>> = BTreeMap::new();
    let mut recovers: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    for t in a.transitions() {
        out.checked += 1;
        let h = short(&t.hid).to_string();
        if let (Some((oh, of)), Some((nh, nf))) = (&t.old, &t.new) {
            if nf < of {
                out.of(
                    &t.hid,
                    format!(
                        "{h}: fence went backwards in the store: {oh} fence {of} → {nh} fence {nf} (audit seq {})",
                        t.seq
                    ),
                );
            }
            match t.kind {
                Kind::Orphan if *nf != of + 1 => out.of(&t.hid, format!(
                    "{h}: orphaned from {oh} at fence {of} to fence {nf} without bumping the fence by one (audit seq {}): {oh} is not fenced out",
                    t.seq
                )),
                Kind::Recover => {
                    if *nf != of + 1 {
                        out.of(&t.hid, format!("{h}: recovered by {nh} from the orphan of fence {of} with fence {nf} (must be +1; audit seq {})", t.seq));
                    }
                    recovers.entry((t.hid.clone(), *of)).or_default().push(nh.clone());
                }
                Kind::Steal => out.of(&t.hid, format!(
                    "{h}: ownership moved from {oh} (fence {of}) to {nh} (fence {nf}) without an orphan (audit seq {}): a second grant — a recover or claim without its compare-and-set",
                    t.seq
                )),
                Kind::Other if oh != ORPHANED => out.of(&t.hid, format!(
                    "{h}: {oh}'s fence changed in place from {of} to {nf} (audit seq {})", t.seq
                )),
                _ => {}
            }
        }
        if let Some((nh, nf)) = &t.new {
            if nh != ORPHANED {
                holders.entry((t.hid.clone(), *nf)).or_default().insert(nh.clone());
            }
        }
    }
    for ((hid, fence), hs) in &holders {
        if hs.len() > 1 {
            out.of(
                hid,
                format!(
                    "{}: fence {fence} granted to {} holders in the store: {hs:?} (split brain)",
                    short(hid),
                    hs.len()
                ),
            );
        }
    }
    for ((hid, fence), rs) in &recovers {
        if rs.len() > 1 {
            out.of(
                hid,
                format!(
                    "{}: the orphan of fence {fence} was recovered {} times, by {rs:?}: exactly one recoverer must win",
                    short(hid),
                    rs.len()
                ),
            );
        }
    }
    for hid in &cx.hids {
        for e in a.checkpoint_inserts(hid) {
            out.checked += 1;
            let seq = e.new_i("seq").unwrap_or(-1);
            let seen = a.ownership_seen(hid, e.seq);
            let bad = match &seen {
                None => Some("no ownership row (released, completed or killed)".to_string()),
                Some((h, f)) if h == ORPHANED => Some(format!("the handoff orphaned (fence {f})")),
                _ => None,
            };
            if let Some(why) = bad {
                let msg = format!(
                    "{}: checkpoint seq {seq} committed while the store showed {why} (audit seq {}): a write without a valid fence",
                    short(hid), e.seq
                );
                out.found.push(Finding {
                    msg,
                    hid: Some(hid.clone()),
                    known: all_python(cx, hid).then_some(CHECK_THEN_WRITE),
                });
                continue;
            }
            // detail: the writer's fence as its history names it
            let (Some((sh, sf)), Some(w)) = (seen, cx.facts.get(hid).and_then(|f| f.writers.get(&seq))) else {
                continue;
            };
            if w.fence >= 0 && w.fence < sf {
                let msg = format!(
                    "{}: checkpoint seq {seq} by {} with fence {} committed after the store's fence was {sf} ({sh}) (store order, audit seq {})",
                    short(hid), w.holder, w.fence, e.seq
                );
                let known = (cx.imp_of(&w.process) == "python").then_some(CHECK_THEN_WRITE);
                if known.is_some() {
                    // What follows on this handoff (a successor resuming from
                    // the state before the late write: a duplicated chunk, one
                    // checkpoint too many) is that write's doing.
                    out.taint(hid, CHECK_THEN_WRITE);
                }
                out.found.push(Finding { msg, hid: Some(hid.clone()), known });
            }
        }
    }
}

/// Every worker spawned for `hid` ran the reference (its check-then-write is documented, §13.2).
pub(super) fn all_python(cx: &Ctx<'_>, hid: &str) -> bool {
    let mut ws = cx.ix.spawns.values().filter(|s| s.role == "worker" && s.hid.as_deref() == Some(hid)).peekable();
    ws.peek().is_some() && ws.all(|s| s.imp == "python")
}

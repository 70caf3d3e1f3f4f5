//! exactly-once: each handoff's completion committed exactly once, by the
//! current fence holder.

use crate::check::ctx::{Ctx, Facts};
use crate::check::findings::Findings;
use crate::check::history::Op;
use crate::check::{opt, short, CHECK_THEN_WRITE};
use std::collections::{BTreeSet, HashMap};

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        if f.h.status == "completed" {
            out.checked += 1;
            audited(cx, hid, &mut out);
            one_handoff(cx, hid, f, &mut out);
        }
    }
    out
}

/// From the store audit: the handoff became `completed` exactly once, its
/// completed envelope was never rewritten, and the completing transaction
/// saw an ownership row held by a worker (not orphaned, not gone) — the
/// runner the envelope names.
fn audited(cx: &Ctx<'_>, hid: &str, out: &mut Findings) {
    let Some(a) = cx.audit else { return };
    let completed_at = |e: &crate::audit::Event, new: bool| {
        let r = if new { e.new.as_ref() } else { e.old.as_ref() };
        r.and_then(|r| r.pointer("/execution/completed_at")).cloned()
    };
    let mut commits = 0;
    for e in a.handoff_changes(hid) {
        if e.new_s("status") != Some("completed") {
            continue;
        }
        if e.old_s("status") == Some("completed") {
            if completed_at(e, true) != completed_at(e, false) {
                out.of(
                    hid,
                    format!(
                    "{}: its completion was committed again over the first one (audit seq {}): completed_at {} → {}",
                    short(hid), e.seq, opt(completed_at(e, false)), opt(completed_at(e, true))
                ),
                );
            }
            continue;
        }
        commits += 1;
        let runner = e.new.as_ref().and_then(|n| n.pointer("/execution/runner_id")).and_then(|v| v.as_str());
        match a.ownership_seen(hid, e.seq) {
            None => {
                out.of(hid, format!("{}: completed (audit seq {}) while it had no ownership row", short(hid), e.seq))
            }
            Some((h, f)) if h == crate::round::ORPHANED => out.of(
                hid,
                format!(
                    "{}: completed (audit seq {}) while orphaned (fence {f}): nobody held a valid fence",
                    short(hid),
                    e.seq
                ),
            ),
            Some((h, f)) if runner.is_some_and(|r| r != h) => out.of(
                hid,
                format!(
                    "{}: completed (audit seq {}) as {} while the store's holder was {h} (fence {f})",
                    short(hid),
                    e.seq,
                    opt(runner)
                ),
            ),
            Some(_) => {}
        }
    }
    if commits > 1 {
        out.of(hid, format!("{}: became completed {commits} times in the store's commit order", short(hid)));
    }
}

fn one_handoff(cx: &Ctx<'_>, hid: &str, f: &Facts<'_>, out: &mut Findings) {
    let oks: Vec<&&Op> = f.ops.iter().filter(|o| o.op == "complete" && o.ok == Some(true)).collect();
    let mut per_pid: HashMap<i64, usize> = HashMap::new();
    for o in &oks {
        *per_pid.entry(o.pid).or_default() += 1;
    }
    for (pid, n) in &per_pid {
        if *n > 1 {
            let who = oks.iter().find(|o| o.pid == *pid).map(|o| o.holder.clone()).unwrap_or_default();
            out.of(hid, format!("{}: {who} (pid {pid}) completed it {n} times", short(hid)));
        }
    }
    // A complete that began after the completion committed, or a stale one
    // answered only after it (see `late_complete`), is the protocol's
    // idempotent no-op; every other acknowledged complete is a commit.
    let (noop, commits): (Vec<&&Op>, Vec<&&Op>) = oks.iter().partition(|o| f.late_complete(o));
    if !noop.is_empty() {
        out.note(format!(
            "{}: {} late complete(s) by {} answered as the idempotent no-op",
            short(hid),
            noop.len(),
            noop.iter().map(|o| format!("{}(fence {})", o.holder, opt(o.fence))).collect::<Vec<_>>().join(", ")
        ));
    }
    let distinct: BTreeSet<(i64, String)> = commits.iter().map(|o| (o.pid, o.holder.clone())).collect();
    if distinct.len() > 1 {
        out.of(
            hid,
            format!(
                "{}: completion committed by {} processes: {}",
                short(hid),
                distinct.len(),
                distinct.iter().map(|(p, h)| format!("{h}/{p}")).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let Some(c) = &f.completer else {
        if f.hist_complete {
            out.of(hid, format!("{}: completed, but no recorded complete could have committed it", short(hid)));
        } else {
            out.note(format!("{}: completer unknown (no history)", short(hid)));
        }
        return;
    };
    if !c.acknowledged {
        out.note(format!("{}: completion committed by {} which died before recording ok", short(hid), c.holder));
    }
    let Some(fence) = c.fence else { return };
    let top = f.grants.iter().filter_map(|g| g.fence).max();
    let stale = top.is_some_and(|top| fence < top);
    if stale && cx.imp_of(&c.process) == "python" && cx.superseded_at(hid, fence).is_none_or(|(t, _)| t >= c.invoke_t) {
        out.taint(hid, CHECK_THEN_WRITE);
    }
    if let Some((t, why)) = cx.superseded_at(hid, fence) {
        if c.invoke_t > t {
            out.of(
                hid,
                format!(
                    "{}: completed by {} with fence {fence}, invoked {:.3}s after {why}",
                    short(hid),
                    c.holder,
                    c.invoke_t - t
                ),
            );
        }
    }
    if let Some(top) = top.filter(|top| fence < *top) {
        out.of(
            hid,
            format!("{}: completed by {} with fence {fence}, but fence {top} had been granted", short(hid), c.holder),
        );
    }
}

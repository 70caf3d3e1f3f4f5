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
            one_handoff(cx, hid, f, &mut out);
        }
    }
    out
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

//! rework: work redone per fault is at most one chunk.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;
use std::collections::BTreeSet;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    for (victim, hid, redone) in redone(cx) {
        out.checked += 1;
        let n = redone.len();
        if n > 1 {
            out.of(&hid, format!("{}: {victim} computed {n} chunks it never committed (next_n {redone:?}): more than one chunk redone for one fault", short(&hid)));
        }
    }
    if cx.workload.is_some() {
        out.note("from the workload service's record: every chunk served to a victim, the one it was computing when it died included".into());
    } else {
        out.note("plus at most the one chunk a victim was computing when it died, which no history can show".into());
    }
    out
}

/// For every faulted worker: the chunks it computed (it invoked their
/// checkpoint) that it did not commit itself — lost, or recomputed by a
/// successor. (victim, hid, next_n of each such chunk)
pub(crate) fn redone(cx: &Ctx<'_>) -> Vec<(String, String, Vec<u64>)> {
    if let Some(w) = &cx.workload {
        return served_not_committed(cx, w);
    }
    let mut out = Vec::new();
    for (victim, hid) in &cx.faults.rework_victims {
        let Some(by_chunk) = cx.chunk_writers(hid) else { continue };
        let computed: BTreeSet<u64> = cx
            .ix
            .ops
            .iter()
            .filter(|o| &o.process == victim && &o.hid == hid && o.op == "checkpoint")
            .filter_map(|o| o.next_n)
            .collect();
        let redone: Vec<u64> = computed
            .iter()
            .copied()
            .filter(|n| match by_chunk.get(n) {
                Some(Some(p)) => p != victim,
                Some(None) => false, // committed, writer not attributable: cannot tell
                None => true,        // never committed
            })
            .collect();
        out.push((victim.clone(), hid.clone(), redone));
    }
    out
}

/// [`redone`] from the workload service's record: the chunks served to each
/// faulted worker whose stamp is in none of the store's checkpoints — the
/// harness saw them asked for, and no commit carries them.
fn served_not_committed(cx: &Ctx<'_>, w: &crate::workload::Workload) -> Vec<(String, String, Vec<u64>)> {
    let committed: BTreeSet<&str> =
        cx.store.values().flat_map(|h| h.ckpts.iter()).filter_map(|c| c.state["stamp"].as_str()).collect();
    cx.faults
        .rework_victims
        .iter()
        .map(|(victim, hid)| {
            let lost: Vec<u64> =
                w.served_to(victim, hid).filter(|s| !committed.contains(s.stamp.as_str())).map(|s| s.end).collect();
            (victim.clone(), hid.clone(), lost)
        })
        .collect()
}

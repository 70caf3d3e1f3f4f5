//! served-work: every committed checkpoint carries the stamp of the chunk
//! the harness's workload service served for exactly that chunk of that
//! handoff, no stamp is committed twice, and — along the store's commit
//! order (audit) — the chunk was asked for by the holder, under the fence,
//! that the store had when the checkpoint committed. All from the
//! harness's own records: the service's and the audit's.

use crate::check::ctx::{census_task, Ctx};
use crate::check::findings::{Finding, Findings};
use crate::check::{short, CHECK_THEN_WRITE};
use std::collections::HashMap;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let Some(w) = cx.workload.as_ref() else { return out };
    let mut used: HashMap<&str, (String, i64)> = HashMap::new();
    for hid in &cx.hids {
        let Some(h) = cx.store.get(hid) else { continue };
        let Some((lo, _, _)) = census_task(&h.env) else { continue };
        // a standby's first rows were ingested from the dead host's log:
        // served by that host's service, checked there
        let skip = cx.ingested(hid).max(0) as usize;
        let commits: HashMap<i64, i64> = match cx.audit {
            Some(a) => a.checkpoint_inserts(hid).filter_map(|e| Some((e.new_i("seq")?, e.seq))).collect(),
            None => HashMap::new(),
        };
        let mut prev = lo;
        for (k, c) in h.ckpts.iter().enumerate() {
            let next = c.state["next_n"].as_u64();
            let start = prev;
            prev = next.unwrap_or(prev);
            if k < skip {
                continue;
            }
            out.checked += 1;
            let hs = short(hid);
            let Some(stamp) = c.state["stamp"].as_str() else {
                out.of(hid, format!(
                    "{hs}: checkpoint seq {} carries no stamp: its chunk was not served by the harness's workload service (computed elsewhere, or the stamp dropped)",
                    c.seq
                ));
                continue;
            };
            let Some(s) = w.by_stamp(stamp) else {
                out.of(
                    hid,
                    format!(
                        "{hs}: checkpoint seq {} carries stamp {stamp:?}, which the workload service never issued",
                        c.seq
                    ),
                );
                continue;
            };
            if s.hid != *hid || s.n != start || Some(s.end) != next {
                out.of(hid, format!(
                    "{hs}: checkpoint seq {} covers [{start}, {}) but carries the stamp served for [{}, {}) of {}: its result is not the chunk the harness served",
                    c.seq, next.map_or("?".into(), |n| n.to_string()), s.n, s.end, short(&s.hid)
                ));
            }
            if let Some((h0, s0)) = used.insert(stamp, (hid.clone(), c.seq)) {
                out.of(
                    hid,
                    format!(
                        "{hs}: checkpoint seq {} reuses the stamp of {} seq {s0}: one served chunk committed twice",
                        c.seq,
                        short(&h0)
                    ),
                );
            }
            // who committed it, by the store's own order
            let Some(seen) = commits.get(&c.seq).and_then(|&at| cx.audit.and_then(|a| a.ownership_seen(hid, at)))
            else {
                continue;
            };
            if (s.holder.as_str(), s.fence) != (seen.0.as_str(), seen.1) {
                let msg = format!(
                    "{hs}: checkpoint seq {} holds the chunk served to {} under fence {} but committed when the store's owner was {} at fence {}: work computed under a superseded or foreign fence was committed",
                    c.seq, s.holder, s.fence, seen.0, seen.1
                );
                let known = (cx.imp_of(&s.holder) == "python").then_some(CHECK_THEN_WRITE);
                if known.is_some() {
                    out.taint(hid, CHECK_THEN_WRITE);
                }
                out.found.push(Finding { msg, hid: Some(hid.clone()), known });
            }
        }
    }
    let committed = used.len();
    out.note(format!(
        "workload service: {} chunk(s) served, {committed} committed, {} served but never committed (rework and work lost with its worker), {} request(s) refused",
        w.served.len(),
        w.served.len().saturating_sub(committed),
        w.refused.len()
    ));
    out
}

//! no-stuck-after-db-restart: once a crashed database is back, every
//! handoff still reaches a terminal state (completed, or parked in the DLQ)
//! within the round's drain; nothing is left held by a worker that never
//! recovered from its broken connection. Rounds without a `db-crash` check
//! nothing.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let crashes: Vec<(f64, Option<u64>)> = cx
        .ix
        .faults
        .iter()
        .filter(|f| matches!(f.s("kind"), Some("db-crash" | "db-failover")))
        .map(|f| (f.t(), f.u("fault_id")))
        .collect();
    if crashes.is_empty() {
        return out;
    }
    let t0 = cx.meta["t0"].as_f64().unwrap_or(0.0);
    let mut last_up: Option<f64> = None;
    for (t, id) in &crashes {
        let up = cx.ix.observes.iter().find(|o| o.s("what") == Some("db-up") && o.u("fault_id") == *id).map(|o| o.t());
        match up {
            Some(u) => {
                last_up = Some(last_up.map_or(u, |l: f64| l.max(u)));
                // how long until anyone committed again (a figure, not a rule)
                if let Some(first) = cx
                    .ix
                    .ops
                    .iter()
                    .filter(|o| o.ok == Some(true) && o.out_t.is_some_and(|ot| ot >= u))
                    .filter_map(|o| o.out_t)
                    .reduce(f64::min)
                {
                    out.note(format!(
                        "crash at +{:.3}s, back at +{:.3}s ({:.2}s down), first acknowledged operation {:.0} ms after",
                        t - t0,
                        u - t0,
                        u - t,
                        (first - u) * 1e3
                    ));
                }
            }
            None => {
                out.plain(format!("the database crashed at +{:.3}s and the history never saw it come back", t - t0))
            }
        }
    }
    let Some(up) = last_up else { return out };
    for hid in &cx.hids {
        out.checked += 1;
        let Some(h) = cx.store.get(hid) else {
            out.of(hid, format!("{}: dispatched but not in the store after the database restart", short(hid)));
            continue;
        };
        if h.status != "completed" && h.status != "failed" {
            let (holder, fence) = h.own.as_ref().map_or((None, None), |(hh, f)| (Some(hh.as_str()), Some(*f)));
            out.of(hid, format!(
                "{}: still {} (holder {}, fence {}) at the end of the round, the database having been back since +{:.3}s",
                short(hid), h.status, opt(holder), opt(fence), up - t0
            ));
        }
    }
    out
}

//! no-lost-commits-across-db-crash: every checkpoint and completion a
//! worker saw return Ok before a database crash is in the store at the end
//! (PostgreSQL promises durability of a commit it acknowledged; fsync and
//! synchronous_commit stay on). Rounds without a `db-crash` check nothing.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    super::lost_failover::check(cx, &mut out);
    let crashes: Vec<f64> = cx.ix.faults.iter().filter(|f| f.s("kind") == Some("db-crash")).map(|f| f.t()).collect();
    let Some(last) = crashes.iter().copied().reduce(f64::max) else { return out };
    let t0 = cx.meta["t0"].as_f64().unwrap_or(0.0);
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        for o in f.ops.iter().filter(|o| o.ok == Some(true) && o.out_t.is_some_and(|t| t < last)) {
            let acked = o.out_t.unwrap_or(o.invoke_t);
            // the first crash after the acknowledgement
            let crash = crashes.iter().copied().filter(|c| *c > acked).reduce(f64::min).unwrap_or(last);
            match o.op.as_str() {
                "checkpoint" => {
                    out.checked += 1;
                    let kept = f.h.holds_checkpoint(o.seq, o.next_n);
                    if !kept {
                        out.of(hid, format!(
                            "{}: {} was told checkpoint seq {} (next_n {}) committed at +{:.3}s; the database crashed at +{:.3}s and the store does not have it",
                            short(hid), o.holder, opt(o.seq), opt(o.next_n), acked - t0, crash - t0
                        ));
                    }
                }
                "complete" => {
                    out.checked += 1;
                    if f.h.status != "completed" {
                        out.of(hid, format!(
                            "{}: {} was told its completion committed at +{:.3}s; the database crashed at +{:.3}s and the handoff is {} in the store",
                            short(hid), o.holder, acked - t0, crash - t0, f.h.status
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    let unknown = cx.ix.ops.iter().filter(|o| o.indeterminate).count();
    if unknown > 0 {
        out.note(format!(
            "{unknown} operation(s) failed during a database fault and count as indeterminate (may or may not have committed)"
        ));
    }
    out.note(format!(
        "{} database crash(es); acknowledgements before each were checked against the final store",
        crashes.len()
    ));
    out
}

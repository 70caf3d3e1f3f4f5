//! durable-acks: a crash of the store's host that loses what was not
//! fsynced (`lose-unsynced`, `--lose-unsynced`) must not lose what the
//! store acknowledged. The harness judges it from its own records: right
//! after each crash it read the store itself and compared it with the
//! chunks its workload service had served since the previous crash (a
//! worker asks for chunk `[n, …)` only once its checkpoint at `next_n = n`
//! returned, or after it resumed from one); each handoff whose store then
//! held less, and was not terminal, is in the observation's `lost_acks`.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let crashes: Vec<_> = cx.ix.observes.iter().filter(|o| o.s("what") == Some("lose-unsynced")).collect();
    let t0 = cx.meta["t0"].as_f64().unwrap_or(0.0);
    let mut failed = 0;
    for c in &crashes {
        if let Some(e) = c.s("error") {
            failed += 1;
            out.note(format!("the crash at +{:.3}s was not judged: {e}", c.t() - t0));
            continue;
        }
        out.checked += 1 + c.v["acked"].as_object().map_or(0, |m| m.len() as u64);
        for l in c.v["lost_acks"].as_array().into_iter().flatten() {
            let hid = l["hid"].as_str().unwrap_or("?");
            out.of(hid, format!(
                "{}: the harness served chunk {} before the store's host crashed at +{:.3}s (its checkpoint at next_n {} was acknowledged); right after the crash the store's last checkpoint is at next_n {} ({}): an acknowledged write was not durable",
                short(hid), l["acked_next_n"], c.t() - t0, l["acked_next_n"], l["store_next_n"],
                l["status"].as_str().unwrap_or("?")
            ));
        }
    }
    out.note(format!(
        "{} crash(es) of the store's host ({} not judged); handoffs with acknowledgements before each were compared with the store read right after it",
        crashes.len(),
        failed
    ));
    out
}

//! detection: every worker that died holding a lease was orphaned (or had
//! completed). The fault walk itself is in `check/faults.rs`, which also
//! measures the detection latencies.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let lat = &cx.faults.latencies;
    // a victim whose lease was orphaned (or its work completed) before the
    // fault was checked too: under load a false orphan often comes first,
    // and leaving it out made a round with one such fault UNCHECKED
    out.checked =
        (lat.worker_kill.n + lat.pause.n + lat.failpoint.n + lat.undetected.len()) as u64 + lat.resolved_before;
    for u in &lat.undetected {
        // a SIGSTOPped worker that was woken before its lease was taken may legitimately keep it
        out.plain(format!("{u}: never orphaned and did not complete"));
    }
    out
}

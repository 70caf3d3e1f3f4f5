//! sync-ack: in synchronous TCP mode a checkpoint returns only once the
//! peer acknowledged it, so every checkpoint a worker went on from (it
//! invoked its next checkpoint or its completion) must be in the peer's
//! log. A checkpoint whose worker was cut (killed, or stuck behind a
//! partition until it died) before it went on is indeterminate: it may or
//! may not have reached the peer, and is counted, not judged.

use super::peer_log::{self, Line};
use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::history::Op;
use crate::check::short;
use std::collections::HashSet;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    if !peer_log::sync_tcp(cx) {
        out.note("not a synchronous TCP round: nothing is acknowledged by a peer".into());
        return out;
    }
    let mut indeterminate = 0u64;
    let mut in_partition = 0u64;
    for hid in &cx.hids {
        let ops: Vec<&Op> = cx.ix.ops.iter().filter(|o| &o.hid == hid).collect();
        let mut acked: Vec<(i64, &str)> = Vec::new();
        for (i, o) in ops.iter().enumerate() {
            if o.op != "checkpoint" || o.ok != Some(true) || cx.imp_of(&o.process) == "python" {
                continue;
            }
            let Some(seq) = o.seq else { continue };
            // the same process went on: ship_checkpoint returned, the peer acked
            let went_on =
                ops[i + 1..].iter().any(|n| n.process == o.process && (n.op == "checkpoint" || n.op == "complete"));
            if went_on {
                acked.push((seq, o.process.as_str()));
            } else {
                indeterminate += 1;
                if partitioned_at(cx, o.out_t.unwrap_or(o.invoke_t)) {
                    in_partition += 1;
                }
            }
        }
        if acked.is_empty() {
            continue;
        }
        let lines: Vec<Line> = match peer_log::read(cx, hid) {
            Ok(Some(l)) => l,
            Ok(None) => Vec::new(),
            Err(e) => {
                out.of(hid, format!("{}: peer log unreadable: {}", short(hid), e.chain()));
                continue;
            }
        };
        let have: HashSet<i64> = lines.iter().map(|l| l.seq).collect();
        for (seq, process) in acked {
            out.checked += 1;
            if !have.contains(&seq) {
                out.of(
                    hid,
                    format!(
                        "{}: seq {seq} was acknowledged to {process} in synchronous mode (it went on) but is not in the peer's log",
                        short(hid)
                    ),
                );
            }
        }
    }
    if indeterminate > 0 {
        out.note(format!(
            "{indeterminate} committed checkpoint(s) indeterminate (their worker was cut before the ack; {in_partition} during a partition)"
        ));
    }
    out
}

/// Was a partition standing at time `t`?
fn partitioned_at(cx: &Ctx<'_>, t: f64) -> bool {
    let mut start: Option<f64> = None;
    for e in &cx.ix.nemesis {
        match e.s("phase") {
            Some("start") => start = Some(e.t()),
            Some("heal") => {
                if start.is_some_and(|s| s <= t && t <= e.t()) {
                    return true;
                }
                start = None;
            }
            _ => {}
        }
    }
    start.is_some_and(|s| s <= t)
}

//! async-lag: with `--ship tcp-async`, a worker goes on to its next chunk
//! only while at most `--ship-max-lag` of the checkpoints committed so far
//! are unacknowledged by the peer, and completes only once all are
//! (its shipper flushes first). "Acknowledged" is what the link proxy saw
//! the server ack — before the shipper could have read it, so the check
//! never counts an ack the worker had not seen.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;
use std::collections::BTreeMap;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    if cx.cfg.ship != crate::config::Ship::TcpAsync {
        out.note("not a tcp-async round: no lag bound".into());
        return out;
    }
    let Some(max_lag) = cx.cfg.ship_max_lag else {
        out.note("the round recorded no --ship-max-lag".into());
        return out;
    };
    let Some(acks) = &cx.acks else {
        out.note("no proxy record (proxy.jsonl): a round from before the link proxy".into());
        return out;
    };
    for (hid, f) in &cx.facts {
        // seq → first time the peer was seen to hold it
        let mut acked: BTreeMap<i64, f64> = BTreeMap::new();
        for a in acks.iter().filter(|a| &a.hid == hid && a.event != "sent") {
            let range = if a.event == "hello-ack" { 0..=a.seq } else { a.seq..=a.seq };
            for s in range {
                let t = acked.entry(s).or_insert(a.t);
                *t = t.min(a.t);
            }
        }
        let committed: Vec<i64> = f.h.ckpts.iter().map(|c| c.seq).collect();
        for (i, o) in f.ops.iter().enumerate() {
            let (Some(k), Some(done_t)) = (o.seq, o.out_t) else { continue };
            if o.op != "checkpoint" || o.ok != Some(true) || cx.clock_faked(&o.process) {
                continue;
            }
            // the same worker's next step: it shipped seq k before taking it
            let Some(next) = f.ops[i + 1..].iter().find(|n| {
                n.process == o.process && n.invoke_t >= done_t && (n.op == "checkpoint" || n.op == "complete")
            }) else {
                continue;
            };
            let t = next.invoke_t;
            let bound = if next.op == "complete" { 0 } else { max_lag };
            let unacked: Vec<i64> =
                committed.iter().copied().filter(|s| *s <= k && acked.get(s).is_none_or(|at| *at > t)).collect();
            out.checked += 1;
            if unacked.len() as u64 > bound {
                out.of(
                    hid,
                    format!(
                        "{}: {} went on to {} after seq {k} with {} checkpoint(s) unacknowledged by the peer (bound {bound}): seqs {:?}",
                        short(hid),
                        o.process,
                        next.op,
                        unacked.len(),
                        &unacked[..unacked.len().min(8)]
                    ),
                );
            }
        }
    }
    out
}

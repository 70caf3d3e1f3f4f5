//! converge: once faults stop and every partition healed, the peer's log
//! of each handoff is the store's checkpoints in order — seq 0, 1, … with
//! no gap and no duplicate, each line verifying and carrying the store's
//! hash. Only the DLQ case the transport invariant also excuses may lack
//! the last seq (its writer died before shipping and no successor came).

use super::peer_log;
use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    if !cx.tcp {
        out.note("not a TCP round: no peer log to converge".into());
        return out;
    }
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        let store = &f.h.ckpts;
        let lines = match peer_log::read(cx, hid) {
            Ok(Some(l)) => l,
            Ok(None) if store.is_empty() => continue,
            Ok(None) => Vec::new(),
            Err(e) => {
                out.of(hid, format!("{}: peer log unreadable: {}", short(hid), e.chain()));
                continue;
            }
        };
        if store.iter().any(|c| writer_is_python(cx, f, c.seq)) {
            out.note(format!(
                "{}: written by the reference too (no catch-up); left to the transport invariant",
                short(hid)
            ));
            continue;
        }
        out.checked += 1;
        let mut lines = lines;
        // the standby continued this log after the host died (checked there)
        let standby_from = cx.standby_ingested(hid);
        if let Some(n) = standby_from {
            lines.truncate(n.max(0) as usize);
        } else if cx.moved_to_standby(hid) && lines.len() > store.len() {
            lines.truncate(store.len());
        }
        let mut bad = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let want = i as i64;
            if l.seq != want {
                let what = if lines[..i].iter().any(|p| p.seq == l.seq) { "duplicate" } else { "out of order / gap" };
                bad.push(format!("line {} is seq {} where seq {want} belongs ({what})", i + 1, l.seq));
                break;
            }
            if !l.verifies {
                bad.push(format!("seq {} does not verify (state_hash is not its state's hash)", l.seq));
            }
            match store.iter().find(|c| c.seq == l.seq) {
                None => bad.push(format!("seq {} is not in the store", l.seq)),
                Some(c) if l.hash.as_deref() != Some(c.state_hash.as_str()) => {
                    bad.push(format!("seq {} has a different hash from the store's", l.seq))
                }
                Some(_) => {}
            }
        }
        let (n_log, n_store) = (lines.len(), store.len());
        if bad.is_empty() && n_log < n_store {
            if standby_from.is_some() {
                out.note(format!(
                    "{}: seqs {n_log}..{} were committed when its host died, before they reached the peer; the standby redid them (checked by failover)",
                    short(hid),
                    n_store - 1
                ));
            } else if f.h.status == "failed" && n_log + 1 == n_store {
                out.note(format!("{}: DLQ handoff's last seq never shipped (its writer died first)", short(hid)));
            } else {
                bad.push(format!("the peer has {n_log} of the store's {n_store} checkpoints"));
            }
        }
        for b in bad {
            out.of(hid, format!("{}: peer log did not converge to the store: {b}", short(hid)));
        }
    }
    out
}

fn writer_is_python(cx: &Ctx<'_>, f: &crate::check::ctx::Facts<'_>, seq: i64) -> bool {
    f.writers.get(&seq).is_some_and(|w| cx.imp_of(&w.process) == "python")
}

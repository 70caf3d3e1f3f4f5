//! peer-acks: every checkpoint the transport server acknowledged (as the
//! link proxy saw it forward the ack) is in the peer's log, intact — after
//! link faults, server kills and a full disk alike. A ship whose reply was
//! cut by a fault is indeterminate (it may or may not have landed) and is
//! not required; a torn line is allowed only if nobody was told it landed.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;
use dhp_oracle as oracle;
use std::collections::{BTreeMap, HashMap};

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    if !cx.tcp {
        out.note("not a TCP round: no acknowledgements to check".into());
        return out;
    }
    let Some(acks) = &cx.acks else {
        out.note("no proxy record (proxy.jsonl): a round from before the link proxy".into());
        return out;
    };
    for hid in &cx.hids {
        // seq → when it was first acknowledged (a hello's ack_seq covers its prefix)
        let mut acked: BTreeMap<i64, f64> = BTreeMap::new();
        for a in acks.iter().filter(|a| &a.hid == hid && a.event != "sent") {
            let range = if a.event == "hello-ack" { 0..=a.seq } else { a.seq..=a.seq };
            for s in range {
                let t = acked.entry(s).or_insert(a.t);
                *t = t.min(a.t);
            }
        }
        if acked.is_empty() {
            continue;
        }
        let path = cx.paths.peer.join(format!("{hid}.log"));
        let bytes = std::fs::read(&path).unwrap_or_default();
        let mut intact: HashMap<i64, String> = HashMap::new();
        let mut torn = 0;
        let mut env_seen = false;
        for line in oracle::log::parse(&bytes, oracle::log::DEFAULT_MAX_LINE_BYTES) {
            match line {
                oracle::log::Line::Skipped(_) => torn += 1,
                oracle::log::Line::Envelope(_) => env_seen = true,
                oracle::log::Line::Checkpoint(c) if env_seen => {
                    let hash = oracle::state_hash(&c.state).unwrap_or_default();
                    if c.state_hash.as_deref() == Some(hash.as_str()) {
                        intact.entry(c.seq as i64).or_insert(hash);
                    }
                }
                oracle::log::Line::Checkpoint(_) => {}
            }
        }
        if torn > 0 {
            out.note(format!("{}: {torn} torn or unreadable line(s) in the peer log", short(hid)));
        }
        let store: HashMap<i64, &str> = cx
            .store
            .get(hid)
            .map(|h| h.ckpts.iter().map(|c| (c.seq, c.state_hash.as_str())).collect())
            .unwrap_or_default();
        for (seq, t) in &acked {
            out.checked += 1;
            match intact.get(seq) {
                None => out.of(
                    hid,
                    format!(
                        "{}: seq {seq} was acknowledged by the transport server ({:.3}s into the round) but is not intact in the peer log",
                        short(hid),
                        t - cx.meta["t0"].as_f64().unwrap_or(*t)
                    ),
                ),
                Some(h) if store.get(seq).is_some_and(|s| *s != h) => out.of(
                    hid,
                    format!("{}: acknowledged seq {seq} in the peer log differs from the store's", short(hid)),
                ),
                Some(_) => {}
            }
        }
    }
    let cut = indeterminate(acks);
    if cut > 0 {
        out.note(format!(
            "{cut} shipped checkpoint(s) got no ack through the proxy (refused, connection cut or server gone): indeterminate, not required"
        ));
    }
    out
}

/// Checkpoint frames forwarded to the server that got no ack back on their connection.
pub(crate) fn indeterminate(acks: &[crate::proxy::Ack]) -> usize {
    use std::collections::HashSet;
    let key = |a: &crate::proxy::Ack| (a.conn, a.hid.clone(), a.seq);
    let acked: HashSet<_> = acks.iter().filter(|a| a.event == "ack").map(key).collect();
    let sent: HashSet<_> = acks.iter().filter(|a| a.event == "sent").map(key).collect();
    sent.difference(&acked).count()
}

//! failover: a standby took over a dead host's handoffs from the log the
//! dead host had shipped to its peer. For each: what the standby ingested
//! is the dead host's store (a prefix, same hashes); in synchronous mode at
//! most one committed checkpoint never reached the peer, so the work
//! redone for the host death is at most one chunk; the standby's store
//! keeps the ingested checkpoints and carried the handoff on. Checked in
//! the standby's round directory (`round.json` names the dead host's).

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::load;
use crate::check::short;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let sb = &cx.meta["standby_of"];
    let Some(rel) = sb["dir"].as_str() else {
        out.note("no host died in this round directory".into());
        return out;
    };
    let dead_dir = cx.paths.dir.join(rel);
    let dead = match load::load_round_store(&dead_dir.join("store")) {
        Ok(s) => s,
        Err(e) => {
            out.plain(format!("the dead host's store ({}) is unreadable: {e:#}", dead_dir.display()));
            return out;
        }
    };
    let sync = cx.cfg.ship == crate::config::Ship::Tcp;
    for hid in &cx.hids {
        out.checked += 1;
        let n = sb["ingested"][hid.as_str()].as_u64().unwrap_or(0) as usize;
        let Some(d) = dead.get(hid) else {
            out.of(hid, format!("{}: not in the dead host's store", short(hid)));
            continue;
        };
        let Some(mine) = cx.store.get(hid) else {
            out.of(hid, format!("{}: ingested but not in the standby's store", short(hid)));
            continue;
        };
        for i in 0..n {
            let (a, b) = (d.ckpts.get(i), mine.ckpts.get(i));
            match (a, b) {
                (Some(a), Some(b)) if a.seq == b.seq && a.state_hash == b.state_hash => {}
                (None, _) => {
                    out.of(
                        hid,
                        format!("{}: standby ingested seq {i}, which the dead host never committed", short(hid)),
                    );
                    break;
                }
                _ => {
                    out.of(hid, format!("{}: standby's seq {i} differs from the dead host's", short(hid)));
                    break;
                }
            }
        }
        let lost = d.ckpts.len().saturating_sub(n);
        if sync && lost > 1 {
            out.of(
                hid,
                format!(
                    "{}: {lost} checkpoints committed on the dead host never reached its peer: {lost} chunks redone after the host death (limit 1 in synchronous mode)",
                    short(hid)
                ),
            );
        } else if lost > 0 {
            out.note(format!("{}: {lost} committed chunk(s) redone by the standby", short(hid)));
        }
        if mine.ckpts.len() < n {
            out.of(hid, format!("{}: the standby's store lost ingested checkpoints", short(hid)));
        }
    }
    for h in cx.meta["standby_of"]["lost"].as_array().into_iter().flatten().filter_map(|h| h.as_str()) {
        out.note(format!("{}: never shipped (its host died before a worker claimed it): lost with the host", short(h)));
    }
    out
}

//! transport: the peer's transport log agrees with the store (identity,
//! hashes, every committed seq present). With TCP shipping both the peer's
//! log and the worker host's local buffer are checked.

use crate::check::ctx::{Ctx, Facts, Writer};
use crate::check::findings::Findings;
use crate::check::history::Op;
use crate::check::load::Ckpt;
use crate::check::{short, NO_CATCH_UP};
use dhp_oracle as oracle;
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        out.checked += 1;
        let dirs: Vec<(&Path, &str)> = if cx.tcp {
            vec![(&cx.paths.peer, "peer"), (&cx.paths.transport, "local buffer")]
        } else {
            vec![(&cx.paths.transport, "transport")]
        };
        for (d, label) in dirs {
            one_log(cx, hid, f, d, label, &mut out);
        }
    }
    out
}

fn one_log(cx: &Ctx<'_>, hid: &str, f: &Facts<'_>, dir: &Path, label: &str, out: &mut Findings) {
    let h = f.h;
    let path = dir.join(format!("{hid}.log"));
    if !path.exists() {
        if !h.ckpts.is_empty() {
            out.of(hid, format!("{}: [{label}] {} checkpoints committed, no transport log", short(hid), h.ckpts.len()));
        }
        return;
    }
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            out.of(hid, format!("{}: [{label}] transport log unreadable: {e}", short(hid)));
            return;
        }
    };
    // Verified with the oracle (written from the spec, not dhp-core's reader and hashes).
    let by_seq: HashMap<i64, &Ckpt> = h.ckpts.iter().map(|c| (c.seq, c)).collect();
    let mut have: HashSet<i64> = HashSet::new();
    let mut env_seen = false;
    let mut skipped = 0;
    let lines = oracle::log::parse(&bytes, oracle::log::DEFAULT_MAX_LINE_BYTES);
    for line in &lines {
        match line {
            oracle::log::Line::Skipped(_) => skipped += 1,
            oracle::log::Line::Envelope(e) if !env_seen => {
                env_seen = true;
                if e["handoff_id"].as_str() != Some(hid) || !oracle::id_verifies(e) {
                    out.of(
                        hid,
                        format!("{}: [{label}] transport envelope does not verify as this handoff", short(hid)),
                    );
                }
            }
            oracle::log::Line::Envelope(_) => {}
            oracle::log::Line::Checkpoint(c) => {
                let seq = c.seq as i64;
                let hash = oracle::state_hash(&c.state).unwrap_or_default();
                if c.state_hash.as_deref() != Some(hash.as_str()) {
                    out.of(
                        hid,
                        format!("{}: [{label}] transport seq {seq}: state_hash does not match its state", short(hid)),
                    );
                }
                match by_seq.get(&seq) {
                    // shipped by the standby after this host died (checked there)
                    None if cx.moved_to_standby(hid) => {}
                    None => out.of(
                        hid,
                        format!(
                            "{}: [{label}] transport has seq {seq}, the store does not (phantom checkpoint)",
                            short(hid)
                        ),
                    ),
                    // this host committed it but had not shipped it when it died: the
                    // standby ingested the seqs below and redid this one (checked there)
                    Some(c) if c.state_hash != hash && label != "local buffer" && redone_by_standby(cx, hid, seq) => {
                        out.note(format!(
                            "{}: [{label}] seq {seq} is the standby's redo of a chunk this host committed but never shipped (checked in the standby's round)",
                            short(hid)
                        ))
                    }
                    Some(c) if c.state_hash != hash => out.of(
                        hid,
                        format!("{}: [{label}] transport seq {seq} differs from the store's seq {seq}", short(hid)),
                    ),
                    Some(_) => {}
                }
                have.insert(seq);
            }
        }
    }
    if !env_seen {
        out.of(hid, format!("{}: [{label}] transport log has no envelope line", short(hid)));
    }
    if skipped > 0 {
        out.note(format!("{}: [{label}] {skipped} unreadable transport line(s) skipped", short(hid)));
    }
    // completeness
    // a standby's ingested seqs came from the peer's log: not in its own buffer
    let from_peer = if label == "local buffer" { cx.ingested(hid) } else { 0 };
    let missing: Vec<i64> = h.ckpts.iter().map(|c| c.seq).filter(|s| !have.contains(s) && *s >= from_peer).collect();
    let top = h.ckpts.last().map(|c| c.seq);
    for s in missing {
        let writer = f.writers.get(&s);
        let imp = writer.map(|w| cx.imp_of(&w.process)).unwrap_or_else(|| "unknown".into());
        if imp == "python" {
            out.note(format!(
                "{}: seq {s} never reached the transport log: written by the reference worker {} (known weakness, docs/PROTOCOL.md §13.9: commit, then ship, no catch-up on recovery)",
                short(hid),
                writer.map(|w| w.holder.as_str()).unwrap_or("?")
            ));
        } else if cx.moved_to_standby(hid) && Some(s) == top {
            out.note(format!("{}: [{label}] seq {s} was committed when its host died, before it was shipped; the standby redid that chunk (checked by failover)", short(hid)));
        } else if h.status == "failed" && Some(s) == top {
            out.note(format!("{}: [{label}] DLQ handoff's last seq {s} was committed but its writer died before shipping; no successor will catch up", short(hid)));
        } else {
            let msg = format!(
                "{}: [{label}] seq {s} (status {}) is in the store but not in the transport log (written by {})",
                short(hid),
                h.status,
                writer.map(|w| w.holder.as_str()).unwrap_or("an unattributed writer")
            );
            match writer.and_then(|w| reference_successor_without_catch_up(cx, hid, w)) {
                Some(by) => out.known(format!("{msg}; the successor {by} never shipped it"), NO_CATCH_UP),
                None => out.of(hid, msg),
            }
        }
    }
    // What an ingest of this log would refuse beyond the hashes (one
    // handoff per log, the hid/prev binding), checked from the spec.
    for fault in super::transport_links::faults(&lines, hid) {
        out.of(hid, format!("{}: [{label}] the transport log would not ingest: {fault}", short(hid)));
    }
}

/// The peer log's line for `seq` was written by the standby that took
/// `hid` over when this round's host died: the standby ingested fewer.
pub(super) fn redone_by_standby(cx: &Ctx<'_>, hid: &str, seq: i64) -> bool {
    cx.standby_ingested(hid).is_some_and(|n| seq >= n)
}

/// A seq our worker committed but died before shipping is re-shipped by
/// the next holder that writes, if it is builtin: its catch-up ships every
/// row above the highest seq the log holds. A reference successor that
/// writes first ships its own later seqs without catching up, and from then
/// on the gap lies below the log's top, where no catch-up fills it: the gap
/// is the reference's. Returns that reference successor, or None when the
/// first successor to write was builtin (and so should have filled it).
fn reference_successor_without_catch_up(cx: &Ctx<'_>, hid: &str, w: &Writer) -> Option<String> {
    let mut successors: Vec<&Op> = cx
        .grants(hid)
        .into_iter()
        .filter(|g| g.process != w.process && g.out_t.unwrap_or(g.invoke_t) > w.invoke_t)
        .collect();
    successors.sort_by(|a, b| a.invoke_t.total_cmp(&b.invoke_t));
    let wrote = |g: &Op| {
        cx.ix.ops.iter().any(|o| {
            o.process == g.process && o.hid == hid && (o.op == "checkpoint" || o.op == "complete") && o.ok == Some(true)
        })
    };
    let first = successors.into_iter().find(|g| wrote(g))?;
    (cx.imp_of(&first.process) == "python").then(|| first.holder.clone())
}

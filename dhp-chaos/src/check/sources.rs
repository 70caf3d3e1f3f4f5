//! Which sources each invariant's verdict rests on, which a round has, and
//! the verdict's status: `held`, `violated`, `unchecked` or
//! `not-exercised`. An invariant that lacks a source it needs, or checked
//! nothing although the harness's own records say there was something to
//! check, is `unchecked` — never held.

use super::ctx::Ctx;
use super::invariants::Invariant;
use super::report::Verdict;
use std::collections::BTreeSet;

/// Where a verdict's facts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The harness's own record of processes: spawns, signals, stops, wake-ups, exits, and the store monitor.
    Processes,
    /// The store at the end of the round, read by the checker.
    Store,
    /// The store's commit order, captured by the harness's triggers (`crate::audit`).
    StoreAudit,
    /// The link proxy's record of frames and acks (`proxy.jsonl`).
    Wire,
    /// The transport logs (the peer's, and the workers' file or buffer logs).
    PeerLog,
    /// The history the processes under test write about themselves (optional detail).
    History,
    /// The harness's workload service's record of every chunk it served (`workload.jsonl`).
    Workload,
}

impl Source {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Source::Processes => "processes",
            Source::Store => "store",
            Source::StoreAudit => "store-audit",
            Source::Wire => "wire",
            Source::PeerLog => "peer-log",
            Source::History => "history",
            Source::Workload => "workload",
        }
    }
}

use Source::*;

/// The sources an invariant needs (all of them, or it is unchecked), and
/// those it uses for detail when they are there.
pub fn needs(i: Invariant) -> (&'static [Source], &'static [Source]) {
    let d = i.descriptor();
    (d.needs, d.detail)
}

/// [`needs`] in a round that has `have`: with the workload service's
/// record, an invariant's `with_workload` sources where it declares them
/// (`rework` rests on the record, which sees the chunk a victim was
/// computing when it died, which no history can), else its usual ones.
pub fn needs_in(i: Invariant, have: &BTreeSet<Source>) -> (&'static [Source], &'static [Source]) {
    match i.descriptor().with_workload {
        Some(with) if have.contains(&Workload) => with,
        _ => needs(i),
    }
}

/// The sources this round has.
pub(crate) fn available(cx: &Ctx<'_>) -> BTreeSet<Source> {
    let mut s = BTreeSet::from([Store]);
    if !cx.ix.spawns.is_empty() {
        s.insert(Processes);
    }
    if cx.audit.is_some() {
        s.insert(StoreAudit);
    }
    if cx.acks.is_some() {
        s.insert(Wire);
    }
    let nonempty = |d: &std::path::Path| std::fs::read_dir(d).is_ok_and(|mut r| r.next().is_some());
    if nonempty(&cx.paths.transport) || nonempty(&cx.paths.peer) {
        s.insert(PeerLog);
    }
    if cx.history_on && !cx.ix.processes_with_history.is_empty() {
        s.insert(History);
    }
    if cx.workload.is_some() {
        s.insert(Workload);
    }
    s
}

/// Why the round gave `i` something to check, from the harness's own
/// records and the store (never the history); `None`: nothing was expected.
pub(crate) fn expected(i: Invariant, cx: &Ctx<'_>) -> Option<String> {
    let ckpts: usize = cx.store.values().map(|h| h.ckpts.len()).sum();
    let completed = cx.store.values().filter(|h| h.status == "completed").count();
    let faults = |kind: &str| cx.ix.faults.iter().filter(|f| f.s("kind") == Some(kind)).count();
    let ship = cx.cfg.ship;
    use crate::config::Ship;
    // a host death's victims are checked by the standby (failover), not here
    let worker_faults =
        cx.ix.faults.iter().filter(|f| f.i("lease_fence").is_some() && f.s("kind") != Some("host-death")).count();
    // with an audit: the handoffs whose status it saw change; without: every dispatched one
    let status_changes = match cx.audit {
        Some(a) => cx
            .hids
            .iter()
            .filter(|h| {
                a.handoff_changes(h).any(|e| e.new_s("status").is_some() && e.new_s("status") != e.old_s("status"))
            })
            .count(),
        None => cx.hids.len(),
    };
    let some = |n: usize, what: &str| (n > 0).then(|| format!("{n} {what}"));
    match i {
        Invariant::Outcome => some(cx.hids.len(), "handoff(s) dispatched"),
        Invariant::Model => some(cx.audit.map_or(cx.hids.len(), |a| a.events.len()), "audited change(s) to judge"),
        Invariant::Budget => some(status_changes, "handoff(s) changed status"),
        Invariant::Result | Invariant::ExactlyOnce => some(completed, "handoff(s) completed in the store"),
        Invariant::Checkpoints | Invariant::Fencing | Invariant::Transport => some(ckpts, "checkpoint(s) in the store"),
        // the net-chaos scenario's workers sieve for themselves (it judges
        // what lands on the peer, docs/chaos/net-chaos.md)
        Invariant::ServedWork if cx.meta["scenario"] == "net-chaos" => None,
        Invariant::ServedWork => some(ckpts, "checkpoint(s) in the store"),
        Invariant::Rework | Invariant::Detection => some(worker_faults, "fault(s) on lease-holding workers"),
        Invariant::Zombies => some(
            super::invariants::woken_replaced(cx),
            "stopped worker(s) woken after the store moved their handoff on",
        ),
        Invariant::NoFalseOrphans => some(
            cx.audit_orphans().iter().filter(|o| o.1.as_deref() == Some("worker-died")).count(),
            "worker-died orphan(s) in the store audit",
        ),
        Invariant::SyncAck => {
            (ship == Ship::Tcp).then_some(ckpts).and_then(|n| some(n, "checkpoint(s) shipped synchronously"))
        }
        Invariant::Converge => {
            (ship != Ship::File).then_some(ckpts).and_then(|n| some(n, "checkpoint(s) shipped over TCP"))
        }
        Invariant::PeerAcks => {
            (ship != Ship::File).then_some(ckpts).and_then(|n| some(n, "checkpoint(s) shipped through the proxy"))
        }
        Invariant::AsyncLag => {
            (ship == Ship::TcpAsync).then_some(ckpts).and_then(|n| some(n, "checkpoint(s) shipped asynchronously"))
        }
        // checked in the standby's round, which took the dead host's handoffs over
        Invariant::Failover => cx.meta.get("standby_of").map(|_| "this round is a dead host's standby".to_string()),
        Invariant::NoLostCommitsAcrossDbCrash | Invariant::NoStuckAfterDbRestart => {
            some(faults("db-crash") + faults("db-failover"), "database crash(es) and failover(s)")
        }
        Invariant::NoTornAfterStoreFull => some(faults("store-full"), "store-full fault(s)"),
        Invariant::DurableAcks => some(faults("lose-unsynced"), "lose-unsynced crash(es) of the store's host"),
        Invariant::OneLeader => {
            some(cx.ix.spawns.values().filter(|s| s.role == "supervisor").count(), "supervisor(s) spawned")
        }
    }
}

/// Set the verdict's status, sources and (if so) why it is unchecked.
pub(crate) fn judge(v: &mut Verdict, i: Invariant, cx: &Ctx<'_>, have: &BTreeSet<Source>) {
    let (req, detail) = needs_in(i, have);
    v.sources = req.iter().chain(detail.iter().filter(|s| have.contains(s))).map(|s| s.name().to_string()).collect();
    v.missing = req.iter().filter(|s| !have.contains(s)).map(|s| s.name().to_string()).collect();
    let why = expected(i, cx);
    v.status = if !v.held() {
        "violated"
    } else if let Some(why) = why {
        if !v.missing.is_empty() {
            v.unchecked = Some(format!("needs {} (missing in this round), and {why}", v.missing.join(", ")));
            "unchecked"
        } else if v.checked == 0 {
            v.unchecked = Some(format!("checked 0 events although {why}"));
            "unchecked"
        } else {
            "held"
        }
    } else if v.checked > 0 && v.missing.is_empty() {
        "held"
    } else {
        "not-exercised"
    }
    .to_string();
}

/// Is `name` allowed to be unchecked by `allowed` (`all` allows every one)?
pub(crate) fn allowed(allowed: &[String], name: &str) -> bool {
    allowed.iter().any(|a| a == "all" || a == name)
}

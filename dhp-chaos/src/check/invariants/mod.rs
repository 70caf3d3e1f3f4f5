//! The invariants a round must keep, one file each. Each reads the
//! round's [`Ctx`] and returns its [`Findings`]; [`super::check_round`]
//! files them (taint) into the report's verdicts.

mod async_lag;
mod budget;
mod checkpoints;
mod converge;
mod detection;
mod durable_acks;
mod exactly_once;
mod failover;
mod fencing;
mod fencing_audit;
mod lost_commits;
mod lost_failover;
mod model;
mod no_false_orphans;
mod one_leader;
mod outcome;
mod peer_acks;
pub(crate) mod peer_log;
mod result;
mod rework;
mod served_work;
mod store_full;
mod stuck_after_restart;
mod sync_ack;
mod transport;
pub(crate) mod transport_links;
mod zombies;

pub(crate) use outcome::dlq_park;
pub(crate) use peer_acks::indeterminate;
pub(crate) use rework::redone;
pub(crate) use zombies::tally as zombie_tally;
pub(crate) use zombies::woken_replaced;

use super::ctx::Ctx;
use super::findings::Findings;

/// An invariant of a chaos round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Invariant {
    /// `outcome`: every handoff completed or parked in the DLQ; none left running.
    Outcome,
    /// `result`: each completed result equals the census recomputed from scratch.
    Result,
    /// `exactly-once`: each completion committed once, by the current fence holder.
    ExactlyOnce,
    /// `checkpoints`: seqs continuous, hashes valid, each state the census so far.
    Checkpoints,
    /// `fencing`: along commit order fences never go backwards and holders never interleave.
    Fencing,
    /// `zombies`: a paused worker woken after it was replaced commits nothing.
    Zombies,
    /// `transport`: the peer's transport log agrees with the store.
    Transport,
    /// `rework`: work redone per fault is at most one chunk.
    Rework,
    /// `detection`: every worker that died holding a lease was orphaned (or had completed).
    Detection,
    /// `no-false-orphans`: a worker-died orphan's holder had really died.
    NoFalseOrphans,
    /// `sync-ack`: every checkpoint acknowledged in synchronous TCP mode is in the peer's log.
    SyncAck,
    /// `converge`: once faults heal, the peer's log is the store's checkpoints in order.
    Converge,
    /// `failover`: after a host death the standby resumes from the shipped log.
    Failover,
    /// `no-lost-commits-across-db-crash`: what was acknowledged before a database crash stays.
    NoLostCommitsAcrossDbCrash,
    /// `no-stuck-after-db-restart`: after the database is back, every handoff still ends.
    NoStuckAfterDbRestart,
    /// `peer-acks`: every checkpoint the transport server acknowledged is intact in the peer's log.
    PeerAcks,
    /// `async-lag`: a tcp-async worker goes on with at most `--ship-max-lag` unacknowledged checkpoints.
    AsyncLag,
    /// `no-torn-after-store-full`: after the store's disk filled, the store is intact and holds every acknowledgement.
    NoTornAfterStoreFull,
    /// `one-leader`: no two supervisors hold overlapping leader terms (store audit).
    OneLeader,
    /// `no-silent-budget-overrun`: no handoff recovered or completed past its attempts, none back from the DLQ (store audit).
    Budget,
    /// `served-work`: every checkpoint holds a chunk the harness's workload service served, to the holder and fence that committed it.
    ServedWork,
    /// `model`: every audited change is the effect of a legal operation of dhp-model (store audit).
    Model,
    /// `durable-acks`: a crash that loses un-fsynced writes loses nothing the store acknowledged.
    DurableAcks,
}

impl Invariant {
    /// Every invariant, in the order the report lists them.
    pub const ALL: [Invariant; 23] = [
        Invariant::Outcome,
        Invariant::Result,
        Invariant::ExactlyOnce,
        Invariant::Checkpoints,
        Invariant::Fencing,
        Invariant::Zombies,
        Invariant::Transport,
        Invariant::Rework,
        Invariant::Detection,
        Invariant::NoFalseOrphans,
        Invariant::SyncAck,
        Invariant::Converge,
        Invariant::Failover,
        Invariant::NoLostCommitsAcrossDbCrash,
        Invariant::NoStuckAfterDbRestart,
        Invariant::PeerAcks,
        Invariant::AsyncLag,
        Invariant::NoTornAfterStoreFull,
        Invariant::OneLeader,
        Invariant::Budget,
        Invariant::ServedWork,
        Invariant::Model,
        Invariant::DurableAcks,
    ];

    /// The name reports, JSON output and saved reports use.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::Outcome => "outcome",
            Invariant::Result => "result",
            Invariant::ExactlyOnce => "exactly-once",
            Invariant::Checkpoints => "checkpoints",
            Invariant::Fencing => "fencing",
            Invariant::Zombies => "zombies",
            Invariant::Transport => "transport",
            Invariant::Rework => "rework",
            Invariant::Detection => "detection",
            Invariant::NoFalseOrphans => "no-false-orphans",
            Invariant::SyncAck => "sync-ack",
            Invariant::Converge => "converge",
            Invariant::Failover => "failover",
            Invariant::NoLostCommitsAcrossDbCrash => "no-lost-commits-across-db-crash",
            Invariant::NoStuckAfterDbRestart => "no-stuck-after-db-restart",
            Invariant::PeerAcks => "peer-acks",
            Invariant::AsyncLag => "async-lag",
            Invariant::NoTornAfterStoreFull => "no-torn-after-store-full",
            Invariant::OneLeader => "one-leader",
            Invariant::Budget => "no-silent-budget-overrun",
            Invariant::ServedWork => "served-work",
            Invariant::Model => "model",
            Invariant::DurableAcks => "durable-acks",
        }
    }

    /// The invariant's name as written in reports.
    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    /// `--allow-unchecked NAME,…`: every name an invariant's (or `all`).
    pub fn parse_allowed(names: &[String]) -> crate::error::Result<Vec<String>> {
        for n in names {
            if n != "all" && Invariant::from_name(n).is_none() {
                let known: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                return Err(crate::Error::Usage(format!(
                    "--allow-unchecked: unknown invariant {n:?} (one of: all, {})",
                    known.join(", ")
                )));
            }
        }
        Ok(names.to_vec())
    }

    /// The sources it needs and those it uses for detail ([`super::sources::needs`]).
    pub fn sources(self) -> (&'static [super::Source], &'static [super::Source]) {
        super::sources::needs(self)
    }

    /// What it promises (the report's `what`).
    pub fn doc(self) -> &'static str {
        match self {
            Invariant::Outcome => "every handoff completed, or parked in the DLQ after max_attempts; nothing left running/orphaned/pending",
            Invariant::Result => "each completed result equals the census recomputed from scratch",
            Invariant::ExactlyOnce => "each handoff's completion committed exactly once, by the current fence holder",
            Invariant::Checkpoints => "seqs continuous 0..n-1, hashes valid, each state is the census up to its next_n (no rework, nothing skipped)",
            Invariant::Fencing => "along commit order fences never go backwards, no two holders' writes interleave, no write after its fence was superseded, every acknowledged write is in the store",
            Invariant::Zombies => "a paused worker woken after it was replaced commits nothing",
            Invariant::Transport => "the peer's transport log agrees with the store (identity, hashes, every committed seq present)",
            Invariant::Rework => "work redone per fault is at most one chunk",
            Invariant::Detection => "every worker that died holding a lease was orphaned (or had completed)",
            Invariant::NoFalseOrphans => "a handoff orphaned as worker-died (liveness token dropped) was held by a process that had really died",
            Invariant::SyncAck => "every checkpoint acknowledged in synchronous TCP mode is in the peer's log (one cut by a fault before its ack is indeterminate)",
            Invariant::Converge => "after faults and partitions heal, the peer's log is the store's checkpoints in order: no gap, no duplicate, same hashes",
            Invariant::Failover => "after a host death the standby resumes from the shipped log: what it ingested is the dead host's store, at most one committed chunk lost (synchronous mode), and it carried the handoff on",
            Invariant::NoLostCommitsAcrossDbCrash => "every checkpoint and completion acknowledged before a database crash is in the store at the end",
            Invariant::NoStuckAfterDbRestart => "after a crashed database is back, every handoff still reaches a terminal state within the round",
            Invariant::PeerAcks => "every checkpoint the transport server acknowledged is intact in the peer's log (link faults, server kills, a full disk)",
            Invariant::AsyncLag => "tcp-async: a worker goes on with at most --ship-max-lag unacknowledged checkpoints, and completes with none",
            Invariant::NoTornAfterStoreFull => "after the store's disk filled: the store opens and passes integrity_check, every checkpoint row's hash verifies, every acknowledged checkpoint and completion is in it, and no process died of a panic or a signal of its own (a full disk is a typed StoreError, exit 11)",
            Invariant::OneLeader => "no two supervisors hold overlapping leader terms: a new holder takes the leadership row only after the previous term expired, was resigned, or its holder had died — or a database fault had cut its liveness session, noted (store audit)",
            Invariant::ServedWork => "every committed checkpoint carries the stamp the harness's workload service gave for exactly that chunk of that handoff, no stamp is committed twice, and the chunk was served to the holder and fence the store had when the checkpoint committed (workload record, store audit)",
            Invariant::Model => "every change the store audit recorded, in commit order, is the effect of a legal operation of the protocol's model (dhp-model) from the state just before it, given the harness's own facts (deaths, pauses, served chunks); the whole audit is consumed (store audit)",
            Invariant::DurableAcks => "a crash of the store's host that loses every write not fsynced (lose-unsynced) loses no checkpoint the store had acknowledged: the store, read by the harness right after the crash, holds every checkpoint whose next chunk the harness's workload service had served, or the handoff is terminal (workload record, harness's own read)",
            Invariant::Budget => "no silent budget overrun: no handoff orphaned instead of dead-lettered, recovered or completed after its max_attempts were used up, and none back from the DLQ or a budget kill (store audit)",
        }
    }

    /// Check the round.
    pub fn check(self, cx: &Ctx<'_>) -> Findings {
        match self {
            Invariant::Outcome => outcome::check(cx),
            Invariant::Result => result::check(cx),
            Invariant::ExactlyOnce => exactly_once::check(cx),
            Invariant::Checkpoints => checkpoints::check(cx),
            Invariant::Fencing => fencing::check(cx),
            Invariant::Zombies => zombies::check(cx),
            Invariant::Transport => transport::check(cx),
            Invariant::Rework => rework::check(cx),
            Invariant::Detection => detection::check(cx),
            Invariant::NoFalseOrphans => no_false_orphans::check(cx),
            Invariant::SyncAck => sync_ack::check(cx),
            Invariant::Converge => converge::check(cx),
            Invariant::Failover => failover::check(cx),
            Invariant::NoLostCommitsAcrossDbCrash => lost_commits::check(cx),
            Invariant::NoStuckAfterDbRestart => stuck_after_restart::check(cx),
            Invariant::PeerAcks => peer_acks::check(cx),
            Invariant::AsyncLag => async_lag::check(cx),
            Invariant::NoTornAfterStoreFull => store_full::check(cx),
            Invariant::OneLeader => one_leader::check(cx),
            Invariant::Budget => budget::check(cx),
            Invariant::ServedWork => served_work::check(cx),
            Invariant::Model => model::check(cx),
            Invariant::DurableAcks => durable_acks::check(cx),
        }
    }
}

//! Every invariant declared once: its name, the PROTOCOL.md sections whose
//! rules it checks, what it promises (the report's `what`) and when it
//! holds in full, the sources its verdict rests on, the mutant of
//! `adapters/dhp-rs-chaos` that proves it can fail, and the check itself.
//! [`Invariant`]'s names and docs, [`crate::check::sources::needs`],
//! `dhp-chaos list`, the tables of dhp-chaos/README.md and CONTRACT.md and
//! the mutant tests all read it (the tests check the documents against it).

use super::*;
use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::Source::{self, *};

/// A mutant program of `adapters/dhp-rs-chaos` (package `dhp-chaos-mutants`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutantProgram {
    /// `mutant-worker --mode M`, given as `--workers`.
    Worker,
    /// `mutant-supervisor --mode M`, given as `--supervisors`.
    Supervisor,
    /// `mutant-transport`, a transport server given as `--transport`.
    Transport,
    /// `mutant-shipper`, `dhp work` with its lag bound raised, given as `--workers`.
    Shipper,
}

impl MutantProgram {
    /// The binary's name.
    pub fn bin(self) -> &'static str {
        match self {
            MutantProgram::Worker => "mutant-worker",
            MutantProgram::Supervisor => "mutant-supervisor",
            MutantProgram::Transport => "mutant-transport",
            MutantProgram::Shipper => "mutant-shipper",
        }
    }
}

/// The broken implementation an invariant must catch: a round with it in
/// place of ours must report a violation of that invariant (the tests run
/// exactly this one, taken from here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mutant {
    /// Which program.
    pub program: MutantProgram,
    /// Its `--mode`, for the programs that have several.
    pub mode: Option<&'static str>,
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.mode {
            Some(m) => write!(f, "{} --mode {m}", self.program.bin()),
            None => f.write_str(self.program.bin()),
        }
    }
}

/// One invariant, declared once.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// Which invariant.
    pub invariant: Invariant,
    /// The name reports, JSON output, saved reports and `--allow-unchecked` use.
    pub name: &'static str,
    /// The sections of docs/PROTOCOL.md whose rules it checks.
    pub sections: &'static [&'static str],
    /// What it promises, one line (the report's `what`).
    pub what: &'static str,
    /// When it holds, in full (the README's table).
    pub holds: &'static str,
    /// The sources it needs (all of them, or it is unchecked).
    pub needs: &'static [Source],
    /// The sources it uses for detail when they are there.
    pub detail: &'static [Source],
    /// `(needs, detail)` instead, in a round with the workload service's record.
    pub with_workload: Option<(&'static [Source], &'static [Source])>,
    /// The mutant that proves it can fail.
    pub mutant: Mutant,
    /// The check.
    pub(crate) check: fn(&Ctx<'_>) -> Findings,
}

/// Every invariant, in [`Invariant::ALL`] order.
pub const DESCRIPTORS: [Descriptor; 23] = [
    Descriptor {
        invariant: Invariant::Outcome,
        name: "outcome",
        sections: &["§4", "§7.2"],
        what: "every handoff completed, or parked in the DLQ after max_attempts; nothing left running/orphaned/pending",
        holds: "every handoff is `completed`, or `failed` in the DLQ with `attempt ≥ max_attempts`; nothing is left pending/running/orphaned (the final snapshot says whether the owner was alive)",
        needs: &[Store],
        detail: &[Processes],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("wedge-on-db-error") },
        check: outcome::check,
    },
    Descriptor {
        invariant: Invariant::Result,
        name: "result",
        sections: &["§6.3"],
        what: "each completed result equals the census recomputed from scratch",
        holds: "each completed result equals the census recomputed from scratch by the checker's own sieve (`check/census.rs`)",
        needs: &[Store],
        detail: &[History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("wrong-result") },
        check: result::check,
    },
    Descriptor {
        invariant: Invariant::ExactlyOnce,
        name: "exactly-once",
        sections: &["§5.2", "§6.3"],
        what: "each handoff's completion committed exactly once, by the current fence holder",
        holds: "exactly one process committed the completion, holding the newest fence, not superseded when it began; a complete that began after the completion had committed is the protocol's idempotent no-op (a note), and so is a stale complete answered only after the completion the store records (`execution.runner_id` and `fence` name someone else: it waited for the write lock while that completion committed); the completer is the complete the store names; one process acknowledging two completes is a violation",
        needs: &[Store, StoreAudit],
        detail: &[History, Processes],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("complete-twice") },
        check: exactly_once::check,
    },
    Descriptor {
        invariant: Invariant::Checkpoints,
        name: "checkpoints",
        sections: &["§6.2"],
        what: "seqs continuous 0..n-1, hashes valid, each state is the census up to its next_n (no rework, nothing skipped)",
        holds: "seqs are 0..n-1, `state_hash = sha256(state_json)`, and seq k's state is exactly the census up to its `next_n` — so no chunk was redone or skipped, and every resume point was right; DLQ handoffs keep this prefix intact",
        needs: &[Store],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ack-uncommitted") },
        check: checkpoints::check,
    },
    Descriptor {
        invariant: Invariant::Fencing,
        name: "fencing",
        sections: &["§5.2", "§5.4"],
        what: "along commit order fences never go backwards, no two holders' writes interleave, no write after its fence was superseded, every acknowledged write is in the store",
        holds: "every acknowledged checkpoint is in the store as acknowledged; every committed one is attributed to a writer (an unacknowledged one by the in-flight invoke of a process that died); along commit order (seq) fences never go backwards and two holders never share a fence; each fence was granted to one holder only; no write *began* after its fence was superseded (a newer grant or an orphan, both recorded after their commit), unless the orphan's own checkpoint count puts the row before it: the store's order wins over timestamps, which for a process on a faked clock are put back on the real clock only to a millisecond or so",
        needs: &[StoreAudit, Processes],
        detail: &[History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("skip-fence") },
        check: fencing::check,
    },
    Descriptor {
        invariant: Invariant::Zombies,
        name: "zombies",
        sections: &["§5.2"],
        what: "a paused worker woken after it was replaced commits nothing",
        holds: "a SIGSTOPped worker woken after it was replaced commits nothing — neither a new write nor the one it was in the middle of (that one judged by the store's commit order: its row against the orphan's checkpoint count, see [PostgreSQL](../docs/chaos/postgres.md))",
        needs: &[StoreAudit, Processes],
        detail: &[History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("skip-fence") },
        check: zombies::check,
    },
    Descriptor {
        invariant: Invariant::Transport,
        name: "transport",
        sections: &["§8.1", "§8.3"],
        what: "the peer's transport log agrees with the store (identity, hashes, every committed seq present)",
        holds: "every line of the peer's log verifies (envelope identity, state hashes), agrees with the store's row for its seq, no phantom seqs, every committed seq present (a DLQ handoff may lack its last one), and nothing an ingest must refuse (a header or line of another handoff, a broken `prev` link, a seq with two states; checked from the spec, not by dhp-core); with `--ship tcp` both the peer's log and the local buffer",
        needs: &[Store, PeerLog],
        detail: &[History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ack-on-full") },
        check: transport::check,
    },
    Descriptor {
        invariant: Invariant::Rework,
        name: "rework",
        sections: &["§5.4", "§6.2"],
        what: "work redone per fault is at most one chunk",
        holds: "a faulted worker (killed, stopped, failpoint) computed at most one chunk that it did not commit itself — i.e. that was lost or had to be recomputed by its successor. From the workload service's record: the chunks served to it whose stamp no commit carries, the one it was computing when it died included; without the service (`--workload local`), from its history (and the in-flight chunk is invisible)",
        needs: &[History, Processes],
        detail: &[],
        with_workload: Some((&[Processes, Workload], &[History])),
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("throw-away") },
        check: rework::check,
    },
    Descriptor {
        invariant: Invariant::Detection,
        name: "detection",
        sections: &["§7.2", "§7.5"],
        what: "every worker that died holding a lease was orphaned (or had completed)",
        holds: "every worker that died or stopped holding a lease was orphaned, unless it had completed",
        needs: &[Processes],
        detail: &[StoreAudit, History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Supervisor, mode: Some("no-orphan") },
        check: detection::check,
    },
    Descriptor {
        invariant: Invariant::NoFalseOrphans,
        name: "no-false-orphans",
        sections: &["§7.5"],
        what: "a handoff orphaned as worker-died (liveness token dropped) was held by a process that had really died",
        holds: "a handoff orphaned as `worker-died` (its liveness token dropped) was held by a process that had been faulted or had died — one that recorded operations after the orphan was alive, even if it exited right after; lease-expired orphans of unfaulted workers are counted in a note (the lease working as designed); see [Database faults](../docs/chaos/postgres.md#database-faults-postgresql) for orphans whose liveness session a database fault or a `db-link` fault cut",
        needs: &[StoreAudit, Processes],
        detail: &[History],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("unheld-liveness") },
        check: no_false_orphans::check,
    },
    Descriptor {
        invariant: Invariant::SyncAck,
        name: "sync-ack",
        sections: &["§8.2", "§9"],
        what: "every checkpoint acknowledged in synchronous TCP mode is in the peer's log (one cut by a fault before its ack is indeterminate)",
        holds: "(`--ship tcp`, synchronous) every checkpoint a worker went on from — it invoked its next checkpoint or its completion, so `ship_checkpoint` had returned the peer's ack — is in the peer's log; a committed checkpoint whose worker was cut before it went on (killed, stuck behind a partition) is *indeterminate* (may or may not have reached the peer) and only counted in a note",
        needs: &[History, PeerLog],
        detail: &[Wire],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ack-unshipped") },
        check: sync_ack::check,
    },
    Descriptor {
        invariant: Invariant::Converge,
        name: "converge",
        sections: &["§8.2", "§9"],
        what: "after faults and partitions heal, the peer's log is the store's checkpoints in order: no gap, no duplicate, same hashes",
        holds: "(TCP rounds) once faults stop and partitions heal, each handoff's peer log is the store's checkpoints in file order: seq 0, 1, … with no gap and no duplicate, every line verifying and carrying the store's hash, as many lines as the store has rows (a DLQ handoff may lack its last)",
        needs: &[Store, PeerLog],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ship-altered") },
        check: converge::check,
    },
    Descriptor {
        invariant: Invariant::Failover,
        name: "failover",
        sections: &["§8.3", "§9"],
        what: "after a host death the standby resumes from the shipped log: what it ingested is the dead host's store, at most one committed chunk lost (synchronous mode), and it carried the handoff on",
        holds: "(`--hosts`, host death; checked in the standby's directory) what the standby ingested is a prefix of the dead host's store with the same hashes; in synchronous mode at most one committed checkpoint never reached the peer, so the host death costs at most one chunk of rework; the standby keeps the ingested rows and carries the handoff on",
        needs: &[Store, PeerLog, Processes],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ship-late") },
        check: failover::check,
    },
    Descriptor {
        invariant: Invariant::NoLostCommitsAcrossDbCrash,
        name: "no-lost-commits-across-db-crash",
        sections: &["§3.2"],
        what: "every checkpoint and completion acknowledged before a database crash is in the store at the end",
        holds: "every checkpoint (seq and `next_n`) and every completion a worker saw return Ok before a `db-crash` is in the store at the end, and before a `db-failover`'s primary crash is on the promoted standby (read before promotion; under pg_auto_failover on one of the two standbys, both read at the loss, and a standby that could not be read is reported, never taken as holding; lost seqs named; the failover's false orphans counted in a note, bound: once per handoff per failover); rounds without either check nothing",
        needs: &[History, Store, Processes],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ack-uncommitted") },
        check: lost_commits::check,
    },
    Descriptor {
        invariant: Invariant::NoStuckAfterDbRestart,
        name: "no-stuck-after-db-restart",
        sections: &["§3.2", "§7.2"],
        what: "after a crashed database is back, every handoff still reaches a terminal state within the round",
        holds: "once a crashed database is back (its `db-up` is in the history), every handoff reaches `completed` or `failed` within the round; notes give, per crash, the outage and how long until the first acknowledged operation after it",
        needs: &[Store, Processes],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("wedge-on-db-error") },
        check: stuck_after_restart::check,
    },
    Descriptor {
        invariant: Invariant::PeerAcks,
        name: "peer-acks",
        sections: &["§9"],
        what: "every checkpoint the transport server acknowledged is intact in the peer's log (link faults, server kills, a full disk)",
        holds: "(`--ship tcp`) every checkpoint the transport server acknowledged — as the link proxy saw it forward the ack, or a hello's `ack_seq` — is intact in the peer's final log with the store's hash; a ship whose ack never came back is indeterminate and not required (counted)",
        needs: &[Wire, PeerLog],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Transport, mode: None },
        check: peer_acks::check,
    },
    Descriptor {
        invariant: Invariant::AsyncLag,
        name: "async-lag",
        sections: &["§9"],
        what: "tcp-async: a worker goes on with at most --ship-max-lag unacknowledged checkpoints, and completes with none",
        holds: "(`--ship tcp-async`) a worker goes on to its next chunk with at most `--ship-max-lag` of the handoff's committed checkpoints unacknowledged, and completes with none",
        needs: &[Wire, History],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Shipper, mode: None },
        check: async_lag::check,
    },
    Descriptor {
        invariant: Invariant::NoTornAfterStoreFull,
        name: "no-torn-after-store-full",
        sections: &["§3.1", "§11"],
        what: "after the store's disk filled: the store opens and passes integrity_check, every checkpoint row's hash verifies, every acknowledged checkpoint and completion is in it, and no process died of a panic or a signal of its own (a full disk is a typed StoreError, exit 11)",
        holds: "(`--store-disk`, rounds with a `store-full` fault) the store opens read-only and `PRAGMA integrity_check` says `ok`; every checkpoint row's `state_hash` is `sha256(state_json)` of a JSON object; every checkpoint a process was told committed is in the store at its seq with its `next_n`, and every acknowledged completion left the handoff `completed`; no process died of a panic (exit 101) or of a signal nobody sent it (SIGKILL and teardown's SIGTERM are the harness's); a builtin worker whose last failed operation failed for the full disk exited 11. Its notes count the fills, the operations refused for the full disk and every exit code of the round — see [Store disk faults](../docs/chaos/faults.md#link-clock-and-disk-faults)",
        needs: &[Store, Processes, History],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("ack-on-full") },
        check: store_full::check,
    },
    Descriptor {
        invariant: Invariant::OneLeader,
        name: "one-leader",
        sections: &["§7.1"],
        what: "no two supervisors hold overlapping leader terms: a new holder takes the leadership row only after the previous term expired, was resigned, or its holder had died — or a database fault had cut its liveness session, noted (store audit)",
        holds: "no two supervisors hold overlapping leader terms, along the store audit's commit order: a new holder takes the leadership row only after the previous term expired, was resigned, or its holder had died — or a database fault had cut its liveness session (noted)",
        needs: &[StoreAudit, Processes],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Supervisor, mode: Some("two-leaders") },
        check: one_leader::check,
    },
    Descriptor {
        invariant: Invariant::Budget,
        name: "no-silent-budget-overrun",
        sections: &["§6.4", "§7.2", "§7.3"],
        what: "no silent budget overrun: no handoff orphaned instead of dead-lettered, recovered or completed after its max_attempts were used up, and none back from the DLQ or a budget kill (store audit)",
        holds: "no handoff is orphaned instead of dead-lettered, recovered or completed after its `max_attempts` were used up, and none comes back from the DLQ or a budget kill (store audit)",
        needs: &[StoreAudit, Store],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Supervisor, mode: Some("no-dlq") },
        check: budget::check,
    },
    Descriptor {
        invariant: Invariant::ServedWork,
        name: "served-work",
        sections: &["§5.2", "§6.2"],
        what: "every committed checkpoint carries the stamp the harness's workload service gave for exactly that chunk of that handoff, no stamp is committed twice, and the chunk was served to the holder and fence the store had when the checkpoint committed (workload record, store audit)",
        holds: "(`--workload service`) every committed checkpoint carries the stamp the harness's workload service issued for exactly that chunk of that handoff (seq k's stamp names `[next_n of seq k−1, next_n)`), no stamp is committed twice, and — along the store audit's commit order — the chunk was served to the holder and fence that owned the handoff when the checkpoint committed: a chunk computed under a superseded fence and committed anyway is a zombie write, seen without asking the worker. A reference worker's late write is filed known (check-then-write)",
        needs: &[Store, Workload],
        detail: &[StoreAudit],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("local-census") },
        check: served_work::check,
    },
    Descriptor {
        invariant: Invariant::Model,
        name: "model",
        sections: &["§4", "§5", "§7"],
        what: "every change the store audit recorded, in commit order, is the effect of a legal operation of the protocol's model (dhp-model) from the state just before it, given the harness's own facts (deaths, pauses, served chunks); the whole audit is consumed (store audit)",
        holds: "every change the store audit recorded is the effect of a legal operation of the protocol's model, given the harness's own facts — see [docs/chaos-model.md](../docs/chaos-model.md)",
        needs: &[StoreAudit, Processes],
        detail: &[Workload],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Supervisor, mode: Some("no-leader-row") },
        check: model::check,
    },
    Descriptor {
        invariant: Invariant::DurableAcks,
        name: "durable-acks",
        sections: &["§3.1"],
        what: "a crash of the store's host that loses every write not fsynced (lose-unsynced) loses no checkpoint the store had acknowledged: the store, read by the harness right after the crash, holds every checkpoint whose next chunk the harness's workload service had served, or the handoff is terminal (workload record, harness's own read)",
        holds: "(`--lose-unsynced`, rounds with a `lose-unsynced` crash) right after each crash of the store's host, the store (read by the harness) holds every checkpoint whose next chunk the harness's workload service had served since the previous crash, or the handoff is terminal: nothing the store acknowledged was lost with the writes it had not fsynced — see [Lost un-fsynced writes](../docs/chaos/faults.md#lost-un-fsynced-writes---lose-unsynced)",
        needs: &[Workload, Processes],
        detail: &[],
        with_workload: None,
        mutant: Mutant { program: MutantProgram::Worker, mode: Some("no-fsync") },
        check: durable_acks::check,
    },
];

fn names(s: &[Source]) -> String {
    s.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

impl Descriptor {
    /// The row as `dhp-chaos list --format json` prints it.
    pub fn to_json(&self) -> serde_json::Value {
        let names = |s: &[Source]| s.iter().map(|s| s.name()).collect::<Vec<_>>();
        serde_json::json!({
            "name": self.name, "sections": self.sections, "what": self.what, "holds": self.holds,
            "needs": names(self.needs), "detail": names(self.detail),
            "with_workload": self.with_workload.map(|(n, d)| serde_json::json!({"needs": names(n), "detail": names(d)})),
            "mutant": self.mutant.to_string(),
        })
    }

    /// The needs and detail cells of CONTRACT.md's table.
    fn source_cells(&self) -> (String, String) {
        match self.with_workload {
            None => (names(self.needs), names(self.detail)),
            Some((n, d)) => (format!("{} (without the service: {})", names(n), names(self.needs)), names(d)),
        }
    }
}

/// `dhp-chaos list`: one aligned line per invariant.
pub fn text() -> String {
    let w = DESCRIPTORS.iter().map(|d| d.name.len()).max().unwrap_or(0);
    let s = DESCRIPTORS.iter().map(|d| d.sections.join(",").len()).max().unwrap_or(0);
    let mut out = String::new();
    for d in &DESCRIPTORS {
        out.push_str(&format!("{:<w$}  {:<s$}  {}\n", d.name, d.sections.join(","), d.what));
    }
    out
}

/// `dhp-chaos list --format json`.
pub fn json() -> serde_json::Value {
    serde_json::json!({"type": "dhp-chaos-invariants", "invariants": DESCRIPTORS.iter().map(Descriptor::to_json).collect::<Vec<_>>()})
}

/// `dhp-chaos list --format markdown`: the table of dhp-chaos/README.md.
pub fn markdown() -> String {
    let mut out = String::from("| name | sections | holds when | mutant that fails it |\n|---|---|---|---|\n");
    for d in &DESCRIPTORS {
        out.push_str(&format!("| `{}` | {} | {} | `{}` |\n", d.name, d.sections.join(", "), d.holds, d.mutant));
    }
    out
}

/// `dhp-chaos list --format sources`: the table of CONTRACT.md §5.
pub fn sources_markdown() -> String {
    let mut out = String::from("| invariant | needs | detail when present |\n|---|---|---|\n");
    for d in &DESCRIPTORS {
        let (needs, detail) = d.source_cells();
        let row = format!("| `{}` | {needs} | {detail} |\n", d.name);
        out.push_str(&row.replace("|  |", "| |"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_in_invariant_order_and_whole() {
        let mut seen = std::collections::BTreeSet::new();
        for (d, i) in DESCRIPTORS.iter().zip(Invariant::ALL) {
            assert_eq!(d.invariant, i, "DESCRIPTORS is not in Invariant::ALL order at {}", d.name);
            assert!(seen.insert(d.name), "{} declared twice", d.name);
            assert!(!d.what.is_empty() && !d.holds.is_empty() && !d.needs.is_empty(), "{}", d.name);
            assert!(!d.sections.is_empty() && d.sections.iter().all(|s| s.starts_with('§')), "{}", d.name);
            let moded = matches!(d.mutant.program, MutantProgram::Worker | MutantProgram::Supervisor);
            assert_eq!(d.mutant.mode.is_some(), moded, "{}: {}", d.name, d.mutant);
        }
        assert_eq!(DESCRIPTORS.len(), Invariant::ALL.len());
    }
}

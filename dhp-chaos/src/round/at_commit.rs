//! `kill-at-commit` (and `pause-at-commit`) faults: the schedule arms a protocol moment — the next
//! checkpoint commit, or the next orphan commit — and the harness SIGKILLs
//! the process behind it the moment its monitor sees that commit in the
//! store audit: the worker that holds the checkpointed handoff (its commit
//! is in; whether its `checkpoint` call had returned is the OS's timing,
//! the fault records how long after the commit it came), or the leader
//! supervisor that orphaned a handoff, before it can do more.
//! `pause-at-commit` SIGSTOPs the worker behind a checkpoint commit instead
//! (woken once replaced, like a pause). SQLite
//! stores with the audit only (the monitor reads the audit table).

use super::*;
use crate::audit::TABLE;

/// The moments an at-commit fault can be armed at.
pub(super) const MOMENTS: [&str; 2] = ["checkpoint", "orphan"];
/// Share of at-commit faults armed at a checkpoint commit (the rest: orphan).
const CHECKPOINT_SHARE: f64 = 0.7;

/// The armed moment, the audit position it waits after, and its kind.
#[derive(Debug, Default)]
pub(super) struct AtCommit {
    armed: Option<(&'static str, i64, FaultKind)>,
}

impl Driver<'_> {
    /// Arm the next commit of a moment drawn from the victim stream; false
    /// when the round cannot see its audit live (PostgreSQL, no audit) or
    /// one is armed already.
    pub(super) fn arm_at_commit(&mut self, kind: FaultKind) -> bool {
        if self.cfg.pg_url.is_some() || !self.cfg.audit || self.at_commit.armed.is_some() {
            return false;
        }
        let Some(db) = &self.db else { return false };
        let q = format!("SELECT COALESCE(MAX(seq), 0) FROM {TABLE}");
        let Ok(after) = db.query_row(&q, [], |r| r.get::<_, i64>(0)) else { return false };
        // a pause stops workers only: always at a checkpoint
        let pause = kind == FaultKind::PauseAtCommit;
        let moment = if pause || self.rng_victim.gen_bool(CHECKPOINT_SHARE) { MOMENTS[0] } else { MOMENTS[1] };
        self.at_commit.armed = Some((moment, after, kind));
        self.hist.record("fault-armed", json!({"kind": kind.name(), "moment": moment, "after_audit_seq": after}));
        true
    }

    /// After each monitor read: fire an armed moment whose commit is now in the audit.
    pub(super) fn at_commit_tick(&mut self) {
        let Some((moment, after, kind)) = self.at_commit.armed else { return };
        let Some(db) = &self.db else { return };
        let q = format!("SELECT seq, tbl, op, hid, new_json, at FROM {TABLE} WHERE seq > ?1 ORDER BY seq");
        let Ok(mut st) = db.prepare(&q) else { return };
        type Row = (i64, String, String, Option<String>, Option<String>, f64);
        let rows: Vec<Row> =
            match st.query_map([after], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))) {
                Ok(it) => it.flatten().collect(),
                Err(_) => return,
            };
        drop(st);
        let Some(&(seq, _, _, ref hid, _, at)) = rows.iter().find(|(_, tbl, op, _, new, _)| match moment {
            "checkpoint" => tbl == "checkpoints" && op == "INSERT",
            _ => tbl == "ownership" && op == "UPDATE" && new.as_deref().is_some_and(|n| n.contains(ORPHANED)),
        }) else {
            if let Some(last) = rows.last() {
                self.at_commit.armed = Some((moment, last.0, kind));
            }
            return;
        };
        let hid = hid.clone();
        let victim = match moment {
            "checkpoint" => hid.as_ref().and_then(|h| self.snap.own.get(h)).map(|o| o.0.clone()),
            _ => self.snap.leader.clone(),
        };
        let role = if moment == "checkpoint" { Role::Worker } else { Role::Supervisor };
        let idx = victim.and_then(|v| self.table.procs.iter().position(|p| p.name == v && p.role == role && p.alive()));
        self.at_commit.armed = None;
        let Some(i) = idx else {
            self.hist.record("fault-missed", json!({"kind": kind.name(), "moment": moment,
                                                    "audit_seq": seq, "hid": hid, "why": "no live process behind the commit"}));
            return;
        };
        self.fire_at_commit(i, kind, moment, seq, hid, at);
    }

    fn fire_at_commit(&mut self, i: usize, kind: FaultKind, moment: &str, seq: i64, hid: Option<String>, at: f64) {
        let lease = self.lease_of(&self.table.procs[i]);
        let leader = self.snap.leader.as_deref() == Some(self.table.procs[i].name.as_str());
        let pause = kind == FaultKind::PauseAtCommit;
        let t = hist::now();
        let p = &mut self.table.procs[i];
        if !p.signal(if pause { Signal::SIGSTOP } else { Signal::SIGKILL }) {
            return;
        }
        if pause {
            p.paused = Some((t, lease));
            self.live.pauses += 1;
        } else {
            p.killed_by_harness = true;
            self.live.kills += 1;
        }
        let (name, pid, role) = (p.name.clone(), p.pid, p.role);
        self.live.faults += 1;
        self.fault_id += 1;
        self.hist.record_at(
            t,
            "fault",
            json!({"fault_id": self.fault_id, "kind": kind.name(), "signal": if pause { "STOP" } else { "KILL" },
                   "victim": name, "victim_pid": pid, "role": role, "hid": hid, "lease_fence": lease,
                   "leader": leader, "moment": moment, "audit_seq": seq, "commit_at": at,
                   "after_commit_s": t - at}),
        );
    }
}

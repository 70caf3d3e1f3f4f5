//! The round's side of `--steer` ([`crate::coverage::steer`]): what the
//! injector can see when it picks a fault, and the steered choices, each
//! recorded in the history as a `steer` event.

use super::*;
use crate::coverage::steer::View;

impl Driver<'_> {
    fn steer_view(&self) -> View {
        let procs = &self.table.procs;
        let holds = |p: &Proc| self.lease_of(p).is_some();
        let leader = procs
            .iter()
            .any(|p| p.role == Role::Supervisor && p.alive() && self.snap.leader.as_deref() == Some(p.name.as_str()));
        let sups = procs.iter().filter(|p| p.role == Role::Supervisor && p.alive()).count();
        View {
            lease_holders: procs.iter().filter(|p| p.role == Role::Worker && p.active() && holds(p)).count(),
            paused_now: procs.iter().any(|p| p.alive() && p.paused.is_some()),
            leader,
            followers: sups.saturating_sub(usize::from(leader)),
            dlq_holder: self.dlq_holder(procs.iter().enumerate().map(|(i, _)| i)).is_some(),
        }
    }

    /// Of the processes `idx`, a live worker holding a DLQ handoff not parked yet.
    fn dlq_holder(&self, idx: impl Iterator<Item = usize>) -> Option<usize> {
        idx.filter(|&i| {
            let p = &self.table.procs[i];
            let hid = p.hid.as_deref().unwrap_or("");
            p.role == Role::Worker
                && p.active()
                && self.steer.dlq_hids.contains(hid)
                && self.lease_of(p).is_some()
                && !self.snap.status.get(hid).is_some_and(|s| terminal(s))
        })
        .min()
    }

    /// The kind of this fault: `drawn`, or the steerer's choice (recorded).
    pub(super) fn steered_kind(&mut self, drawn: FaultKind) -> FaultKind {
        if !self.steer.on() {
            return drawn;
        }
        let v = self.steer_view();
        match self.steer.kind(drawn, &self.cfg.fault_mix, v) {
            Some((k, why)) => {
                self.hist.record("steer", json!({"drawn": drawn.name(), "kind": k.name(), "why": why}));
                k
            }
            None => drawn,
        }
    }

    /// A kill-worker victim the steerer prefers: the holder of a DLQ handoff
    /// not parked yet (each kill uses one of its attempts).
    pub(super) fn steered_victim(&mut self, pool: &[usize]) -> Option<usize> {
        if !self.steer.on() {
            return None;
        }
        let i = self.dlq_holder(pool.iter().copied())?;
        self.hist.record(
            "steer",
            json!({"victim": self.table.procs[i].name, "why": "drive the DLQ handoff to its max_attempts"}),
        );
        Some(i)
    }

    /// How many recoverers to start for an orphan: `drawn`, or 2 when no
    /// race has happened in the round yet (recorded).
    pub(super) fn steered_racers(&mut self, drawn: u32, mode: &str, hid: &str) -> u32 {
        let n = if drawn == 1 && mode == "recover" && self.steer.force_race() {
            self.hist.record("steer", json!({"hid": hid, "racers": 2, "why": "no race of recoverers yet"}));
            2
        } else {
            drawn
        };
        if n > 1 && mode == "recover" {
            self.steer.raced();
        }
        n
    }
}

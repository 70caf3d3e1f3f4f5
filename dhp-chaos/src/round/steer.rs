//! The round's side of `--steer` ([`crate::coverage::steer`]): what the
//! injector can see when it picks a fault, and the steered choices, each
//! recorded in the history as a `steer` event.

use super::*;
use crate::coverage::steer::{View, MAX_EXTENSIONS};

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
        self.look_for_zombie_attempts();
        let v = self.steer_view();
        match self.steer.kind(drawn, &self.cfg.fault_mix, v) {
            Some((k, why)) => {
                self.hist.record("steer", json!({"drawn": drawn.name(), "kind": k.name(), "why": why}));
                k
            }
            None => drawn,
        }
    }

    /// Has a woken replaced worker asked the workload service for work since?
    fn look_for_zombie_attempts(&mut self) {
        match &self.workload {
            Some(w) => self.steer.look_for_attempts(Some(&|holder: &str| w.last_served(holder))),
            None => self.steer.look_for_attempts(None),
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

impl Driver<'_> {
    /// The round's work ended (or its fault time did) before its targets
    /// were reached: add one handoff (a DLQ one while no DLQ handoff was
    /// parked) and go on, up to [`MAX_EXTENSIONS`] and within
    /// `--fault-seconds`; true when it did. At the bound, what is still
    /// missing is recorded once. Not for `--hosts` rounds (their standby
    /// takes a dead host's handoffs over by index).
    pub(super) fn steer_extend(&mut self) -> Result<bool> {
        if !self.steer.on() || self.cfg.host.is_some() || self.dead || hist::now() >= self.fault_end {
            return Ok(false);
        }
        self.look_for_zombie_attempts();
        let parked =
            self.steer.dlq_hids.iter().any(|h| self.snap.status.get(h).is_some_and(|s| s.as_str() == "failed"));
        let missing = self.steer.missing(&self.cfg.fault_mix, self.cfg.race_rate, parked);
        if missing.is_empty() {
            return Ok(false);
        }
        if self.steer.extensions >= MAX_EXTENSIONS {
            if !self.steer.bound_said {
                self.steer.bound_said = true;
                self.hist
                    .record("round", json!({"phase": "extend-bound", "missing": missing, "bound": MAX_EXTENSIONS}));
            }
            return Ok(false);
        }
        let i = self.hids.len() as u32;
        let span = self.cfg.chunks.checked_mul(self.cfg.chunk);
        let lo = span.and_then(|s| s.checked_mul(u64::from(i))).and_then(|o| o.checked_add(self.cfg.base));
        let (Some(span), Some(lo)) = (span, lo) else { return Ok(false) };
        let Some(hi) = lo.checked_add(span) else { return Ok(false) };
        let dlq = missing.contains(&"dlq") || self.steer.dlq_hids.is_empty() && self.cfg.dlq_handoffs > 0;
        let max_att = if dlq { self.cfg.dlq_max_attempts } else { self.cfg.max_attempts };
        let hid = procs::dispatch_census(&self.cfg.dhp, self.store_arg(), (lo, hi), self.cfg.chunk, max_att)?;
        self.steer.extensions += 1;
        self.hist.record(
            "round",
            json!({"phase": "extend", "missing": missing, "extension": self.steer.extensions, "hid": hid}),
        );
        self.hist.record(
            "dispatch",
            json!({"hid": hid, "index": i, "lo": lo, "hi": hi, "chunk": self.cfg.chunk, "max_attempts": max_att,
                   "extension": true}),
        );
        if dlq {
            self.steer.dlq_hids.insert(hid.clone());
        }
        self.tasks.insert(hid.clone(), (lo, hi, self.cfg.chunk));
        if let Some(w) = &self.workload {
            w.add_task(hid.clone(), (lo, hi, self.cfg.chunk));
        }
        self.hids.push(hid);
        self.monitor();
        Ok(true)
    }
}

impl Driver<'_> {
    /// The further draws `kind` makes from the schedule's stream in this
    /// round (when its proxy or disk is there), for the schedule record.
    pub(super) fn schedule_extra(&self, kind: FaultKind) -> Option<&'static str> {
        use crate::coverage::schedule::{EXTRA_DISK, EXTRA_STORE, EXTRA_TOXIC};
        match kind {
            FaultKind::Link if self.proxy.is_some() => Some(EXTRA_TOXIC),
            FaultKind::DbLink if self.db_proxy.is_some() => Some(EXTRA_TOXIC),
            FaultKind::DiskFull if self.tmpfs.is_some() => Some(EXTRA_DISK),
            FaultKind::StoreFull if self.store_disk.tmpfs.is_some() => Some(EXTRA_STORE),
            _ => None,
        }
    }
}

impl Driver<'_> {
    /// Seconds from the start to the first fault: drawn (and recorded as
    /// the schedule's step 0), or the script's first fault.
    pub(super) fn first_fault(&mut self) -> f64 {
        if let Some(script) = &self.cfg.script {
            return script.first().map_or(f64::INFINITY, |f| f.at);
        }
        let first = crate::coverage::schedule::interval(&mut self.rng, self.cfg.fault_interval_s);
        self.hist.record("schedule", crate::coverage::schedule::step(0, first, None, None));
        first
    }

    /// `--schedule`: inject the script's next fault (its time has come) and
    /// schedule the one after it, by the script's spacing.
    pub(super) fn inject_scripted(&mut self) {
        let Some(script) = &self.cfg.script else { return };
        let k = self.schedule_step as usize;
        let Some(f) = script.get(k).copied() else {
            self.next_fault = f64::INFINITY;
            return;
        };
        self.next_fault = script.get(k + 1).map_or(f64::INFINITY, |n| self.next_fault + (n.at - f.at).max(0.0));
        self.schedule_step += 1;
        self.hist.record("scripted", json!({"step": k, "at": f.at, "kind": f.kind.name()}));
        self.inject_kind(f.kind);
    }
}

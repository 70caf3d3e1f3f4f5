//! The seeded fault injector: kills, pauses, failpoints, and waking
//! stopped workers.

use super::*;

impl Driver<'_> {
    pub(super) fn lease_of(&self, p: &Proc) -> Option<i64> {
        let hid = p.hid.as_ref()?;
        self.snap.own.get(hid).filter(|o| o.0 == p.name).map(|o| o.1)
    }

    pub(super) fn signal(&mut self, idx: usize, sig: Signal, kind: &str, fault_id: u64) -> bool {
        let lease = self.lease_of(&self.table.procs[idx]);
        let leader = self.snap.leader.as_deref() == Some(self.table.procs[idx].name.as_str());
        let t = hist::now();
        let p = &mut self.table.procs[idx];
        if !p.signal(sig) {
            return false;
        }
        let signame = match sig {
            Signal::SIGKILL => "KILL",
            Signal::SIGSTOP => "STOP",
            Signal::SIGCONT => "CONT",
            _ => "OTHER",
        };
        if sig == Signal::SIGKILL {
            p.killed_by_harness = true;
            if kind != "teardown" {
                self.live.kills += 1;
            }
        }
        if sig == Signal::SIGSTOP {
            p.paused = Some((t, lease));
            self.live.pauses += 1;
        }
        if sig == Signal::SIGCONT {
            p.paused = None;
        }
        let (name, pid, role, hid) = (p.name.clone(), p.pid, p.role, p.hid.clone());
        self.hist.record_at(
            t,
            "fault",
            json!({"fault_id": fault_id, "kind": kind, "signal": signame, "victim": name, "victim_pid": pid,
                   "role": role, "hid": hid, "lease_fence": lease, "leader": leader}),
        );
        true
    }

    pub(super) fn pick_kind(&mut self) -> FaultKind {
        crate::coverage::schedule::pick(&mut self.rng, &self.cfg.fault_mix)
    }

    pub(super) fn inject(&mut self) {
        let now = hist::now();
        self.db_deferred_tick();
        if now < self.next_fault {
            return;
        }
        if self.cfg.script.is_some() {
            self.inject_scripted();
            return;
        }
        let b = self.cfg.fault_interval_s.1;
        // scheduled from the previous fault's planned time, not from now: fault
        // times are t0 + the seeded intervals, late by at most a loop tick
        let interval = crate::coverage::schedule::interval(&mut self.rng, self.cfg.fault_interval_s);
        self.next_fault = self.next_fault.max(now - b) + interval;
        let drawn = self.pick_kind();
        let kind = self.steered_kind(drawn);
        let extra = self.schedule_extra(kind);
        if self.inject_kind(kind) {
            self.steer.fired(kind);
        }
        self.schedule_step += 1;
        let step = crate::coverage::schedule::step(self.schedule_step, interval, Some(drawn), extra);
        self.hist.record("schedule", step);
    }

    /// Inject one fault of `kind` now, on a victim drawn from the processes
    /// eligible at this moment; false when there was none.
    pub fn inject_kind(&mut self, kind: FaultKind) -> bool {
        match kind {
            FaultKind::DbCrash
            | FaultKind::DbTerminateBackend
            | FaultKind::DbStall
            | FaultKind::DbFailover
            | FaultKind::DbSwitchover
            | FaultKind::DbPrimaryPartition
            | FaultKind::DbMonitorPartition
            | FaultKind::DbStandbyLost => {
                self.draw_db(kind);
                true
            }
            FaultKind::Link => self.inject_link(),
            FaultKind::DbLink => self.inject_db_link(),
            FaultKind::DiskFull => self.inject_disk_full(),
            FaultKind::StoreFull => self.inject_store_full(),
            FaultKind::StopAtChunk => self.arm_chunk_stop(),
            FaultKind::LoseUnsynced => self.inject_lose_unsynced(),
            FaultKind::KillAtCommit | FaultKind::PauseAtCommit => self.arm_at_commit(kind),
            FaultKind::KillWorker
            | FaultKind::KillLeader
            | FaultKind::KillFollower
            | FaultKind::KillMulti
            | FaultKind::KillTransport
            | FaultKind::Pause => self.inject_process(kind),
            // network and host faults are the multi-host schedule's (src/hosts/)
            FaultKind::Partition | FaultKind::HostDeath => false,
        }
    }

    /// A process fault: its victims drawn, signalled under one fault id;
    /// false when none was eligible.
    fn inject_process(&mut self, kind: FaultKind) -> bool {
        let workers: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| self.table.procs[i].role == Role::Worker && self.table.procs[i].active())
            .collect();
        let sups: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| self.table.procs[i].role == Role::Supervisor && self.table.procs[i].alive())
            .collect();
        let leader: Option<usize> =
            sups.iter().copied().find(|&i| self.snap.leader.as_deref() == Some(self.table.procs[i].name.as_str()));
        let (kind_name, victims) = self.victims(kind, &workers, &sups, leader);
        if victims.is_empty() {
            return false;
        }
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        for (i, sig) in victims {
            self.signal(i, sig, kind_name, id);
        }
        true
    }

    /// The victims of a process fault of `kind` (and the name it is recorded under).
    fn victims(
        &mut self,
        kind: FaultKind,
        workers: &[usize],
        sups: &[usize],
        leader: Option<usize>,
    ) -> (&'static str, Vec<(usize, Signal)>) {
        let mut victims: Vec<(usize, Signal)> = Vec::new();
        let mut kind_name = kind.name();
        match kind {
            FaultKind::KillWorker => {
                // a stopped worker can be killed too: a crash at exactly the place it stopped
                let stopped: Vec<usize> = (0..self.table.procs.len())
                    .filter(|&i| {
                        self.table.procs[i].role == Role::Worker
                            && self.table.procs[i].alive()
                            && self.table.procs[i].paused.is_some()
                    })
                    .collect();
                let pool = if !stopped.is_empty() && self.rng_victim.gen_bool(0.5) { &stopped[..] } else { workers };
                let pick = pool.choose(&mut self.rng_victim).copied();
                if let Some(i) = self.steered_victim(workers).or(pick) {
                    victims.push((i, Signal::SIGKILL));
                }
            }
            FaultKind::KillLeader => match leader {
                Some(i) => victims.push((i, Signal::SIGKILL)),
                None => {
                    // no live leader right now (failover in progress): any supervisor
                    if let Some(&i) = sups.choose(&mut self.rng_victim) {
                        kind_name = "kill-supervisor";
                        victims.push((i, Signal::SIGKILL));
                    }
                }
            },
            FaultKind::KillFollower => {
                let f: Vec<usize> = sups.iter().copied().filter(|i| Some(*i) != leader).collect();
                if let Some(&i) = f.choose(&mut self.rng_victim) {
                    victims.push((i, Signal::SIGKILL));
                }
            }
            FaultKind::KillMulti => {
                let k = self.rng_victim.gen_range(2..=3usize);
                let mut pool: Vec<usize> = workers.iter().chain(sups.iter()).copied().collect();
                if let Some(l) = leader {
                    if self.rng_victim.gen_bool(0.5) {
                        victims.push((l, Signal::SIGKILL));
                        pool.retain(|&i| i != l);
                    }
                }
                pool.shuffle(&mut self.rng_victim);
                for i in pool {
                    if victims.len() >= k {
                        break;
                    }
                    victims.push((i, Signal::SIGKILL));
                }
            }
            FaultKind::KillTransport => {
                if let Some(i) = (0..self.table.procs.len())
                    .find(|&i| self.table.procs[i].role == Role::Transport && self.table.procs[i].alive())
                {
                    victims.push((i, Signal::SIGKILL));
                }
            }
            FaultKind::Pause => {
                let holders: Vec<usize> =
                    workers.iter().copied().filter(|&i| self.lease_of(&self.table.procs[i]).is_some()).collect();
                if let Some(&i) = holders.choose(&mut self.rng_victim) {
                    victims.push((i, Signal::SIGSTOP));
                }
            }
            // not process faults: dispatched in inject_kind
            _ => {}
        }
        (kind_name, victims)
    }

    /// Host death: SIGKILL every live process of this host in one instant
    /// (its disk stays). The round stops provisioning; a standby takes over.
    pub fn kill_host(&mut self) -> u64 {
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        let alive: Vec<usize> = (0..self.table.procs.len()).filter(|&i| self.table.procs[i].alive()).collect();
        for &i in &alive {
            self.table.procs[i].paused = None;
        }
        for i in alive {
            self.signal(i, Signal::SIGKILL, "host-death", id);
        }
        // the host's link proxy dies with it (its threads and sockets are the host's)
        self.stop_proxy();
        self.dead = true;
        id
    }

    /// Fewest checkpoints among the unfinished handoffs (None: all ended).
    pub fn least_progress(&self) -> Option<i64> {
        self.unfinished().iter().map(|(_, h)| self.snap.ckpts.get(h).copied().unwrap_or(0)).min()
    }

    /// The host's handoffs that had not ended when it died (from the
    /// monitor's last look at its store).
    pub fn unfinished(&self) -> Vec<(usize, String)> {
        self.hids
            .iter()
            .enumerate()
            .filter(|(_, h)| !self.snap.status.get(*h).is_some_and(|s| terminal(s)))
            .map(|(i, h)| (i, h.clone()))
            .collect()
    }

    /// Python workers with pause points SIGSTOP themselves; notice it
    /// (process state `T` in /proc) and treat them like injected pauses.
    pub(super) fn notice_self_pauses(&mut self) {
        if self.cfg.pause_points.is_empty() {
            return;
        }
        let mut found = Vec::new();
        for (i, p) in self.table.procs.iter().enumerate() {
            if p.role == Role::Worker && p.imp == "python" && p.active() && stopped(p.pid) {
                found.push(i);
            }
        }
        for i in found {
            let lease = self.lease_of(&self.table.procs[i]);
            let t = hist::now();
            self.fault_id += 1;
            self.live.faults += 1;
            self.live.pauses += 1;
            let p = &mut self.table.procs[i];
            p.paused = Some((t, lease));
            let (name, pid, hid) = (p.name.clone(), p.pid, p.hid.clone());
            self.hist.record_at(
                t,
                "fault",
                json!({"fault_id": self.fault_id, "kind": "pause-point", "signal": "STOP", "victim": name, "victim_pid": pid,
                       "role": "worker", "hid": hid, "lease_fence": lease, "leader": false, "self": true}),
            );
        }
    }

    /// SIGCONT paused workers once they were replaced (or at the latest
    /// after `pause_max_s`, or when their handoff ended).
    pub(super) fn wake(&mut self, all: bool) {
        let now = hist::now();
        let mut wake = Vec::new();
        for (i, p) in self.table.procs.iter().enumerate() {
            let Some((t, fence)) = p.paused else { continue };
            if !p.alive() {
                continue;
            }
            let hid = p.hid.clone().unwrap_or_default();
            let st = self.snap.status.get(&hid).map(String::as_str).unwrap_or("");
            let replaced = self
                .snap
                .own
                .get(&hid)
                .is_some_and(|(h, f)| h != ORPHANED && h != &p.name && fence.is_some_and(|pf| *f > pf));
            let reason = if all {
                Some("drain")
            } else if terminal(st) {
                Some("terminal")
            } else if now - t >= self.cfg.pause_max_s {
                Some("timeout")
            } else if replaced {
                let at = *self.resume_at.entry(i).or_insert_with(|| now + self.rng_misc.gen_range(0.0..=0.15));
                (now >= at).then_some("replaced")
            } else {
                None
            };
            if let Some(r) = reason {
                wake.push((i, r));
            }
        }
        for (i, reason) in wake {
            self.resume_at.remove(&i);
            let id = self.fault_id;
            if self.signal(i, Signal::SIGCONT, "resume", id) {
                if reason == "replaced" {
                    let name = self.table.procs[i].name.clone();
                    self.steer.woken_replaced(&name, hist::now());
                }
                self.hist.record("resume", json!({"victim": self.table.procs[i].name, "reason": reason}));
            }
        }
    }
}

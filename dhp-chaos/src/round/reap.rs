//! Reaping exited processes and provisioning replacements (recovery
//! workers for orphans, supervisors).

use super::*;

impl Driver<'_> {
    /// Reap exits; classify failpoint self-kills; schedule replacement supervisors.
    pub(super) fn reap(&mut self, replace_supervisors: bool) -> Result<()> {
        let mut events = Vec::new();
        let mut starts = Vec::new();
        // Every exit not yet in the history, whoever reaped it: a child that
        // died (say by its own failpoint) just before the injector picked it
        // is reaped inside `Proc::signal`, and teardown reaps the rest.
        for (i, e) in self.table.reap_exits() {
            let p = &self.table.procs[i];
            let fired = p.signal_is_kill(&e) && !p.killed_by_harness && p.failpoint_fired();
            starts.push((i, e.clone(), fired));
            events.push((p.name.clone(), p.pid, p.role, p.hid.clone(), p.failpoint.clone(), e, fired, p.imp.clone()));
        }
        for (name, pid, role, hid, fp, e, fired, imp) in events {
            self.hist.record_at(
                e.t,
                "exit",
                json!({"name": name, "exited_pid": pid, "role": role, "hid": hid, "code": e.code, "signal": e.signal,
                       "failpoint_fired": fired, "stopped": e.stopped}),
            );
            if fired {
                self.fault_id += 1;
                self.live.kills += 1;
                self.live.failpoint_kills += 1;
                let lease = hid.as_ref().and_then(|h| self.snap.own.get(h)).filter(|o| o.0 == name).map(|o| o.1);
                self.hist.record_at(
                    e.t,
                    "fault",
                    json!({"fault_id": self.fault_id, "kind": "failpoint",
                           "failpoint": fp.as_deref().map(|f| f.split('=').next().unwrap_or(f)), "spec": fp, "signal": "KILL",
                           "victim": name, "victim_pid": pid, "role": "worker", "hid": hid, "lease_fence": lease}),
                );
            }
            if role == Role::Worker && e.code == Some(2) && imp != "python" {
                bail!(
                    "worker {name} rejected its command line (exit 2); see {}",
                    self.paths.procs.join(format!("{name}.log")).display()
                );
            }
            if role == Role::Transport && replace_supervisors {
                let delay = self.rng_misc.gen_range(0.0..=self.cfg.supervisor_restart_max_s.max(0.0));
                self.transport_due = Some(hist::now() + delay);
            }
            if role == Role::Supervisor && replace_supervisors {
                let delay = self.rng_misc.gen_range(0.0..=self.cfg.supervisor_restart_max_s.max(0.0));
                self.sup_due.push(hist::now() + delay);
            }
        }
        // every exit is in the history before a respawn loop ends the round
        for (i, e, fired) in starts {
            self.check_start_death(i, &e, fired)?;
        }
        Ok(())
    }

    pub(super) fn provision(&mut self) -> Result<()> {
        // nothing can start while the database is down (db-crash): replacements
        // would only fail to connect, exit and be replaced again; after a
        // failover's promotion they start (writes may wait for a standby)
        if self.db_unwritable() {
            return Ok(());
        }
        let now = hist::now();
        // supervisors
        let alive = self.table.alive(Role::Supervisor).count() + self.sup_due.len();
        for _ in alive..self.cfg.supervisor_count as usize {
            self.sup_due.push(now);
        }
        let due: Vec<f64> = self.sup_due.iter().copied().filter(|t| *t <= now).collect();
        self.sup_due.retain(|t| *t > now);
        for _ in due {
            self.spawn_supervisor()?;
        }
        if self.transport_due.is_some_and(|t| t <= now) {
            self.transport_due = None;
            self.spawn_transport()?;
        }
        // workers
        for i in 0..self.hids.len() {
            let hid = self.hids[i].clone();
            let status = self.snap.status.get(&hid).cloned().unwrap_or_default();
            if terminal(&status) {
                continue;
            }
            if self.last_spawn.get(&hid).is_some_and(|t| now - t < 0.005) {
                continue;
            }
            let own = self.snap.own.get(&hid).cloned();
            let want = match (&own, status.as_str()) {
                (None, "pending") => {
                    let busy = self.table.procs.iter().any(|p| {
                        p.active() && p.hid.as_deref() == Some(hid.as_str()) && p.mode.as_deref() == Some("claim")
                    });
                    (!busy).then_some(("claim", None))
                }
                (Some((holder, fence)), _) if holder == ORPHANED => {
                    let busy = self.table.procs.iter().any(|p| {
                        p.active() && p.hid.as_deref() == Some(hid.as_str()) && p.orphan_fence == Some(*fence)
                    });
                    (!busy).then_some(("recover", Some(*fence)))
                }
                _ => None,
            };
            if let Some((mode, fence)) = want {
                let n = if self.rng_spawn.gen_bool(self.cfg.race_rate.clamp(0.0, 1.0)) {
                    self.rng_spawn.gen_range(2..=3)
                } else {
                    1
                };
                let n = self.steered_racers(n, mode, &hid);
                if n > 1 {
                    self.hist
                        .record("provision", json!({"hid": hid, "mode": mode, "racers": n, "orphan_fence": fence}));
                }
                for _ in 0..n {
                    self.spawn_worker(i, mode, fence)?;
                }
            }
        }
        Ok(())
    }
}

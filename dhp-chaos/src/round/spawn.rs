//! Starting processes: dispatching the handoffs, workers (builtin, reference
//! or a command; failpoints and pause points armed), supervisors and the TCP
//! transport server.

use super::*;

impl Driver<'_> {
    /// Dispatch the census handoffs with `dhp dispatch`.
    pub(super) fn dispatch(&mut self) -> Result<()> {
        let mut dlq: Vec<u32> = (0..self.cfg.handoffs).collect();
        dlq.shuffle(&mut self.rng_misc);
        dlq.truncate(self.cfg.dlq_handoffs as usize);
        for i in 0..self.cfg.handoffs {
            let (lo, hi) = self.cfg.lo_hi(i);
            let max_att = if dlq.contains(&i) { self.cfg.dlq_max_attempts } else { self.cfg.max_attempts };
            let hid = procs::dispatch_census(&self.cfg.dhp, self.store_arg(), (lo, hi), self.cfg.chunk, max_att)?;
            self.hist.record(
                "dispatch",
                json!({"hid": hid, "index": i, "lo": lo, "hi": hi, "chunk": self.cfg.chunk, "max_attempts": max_att}),
            );
            if dlq.contains(&i) {
                self.steer.dlq_hids.insert(hid.clone());
            }
            self.tasks.insert(hid.clone(), (lo, hi, self.cfg.chunk));
            self.hids.push(hid);
        }
        self.open_monitor()
    }

    /// Open the monitor's read-only connection and the write-lock probe.
    pub(super) fn open_monitor(&mut self) -> Result<()> {
        if self.cfg.pg_url.is_some() {
            self.pg_reconnect();
            return Ok(());
        }
        let db = Connection::open_with_flags(
            self.paths.store.join("dhp.sqlite3"),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        db.busy_timeout(Duration::from_millis(500))?;
        self.db = Some(db);
        let probe = Connection::open_with_flags(
            self.paths.store.join("dhp.sqlite3"),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        probe.busy_timeout(Duration::ZERO)?;
        self.probe = Some(probe);
        Ok(())
    }

    /// The history file a process under test is given: the round's
    /// `history.jsonl`, or `/dev/null` with `--impl-history off`.
    fn impl_history_path(&self) -> String {
        if self.cfg.impl_history {
            self.paths.history.display().to_string()
        } else {
            "/dev/null".into()
        }
    }

    pub(super) fn worker_impl(&mut self) -> String {
        match &self.cfg.workers {
            Impl::Builtin => "builtin".into(),
            Impl::Python => "python".into(),
            Impl::Mixed => if self.rng_spawn.gen_bool(0.5) { "builtin" } else { "python" }.into(),
            Impl::Cmd(_) => "cmd".into(),
        }
    }

    pub(super) fn pick_failpoint(&mut self, hid: &str) -> Option<String> {
        if !self.rng_spawn.gen_bool(self.cfg.failpoint_rate.clamp(0.0, 1.0)) {
            return None;
        }
        let done = self.snap.ckpts.get(hid).copied().unwrap_or(0).max(0) as u64;
        let remaining = self.cfg.chunks.saturating_sub(done).max(1);
        let name = if remaining <= 8 && self.rng_spawn.gen_bool(0.5) {
            *[FAILPOINTS[3], FAILPOINTS[4]].choose(&mut self.rng_spawn).expect("non-empty")
        } else {
            *FAILPOINTS.choose(&mut self.rng_spawn).expect("non-empty")
        };
        let n = match name {
            "checkpoint.in_tx" | "ship.after_commit" => self.rng_spawn.gen_range(1..=remaining.min(20)),
            "heartbeat" => self.rng_spawn.gen_range(1..=40),
            _ => 1,
        };
        Some(format!("{name}=kill@{n}"))
    }

    pub(super) fn spawn_worker(&mut self, hid_idx: usize, mode: &str, orphan_fence: Option<i64>) -> Result<()> {
        let hid = self.hids[hid_idx].clone();
        self.worker_n += 1;
        let name = format!("w{:04}-h{}", self.worker_n, hid_idx);
        let imp = self.worker_impl();
        let ship = self.paths.transport.join(format!("{hid}.log")).display().to_string();
        let history = self.impl_history_path();
        let pace = self.cfg.pace_s.to_string();
        let mut env = self.env();
        if let Some(w) = &self.workload {
            // this process's own: the service knows who asks by it
            env.push((crate::workload::CREDENTIAL_ENV.into(), w.credential_for(&name)));
        }
        let mut failpoint = None;
        let argv: Vec<String> = match imp.as_str() {
            "builtin" => {
                failpoint = self.pick_failpoint(&hid);
                if let Some(fp) = &failpoint {
                    env.push(("DHP_FAILPOINTS".into(), fp.clone()));
                } else if self.stall_path() {
                    // db-stall can only catch a worker inside a multi-statement checkpoint
                    env.push(("DHP_FAILPOINTS".into(), db_faults::IN_TX_PATH.into()));
                }
                let dhp = vec![self.cfg.dhp.display().to_string(), "work".into()];
                let mut a = self.work_args(dhp, &name, mode, &hid, pace, history, ship)?;
                if !self.cfg.liveness {
                    a.push("--no-liveness".into());
                }
                a
            }
            "python" => {
                if !self.cfg.pause_points.is_empty() {
                    env.push(("DHP_CHAOS_PAUSE_POINTS".into(), self.cfg.pause_points.clone()));
                    env.push(("DHP_CHAOS_PAUSE_SEED".into(), self.rng_spawn.gen::<u32>().to_string()));
                    failpoint = Some(format!("pause-points:{}", self.cfg.pause_points));
                }
                let py = self.py.as_ref().context("python environment missing")?;
                vec![
                    py.python.display().to_string(),
                    py.shim.display().to_string(),
                    "worker".into(),
                    history,
                    name.clone(),
                    py.driver.display().to_string(),
                    "--root".into(),
                    self.store_arg(),
                    "--runner".into(),
                    name.clone(),
                    "--chunk".into(),
                    self.cfg.chunk.to_string(),
                    "--pace".into(),
                    pace,
                    "--ship".into(),
                    ship,
                    mode.into(),
                    hid.clone(),
                ]
            }
            _ => {
                let Impl::Cmd(cmd) = &self.cfg.workers else { unreachable!("cmd impl only from Impl::Cmd") };
                // a command speaks `dhp work`'s flags, shipping included
                self.work_args(cmd.clone(), &name, mode, &hid, pace, history, ship)?
            }
        };
        let argv = self.in_host(argv);
        let skew = self.clock_env(&mut env);
        let p = procs::spawn(
            Spec {
                name: name.clone(),
                role: Role::Worker,
                imp: imp.clone(),
                argv,
                env,
                hid: Some(hid.clone()),
                mode: Some(mode.into()),
                orphan_fence,
                failpoint: failpoint.clone(),
            },
            &self.paths.procs,
        )?;
        let mut rec = json!({"name": name, "spawned_pid": p.pid, "role": "worker", "impl": imp, "hid": hid, "mode": mode,
                   "orphan_fence": orphan_fence, "failpoint": failpoint});
        merge(&mut rec, clock::spawn_fields(skew));
        self.hist.record("spawn", rec);
        self.table.procs.push(p);
        self.live.spawned_workers += 1;
        self.last_spawn.insert(hid, hist::now());
        Ok(())
    }

    /// `prefix` (the `dhp work` command, or a command taking its flags)
    /// followed by the store, runner, mode, handoff, pacing, history and
    /// shipping flags every worker gets.
    #[allow(clippy::too_many_arguments)]
    fn work_args(
        &self,
        mut prefix: Vec<String>,
        name: &str,
        mode: &str,
        hid: &str,
        pace: String,
        history: String,
        ship: String,
    ) -> Result<Vec<String>> {
        prefix.extend([
            // through the database link proxy when there is one (db-link)
            self.worker_store_arg()?,
            "--runner".into(),
            name.to_string(),
            mode.into(),
            hid.to_string(),
            "--pace".into(),
            pace,
            "--history".into(),
            history,
        ]);
        // through the link proxy when there is one
        prefix.extend(self.ship_args(ship)?);
        Ok(prefix)
    }

    /// How a command worker ships: `--ship LOG`, or the TCP flags of `dhp work`.
    fn ship_args(&self, log: String) -> Result<Vec<String>> {
        if !self.cfg.ship.is_tcp() {
            return Ok(vec!["--ship".into(), log]);
        }
        let mut a = vec![
            "--ship-to".into(),
            self.ship_addr()?,
            "--ship-buffer".into(),
            format!("{}/", self.paths.transport.display()),
        ];
        if self.cfg.ship == crate::config::Ship::TcpAsync {
            a.extend([
                "--ship-mode".into(),
                "async".into(),
                "--ship-max-lag".into(),
                self.cfg.ship_max_lag.to_string(),
            ]);
        }
        Ok(a)
    }

    pub(super) fn spawn_supervisor(&mut self) -> Result<()> {
        self.sup_n += 1;
        let name = format!("sup{}", self.sup_n);
        let secs = (self.cfg.fault_seconds + self.cfg.grace_seconds + 120.0).to_string();
        let history = self.impl_history_path();
        let py =
            self.py.as_ref().map(|p| procs::PySupervisor { python: &p.python, shim: &p.shim, supwatch: &p.supwatch });
        let (imp, argv) =
            procs::supervisor_argv(&self.cfg.supervisors, &self.cfg.dhp, py, self.store_arg(), &name, secs, history)?;
        let argv = self.in_host(argv);
        let mut env = self.env();
        let skew = self.clock_env(&mut env);
        let p = procs::spawn(Spec::service(name.clone(), Role::Supervisor, imp, argv, env), &self.paths.procs)?;
        let mut rec = json!({"name": name, "spawned_pid": p.pid, "role": "supervisor", "impl": imp});
        if let Some(sk) = skew {
            self.sup_skews.insert(name.clone(), (hist::now(), sk));
        }
        merge(&mut rec, clock::spawn_fields(skew));
        self.hist.record("spawn", rec);
        self.table.procs.push(p);
        self.live.spawned_supervisors += 1;
        Ok(())
    }

    /// Start the TCP transport server (first on a free port, later on the
    /// same port) and wait until it listens.
    pub(super) fn spawn_transport(&mut self) -> Result<()> {
        self.sup_n += 1;
        let name = format!("transport{}", self.sup_n);
        let mut argv = match &self.cfg.transport {
            Some(cmd) => cmd.clone(),
            None => vec![self.cfg.dhp.display().to_string(), "transport".into()],
        };
        match &self.cfg.host {
            // its own address and a fixed port: every namespace has its own ports
            Some(h) => argv.extend([
                self.paths.received.display().to_string(),
                "--host".into(),
                h.addr.clone(),
                "--port".into(),
                crate::hosts::PORT.to_string(),
            ]),
            None => argv.extend([
                self.paths.peer.display().to_string(),
                "--port".into(),
                self.port.unwrap_or(0).to_string(),
            ]),
        }
        let argv = self.in_host(argv);
        let p =
            procs::spawn(Spec::service(name.clone(), Role::Transport, "builtin", argv, self.env()), &self.paths.procs)?;
        let (pid, log) = (p.pid, p.log.clone());
        self.table.procs.push(p);
        let idx = self.table.procs.len() - 1;
        if self.cfg.host.is_some() {
            // a fixed port under --hosts: no need to wait for it to listen
            // (shippers connect lazily and retry; a failed start is reaped
            // and restarted like a killed server) — the multi-host loop must
            // not stall other hosts' reaping
            self.port = Some(crate::hosts::PORT);
            self.hist.record(
                "spawn",
                json!({"name": name, "spawned_pid": pid, "role": "transport", "impl": "builtin", "port": self.port}),
            );
            return Ok(());
        }
        let deadline = hist::now() + 10.0;
        loop {
            // keep reaping while we wait: a death during a slow start-up is
            // recorded when it happens, not after (the checker compares times)
            self.reap(true)?;
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(rest) = text.split("listening on ").nth(1) {
                let addr = rest.split(|c: char| c == ',' || c.is_whitespace()).next().unwrap_or("");
                let port: u16 =
                    addr.rsplit(':').next().and_then(|p| p.parse().ok()).context("transport server printed no port")?;
                self.port = Some(port);
                break;
            }
            if let Some(e) = self.table.procs[idx].exited.clone() {
                // `reap` recorded the exit and scheduled a restart
                if self.port.is_some() {
                    // port still in use (TIME_WAIT or the old server lingering): retry later
                    self.transport_due.get_or_insert(hist::now() + 0.05);
                    return Ok(());
                }
                bail!("dhp transport exited at start-up ({}): {}", exit_text(&e), text.trim());
            }
            if hist::now() > deadline {
                bail!("dhp transport did not start listening within 10 s: {}", text.trim());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.hist.record(
            "spawn",
            json!({"name": name, "spawned_pid": pid, "role": "transport", "impl": "builtin", "port": self.port}),
        );
        Ok(())
    }
}

/// Add `extra`'s fields to the object `rec`.
fn merge(rec: &mut Value, extra: Value) {
    if let (Some(m), Value::Object(e)) = (rec.as_object_mut(), extra) {
        m.extend(e);
    }
}

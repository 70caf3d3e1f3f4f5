//! One chaos round: dispatch M census handoffs, start real supervisor and
//! worker processes, and run the event loop — reaper, store monitor,
//! provisioner, seeded fault injector, zombie waker — until every handoff
//! has ended (or the time budget runs out). Everything that happens is
//! appended to `history.jsonl`; the checker runs afterwards, from files only.

use crate::config::{FaultKind, Impl, RoundConfig, FAILPOINTS};
use crate::hist::{self, Writer};
use crate::procs::{self, Proc, Role, Spec, Table};
use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const ORPHANED: &str = "__orphaned__";
/// How often the event loop runs.
const TICK: Duration = Duration::from_millis(3);

/// Paths inside a round directory.
#[derive(Debug, Clone)]
pub struct Paths {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub transport: PathBuf,
    pub procs: PathBuf,
    pub history: PathBuf,
    pub meta: PathBuf,
    /// The TCP transport server's log directory (the peer) in `--ship tcp` rounds.
    pub peer: PathBuf,
}

impl Paths {
    pub fn new(dir: &Path) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            store: dir.join("store"),
            transport: dir.join("transport"),
            procs: dir.join("procs"),
            history: dir.join("history.jsonl"),
            meta: dir.join("round.json"),
            peer: dir.join("peer"),
        }
    }
}

/// The reference's scripts and the shim, for python workers/supervisors.
#[derive(Debug, Clone)]
struct PyEnv {
    python: PathBuf,
    shim: PathBuf,
    driver: PathBuf,
    supwatch: PathBuf,
}

/// Live counters for the progress line.
#[derive(Debug, Default, Clone)]
pub struct Live {
    pub kills: u64,
    pub faults: u64,
    pub pauses: u64,
    pub failpoint_kills: u64,
    pub terminal: usize,
    pub spawned_workers: u64,
    pub spawned_supervisors: u64,
}

/// The store as the monitor last saw it.
#[derive(Debug, Default, Clone)]
struct Snapshot {
    status: HashMap<String, String>,
    /// hid → (holder, fence)
    own: HashMap<String, (String, i64)>,
    leader: Option<String>,
    /// hid → number of checkpoints
    ckpts: HashMap<String, i64>,
}

fn terminal(status: &str) -> bool {
    status == "completed" || status == "failed"
}

pub struct Driver<'a> {
    cfg: &'a RoundConfig,
    pub paths: Paths,
    /// Fault schedule: kinds, times, victims. A stream of its own, so the
    /// kinds and times of faults replay exactly for a seed whatever else happens.
    rng: StdRng,
    /// Victim choice among the eligible processes (its draws depend on how
    /// many are eligible, so it is kept apart from the kind/time stream).
    rng_victim: StdRng,
    /// Spawn decisions: implementation (mixed), failpoints, racing recoverers, pause-point seeds.
    rng_spawn: StdRng,
    /// Delays: replacement start-up, zombie wake-up, DLQ handoff choice.
    rng_misc: StdRng,
    hist: Writer,
    table: Table,
    db: Option<Connection>,
    hids: Vec<String>,
    t0: f64,
    snap: Snapshot,
    next_fault: f64,
    fault_id: u64,
    worker_n: u32,
    sup_n: u32,
    sup_due: Vec<f64>,
    resume_at: HashMap<usize, f64>,
    last_spawn: HashMap<String, f64>,
    py: Option<PyEnv>,
    /// TCP transport server port once known.
    port: Option<u16>,
    transport_due: Option<f64>,
    token: String,
    /// Store commit monitor: last `PRAGMA data_version` and when it changed.
    data_version: Option<(i64, f64)>,
    stall_since: Option<f64>,
    /// Read-write connection used only to probe whether the write lock is held.
    probe: Option<Connection>,
    last_probe: f64,
    pub live: Live,
}

impl<'a> Driver<'a> {
    pub fn new(cfg: &'a RoundConfig, dir: &Path) -> Result<Driver<'a>> {
        let paths = Paths::new(dir);
        for d in [&paths.dir, &paths.store, &paths.transport, &paths.procs] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let py = if cfg.workers.uses_python() || cfg.supervisors.uses_python() {
            let python = cfg.python.clone().context("python workers/supervisors need an interpreter (--python)")?;
            let refdir =
                cfg.reference_dir.clone().context("python workers/supervisors need the reference's directory")?;
            let shim = paths.dir.join("chaos_shim.py");
            std::fs::write(&shim, crate::python::SHIM)?;
            Some(PyEnv {
                python,
                shim,
                driver: refdir.join("work_driver4.py"),
                supwatch: refdir.join("supervisor3_watch.py"),
            })
        } else {
            None
        };
        Ok(Driver {
            cfg,
            hist: Writer::open(&paths.history)?,
            paths,
            rng: StdRng::seed_from_u64(cfg.seed),
            rng_victim: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0003),
            rng_spawn: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0001),
            rng_misc: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0002),
            table: Table::default(),
            db: None,
            hids: Vec::new(),
            t0: 0.0,
            snap: Snapshot::default(),
            next_fault: 0.0,
            fault_id: 0,
            worker_n: 0,
            sup_n: 0,
            sup_due: Vec::new(),
            resume_at: HashMap::new(),
            last_spawn: HashMap::new(),
            py,
            port: None,
            transport_due: None,
            token: format!("chaos-{:016x}", cfg.seed),
            data_version: None,
            stall_since: None,
            probe: None,
            last_probe: 0.0,
            live: Live::default(),
        })
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut e = self.cfg.timing.env();
        e.push(("DHP_LOG".into(), "warn".into()));
        e.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        if self.cfg.ship.is_tcp() {
            e.push(("DHP_TRANSPORT_TOKEN".into(), self.token.clone()));
        }
        e
    }

    fn store_arg(&self) -> String {
        self.paths.store.display().to_string()
    }

    /// Dispatch the census handoffs with `dhp dispatch`.
    fn dispatch(&mut self) -> Result<()> {
        let mut dlq: Vec<u32> = (0..self.cfg.handoffs).collect();
        dlq.shuffle(&mut self.rng_misc);
        dlq.truncate(self.cfg.dlq_handoffs as usize);
        for i in 0..self.cfg.handoffs {
            let (lo, hi) = self.cfg.lo_hi(i);
            let max_att = if dlq.contains(&i) { self.cfg.dlq_max_attempts } else { self.cfg.max_attempts };
            let out = std::process::Command::new(&self.cfg.dhp)
                .arg("--json")
                .arg("dispatch")
                .arg("--create")
                .arg(&self.paths.store)
                .arg("--census")
                .arg(format!("{lo},{hi},{}", self.cfg.chunk))
                .arg("--max-attempts")
                .arg(max_att.to_string())
                .arg("--created-by")
                .arg("dhp-chaos")
                .output()
                .with_context(|| format!("running {} dispatch", self.cfg.dhp.display()))?;
            if !out.status.success() {
                bail!("dhp dispatch failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let v: Value = serde_json::from_slice(&out.stdout).context("dhp dispatch --json output")?;
            let hid = v["hid"].as_str().context("dhp dispatch printed no hid")?.to_string();
            self.hist.record(
                "dispatch",
                json!({"hid": hid, "index": i, "lo": lo, "hi": hi, "chunk": self.cfg.chunk, "max_attempts": max_att}),
            );
            self.hids.push(hid);
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

    fn worker_impl(&mut self) -> String {
        match &self.cfg.workers {
            Impl::Builtin => "builtin".into(),
            Impl::Python => "python".into(),
            Impl::Mixed => if self.rng_spawn.gen_bool(0.5) { "builtin" } else { "python" }.into(),
            Impl::Cmd(_) => "cmd".into(),
        }
    }

    fn pick_failpoint(&mut self, hid: &str) -> Option<String> {
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

    fn spawn_worker(&mut self, hid_idx: usize, mode: &str, orphan_fence: Option<i64>) -> Result<()> {
        let hid = self.hids[hid_idx].clone();
        self.worker_n += 1;
        let name = format!("w{:04}-h{}", self.worker_n, hid_idx);
        let imp = self.worker_impl();
        let ship = self.paths.transport.join(format!("{hid}.log")).display().to_string();
        let history = self.paths.history.display().to_string();
        let pace = self.cfg.pace_s.to_string();
        let mut env = self.env();
        let mut failpoint = None;
        let argv: Vec<String> = match imp.as_str() {
            "builtin" => {
                failpoint = self.pick_failpoint(&hid);
                if let Some(fp) = &failpoint {
                    env.push(("DHP_FAILPOINTS".into(), fp.clone()));
                }
                let mut a = vec![
                    self.cfg.dhp.display().to_string(),
                    "work".into(),
                    self.store_arg(),
                    "--runner".into(),
                    name.clone(),
                    mode.into(),
                    hid.clone(),
                    "--pace".into(),
                    pace,
                    "--history".into(),
                    history,
                ];
                if self.cfg.ship.is_tcp() {
                    let port = self.port.context("transport server port unknown")?;
                    // the local buffer log is the one the file mode writes
                    a.extend([
                        "--ship-to".into(),
                        format!("127.0.0.1:{port}"),
                        "--ship-buffer".into(),
                        format!("{}/", self.paths.transport.display()),
                    ]);
                    if self.cfg.ship == crate::config::Ship::TcpAsync {
                        a.extend(["--ship-mode".into(), "async".into()]);
                    }
                } else {
                    a.extend(["--ship".into(), ship]);
                }
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
                let mut a = cmd.clone();
                a.extend([
                    self.store_arg(),
                    "--runner".into(),
                    name.clone(),
                    mode.into(),
                    hid.clone(),
                    "--ship".into(),
                    ship,
                    "--pace".into(),
                    pace,
                    "--history".into(),
                    history,
                ]);
                a
            }
        };
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
        self.hist.record(
            "spawn",
            json!({"name": name, "spawned_pid": p.pid, "role": "worker", "impl": imp, "hid": hid, "mode": mode,
                   "orphan_fence": orphan_fence, "failpoint": failpoint}),
        );
        self.table.procs.push(p);
        self.live.spawned_workers += 1;
        self.last_spawn.insert(hid, hist::now());
        Ok(())
    }

    fn spawn_supervisor(&mut self) -> Result<()> {
        self.sup_n += 1;
        let name = format!("sup{}", self.sup_n);
        let secs = (self.cfg.fault_seconds + self.cfg.grace_seconds + 120.0).to_string();
        let history = self.paths.history.display().to_string();
        let (imp, argv) = match &self.cfg.supervisors {
            Impl::Builtin | Impl::Mixed => (
                "builtin",
                vec![
                    self.cfg.dhp.display().to_string(),
                    "supervisor".into(),
                    self.store_arg(),
                    name.clone(),
                    secs,
                    "--history".into(),
                    history,
                ],
            ),
            Impl::Python => {
                let py = self.py.as_ref().context("python environment missing")?;
                (
                    "python",
                    vec![
                        py.python.display().to_string(),
                        py.shim.display().to_string(),
                        "supervisor".into(),
                        history,
                        name.clone(),
                        py.supwatch.display().to_string(),
                        self.store_arg(),
                        name.clone(),
                        secs,
                    ],
                )
            }
            Impl::Cmd(cmd) => {
                let mut a = cmd.clone();
                a.extend([self.store_arg(), name.clone(), secs, "--history".into(), history]);
                ("cmd", a)
            }
        };
        let p = procs::spawn(Spec::service(name.clone(), Role::Supervisor, imp, argv, self.env()), &self.paths.procs)?;
        self.hist.record("spawn", json!({"name": name, "spawned_pid": p.pid, "role": "supervisor", "impl": imp}));
        self.table.procs.push(p);
        self.live.spawned_supervisors += 1;
        Ok(())
    }

    /// Start the TCP transport server (first on a free port, later on the
    /// same port) and wait until it listens.
    fn spawn_transport(&mut self) -> Result<()> {
        self.sup_n += 1;
        let name = format!("transport{}", self.sup_n);
        let argv = vec![
            self.cfg.dhp.display().to_string(),
            "transport".into(),
            self.paths.peer.display().to_string(),
            "--port".into(),
            self.port.unwrap_or(0).to_string(),
        ];
        let p =
            procs::spawn(Spec::service(name.clone(), Role::Transport, "builtin", argv, self.env()), &self.paths.procs)?;
        let (pid, log) = (p.pid, p.log.clone());
        self.table.procs.push(p);
        let idx = self.table.procs.len() - 1;
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

    /// Read statuses, ownership, leadership; record what changed.
    fn monitor(&mut self) {
        let Some(db) = &self.db else { return };
        let read = || -> rusqlite::Result<Snapshot> {
            let mut s = Snapshot::default();
            let mut st =
                db.prepare_cached("SELECT hid, json_extract(envelope_json, '$.execution.status') FROM handoffs")?;
            for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))? {
                let (h, s2) = r?;
                s.status.insert(h, s2.unwrap_or_default());
            }
            let mut st = db.prepare_cached("SELECT hid, holder, fence FROM ownership")?;
            for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))? {
                let (h, holder, fence) = r?;
                s.own.insert(h, (holder, fence));
            }
            let mut st = db.prepare_cached("SELECT holder, expires_at FROM leadership WHERE id = 1")?;
            let now = hist::now();
            for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))? {
                let (holder, exp) = r?;
                if exp >= now {
                    s.leader = Some(holder);
                }
            }
            let mut st = db.prepare_cached("SELECT hid, MAX(seq) + 1 FROM checkpoints GROUP BY hid")?;
            for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
                let (h, n) = r?;
                s.ckpts.insert(h, n);
            }
            Ok(s)
        };
        let dv: Option<i64> = db.query_row("PRAGMA data_version", [], |r| r.get(0)).ok();
        let Ok(new) = read() else { return };
        let now = hist::now();
        if let Some(dv) = dv {
            match self.data_version {
                Some((old, _)) if old == dv => {}
                _ => {
                    self.data_version = Some((dv, now));
                    if let Some(since) = self.stall_since.take() {
                        self.hist.record(
                            "observe",
                            json!({"what": "store-stall", "since": since, "until": now, "seconds": now - since}),
                        );
                    }
                }
            }
        }
        // No commit by anyone for 250 ms while a worker is SIGSTOPped (leaders
        // renew every scan, workers heartbeat every lease_interval/2, so a live
        // store commits often): probe whether someone holds the write lock —
        // BEGIN IMMEDIATE with no busy wait, rolled back at once, at most every 50 ms.
        if self.stall_since.is_none() {
            if let Some((_, changed)) = self.data_version {
                let quiet = 0.25_f64.max(self.cfg.timing.supervisor_scan_s * 2.5);
                if now - changed > quiet
                    && now - self.last_probe > 0.05
                    && self.table.procs.iter().any(|p| p.paused.is_some() && p.alive())
                {
                    self.last_probe = now;
                    if let Some(probe) = &self.probe {
                        match probe.execute_batch("BEGIN IMMEDIATE") {
                            Ok(()) => {
                                let _ = probe.execute_batch("ROLLBACK");
                            }
                            Err(_) => self.stall_since = Some(changed),
                        }
                    }
                }
            }
        }
        for hid in &self.hids {
            let st = new.status.get(hid).cloned().unwrap_or_default();
            let own = new.own.get(hid).cloned();
            if self.snap.status.get(hid) != Some(&st) || self.snap.own.get(hid) != own.as_ref() {
                self.hist.record(
                    "observe",
                    json!({"what": "handoff", "hid": hid, "status": st,
                           "holder": own.as_ref().map(|o| o.0.clone()), "fence": own.as_ref().map(|o| o.1)}),
                );
            }
        }
        if new.leader != self.snap.leader {
            self.hist.record("observe", json!({"what": "leader", "holder": new.leader}));
        }
        self.live.terminal = self.hids.iter().filter(|h| new.status.get(*h).is_some_and(|s| terminal(s))).count();
        self.snap = new;
    }

    /// Reap exits; classify failpoint self-kills; schedule replacement supervisors.
    fn reap(&mut self, replace_supervisors: bool) -> Result<()> {
        let mut events = Vec::new();
        // Every exit not yet in the history, whoever reaped it: a child that
        // died (say by its own failpoint) just before the injector picked it
        // is reaped inside `Proc::signal`, and teardown reaps the rest.
        for (i, e) in self.table.reap_exits() {
            let p = &self.table.procs[i];
            let fired = p.signal_is_kill(&e) && !p.killed_by_harness && p.failpoint_fired();
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
        Ok(())
    }

    fn provision(&mut self) -> Result<()> {
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

    fn lease_of(&self, p: &Proc) -> Option<i64> {
        let hid = p.hid.as_ref()?;
        self.snap.own.get(hid).filter(|o| o.0 == p.name).map(|o| o.1)
    }

    fn signal(&mut self, idx: usize, sig: Signal, kind: &str, fault_id: u64) -> bool {
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

    fn pick_kind(&mut self) -> FaultKind {
        let total: f64 = self.cfg.fault_mix.iter().map(|(_, w)| w).sum();
        let mut x = self.rng.gen_range(0.0..total);
        for (k, w) in &self.cfg.fault_mix {
            if x < *w {
                return *k;
            }
            x -= w;
        }
        self.cfg.fault_mix.last().map(|(k, _)| *k).unwrap_or(FaultKind::KillWorker)
    }

    fn inject(&mut self) {
        let now = hist::now();
        if now < self.next_fault {
            return;
        }
        let (a, b) = self.cfg.fault_interval_s;
        // scheduled from the previous fault's planned time, not from now: fault
        // times are t0 + the seeded intervals, late by at most a loop tick
        self.next_fault = self.next_fault.max(now - b) + if b > a { self.rng.gen_range(a..=b) } else { a };
        let kind = self.pick_kind();
        let workers: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| self.table.procs[i].role == Role::Worker && self.table.procs[i].active())
            .collect();
        let sups: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| self.table.procs[i].role == Role::Supervisor && self.table.procs[i].alive())
            .collect();
        let leader: Option<usize> =
            sups.iter().copied().find(|&i| self.snap.leader.as_deref() == Some(self.table.procs[i].name.as_str()));
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
                let pool = if !stopped.is_empty() && self.rng_victim.gen_bool(0.5) { &stopped } else { &workers };
                if let Some(&i) = pool.choose(&mut self.rng_victim) {
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
        }
        if victims.is_empty() {
            return;
        }
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        for (i, sig) in victims {
            self.signal(i, sig, kind_name, id);
        }
    }

    /// Python workers with pause points SIGSTOP themselves; notice it
    /// (process state `T` in /proc) and treat them like injected pauses.
    fn notice_self_pauses(&mut self) {
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
    fn wake(&mut self, all: bool) {
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
                self.hist.record("resume", json!({"victim": self.table.procs[i].name, "reason": reason}));
            }
        }
    }

    fn all_terminal(&self) -> bool {
        !self.hids.is_empty() && self.hids.iter().all(|h| self.snap.status.get(h).is_some_and(|s| terminal(s)))
    }

    fn final_state(&self) -> Value {
        let mut m = BTreeMap::new();
        for h in &self.hids {
            let own = self.snap.own.get(h);
            let owner_alive =
                own.is_some_and(|(holder, _)| self.table.procs.iter().any(|p| &p.name == holder && p.alive()));
            m.insert(
                h.clone(),
                json!({"status": self.snap.status.get(h), "holder": own.map(|o| o.0.clone()),
                       "fence": own.map(|o| o.1), "owner_alive": owner_alive}),
            );
        }
        json!(m)
    }

    fn write_meta(&self, extra: Value) -> Result<()> {
        let mut meta = json!({
            "config": self.cfg,
            "hids": self.hids,
            "t0": self.t0,
            "harness_pid": std::process::id(),
        });
        if let (Some(m), Value::Object(e)) = (meta.as_object_mut(), extra) {
            m.extend(e);
        }
        std::fs::write(&self.paths.meta, serde_json::to_vec_pretty(&meta)?)?;
        Ok(())
    }

    /// Run the round to its end. `tick` is called every loop iteration
    /// (progress display).
    pub fn run(&mut self, mut tick: impl FnMut(&Live)) -> Result<()> {
        self.dispatch()?;
        self.t0 = self.hist.record("round", json!({"phase": "start", "seed": self.cfg.seed, "round": self.cfg.round}));
        self.write_meta(json!({}))?;
        if self.cfg.ship.is_tcp() {
            self.spawn_transport()?;
        }
        for _ in 0..self.cfg.supervisor_count {
            self.spawn_supervisor()?;
        }
        self.monitor();
        for i in 0..self.hids.len() {
            self.spawn_worker(i, "claim", None)?;
        }
        // first fault after one interval
        let (a, b) = self.cfg.fault_interval_s;
        self.next_fault = self.t0 + if b > a { self.rng.gen_range(a..=b) } else { a };
        let fault_end = self.t0 + self.cfg.fault_seconds;
        loop {
            self.reap(true)?;
            self.monitor();
            self.notice_self_pauses();
            self.wake(false);
            self.provision()?;
            if self.all_terminal() || hist::now() >= fault_end {
                break;
            }
            self.inject();
            tick(&self.live);
            std::thread::sleep(TICK);
        }
        let t_faults_end =
            self.hist.record("round", json!({"phase": "faults-stopped", "all_terminal": self.all_terminal()}));
        // drain: wake zombies, keep provisioning until all handoffs end
        let grace_end = hist::now() + self.cfg.grace_seconds;
        while !self.all_terminal() && hist::now() < grace_end {
            self.reap(true)?;
            self.monitor();
            self.notice_self_pauses();
            self.wake(true);
            self.provision()?;
            tick(&self.live);
            std::thread::sleep(TICK);
        }
        self.monitor();
        let fin = self.final_state();
        let all_terminal = self.all_terminal();
        self.hist.record("round", json!({"phase": "terminal", "all_terminal": all_terminal, "final": fin}));
        // let workers finish on their own (completers exit, zombies get fenced)
        self.wake(true);
        let drain_end = hist::now() + 5.0;
        while self.table.alive(Role::Worker).next().is_some() && hist::now() < drain_end {
            self.reap(false)?;
            std::thread::sleep(TICK);
        }
        for i in 0..self.table.procs.len() {
            if self.table.procs[i].role == Role::Worker && self.table.procs[i].alive() {
                self.signal(i, Signal::SIGKILL, "teardown", 0);
            }
        }
        // supervisors: SIGTERM → clean exit (resign), then SIGKILL stragglers
        for p in &mut self.table.procs {
            if (p.role == Role::Supervisor || p.role == Role::Transport) && p.alive() {
                p.signal(Signal::SIGTERM);
            }
        }
        let sup_end = hist::now() + 3.0;
        while self.table.procs.iter().any(Proc::alive) && hist::now() < sup_end {
            self.reap(false)?;
            std::thread::sleep(TICK);
        }
        for i in 0..self.table.procs.len() {
            if self.table.procs[i].alive() {
                self.signal(i, Signal::SIGKILL, "teardown", 0);
            }
        }
        self.table.kill_all();
        self.reap(false)?;
        if let Some(since) = self.stall_since.take() {
            self.hist.record(
                "observe",
                json!({"what": "store-stall", "since": since, "until": hist::now(), "seconds": hist::now() - since}),
            );
        }
        let t_end = self.hist.record("round", json!({"phase": "end"}));
        self.write_meta(
            json!({"t_faults_end": t_faults_end, "t_end": t_end, "final": fin, "all_terminal": all_terminal}),
        )?;
        Ok(())
    }
}

/// "exit code N" / "killed by signal N", for people.
fn exit_text(e: &procs::ExitInfo) -> String {
    match (e.code, e.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "unknown exit status".into(),
    }
}

/// Is the process stopped (state `T`)?
fn stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['T', 't'])))
        .unwrap_or(false)
}

impl Proc {
    fn signal_is_kill(&self, e: &procs::ExitInfo) -> bool {
        e.signal == Some(Signal::SIGKILL as i32)
    }

    /// The dhp binary prints `dhp: failpoint NAME fired` before killing itself.
    fn failpoint_fired(&self) -> bool {
        self.failpoint.is_some()
            && std::fs::read_to_string(&self.log)
                .map(|s| s.contains("failpoint") && s.contains("fired"))
                .unwrap_or(false)
    }
}

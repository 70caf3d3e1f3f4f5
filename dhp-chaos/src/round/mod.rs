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

mod at_commit;
mod audit;
mod chunk_stop;
mod clock;
pub mod db_auto;
pub mod db_failover;
pub mod db_faults;
mod db_link;
mod disk;
mod inject;
mod lazy_store;
mod link;
mod monitor;
mod reap;
mod spawn;
mod startup;
mod steer;
mod store_disk;
mod workload;

pub use disk::parse_size;
pub use store_disk::store_disk_checked;

/// The holder an orphaned handoff's ownership row names.
pub(crate) const ORPHANED: &str = "__orphaned__";
/// How often the event loop runs.
const TICK: Duration = Duration::from_millis(3);

/// Paths inside a round directory.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// The round directory itself.
    pub dir: PathBuf,
    /// The store: the SQLite file's directory, or a PostgreSQL round's export.
    pub store: PathBuf,
    /// The workers' transport logs (`--ship tcp`: their local buffers).
    pub transport: PathBuf,
    /// Every child's log, `<name>.log`.
    pub procs: PathBuf,
    /// `history.jsonl`, the round's history.
    pub history: PathBuf,
    /// `round.json`, the round's configuration and phase times.
    pub meta: PathBuf,
    /// The TCP transport server's log directory (the peer) in `--ship tcp` rounds.
    /// Under `--hosts` a symlink to the peer host's `received` directory.
    pub peer: PathBuf,
    /// Where this round's own transport server writes: `peer` on one host;
    /// under `--hosts`, `received` (the logs the previous host ships here).
    pub received: PathBuf,
    /// What the link proxy saw the transport server acknowledge (`--ship tcp`).
    pub proxy_record: PathBuf,
}

impl Paths {
    /// The layout of the round directory `dir` (nothing is created).
    pub fn new(dir: &Path) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            store: dir.join("store"),
            transport: dir.join("transport"),
            procs: dir.join("procs"),
            history: dir.join("history.jsonl"),
            meta: dir.join("round.json"),
            peer: dir.join("peer"),
            received: dir.join("received"),
            proxy_record: dir.join("proxy.jsonl"),
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
    /// Processes SIGKILLed by faults so far (failpoint self-kills included).
    pub kills: u64,
    /// Faults injected so far.
    pub faults: u64,
    /// Workers stopped so far (SIGSTOP, or a reference worker at a pause point).
    pub pauses: u64,
    /// Workers a failpoint killed so far.
    pub failpoint_kills: u64,
    /// Handoffs completed or failed, as the monitor last saw the store.
    pub terminal: usize,
    /// Worker processes spawned so far.
    pub spawned_workers: u64,
    /// Supervisor processes spawned so far.
    pub spawned_supervisors: u64,
}

/// The store as the monitor last saw it.
#[derive(Debug, Default, Clone)]
struct Snapshot {
    status: HashMap<String, String>,
    /// hid → (holder, fence)
    own: HashMap<String, (String, i64)>,
    leader: Option<String>,
    /// The leadership row (holder, `expires_at`) as stored; on SQLite the
    /// expiry is on the holder's clock, which may be faked.
    leadership: Option<(String, f64)>,
    /// hid → number of checkpoints
    ckpts: HashMap<String, i64>,
}

fn terminal(status: &str) -> bool {
    status == "completed" || status == "failed"
}

/// One round on one host: spawns the processes, injects the faults, records the history.
pub struct Driver<'a> {
    cfg: &'a RoundConfig,
    /// The round directory's layout.
    pub(crate) paths: Paths,
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
    /// Clock faults: which spawns get a faked clock, and its skew.
    rng_clock: StdRng,
    /// libfaketime, when clock faults are on.
    libfaketime: Option<PathBuf>,
    /// Supervisors started on a faked clock: name → (spawn time, skew).
    sup_skews: HashMap<String, (f64, crate::clock::Skew)>,
    hist: Writer,
    table: Table,
    db: Option<Connection>,
    /// PostgreSQL rounds: the monitor's own connection (reopened after the server restarts).
    pg: Option<postgres::Client>,
    last_pg_connect: f64,
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
    /// The link-fault proxy between shippers and the transport server (`--ship tcp`).
    proxy: Option<crate::proxy::Proxy>,
    /// `db-link` faults: the proxy between the workers and PostgreSQL.
    db_proxy: Option<crate::proxy::Proxy>,
    /// The harness's workload service (`--workload service`).
    workload: Option<crate::workload::Service>,
    /// Each handoff's census (lo, hi, chunk), for the workload service.
    tasks: crate::workload::Tasks,
    /// The toxic switched on the database link: (fault id, when to clear it, toxic).
    db_link_on: Option<(u64, f64, crate::proxy::Toxic)>,
    /// `--disk`: the tmpfs under the transport server's logs.
    tmpfs: Option<disk::Tmpfs>,
    /// The disk is full: (fault id, when to free it).
    disk_full: Option<(u64, f64)>,
    /// `--store-disk`: the tmpfs under the SQLite store, and its fill.
    store_disk: store_disk::StoreDisk,
    /// `--lose-unsynced`: the store's lazy file system.
    lazy: Option<lazy_store::LazyStore>,
    /// `kill-at-commit`: the armed protocol moment.
    at_commit: at_commit::AtCommit,
    /// The toxic switched on: (fault id, when to clear it, toxic).
    link_on: Option<(u64, f64, crate::proxy::Toxic)>,
    token: String,
    /// Store commit monitor: last `PRAGMA data_version` and when it changed.
    data_version: Option<(i64, f64)>,
    stall_since: Option<f64>,
    /// Read-write connection used only to probe whether the write lock is held.
    probe: Option<Connection>,
    last_probe: f64,
    /// Database faults: the crashed server's outage, if any.
    db_state: db_faults::DbState,
    /// The fault schedule has started (`faults_after_checkpoints`).
    faults_on: bool,
    /// Counters for the progress line.
    pub(crate) live: Live,
    /// When faults stop (`start` sets it) and the grace period ends (`stop_faults`).
    fault_end: f64,
    grace_end: f64,
    t_faults_end: f64,
    /// The state recorded at the `terminal` phase, for `round.json`.
    fin: Value,
    ended_terminal: bool,
    /// Host death: every process was killed; nothing is provisioned any more.
    dead: bool,
    /// Extra fields for `round.json` (host death, standby).
    pub(crate) extra_meta: Value,
    /// Deaths at start in a row, by role (a harness error past a limit).
    starts: startup::StartDeaths,
    /// `--steer`: coverage-guided choices (`crate::coverage::steer`).
    steer: crate::coverage::steer::Steer,
    /// Fault times drawn so far (the `schedule` record's step).
    schedule_step: u64,
}

impl<'a> Driver<'a> {
    /// Prepare a round in `dir` (creating its directories); `run` starts it.
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
        let libfaketime = if cfg.clock.share > 0.0 { Some(crate::clock::libfaketime()?) } else { None };
        Ok(Driver {
            cfg,
            hist: Writer::open(&paths.history)?,
            paths,
            rng: StdRng::seed_from_u64(cfg.seed),
            rng_victim: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0003),
            rng_spawn: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0001),
            rng_misc: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0002),
            rng_clock: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_5a17_0000_0004),
            libfaketime,
            sup_skews: HashMap::new(),
            table: Table::default(),
            db: None,
            pg: None,
            last_pg_connect: 0.0,
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
            proxy: None,
            link_on: None,
            db_proxy: None,
            workload: None,
            tasks: Default::default(),
            db_link_on: None,
            tmpfs: None,
            disk_full: None,
            store_disk: store_disk::StoreDisk::default(),
            lazy: None,
            at_commit: at_commit::AtCommit::default(),
            token: format!("chaos-{:016x}", cfg.seed),
            data_version: None,
            stall_since: None,
            probe: None,
            last_probe: 0.0,
            db_state: db_faults::DbState::default(),
            faults_on: false,
            live: Live::default(),
            fault_end: 0.0,
            grace_end: 0.0,
            t_faults_end: 0.0,
            fin: Value::Null,
            ended_terminal: false,
            dead: false,
            extra_meta: json!({}),
            starts: startup::StartDeaths::default(),
            steer: crate::coverage::steer::Steer::new(cfg.steer, cfg.seed),
            schedule_step: 0,
        })
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut e = self.cfg.timing.env();
        e.push(("DHP_LOG".into(), "warn".into()));
        e.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        if self.cfg.ship.is_tcp() {
            let token = self.cfg.host.as_ref().map_or(&self.token, |h| &h.token);
            e.push(("DHP_TRANSPORT_TOKEN".into(), token.clone()));
        }
        if let Some(w) = &self.workload {
            e.push((crate::workload::ENV.into(), w.url().to_string()));
        }
        e
    }

    /// The command line of a process of this round: under `--hosts`, run
    /// inside the host's network namespace (`ip netns exec` execs it, so the
    /// pid is the process's own and signals reach it directly).
    fn in_host(&self, argv: Vec<String>) -> Vec<String> {
        match &self.cfg.host {
            Some(h) => ["ip", "netns", "exec", h.netns.as_str()].into_iter().map(String::from).chain(argv).collect(),
            None => argv,
        }
    }

    /// Append a harness event to this round's history.
    pub fn record(&mut self, op: &str, fields: Value) -> f64 {
        self.hist.record(op, fields)
    }

    /// Reap exits now (the multi-host loop calls it between slow steps, so
    /// every host's exits are recorded when they happen).
    pub fn reap_now(&mut self) -> Result<()> {
        self.reap(!self.dead)
    }

    /// `--hosts`: which host this round is.
    pub fn host_index(&self) -> Option<u32> {
        self.cfg.host.as_ref().map(|h| h.index)
    }

    /// Every handoff of this round has ended.
    pub fn done(&self) -> bool {
        self.all_terminal() || self.dead
    }

    fn store_arg(&self) -> String {
        self.cfg.pg_root().unwrap_or_else(|| self.paths.store.display().to_string())
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
        self.start()?;
        while !self.step_faults(true)? {
            tick(&self.live);
            std::thread::sleep(TICK);
        }
        self.stop_faults();
        while !self.step_grace()? {
            tick(&self.live);
            std::thread::sleep(TICK);
        }
        self.finish_workers()?;
        self.finish_services()
    }

    /// Dispatch, start the transport server, supervisors and a claim worker
    /// per handoff; schedule the first fault.
    pub fn start(&mut self) -> Result<()> {
        self.mount_store_disk()?;
        self.dispatch()?;
        self.install_audit()?;
        self.mount_lazy_store()?;
        self.t0 = self.hist.record("round", json!({"phase": "start", "seed": self.cfg.seed, "round": self.cfg.round}));
        self.write_meta(json!({}))?;
        if let Some(bytes) = self.cfg.disk_bytes {
            let what = "--disk mounts a tmpfs for the transport server's logs";
            self.tmpfs = Some(disk::Tmpfs::mount(self.server_dir(), bytes, what)?);
            self.hist.record("observe", json!({"what": "disk-mount", "bytes": bytes}));
        }
        if self.cfg.ship.is_tcp() {
            self.spawn_transport()?;
            self.start_proxy()?;
        }
        self.start_db_proxy()?;
        self.start_processes()
    }

    /// Supervisors, then a claim worker per handoff; the first fault is due
    /// one interval after `t0`.
    fn start_processes(&mut self) -> Result<()> {
        self.start_workload()?;
        for _ in 0..self.cfg.supervisor_count {
            self.spawn_supervisor()?;
        }
        self.monitor();
        for i in 0..self.hids.len() {
            self.spawn_worker(i, "claim", None)?;
        }
        // first fault after one interval
        self.next_fault = self.t0 + self.first_fault();
        self.fault_end = self.t0 + self.cfg.fault_seconds;
        self.faults_on = self.cfg.faults_after_checkpoints == 0;
        Ok(())
    }

    /// Where this round's own transport server writes its logs: `peer` on
    /// one host, `received` under `--hosts`.
    pub(super) fn server_dir(&self) -> &Path {
        if self.cfg.host.is_some() {
            &self.paths.received
        } else {
            &self.paths.peer
        }
    }

    /// Start as the standby of a dead host: take over its handoffs that
    /// `dhp ingest` rebuilt in this host's store from the shipped logs
    /// (`moved`: the dead host's dispatch index and hid, with the number of
    /// checkpoints ingested), and resume each with a claim worker.
    pub fn start_standby(&mut self, moved: &[(u32, String, u64)], standby_of: Value) -> Result<()> {
        for (i, hid, n) in moved {
            let (lo, hi) = self.cfg.lo_hi(*i);
            self.hist.record(
                "dispatch",
                json!({"hid": hid, "index": i, "lo": lo, "hi": hi, "chunk": self.cfg.chunk,
                       "max_attempts": self.cfg.max_attempts, "ingested_checkpoints": n}),
            );
            self.tasks.insert(hid.clone(), (lo, hi, self.cfg.chunk));
            self.hids.push(hid.clone());
        }
        self.open_monitor()?;
        self.install_audit()?;
        self.extra_meta = json!({"standby_of": standby_of});
        self.t0 = self.hist.record(
            "round",
            json!({"phase": "start", "seed": self.cfg.seed, "round": self.cfg.round,
                                                     "standby": true}),
        );
        self.write_meta(self.extra_meta.clone())?;
        self.spawn_transport()?;
        self.start_proxy()?;
        self.start_processes()
    }

    /// One loop iteration of the fault phase; `inject` draws this round's
    /// own faults (under `--hosts` the multi-host schedule injects instead).
    /// True once every handoff ended or the fault budget ran out.
    pub fn step_faults(&mut self, inject: bool) -> Result<bool> {
        if self.dead {
            self.reap(false)?;
            return Ok(true);
        }
        self.reap(true)?;
        self.monitor();
        self.at_commit_tick();
        self.notice_self_pauses();
        self.notice_chunk_stops();
        self.wake(false);
        self.provision()?;
        self.db_tick(false)?;
        self.heal_link(false);
        self.heal_db_link(false);
        self.heal_disk(false);
        if (self.all_terminal() || hist::now() >= self.fault_end) && !self.steer_extend()? {
            return Ok(true);
        }
        if !self.faults_on {
            // the schedule starts when enough work is under way
            let n: i64 = self.snap.ckpts.values().sum();
            if n.max(0) as u64 >= self.cfg.faults_after_checkpoints {
                self.faults_on = true;
                let shift = self.hist.record("round", json!({"phase": "faults-start", "checkpoints": n})) - self.t0;
                self.next_fault += shift;
                self.fault_end += shift;
            }
        }
        if inject && self.faults_on {
            self.inject();
        }
        self.db_stall_tick();
        Ok(false)
    }

    /// Faults stop; the grace period starts.
    pub fn stop_faults(&mut self) {
        self.db_stall_disarm();
        self.at_commit = at_commit::AtCommit::default();
        self.heal_link(true);
        self.heal_db_link(true);
        self.heal_disk(true);
        self.t_faults_end =
            self.hist.record("round", json!({"phase": "faults-stopped", "all_terminal": self.all_terminal()}));
        self.grace_end = hist::now() + self.cfg.grace_seconds;
    }

    /// One loop iteration of the grace period (wake zombies, keep
    /// provisioning). True once every handoff ended or the grace ran out.
    pub fn step_grace(&mut self) -> Result<bool> {
        if self.dead || self.all_terminal() || !self.draining(self.grace_end) {
            return Ok(true);
        }
        self.reap(true)?;
        self.monitor();
        self.at_commit_tick();
        self.notice_self_pauses();
        self.notice_chunk_stops();
        self.wake(true);
        self.provision()?;
        self.db_tick(true)?;
        Ok(false)
    }

    /// Record the final state; let workers finish on their own (completers
    /// exit, zombies get fenced), then SIGKILL the rest.
    pub fn finish_workers(&mut self) -> Result<()> {
        self.monitor();
        self.fin = self.final_state();
        self.ended_terminal = self.all_terminal();
        self.hist.record("round", json!({"phase": "terminal", "all_terminal": self.ended_terminal, "final": self.fin}));
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
        Ok(())
    }

    /// Stop supervisors and the transport server, export a PostgreSQL
    /// store, and write the round's end to `round.json`.
    pub fn finish_services(&mut self) -> Result<()> {
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
        // descendants that left their groups (setsid): ended, and counted against the round
        for s in crate::survivors::sweep(&self.paths.procs) {
            self.hist.record("observe", json!({"what": "survivor", "survivor_pid": s.pid, "cmdline": s.cmdline}));
        }
        self.hist.record("observe", json!({"what": "descendants-swept", "tracked_by": crate::survivors::tracked_by()}));
        // every connection through it is closed; its ack record is complete
        self.proxy = None;
        self.db_proxy = None;
        if let Some(mut m) = self.tmpfs.take() {
            m.unmount()?;
        }
        self.unmount_lazy_store()?;
        self.unmount_store_disk()?;
        if let Some(since) = self.stall_since.take() {
            self.hist.record(
                "observe",
                json!({"what": "store-stall", "since": since, "until": hist::now(), "seconds": hist::now() - since}),
            );
        }
        self.db_finish()?;
        if let Some(url) = &self.cfg.pg_url {
            // the checker (and `analyze`, after the cluster is gone) reads this export
            self.pg = None;
            crate::pg::export_to(url, &self.cfg.pg_schema(), &self.paths.store.join("export.json"))?;
        }
        let t_end = self.hist.record("round", json!({"phase": "end"}));
        let mut extra = json!({"t_faults_end": self.t_faults_end, "t_end": t_end, "final": self.fin,
                               "all_terminal": self.ended_terminal});
        if let (Some(m), Value::Object(e)) = (extra.as_object_mut(), self.extra_meta.clone()) {
            m.extend(e);
        }
        self.write_meta(extra)?;
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

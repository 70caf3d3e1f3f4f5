//! The net-chaos scenario's processes and history: dispatching, the
//! transport server (the peer), supervisors and workers (ours, the
//! reference's net_worker.py, or a command), reaping, killing, and a
//! read-only look at the store. Every spawn, exit and kill is recorded in
//! the round's history in the format the checker reads (as `round/` does).

use crate::config::{Impl, RoundConfig};
use crate::hist::{self, Writer};
use crate::procs::{self, Proc, Role, Spec, Table};
use crate::round::Paths;
use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The reference's worker for this scenario (see its docstring).
pub(super) const NET_WORKER: &str = include_str!("../../../adapters/reference/chaos/net_worker.py");
/// The reference's TransportServer as the peer (`--transport python`).
pub(super) const NET_PEER: &str = include_str!("../../../adapters/reference/chaos/net_peer.py");

/// `--transport python`: the reference's TransportServer is the peer.
pub(super) fn python_peer(cfg: &RoundConfig) -> bool {
    cfg.transport.as_deref().is_some_and(|t| t == ["python"])
}

/// The reference's scripts, written into the round directory.
struct Py {
    python: PathBuf,
    shim: PathBuf,
    net_worker: PathBuf,
    net_peer: PathBuf,
    supwatch: PathBuf,
}

/// The round's processes, history and store.
pub(super) struct Stage<'a> {
    pub(super) cfg: &'a RoundConfig,
    pub(super) paths: Paths,
    pub(super) hist: Writer,
    pub(super) table: Table,
    db: Option<Connection>,
    py: Option<Py>,
    pub(super) token: String,
    /// Where workers ship (the relay).
    pub(super) ship_to: String,
    worker_n: u32,
    sup_n: u32,
    pub(super) fault_id: u64,
    /// The leader last observed (`None`: not looked yet).
    leader: Option<Option<String>>,
}

impl<'a> Stage<'a> {
    pub(super) fn new(cfg: &'a RoundConfig, paths: Paths) -> Result<Stage<'a>> {
        for d in [&paths.dir, &paths.store, &paths.transport, &paths.procs, &paths.peer] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let py = if cfg.workers.uses_python() || cfg.supervisors.uses_python() || python_peer(cfg) {
            let python = cfg.python.clone().context("python workers/supervisors need an interpreter (--python)")?;
            let refdir =
                cfg.reference_dir.clone().context("python workers/supervisors need the reference's directory")?;
            let shim = paths.dir.join("chaos_shim.py");
            std::fs::write(&shim, crate::python::SHIM)?;
            let net_worker = paths.dir.join("net_worker.py");
            std::fs::write(&net_worker, NET_WORKER)?;
            let net_peer = paths.dir.join("net_peer.py");
            std::fs::write(&net_peer, NET_PEER)?;
            Some(Py { python, shim, net_worker, net_peer, supwatch: refdir.join("supervisor3_watch.py") })
        } else {
            None
        };
        Ok(Stage {
            cfg,
            hist: Writer::open(&paths.history)?,
            paths,
            table: Table::default(),
            db: None,
            py,
            token: format!("chaos-{:016x}", cfg.seed),
            ship_to: String::new(),
            worker_n: 0,
            sup_n: 0,
            fault_id: 0,
            leader: None,
        })
    }

    fn store_arg(&self) -> String {
        self.paths.store.display().to_string()
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut e = self.cfg.timing.env();
        e.push(("DHP_LOG".into(), "warn".into()));
        e.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        e.push(("DHP_TRANSPORT_TOKEN".into(), self.token.clone()));
        e
    }

    /// Dispatch the census handoffs with `dhp dispatch`; open the monitor.
    pub(super) fn dispatch(&mut self) -> Result<Vec<String>> {
        let mut hids = Vec::new();
        for i in 0..self.cfg.handoffs {
            let (lo, hi) = self.cfg.lo_hi(i);
            let hid = procs::dispatch_census(
                &self.cfg.dhp,
                self.store_arg(),
                (lo, hi),
                self.cfg.chunk,
                self.cfg.max_attempts,
            )?;
            self.hist.record(
                "dispatch",
                json!({"hid": hid, "index": i, "lo": lo, "hi": hi, "chunk": self.cfg.chunk,
                       "max_attempts": self.cfg.max_attempts}),
            );
            hids.push(hid);
        }
        if self.cfg.audit {
            // the store audit, before any worker or supervisor starts (crate::audit)
            let t = std::time::Instant::now();
            crate::audit::install_sqlite(&self.paths.store.join("dhp.sqlite3"))?;
            self.hist.record(
                "observe",
                json!({"what": "audit-installed", "engine": "sqlite", "seconds": t.elapsed().as_secs_f64()}),
            );
        }
        let db = Connection::open_with_flags(
            self.paths.store.join("dhp.sqlite3"),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        db.busy_timeout(Duration::from_millis(500))?;
        self.db = Some(db);
        Ok(hids)
    }

    /// The handoff's status, ownership row and checkpoint count as the store
    /// says now (a read that fails is "unknown": the next tick reads again).
    pub(super) fn look(&self, hid: &str) -> (String, Option<(String, i64)>, i64) {
        let Some(db) = &self.db else { return (String::new(), None, 0) };
        let status: String = db
            .query_row(
                "SELECT json_extract(envelope_json, '$.execution.status') FROM handoffs WHERE hid = ?1",
                [hid],
                |r| r.get::<_, Option<String>>(0),
            )
            .ok()
            .flatten()
            .unwrap_or_default();
        let own = db
            .query_row("SELECT holder, fence FROM ownership WHERE hid = ?1", [hid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .ok()
            .flatten();
        let n =
            db.query_row("SELECT COUNT(*) FROM checkpoints WHERE hid = ?1", [hid], |r| r.get::<_, i64>(0)).unwrap_or(0);
        (status, own, n)
    }

    /// Start the transport server on a free port; its `HOST:PORT` once it listens.
    pub(super) fn spawn_transport(&mut self) -> Result<String> {
        self.sup_n += 1;
        let name = format!("transport{}", self.sup_n);
        let (imp, mut argv) = match (&self.cfg.transport, &self.py) {
            (_, Some(py)) if python_peer(self.cfg) => {
                ("python", vec![py.python.display().to_string(), py.net_peer.display().to_string()])
            }
            (Some(cmd), _) => ("cmd", cmd.clone()),
            (None, _) => ("builtin", vec![self.cfg.dhp.display().to_string(), "transport".into()]),
        };
        argv.extend([self.paths.peer.display().to_string(), "--port".into(), "0".into()]);
        let p = procs::spawn(Spec::service(name.clone(), Role::Transport, imp, argv, self.env()), &self.paths.procs)?;
        let (pid, log) = (p.pid, p.log.clone());
        self.table.procs.push(p);
        let deadline = hist::now() + 10.0;
        let addr = loop {
            self.reap()?;
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(rest) = text.split("listening on ").nth(1) {
                let addr = rest.split(|c: char| c == ',' || c.is_whitespace()).next().unwrap_or("").to_string();
                if addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()).is_none() {
                    bail!("transport server printed no port: {}", text.trim());
                }
                break addr;
            }
            if self.table.procs.iter().any(|p| p.name == name && !p.alive()) {
                bail!("the transport server exited at start-up: {}", text.trim());
            }
            if hist::now() > deadline {
                bail!("the transport server did not start listening within 10 s: {}", text.trim());
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let port = addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
        self.hist
            .record("spawn", json!({"name": name, "spawned_pid": pid, "role": "transport", "impl": imp, "port": port}));
        Ok(addr)
    }

    pub(super) fn spawn_supervisor(&mut self) -> Result<()> {
        self.sup_n += 1;
        let name = format!("sup{}", self.sup_n);
        let secs = "86400".to_string(); // stopped by SIGTERM at the end
        let history = self.paths.history.display().to_string();
        let py =
            self.py.as_ref().map(|p| procs::PySupervisor { python: &p.python, shim: &p.shim, supwatch: &p.supwatch });
        let (imp, argv) =
            procs::supervisor_argv(&self.cfg.supervisors, &self.cfg.dhp, py, self.store_arg(), &name, secs, history)?;
        let p = procs::spawn(Spec::service(name.clone(), Role::Supervisor, imp, argv, self.env()), &self.paths.procs)?;
        self.hist.record("spawn", json!({"name": name, "spawned_pid": p.pid, "role": "supervisor", "impl": imp}));
        self.table.procs.push(p);
        Ok(())
    }

    /// Start a worker on handoff `idx`; its index in the process table.
    pub(super) fn spawn_worker(&mut self, idx: u32, hid: &str, mode: &str, orphan_fence: Option<i64>) -> Result<usize> {
        self.worker_n += 1;
        let name = format!("w{:04}-h{idx}", self.worker_n);
        let history = self.paths.history.display().to_string();
        let pace = self.cfg.pace_s.to_string();
        let buffer = format!("{}/", self.paths.transport.display());
        let work_flags = |mut a: Vec<String>| {
            a.extend([self.store_arg(), "--runner".into(), name.clone(), mode.into(), hid.into()]);
            a.extend(["--pace".into(), pace.clone(), "--history".into(), history.clone()]);
            a.extend(["--ship-to".into(), self.ship_to.clone(), "--ship-buffer".into(), buffer.clone()]);
            if !self.cfg.liveness {
                a.push("--no-liveness".into());
            }
            a
        };
        let (imp, argv) = match &self.cfg.workers {
            Impl::Builtin => ("builtin", work_flags(vec![self.cfg.dhp.display().to_string(), "work".into()])),
            Impl::Cmd(cmd) => ("cmd", work_flags(cmd.clone())),
            Impl::Python => {
                let py = self.py.as_ref().context("python environment missing")?;
                let a =
                    [py.python.display().to_string(), py.shim.display().to_string(), "worker".into(), history.clone()];
                let b = [name.clone(), py.net_worker.display().to_string(), "--root".into(), self.store_arg()];
                let c =
                    ["--runner".into(), name.clone(), "--chunk".into(), self.cfg.chunk.to_string(), "--pace".into()];
                let d =
                    [pace.clone(), "--ship-to".into(), self.ship_to.clone(), "--ship-buffer".into(), buffer.clone()];
                (
                    "python",
                    a.into_iter().chain(b).chain(c).chain(d).chain([mode.to_string(), hid.to_string()]).collect(),
                )
            }
            Impl::Mixed => bail!("net-chaos runs builtin, python or command workers, not mixed"),
        };
        let spec = Spec {
            name: name.clone(),
            role: Role::Worker,
            imp: imp.into(),
            argv,
            env: self.env(),
            hid: Some(hid.to_string()),
            mode: Some(mode.into()),
            orphan_fence,
            failpoint: None,
        };
        let p = procs::spawn(spec, &self.paths.procs)?;
        self.hist.record(
            "spawn",
            json!({"name": name, "spawned_pid": p.pid, "role": "worker", "impl": imp, "hid": hid, "mode": mode,
                   "orphan_fence": orphan_fence, "failpoint": null}),
        );
        self.table.procs.push(p);
        Ok(self.table.procs.len() - 1)
    }

    /// Record a change of the supervisors' leader (the checker's steady-state
    /// latencies need to know whether a leader was live at a kill).
    fn observe_leader(&mut self) {
        let Some(db) = &self.db else { return };
        let now = hist::now();
        let leader = db
            .query_row("SELECT holder, expires_at FROM leadership WHERE id = 1", [], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
            })
            .optional();
        let Ok(leader) = leader else { return }; // busy: look again next tick
        let leader = leader.filter(|l| l.1 >= now).map(|l| l.0);
        if self.leader.as_ref() != Some(&leader) {
            self.hist.record("observe", json!({"what": "leader", "holder": leader}));
            self.leader = Some(leader);
        }
    }

    /// Record every exit not yet in the history (and a change of leader).
    pub(super) fn reap(&mut self) -> Result<()> {
        self.observe_leader();
        for (i, e) in self.table.reap_exits() {
            let p = &self.table.procs[i];
            self.hist.record_at(
                e.t,
                "exit",
                json!({"name": p.name, "exited_pid": p.pid, "role": p.role, "hid": p.hid, "code": e.code,
                       "signal": e.signal, "failpoint_fired": false, "stopped": e.stopped}),
            );
            if p.role == Role::Worker && e.code == Some(2) && p.imp != "python" {
                bail!("worker {} rejected its command line (exit 2); see {}", p.name, p.log.display());
            }
        }
        Ok(())
    }

    /// SIGKILL process `i` as fault `kind` (`extra` joins the fault record).
    pub(super) fn kill(&mut self, i: usize, kind: &str, extra: Value) -> bool {
        let own = self.table.procs[i].hid.clone().map(|h| self.look(&h).1);
        let t = hist::now();
        let p = &mut self.table.procs[i];
        if !p.signal(Signal::SIGKILL) {
            return false;
        }
        p.killed_by_harness = true;
        let lease = own.flatten().filter(|o| o.0 == p.name).map(|o| o.1);
        let mut rec = json!({"fault_id": self.fault_id, "kind": kind, "signal": "KILL", "victim": p.name,
                             "victim_pid": p.pid, "role": p.role, "hid": p.hid, "lease_fence": lease, "leader": false});
        if let (Some(m), Value::Object(e)) = (rec.as_object_mut(), extra) {
            m.extend(e);
        }
        self.hist.record_at(t, "fault", rec);
        true
    }

    /// Stop everything: workers by SIGKILL (`teardown`), supervisors and the
    /// transport server by SIGTERM, then SIGKILL whatever is left.
    pub(super) fn teardown(&mut self) -> Result<()> {
        for i in 0..self.table.procs.len() {
            if self.table.procs[i].role == Role::Worker && self.table.procs[i].alive() {
                self.kill(i, "teardown", json!({}));
            }
        }
        for p in &mut self.table.procs {
            if p.alive() {
                p.signal(Signal::SIGTERM);
            }
        }
        let end = hist::now() + 3.0;
        while self.table.procs.iter().any(Proc::alive) && hist::now() < end {
            self.reap()?;
            std::thread::sleep(Duration::from_millis(3));
        }
        for i in 0..self.table.procs.len() {
            if self.table.procs[i].alive() {
                self.kill(i, "teardown", json!({}));
            }
        }
        self.table.kill_all();
        self.reap()?;
        // descendants that left their groups (setsid): ended, and counted against the round
        for s in crate::survivors::sweep(&self.paths.procs) {
            self.hist.record("observe", json!({"what": "survivor", "survivor_pid": s.pid, "cmdline": s.cmdline}));
        }
        self.hist.record("observe", json!({"what": "descendants-swept", "tracked_by": crate::survivors::tracked_by()}));
        Ok(())
    }

    /// The store's final word on each handoff, for `round.json`.
    pub(super) fn final_state(&self, hids: &[String]) -> Value {
        let mut m = serde_json::Map::new();
        for h in hids {
            let (status, own, _) = self.look(h);
            let alive = own.as_ref().is_some_and(|(o, _)| self.table.procs.iter().any(|p| &p.name == o && p.alive()));
            m.insert(
                h.clone(),
                json!({"status": status, "holder": own.as_ref().map(|o| o.0.clone()),
                       "fence": own.as_ref().map(|o| o.1), "owner_alive": alive}),
            );
        }
        Value::Object(m)
    }
}

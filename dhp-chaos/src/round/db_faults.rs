//! Faults of the database itself, for PostgreSQL rounds:
//!
//! - `db-crash`: `pg_ctl stop -m immediate` (the [`crate::db::Kill`] of the
//!   single server), started again after a delay drawn from the seed; the
//!   event loop keeps running while the server is down, and the round does
//!   not end (nor export its store) before it is back.
//! - `db-terminate-backend`: `pg_terminate_backend` of one backend of a
//!   worker or of the leader, found in `pg_stat_activity` by the
//!   `application_name` dhp-core gives every connection (`dhp-<role>-<pid>`).
//! - `db-stall`: a worker caught inside a write transaction (`idle in
//!   transaction` with an xid: it holds row locks) is SIGSTOPped there — the
//!   PostgreSQL form of SQLite's stalled writer. It is woken like a paused
//!   worker, once replaced.
//!
//! Each is one `fault` line in the history; the outage's end is an
//! `observe` line (`db-up`), so the checker knows which replies came while
//! the server was down.

use super::*;
use crate::db::{self, sys::Log, Kind, Step};

/// Why database faults were refused for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DbFaultRefusal {
    /// Database faults on a SQLite store.
    Sqlite {
        /// The database fault kinds asked for.
        kinds: Vec<&'static str>,
    },
    /// A `postgres://…` store without `--pg-data`: the harness cannot restart the server.
    NoPgData {
        /// The database fault kinds asked for.
        kinds: Vec<&'static str>,
    },
    /// `--pg-data DIR` is not a `scripts/pg.sh` cluster directory (or not the URL's).
    BadPgData {
        /// The directory given.
        dir: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `--pg-data` given where it has no use.
    PgDataUnused {
        /// Why it has no use in this run.
        why: &'static str,
    },
}

impl std::fmt::Display for DbFaultRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbFaultRefusal::Sqlite { kinds } => write!(
                f,
                "database faults ({}) need a PostgreSQL store (--store postgres or --store postgres://… --pg-data DIR)",
                kinds.join(", ")
            ),
            DbFaultRefusal::NoPgData { kinds } => write!(
                f,
                "database faults ({}) on an existing server need --pg-data DIR (the cluster directory of \
                 scripts/pg.sh, which the harness crashes and restarts); without it they are refused",
                kinds.join(", ")
            ),
            DbFaultRefusal::BadPgData { dir, reason } => write!(f, "--pg-data {}: {reason}", dir.display()),
            DbFaultRefusal::PgDataUnused { why } => write!(f, "--pg-data: {why}"),
        }
    }
}

impl std::error::Error for DbFaultRefusal {}

/// The default weights of the database faults in a PostgreSQL round that may crash its server.
pub const DEFAULT_DB_MIX: [(FaultKind, f64); 3] =
    [(FaultKind::DbCrash, 3.0), (FaultKind::DbTerminateBackend, 5.0), (FaultKind::DbStall, 5.0)];

/// A crashed server stays down for a delay uniform in this range (seconds).
pub const DOWN_S: (f64, f64) = (0.3, 2.0);

/// Are the database faults of `mix` allowed on this store? `url` is the
/// server of a `postgres://…` store (`None`: SQLite, or a cluster the run
/// owns when `owned`); `pg_data` the cluster directory given with `--pg-data`.
pub fn check_allowed(
    mix: &[(FaultKind, f64)],
    engine: &str,
    owned: bool,
    url: Option<&str>,
    pg_data: Option<&Path>,
) -> std::result::Result<(), DbFaultRefusal> {
    let kinds: Vec<&'static str> = mix.iter().filter(|(k, w)| k.is_db() && *w > 0.0).map(|(k, _)| k.name()).collect();
    if engine != "postgres" {
        return if kinds.is_empty() { Ok(()) } else { Err(DbFaultRefusal::Sqlite { kinds }) };
    }
    if owned {
        return Ok(());
    }
    match pg_data {
        None if kinds.is_empty() => Ok(()),
        None => Err(DbFaultRefusal::NoPgData { kinds }),
        Some(dir) => check_pg_data(dir, url),
    }
}

/// `db-link` faults put a proxy between the workers and the PostgreSQL
/// server: refused on SQLite (no link to cut) and for a URL the proxy cannot
/// stand in for (see [`crate::pg::server_addr`]); `url` is `None` for a
/// cluster the run owns (always TCP on 127.0.0.1).
pub fn check_db_link(mix: &[(FaultKind, f64)], engine: &str, url: Option<&str>) -> Result<()> {
    if !mix.iter().any(|(k, w)| *k == FaultKind::DbLink && *w > 0.0) {
        return Ok(());
    }
    if engine != "postgres" {
        bail!("db-link faults cut the link between workers and PostgreSQL: they need --store postgres or a postgres:// URL");
    }
    if let Some(u) = url {
        crate::pg::server_addr(u)?;
    }
    Ok(())
}

/// `--pg-data` is only for a `--store postgres://…` run.
pub fn check_pg_data_used(pg_data: Option<&Path>, url_store: bool) -> std::result::Result<(), DbFaultRefusal> {
    match pg_data {
        Some(_) if !url_store => Err(DbFaultRefusal::PgDataUnused {
            why: "only for --store postgres://… (SQLite has no server; --store postgres starts a cluster of its own)",
        }),
        _ => Ok(()),
    }
}

/// A `scripts/pg.sh` cluster directory (`data/PG_VERSION`, `port`) serving
/// the URL's port.
fn check_pg_data(dir: &Path, url: Option<&str>) -> std::result::Result<(), DbFaultRefusal> {
    let bad = |reason: String| DbFaultRefusal::BadPgData { dir: dir.to_path_buf(), reason };
    if !dir.join("data/PG_VERSION").is_file() {
        return Err(bad("not a scripts/pg.sh cluster directory (no data/PG_VERSION)".into()));
    }
    let port: u16 = std::fs::read_to_string(dir.join("port"))
        .map_err(|e| bad(format!("no readable port file ({e})")))?
        .trim()
        .parse()
        .map_err(|e| bad(format!("port file is not a port number ({e})")))?;
    if let Some(u) = url {
        let cfg = <postgres::Config as std::str::FromStr>::from_str(u)
            .map_err(|e| bad(format!("cannot read the store URL ({e})")))?;
        let url_port = cfg.get_ports().first().copied().unwrap_or(5432);
        if url_port != port {
            return Err(bad(format!("this cluster listens on port {port}, the store URL names port {url_port}")));
        }
    }
    Ok(())
}

/// The server's state as the injector drives it.
#[derive(Debug, Default)]
pub(super) struct DbState {
    down: Option<Down>,
    /// When the server last came back from a crash.
    pub(super) up_at: Option<f64>,
    /// A drawn `db-stall` waiting for a worker to catch (its fault id).
    stall_armed: Option<u64>,
    last_stall_poll: f64,
    /// A `db-failover` under way (`db_failover.rs`).
    pub(super) failover: super::db_failover::FailoverState,
    /// A pg_auto_failover fault under way (`db_auto.rs`).
    pub(super) auto: super::db_auto::AutoState,
    /// A database fault drawn while another was under way: fired as soon as
    /// the database is back, so which kinds fire does not depend on how
    /// long a failover took (at most one waits; a later draw is dropped).
    pub(super) deferred: Option<FaultKind>,
}

#[derive(Debug)]
struct Down {
    fault_id: u64,
    since: f64,
    restart_at: f64,
    restart: Option<Step>,
    attempts: u32,
}

/// The single server in `dir`, its programs' output to `log`.
fn server(dir: &Path, log: Log) -> db::Result<Box<dyn db::Db>> {
    Kind::Single.open(dir, log)
}

/// A backend of one process, as `pg_stat_activity` shows it.
#[derive(Debug)]
struct Backend {
    pid: i32,
    state: String,
    /// It holds a session advisory lock (the liveness connection).
    liveness: bool,
}

/// Armed in some worker spawns of rounds with `db-stall`: a failpoint that
/// never fires, but an armed `checkpoint.in_tx` makes dhp-core checkpoint in
/// a multi-statement transaction instead of the one-round-trip function, so
/// the worker spends time `idle in transaction` holding its row locks,
/// where `db-stall` can catch it.
pub const IN_TX_PATH: &str = "checkpoint.in_tx=kill%0";

impl Driver<'_> {
    /// Does this worker spawn take the multi-statement checkpoint path (3 in 4
    /// of them, seeded, in PostgreSQL rounds with `db-stall`)?
    pub(super) fn stall_path(&mut self) -> bool {
        self.cfg.pg_url.is_some()
            && self.cfg.fault_mix.iter().any(|(k, w)| *k == FaultKind::DbStall && *w > 0.0)
            && self.rng_spawn.gen_bool(0.75)
    }

    /// Is the server down (crashed, not yet back)?
    pub(super) fn db_down(&self) -> bool {
        self.db_state.down.is_some() || self.db_state.failover.busy() || self.db_state.auto.busy()
    }

    /// No server takes writes: crashed, or a failover before its promotion.
    pub(super) fn db_unwritable(&self) -> bool {
        self.db_state.down.is_some()
            || (self.db_state.failover.busy() && !self.db_state.failover.promoted())
            || self.db_state.auto.unwritable()
    }

    /// A database fault drawn now: injected, or deferred while the database
    /// is down or failing over (recorded, fired by [`Self::db_deferred_tick`]).
    pub(super) fn draw_db(&mut self, kind: FaultKind) {
        if !self.db_down() {
            self.inject_db(kind);
            return;
        }
        let kept = self.db_state.deferred.is_none();
        if kept {
            self.db_state.deferred = Some(kind);
        }
        self.hist.record("fault-deferred", json!({"kind": kind.name(), "kept": kept}));
    }

    /// Fire a deferred database fault once the database is back.
    pub(super) fn db_deferred_tick(&mut self) {
        if self.db_down() {
            return;
        }
        if let Some(kind) = self.db_state.deferred.take() {
            self.inject_db(kind);
        }
    }

    /// Inject one database fault of `kind`; false when nothing was eligible.
    pub(super) fn inject_db(&mut self, kind: FaultKind) -> bool {
        if self.db_down() {
            return false;
        }
        match kind {
            FaultKind::DbCrash => self.db_crash(),
            FaultKind::DbTerminateBackend => self.db_terminate(),
            FaultKind::DbStall => self.db_stall(),
            FaultKind::DbFailover | FaultKind::DbSwitchover if self.auto_manager() => self.auto_fault(kind),
            FaultKind::DbFailover => self.db_failover(false),
            FaultKind::DbSwitchover => self.db_failover(true),
            FaultKind::DbPrimaryPartition | FaultKind::DbMonitorPartition | FaultKind::DbStandbyLost => {
                self.auto_fault(kind)
            }
            _ => false,
        }
    }

    fn db_crash(&mut self) -> bool {
        let Some(dir) = self.cfg.pg_data.clone() else { return false };
        let Ok(server) = server(&dir, Log(Some("/dev/null".into()))) else { return false };
        let down_s = self.rng_misc.gen_range(DOWN_S.0..=DOWN_S.1);
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        let t = self.hist.record(
            "fault",
            json!({"fault_id": id, "kind": "db-crash", "signal": "CRASH", "victim": "postgres", "role": "database",
                   "down_s": down_s}),
        );
        let ok = db::kill_of(server.as_ref()).and_then(|k| k.kill("postgres")).is_ok();
        self.pg = None;
        if !ok {
            // still record an outage: the restart below brings it back either way
            self.hist.record("observe", json!({"what": "db-crash-failed", "fault_id": id}));
        }
        self.db_state.down =
            Some(Down { fault_id: id, since: t, restart_at: hist::now() + down_s, restart: None, attempts: 0 });
        true
    }

    /// Restart a crashed server once its delay is over (at once when
    /// `now_all`: faults have stopped), and notice it is back.
    pub(super) fn db_tick(&mut self, now_all: bool) -> Result<()> {
        self.failover_tick(now_all)?;
        self.auto_tick(now_all)?;
        let Some(dir) = self.cfg.pg_data.clone() else { return Ok(()) };
        let now = hist::now();
        let log = self.paths.procs.join("pg-restart.log");
        let Some(d) = self.db_state.down.as_mut() else { return Ok(()) };
        match d.restart.as_mut() {
            None if now_all || now >= d.restart_at => {
                let server = server(&dir, Log(Some(log.clone())))?;
                d.restart = Some(Step::spawn(move || db::kill_of(server.as_ref())?.start("postgres")));
                d.attempts += 1;
                let (id, n) = (d.fault_id, d.attempts);
                self.hist.record("observe", json!({"what": "db-restart", "fault_id": id, "attempt": n}));
            }
            None => {}
            Some(step) => {
                if let Some(done) = step.try_finish() {
                    let (id, since, n) = (d.fault_id, d.since, d.attempts);
                    if let Err(e) = &done {
                        Log(Some(log.clone())).note(&e.to_string());
                    }
                    if done.is_ok() {
                        self.db_state.down = None;
                        let t = hist::now();
                        self.db_state.up_at = Some(t);
                        self.hist.record(
                            "observe",
                            json!({"what": "db-up", "fault_id": id, "since": since, "down_s": t - since}),
                        );
                    } else if n >= 5 {
                        bail!(
                            "the crashed PostgreSQL server did not start again ({n} attempts); see {}",
                            log.display()
                        );
                    } else {
                        d.restart = None;
                        d.restart_at = now + 0.5;
                    }
                }
            }
        }
        Ok(())
    }

    /// The drain lasts its grace from the end of faults, and at least as
    /// long from the server's return: a handoff gets its whole grace with a
    /// working database.
    pub(super) fn draining(&self, grace_end: f64) -> bool {
        let now = hist::now();
        now < grace_end || self.db_down() || self.db_state.up_at.is_some_and(|u| now < u + self.cfg.grace_seconds)
    }

    /// Bring a crashed server back before the round's store is exported.
    pub(super) fn db_finish(&mut self) -> Result<()> {
        let end = hist::now() + 120.0;
        while self.db_down() {
            if hist::now() > end {
                bail!("the crashed PostgreSQL server was not back within 120 s");
            }
            self.db_tick(true)?;
            self.reap(false)?;
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The backends of OS process `pid` (its `application_name` ends in `-<pid>`).
    fn backends_of(&mut self, pid: i32) -> Vec<Backend> {
        self.pg_reconnect();
        let Some(c) = self.pg.as_mut() else { return Vec::new() };
        let q = "SELECT a.pid, COALESCE(a.state, ''), EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid \
                 AND l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted) \
                 FROM pg_stat_activity a WHERE a.application_name ~ ('^dhp-[a-z0-9-]+-' || $1::text || '$') ORDER BY a.pid";
        match c.query(q, &[&pid.to_string()]) {
            Ok(rows) => rows.iter().map(|r| Backend { pid: r.get(0), state: r.get(1), liveness: r.get(2) }).collect(),
            Err(_) => {
                self.pg = None;
                Vec::new()
            }
        }
    }

    fn db_terminate(&mut self) -> bool {
        let workers: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| self.table.procs[i].role == Role::Worker && self.table.procs[i].active())
            .collect();
        let leader = (0..self.table.procs.len()).find(|&i| {
            self.table.procs[i].role == Role::Supervisor
                && self.table.procs[i].alive()
                && self.snap.leader.as_deref() == Some(self.table.procs[i].name.as_str())
        });
        let mut pool = workers;
        pool.shuffle(&mut self.rng_victim);
        if let Some(l) = leader {
            if self.rng_victim.gen_bool(0.3) {
                pool.insert(0, l);
            }
        }
        for i in pool {
            let pid = self.table.procs[i].pid;
            let backends = self.backends_of(pid);
            let Some(b) = backends.choose(&mut self.rng_victim) else { continue };
            let (bpid, state, liveness) = (b.pid, b.state.clone(), b.liveness);
            let lease = self.lease_of(&self.table.procs[i]);
            let is_leader = Some(i) == leader;
            let Some(c) = self.pg.as_mut() else { return false };
            let terminated = match c.query_one("SELECT pg_terminate_backend($1)", &[&bpid]) {
                Ok(r) => r.get::<_, bool>(0),
                Err(_) => {
                    self.pg = None;
                    return false;
                }
            };
            self.fault_id += 1;
            self.live.faults += 1;
            let p = &self.table.procs[i];
            self.hist.record(
                "fault",
                json!({"fault_id": self.fault_id, "kind": "db-terminate-backend", "signal": "TERM-BACKEND",
                       "victim": p.name, "victim_pid": p.pid, "role": p.role, "hid": p.hid, "lease_fence": lease,
                       "leader": is_leader, "backend_pid": bpid, "backend_state": state,
                       "liveness_connection": liveness, "backends": backends.len(), "terminated": terminated}),
            );
            return true;
        }
        false
    }

    /// Arm a stall: it strikes the first worker caught inside a write
    /// transaction, at once or on a later tick (every 20 ms) of the fault phase.
    fn db_stall(&mut self) -> bool {
        if self.db_state.stall_armed.is_some() {
            return false;
        }
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        self.hist.record("observe", json!({"what": "db-stall-armed", "fault_id": id}));
        self.db_state.stall_armed = Some(id);
        self.db_state.last_stall_poll = 0.0;
        self.db_stall_tick();
        true
    }

    /// One look for a worker inside a write transaction, if a stall is armed.
    pub(super) fn db_stall_tick(&mut self) {
        let Some(id) = self.db_state.stall_armed else { return };
        let now = hist::now();
        if self.db_down() || now - self.db_state.last_stall_poll < 0.02 {
            return;
        }
        self.db_state.last_stall_poll = now;
        let q = "SELECT a.pid, substring(a.application_name from '-([0-9]+)$')::int4 FROM pg_stat_activity a \
                 WHERE a.application_name LIKE 'dhp-work-%' AND a.state = 'idle in transaction' \
                 AND a.backend_xid IS NOT NULL ORDER BY a.pid";
        self.pg_reconnect();
        let Some(c) = self.pg.as_mut() else { return };
        let rows: Vec<(i32, i32)> = match c.query(q, &[]) {
            Ok(rows) => rows.iter().filter_map(|r| Some((r.get(0), r.get::<_, Option<i32>>(1)?))).collect(),
            Err(_) => {
                self.pg = None;
                return;
            }
        };
        let caught: Vec<(usize, i32)> = rows
            .iter()
            .filter_map(|(bpid, ospid)| {
                let i = self.table.procs.iter().position(|p| {
                    p.pid == *ospid && p.role == Role::Worker && p.active() && self.lease_of(p).is_some()
                })?;
                Some((i, *bpid))
            })
            .collect();
        let Some(&(i, bpid)) = caught.choose(&mut self.rng_victim) else { return };
        self.db_state.stall_armed = None;
        if !self.signal(i, Signal::SIGSTOP, "db-stall", id) {
            return;
        }
        // still inside its transaction once stopped: it holds its row locks
        let held = self.pg.as_mut().and_then(|c| {
            c.query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE l.pid = $1 AND l.granted AND a.state = 'idle in transaction' \
                 AND l.locktype IN ('transactionid', 'tuple', 'relation', 'advisory')",
                &[&bpid],
            )
            .ok()
            .map(|r| r.get::<_, i64>(0))
        });
        let victim = self.table.procs[i].name.clone();
        self.hist.record(
            "observe",
            json!({"what": "db-stall", "fault_id": id, "victim": victim, "backend_pid": bpid,
                   "locks_held": held, "in_transaction": held.is_some_and(|n| n > 0)}),
        );
    }

    /// Faults have stopped: an armed stall that caught nothing is said so.
    pub(super) fn db_stall_disarm(&mut self) {
        if let Some(id) = self.db_state.stall_armed.take() {
            self.hist.record("observe", json!({"what": "db-stall-missed", "fault_id": id}));
        }
    }
}

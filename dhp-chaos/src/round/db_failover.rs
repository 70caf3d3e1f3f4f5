//! `db-failover`, for rounds on a replicated cluster the run owns
//! (`--pg-cluster sync|async`, [`crate::db::cluster`]). Failover manager:
//! the harness (`pg_ctl promote`), said so in every fault line.
//!
//! One fault, four steps, the event loop running between them (a planned
//! `db-switchover` skips the lag window and stops the primary cleanly, `pg_ctl
//! stop -m fast`, instead of crashing it; it is recorded as a `db-failover`
//! with `"planned": true`):
//!
//! 1. `detach`: the synchronous standby (the promotion candidate) stops
//!    receiving WAL (`primary_conninfo = ''`) for a lag window drawn from the
//!    seed. With synchronous replication commits now wait and are not
//!    acknowledged; with asynchronous replication the primary goes on
//!    acknowledging commits the candidate will never have.
//! 2. `crash`: the primary is stopped with `pg_ctl stop -m immediate` and
//!    fenced (never started again as a primary: it is rebuilt as a standby).
//!    The harness then reads what the candidate holds once its received WAL
//!    is replayed — before it is promoted, so before any client can write to
//!    it — and records it (`db-failover-snapshot`: the highest checkpoint seq
//!    per handoff, the completed handoffs). `no-lost-commits-across-db-crash`
//!    checks every acknowledgement before the crash against that record.
//! 3. `promote`: `pg_ctl promote`; the clients' multi-host URLs
//!    (`target_session_attrs=read-write`) find it (`db-promoted`, with the
//!    failover time: crash to promoted).
//! 4. `rejoin`: the two other nodes are rebuilt from the new primary
//!    (`pg_basebackup`) and stream from it; with synchronous replication
//!    commits wait until one does. `db-up` ends the outage.

use super::*;
use crate::db::{self, cluster::Cluster, sys::Log, Primary, Step};

/// A lag window drawn uniform in this range (seconds).
pub const LAG_S: (f64, f64) = (0.3, 1.0);

/// The default weights of the database faults on a replicated cluster.
pub const CLUSTER_DB_MIX: [(FaultKind, f64); 4] = [
    (FaultKind::DbFailover, 3.0),
    (FaultKind::DbSwitchover, 1.0),
    (FaultKind::DbTerminateBackend, 5.0),
    (FaultKind::DbStall, 5.0),
];

/// `--pg-cluster` and the fault mix agree: the cluster only with `--store
/// postgres` (the run owns it), `db-failover` only on it, and no `db-crash`
/// or `db-link` on it (the cluster fails over instead of restarting; the
/// link proxy stands in for one server, not for three).
pub fn check_cluster(mix: &[(FaultKind, f64)], pg_cluster: Option<&str>, owned_postgres: bool) -> Result<()> {
    let wants = |k: FaultKind| mix.iter().any(|(m, w)| *m == k && *w > 0.0);
    match pg_cluster {
        None if wants(FaultKind::DbFailover) || wants(FaultKind::DbSwitchover) => {
            bail!("db-failover and db-switchover need a replicated cluster: --store postgres --pg-cluster sync (or async)")
        }
        None => Ok(()),
        Some(_) if !owned_postgres => {
            bail!("--pg-cluster starts a replicated cluster this run owns: it needs --store postgres (not a URL, not sqlite)")
        }
        Some(_) if wants(FaultKind::DbCrash) => {
            bail!("--pg-cluster: db-crash restarts a single server; on the replicated cluster use db-failover")
        }
        Some(_) if wants(FaultKind::DbLink) => {
            bail!("--pg-cluster: db-link proxies one server; the cluster's clients use a multi-host URL")
        }
        Some(_) => Ok(()),
    }
}

/// The failover under way.
#[derive(Debug, Default)]
pub(super) struct FailoverState {
    phase: Option<Phase>,
}

#[derive(Debug)]
enum Phase {
    Lagging { fault_id: u64, since: f64, crash_at: f64, planned: bool },
    Promoting { fault_id: u64, since: f64, crashed_t: f64, child: Step },
    Rejoining { fault_id: u64, since: f64, promoted_t: f64, child: Step },
}

impl FailoverState {
    /// A failover is under way (the cluster is not yet whole again).
    pub(super) fn busy(&self) -> bool {
        self.phase.is_some()
    }

    /// The new primary takes connections (promoted; standbys still being rebuilt).
    pub(super) fn promoted(&self) -> bool {
        matches!(self.phase, Some(Phase::Rejoining { .. }))
    }
}

/// The cluster in `dir`, its programs' output to `log`.
fn cluster(dir: &Path, log: &Path) -> db::Result<Cluster> {
    Cluster::at(dir, Log(Some(log.to_path_buf())))
}

/// A step's failure, into the failover log beside its programs' output.
fn logged<T>(r: db::Result<T>, log: &Path) -> db::Result<T> {
    if let Err(e) = &r {
        Log(Some(log.to_path_buf())).note(&e.to_string());
    }
    r
}

impl Driver<'_> {
    fn cluster_dir(&self) -> Option<PathBuf> {
        self.cfg.pg_cluster.as_ref().and(self.cfg.pg_data.clone())
    }

    fn failover_log(&self) -> PathBuf {
        self.paths.procs.join("pg-failover.log")
    }

    /// Start a failover: detach the candidate for a seeded lag window. A
    /// `planned` one (a switchover) has no lag window and stops the primary
    /// cleanly instead of crashing it.
    pub(super) fn db_failover(&mut self, planned: bool) -> bool {
        let Some(dir) = self.cluster_dir() else { return false };
        if self.db_state.failover.busy() {
            return false;
        }
        let Ok((primary, sync, _)) = crate::pg_cluster::roles(&dir) else { return false };
        let lag_s = if planned { 0.0 } else { self.rng_misc.gen_range(LAG_S.0..=LAG_S.1) };
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        let t = self.hist.record(
            "fault",
            json!({"fault_id": id, "kind": "db-failover", "signal": "FAILOVER", "victim": primary, "role": "database",
                   "promote": sync, "lag_s": lag_s, "planned": planned, "replication": self.cfg.pg_cluster,
                   "failover_manager": crate::pg_cluster::FAILOVER_MANAGER}),
        );
        if !planned {
            let log = self.failover_log();
            let detached = cluster(&dir, &log).and_then(|c| logged(c.detach(), &log)).is_ok();
            self.hist.record(
                "observe",
                json!({"what": "db-standby-detached", "fault_id": id, "node": sync, "ok": detached}),
            );
        }
        self.db_state.failover.phase =
            Some(Phase::Lagging { fault_id: id, since: t, crash_at: hist::now() + lag_s, planned });
        true
    }

    /// Drive the failover under way one step (every step at once when `now_all`).
    pub(super) fn failover_tick(&mut self, now_all: bool) -> Result<()> {
        let Some(dir) = self.cluster_dir() else { return Ok(()) };
        let log = self.failover_log();
        let now = hist::now();
        match self.db_state.failover.phase.take() {
            None => {}
            Some(Phase::Lagging { fault_id, since, crash_at, planned }) if now_all || now >= crash_at => {
                let (primary, sync, _) = crate::pg_cluster::roles(&dir)?;
                let c = cluster(&dir, &log)?;
                logged(if planned { c.switchover() } else { db::Kill::kill(&c, &primary) }, &log)?;
                self.pg = None;
                let crashed_t = self.hist.record(
                    "observe",
                    json!({"what": "db-primary-crashed", "fault_id": fault_id, "node": primary, "planned": planned}),
                );
                // what the candidate holds, read before any client can write to it
                let snap = crate::pg_cluster::snapshot(&dir, &sync, &self.cfg.pg_schema());
                let rec = match &snap {
                    Ok((seqs, completed, lsn)) => json!({"what": "db-failover-snapshot", "fault_id": fault_id,
                        "node": sync, "replay_lsn": lsn, "max_seq": seqs, "completed": completed}),
                    Err(e) => json!({"what": "db-failover-snapshot", "fault_id": fault_id, "node": sync,
                        "error": format!("{e:#}")}),
                };
                self.hist.record("observe", rec);
                let (c2, log2) = (c.clone(), log.clone());
                let child = Step::spawn(move || logged(c2.promote(), &log2));
                self.db_state.failover.phase = Some(Phase::Promoting { fault_id, since, crashed_t, child });
            }
            Some(Phase::Promoting { fault_id, since, crashed_t, mut child }) => match child.try_finish() {
                None => self.db_state.failover.phase = Some(Phase::Promoting { fault_id, since, crashed_t, child }),
                Some(Ok(_)) => {
                    let (primary, _, _) = crate::pg_cluster::roles(&dir)?;
                    let t = hist::now();
                    self.hist.record(
                        "observe",
                        json!({"what": "db-promoted", "fault_id": fault_id, "node": primary, "failover_s": t - crashed_t}),
                    );
                    let (c, log2) = (cluster(&dir, &log)?, log.clone());
                    let child = Step::spawn(move || logged(c.rejoin(), &log2));
                    self.db_state.failover.phase = Some(Phase::Rejoining { fault_id, since, promoted_t: t, child });
                }
                Some(Err(e)) => bail!("promoting the synchronous standby failed ({e}); see {}", log.display()),
            },
            Some(Phase::Rejoining { fault_id, since, promoted_t, mut child }) => match child.try_finish() {
                None => self.db_state.failover.phase = Some(Phase::Rejoining { fault_id, since, promoted_t, child }),
                Some(Ok(_)) => {
                    let t = hist::now();
                    self.db_state.up_at = Some(t);
                    self.hist.record(
                        "observe",
                        json!({"what": "db-up", "fault_id": fault_id, "since": since, "down_s": t - since,
                               "rejoin_s": t - promoted_t}),
                    );
                }
                Some(Err(e)) => bail!("rebuilding the standbys after a failover failed ({e}); see {}", log.display()),
            },
            Some(p) => self.db_state.failover.phase = Some(p),
        }
        Ok(())
    }
}

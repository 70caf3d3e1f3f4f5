//! Database faults on a cluster under a real failover manager
//! (`--failover-manager pg_auto_failover`, [`crate::db::auto`]): the
//! harness breaks a node and watches the monitor; it never promotes.
//!
//! - `db-failover`: the primary's host dies (every process in its network
//!   namespace SIGKILLed);
//! - `db-primary-partition`: every packet on the primary's link dropped;
//! - `db-monitor-partition`: the primary cut off from the monitor only;
//! - `db-switchover`: `pg_autoctl perform switchover` (planned);
//! - `db-standby-lost`: a standby's host dies for a seeded 1–4 s.
//!
//! The first three are recorded as `db-failover` faults with their `cause`,
//! so `no-lost-commits-across-db-crash` judges them: the moment the primary
//! is lost (`db-primary-crashed`) the harness reads BOTH standbys (they are
//! read-only until one is promoted, so no client can have written there)
//! and records the higher seq per handoff (`db-failover-snapshot`). With
//! quorum replication (`ANY 1`) a commit is acknowledged once one standby
//! has it, and the monitor promotes the most advanced standby (or fast-
//! forwards the chosen one from it), so every acknowledgement before the
//! loss must be in that record. Then: the monitor's new primary
//! (`db-promoted`, failover time = loss to promotion), the victim healed or
//! its host restarted (its keeper rejoins it with pg_rewind), and the
//! formation whole again (`db-up`). A switchover's acknowledgements are
//! judged by the end-of-round invariants only (the primary takes writes
//! until pg_auto_failover drains it, so there is no safe moment to read).

use super::*;
use crate::db::{self, auto::Auto, sys::Log, Cut, Kill, Partition, Primary, Step};
use crate::pg_cluster::{auto_primary, auto_state, auto_streaming, auto_whole, Manager, NodeState};

/// A lost standby stays down this long (seconds, uniform).
pub const STANDBY_DOWN_S: (f64, f64) = (1.0, 4.0);
/// A partition is healed this long after the promotion at the latest, or
/// after this long without one (the monitor may keep the primary: a
/// partition from the monitor alone while the standbys still stream).
const HEAL_AFTER_S: f64 = 20.0;
/// The formation must be whole this long after the victim came back.
const WHOLE_WITHIN_S: f64 = 90.0;
/// The monitor is asked at most this often (a psql process each time).
const POLL_S: f64 = 0.25;

/// The default weights of the database faults under pg_auto_failover.
pub const AUTO_DB_MIX: [(FaultKind, f64); 7] = [
    (FaultKind::DbFailover, 3.0),
    (FaultKind::DbPrimaryPartition, 2.0),
    (FaultKind::DbMonitorPartition, 1.0),
    (FaultKind::DbSwitchover, 1.0),
    (FaultKind::DbStandbyLost, 2.0),
    (FaultKind::DbTerminateBackend, 4.0),
    (FaultKind::DbStall, 4.0),
];

/// Only pg_auto_failover's cluster has these faults, and it replicates
/// quorum-synchronously only (`--failover-manager` as given, not its label).
pub fn check_manager(mix: &[(FaultKind, f64)], pg_cluster: Option<&str>, manager: Option<&str>) -> Result<()> {
    let auto = matches!(manager.map(Manager::parse).transpose()?, Some(Manager::PgAutoFailover));
    if auto && pg_cluster == Some("async") {
        bail!("{}", crate::pg_cluster::AUTO_SYNC_ONLY);
    }
    let only_auto = [FaultKind::DbPrimaryPartition, FaultKind::DbMonitorPartition, FaultKind::DbStandbyLost];
    if let Some((k, _)) = mix.iter().find(|(k, w)| only_auto.contains(k) && *w > 0.0) {
        if !auto {
            bail!(
                "{} needs a cluster under a real failover manager: --store postgres --pg-cluster sync --failover-manager pg_auto_failover",
                k.name()
            );
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    HostKilled,
    Partitioned,
    MonitorPartitioned,
    Switchover,
    StandbyLost,
}

impl Cause {
    fn name(self) -> &'static str {
        match self {
            Cause::HostKilled => "host-killed",
            Cause::Partitioned => "partitioned",
            Cause::MonitorPartitioned => "monitor-partitioned",
            Cause::Switchover => "switchover",
            Cause::StandbyLost => "standby-lost",
        }
    }
}

/// The fault under way.
#[derive(Debug, Default)]
pub(super) struct AutoState {
    on: Option<On>,
    last_poll: f64,
}

#[derive(Debug)]
struct On {
    fault_id: u64,
    cause: Cause,
    victim: String,
    old_primary: String,
    since: f64,
    /// When the primary was lost (crash, cut), for the failover time.
    lost_t: f64,
    /// A lost standby's host comes back at this time.
    restore_at: f64,
    promoted_t: Option<f64>,
    restored_t: Option<f64>,
    switch: Option<Step>,
}

impl AutoState {
    pub(super) fn busy(&self) -> bool {
        self.on.is_some()
    }

    /// No primary takes writes yet: the old one is lost, none promoted.
    pub(super) fn unwritable(&self) -> bool {
        self.on
            .as_ref()
            .is_some_and(|o| o.promoted_t.is_none() && matches!(o.cause, Cause::HostKilled | Cause::Partitioned))
    }
}

/// The monitor sees one primary and every other node a secondary, and the
/// primary has that many standbys streaming.
fn whole(dir: &Path, nodes: &[NodeState]) -> bool {
    auto_whole(nodes) && auto_primary(nodes).is_some_and(|p| auto_streaming(dir, p).is_ok_and(|n| n + 1 >= nodes.len()))
}

/// The cluster in `dir`, its programs' output (and a failed step's error) to `log`.
fn auto(dir: &Path, log: &Path) -> db::Result<Auto> {
    Auto::at(dir, Log(Some(log.to_path_buf())))
}

/// One step on the cluster in `dir`, its failure noted in `log`.
fn step(dir: &Path, log: &Path, f: impl FnOnce(&Auto) -> db::Result<String>) -> db::Result<String> {
    let r = auto(dir, log).and_then(|a| f(&a));
    if let Err(e) = &r {
        Log(Some(log.to_path_buf())).note(&e.to_string());
    }
    r
}

impl Driver<'_> {
    /// Is this round's cluster under pg_auto_failover?
    pub(super) fn auto_manager(&self) -> bool {
        Manager::is_auto(self.cfg.failover_manager.as_deref())
    }

    fn auto_dir(&self) -> Option<PathBuf> {
        if self.auto_manager() {
            self.cfg.pg_cluster.as_ref().and(self.cfg.pg_data.clone())
        } else {
            None
        }
    }

    fn auto_log(&self) -> PathBuf {
        self.paths.procs.join("pg-auto.log")
    }

    /// Start one fault of `kind` on a whole formation; false when none can start.
    pub(super) fn auto_fault(&mut self, kind: FaultKind) -> bool {
        let Some(dir) = self.auto_dir() else { return false };
        if self.db_state.auto.busy() {
            return false;
        }
        let Ok(nodes) = auto_state(&dir) else { return false };
        if !whole(&dir, &nodes) {
            return false;
        }
        let Some(primary) = auto_primary(&nodes).map(str::to_string) else { return false };
        let cause = match kind {
            FaultKind::DbFailover => Cause::HostKilled,
            FaultKind::DbPrimaryPartition => Cause::Partitioned,
            FaultKind::DbMonitorPartition => Cause::MonitorPartitioned,
            FaultKind::DbSwitchover => Cause::Switchover,
            FaultKind::DbStandbyLost => Cause::StandbyLost,
            _ => return false,
        };
        let standbys: Vec<String> = nodes.iter().filter(|n| n.name != primary).map(|n| n.name.clone()).collect();
        let victim = if cause == Cause::StandbyLost {
            match standbys.choose(&mut self.rng_victim) {
                Some(s) => s.clone(),
                None => return false,
            }
        } else {
            primary.clone()
        };
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        let manager = crate::pg_cluster::AUTO_MANAGER;
        let down_s = self.rng_misc.gen_range(STANDBY_DOWN_S.0..=STANDBY_DOWN_S.1);
        let t = if cause == Cause::StandbyLost {
            self.hist.record(
                "fault",
                json!({"fault_id": id, "kind": "db-standby-lost", "signal": "HOST-KILL", "victim": victim,
                       "role": "database", "down_s": down_s, "failover_manager": manager}),
            )
        } else {
            self.hist.record(
                "fault",
                json!({"fault_id": id, "kind": "db-failover", "signal": "FAILOVER", "victim": primary,
                       "role": "database", "cause": cause.name(), "planned": cause == Cause::Switchover,
                       "replication": self.cfg.pg_cluster, "failover_manager": manager}),
            )
        };
        let log = self.auto_log();
        let mut switch = None;
        let step = match cause {
            Cause::HostKilled | Cause::StandbyLost => step(&dir, &log, |a| a.kill(&victim)).map(|_| ()),
            Cause::Partitioned => step(&dir, &log, |a| a.cut(&victim, Cut::All)).map(|_| ()),
            Cause::MonitorPartitioned => step(&dir, &log, |a| a.cut(&victim, Cut::Monitor)).map(|_| ()),
            // it takes seconds: run beside the event loop, reaped in auto_tick
            Cause::Switchover => {
                let (dir, log) = (dir.clone(), log.clone());
                switch = Some(Step::spawn(move || step(&dir, &log, |a| a.switchover())));
                Ok(())
            }
        };
        if let Err(e) = step {
            self.hist.record("observe", json!({"what": "db-fault-failed", "fault_id": id, "error": format!("{e:#}")}));
        }
        let mut lost_t = t;
        if matches!(cause, Cause::HostKilled | Cause::Partitioned | Cause::MonitorPartitioned) {
            self.pg = None;
            lost_t = self.hist.record(
                "observe",
                json!({"what": "db-primary-crashed", "fault_id": id, "node": primary, "cause": cause.name()}),
            );
            self.auto_snapshot(id, &dir, &standbys);
        }
        self.db_state.auto.on = Some(On {
            fault_id: id,
            cause,
            victim,
            old_primary: primary,
            since: t,
            lost_t,
            restore_at: hist::now() + down_s,
            promoted_t: None,
            restored_t: None,
            switch,
        });
        true
    }

    /// Both standbys, read while neither can take writes; the higher seq per handoff.
    fn auto_snapshot(&mut self, id: u64, dir: &Path, standbys: &[String]) {
        let schema = self.cfg.pg_schema();
        let mut max: serde_json::Map<String, Value> = serde_json::Map::new();
        let mut completed: Vec<String> = Vec::new();
        let mut per = serde_json::Map::new();
        let mut errors = Vec::new();
        for s in standbys {
            match crate::pg_cluster::snapshot(dir, s, &schema) {
                Ok((seqs, done, lsn)) => {
                    for (hid, v) in seqs.as_object().into_iter().flatten() {
                        let (new, old) = (v.as_i64(), max.get(hid).and_then(Value::as_i64));
                        if new.is_some() && (old.is_none() || new > old) {
                            max.insert(hid.clone(), v.clone());
                        }
                    }
                    for h in done {
                        if !completed.contains(&h) {
                            completed.push(h);
                        }
                    }
                    per.insert(s.clone(), json!({"replay_lsn": lsn}));
                }
                Err(e) => errors.push(format!("{s}: {e:#}")),
            }
        }
        completed.sort();
        let rec = if per.is_empty() {
            json!({"what": "db-failover-snapshot", "fault_id": id, "node": standbys.join("+"),
                   "error": errors.join("; ")})
        } else {
            json!({"what": "db-failover-snapshot", "fault_id": id, "node": standbys.join("+"), "nodes": per,
                   "unread": errors, "max_seq": max, "completed": completed})
        };
        self.hist.record("observe", rec);
    }

    /// Drive the fault under way (heal at once when `now_all`: faults stopped).
    pub(super) fn auto_tick(&mut self, now_all: bool) -> Result<()> {
        let Some(dir) = self.auto_dir() else { return Ok(()) };
        let now = hist::now();
        if self.db_state.auto.on.is_none() || now - self.db_state.auto.last_poll < POLL_S {
            return Ok(());
        }
        self.db_state.auto.last_poll = now;
        let nodes = auto_state(&dir).unwrap_or_default();
        let log = self.auto_log();
        let Some(mut on) = self.db_state.auto.on.take() else { return Ok(()) };
        if let Some(c) = on.switch.as_mut() {
            if let Some(s) = c.try_finish() {
                on.switch = None;
                if let Err(s) = s {
                    self.hist.record(
                        "observe",
                        json!({"what": "db-fault-failed", "fault_id": on.fault_id,
                        "error": format!("pg_autoctl perform switchover: {s}")}),
                    );
                }
            }
        }
        // the monitor's new primary
        if on.promoted_t.is_none() && on.cause != Cause::StandbyLost {
            if let Some(p) = auto_primary(&nodes).filter(|p| *p != on.old_primary) {
                let t = hist::now();
                on.promoted_t = Some(t);
                self.hist.record(
                    "observe",
                    json!({"what": "db-promoted", "fault_id": on.fault_id, "node": p, "by": "pg_auto_failover",
                           "failover_s": t - on.lost_t}),
                );
            }
        }
        // the victim back: a host restarted, a link healed
        if on.restored_t.is_none() {
            let due = match on.cause {
                Cause::StandbyLost => now >= on.restore_at,
                Cause::Switchover => true,
                _ => on.promoted_t.is_some() || now >= on.since + HEAL_AFTER_S,
            };
            if due || now_all {
                let r = match on.cause {
                    Cause::HostKilled | Cause::StandbyLost => step(&dir, &log, |a| a.start(&on.victim)),
                    Cause::Partitioned | Cause::MonitorPartitioned => step(&dir, &log, |a| a.heal(&on.victim)),
                    Cause::Switchover => Ok(String::new()),
                };
                r?;
                let t = hist::now();
                on.restored_t = Some(t);
                if on.cause != Cause::Switchover {
                    self.hist.record(
                        "observe",
                        json!({"what": "db-node-restored", "fault_id": on.fault_id, "node": on.victim,
                               "promoted": on.promoted_t.is_some()}),
                    );
                }
            }
        }
        if let Some(r) = on.restored_t {
            if on.switch.is_none() && whole(&dir, &nodes) {
                let t = hist::now();
                self.db_state.up_at = Some(t);
                self.hist.record(
                    "observe",
                    json!({"what": "db-up", "fault_id": on.fault_id, "since": on.since, "down_s": t - on.since,
                           "rejoin_s": t - r, "cause": on.cause.name(),
                           "primary": auto_primary(&nodes), "failed_over": on.promoted_t.is_some()}),
                );
                return Ok(());
            }
            if hist::now() > r + WHOLE_WITHIN_S {
                let view: Vec<String> = nodes.iter().map(|n| format!("{} {}/{}", n.name, n.reported, n.goal)).collect();
                bail!(
                    "pg_auto_failover's formation is not whole {WHOLE_WITHIN_S} s after {} came back ({}); see {}",
                    on.victim,
                    view.join(", "),
                    log.display()
                );
            }
        }
        self.db_state.auto.on = Some(on);
        Ok(())
    }
}

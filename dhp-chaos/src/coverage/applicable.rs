//! What a round's configuration (its `round.json`) lets the injector do:
//! which matrix cells, fault kinds and situations can happen at all, and
//! the reason when one cannot.

use super::{Column, Moment, Tally};
use crate::config::FaultKind;
use serde_json::Value;
use std::collections::BTreeMap;

/// The parts of a round's configuration coverage depends on.
pub(super) struct Config {
    /// Fault kinds with a positive weight in the mix.
    pub(super) mix: Vec<String>,
    pub(super) failpoints: bool,
    pub(super) pause_points: bool,
    pub(super) race_rate: f64,
    pub(super) dlq_handoffs: u64,
    pub(super) workload: bool,
    pub(super) audit: bool,
    pub(super) clock: bool,
    pub(super) sqlite: bool,
    pub(super) max_attempts_dlq: i64,
}

impl Config {
    pub(super) fn of(cfg: &Value) -> Config {
        let mix: Vec<String> = cfg["fault_mix"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|kw| kw[1].as_f64().is_some_and(|w| w > 0.0))
            .filter_map(|kw| kw[0].as_str().map(String::from))
            .collect();
        let builtin = matches!(cfg["workers"]["kind"].as_str(), Some("builtin") | Some("mixed"));
        Config {
            mix,
            failpoints: builtin && cfg["failpoint_rate"].as_f64().is_some_and(|r| r > 0.0),
            pause_points: cfg["pause_points"].as_str().is_some_and(|p| !p.is_empty()),
            race_rate: cfg["race_rate"].as_f64().unwrap_or(0.0),
            dlq_handoffs: cfg["dlq_handoffs"].as_u64().unwrap_or(0),
            workload: cfg["workload"].as_bool().unwrap_or(true),
            audit: cfg["audit"].as_bool().unwrap_or(true),
            clock: cfg["clock"]["share"].as_f64().is_some_and(|s| s > 0.0),
            sqlite: cfg["engine"].as_str().is_none_or(|e| e == "sqlite"),
            max_attempts_dlq: cfg["dlq_max_attempts"].as_i64().unwrap_or(4),
        }
    }

    pub(super) fn has(&self, k: FaultKind) -> bool {
        self.mix.iter().any(|m| m == k.name())
    }
    /// SIGKILLs of workers: kill-worker, kill-multi, host death.
    pub(super) fn worker_kills(&self) -> bool {
        self.has(FaultKind::KillWorker) || self.has(FaultKind::KillMulti) || self.has(FaultKind::HostDeath)
    }
    pub(super) fn pauses(&self) -> bool {
        self.has(FaultKind::Pause) || self.pause_points
    }
    pub(super) fn leader_kills(&self) -> bool {
        self.has(FaultKind::KillLeader) || self.has(FaultKind::KillMulti) || self.has(FaultKind::HostDeath)
    }
    /// Anything that takes a handoff from its worker (an orphan follows).
    pub(super) fn orphaning(&self) -> bool {
        self.worker_kills() || self.pauses() || self.failpoints
    }

    /// Why cell (`m`, `c`) cannot be hit, `None` when it can.
    pub(super) fn cell(&self, m: Moment, c: Column) -> Option<String> {
        use Moment::*;
        let supervisor_row = matches!(m, Orphan | LeaderHandover);
        let chunk_row = matches!(m, CheckpointBeforeAck | CheckpointAfterAck | Complete);
        match c {
            Column::Sigkill if supervisor_row && !self.leader_kills() && !self.has(FaultKind::KillFollower) => {
                Some("no supervisor kill in the fault mix".into())
            }
            Column::Sigkill if m == LeaderHandover && !self.leader_kills() => {
                Some("no kill-leader or kill-multi in the fault mix".into())
            }
            Column::Sigkill if !supervisor_row && !self.worker_kills() => {
                Some("no kill-worker or kill-multi in the fault mix".into())
            }
            Column::Sigkill if chunk_row && !self.workload => {
                Some("--workload local: the harness does not see which chunk a worker holds".into())
            }
            Column::Sigkill => None,
            Column::Sigstop if supervisor_row => Some("the injector stops workers only".into()),
            Column::Sigstop if matches!(m, Claim | Recover) => {
                Some("pause stops lease holders only (a claimer or recoverer holds none)".into())
            }
            Column::Sigstop if !self.pauses() => Some("no pause in the fault mix".into()),
            Column::Sigstop if chunk_row && !self.workload && !self.pause_points => {
                Some("--workload local: the harness does not see which chunk a worker holds".into())
            }
            Column::Sigstop => None,
            Column::Failpoint if !self.failpoints => {
                Some("no failpoint armed (--failpoint-rate 0, or workers without failpoints)".into())
            }
            Column::Failpoint if matches!(m, Claim | Recover | Orphan | LeaderHandover) => {
                Some("no failpoint the harness arms sits at this moment".into())
            }
            Column::Failpoint => None,
            Column::AtCommit if !self.has(FaultKind::KillAtCommit) && !self.has(FaultKind::PauseAtCommit) => {
                Some("no kill-at-commit or pause-at-commit in the fault mix".into())
            }
            Column::AtCommit if matches!(m, Claim | Recover) => {
                Some("armed at checkpoint and orphan commits only (its victim holds the handoff, or leads)".into())
            }
            Column::AtCommit if m == CheckpointBeforeAck => Some(
                "it fires after the commit is in the audit: placed after the ack (a committed chunk counts as acknowledged)"
                    .into(),
            ),
            Column::AtCommit => None,
        }
    }

    /// One tally per fault kind: every kind of `FaultKind::ALL`, the
    /// failpoints and clock skew; the mix's kinds are targets.
    pub(super) fn fault_tallies(&self, fired: &BTreeMap<String, u64>) -> Vec<Tally> {
        let mut out: Vec<Tally> = FaultKind::ALL
            .iter()
            .map(|k| {
                let name = k.name();
                let mut hits = fired.get(name).copied().unwrap_or(0);
                if *k == FaultKind::KillLeader {
                    // no live leader at the moment: the injector took any supervisor
                    hits += fired.get("kill-supervisor").copied().unwrap_or(0);
                }
                if *k == FaultKind::DbFailover {
                    hits += fired.get("db-switchover").copied().unwrap_or(0);
                }
                let in_mix = self.has(*k);
                Tally {
                    name: name.into(),
                    hits,
                    target: in_mix,
                    not_applicable: (!in_mix).then(|| match k {
                        FaultKind::LoseUnsynced => {
                            "needs --lose-unsynced: a one-host SQLite store on the harness's lazy file system".into()
                        }
                        _ => "not in this run's fault mix".into(),
                    }),
                    source: "harness fault records".into(),
                }
            })
            .collect();
        let fp: u64 = fired.iter().filter(|(k, _)| k.starts_with("failpoint:")).map(|(_, n)| *n).sum();
        out.push(Tally {
            name: "failpoint".into(),
            hits: fp,
            target: self.failpoints,
            not_applicable: (!self.failpoints).then(|| "no failpoint armed".into()),
            source: "harness exit records (a failpoint kill)".into(),
        });
        out.push(Tally {
            name: "clock".into(),
            hits: fired.get("clock").copied().unwrap_or(0),
            target: false,
            not_applicable: (!self.clock).then(|| "--clock 0: no process runs with a skewed clock".into()),
            source: "harness spawn records (faketime)".into(),
        });
        out
    }
}

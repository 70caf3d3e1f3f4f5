//! Round configuration: everything a round needs to run, saved as
//! `round.json` so `dhp-chaos analyze` can re-check it later.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which implementation runs a role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "argv", rename_all = "lowercase")]
pub enum Impl {
    /// `dhp work` / `dhp supervisor` (this repository).
    Builtin,
    /// The reference's `work_driver4.py` / `supervisor3_watch.py`, run by the
    /// venv interpreter through the history shim.
    Python,
    /// Workers only: each spawn draws builtin or python from the seeded RNG.
    Mixed,
    /// Any command speaking the `dhp work` / `dhp supervisor` command line.
    Cmd(Vec<String>),
}

impl Impl {
    /// Parses a `--workers` / `--supervisors` value (`role` names the flag in errors; `mixed` is for workers only).
    pub fn parse(s: &str, role: &str) -> Result<Impl> {
        Ok(match s.trim() {
            "builtin" | "ours" | "rust" => Impl::Builtin,
            "python" | "reference" => Impl::Python,
            "mixed" if role == "workers" => Impl::Mixed,
            "mixed" => bail!("--{role} mixed is only for workers"),
            "" => {
                bail!("--{role} needs builtin, python{} or a command", if role == "workers" { ", mixed" } else { "" })
            }
            cmd => Impl::Cmd(cmd.split_whitespace().map(String::from).collect()),
        })
    }

    /// The name reports and `round.json` use: `builtin`, `python`, `mixed` or `cmd:ARGV`.
    pub fn label(&self) -> String {
        match self {
            Impl::Builtin => "builtin".into(),
            Impl::Python => "python".into(),
            Impl::Mixed => "mixed".into(),
            Impl::Cmd(argv) => format!("cmd:{}", argv.join(" ")),
        }
    }

    /// Whether spawns of this role may run the Python reference (needs its interpreter).
    pub fn uses_python(&self) -> bool {
        matches!(self, Impl::Python | Impl::Mixed)
    }
}

/// The kinds of fault the injector draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGKILL one worker.
    KillWorker,
    /// SIGKILL the supervisor holding leadership.
    KillLeader,
    /// SIGKILL a supervisor that is not the leader.
    KillFollower,
    /// SIGKILL 2–3 processes at once (workers and supervisors).
    KillMulti,
    /// SIGSTOP a worker holding a lease; SIGCONT it after it was replaced.
    Pause,
    /// SIGKILL the TCP transport server (`--ship tcp`); it is restarted on the same port.
    KillTransport,
    /// `--hosts N` only: cut the network between hosts (iptables DROP in
    /// their namespaces), healed after a seeded time.
    Partition,
    /// `--hosts N` only: SIGKILL every process of one host at once (its disk
    /// stays); a standby host takes its handoffs over from the shipped log.
    HostDeath,
    /// PostgreSQL only: `pg_ctl stop -m immediate`, started again after a seeded delay.
    DbCrash,
    /// PostgreSQL only: `pg_terminate_backend` of one backend of a worker or of the leader.
    DbTerminateBackend,
    /// PostgreSQL only: SIGSTOP a worker caught inside a write transaction (holding row locks).
    DbStall,
    /// A link fault (`--ship tcp`): a seeded toxic on the proxy between the
    /// shippers and the transport server — latency with jitter, a bandwidth
    /// cap, a blackhole (with or without a timeout), reset, slow close, or a
    /// cut after N bytes — for a seeded 0.2–1.5 s.
    Link,
    /// `--disk`: fill the transport server's tmpfs until ENOSPC, freed
    /// after a seeded 0.2–1.5 s.
    DiskFull,
    /// `--store-disk`: fill the tmpfs under the SQLite store (the one the
    /// workers and supervisors share) until ENOSPC, freed after a seeded
    /// 0.3–2 s.
    StoreFull,
    /// PostgreSQL only: a seeded toxic (the [`FaultKind::Link`] vocabulary)
    /// on the proxy between the workers and the database server, for a
    /// seeded 0.2–1.5 s.
    DbLink,
    /// `--pg-cluster` only: the synchronous standby stops receiving WAL for
    /// a seeded lag window, the primary is crashed and fenced, the standby
    /// promoted (`pg_ctl promote`), the other nodes rebuilt behind it.
    DbFailover,
    /// `--pg-cluster` only: a planned switchover — the primary is stopped
    /// cleanly (`pg_ctl stop -m fast`), the synchronous standby promoted.
    /// Recorded as a `db-failover` with `"planned": true`.
    DbSwitchover,
    /// `--failover-manager pg_auto_failover` only: every packet on the
    /// primary's link is dropped (its standbys, the monitor, the clients)
    /// until the monitor has promoted another node; recorded as a
    /// `db-failover` with `"cause": "partitioned"`.
    DbPrimaryPartition,
    /// `--failover-manager pg_auto_failover` only: the primary is cut off
    /// from the monitor alone (the failover manager's consensus), standbys
    /// and clients still reach it; recorded as a `db-failover` with
    /// `"cause": "monitor-partitioned"`.
    DbMonitorPartition,
    /// `--failover-manager pg_auto_failover` only: a standby's host dies
    /// for a seeded 1–4 s (every process in its namespace SIGKILLed), then
    /// comes back and rejoins.
    DbStandbyLost,
    /// `--workload service` only: arm a lease-holding worker; the workload
    /// service SIGSTOPs it when it answers the worker's next chunk, before
    /// the worker could check its ownership again; SIGCONT after it was
    /// replaced, like a pause (`crate::workload::ChunkStops`).
    StopAtChunk,
    /// `--lose-unsynced` only: the SQLite store's host crashes — every
    /// worker and supervisor SIGKILLed, then every store file put back to
    /// what its last fsync left (`crate::lazyfs`).
    LoseUnsynced,
    /// SQLite stores with the audit: arm the next checkpoint commit (or
    /// orphan commit); the harness SIGKILLs the worker (or leader) behind it
    /// the moment its monitor sees that commit in the store audit.
    KillAtCommit,
    /// Like [`FaultKind::KillAtCommit`] at a checkpoint commit, with SIGSTOP:
    /// the worker is stopped right after its commit, woken once replaced.
    PauseAtCommit,
}

impl FaultKind {
    /// Every fault kind, in declaration order.
    pub const ALL: [FaultKind; 24] = [
        FaultKind::KillWorker,
        FaultKind::KillLeader,
        FaultKind::KillFollower,
        FaultKind::KillMulti,
        FaultKind::Pause,
        FaultKind::KillTransport,
        FaultKind::Partition,
        FaultKind::HostDeath,
        FaultKind::DbCrash,
        FaultKind::DbTerminateBackend,
        FaultKind::DbStall,
        FaultKind::Link,
        FaultKind::DiskFull,
        FaultKind::StoreFull,
        FaultKind::DbLink,
        FaultKind::DbFailover,
        FaultKind::DbSwitchover,
        FaultKind::DbPrimaryPartition,
        FaultKind::DbMonitorPartition,
        FaultKind::DbStandbyLost,
        FaultKind::StopAtChunk,
        FaultKind::LoseUnsynced,
        FaultKind::KillAtCommit,
        FaultKind::PauseAtCommit,
    ];

    /// The kebab-case name of `--faults`, history records and reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillWorker => "kill-worker",
            FaultKind::KillLeader => "kill-leader",
            FaultKind::KillFollower => "kill-follower",
            FaultKind::KillMulti => "kill-multi",
            FaultKind::Pause => "pause",
            FaultKind::KillTransport => "kill-transport",
            FaultKind::Partition => "partition",
            FaultKind::HostDeath => "host-death",
            FaultKind::DbCrash => "db-crash",
            FaultKind::DbTerminateBackend => "db-terminate-backend",
            FaultKind::DbStall => "db-stall",
            FaultKind::Link => "link",
            FaultKind::DiskFull => "disk-full",
            FaultKind::StoreFull => "store-full",
            FaultKind::DbLink => "db-link",
            FaultKind::DbFailover => "db-failover",
            FaultKind::DbSwitchover => "db-switchover",
            FaultKind::DbPrimaryPartition => "db-primary-partition",
            FaultKind::DbMonitorPartition => "db-monitor-partition",
            FaultKind::DbStandbyLost => "db-standby-lost",
            FaultKind::StopAtChunk => "stop-at-chunk",
            FaultKind::LoseUnsynced => "lose-unsynced",
            FaultKind::KillAtCommit => "kill-at-commit",
            FaultKind::PauseAtCommit => "pause-at-commit",
        }
    }

    /// A fault of the database itself (PostgreSQL stores only).
    pub fn is_db(self) -> bool {
        matches!(
            self,
            FaultKind::DbCrash
                | FaultKind::DbTerminateBackend
                | FaultKind::DbStall
                | FaultKind::DbFailover
                | FaultKind::DbSwitchover
                | FaultKind::DbPrimaryPartition
                | FaultKind::DbMonitorPartition
                | FaultKind::DbStandbyLost
        )
    }

    /// The fault kind with this [`FaultKind::name`], if any.
    pub fn from_name(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// `kill-worker=5,pause=1` → weights (kinds not named get 0). A bare name
/// means weight 1.
pub fn parse_fault_mix(s: &str) -> Result<Vec<(FaultKind, f64)>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, w) = match part.split_once('=') {
            Some((n, w)) => (n.trim(), w.trim().parse::<f64>().with_context(|| format!("bad weight in {part:?}"))?),
            None => (part, 1.0),
        };
        let kind = FaultKind::from_name(name).with_context(|| {
            format!(
                "unknown fault kind {name:?} (known: {})",
                FaultKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            )
        })?;
        if !(w.is_finite() && w >= 0.0) {
            bail!("fault weight for {name} must be >= 0");
        }
        out.push((kind, w));
    }
    if out.iter().all(|(_, w)| *w == 0.0) {
        bail!("--faults: at least one fault kind needs a positive weight");
    }
    Ok(out)
}

/// The nemesis families of `--nemesis` (issue 17's vocabulary).
pub const NEMESES: [&str; 9] = ["kill", "pause", "failpoint", "partition", "link", "host", "clock", "disk", "db-link"];

/// What `--nemesis` chose: scheduled fault kinds with their default
/// weights, and the families that are settings rather than scheduled faults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Nemesis {
    /// Scheduled fault kinds and their weights (the `--faults` mix).
    pub mix: Vec<(FaultKind, f64)>,
    /// `failpoint`: workers are spawned with failpoints armed.
    pub failpoints: bool,
    /// `clock`: some processes run under a skewed clock (`--clock`).
    pub clock: bool,
    /// `disk`: the transport server's logs are on a small disk (`--disk`),
    /// and so is the SQLite store (`--store-disk`).
    pub disk: bool,
}

/// `--nemesis kill,pause,partition` → the fault mix (default weights of the
/// named families) and the families that are settings.
pub fn parse_nemesis(s: &str, tcp: bool) -> Result<Nemesis> {
    let mut n = Nemesis::default();
    for name in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match name {
            "kill" => {
                n.mix.extend(default_fault_mix().into_iter().filter(|(k, _)| *k != FaultKind::Pause));
                if tcp {
                    n.mix.push((FaultKind::KillTransport, 6.0));
                }
            }
            "pause" => n.mix.push((FaultKind::Pause, 12.0)),
            "failpoint" => n.failpoints = true,
            "partition" => n.mix.push((FaultKind::Partition, 8.0)),
            "host" => n.mix.push((FaultKind::HostDeath, 4.0)),
            "link" => n.mix.push((FaultKind::Link, 8.0)),
            "db-link" => n.mix.push((FaultKind::DbLink, 8.0)),
            "disk" => {
                n.disk = true;
                n.mix.push((FaultKind::DiskFull, 4.0));
                n.mix.push((FaultKind::StoreFull, 4.0));
            }
            "clock" => n.clock = true,
            _ => bail!("unknown nemesis {name:?} (known: {})", NEMESES.join(", ")),
        }
    }
    n.mix.dedup_by_key(|(k, _)| *k);
    if n.mix.is_empty() {
        bail!("--nemesis needs at least one of kill, pause, partition, link, host, disk, db-link (failpoint and clock alone schedule no faults)");
    }
    Ok(n)
}

/// The default weights of the kill and pause faults (without `--faults` or `--nemesis`, the
/// whole mix of a `--ship file` round).
pub fn default_fault_mix() -> Vec<(FaultKind, f64)> {
    vec![
        (FaultKind::KillWorker, 50.0),
        (FaultKind::KillLeader, 10.0),
        (FaultKind::KillFollower, 8.0),
        (FaultKind::KillMulti, 14.0),
        (FaultKind::Pause, 12.0),
    ]
}

/// How workers ship checkpoints to the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Ship {
    /// `--ship LOG`: append to the transport log file directly.
    #[default]
    File,
    /// `--ship-to HOST:PORT` (sync): a `dhp transport` server writes the peer log.
    Tcp,
    /// `--ship-to HOST:PORT --ship-mode async`.
    TcpAsync,
}

impl Ship {
    /// Parses a `--ship` value: `file`, `tcp` (or `tcp-sync`) or `tcp-async`.
    pub fn parse(s: &str) -> anyhow::Result<Ship> {
        Ok(match s {
            "file" => Ship::File,
            "tcp" | "tcp-sync" => Ship::Tcp,
            "tcp-async" => Ship::TcpAsync,
            _ => bail!("--ship file|tcp|tcp-async"),
        })
    }
    /// Checkpoints go over TCP to a `dhp transport` server (sync or async).
    pub fn is_tcp(self) -> bool {
        self != Ship::File
    }
}

/// Clock faults (`--clock`): which share of worker and supervisor spawns run
/// with a faked clock, and how far off it may be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClockFaults {
    /// Probability that a worker or supervisor spawn gets a faked clock.
    pub share: f64,
    /// Offsets are uniform in ±this many seconds.
    pub max_offset_s: f64,
    /// Rates are log-uniform in [1/this, this].
    pub max_rate: f64,
}

/// The failpoints the injector arms in builtin worker spawns.
pub const FAILPOINTS: [&str; 5] =
    ["checkpoint.in_tx", "ship.after_commit", "heartbeat", "complete", "complete.after_commit"];

/// DHP timing knobs passed to every spawned process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Seconds between heartbeats (`DHP_LEASE_INTERVAL_S`).
    pub lease_interval_s: f64,
    /// Heartbeats a lease may miss before it expires (`DHP_LEASE_MAX_MISSED`).
    pub lease_max_missed: i64,
    /// Seconds between supervisor scans (`DHP_SUPERVISOR_SCAN_S`).
    pub supervisor_scan_s: f64,
    /// Seconds a supervisor leadership lasts unless renewed (`DHP_LEADER_TTL_S`).
    pub leader_ttl_s: f64,
}

impl Timing {
    /// The four knobs as the environment variables `dhp` and the reference read.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("DHP_LEASE_INTERVAL_S".into(), self.lease_interval_s.to_string()),
            ("DHP_LEASE_MAX_MISSED".into(), self.lease_max_missed.to_string()),
            ("DHP_SUPERVISOR_SCAN_S".into(), self.supervisor_scan_s.to_string()),
            ("DHP_LEADER_TTL_S".into(), self.leader_ttl_s.to_string()),
        ]
    }
}

fn yes() -> bool {
    true
}

/// One round, fully determined by these values and the seed (the fault
/// schedule, not the OS interleaving).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundConfig {
    /// This round's seed (the run seed plus the round index).
    pub seed: u64,
    /// Index of the round within its run (naming only).
    pub round: u32,
    /// Census handoffs dispatched in the round (M).
    pub handoffs: u32,
    /// Chunks per handoff.
    pub chunks: u64,
    /// Numbers per chunk.
    pub chunk: u64,
    /// First handoff's `lo`; handoff i covers `[base + i*chunks*chunk, +chunks*chunk)`.
    pub base: u64,
    /// Worker sleep after each chunk, seconds (`--pace`).
    pub pace_s: f64,
    /// `max_attempts` of ordinary handoffs.
    pub max_attempts: i64,
    /// How many handoffs get `dlq_max_attempts` instead (exercises the DLQ).
    pub dlq_handoffs: u32,
    /// `max_attempts` of the `dlq_handoffs` handoffs (low, to exercise the DLQ path).
    pub dlq_max_attempts: i64,
    /// Which implementation runs the workers.
    pub workers: Impl,
    /// Which implementation runs the supervisors.
    pub supervisors: Impl,
    /// Supervisors kept alive (killed ones are replaced).
    pub supervisor_count: u32,
    /// Seconds between faults: uniform in `[min, max]`.
    pub fault_interval_s: (f64, f64),
    /// Fault kinds the injector draws, with their relative weights.
    pub fault_mix: Vec<(FaultKind, f64)>,
    /// Probability that a builtin worker spawn has a failpoint armed.
    pub failpoint_rate: f64,
    /// Probability that an orphan (or a pending handoff) gets 2–3 racing workers.
    pub race_rate: f64,
    /// A paused worker is resumed at the latest after this long.
    pub pause_max_s: f64,
    /// Replacement supervisors start after a delay uniform in `[0, this]`.
    pub supervisor_restart_max_s: f64,
    /// Faults are injected for at most this long.
    pub fault_seconds: f64,
    /// After faults stop, wait this long for every handoff to end.
    pub grace_seconds: f64,
    /// DHP timing knobs every spawned process gets.
    pub timing: Timing,
    /// How workers ship checkpoints to the peer.
    #[serde(default)]
    pub ship: Ship,
    /// `--ship tcp-async`: `dhp work --ship-max-lag` (the async-lag invariant's bound).
    #[serde(default = "dhp_max_lag")]
    pub ship_max_lag: u64,
    /// `--disk`: the transport server's log directory is a tmpfs of this many bytes.
    #[serde(default)]
    pub disk_bytes: Option<u64>,
    /// `--store-disk`: the SQLite store's directory is a tmpfs of this many bytes.
    #[serde(default)]
    pub store_disk_bytes: Option<u64>,
    /// `--lose-unsynced`: the SQLite store is on the harness's lazy file
    /// system, and `lose-unsynced` faults crash it (`crate::lazyfs`).
    #[serde(default)]
    pub lose_unsynced: bool,
    /// Clock faults (share 0: none).
    #[serde(default)]
    pub clock: ClockFaults,
    /// The transport server command (`None`: `dhp transport`); `LOGDIR --port P` appended.
    #[serde(default)]
    pub transport: Option<Vec<String>>,
    /// Pause points for python workers (`checkpoint.after_check=P,complete.after_check=Q`),
    /// passed to the shim as DHP_CHAOS_PAUSE_POINTS; empty = none.
    #[serde(default)]
    pub pause_points: String,
    /// Builtin workers publish liveness tokens (fast same-host detection).
    pub liveness: bool,
    /// The processes under test get the round's history file (`--impl-history on`,
    /// the default); off: they get `/dev/null` and the checker ignores every
    /// history line not written by the harness (`check/sources.rs`).
    #[serde(default = "yes")]
    pub impl_history: bool,
    /// Invariants that may be `unchecked` without failing the round
    /// (`--allow-unchecked NAME,…`; `all` for every one).
    #[serde(default)]
    pub allow_unchecked: Vec<String>,
    /// Coverage targets that may stay unreached without the not-covered
    /// exit code (`--allow-uncovered NAME,…`; `all` for every one).
    #[serde(default)]
    pub allow_uncovered: Vec<String>,
    /// `--steer`: coverage-guided scheduling (`crate::coverage::steer`).
    #[serde(default)]
    pub steer: bool,
    /// `--schedule FILE`: inject these faults at these times instead of
    /// drawing kinds and intervals (`crate::shrink`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<crate::shrink::ScriptedFault>>,
    /// Install the store audit (triggers and a harness-owned table, `src/audit/`).
    #[serde(default = "yes")]
    pub audit: bool,
    /// Serve the census chunks from the harness's workload service
    /// (`src/workload/`, `--workload service`, the default); `local`: the
    /// workers compute them, and the checks that need the service's record
    /// are UNCHECKED. Rounds saved before the service existed load as `local`.
    #[serde(default)]
    pub workload: bool,
    /// The `dhp` binary builtin processes run.
    pub dhp: PathBuf,
    /// Interpreter for python workers/supervisors.
    pub python: Option<PathBuf>,
    /// Directory holding the reference's `work_driver4.py`.
    pub reference_dir: Option<PathBuf>,
    /// The command that replays this round.
    pub replay: String,
    /// A tag drawn once per run (8 hex digits): a PostgreSQL round's schema
    /// is `chaos_<seed>_<round>_<run_id>`, so two runs of one seed on one
    /// server never share a schema. Empty in runs saved before it existed.
    #[serde(default)]
    pub run_id: String,
    /// The store engine: `sqlite` (a directory in the round) or `postgres`.
    #[serde(default = "sqlite_engine")]
    pub engine: String,
    /// PostgreSQL rounds: the server URL without `schema=` (the round's
    /// schema is [`RoundConfig::pg_schema`]). Never saved: it holds a password.
    #[serde(default, skip_serializing)]
    pub pg_url: Option<String>,
    /// `--hosts N`: this round is one simulated host of N (its own network
    /// namespace, data directory, supervisors, workers and transport server).
    #[serde(default)]
    pub host: Option<HostRole>,
    /// The fault schedule starts once this many checkpoints are committed
    /// (its times, and `fault_seconds`, count from then); 0: at the round's start.
    #[serde(default)]
    pub faults_after_checkpoints: u64,
    /// PostgreSQL rounds with database faults: the cluster directory
    /// (`scripts/pg.sh` layout) that `db-crash` stops and starts again.
    #[serde(default)]
    pub pg_data: Option<PathBuf>,
    /// `--pg-cluster`: the replicated cluster's replication (`sync` or
    /// `async`); `pg_data` is then its `scripts/pg-cluster.sh` directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg_cluster: Option<String>,
    /// `--pg-cluster`: who promotes a standby (`harness (pg_ctl promote)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover_manager: Option<String>,
}

/// One simulated host of a `--hosts N` round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRole {
    /// Position among the hosts (`h0`, `h1`, …).
    pub index: u32,
    /// How many hosts the round has.
    pub count: u32,
    /// The network namespace every process of this host runs in.
    pub netns: String,
    /// This host's address (its transport server listens on it).
    pub addr: String,
    /// The peer's transport server, `ADDR:PORT`: workers ship there.
    pub ship_to: String,
    /// The transport token every host shares.
    pub token: String,
}

/// `dhp work`'s own default, for rounds saved before the field existed.
fn dhp_max_lag() -> u64 {
    256
}

fn sqlite_engine() -> String {
    "sqlite".into()
}

impl RoundConfig {
    /// The PostgreSQL schema holding this round's store (unique per seed and round).
    pub fn pg_schema(&self) -> String {
        if self.run_id.is_empty() {
            format!("chaos_{:016x}_{}", self.seed, self.round)
        } else {
            format!("chaos_{:016x}_{}_{}", self.seed, self.round, self.run_id)
        }
    }

    /// The ROOT argument of a PostgreSQL round: the URL plus `schema=`.
    pub fn pg_root(&self) -> Option<String> {
        self.pg_url.as_ref().map(|u| {
            let sep = if u.contains('?') { '&' } else { '?' };
            format!("{u}{sep}schema={}", self.pg_schema())
        })
    }

    /// The census range `[lo, hi)` of handoff `i` (see [`RoundConfig::base`]).
    pub fn lo_hi(&self, i: u32) -> (u64, u64) {
        let span = self.chunks * self.chunk;
        let lo = self.base + u64::from(i) * span;
        (lo, lo + span)
    }
}

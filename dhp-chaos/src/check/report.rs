//! The round report: one verdict per invariant, latencies, fault counts.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One invariant's verdict (its `name` is [`super::Invariant::name`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// The invariant's name ([`super::Invariant::name`]).
    pub name: String,
    /// What the invariant promises ([`super::Invariant::doc`]).
    pub what: String,
    /// How many items were checked (0 means the invariant was not exercised).
    pub checked: u64,
    /// Violations no documented weakness of the reference explains, one message each.
    pub violations: Vec<String>,
    /// Violations that start at a documented weakness of the Python
    /// reference (only ever for handoffs a reference process broke).
    pub known: Vec<String>,
    /// Things worth knowing that are not violations.
    pub notes: Vec<String>,
    /// `held`, `violated`, `unchecked` (a source it needs was missing, or it
    /// checked 0 events where the harness saw some) or `not-exercised`
    /// (the round gave it nothing to check). Empty in reports saved before.
    #[serde(default)]
    pub status: String,
    /// The sources this verdict rests on (`check::Source::name`): those it
    /// needs, and those it used for detail.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Sources it needs that this round lacked.
    #[serde(default)]
    pub missing: Vec<String>,
    /// Why it is unchecked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl Verdict {
    pub(crate) fn new(name: &'static str, what: &'static str) -> Self {
        Verdict {
            name: name.into(),
            what: what.into(),
            checked: 0,
            violations: Vec::new(),
            known: Vec::new(),
            notes: Vec::new(),
            status: String::new(),
            sources: Vec::new(),
            missing: Vec::new(),
            unchecked: None,
        }
    }
    /// No violation at all (known reference weaknesses included).
    pub fn held(&self) -> bool {
        self.violations.is_empty() && self.known.is_empty()
    }
}

/// Latency distribution (seconds).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stats {
    /// How many samples.
    pub n: usize,
    /// Median, seconds (nearest rank; `None` without samples).
    pub p50: Option<f64>,
    /// 99th percentile, seconds (nearest rank; `None` without samples).
    pub p99: Option<f64>,
    /// Largest sample, seconds (`None` without samples).
    pub max: Option<f64>,
    /// Every sample in seconds, ascending (the run totals drop them).
    pub samples: Vec<f64>,
}

/// The distribution of `v` (seconds): nearest-rank p50 and p99, and the maximum.
pub(crate) fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        // nearest rank
        let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
        Some(v[rank.min(v.len()) - 1])
    };
    Stats { n: v.len(), p50: pct(50.0), p99: pct(99.0), max: v.last().copied(), samples: v }
}

/// How fast faults were detected and recovered from (seconds).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latencies {
    /// Injector SIGKILL of a lease-holding worker → orphan committed.
    pub worker_kill: Stats,
    /// SIGSTOP of a lease-holding worker → orphan (lease expiry path).
    pub pause: Stats,
    /// Failpoint self-kill (as observed by the reaper) → orphan.
    pub failpoint: Stats,
    /// SIGKILL of the leader supervisor → another leader observed.
    pub leader_failover: Stats,
    /// `worker_kill` restricted to steady state: a live leader at the kill,
    /// no supervisor killed within a leader TTL before or until the orphan,
    /// and no store stall in between. This is the detector's own latency.
    pub worker_kill_steady: Stats,
    /// Injector SIGKILL of a lease-holding worker → the first checkpoint
    /// committed by its successor (detection + provisioning + recover).
    pub kill_to_resume: Stats,
    /// Why the other worker-kill samples were not steady state.
    pub disturbed_by: BTreeMap<String, usize>,
    /// Every measured fault: which one, and its kill → orphan latency.
    pub per_fault: Vec<FaultLatency>,
    /// Lease-holding victims whose handoff was never orphaned and never completed by them.
    pub undetected: Vec<String>,
    /// Lease-holding victims whose host died (`--hosts`) before their lease could have been
    /// orphaned: not detection failures (the standby takes over; the failover invariant).
    #[serde(default)]
    pub host_died_first: u64,
    /// Victims the harness's monitor saw holding a lease whose handoff had
    /// already been orphaned (a false orphan: skew, load) or completed by
    /// them before the fault: checked, with nothing left to detect.
    #[serde(default)]
    pub resolved_before: u64,
    /// Where the orphan time came from: supervisor history or the monitor.
    pub from_history: usize,
    /// Orphan times taken from the monitor, because no supervisor recorded the orphan.
    pub from_monitor: usize,
    /// Orphan times taken from the store audit (no supervisor history).
    #[serde(default)]
    pub from_audit: usize,
}

/// One fault on a lease-holding worker, and how long until its handoff was orphaned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultLatency {
    /// The injector's `fault_id` in the history.
    pub fault_id: u64,
    /// The fault kind (`kill-worker`, `pause`, `failpoint`, …).
    pub kind: String,
    /// The signal that hit the victim: `KILL` or `STOP`.
    pub signal: String,
    /// The victim's process name.
    pub victim: String,
    /// The handoff it held (first 12 characters).
    pub hid: String,
    /// The fence it held at the fault.
    pub fence: i64,
    /// Seconds from the fault to the orphan committing it.
    pub latency_s: f64,
    /// `supervisor history`, else `store audit`, else `monitor`.
    pub source: String,
    /// Why this sample is not steady state (worker SIGKILLs only).
    pub disturbed_by: Option<String>,
}

/// Periods in which nobody could commit: a SIGSTOPped worker was holding
/// the SQLite write lock (no `data_version` change for 250 ms, and a
/// `BEGIN IMMEDIATE` probe finds the lock taken).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stalls {
    /// How many stalls.
    pub n: usize,
    /// Their total length, seconds.
    pub total_s: f64,
    /// The longest, seconds.
    pub max_s: f64,
}

/// What the workers the injector SIGSTOPped did once woken.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Zombies {
    /// Workers the injector SIGSTOPped.
    pub paused: u64,
    /// Woken after a successor had been granted a newer fence.
    pub woken_after_replacement: u64,
    /// Of those, whose first protocol operation after waking failed (fenced).
    pub fenced: u64,
    /// Of those, that exited or were fenced without any further operation recorded.
    pub silent: u64,
    /// Of those, that committed a write after waking (must be 0).
    pub wrote: u64,
}

/// Chunks one faulted worker computed but did not commit itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rework {
    /// The faulted worker.
    pub victim: String,
    /// The handoff it worked on (first 12 characters).
    pub hid: String,
    /// How many chunks (the `next_n` of each).
    pub chunks: u64,
}

/// Everything about one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundReport {
    /// The round directory.
    pub dir: String,
    /// This round's seed.
    pub seed: u64,
    /// Index of the round within its run.
    pub round: u32,
    /// Which implementation ran the workers ([`crate::config::Impl::label`]).
    pub workers: String,
    /// Which implementation ran the supervisors ([`crate::config::Impl::label`]).
    pub supervisors: String,
    /// The command that replays this round.
    pub replay: String,
    /// Handoffs the round dispatched.
    pub handoffs: usize,
    /// Of those, completed in the store.
    pub completed: usize,
    /// Of those, parked in the DLQ after `max_attempts`.
    pub dlq: usize,
    /// Length of the fault phase, seconds.
    pub fault_phase_s: f64,
    /// Length of the whole round, seconds.
    pub round_s: f64,
    /// SIGKILLs among the faults (failpoint self-kills included).
    pub kills: u64,
    /// `kills` per minute of the fault phase.
    pub kills_per_min: f64,
    /// Faults by kind, each counted once (`failpoint:NAME` per failpoint).
    pub faults_by_kind: BTreeMap<String, u64>,
    /// SIGKILLs by the victim's role.
    pub kills_by_role: BTreeMap<String, u64>,
    /// Worker processes the round spawned.
    pub spawned_workers: u64,
    /// Supervisor processes the round spawned (replacements included).
    pub spawned_supervisors: u64,
    /// Successful `recover` operations in the history.
    pub recoveries: u64,
    /// Times 2–3 workers were started to race for one handoff.
    pub racing_provisions: u64,
    /// Claims and recovers that failed (lost a race or were refused).
    pub race_losers: u64,
    /// Checkpoints in the store, over every census handoff.
    pub checkpoints: u64,
    /// Detection and recovery latencies.
    pub latencies: Latencies,
    /// Periods in which a stopped worker held the store's write lock.
    pub store_stalls: Stalls,
    /// What paused workers did once woken.
    pub zombies: Zombies,
    /// Chunks a faulted worker computed but did not commit itself (lost or
    /// recomputed by its successor): the most for one victim, and in total.
    pub rework_max_chunks: u64,
    /// Chunks faulted workers computed but did not commit, over every victim.
    pub rework_total_chunks: u64,
    /// The same per faulted worker (what `rework_max_chunks` and `rework_total_chunks` sum).
    #[serde(default)]
    pub rework_per_fault: Vec<Rework>,
    /// Link, clock and disk fault figures.
    #[serde(default)]
    pub env: super::EnvFacts,
    /// One verdict per invariant, in [`super::Invariant::ALL`] order.
    pub invariants: Vec<Verdict>,
    /// The sources this round had (`check::Source::name`).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Events in the store audit (`None`: the round had no audit).
    #[serde(default)]
    pub audit_events: Option<usize>,
    /// Invariants that ended `unchecked` and were not allowed to (exit code 3).
    #[serde(default)]
    pub unchecked: Vec<String>,
    /// Invariants that ended `unchecked` and `--allow-unchecked` named.
    #[serde(default)]
    pub unchecked_allowed: Vec<String>,
    /// History lines that parsed as JSON objects.
    pub history_lines: usize,
    /// History lines that did not (see [`crate::hist::History::malformed`]).
    pub history_malformed: usize,
    /// `history.jsonl` lines claiming to be the harness's: forged, ignored
    /// ([`crate::hist::History::forged`]).
    #[serde(default)]
    pub history_forged: usize,
    /// Processes of the round found alive after the harness ended them all
    /// (a `setsid` descendant): each one makes the round not held.
    #[serde(default)]
    pub survivors: Vec<String>,
    /// Every invariant held (no violation, known reference weaknesses included).
    pub held: bool,
    /// What the round exercised, as the harness saw it (`crate::coverage`).
    #[serde(default)]
    pub coverage: crate::coverage::Coverage,
    /// `--hosts` rounds: which simulated host this report is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<u32>,
    /// The standby that took over `host` after it died.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standby: bool,
}

impl RoundReport {
    /// All violations, known reference weaknesses included.
    pub fn violations(&self) -> usize {
        self.invariants.iter().map(|i| i.violations.len() + i.known.len()).sum()
    }
    /// Violations not explained by a documented weakness of the reference.
    pub fn unexplained(&self) -> usize {
        self.invariants.iter().map(|i| i.violations.len()).sum()
    }
}

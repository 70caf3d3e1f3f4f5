//! The totals over a run's round reports: counts summed, latency samples
//! pooled (then dropped), each invariant's verdict over the rounds.

use super::{per_min, real_rounds, RealRound};
use crate::check::{stats, RoundReport, Stats};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Totals over rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Rounds run (a `--hosts` round, with all its hosts' reports, is one).
    pub rounds: usize,
    /// Round reports summed (more than `rounds` with `--hosts`: one per host and standby).
    pub reports: usize,
    /// Of the rounds, those in which every invariant held on every host.
    pub rounds_held: usize,
    /// Handoffs dispatched, over every round.
    pub handoffs: usize,
    /// Of those, completed.
    pub completed: usize,
    /// Of those, parked in the DLQ.
    pub dlq: usize,
    /// SIGKILLs among the faults (failpoint self-kills included).
    pub kills: u64,
    /// Total length of the fault phases, seconds of wall time (a `--hosts`
    /// round's hosts inject side by side: its phase counts once).
    pub fault_phase_s: f64,
    /// `kills` per minute of fault phase (wall time).
    pub kills_per_min: f64,
    /// Each round as it ran, with its own kill rate.
    pub per_round: Vec<RealRound>,
    /// Faults by kind (see [`RoundReport::faults_by_kind`]).
    pub faults_by_kind: BTreeMap<String, u64>,
    /// SIGKILLs by the victim's role.
    pub kills_by_role: BTreeMap<String, u64>,
    /// Successful `recover` operations.
    pub recoveries: u64,
    /// Claims and recovers that failed (lost a race or were refused).
    pub race_losers: u64,
    /// Checkpoints in the stores.
    pub checkpoints: u64,
    /// Paused workers woken after they were replaced.
    pub zombies_woken: u64,
    /// Of those, whose first operation after waking was refused (fenced).
    pub zombies_fenced: u64,
    /// Of those, that committed a write after waking (must be 0).
    pub zombies_wrote: u64,
    /// Worker SIGKILL → orphan, over every round (samples dropped).
    pub detection_worker_kill: Stats,
    /// The same in steady state (see [`crate::check::Latencies::worker_kill_steady`]).
    pub detection_worker_kill_steady: Stats,
    /// Worker SIGKILL → the successor's first checkpoint.
    pub kill_to_resume: Stats,
    /// Why worker-kill samples were not steady state, with counts.
    pub disturbed_by: BTreeMap<String, usize>,
    /// Periods in which a stopped worker held the store's write lock.
    pub store_stalls: usize,
    /// Their total length, seconds.
    pub store_stall_s: f64,
    /// The longest, seconds.
    pub store_stall_max_s: f64,
    /// Worker SIGSTOP → orphan.
    pub detection_pause: Stats,
    /// Failpoint self-kill → orphan.
    pub detection_failpoint: Stats,
    /// Leader SIGKILL → another leader observed.
    pub leader_failover: Stats,
    /// Lease-holding victims never orphaned and never completed by them.
    pub undetected: usize,
    /// The most chunks one faulted worker computed but did not commit, over every round.
    pub rework_max_chunks: u64,
    /// Per invariant name: `checked`, `violations`, `known_reference_weakness`,
    /// `held` (no violation), `status` (`held`, `violated`, `unchecked` in some
    /// round, `not-exercised`), `unchecked_rounds` and the `sources` used.
    pub invariants: BTreeMap<String, Value>,
    /// All violations, known reference weaknesses included.
    pub violations: usize,
    /// Violations no documented reference weakness explains.
    pub unexplained: usize,
    /// The rounds' coverage ledgers merged ([`crate::coverage`]).
    pub coverage: crate::coverage::Coverage,
}

/// Totals of nothing yet: the rounds' count and held rounds from `real`.
fn zero_totals(real: &[RealRound], reports: usize) -> Totals {
    Totals {
        rounds: real.len(),
        reports,
        rounds_held: real.iter().filter(|r| r.held).count(),
        handoffs: 0,
        completed: 0,
        dlq: 0,
        kills: 0,
        fault_phase_s: 0.0,
        kills_per_min: 0.0,
        per_round: Vec::new(),
        faults_by_kind: BTreeMap::new(),
        kills_by_role: BTreeMap::new(),
        recoveries: 0,
        race_losers: 0,
        checkpoints: 0,
        zombies_woken: 0,
        zombies_fenced: 0,
        zombies_wrote: 0,
        detection_worker_kill: Stats::default(),
        detection_worker_kill_steady: Stats::default(),
        kill_to_resume: Stats::default(),
        disturbed_by: BTreeMap::new(),
        store_stalls: 0,
        store_stall_s: 0.0,
        store_stall_max_s: 0.0,
        detection_pause: Stats::default(),
        detection_failpoint: Stats::default(),
        leader_failover: Stats::default(),
        undetected: 0,
        rework_max_chunks: 0,
        invariants: BTreeMap::new(),
        violations: 0,
        unexplained: 0,
        coverage: crate::coverage::Coverage::default(),
    }
}

/// Add a round's counts to `t`.
fn add_counts(t: &mut Totals, r: &RoundReport) {
    t.handoffs += r.handoffs;
    t.completed += r.completed;
    t.dlq += r.dlq;
    t.kills += r.kills;
    for (k, v) in &r.faults_by_kind {
        *t.faults_by_kind.entry(k.clone()).or_default() += v;
    }
    for (k, v) in &r.kills_by_role {
        *t.kills_by_role.entry(k.clone()).or_default() += v;
    }
    t.recoveries += r.recoveries;
    t.race_losers += r.race_losers;
    t.checkpoints += r.checkpoints;
    t.zombies_woken += r.zombies.woken_after_replacement;
    t.zombies_fenced += r.zombies.fenced;
    t.zombies_wrote += r.zombies.wrote;
    for (k, v) in &r.latencies.disturbed_by {
        *t.disturbed_by.entry(k.clone()).or_default() += v;
    }
    t.store_stalls += r.store_stalls.n;
    t.store_stall_s += r.store_stalls.total_s;
    t.store_stall_max_s = t.store_stall_max_s.max(r.store_stalls.max_s);
    t.undetected += r.latencies.undetected.len();
    t.rework_max_chunks = t.rework_max_chunks.max(r.rework_max_chunks);
    t.violations += r.violations();
    t.unexplained += r.unexplained();
}

/// The latency samples of every round, pooled.
#[derive(Default)]
struct Samples {
    worker_kill: Vec<f64>,
    worker_kill_steady: Vec<f64>,
    kill_to_resume: Vec<f64>,
    pause: Vec<f64>,
    failpoint: Vec<f64>,
    leader_failover: Vec<f64>,
}

impl Samples {
    fn add(&mut self, r: &RoundReport) {
        let l = &r.latencies;
        self.worker_kill.extend(&l.worker_kill.samples);
        self.worker_kill_steady.extend(&l.worker_kill_steady.samples);
        self.kill_to_resume.extend(&l.kill_to_resume.samples);
        self.pause.extend(&l.pause.samples);
        self.failpoint.extend(&l.failpoint.samples);
        self.leader_failover.extend(&l.leader_failover.samples);
    }

    /// Their statistics into `t`, the samples dropped.
    fn finish(self, t: &mut Totals) {
        t.detection_worker_kill = stats(self.worker_kill);
        t.detection_worker_kill_steady = stats(self.worker_kill_steady);
        t.kill_to_resume = stats(self.kill_to_resume);
        t.detection_pause = stats(self.pause);
        t.detection_failpoint = stats(self.failpoint);
        t.leader_failover = stats(self.leader_failover);
        for s in [
            &mut t.detection_worker_kill,
            &mut t.detection_worker_kill_steady,
            &mut t.kill_to_resume,
            &mut t.detection_pause,
            &mut t.detection_failpoint,
            &mut t.leader_failover,
        ] {
            s.samples.clear();
        }
    }
}

/// Per invariant over the rounds: (checked, violations, known reference
/// weaknesses), and (rounds unchecked, rounds not exercised, sources used).
#[derive(Default)]
struct InvariantTally {
    counts: BTreeMap<String, (u64, usize, usize)>,
    state: BTreeMap<String, (usize, usize, std::collections::BTreeSet<String>)>,
}

impl InvariantTally {
    fn add(&mut self, r: &RoundReport) {
        for i in &r.invariants {
            let st = self.state.entry(i.name.to_string()).or_default();
            st.0 += usize::from(i.status == "unchecked");
            st.1 += usize::from(i.status == "not-exercised");
            st.2.extend(i.sources.iter().cloned());
            let e = self.counts.entry(i.name.to_string()).or_default();
            e.0 += i.checked;
            e.1 += i.violations.len();
            e.2 += i.known.len();
        }
    }

    /// Per invariant: its totals and status (see [`Totals::invariants`]).
    fn finish(self) -> BTreeMap<String, Value> {
        let state = self.state;
        self.counts
            .into_iter()
            .map(|(k, (c, v, kn))| {
                let (u, ne, src) = state.get(&k).cloned().unwrap_or_default();
                let status = if v + kn > 0 {
                    "violated"
                } else if u > 0 {
                    "unchecked"
                } else if c == 0 && ne > 0 {
                    "not-exercised"
                } else {
                    "held"
                };
                let j = json!({"checked": c, "violations": v, "known_reference_weakness": kn,
                               "held": v == 0 && kn == 0, "status": status, "unchecked_rounds": u,
                               "sources": src});
                (k, j)
            })
            .collect()
    }
}

/// Sum the rounds' reports (latency samples pooled, then dropped).
pub fn totals(rounds: &[RoundReport]) -> Totals {
    let real = real_rounds(rounds);
    let mut t = zero_totals(&real, rounds.len());
    let mut samples = Samples::default();
    let mut tally = InvariantTally::default();
    for r in rounds {
        add_counts(&mut t, r);
        samples.add(r);
        tally.add(r);
    }
    t.coverage = crate::coverage::Coverage::merge(rounds.iter().map(|r| &r.coverage));
    t.fault_phase_s = real.iter().map(|r| r.fault_phase_s).fold(0.0, |a, b| a + b);
    t.kills_per_min = per_min(t.kills, t.fault_phase_s);
    t.per_round = real;
    samples.finish(&mut t);
    t.invariants = tally.finish();
    t
}

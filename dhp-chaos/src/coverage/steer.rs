//! Coverage-guided scheduling (`--steer`): at each fault the seeded
//! schedule draws a kind as always; the steerer may replace it by the kind
//! that reaches a target the round has not reached yet — a pause while no
//! zombie has been woken after its replacement, a leader kill while no
//! leader was replaced, a kind of the mix that never fired, the holder of
//! a DLQ handoff until that handoff is parked — and forces a race of
//! recoverers while none has happened. Its choices come from a stream of
//! its own (the schedule's streams draw exactly as without it) and from
//! what the harness has seen so far; each is recorded in the history as a
//! `steer` event with its reason.

use crate::config::FaultKind;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

/// When a holder was last served a chunk (the workload service's record).
pub type LastServed<'a> = dyn Fn(&str) -> Option<f64> + 'a;

/// The share of faults the steerer may take over (the rest stay as drawn,
/// so a steered round still sees the mix).
const TAKE_OVER: f64 = 0.7;

/// What the injector can see when it picks a fault.
#[derive(Debug, Default, Clone, Copy)]
pub struct View {
    /// Live workers holding a lease.
    pub lease_holders: usize,
    /// A worker is stopped right now.
    pub paused_now: bool,
    /// The leader supervisor is known and alive.
    pub leader: bool,
    /// Live supervisors that are not the leader.
    pub followers: usize,
    /// A live worker holds a DLQ handoff that is not parked yet.
    pub dlq_holder: bool,
}

/// The steerer's state for one round.
#[derive(Debug)]
pub struct Steer {
    on: bool,
    rng: StdRng,
    fired: BTreeSet<&'static str>,
    /// Stopped workers woken because they had been replaced: (name, when).
    woken: Vec<(String, f64)>,
    /// One of them was seen asking for work after waking (a write attempt).
    zombie_tried: bool,
    races: u64,
    leader_kills: u64,
    /// The handoffs dispatched with `--dlq-max-attempts`.
    pub dlq_hids: BTreeSet<String>,
    /// Handoffs added to extend the round.
    pub extensions: u32,
    /// The extension bound was reached with targets still missing (said once).
    pub bound_said: bool,
}

/// At most this many handoffs are added to a round whose work ended before
/// its targets were reached.
pub const MAX_EXTENSIONS: u32 = 3;

impl Steer {
    /// A steerer for a round of `seed`; `on` false: it never steers.
    pub fn new(on: bool, seed: u64) -> Steer {
        Steer {
            on,
            rng: StdRng::seed_from_u64(seed ^ 0x5eed_5a17_0000_0005),
            fired: BTreeSet::new(),
            woken: Vec::new(),
            zombie_tried: false,
            races: 0,
            leader_kills: 0,
            dlq_hids: BTreeSet::new(),
            extensions: 0,
            bound_said: false,
        }
    }

    /// Whether steering is on.
    pub fn on(&self) -> bool {
        self.on
    }

    /// A fault of `kind` was injected.
    pub fn fired(&mut self, kind: FaultKind) {
        self.fired.insert(kind.name());
        if kind == FaultKind::KillLeader {
            self.leader_kills += 1;
        }
    }

    /// Stopped worker `name` was woken at `t` because it had been replaced.
    pub fn woken_replaced(&mut self, name: &str, t: f64) {
        self.woken.push((name.to_string(), t));
    }

    /// Look for a woken replaced worker that asked for work since: `served`
    /// gives when a holder was last served a chunk (the workload service's
    /// record; without the service every woken one counts as trying).
    pub fn look_for_attempts(&mut self, served: Option<&LastServed<'_>>) {
        if self.zombie_tried {
            return;
        }
        self.zombie_tried = match served {
            Some(f) => self.woken.iter().any(|(n, t)| f(n).is_some_and(|s| s >= *t)),
            None => !self.woken.is_empty(),
        };
    }

    /// The kind to inject instead of `drawn`, and why (`None`: keep `drawn`).
    pub fn kind(&mut self, drawn: FaultKind, mix: &[(FaultKind, f64)], v: View) -> Option<(FaultKind, &'static str)> {
        // kinds that draw their toxic or length from the schedule's stream are
        // neither steered to nor away from: the stream stays as without --steer
        if !self.on || draws_from_schedule(drawn) || !self.rng.gen_bool(TAKE_OVER) {
            return None;
        }
        let has = |k: FaultKind| mix.iter().any(|(m, w)| *m == k && *w > 0.0);
        let want = if has(FaultKind::Pause) && !self.zombie_tried && v.lease_holders > 0 && !v.paused_now {
            Some((FaultKind::Pause, "no zombie woken after its replacement yet"))
        } else if has(FaultKind::KillLeader) && self.leader_kills == 0 && v.leader {
            Some((FaultKind::KillLeader, "no leader killed and replaced yet"))
        } else if let Some(k) = self.never_fired(mix, v) {
            Some((k, "a kind of the mix that has not fired yet"))
        } else if has(FaultKind::KillWorker) && v.dlq_holder {
            Some((FaultKind::KillWorker, "drive the DLQ handoff to its max_attempts"))
        } else {
            None
        };
        want.filter(|(k, _)| *k != drawn)
    }

    fn never_fired(&self, mix: &[(FaultKind, f64)], v: View) -> Option<FaultKind> {
        mix.iter().filter(|(_, w)| *w > 0.0).map(|(k, _)| *k).find(|k| {
            let eligible = match k {
                FaultKind::KillLeader => v.leader,
                FaultKind::KillFollower => v.followers > 0,
                FaultKind::Pause => v.lease_holders > 0 && !v.paused_now,
                FaultKind::KillWorker | FaultKind::KillMulti => v.lease_holders > 0,
                k => !draws_from_schedule(*k),
            };
            eligible && !self.fired.contains(k.name())
        })
    }

    /// Start racing recoverers for this orphan although the seeded draw said
    /// one: no race has happened in the round yet.
    pub fn force_race(&mut self) -> bool {
        self.on && self.races == 0
    }

    /// The targets the round has visibly not reached yet, of those more work
    /// can reach: a zombie woken replaced, a race of recoverers, a DLQ
    /// handoff parked (`dlq_parked`: the monitor saw one `failed`).
    pub fn missing(&self, mix: &[(FaultKind, f64)], race_rate: f64, dlq_parked: bool) -> Vec<&'static str> {
        let has = |k: FaultKind| mix.iter().any(|(m, w)| *m == k && *w > 0.0);
        let mut out = Vec::new();
        if !self.on {
            return out;
        }
        if has(FaultKind::Pause) && !self.zombie_tried {
            out.push("zombies");
        }
        if race_rate > 0.0 && self.races == 0 {
            out.push("races");
        }
        if !self.dlq_hids.is_empty() && !dlq_parked {
            out.push("dlq");
        }
        out
    }

    /// 2 or more recoverers were started for one orphan.
    pub fn raced(&mut self) {
        self.races += 1;
    }
}

/// The kinds whose injection draws from the schedule's own stream (a
/// toxic, a length): see `round::link`, `disk`, `store_disk`, `db_link`.
pub fn draws_from_schedule(k: FaultKind) -> bool {
    matches!(k, FaultKind::Link | FaultKind::DbLink | FaultKind::DiskFull | FaultKind::StoreFull)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix() -> Vec<(FaultKind, f64)> {
        vec![(FaultKind::KillWorker, 50.0), (FaultKind::KillLeader, 10.0), (FaultKind::Pause, 12.0)]
    }

    #[test]
    fn off_never_steers_and_on_pauses_first_then_kills_the_leader() {
        let v = View { lease_holders: 2, leader: true, followers: 1, ..View::default() };
        let mut off = Steer::new(false, 1);
        assert!((0..50).all(|_| off.kind(FaultKind::KillWorker, &mix(), v).is_none()));
        assert!(!off.force_race());
        let mut s = Steer::new(true, 1);
        let picks: Vec<_> = (0..50).filter_map(|_| s.kind(FaultKind::KillWorker, &mix(), v)).collect();
        assert!(picks.len() > 20 && picks.iter().all(|p| p.0 == FaultKind::Pause), "{picks:?}");
        s.woken_replaced("w1", 5.0);
        s.look_for_attempts(Some(&|_| Some(4.0)));
        assert!(s.kind(FaultKind::KillWorker, &mix(), v).is_none_or(|p| p.0 == FaultKind::Pause));
        s.look_for_attempts(Some(&|n| (n == "w1").then_some(5.5)));
        let picks: Vec<_> = (0..50).filter_map(|_| s.kind(FaultKind::KillWorker, &mix(), v)).collect();
        assert!(!picks.is_empty() && picks.iter().all(|p| p.0 == FaultKind::KillLeader), "{picks:?}");
        s.fired(FaultKind::KillLeader);
        s.fired(FaultKind::KillWorker);
        s.fired(FaultKind::Pause);
        // everything reached: the drawn kind stays
        assert!((0..50).all(|_| s.kind(FaultKind::KillWorker, &mix(), v).is_none()));
        assert!(s.force_race());
        s.raced();
        assert!(!s.force_race());
    }

    #[test]
    fn the_steerer_replays_for_a_seed() {
        let v = View { lease_holders: 1, leader: true, ..View::default() };
        let run = |seed| {
            let mut s = Steer::new(true, seed);
            (0..40).map(|_| s.kind(FaultKind::KillWorker, &mix(), v).map(|p| p.0)).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
    }
}

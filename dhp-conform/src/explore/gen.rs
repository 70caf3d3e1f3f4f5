//! Seeded generation of operation sequences: which steps, over which
//! handoffs, workers and supervisors. The generator steers with the model
//! itself ([`World`]), so it claims pending work, writes with the holder's
//! token, recovers what a scan orphaned and spends up to each cap.

use super::world::{World, LEASE_TTL_MS};
use serde::{Deserialize, Serialize};

/// Supervisors a sequence uses (`s0`, `s1`).
pub const SUPERVISORS: u8 = 2;
/// The most clock a sequence moves on in small moves, seconds (one jump
/// past the stall horizon, [`STALL_JUMP_S`], comes on top).
pub const MAX_ADVANCE_S: u32 = 90;
/// A jump just past `DHP_STALL_TIMEOUT_S` (120 s): a checkpoint under a
/// lease long enough to outlive it is stalled by age at the next scan.
pub const STALL_JUMP_S: u32 = 121;
/// The worker index of the processes a [`Step::Crash`] kills: no other
/// step claims under it, so only crashed processes ever publish its token.
pub const CRASH_W: u8 = 9;

/// A handoff's contract budget, as the sequence dispatches it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffSpec {
    /// `max_steps`.
    pub max_steps: i64,
    /// `max_spend_usd` in quarters of a dollar (exact in binary floats).
    pub max_spend_quarters: i64,
    /// `max_wallclock_s`.
    pub max_wallclock_s: i64,
    /// `max_attempts`.
    pub max_attempts: u32,
}

/// One protocol operation of a sequence. `h` indexes the sequence's
/// handoffs, `w` its workers (`w0`, `w1`, …), `s` its supervisors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
// The fields are the indices and numbers the variant's doc names.
#[allow(missing_docs)]
pub enum Step {
    /// Dispatch handoff `h` (again: a re-dispatch).
    Dispatch { h: u8 },
    /// Dispatch `h`'s envelope with its inputs changed after the id:
    /// `how` 0 leaves both hashes stale, 1 re-binds `input_hash` (only
    /// the id check catches it), 2 re-computes the id (only the input
    /// binding catches it).
    Tampered { h: u8, how: u8 },
    /// Dispatch an envelope over `DHP_MAX_ENVELOPE_BYTES`.
    Oversize { h: u8 },
    /// `w` claims `h`.
    Claim { h: u8, w: u8 },
    /// Workers `ws` claim `h` at one instant, each in its own process.
    ClaimRace { h: u8, ws: Vec<u8> },
    /// `w` heartbeats with the token it holds (or a stale one).
    Heartbeat { h: u8, w: u8, stale: bool },
    /// `w` checkpoints `{"h": h, "s": s}`.
    Checkpoint { h: u8, w: u8, stale: bool, s: i64 },
    /// `w` notes `n` steps.
    NoteStep { h: u8, w: u8, n: i64 },
    /// `w` notes a spend of `quarters` × 0.25 USD.
    NoteSpend { h: u8, w: u8, quarters: i64 },
    /// `w` completes with a schema-valid result (`{"x": h}`) or not.
    Complete { h: u8, w: u8, valid: bool },
    /// `w` releases.
    Release { h: u8, w: u8 },
    /// The parent acknowledges `h`.
    Ack { h: u8 },
    /// The protocol clock moves on `secs` (clock-control; else the
    /// time-control operations and a short real wait).
    Advance { secs: u32 },
    /// Supervisor `s` scans.
    Scan { s: u8 },
    /// Workers `ws` recover `h` at one instant, each in its own process.
    Recover { h: u8, ws: Vec<u8> },
    /// `h` is suspended to a bundle.
    Suspend { h: u8 },
    /// `w` asks for an approval of `class`.
    RequestApproval { h: u8, w: u8, class: String, timeout_s: u32 },
    /// The `nth` approval of `h` is decided.
    Decide { h: u8, nth: u8, approve: bool },
    /// `h`'s holder awaits the `nth` approval of `h` (sent only when the
    /// model knows it will not block: decided, or past its timeout).
    Await { h: u8, nth: u8 },
    /// `w` claims `h` under a malformed or reserved id (`how`: see
    /// [`super::gen_extra::bad_worker`]).
    BadId { h: u8, w: u8, how: u8 },
    /// `w` completes `h` with the edge of its schema: `{"x": 1.0}` (an
    /// integer), or `{"x": 0}` for the draft-04 handoff (excluded).
    CompleteIntegral { h: u8, w: u8 },
    /// The last bundle of `h` resumes on a fresh root: `tamper` 0 as
    /// written, 1 its inputs changed, 2 a forged checkpoint.
    Resume { h: u8, tamper: u8 },
    /// `h` is shipped to a log (its envelope and one line per checkpoint)
    /// and the log ingested on a fresh root: `how` 0 as written, 1 its
    /// envelope changed, 2 a checkpoint's state changed, 3 a torn line
    /// appended, 4 shipped to a log that cannot be created.
    Ship { h: u8, how: u8 },
    /// `w` records effect `step` of `h` with result `{"r": r}`.
    Effect { h: u8, w: u8, step: u8, r: u8 },
    /// `w` asks for capability `which` (see [`super::gen_extra::CAPABILITY`]).
    Capability { h: u8, w: u8, which: u8 },
    /// The runner rewrites `h`'s ownership row to lease terms of 1 s × 2
    /// (a lease granted under another profile; `standard-store` only), or
    /// with `long` to 100 s × 2 (a lease that outlives the stall horizon).
    Retune {
        h: u8,
        #[serde(default)]
        long: bool,
    },
    /// `w` notes the same activity digest `n` times in a row (stall
    /// detection by repeats, `stall-detection`).
    Activity { h: u8, w: u8, n: u8 },
    /// The `canonical` op on text `which` (see
    /// [`super::gen_extra::CANONICAL_TEXTS`]; `canonical` only).
    Canonical { which: u8 },
    /// `n` fresh processes open one new store at one instant (§3.1).
    OpenRace { n: u8 },
    /// The runner marks the store schema version 4; a fresh process must
    /// refuse to open it; the runner removes the mark (`standard-store`).
    NewerSchema,
    /// The runner holds the SQLite write lock for a moment while `w`
    /// checkpoints `h` `{"h": h, "s": 9}`: the write waits (§3.1, SQLite only).
    LockedWrite { h: u8, w: u8 },
    /// Supervisor `s` asks for leadership (`ensure_leadership`): renew its
    /// own term, else take an absent or expired one.
    Lead { s: u8 },
    /// A fresh process publishes a liveness token for worker
    /// [`CRASH_W`], claims `h`, and is SIGKILLed (`fast-death-detection`).
    Crash { h: u8 },
}

/// The operation families a run reports one row each for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// dispatch, re-dispatch, tampered, oversize.
    Dispatch,
    /// claim.
    Claim,
    /// heartbeat.
    Heartbeat,
    /// checkpoint with the right or a stale fence.
    Checkpoint,
    /// complete (valid, invalid = fail, twice) and ack.
    Complete,
    /// release.
    Release,
    /// note_step / note_spend up to and past each cap.
    Budget,
    /// the clock and supervisor scans (orphan, DLQ, budget kill, leadership).
    Scan,
    /// racing recovers.
    Recover,
    /// suspend.
    Suspend,
    /// approval request and decision.
    Approvals,
    /// ship to a transport log and ingest (tampered or not).
    Transport,
    /// effects and capabilities.
    Effects,
    /// the store itself: concurrent creation, a newer schema, a held write lock.
    Store,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 14] = [
        Family::Dispatch,
        Family::Claim,
        Family::Heartbeat,
        Family::Checkpoint,
        Family::Complete,
        Family::Release,
        Family::Budget,
        Family::Scan,
        Family::Recover,
        Family::Suspend,
        Family::Approvals,
        Family::Transport,
        Family::Effects,
        Family::Store,
    ];

    /// The name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Dispatch => "dispatch",
            Family::Claim => "claim",
            Family::Heartbeat => "heartbeat",
            Family::Checkpoint => "checkpoint",
            Family::Complete => "complete",
            Family::Release => "release",
            Family::Budget => "budget",
            Family::Scan => "scan",
            Family::Recover => "recover",
            Family::Suspend => "suspend",
            Family::Approvals => "approvals",
            Family::Transport => "transport",
            Family::Effects => "effects",
            Family::Store => "store",
        }
    }

    /// The report row's id: `explore-<family>`.
    pub fn id(self) -> String {
        format!("explore-{}", self.as_str())
    }
}

impl Step {
    /// The family this step exercises.
    pub fn family(&self) -> Family {
        match self {
            Step::Dispatch { .. } | Step::Tampered { .. } | Step::Oversize { .. } | Step::Canonical { .. } => {
                Family::Dispatch
            }
            Step::Claim { .. } | Step::ClaimRace { .. } | Step::BadId { .. } => Family::Claim,
            Step::Heartbeat { .. } | Step::Retune { .. } | Step::Activity { .. } => Family::Heartbeat,
            Step::Checkpoint { .. } => Family::Checkpoint,
            Step::Complete { .. } | Step::Ack { .. } | Step::CompleteIntegral { .. } => Family::Complete,
            Step::Release { .. } => Family::Release,
            Step::NoteStep { .. } | Step::NoteSpend { .. } => Family::Budget,
            Step::Advance { .. } | Step::Scan { .. } | Step::Lead { .. } | Step::Crash { .. } => Family::Scan,
            Step::Recover { .. } => Family::Recover,
            Step::Suspend { .. } | Step::Resume { .. } => Family::Suspend,
            Step::RequestApproval { .. } | Step::Decide { .. } | Step::Await { .. } => Family::Approvals,
            Step::Ship { .. } => Family::Transport,
            Step::Effect { .. } | Step::Capability { .. } => Family::Effects,
            Step::OpenRace { .. } | Step::NewerSchema | Step::LockedWrite { .. } => Family::Store,
        }
    }
}

/// A sequence: its handoffs' budgets, its workers, its steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequence {
    /// One per handoff (1–3).
    pub handoffs: Vec<HandoffSpec>,
    /// Logical workers.
    pub workers: u8,
    /// The operations, in order.
    pub steps: Vec<Step>,
}

/// splitmix64: small, seedable, the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `pct` %.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// One of `xs` (which must not be empty).
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize].clone()
    }
}

/// What the adapter declares that generation depends on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    /// `approvals`: the approvals family is generated.
    pub approvals: bool,
    /// `effects`: record_effect steps.
    pub effects: bool,
    /// `capabilities`: require_capability steps.
    pub capabilities: bool,
    /// `standard-store`: the runner may rewrite lease terms.
    pub store: bool,
    /// `stall-detection`: note_activity steps.
    pub stall: bool,
    /// `canonical`: the canonical op.
    pub canonical: bool,
    /// The store is a SQLite file the runner can lock.
    pub sqlite: bool,
    /// `fast-death-detection`: crashed token holders.
    pub liveness: bool,
}

impl Features {
    /// Every feature declared (tests).
    pub fn all() -> Features {
        Features {
            approvals: true,
            effects: true,
            capabilities: true,
            store: true,
            stall: true,
            canonical: true,
            sqlite: true,
            liveness: true,
        }
    }
}

/// The families a run must cover with these features.
pub fn families(f: Features) -> Vec<Family> {
    Family::ALL
        .into_iter()
        .filter(|x| *x != Family::Approvals || f.approvals)
        .filter(|x| *x != Family::Effects || f.effects || f.capabilities)
        .collect()
}

/// gen_extra generates every step of these families.
fn unreachable_family() -> Step {
    Step::Scan { s: 0 }
}

/// Sequence `index` of the run seeded `seed`, `steps` long.
pub fn sequence(seed: u64, index: u64, steps: usize, f: Features) -> Sequence {
    let mut r = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(index));
    let n = 1 + r.below(3) as usize;
    let handoffs = (0..n)
        .map(|_| HandoffSpec {
            max_steps: r.pick(&[2, 3, 5, 100]),
            max_spend_quarters: r.pick(&[2, 3, 4, 400]),
            // 3 s runs out within one lease: usage noted after it is over
            max_wallclock_s: r.pick(&[3, 10, 600]),
            max_attempts: r.pick(&[1, 2, 3]),
        })
        .collect::<Vec<_>>();
    let workers = 2 + r.below(3) as u8;
    let mut g = Gen { r, world: World::new(&handoffs), workers, advanced: 0, f };
    // Every family appears in every sequence: one step of each is forced
    // at a random position, the rest are steered by the model's state.
    let mut forced: Vec<(usize, Family)> =
        families(f).into_iter().map(|fam| (g.r.below(steps.max(1) as u64) as usize, fam)).collect();
    forced.sort();
    let mut out = Vec::with_capacity(steps + forced.len());
    let mut fi = 0;
    for i in 0..steps {
        while fi < forced.len() && forced[fi].0 == i {
            let s = g.of_family(forced[fi].1);
            g.apply(&s);
            out.push(s);
            fi += 1;
        }
        let s = g.step();
        g.apply(&s);
        out.push(s);
    }
    Sequence { handoffs, workers, steps: out }
}

struct Gen {
    r: Rng,
    world: World,
    workers: u8,
    advanced: u32,
    f: Features,
}

impl Gen {
    fn apply(&mut self, s: &Step) {
        if let Step::Advance { secs } = s {
            self.advanced += secs;
            self.world.now += i64::from(*secs) * 1000;
        }
        self.world.now += 5;
        let winner = match s {
            Step::Recover { ws, .. } | Step::ClaimRace { ws, .. } => ws.first().copied(),
            _ => None,
        };
        self.world.apply(s, winner);
    }

    fn h(&mut self) -> u8 {
        self.r.below(self.world.hids.len() as u64) as u8
    }

    /// Usually the holder of `h` (its writes mostly succeed), else anyone.
    fn w_for(&mut self, h: u8) -> u8 {
        match self.world.holder_index(h) {
            Some(w) if self.r.chance(75) => w,
            _ => self.r.below(u64::from(self.workers)) as u8,
        }
    }

    /// A handoff in `status`, if any (else a random one).
    fn h_in(&mut self, status: &str) -> u8 {
        let hs: Vec<u8> = (0..self.world.hids.len() as u8).filter(|h| self.world.status_str(*h) == status).collect();
        if hs.is_empty() {
            self.h()
        } else {
            self.r.pick(&hs)
        }
    }

    fn step(&mut self) -> Step {
        // Weights steer toward the interesting: claims of pending work,
        // writes near caps, expiry then scan then racing recovers.
        let fams = families(self.f);
        let count = |st: &str| (0..self.world.hids.len() as u8).filter(|h| self.world.status_str(*h) == st).count();
        let (pending, running, orphaned) = (count("pending"), count("running"), count("orphaned"));
        let absent = count("absent");
        // Writes need running work; claims pending; recovers orphans.
        let live = |w: u64| if running > 0 { w } else { 1 };
        let weights: Vec<(Family, u64)> = fams
            .iter()
            .map(|f| {
                let w = match f {
                    Family::Dispatch => 2 + 10 * absent as u64,
                    Family::Claim => 2 + 12 * pending as u64,
                    Family::Heartbeat => live(8) + self.world.heartbeat_interest(self.f.store),
                    Family::Checkpoint => live(12) + self.world.checkpoint_interest(),
                    Family::Complete => live(8),
                    Family::Release => live(4),
                    Family::Budget => live(12) + self.world.budget_interest(),
                    Family::Scan => 8 + live(4) + self.world.scan_interest(),
                    Family::Recover => 2 + 14 * orphaned as u64,
                    Family::Suspend => 1 + 3 * self.world.bundles.len() as u64,
                    Family::Approvals => live(8) + self.world.approval_interest(),
                    Family::Transport => 2 + live(1),
                    Family::Effects => live(5),
                    Family::Store => 1,
                };
                (*f, w)
            })
            .collect();
        let total: u64 = weights.iter().map(|x| x.1).sum();
        let mut roll = self.r.below(total);
        for (f, w) in weights {
            if roll < w {
                return self.of_family(f);
            }
            roll -= w;
        }
        self.of_family(Family::Checkpoint)
    }

    fn of_family(&mut self, f: Family) -> Step {
        // The newer steps (resume, ship, effects, odd ids, …): gen_extra.
        let focused = match f {
            Family::Scan => super::focus::scan_step(&mut self.r, &self.world, SUPERVISORS, self.f.liveness),
            Family::Approvals => super::focus::approval_step(&mut self.r, &self.world),
            Family::Budget => super::focus::budget_step(&mut self.r, &self.world),
            Family::Heartbeat => super::focus::heartbeat_step(&mut self.r, &self.world, self.f.store),
            Family::Checkpoint => super::focus::checkpoint_step(&mut self.r, &self.world),
            Family::Suspend => super::focus::suspend_step(&mut self.r, &self.world),
            _ => None,
        };
        if let Some(s) = focused {
            return s;
        }
        let h = self.h_in("running");
        let w = self.w_for(h);
        if let Some(s) = super::gen_extra::step(&mut self.r, &self.world, f, self.f, (h, w)) {
            return s;
        }
        match f {
            Family::Dispatch => {
                let h = self.h();
                match self.r.below(10) {
                    0 => Step::Tampered { h, how: self.r.below(3) as u8 },
                    1 => Step::Oversize { h },
                    _ => Step::Dispatch { h },
                }
            }
            Family::Claim => {
                let h = self.h_in("pending");
                if self.r.chance(25) {
                    return Step::ClaimRace { h, ws: self.racers() };
                }
                Step::Claim { h, w: self.r.below(u64::from(self.workers)) as u8 }
            }
            Family::Heartbeat => {
                let h = self.h_in("running");
                Step::Heartbeat { h, w: self.w_for(h), stale: self.r.chance(15) }
            }
            Family::Checkpoint => {
                let h = self.h_in("running");
                Step::Checkpoint { h, w: self.w_for(h), stale: self.r.chance(20), s: self.r.below(4) as i64 }
            }
            Family::Complete => {
                let h = self.h_in("running");
                match self.r.below(10) {
                    0..=2 => Step::Ack { h: self.h() },
                    3 | 4 => Step::Complete { h, w: self.w_for(h), valid: false },
                    _ => Step::Complete { h, w: self.w_for(h), valid: true },
                }
            }
            Family::Release => {
                let h = self.h_in("running");
                Step::Release { h, w: self.w_for(h) }
            }
            Family::Budget => self.budget_step(),
            Family::Scan => self.scan_step(),
            Family::Recover => {
                let h = self.h_in("orphaned");
                Step::Recover { h, ws: self.racers() }
            }
            Family::Suspend => Step::Suspend { h: self.h_in("running") },
            Family::Transport | Family::Effects | Family::Store => unreachable_family(),
            Family::Approvals => {
                let h = self.h_in("running");
                if self.r.chance(55) && self.world.approval_count(h) > 0 {
                    Step::Decide { h, nth: self.r.below(3) as u8, approve: self.r.chance(50) }
                } else {
                    let class = self
                        .r
                        .pick(&["financial", "financial", "destructive", "read", "write", "teleport"])
                        .to_string();
                    Step::RequestApproval { h, w: self.w_for(h), class, timeout_s: self.r.pick(&[1, 1, 30]) }
                }
            }
        }
    }

    /// 1 to all workers, distinct, in a random order.
    fn racers(&mut self) -> Vec<u8> {
        let n = 1 + self.r.below(u64::from(self.workers)) as usize;
        let mut ws: Vec<u8> = (0..self.workers).collect();
        for i in (1..ws.len()).rev() {
            let j = self.r.below(i as u64 + 1) as usize;
            ws.swap(i, j);
        }
        ws.truncate(n);
        ws
    }

    /// Steps and spends that reach each cap, land on it, or pass it.
    fn budget_step(&mut self) -> Step {
        let h = self.h_in("running");
        let w = self.w_for(h);
        let (used_steps, used_q) = self.world.usage(h);
        let spec = self.world.spec(h);
        if self.r.chance(50) {
            let left = spec.max_steps - used_steps;
            let n = match self.r.below(6) {
                0 => -1,
                1 | 2 => left.clamp(0, 5),
                3 => left.saturating_add(1).clamp(0, 6),
                _ => self.r.below(3) as i64,
            };
            Step::NoteStep { h, w, n }
        } else {
            let left = spec.max_spend_quarters - used_q;
            let quarters = match self.r.below(6) {
                5 => -1,
                0 | 1 => left.clamp(0, 4),
                2 => left.saturating_add(1).clamp(0, 5),
                _ => self.r.below(3) as i64,
            };
            Step::NoteSpend { h, w, quarters }
        }
    }

    /// Moving the clock past a lease (or a wall-clock budget, or a leader
    /// term), or a scan by one of the supervisors.
    fn scan_step(&mut self) -> Step {
        let past_lease = (LEASE_TTL_MS / 1000) as u32 + 1;
        // A lease ran out: a scan now is what the interesting cases need
        // (orphan, DLQ at the last attempt, a follower that must not act).
        if self.world.expired_leases() > 0 && self.r.chance(80) {
            return Step::Scan { s: self.r.below(u64::from(SUPERVISORS)) as u8 };
        }
        if self.r.chance(40) && self.advanced + 11 <= MAX_ADVANCE_S {
            // 3 + 3 around a heartbeat passes the old lease, not the new
            let secs = self.r.pick(&[1, 3, 3, 5, past_lease, past_lease, 11]);
            Step::Advance { secs }
        } else {
            Step::Scan { s: self.r.below(u64::from(SUPERVISORS)) as u8 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_in_every_sequence_and_the_same_seed_the_same_steps() {
        let f = Features::all();
        for i in 0..20 {
            let s = sequence(7, i, 30, f);
            assert_eq!(s, sequence(7, i, 30, f));
            let fams: std::collections::BTreeSet<Family> = s.steps.iter().map(Step::family).collect();
            assert_eq!(fams.len(), Family::ALL.len(), "sequence {i}: {fams:?}");
        }
        assert_ne!(sequence(7, 0, 30, f), sequence(8, 0, 30, f));
    }

    #[test]
    fn writes_mostly_come_from_the_holder() {
        // The generator steers: a fair share of completes, invalid ones
        // included, reach a running handoff with its holder's token.
        let f = Features::all();
        let (mut valid_by_holder, mut invalid_by_holder) = (0, 0);
        for i in 0..50 {
            let s = sequence(1, i, 30, f);
            let mut w = World::new(&s.handoffs);
            for st in &s.steps {
                if let Step::Complete { h, w: x, valid } = st {
                    let by_holder = w.status_str(*h) == "running" && w.holder_index(*h) == Some(*x);
                    if by_holder && *valid {
                        valid_by_holder += 1;
                    }
                    if by_holder && !*valid {
                        invalid_by_holder += 1;
                    }
                }
                w.now += 5;
                if let Step::Advance { secs } = st {
                    w.now += i64::from(*secs) * 1000;
                }
                let winner = match st {
                    Step::Recover { ws, .. } | Step::ClaimRace { ws, .. } => ws.first().copied(),
                    _ => None,
                };
                w.apply(st, winner);
            }
        }
        assert!(
            valid_by_holder >= 20 && invalid_by_holder >= 5,
            "{valid_by_holder} valid, {invalid_by_holder} invalid"
        );
        eprintln!("{valid_by_holder} valid, {invalid_by_holder} invalid");
    }
}

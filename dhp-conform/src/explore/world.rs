//! The model's side of a sequence: dhp-model's [`State`] plus what the
//! sequence's workers remember (their tokens) and the approval ids seen.
//! Each step goes through dhp-model's operation for it; the answer is what
//! the implementation must reply.

use super::gen::{HandoffSpec, Step};
use dhp_model::ops::{self, Lease, OpError, OrphanReason};
use dhp_model::state::{Budget, State, Time, ORPHANED};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The lease the runner's default profile gives (2 s × 3 missed).
pub const LEASE_TTL_MS: Time = 6_000;
/// `DHP_LEADER_TTL_S` (5 s).
pub const LEADER_TTL_MS: Time = 5_000;

/// What one reply must be: ok (with `decided` for a decision), or an error
/// of this kind.
pub type Expect = Result<Option<bool>, &'static str>;

/// The model's state and the workers' memory.
#[derive(Debug, Clone)]
pub struct World {
    /// dhp-model's store.
    pub s: State,
    /// The protocol clock, ms since the sequence started.
    pub now: Time,
    /// The handoff ids, by index.
    pub hids: Vec<String>,
    /// Their budgets.
    pub specs: Vec<HandoffSpec>,
    /// The fence each worker was last granted for each handoff.
    pub tokens: BTreeMap<(u8, u8), i64>,
    /// The approval ids of each handoff, oldest first.
    pub approvals: BTreeMap<u8, Vec<String>>,
    /// The implementation's protocol clock (Unix seconds) at [`World::now`] 0.
    pub origin: f64,
    /// The last bundle suspend wrote of each handoff.
    pub bundles: BTreeMap<u8, super::world_extra::Bundle>,
    /// The fresh root the last resume went to (the runner's side).
    pub side_root: Option<String>,
    /// Workers whose liveness token a killed process left free, until a
    /// leader's scan orphans what they held and reaps the token (§7.5).
    pub dead: BTreeSet<u8>,
    /// How long the last step took, ms: how much later than the model's
    /// time the implementation may have stamped what it wrote.
    pub step_ms: i64,
}

/// The spec error kind of a model refusal (ADAPTERS.md §2).
pub fn kind(e: &OpError) -> &'static str {
    match e {
        OpError::FencingError => "FencingError",
        OpError::LeaseLost => "LeaseLost",
        OpError::StateError(_) => "StateError",
        OpError::OwnershipLost => "OwnershipLost",
        OpError::BudgetExceeded => "BudgetExceeded",
        OpError::UnknownHandoff => "UnknownHandoff",
        OpError::ApprovalRequired => "ApprovalRequired",
        OpError::ApprovalDenied => "ApprovalDenied",
        _ => "ValidationError",
    }
}

/// `ValidationError` or the ownership check's refusal `e`
/// (impl-defined: argument-or-ownership-first, PROTOCOL §17).
fn either_or_validation(e: &OpError) -> &'static str {
    match e {
        OpError::FencingError => "ValidationError|FencingError",
        OpError::LeaseLost => "ValidationError|LeaseLost",
        OpError::StateError(_) => "ValidationError|StateError",
        _ => "ValidationError|UnknownHandoff",
    }
}

/// `ws` with `winner` (if one of them) first.
fn winner_first(ws: &[u8], winner: Option<u8>) -> Vec<u8> {
    let mut order: Vec<u8> = ws.to_vec();
    if let Some(w) = winner.filter(|w| ws.contains(w)) {
        order.retain(|x| *x != w);
        order.insert(0, w);
    }
    order
}

fn done<T>(r: Result<T, OpError>) -> Expect {
    r.map(|_| None).map_err(|e| kind(&e))
}

/// The state a worker checkpoints (its hash is the model's).
pub fn state_of(h: u8, s: i64) -> Value {
    json!({"h": h, "s": s})
}

/// The result a worker completes with: valid against the output schema or not.
pub fn result_of(h: u8, valid: bool) -> Value {
    if valid {
        json!({"x": h})
    } else {
        json!({"x": "not an integer"})
    }
}

impl World {
    /// A fresh store; handoff ids are placeholders until the runner built
    /// the envelopes ([`World::with_hids`]).
    pub fn new(specs: &[HandoffSpec]) -> World {
        World {
            s: State::default(),
            now: 0,
            hids: (0..specs.len()).map(|i| format!("h{i}")).collect(),
            specs: specs.to_vec(),
            tokens: BTreeMap::new(),
            approvals: BTreeMap::new(),
            origin: 0.0,
            bundles: BTreeMap::new(),
            side_root: None,
            dead: BTreeSet::new(),
            step_ms: 0,
        }
    }

    /// [`World::new`] with the real handoff ids.
    pub fn with_hids(specs: &[HandoffSpec], hids: Vec<String>) -> World {
        World { hids, ..World::new(specs) }
    }

    fn budget(&self, h: u8) -> Budget {
        let sp = self.spec(h);
        Budget {
            max_steps: Some(sp.max_steps),
            max_spend_micro: Some(sp.max_spend_quarters * 250_000),
            max_wall: Some(sp.max_wallclock_s * 1000),
            max_attempts: sp.max_attempts,
            ..Budget::default()
        }
    }

    /// `h`'s budget spec.
    pub fn spec(&self, h: u8) -> HandoffSpec {
        self.specs[usize::from(h) % self.specs.len()].clone()
    }

    /// `h`'s id.
    pub fn hid(&self, h: u8) -> &str {
        &self.hids[usize::from(h) % self.hids.len()]
    }

    /// `h`'s status text, `absent` before dispatch.
    pub fn status_str(&self, h: u8) -> &'static str {
        self.s.handoffs.get(self.hid(h)).map_or("absent", |x| x.status.as_str())
    }

    /// The index of the worker holding `h`, if a worker does.
    pub fn holder_index(&self, h: u8) -> Option<u8> {
        let o = self.s.ownership.get(self.hid(h))?;
        o.holder.strip_prefix('w')?.parse().ok()
    }

    /// `(steps, spend in quarters)` used by `h`.
    pub fn usage(&self, h: u8) -> (i64, i64) {
        self.s.handoffs.get(self.hid(h)).map_or((0, 0), |x| (x.steps, x.spend_micro / 250_000))
    }

    /// Live-holder leases that ran out by [`World::now`].
    pub fn expired_leases(&self) -> usize {
        self.s.ownership.values().filter(|o| o.holder != ORPHANED && o.lease_expires_at < self.now).count()
    }

    /// Approvals `h` asked for.
    pub fn approval_count(&self, h: u8) -> usize {
        self.approvals.get(&h).map_or(0, Vec::len)
    }

    /// The fence `w` presents for `h`: the one it was granted (0 if none),
    /// or a stale one.
    pub fn presented_fence(&self, h: u8, w: u8, stale: bool) -> i64 {
        let f = self.tokens.get(&(h, w)).copied().unwrap_or(0);
        match (stale, f) {
            (false, f) => f,
            (true, 0) => 1,
            (true, f) => f - 1,
        }
    }

    fn lease(&self, h: u8, w: u8, stale: bool) -> Lease {
        Lease { hid: self.hid(h).to_string(), holder: format!("w{w}"), fence: self.presented_fence(h, w, stale) }
    }

    /// Every time a time-dependent decision turns on (leases, terms,
    /// wall-clock budgets, approval timeouts): a reply that differs from
    /// the model within a moment of one is a race with the clock.
    pub fn deadlines(&self) -> Vec<Time> {
        let mut d: Vec<Time> = self.s.ownership.values().map(|o| o.lease_expires_at).collect();
        d.extend(self.s.leadership.iter().map(|l| l.expires_at));
        d.extend(self.s.approvals.values().map(|a| a.expires_at));
        for h in self.s.handoffs.values() {
            if let (Some(c), Some(m)) = (h.claimed_at, h.budget.max_wall) {
                d.push(c + m);
            }
            d.extend(h.last_checkpoint_at.map(|t| t + super::focus::STALL_TIMEOUT_MS));
        }
        d
    }

    /// What `expire_lease` does to every live lease (the time-control
    /// fallback without `clock-control`): returns the handoffs it touched.
    pub fn expire_leases(&mut self) -> Vec<String> {
        let now = self.now;
        let mut out = Vec::new();
        for (hid, o) in self.s.ownership.iter_mut().filter(|(_, o)| o.holder != ORPHANED) {
            o.lease_expires_at = now - 1;
            out.push(hid.clone());
        }
        out
    }

    /// What `expire_leadership` does.
    pub fn expire_leadership(&mut self) {
        if let Some(l) = self.s.leadership.as_mut() {
            l.expires_at = self.now - 1;
        }
    }

    /// Apply `step` at [`World::now`]: one expected reply per request the
    /// runner sends (none when a decision has no approval to decide; one
    /// per racer of a recover, `winner` first — the racer the
    /// implementation let win, or the first).
    pub fn apply(&mut self, step: &Step, winner: Option<u8>) -> Vec<(u8, Expect)> {
        let now = self.now;
        let one = |e: Expect| vec![(0, e)];
        let hid = |h: &u8| self.hid(*h).to_string();
        match step {
            Step::Dispatch { h } => {
                let (b, id) = (self.budget(*h), hid(h));
                one(done(ops::dispatch(&mut self.s, &id, b)))
            }
            Step::Tampered { .. } => one(Err("TamperError")),
            Step::Oversize { .. } => one(Err("OversizePayload")),
            Step::Claim { h, w } => {
                let hid = self.hid(*h).to_string();
                let r = ops::claim(&mut self.s, &hid, &format!("w{w}"), LEASE_TTL_MS, now);
                if r.is_ok() {
                    self.tokens.insert((*h, *w), 0);
                }
                one(done(r))
            }
            Step::Heartbeat { h, w, stale } => {
                let l = self.lease(*h, *w, *stale);
                one(done(ops::heartbeat(&mut self.s, &l, now)))
            }
            Step::Checkpoint { h, w, stale, s } => {
                let l = self.lease(*h, *w, *stale);
                let hash = dhp_oracle::state_hash(&state_of(*h, *s)).unwrap_or_default();
                one(done(ops::checkpoint(&mut self.s, &l, &hash, usize::MAX, now)))
            }
            Step::NoteStep { h, w, n } => {
                let l = self.lease(*h, *w, false);
                if *n < 0 {
                    // Which comes first, the argument or the ownership
                    // check, is the implementation's choice: either
                    // refusal is right, and neither changes anything.
                    return one(match ops::ownership_check(&self.s, &l, now) {
                        Ok(()) => Err("ValidationError"),
                        Err(e) => Err(either_or_validation(&e)),
                    });
                }
                one(done(ops::note_step(&mut self.s, &l, *n, now)))
            }
            Step::NoteSpend { h, w, quarters } => {
                let l = self.lease(*h, *w, false);
                if *quarters < 0 {
                    return one(match ops::ownership_check(&self.s, &l, now) {
                        Ok(()) => Err("ValidationError"),
                        Err(e) => Err(either_or_validation(&e)),
                    });
                }
                one(done(ops::note_spend(&mut self.s, &l, quarters * 250_000, now)))
            }
            Step::Complete { h, w, valid } => {
                let l = self.lease(*h, *w, false);
                let text = result_of(*h, *valid).to_string();
                let completed = self.status_str(*h) == "completed";
                let r = if *valid {
                    ops::complete(&mut self.s, &l, &text, now)
                } else {
                    ops::fail(&mut self.s, &l, "output schema", now)
                };
                if completed && !*valid {
                    // impl-defined: invalid-result-after-complete (PROTOCOL
                    // §17): a no-op or a refusal; the first result stands.
                    return one(Err("ok|StateError"));
                }
                one(done(r))
            }
            Step::Release { h, w } => {
                let l = self.lease(*h, *w, false);
                one(done(ops::release(&mut self.s, &l, now)))
            }
            Step::Ack { h } => {
                let id = hid(h);
                one(done(ops::ack(&mut self.s, &id)))
            }
            Step::Advance { .. } => one(Ok(None)),
            Step::Scan { s } => one(self.scan(&format!("s{s}"))),
            Step::Recover { h, ws } => self.recover(*h, ws, winner),
            Step::ClaimRace { h, ws } => self.claim_race(*h, ws, winner),
            Step::Suspend { h } => {
                let id = hid(h);
                let r = done(ops::suspend(&mut self.s, &id));
                if r.is_ok() {
                    self.keep_bundle(*h);
                }
                one(r)
            }
            Step::RequestApproval { h, w, class, timeout_s } => {
                let l = self.lease(*h, *w, false);
                if !matches!(class.as_str(), "read" | "write" | "financial" | "destructive") {
                    return one(match ops::ownership_check(&self.s, &l, now) {
                        Ok(()) => Err("ValidationError"),
                        Err(e) => Err(either_or_validation(&e)),
                    });
                }
                let id = format!("pending-{h}-{}", self.s.approvals.len());
                let r = ops::approval_request(&mut self.s, &l, &id, class, i64::from(*timeout_s) * 1000, now);
                if self.s.approvals.contains_key(&id) {
                    self.approvals.entry(*h).or_default().push(id);
                }
                one(done(r))
            }
            Step::Decide { h, nth, approve } => {
                let Some(ids) = self.approvals.get(h).filter(|v| !v.is_empty()) else { return Vec::new() };
                let id = ids[usize::from(*nth) % ids.len()].clone();
                one(Ok(Some(ops::decide(&mut self.s, &id, *approve).is_ok())))
            }
            // the steps added later: world_extra.rs
            _ => self.apply_extra(step),
        }
    }

    /// A supervisor pass (§7): renew or take the term, else an empty scan;
    /// orphan expired leases of the handoffs running when it read, then
    /// those a dead token holder held (§7.5), then fail those over budget
    /// (dhp-rs's order, §7.3), then stalls, then expire approvals.
    fn scan(&mut self, sup: &str) -> Expect {
        let now = self.now;
        if ops::leader_acquire(&mut self.s, sup, LEADER_TTL_MS, now).is_err() {
            return Ok(None);
        }
        let running: Vec<String> = self
            .s
            .handoffs
            .iter()
            .filter(|(_, h)| h.status == dhp_model::state::Status::Running)
            .map(|(k, _)| k.clone())
            .collect();
        for hid in &running {
            let expired = self.s.ownership.get(hid).is_some_and(|o| o.holder != ORPHANED && o.lease_expires_at < now);
            if expired {
                let _ = ops::orphan(&mut self.s, sup, hid, OrphanReason::LeaseExpired, false, now);
            }
        }
        // a holder whose token is free died (§7.5): all it held is
        // orphaned, and its token reaped
        for hid in &running {
            let dead = self.s.ownership.get(hid).is_some_and(|o| {
                o.holder.strip_prefix('w').and_then(|x| x.parse::<u8>().ok()).is_some_and(|w| self.dead.contains(&w))
            });
            if dead {
                let _ = ops::orphan(&mut self.s, sup, hid, OrphanReason::WorkerDied, true, now);
            }
        }
        self.dead.clear();
        for hid in &running {
            let _ = ops::budget_kill(&mut self.s, sup, hid, now);
        }
        // stalled by repeated activity or by the age of the last
        // checkpoint (§7.4), after expiry, deaths and budgets
        for hid in &running {
            if self.stalled(hid) || self.stalled_by_age(hid) {
                let _ = ops::orphan(&mut self.s, sup, hid, OrphanReason::Stalled, false, now);
            }
        }
        let _ = ops::approval_expire(&mut self.s, sup, now);
        Ok(None)
    }

    /// Racing claimers: the winner's claim first, then the others'.
    fn claim_race(&mut self, h: u8, ws: &[u8], winner: Option<u8>) -> Vec<(u8, Expect)> {
        let hid = self.hid(h).to_string();
        let mut out = Vec::new();
        for w in winner_first(ws, winner) {
            let r = ops::claim(&mut self.s, &hid, &format!("w{w}"), LEASE_TTL_MS, self.now);
            if r.is_ok() {
                self.tokens.insert((h, w), 0);
            }
            // a loser finds the row taken (OwnershipLost) or the status
            // running (StateError), depending on which it reads first
            // (impl-defined: race-loser-kind, PROTOCOL §17)
            let e = match r {
                Err(OpError::StateError(_) | OpError::OwnershipLost) => Err("OwnershipLost|StateError"),
                r => done(r),
            };
            out.push((w, e));
        }
        out
    }

    /// Racing recoverers: the winner's compare-and-set first, then the
    /// others', each presenting the fence it read.
    fn recover(&mut self, h: u8, ws: &[u8], winner: Option<u8>) -> Vec<(u8, Expect)> {
        let hid = self.hid(h).to_string();
        let mut out = Vec::new();
        for w in winner_first(ws, winner) {
            let seen = self.s.ownership.get(&hid).map_or(0, |o| o.fence);
            let r = ops::recover(&mut self.s, &hid, &format!("w{w}"), seen, LEASE_TTL_MS, self.now);
            if let Ok(l) = &r {
                self.tokens.insert((h, w), l.fence);
            }
            // §13 item 12: recover of a handoff that is not orphaned is
            // OwnershipLost in dhp-rs, StateError in the reference; both pass.
            let e = match r {
                Err(OpError::OwnershipLost) => Err("OwnershipLost|StateError"),
                r => done(r),
            };
            out.push((w, e));
        }
        out
    }
}

//! The model's answers for the steps of [`super::gen_extra`]: what each
//! must reply, through dhp-model's operations where the model has one
//! (claim, complete, resume, record_effect, the ownership check).

use super::gen::Step;
use super::gen_extra::granted;
use super::world::{kind, Expect, World, LEASE_TTL_MS};
use dhp_model::ops::{self, Lease};
use dhp_model::state::{ApprovalStatus, Checkpoint, Handoff, State};

/// A bundle as suspend wrote it, in the model: the handoff and its
/// checkpoints at that moment.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The handoff.
    pub handoff: Handoff,
    /// Its checkpoints.
    pub checkpoints: Vec<Checkpoint>,
    /// The file the implementation wrote it to (the runner's side).
    pub path: Option<String>,
}

/// The lease a [`Step::Retune`] writes: 1 s × 2 missed.
pub const RETUNED_TTL_MS: i64 = 2_000;

/// The lease a long [`Step::Retune`] writes: 100 s × 2, past the stall horizon.
pub const LONG_TTL_MS: i64 = 200_000;

/// The result a [`Step::Effect`] records.
pub fn effect_result(r: u8) -> serde_json::Value {
    serde_json::json!({"r": r})
}

/// The effect's step id.
pub fn effect_step(step: u8) -> String {
    format!("e{step}")
}

fn done<T>(r: Result<T, ops::OpError>) -> Expect {
    r.map(|_| None).map_err(|e| kind(&e))
}

impl World {
    /// Checkpoints the model holds for `h`.
    pub fn checkpoint_count(&self, h: u8) -> usize {
        self.s.checkpoints.get(self.hid(h)).map_or(0, Vec::len)
    }

    /// The holder's token of `h`, if a worker holds it.
    fn holder_lease(&self, h: u8) -> Option<Lease> {
        let w = self.holder_index(h)?;
        Some(Lease { hid: self.hid(h).to_string(), holder: format!("w{w}"), fence: self.presented_fence(h, w, false) })
    }

    /// The approval a [`Step::Await`] awaits and the worker that awaits
    /// it, if sending it cannot block: the holder's lease is good and
    /// the approval is decided or expired.
    pub fn await_plan(&self, h: u8, nth: u8) -> Option<(u8, String, ApprovalStatus)> {
        let l = self.holder_lease(h)?;
        ops::ownership_check(&self.s, &l, self.now).ok()?;
        let ids = self.approvals.get(&h).filter(|v| !v.is_empty())?;
        let id = ids[usize::from(nth) % ids.len()].clone();
        let st = self.s.approvals.get(&id)?.status;
        (st != ApprovalStatus::Pending).then(|| (self.holder_index(h).unwrap_or(0), id, st))
    }

    /// Apply a step of [`super::gen_extra`] (see [`World::apply`]).
    pub fn apply_extra(&mut self, step: &Step) -> Vec<(u8, Expect)> {
        let now = self.now;
        let one = |e: Expect| vec![(0, e)];
        match step {
            Step::Await { h, nth } => match self.await_plan(*h, *nth) {
                None => Vec::new(),
                Some((_, _, ApprovalStatus::Approved)) => one(Ok(None)),
                Some(_) => one(Err("ApprovalDenied")),
            },
            Step::BadId { h, .. } => {
                // a claim by a good id would have changed nothing else
                let mut probe = self.s.clone();
                let hid = self.hid(*h).to_string();
                one(match ops::claim(&mut probe, &hid, "w-probe", LEASE_TTL_MS, now) {
                    Ok(_) => Err("ValidationError"),
                    Err(e) => Err(either(kind(&e))),
                })
            }
            Step::CompleteIntegral { h, w } => {
                let l = self.lease_of(*h, *w);
                if super::gen_extra::draft4_handoff(*h) {
                    let completed = self.status_str(*h) == "completed";
                    let r = done(ops::fail(&mut self.s, &l, "output schema", now));
                    // impl-defined: invalid-result-after-complete (PROTOCOL §17)
                    return one(if completed { Err("ok|StateError") } else { r });
                }
                one(done(ops::complete(&mut self.s, &l, r#"{"x": 1.0}"#, now)))
            }
            Step::Resume { h, tamper } => {
                let Some(b) = self.bundles.get(h) else { return Vec::new() };
                if *tamper % 3 != 0 {
                    return one(Err("TamperError"));
                }
                let mut fresh = State::default();
                one(done(ops::resume(&mut fresh, self.hid(*h), &b.handoff)))
            }
            Step::Ship { h, how } => {
                if !self.s.handoffs.contains_key(self.hid(*h)) {
                    return one(Err("UnknownHandoff"));
                }
                // any refusal (impl-defined: ship-failure-kind, PROTOCOL §17)
                one(if *how == 4 { Err("*") } else { Ok(None) })
            }
            Step::Effect { h, w, step, r } => {
                let l = self.lease_of(*h, *w);
                let text = effect_result(*r).to_string();
                one(ops::record_effect(&mut self.s, &l, &effect_step(*step), &text, now)
                    .map(Some)
                    .map_err(|e| kind(&e)))
            }
            Step::Activity { h, w, n } => {
                let l = self.lease_of(*h, *w);
                let d = super::gen_extra::activity_digest(*h);
                let mut last = Ok(None);
                for _ in 0..*n {
                    last = done(ops::note_activity(&mut self.s, &l, &d, now));
                }
                one(last)
            }
            Step::Canonical { .. } => one(Ok(None)),
            Step::OpenRace { n } => (0..*n).map(|i| (i, Ok(None))).collect(),
            Step::NewerSchema => one(Err("ValidationError")),
            Step::LockedWrite { h, w } => {
                let l = self.lease_of(*h, *w);
                let hash = dhp_oracle::state_hash(&super::world::state_of(*h, 9)).unwrap_or_default();
                one(done(ops::checkpoint(&mut self.s, &l, &hash, usize::MAX, now)))
            }
            Step::Retune { h, long } => {
                let hid = self.hid(*h).to_string();
                if let Some(o) = self.s.ownership.get_mut(&hid) {
                    o.ttl = if *long { LONG_TTL_MS } else { RETUNED_TTL_MS };
                }
                one(Ok(None))
            }
            Step::Lead { s } => {
                let sup = format!("s{s}");
                one(Ok(Some(ops::leader_acquire(&mut self.s, &sup, super::world::LEADER_TTL_MS, now).is_ok())))
            }
            Step::Crash { h } => {
                // the claim as any claim; the token it published is free
                // once the process is killed
                let hid = self.hid(*h).to_string();
                let w = super::gen::CRASH_W;
                let r = ops::claim(&mut self.s, &hid, &format!("w{w}"), LEASE_TTL_MS, now);
                if r.is_ok() {
                    self.tokens.insert((*h, w), 0);
                }
                self.dead.insert(w);
                one(done(r))
            }
            Step::Capability { h, w, which } => {
                let l = self.lease_of(*h, *w);
                // Where the ownership check sits beside the capability
                // check is the implementation's: a refused token is either
                // (impl-defined: capability-or-ownership-first, PROTOCOL §17).
                one(match ops::ownership_check(&self.s, &l, now) {
                    Err(e) => Err(either_denied(kind(&e))),
                    Ok(()) if granted(*h, *which) => Ok(None),
                    Ok(()) => Err("CapabilityDenied"),
                })
            }
            _ => Vec::new(),
        }
    }

    fn lease_of(&self, h: u8, w: u8) -> Lease {
        Lease { hid: self.hid(h).to_string(), holder: format!("w{w}"), fence: self.presented_fence(h, w, false) }
    }

    /// A running handoff with a live lease whose digest repeated
    /// `DHP_STALL_MAX_REPEATS` times.
    pub fn stalled(&self, hid: &str) -> bool {
        let live = self
            .s
            .ownership
            .get(hid)
            .is_some_and(|o| o.holder != dhp_model::state::ORPHANED && o.lease_expires_at >= self.now);
        let h = self.s.handoffs.get(hid);
        let running = h.is_some_and(|h| h.status == dhp_model::state::Status::Running);
        let repeats = h.and_then(|h| h.digest.as_ref()).map_or(0, |(_, n)| *n);
        live && running && repeats >= super::gen_extra::STALL_MAX_REPEATS
    }

    /// The digest repeats the model counted for `h`.
    pub fn repeats(&self, h: u8) -> u32 {
        self.s.handoffs.get(self.hid(h)).and_then(|x| x.digest.as_ref()).map_or(0, |(_, n)| *n)
    }

    /// After a suspend the model accepted: the bundle it wrote.
    pub fn keep_bundle(&mut self, h: u8) {
        let hid = self.hid(h).to_string();
        if let Some(handoff) = self.s.handoffs.get(&hid).cloned() {
            let checkpoints = self.s.checkpoints.get(&hid).cloned().unwrap_or_default();
            self.bundles.insert(h, Bundle { handoff, checkpoints, path: None });
        }
    }
}

/// ValidationError or the claim's own refusal (which check runs first is
/// the implementation's: impl-defined: bad-id-or-state-first, PROTOCOL §17).
fn either(k: &'static str) -> &'static str {
    match k {
        "StateError" => "ValidationError|StateError",
        "OwnershipLost" => "ValidationError|OwnershipLost",
        "BudgetExceeded" => "ValidationError|BudgetExceeded",
        _ => "ValidationError|UnknownHandoff",
    }
}

fn either_denied(k: &'static str) -> &'static str {
    match k {
        "FencingError" => "CapabilityDenied|FencingError|ok",
        "LeaseLost" => "CapabilityDenied|LeaseLost|ok",
        "StateError" => "CapabilityDenied|StateError|ok",
        _ => "CapabilityDenied|UnknownHandoff|ok",
    }
}

//! Weighting toward the interesting (issue 45): what in the model's state
//! makes a step worth more than its family's base weight — a decided or
//! expired approval (decide it again, await it), an approval past its
//! timeout, a wall-clock budget that runs out within a lease, a stall, a
//! dead token holder, a lease that outlives the stall horizon — and the
//! step that meets it. Mutant names play no part: each boost is a
//! deadline or a second decision the protocol has a rule for.

use super::gen::{Rng, Step, CRASH_W, STALL_JUMP_S};
use super::world::World;
use dhp_model::state::{ApprovalStatus, Status, ORPHANED};

/// `DHP_STALL_TIMEOUT_S` (120 s), in ms: a checkpoint older than this
/// under a live lease is stalled by age (§7.4).
pub const STALL_TIMEOUT_MS: i64 = 120_000;

impl World {
    /// Running handoffs, by index.
    fn running(&self) -> Vec<u8> {
        (0..self.hids.len() as u8).filter(|h| self.status_str(*h) == "running").collect()
    }

    /// The ms left on `h`'s live lease (none if orphaned or not held).
    pub fn lease_left(&self, h: u8) -> Option<i64> {
        let o = self.s.ownership.get(self.hid(h)).filter(|o| o.holder != ORPHANED)?;
        Some(o.lease_expires_at - self.now).filter(|l| *l >= 0)
    }

    /// The ms left of `h`'s wall-clock budget (negative once over).
    pub fn wall_left(&self, h: u8) -> Option<i64> {
        let x = self.s.handoffs.get(self.hid(h))?;
        Some(x.claimed_at? + x.budget.max_wall? - self.now)
    }

    /// `(nth, status)` of `h`'s approvals, oldest first; a pending one
    /// past its timeout reads `Expired` when `overdue` is asked for.
    fn approval_states(&self, h: u8) -> Vec<(u8, ApprovalStatus, bool)> {
        let ids = self.approvals.get(&h).cloned().unwrap_or_default();
        ids.iter()
            .enumerate()
            .filter_map(|(k, id)| {
                let a = self.s.approvals.get(id)?;
                let overdue = a.status == ApprovalStatus::Pending && a.expires_at < self.now;
                Some((k as u8, a.status, overdue))
            })
            .collect()
    }

    /// The handoffs whose approvals invite a step: a decided or expired one
    /// (decide it again; its holder awaits it).
    fn settled_approvals(&self) -> Vec<(u8, u8, ApprovalStatus)> {
        let mut out = Vec::new();
        for h in self.running() {
            for (k, st, _) in self.approval_states(h) {
                if st != ApprovalStatus::Pending {
                    out.push((h, k, st));
                }
            }
        }
        out
    }

    /// Pending approvals of running handoffs, within their timeout.
    fn open_approvals(&self) -> Vec<(u8, u8)> {
        let mut out = Vec::new();
        for h in self.running() {
            for (k, st, overdue) in self.approval_states(h) {
                if st == ApprovalStatus::Pending && !overdue {
                    out.push((h, k));
                }
            }
        }
        out
    }

    /// An approval past its timeout that no scan expired yet.
    fn overdue_approval(&self) -> bool {
        (0..self.hids.len() as u8).any(|h| self.approval_states(h).iter().any(|(_, _, o)| *o))
    }

    /// Running handoffs over their wall-clock budget under a live lease.
    fn over_wall(&self) -> Vec<u8> {
        self.running()
            .into_iter()
            .filter(|h| self.lease_left(*h).is_some() && self.wall_left(*h).is_some_and(|w| w < 0))
            .collect()
    }

    /// Whole seconds that take a running handoff past its wall-clock
    /// budget by about a second while its lease still has a second left.
    fn wall_jump(&self) -> Option<u32> {
        self.running().into_iter().find_map(|h| {
            let (wall, lease) = (self.wall_left(h)?, self.lease_left(h)?);
            let secs = (wall + 1999) / 1000;
            (wall >= 0 && secs * 1000 + 800 <= lease).then_some(secs as u32)
        })
    }

    /// A running handoff a scan would orphan for a stall, by repeats
    /// or by the age of its last checkpoint.
    fn stall_due(&self) -> bool {
        self.running().into_iter().any(|h| {
            let hid = self.hid(h).to_string();
            self.stalled(&hid) || self.stalled_by_age(&hid)
        })
    }

    /// A running handoff with a checkpoint, under a lease that outlives
    /// the stall horizon: [`STALL_JUMP_S`] on, a scan finds it stalled.
    fn outlives_stall(&self) -> bool {
        self.running().into_iter().any(|h| {
            self.checkpoint_count(h) > 0
                && self.lease_left(h).is_some_and(|l| l > i64::from(STALL_JUMP_S) * 1000 + 2000)
        })
    }

    /// A checkpoint older than the stall horizon under a live lease.
    pub fn stalled_by_age(&self, hid: &str) -> bool {
        let live = self.s.ownership.get(hid).is_some_and(|o| o.holder != ORPHANED && o.lease_expires_at >= self.now);
        let h = self.s.handoffs.get(hid);
        let running = h.is_some_and(|h| h.status == Status::Running);
        let old = h.and_then(|h| h.last_checkpoint_at).is_some_and(|t| t < self.now - STALL_TIMEOUT_MS);
        live && running && old
    }

    /// A running handoff held by a worker whose token died.
    fn dead_holder(&self) -> bool {
        self.running().into_iter().any(|h| self.holder_index(h).is_some_and(|w| self.dead.contains(&w)))
    }

    /// The leader whose live term is due for renewal (under 2 s left of
    /// `DHP_LEADER_TTL_S`): its `ensure_leadership` must write a new term.
    fn renewal_due(&self) -> Option<u8> {
        let l = self.s.leadership.as_ref()?;
        let left = l.expires_at - self.now;
        let s = l.holder.strip_prefix('s')?.parse().ok()?;
        (0..2000).contains(&left).then_some(s)
    }

    /// A running handoff whose holder repeated its digest, not yet up to
    /// the limit.
    fn repeating(&self) -> Option<(u8, u8, u8)> {
        self.running().into_iter().find_map(|h| {
            let n = self.repeats(h);
            let left = super::gen_extra::STALL_MAX_REPEATS.checked_sub(n).filter(|l| n > 0 && *l > 0)?;
            Some((h, self.holder_index(h)?, left as u8))
        })
    }

    /// Extra weight for the scan family: something a scan must act on.
    pub fn scan_interest(&self) -> u64 {
        let due = self.overdue_approval() || self.stall_due() || self.dead_holder() || self.renewal_due().is_some();
        (if due { 25 } else { 0 })
            + (if self.outlives_stall() || self.wall_jump().is_some() || self.approval_jump().is_some() {
                40
            } else {
                0
            })
    }

    /// Extra weight for the approvals family.
    pub fn approval_interest(&self) -> u64 {
        let open = if self.open_approvals().is_empty() { 0 } else { 10 };
        open + if self.settled_approvals().is_empty() { 0 } else { 25 }
    }

    /// Whole seconds that take a pending approval of a running handoff
    /// past its timeout by about a second while the lease still runs.
    fn approval_jump(&self) -> Option<u32> {
        self.running().into_iter().find_map(|h| {
            let lease = self.lease_left(h)?;
            let ids = self.approvals.get(&h)?;
            ids.iter().find_map(|id| {
                let a = self.s.approvals.get(id).filter(|a| a.status == ApprovalStatus::Pending)?;
                let left = a.expires_at - self.now;
                let secs = (left + 1999) / 1000;
                (left >= 0 && secs * 1000 + 800 <= lease).then_some(secs as u32)
            })
        })
    }

    /// A running handoff whose row holds long lease terms (a long
    /// [`Step::Retune`]) that no heartbeat has applied yet.
    fn long_terms_unused(&self) -> Option<u8> {
        self.running().into_iter().find(|h| {
            let o = self.s.ownership.get(self.hid(*h));
            o.is_some_and(|o| o.ttl == super::world_extra::LONG_TTL_MS)
                && self.lease_left(*h).is_some_and(|l| l < super::world_extra::LONG_TTL_MS / 2)
        })
    }

    /// Extra weight for the heartbeat family: long terms to apply.
    pub fn heartbeat_interest(&self, store: bool) -> u64 {
        if self.long_terms_unused().is_some() || self.repeating().is_some() {
            40
        } else if store && self.retune_ready() {
            10
        } else {
            0
        }
    }

    /// Under `standard-store`, a checkpointed running handoff whose lease
    /// terms could be made long (none is yet).
    fn retune_ready(&self) -> bool {
        !self.outlives_stall()
            && self.long_terms_unused().is_none()
            && self.running().into_iter().any(|h| self.checkpoint_count(h) > 0)
    }

    /// A running handoff under a lease that outlives the stall horizon
    /// but with no checkpoint yet to age.
    fn long_lease_unchecked(&self) -> Option<u8> {
        self.running().into_iter().find(|h| {
            self.checkpoint_count(*h) == 0
                && self.lease_left(*h).is_some_and(|l| l > i64::from(STALL_JUMP_S) * 1000 + 2000)
        })
    }

    /// Extra weight for the checkpoint family: a checkpoint to age.
    pub fn checkpoint_interest(&self) -> u64 {
        if self.long_lease_unchecked().is_some() {
            40
        } else {
            0
        }
    }

    /// Extra weight for the budget family: usage noted past a deadline.
    pub fn budget_interest(&self) -> u64 {
        if self.over_wall().is_empty() {
            0
        } else {
            40
        }
    }
}

/// A step at what makes the scan family interesting now, if anything does.
pub fn scan_step(r: &mut Rng, w: &World, sups: u8, liveness: bool) -> Option<Step> {
    let s = r.below(u64::from(sups)) as u8;
    if let Some(s) = w.renewal_due().filter(|_| r.chance(60)) {
        return Some(Step::Lead { s });
    }
    if (w.overdue_approval() || w.stall_due() || w.dead_holder()) && r.chance(80) {
        // by the supervisor whose scan acts: the live leader, if any
        let now = w.now;
        let lead = w.s.leadership.as_ref().filter(|l| l.expires_at >= now);
        let s = lead.and_then(|l| l.holder.strip_prefix('s')?.parse().ok()).unwrap_or(s);
        return Some(Step::Scan { s });
    }
    if w.outlives_stall() && r.chance(70) {
        return Some(Step::Advance { secs: STALL_JUMP_S });
    }
    if let Some(secs) = w.wall_jump().filter(|_| r.chance(80)) {
        return Some(Step::Advance { secs });
    }
    if let Some(secs) = w.approval_jump().filter(|_| r.chance(60)) {
        return Some(Step::Advance { secs });
    }
    // a worker process that dies holding a token; a supervisor asking
    // for its term (renewing it while it is live)
    if liveness && r.chance(15) {
        let pending: Vec<u8> = (0..w.hids.len() as u8).filter(|h| w.status_str(*h) == "pending").collect();
        if !pending.is_empty() {
            return Some(Step::Crash { h: r.pick(&pending) });
        }
    }
    if r.chance(20) {
        return Some(Step::Lead { s });
    }
    None
}

/// An approvals step at a decided or expired approval: decide it again,
/// or have its holder await it.
pub fn approval_step(r: &mut Rng, w: &World) -> Option<Step> {
    let settled = w.settled_approvals();
    if settled.is_empty() || !r.chance(70) {
        // a pending one is decided (a first decision)
        let open = w.open_approvals();
        if open.is_empty() || !r.chance(50) {
            return None;
        }
        let (h, nth) = r.pick(&open);
        return Some(Step::Decide { h, nth, approve: r.chance(50) });
    }
    let (h, nth, st) = r.pick(&settled);
    // an expired one cannot be decided: its holder awaits it
    let decide = st != ApprovalStatus::Expired && r.chance(60);
    Some(if decide { Step::Decide { h, nth, approve: r.chance(50) } } else { Step::Await { h, nth } })
}

/// The holder's heartbeat that applies long lease terms (or rewrites
/// the terms first, under `standard-store`).
pub fn heartbeat_step(r: &mut Rng, w: &World, store: bool) -> Option<Step> {
    // long terms for a checkpointed handoff: its checkpoint may then age
    // past the stall horizon under a live lease
    if store && w.retune_ready() && r.chance(40) {
        let ready: Vec<u8> = w.running().into_iter().filter(|h| w.checkpoint_count(*h) > 0).collect();
        if !ready.is_empty() {
            return Some(Step::Retune { h: r.pick(&ready), long: true });
        }
    }
    // the holder repeats its digest up to the stall limit
    if let Some((h, x, n)) = w.repeating().filter(|_| r.chance(70)) {
        return Some(Step::Activity { h, w: x, n });
    }
    let h = w.long_terms_unused().filter(|_| r.chance(70))?;
    Some(Step::Heartbeat { h, w: w.holder_index(h)?, stale: false })
}

/// The holder's checkpoint under a lease that outlives the stall horizon.
pub fn checkpoint_step(r: &mut Rng, w: &World) -> Option<Step> {
    let h = w.long_lease_unchecked().filter(|_| r.chance(70))?;
    Some(Step::Checkpoint { h, w: w.holder_index(h)?, stale: false, s: 1 })
}

/// A suspend of a running handoff that used some budget, or a resume (as
/// written) of a bundle that carries usage: usage must survive the round
/// trip (§10).
pub fn suspend_step(r: &mut Rng, w: &World) -> Option<Step> {
    let carried: Vec<u8> =
        w.bundles.iter().filter(|(_, b)| b.handoff.steps > 0 || b.handoff.spend_micro > 0).map(|(h, _)| *h).collect();
    if !carried.is_empty() && r.chance(50) {
        return Some(Step::Resume { h: r.pick(&carried), tamper: 0 });
    }
    let used: Vec<u8> = w.running().into_iter().filter(|h| w.usage(*h) != (0, 0)).collect();
    (!used.is_empty() && r.chance(60)).then(|| Step::Suspend { h: r.pick(&used) })
}

/// A budget step by the holder of a handoff over its wall-clock budget.
pub fn budget_step(r: &mut Rng, w: &World) -> Option<Step> {
    let over = w.over_wall();
    if over.is_empty() || !r.chance(80) {
        return None;
    }
    let h = r.pick(&over);
    let x = w.holder_index(h)?;
    Some(if r.chance(50) { Step::NoteStep { h, w: x, n: 0 } } else { Step::NoteSpend { h, w: x, quarters: 0 } })
}

/// The crashed workers' index is never a racer's or a claimer's.
pub fn crash_worker() -> String {
    format!("w{CRASH_W}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::gen::{sequence, Features};
    use std::collections::BTreeMap;

    /// What the generated steps meet, as the model sees it at each step:
    /// the situations the boosts above are for.
    fn met(seed: u64, n: u64, steps: usize) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for i in 0..n {
            let s = sequence(seed, i, steps, Features::all());
            let mut w = World::new(&s.handoffs);
            for st in &s.steps {
                w.now += 5;
                if let Step::Advance { secs } = st {
                    w.now += i64::from(*secs) * 1000;
                }
                let hit = match st {
                    Step::Scan { .. } if w.running().iter().any(|h| w.stalled_by_age(w.hid(*h))) => {
                        Some("scan of a stall by age")
                    }
                    Step::Scan { .. } if w.running().iter().any(|h| w.stalled(w.hid(*h))) => {
                        Some("scan of a stall by repeats")
                    }
                    Step::Scan { .. } if w.dead_holder() => Some("scan of a dead holder"),
                    Step::NoteStep { h, .. } | Step::NoteSpend { h, .. } if w.over_wall().contains(h) => {
                        Some("usage past the wall-clock budget")
                    }
                    Step::Await { h, nth } => match w.await_plan(*h, *nth) {
                        Some((_, _, ApprovalStatus::Expired)) => Some("await of an expired approval"),
                        Some(_) => Some("await of a decided approval"),
                        None => None,
                    },
                    Step::Decide { h, nth, .. }
                        if w.approval_states(*h)
                            .get(usize::from(*nth))
                            .is_some_and(|x| x.1 != ApprovalStatus::Pending) =>
                    {
                        Some("decision of a decided approval")
                    }
                    Step::Lead { .. } if w.renewal_due().is_some() => Some("ensure_leadership when due"),
                    Step::Lead { .. } => Some("ensure_leadership"),
                    _ => None,
                };
                if let Some(k) = hit {
                    *out.entry(k).or_default() += 1;
                }
                let winner = match st {
                    Step::Recover { ws, .. } | Step::ClaimRace { ws, .. } => ws.first().copied(),
                    _ => None,
                };
                w.apply(st, winner);
            }
        }
        out
    }

    #[test]
    fn sixty_sequences_meet_each_deadline_death_and_second_decision() {
        let m = met(1, 60, 30);
        eprintln!("{m:#?}");
        for k in [
            "scan of a stall by age",
            "scan of a stall by repeats",
            "scan of a dead holder",
            "usage past the wall-clock budget",
            "await of an expired approval",
            "decision of a decided approval",
            "ensure_leadership",
            "ensure_leadership when due",
        ] {
            assert!(m.get(k).is_some_and(|n| *n > 0), "{k}: {m:?}");
        }
    }
}

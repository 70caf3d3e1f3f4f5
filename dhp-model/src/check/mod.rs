//! The exhaustive check (issue 43 item 2): DHP's workers and supervisors as
//! a stateright [`Model`] over the operations of [`crate::ops`], on an
//! integer clock, for small bounds.
//!
//! Processes: `workers` workers and `sups` supervisors. Faults (at most
//! `faults` in a run): a worker or supervisor crashes (its in-memory lease
//! is gone; it may restart empty), a worker pauses (it does nothing while
//! the clock runs) and wakes. The clock steps one tick at a time up to
//! `max_clock`; leases last [`LEASE_TTL`] ticks, leader terms
//! [`LEADER_TTL`]. A handoff needs `chunks` checkpoints, then completes
//! with the hashes of its checkpoint log as its result. A worker notes a
//! chunk's step (§6.4) before its checkpoint, and `max_steps` is `chunks`,
//! so a step wasted by a crash between the two overruns the budget after a
//! recovery.
//!
//! [`Variant::CheckThenWrite`] splits a worker's checkpoint into a check
//! (§5.2) and a later unchecked write, as the reference does (§13.2).

mod props;

pub use props::NAMES as PROPERTY_NAMES;

use std::collections::BTreeMap;

use stateright::{Model, Property};

use crate::judge::Variant;
use crate::ops::{self, Lease, OrphanReason};
use crate::state::{Budget, State, Status, Time};

/// Lease time to live, ticks.
pub const LEASE_TTL: Time = 2;
/// Leader term, ticks (must exceed a scan, §7.1).
pub const LEADER_TTL: Time = 3;

/// The bounds of one check.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Workers.
    pub workers: u8,
    /// Supervisors.
    pub sups: u8,
    /// Handoffs.
    pub handoffs: u8,
    /// Checkpoints a handoff needs before it completes.
    pub chunks: usize,
    /// The clock stops here.
    pub max_clock: Time,
    /// Crashes and pauses in one run.
    pub faults: u8,
    /// Strict, or the reference's check-then-write.
    pub variant: Variant,
    /// A planted bug, to show each property can fail (tests only).
    pub mutant: Option<Mutant>,
}

/// A bug planted into the processes of the model (not into [`crate::ops`]),
/// one per property, so the tests can show each property fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mutant {
    /// The worker goes on after `BudgetExceeded` (no silent budget overrun).
    IgnoreBudget,
    /// The worker labels its checkpoint with another handoff's input (no crossed inputs).
    CrossedInput,
    /// The DLQ parks a handoff without its error (no untyped results).
    UntypedDlq,
    /// An orphan drops the handoff's checkpoints (no lost results).
    OrphanDropsLog,
    /// No worker ever recovers an orphan (every handoff ends).
    NoRecover,
}

impl Bounds {
    /// The CI bound (seconds in a debug build).
    pub fn small(variant: Variant) -> Self {
        Bounds { workers: 2, sups: 2, handoffs: 1, chunks: 1, max_clock: 4, faults: 1, variant, mutant: None }
    }
    /// The nightly bound: one handoff of two checkpoints, more time, two faults.
    pub fn large(variant: Variant) -> Self {
        Bounds { workers: 2, sups: 2, handoffs: 1, chunks: 2, max_clock: 5, faults: 2, variant, mutant: None }
    }
    /// Two handoffs sharing the workers (hours; see benches/RESULTS.md).
    pub fn xl(variant: Variant) -> Self {
        Bounds { workers: 2, sups: 2, handoffs: 2, chunks: 1, max_clock: 4, faults: 1, variant, mutant: None }
    }
}

/// A worker process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Worker {
    /// The (hid, holder, fence) it believes it holds.
    pub lease: Option<Lease>,
    /// Check-then-write: its ownership check passed, the write is pending.
    pub checked: bool,
    /// It noted the step of the chunk it is working on (§6.4), not yet
    /// checkpointed: a crash now wastes that step, so a recovery can
    /// overrun the budget.
    pub stepped: bool,
    /// Not crashed.
    pub alive: bool,
    /// Stopped (SIGSTOP).
    pub paused: bool,
}

/// What the properties need beyond the store: facts no operation records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// The first write committed with a fence that was not the store's.
    pub stale: Option<String>,
    /// Completions committed per hid.
    pub completions: BTreeMap<String, u8>,
    /// Most checkpoints a hid ever had.
    pub high: BTreeMap<String, usize>,
}

/// The system: the store, the clock, the processes, the ghost.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sys {
    /// The store.
    pub st: State,
    /// The store's clock.
    pub clock: Time,
    /// Workers by index (`w0`, `w1`, …).
    pub workers: Vec<Worker>,
    /// Supervisors alive, by index (`s0`, `s1`, …).
    pub sups: Vec<bool>,
    /// Faults injected so far.
    pub faults: u8,
    /// Ghost state for the properties.
    pub ghost: Ghost,
}

/// One step of one process, or of the clock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Action {
    Tick,
    Claim(u8, u8),
    Recover(u8, u8),
    Heartbeat(u8),
    Step(u8),
    Check(u8),
    Write(u8),
    Complete(u8),
    Crash(u8),
    Restart(u8),
    Pause(u8),
    Wake(u8),
    Lead(u8),
    Orphan(u8, u8),
    Kill(u8, u8),
    SupCrash(u8),
    SupRestart(u8),
}

/// The model: bounds plus the checker's entry points.
#[derive(Debug, Clone)]
pub struct DhpModel {
    /// Its bounds.
    pub b: Bounds,
}

pub(crate) fn hid(h: u8) -> String {
    format!("h{h}")
}
pub(crate) fn wid(w: u8) -> String {
    format!("w{w}")
}
pub(crate) fn sid(s: u8) -> String {
    format!("s{s}")
}

impl DhpModel {
    /// The initial store: every handoff dispatched.
    pub fn init(&self) -> Sys {
        let mut st = State::default();
        // max_attempts 1: a second orphan dead-letters, within the small
        // bound's clock. max_steps = chunks: a step wasted by a crash
        // between it and its checkpoint overruns the budget on recovery.
        let budget = Budget { max_steps: Some(self.b.chunks as i64), max_attempts: 1, ..Budget::default() };
        for h in 0..self.b.handoffs {
            let _ = ops::dispatch(&mut st, &hid(h), budget.clone());
        }
        let w = Worker { lease: None, checked: false, stepped: false, alive: true, paused: false };
        Sys {
            st,
            clock: 0,
            workers: vec![w; self.b.workers as usize],
            sups: vec![true; self.b.sups as usize],
            faults: 0,
            ghost: Ghost::default(),
        }
    }

    /// The checkpoint hashes of `h`, joined: a completion's result.
    pub(crate) fn result_of(st: &State, h: &str) -> String {
        st.checkpoints
            .get(h)
            .map(|c| c.iter().map(|x| x.hash.as_str()).collect::<Vec<_>>().join(","))
            .unwrap_or_default()
    }

    fn worker_actions(&self, s: &Sys, out: &mut Vec<Action>) {
        for (i, w) in s.workers.iter().enumerate() {
            let i = i as u8;
            if !w.alive {
                out.push(Action::Restart(i));
                continue;
            }
            if w.paused {
                out.push(Action::Wake(i));
                continue;
            }
            if s.faults < self.b.faults {
                out.push(Action::Crash(i));
                out.push(Action::Pause(i));
            }
            let Some(l) = &w.lease else {
                for (h, ho) in s.st.handoffs.iter() {
                    let n = h[1..].parse().unwrap_or(0);
                    match ho.status {
                        Status::Pending => out.push(Action::Claim(i, n)),
                        Status::Orphaned => out.push(Action::Recover(i, n)),
                        _ => {}
                    }
                }
                continue;
            };
            out.push(Action::Heartbeat(i));
            let done = s.st.checkpoints.get(&l.hid).map_or(0, Vec::len) >= self.b.chunks;
            if done && !w.checked && !w.stepped {
                out.push(Action::Complete(i));
            } else if !w.stepped {
                out.push(Action::Step(i));
            } else if self.b.variant == Variant::CheckThenWrite && !w.checked {
                out.push(Action::Check(i));
            } else {
                out.push(Action::Write(i));
            }
        }
    }

    fn sup_actions(&self, s: &Sys, out: &mut Vec<Action>) {
        for (i, alive) in s.sups.iter().enumerate() {
            let i = i as u8;
            if !alive {
                out.push(Action::SupRestart(i));
                continue;
            }
            if s.faults < self.b.faults {
                out.push(Action::SupCrash(i));
            }
            out.push(Action::Lead(i));
            if !s.st.leads(&sid(i), s.clock) {
                continue;
            }
            for (h, ho) in s.st.handoffs.iter() {
                let n = h[1..].parse().unwrap_or(0);
                if ho.status == Status::Running {
                    out.push(Action::Orphan(i, n));
                }
                if ho.over_budget(s.clock) && matches!(ho.status, Status::Running | Status::Orphaned) {
                    out.push(Action::Kill(i, n));
                }
            }
        }
    }
}

impl Model for DhpModel {
    type State = Sys;
    type Action = Action;

    fn init_states(&self) -> Vec<Sys> {
        vec![self.init()]
    }

    fn actions(&self, s: &Sys, out: &mut Vec<Action>) {
        if s.clock < self.b.max_clock {
            out.push(Action::Tick);
        }
        self.worker_actions(s, out);
        self.sup_actions(s, out);
    }

    fn next_state(&self, s: &Sys, a: Action) -> Option<Sys> {
        let mut n = s.clone();
        let changed = step(&self.b, &mut n, &a);
        (changed && n != *s).then_some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        props::properties()
    }
}

/// Apply `a` to `s`; false if it cannot happen here.
pub(crate) fn step(b: &Bounds, s: &mut Sys, a: &Action) -> bool {
    let now = s.clock;
    match *a {
        Action::Tick => s.clock += 1,
        Action::Crash(w) => {
            s.faults += 1;
            s.workers[w as usize] = Worker { lease: None, checked: false, stepped: false, alive: false, paused: false };
        }
        Action::Pause(w) => {
            s.faults += 1;
            s.workers[w as usize].paused = true;
        }
        Action::Wake(w) => s.workers[w as usize].paused = false,
        Action::Restart(w) => s.workers[w as usize].alive = true,
        Action::SupCrash(i) => {
            s.faults += 1;
            s.sups[i as usize] = false;
        }
        Action::SupRestart(i) => s.sups[i as usize] = true,
        Action::Lead(i) => return ops::leader_acquire(&mut s.st, &sid(i), LEADER_TTL, now).is_ok(),
        Action::Orphan(i, h) => {
            let holder = s.st.ownership.get(&hid(h)).map(|o| o.holder.clone()).unwrap_or_default();
            let dead = s.workers.iter().enumerate().any(|(k, w)| !w.alive && wid(k as u8) == holder);
            let r = if dead { OrphanReason::WorkerDied } else { OrphanReason::LeaseExpired };
            let ok = ops::orphan(&mut s.st, &sid(i), &hid(h), r, dead, now).is_ok();
            if let (true, Some(ho)) = (ok, s.st.handoffs.get_mut(&hid(h))) {
                match b.mutant {
                    Some(Mutant::UntypedDlq) => ho.error = None,
                    Some(Mutant::OrphanDropsLog) => drop(s.st.checkpoints.remove(&hid(h))),
                    _ => {}
                }
            }
            return ok;
        }
        Action::Kill(i, h) => return ops::budget_kill(&mut s.st, &sid(i), &hid(h), now) == Ok(true),
        Action::Claim(w, h) => {
            let l = ops::claim(&mut s.st, &hid(h), &wid(w), LEASE_TTL, now);
            s.workers[w as usize].lease = l.ok();
        }
        Action::Recover(..) if b.mutant == Some(Mutant::NoRecover) => return false,
        Action::Recover(w, h) => {
            let f = s.st.ownership.get(&hid(h)).map_or(-1, |o| o.fence);
            s.workers[w as usize].lease = ops::recover(&mut s.st, &hid(h), &wid(w), f, LEASE_TTL, now).ok();
        }
        Action::Heartbeat(w) => worker_op(s, w, |st, l| ops::heartbeat(st, l, now).map(drop)),
        // Over budget, the worker stops (§6.4): worker_op drops its lease.
        Action::Step(w) => {
            if b.mutant == Some(Mutant::IgnoreBudget) {
                let lease = s.workers[w as usize].lease.clone();
                let _ = lease.map(|l| ops::note_step(&mut s.st, &l, 1, now));
            } else {
                worker_op(s, w, |st, l| ops::note_step(st, l, 1, now));
            }
            s.workers[w as usize].stepped = s.workers[w as usize].lease.is_some();
        }
        Action::Check(w) => {
            let ok = s.workers[w as usize].lease.as_ref().is_some_and(|l| ops::ownership_check(&s.st, l, now).is_ok());
            let wk = &mut s.workers[w as usize];
            if ok {
                wk.checked = true;
            } else {
                wk.lease = None;
            }
        }
        Action::Write(w) => write(b, s, w),
        Action::Complete(w) => {
            let Some(l) = s.workers[w as usize].lease.clone() else { return false };
            let before = s.st.handoffs.get(&l.hid).map(|h| h.status);
            let result = DhpModel::result_of(&s.st, &l.hid);
            let _ = ops::complete(&mut s.st, &l, &result, now);
            if before != Some(Status::Completed)
                && s.st.handoffs.get(&l.hid).map(|h| h.status) == Some(Status::Completed)
            {
                *s.ghost.completions.entry(l.hid.clone()).or_default() += 1;
            }
            s.workers[w as usize].lease = None;
        }
    }
    true
}

/// A fenced worker operation: on refusal the worker drops its lease.
fn worker_op(s: &mut Sys, w: u8, f: impl FnOnce(&mut State, &Lease) -> Result<(), ops::OpError>) {
    let Some(l) = s.workers[w as usize].lease.clone() else { return };
    if f(&mut s.st, &l).is_err() {
        s.workers[w as usize].lease = None;
    }
}

/// A checkpoint and its step: atomic with its check (strict), or the
/// reference's unchecked INSERT after an earlier check (check-then-write).
fn write(b: &Bounds, s: &mut Sys, w: u8) {
    let now = s.clock;
    let Some(l) = s.workers[w as usize].lease.clone() else { return };
    let valid = s.st.ownership.get(&l.hid).is_some_and(|o| o.holder == l.holder && o.fence == l.fence);
    let seq = s.st.next_seq(&l.hid);
    let label = if b.mutant == Some(Mutant::CrossedInput) { "h9" } else { l.hid.as_str() };
    let hash = format!("{label}#{seq}");
    let committed = if b.variant == Variant::CheckThenWrite {
        // The reference's step was noted (checked) by Step; its INSERT is unchecked.
        s.workers[w as usize].checked = false;
        s.workers[w as usize].stepped = false;
        s.st.checkpoints.entry(l.hid.clone()).or_default().push(crate::state::Checkpoint { seq, hash });
        true
    } else {
        s.workers[w as usize].stepped = false;
        let ok = ops::checkpoint(&mut s.st, &l, &hash, 100, now).is_ok();
        if !ok {
            s.workers[w as usize].lease = None; // fenced out: the worker stops
        }
        ok
    };
    if committed && !valid && s.ghost.stale.is_none() {
        let cur =
            s.st.ownership.get(&l.hid).map_or("no row".to_string(), |o| format!("{} fence {}", o.holder, o.fence));
        s.ghost.stale = Some(format!(
            "{} wrote checkpoint {seq} of {} with fence {} while the store had {cur}",
            l.holder, l.hid, l.fence
        ));
    }
    let n = s.st.checkpoints.get(&l.hid).map_or(0, Vec::len);
    let hi = s.ghost.high.entry(l.hid.clone()).or_default();
    *hi = (*hi).max(n);
}

//! The guarantees of the README as stateright properties, and the bounded
//! liveness check.
//!
//! # Liveness, and why not `eventually`
//!
//! stateright's `eventually` is checked only on acyclic paths; a worker
//! that heartbeats at a fixed clock closes a cycle at once, so every path
//! of this model would be skipped (a false negative). "Every handoff ends
//! completed or dead-lettered under fair schedules" is checked instead as
//! a *bounded liveness* safety property: from **every reachable state**,
//! the fair continuation — faults stop, crashed processes restart, paused
//! ones wake, every process takes its step in turn and the clock moves —
//! ends every handoff `completed` or `failed` within [`FAIR_ROUNDS`]
//! rounds. A wedged state (a torn or unrecoverable handoff, a leadership
//! nobody can take) fails it.

use stateright::Property;

use super::{step, wid, Action, DhpModel, Sys};
use crate::ops;
use crate::state::Status;

/// Rounds the fair continuation may take.
pub const FAIR_ROUNDS: usize = 40;

/// The names, in the order checked.
pub const NAMES: [&str; 6] = [
    "no lost results",
    "no crossed inputs",
    "no untyped results",
    "no silent budget overrun",
    "one owner at a time, with fencing",
    "every handoff ends completed or dead-lettered (fair continuation)",
];

pub(super) fn properties() -> Vec<Property<DhpModel>> {
    vec![
        Property::always(NAMES[0], |_, s| no_lost_results(s)),
        Property::always(NAMES[1], |_, s| no_crossed_inputs(s)),
        Property::always(NAMES[2], |_, s| no_untyped_results(s)),
        Property::always(NAMES[3], |_, s| no_silent_overrun(s)),
        Property::always(NAMES[4], |_, s| one_owner(s)),
        Property::always(NAMES[5], fair_end),
    ]
}

/// A completed handoff delivered exactly one result, the one its durable
/// checkpoint log makes; no checkpoint log ever shrank.
pub fn no_lost_results(s: &Sys) -> bool {
    s.ghost.completions.values().all(|n| *n <= 1)
        && s.st.handoffs.iter().all(|(h, ho)| {
            ho.status != Status::Completed
                || ho.delivery.as_ref().is_some_and(|d| d.result == DhpModel::result_of(&s.st, h))
        })
        && s.ghost.high.iter().all(|(h, n)| s.st.checkpoints.get(h).map_or(0, Vec::len) >= *n)
}

/// Every checkpoint and every result of a handoff is its own.
pub fn no_crossed_inputs(s: &Sys) -> bool {
    s.st.checkpoints.iter().all(|(h, cs)| cs.iter().all(|c| c.hash.starts_with(&format!("{h}#"))))
        && s.st.handoffs.iter().all(|(h, ho)| {
            ho.delivery
                .as_ref()
                .is_none_or(|d| d.result.split(',').filter(|x| !x.is_empty()).all(|x| x.starts_with(&format!("{h}#"))))
        })
}

/// A terminal handoff says why: a result, or an error.
pub fn no_untyped_results(s: &Sys) -> bool {
    s.st.handoffs.values().all(|h| match h.status {
        Status::Completed => h.delivery.is_some(),
        Status::Failed => h.error.is_some(),
        _ => true,
    })
}

/// No handoff completed over its budget.
pub fn no_silent_overrun(s: &Sys) -> bool {
    s.st.handoffs.values().all(|h| h.status != Status::Completed || h.budget.max_steps.is_none_or(|m| h.steps <= m))
}

/// No write with a superseded fence committed, and no two workers were
/// granted the same (hid, fence): one owner per fence.
pub fn one_owner(s: &Sys) -> bool {
    let leases: Vec<_> = s.workers.iter().filter_map(|w| w.lease.as_ref()).collect();
    let twice =
        leases.iter().enumerate().any(|(i, a)| leases[i + 1..].iter().any(|b| a.hid == b.hid && a.fence == b.fence));
    s.ghost.stale.is_none() && !twice
}

/// The fair continuation from `s` ends every handoff terminal.
pub fn fair_end(m: &DhpModel, s: &Sys) -> bool {
    let mut s = s.clone();
    s.faults = u8::MAX; // no more faults
    for w in &mut s.workers {
        w.alive = true;
        w.paused = false;
    }
    s.sups.iter_mut().for_each(|x| *x = true);
    let b = &m.b;
    for _ in 0..FAIR_ROUNDS {
        if s.st.handoffs.values().all(|h| h.status.is_terminal()) {
            return true;
        }
        let mut acts = Vec::new();
        for i in 0..b.sups {
            acts.push(Action::Lead(i));
            for h in 0..b.handoffs {
                acts.push(Action::Kill(i, h));
                acts.push(Action::Orphan(i, h));
            }
        }
        for w in 0..b.workers {
            acts.extend(worker_turn(m, &s, w));
        }
        for a in acts {
            let may = match a {
                Action::Orphan(i, h) => {
                    let ho = s.st.handoffs.get(&super::hid(h));
                    let own = s.st.ownership.get(&super::hid(h));
                    s.st.leads(&super::sid(i), s.clock)
                        && ho.is_some_and(|x| x.status == Status::Running)
                        && own.is_some_and(|o| o.lease_expires_at < s.clock)
                }
                _ => true,
            };
            if may {
                step(b, &mut s, &a);
            }
        }
        s.clock += 1;
    }
    false
}

/// A worker's next step in the fair continuation.
fn worker_turn(m: &DhpModel, s: &Sys, w: u8) -> Vec<Action> {
    let wk = &s.workers[w as usize];
    let Some(l) = &wk.lease else {
        let free = s.st.handoffs.iter().find(|(h, ho)| {
            matches!(ho.status, Status::Pending | Status::Orphaned)
                && !s.workers.iter().any(|x| x.lease.as_ref().is_some_and(|l| &l.hid == *h))
        });
        return match free {
            Some((h, ho)) => {
                let n = h[1..].parse().unwrap_or(0);
                vec![if ho.status == Status::Pending { Action::Claim(w, n) } else { Action::Recover(w, n) }]
            }
            None => vec![],
        };
    };
    let _ = wid(w);
    let done = s.st.checkpoints.get(&l.hid).map_or(0, Vec::len) >= m.b.chunks;
    if ops::ownership_check(&s.st, l, s.clock).is_err() {
        return vec![Action::Heartbeat(w)]; // refused: drops the lease
    }
    let step = if wk.stepped { None } else { Some(Action::Step(w)) };
    if done && !wk.checked && !wk.stepped {
        vec![Action::Heartbeat(w), Action::Complete(w)]
    } else if m.b.variant == crate::judge::Variant::CheckThenWrite && !wk.checked {
        [Some(Action::Heartbeat(w)), step, Some(Action::Check(w)), Some(Action::Write(w))]
            .into_iter()
            .flatten()
            .collect()
    } else {
        [Some(Action::Heartbeat(w)), step, Some(Action::Write(w))].into_iter().flatten().collect()
    }
}

//! What a leader's scan remembers between passes, so that a pass with
//! nothing to do reads only what changed (docs/scale.md).
//!
//! Budget and stall violations change in two ways only: a row is written
//! (steps, spend, a checkpoint, a claim, a digest) or time passes a
//! deadline (`claimed_at + max_wallclock_s`, `last_checkpoint_at +
//! stall_timeout_s`). So a pass checks the handoffs whose `handoffs`,
//! `ownership` or `progress` row was written since the previous pass (read
//! through `(updated_at, hid)` indexes) and those whose deadline is due,
//! with the same queries as a full pass restricted to those hids.
//!
//! A row is stamped with its writer's clock when its transaction starts and
//! becomes visible when it commits, so changes are re-read from
//! [`SLACK_S`] before the previous pass (already-checked stamps are
//! skipped). A full pass runs on a leader's first scan and every
//! [`FULL_EVERY`], which also bounds what a writer slower than the slack,
//! or a clock step, could hide.

use crate::store::{BudgetUsage, Tx};
use crate::store_time::StoreTime;
use crate::Result;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

/// How far before the previous pass changes are read again.
pub(super) const SLACK_S: f64 = 5.0;
/// How often a full pass runs regardless.
pub(super) const FULL_EVERY: Duration = Duration::from_secs(120);

#[derive(Debug, Default)]
pub(super) struct Tracker {
    /// Start of the last pass (store clock), when it was incremental-ready.
    last: Option<f64>,
    /// Leadership epoch the state belongs to: a new term starts over.
    epoch: u64,
    /// Change stamps already checked: (hid, updated_at bits).
    seen: HashSet<(String, u64)>,
    /// Running handoffs' next time-based check, ordered by due time, so a
    /// pass finds what fell due without looking at the rest.
    deadlines: Deadlines,
    full_at: Option<Instant>,
}

/// hid → due time, and the same ordered by due time (finite times only).
#[derive(Debug, Default)]
struct Deadlines {
    of: HashMap<String, f64>,
    by_due: BTreeSet<(Due, String)>,
}

/// A due time with a total order (`f64::total_cmp`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Due(f64);

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Deadlines {
    fn clear(&mut self) {
        self.of.clear();
        self.by_due.clear();
    }

    fn remove(&mut self, hid: &str) {
        if let Some(d) = self.of.remove(hid) {
            self.by_due.remove(&(Due(d), hid.to_string()));
        }
    }

    /// Set `hid`'s due time; an infinite one (nothing can fire) removes it.
    fn set(&mut self, hid: &str, due: f64) {
        self.remove(hid);
        if due.is_finite() {
            self.of.insert(hid.to_string(), due);
            self.by_due.insert((Due(due), hid.to_string()));
        }
    }

    /// The hids due at or before `t`: the first entries in due order.
    fn due(&self, t: f64) -> impl Iterator<Item = &String> {
        self.by_due.iter().take_while(move |(d, _)| d.0 <= t).map(|(_, h)| h)
    }
}

/// The hids one pass checks: all, or these.
#[derive(Debug)]
pub(super) enum Plan {
    Full,
    Only { hids: Vec<String>, fresh: Vec<(String, f64)> },
}

impl Tracker {
    /// Decide what this pass (at store time `t`) checks. Runs inside the
    /// pass's read transaction; changes nothing until [`Tracker::commit`].
    pub(super) fn plan(&self, tx: &mut dyn Tx, t: f64, epoch: u64) -> Result<Plan> {
        let Some(last) = self.last.filter(|_| self.epoch == epoch) else { return Ok(Plan::Full) };
        if self.full_at.is_none_or(|at| at.elapsed() >= FULL_EVERY) {
            return Ok(Plan::Full);
        }
        let Some(changes) = tx.changed_since(StoreTime::from_secs(last - SLACK_S))? else { return Ok(Plan::Full) };
        let fresh: Vec<(String, f64)> =
            changes.into_iter().filter(|(h, at)| !self.seen.contains(&(h.clone(), at.to_bits()))).collect();
        let mut hids: Vec<String> = fresh.iter().map(|(h, _)| h.clone()).collect();
        hids.extend(self.deadlines.due(t).cloned());
        hids.sort();
        hids.dedup();
        Ok(Plan::Only { hids, fresh })
    }

    /// Record a finished pass: the running handoffs' next deadlines (from
    /// their budgets and `stall_deadline`), the stamps checked.
    pub(super) fn commit(
        &mut self,
        plan: Plan,
        t: f64,
        epoch: u64,
        running: &[BudgetUsage],
        stall_deadline: &HashMap<String, f64>,
        flagged: &[String],
    ) {
        let running_deadline = |u: &BudgetUsage| {
            let wall = match (u.claimed_at, u.max_wallclock_s) {
                (Some(c), Some(m)) => c + m,
                _ => f64::INFINITY,
            };
            wall.min(stall_deadline.get(&u.hid).copied().unwrap_or(f64::INFINITY))
        };
        match plan {
            Plan::Full => {
                self.deadlines.clear();
                for u in running {
                    self.deadlines.set(&u.hid, running_deadline(u));
                }
                self.seen.clear();
                self.full_at = Some(Instant::now());
            }
            Plan::Only { hids, fresh } => {
                // Checked and not running (any more): nothing to watch.
                for h in &hids {
                    self.deadlines.remove(h);
                }
                for u in running {
                    self.deadlines.set(&u.hid, running_deadline(u));
                }
                self.seen.extend(fresh.into_iter().map(|(h, at)| (h, at.to_bits())));
            }
        }
        // Found over budget or stalled: looked at again next pass, until
        // the action taken (or a quarantine) settles it.
        for h in flagged {
            self.deadlines.set(h, t);
        }
        let keep_from = t - 2.0 * SLACK_S;
        self.seen.retain(|(_, at)| f64::from_bits(*at) >= keep_from);
        self.last = Some(t);
        self.epoch = epoch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_taken_in_due_order_and_move_when_set_again() {
        let mut d = Deadlines::default();
        for (h, t) in [("a", 30.0), ("b", 10.0), ("c", 20.0), ("e", f64::INFINITY)] {
            d.set(h, t);
        }
        assert_eq!(d.due(20.0).collect::<Vec<_>>(), ["b", "c"]);
        d.set("b", 40.0);
        assert_eq!(d.due(20.0).collect::<Vec<_>>(), ["c"]);
        d.remove("c");
        assert!(d.due(25.0).next().is_none());
        assert_eq!(d.due(f64::MAX).collect::<Vec<_>>(), ["a", "b"], "an infinite deadline is not kept");
        assert_eq!(d.of.len(), d.by_due.len());
    }
}

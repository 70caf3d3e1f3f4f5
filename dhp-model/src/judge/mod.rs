//! The judge: every audited store change must be the effect of a legal
//! model operation from the state just before it (issue 43 item 3).
//!
//! Changes come in commit order. The ones that touch a handoff's two
//! ownership-bearing rows (`handoffs`, `ownership`) are grouped into
//! operations: with a PostgreSQL `txn`, by transaction; without one
//! (SQLite), a change that leaves the handoff *inconsistent* (its status
//! disagrees with its ownership row, docs/torn-states.md) is held as the
//! first half of a two-row operation (a claim is an ownership INSERT plus a
//! handoffs UPDATE, in either order) and judged with the next change of the
//! same hid. A half never completed is a write cut by a crash:
//! *indeterminate*, counted apart (Knossos's `:info`).
//!
//! Every change is counted exactly once: `consumed = legal + flagged +
//! indeterminate`, where `flagged` counts the changes of the groups that
//! were excused, violated or undecidable, so the report proves the whole
//! audit was read (TLA+ trace validation's `TraceMatched`).
//!
//! Cross-table rules read the other tables as they stand at the change:
//! an orphan needs an expired lease (the store clock is the change's `at`)
//! or a holder the harness saw die, and a live leader term; see
//! the `facts` module's docs (src/judge/facts.rs) for when the check-then-write variant excuses a stale
//! write.

mod facts;
mod owned;
mod rows;
mod tables;
#[cfg(test)]
mod tests;
mod types;
mod update;

use std::collections::BTreeMap;

use crate::state::ORPHANED;
use facts::{Bump, Facts};
use rows::{Pair, Rows};
pub use types::{Change, Excuse, Fact, Params, ProcClock, Report, RowOp, Table, Variant, Violation};

/// How far ahead of a change the facts after it are fed by [`merged`],
/// seconds: the harness records a death after reaping the process, when
/// the kernel has already released its locks (a supervisor may orphan its
/// handoff a moment before the harness's record). Every rule compares a
/// fact's own time, so feeding it early never changes a verdict.
pub const FACT_LEAD_S: f64 = 1.0;

/// One item of a merged stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// An audited change.
    Change(Change),
    /// A harness fact.
    Fact(Fact),
}

/// Merge the audit (in commit order) with the facts (in any order): each
/// fact goes before the first change committed at or after its time minus
/// [`FACT_LEAD_S`].
pub fn merged(changes: Vec<Change>, mut facts: Vec<Fact>) -> Vec<Input> {
    facts.sort_by(|a, b| a.at().total_cmp(&b.at()));
    let mut facts = facts.into_iter().peekable();
    let mut out = Vec::with_capacity(changes.len() + facts.len());
    for c in changes {
        while let Some(f) = facts.next_if(|f| f.at() - FACT_LEAD_S <= c.at) {
            out.push(Input::Fact(f));
        }
        out.push(Input::Change(c));
    }
    out.extend(facts.map(Input::Fact));
    out
}

/// The outcome of judging one operation (a group of changes).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Legal,
    Excused { rule: String, why: String },
    Illegal { rule: String, closest: Vec<String>, message: String },
    Undecidable(String),
}

/// A first half waiting for its partner.
#[derive(Debug, Clone)]
struct Held {
    before: Pair,
    changes: Vec<Change>,
}

/// Replays a round's audit (changes + facts, merged in order) through the model.
#[derive(Debug, Clone)]
pub struct Judge {
    variant: Variant,
    params: Params,
    rows: Rows,
    facts: Facts,
    held: BTreeMap<String, Held>,
    /// The open PostgreSQL transaction's id and the hids it touched.
    txn: Option<(i64, Vec<String>)>,
    /// A leadership row removed by REPLACE, judged with the INSERT that follows.
    replaced: Option<Change>,
    /// Per hid, every holder fenced out (orphan, repair), in order.
    bumps: BTreeMap<String, Vec<Bump>>,
    /// Stale writes seen, per (hid, holder, fence): their audit seqs.
    stale: BTreeMap<(String, String, i64), Vec<i64>>,
    /// Per hid, the store time of its last checkpoint (chunk attribution).
    last_ckpt_at: BTreeMap<String, f64>,
    /// Handoff writes whose writer the audit does not name.
    unnamed_writes: usize,
    /// Checkpoints under a valid holder that no chunk fact attributes.
    unattributed: usize,
    /// Hids that had an ownership row in the audit (so were run here, not imported).
    owned_ever: std::collections::BTreeSet<String>,
    /// The operation being judged: the earliest moment its writer's
    /// ownership check can have run ([`Change::check_at`] of its first
    /// change); a holder's lease is judged live or not at this moment.
    check_at: Option<f64>,
    flagged: usize,
    report: Report,
}

impl Judge {
    /// A judge of `variant` with the store's `params`.
    pub fn new(variant: Variant, params: Params) -> Self {
        Judge {
            variant,
            params,
            rows: Rows::default(),
            facts: Facts::default(),
            held: BTreeMap::new(),
            txn: None,
            replaced: None,
            bumps: BTreeMap::new(),
            stale: BTreeMap::new(),
            last_ckpt_at: BTreeMap::new(),
            unnamed_writes: 0,
            check_at: None,
            unattributed: 0,
            owned_ever: Default::default(),
            flagged: 0,
            report: Report::default(),
        }
    }

    /// A process fact, in time order with the changes.
    pub fn fact(&mut self, fact: Fact) {
        self.facts.all.push(fact);
    }

    /// The next committed change, in commit order.
    pub fn change(&mut self, change: &Change) {
        self.report.consumed += 1;
        self.seed(change);
        if let Some((t, _)) = &self.txn {
            if change.txn != Some(*t) {
                self.end_txn();
            }
        }
        if let Some(t) = change.txn {
            let (_, hids) = self.txn.get_or_insert((t, Vec::new()));
            hids.extend(change.hid.clone());
        }
        match change.table {
            Table::Leadership => {
                let mut group = vec![change.clone()];
                let v = self.leadership(change, &mut group);
                self.rows.apply(change);
                if let Some(v) = v {
                    self.record(v, &group, None);
                }
            }
            Table::Checkpoints => {
                let v = self.checkpoint(change);
                self.rows.apply(change);
                self.record(v, std::slice::from_ref(change), None);
            }
            Table::Handoffs | Table::Ownership => {
                if change.table == Table::Ownership {
                    self.owned_ever.extend(change.hid.clone());
                }
                self.owned(change)
            }
        }
    }

    /// The store already held checkpoints `0..=last_seq` of `hid` when the
    /// audit began (a standby's store is audited after `dhp ingest` wrote
    /// the shipped log into it, §8.3): its next checkpoint is `last_seq + 1`.
    /// The caller derives this from rows in the store that no audited
    /// INSERT made, and says so in its verdict; call before any change.
    pub fn seed_checkpoints(&mut self, hid: &str, last_seq: i64) {
        self.rows.last_seq.insert(hid.to_string(), last_seq);
    }

    /// Judge a whole round: [`merged`] changes and facts, then [`Judge::finish`].
    pub fn run(mut self, changes: Vec<Change>, facts: Vec<Fact>) -> Report {
        for i in merged(changes, facts) {
            match i {
                Input::Change(c) => self.change(&c),
                Input::Fact(f) => self.fact(f),
            }
        }
        self.finish()
    }

    /// The verdict. Halves still held are indeterminate; a REPLACE with no
    /// INSERT after it too.
    pub fn finish(mut self) -> Report {
        self.end_txn();
        let held: Vec<Held> = std::mem::take(&mut self.held).into_values().collect();
        for h in held {
            self.report.indeterminate += h.changes.len();
        }
        if self.replaced.take().is_some() {
            self.report.indeterminate += 1;
        }
        if self.unnamed_writes > 0 {
            self.report.undecidable.push(format!(
                "{} write(s) to a running handoff's counters (steps, spend) were attributed to the ownership row's holder: the audit does not name the writer or the fence it presented",
                self.unnamed_writes
            ));
        }
        if self.unattributed > 0 {
            self.report.undecidable.push(format!(
                "{} checkpoint(s) committed under a valid holder were taken to be that holder's: no chunk served in the harness's record names a single live writer for them, so a stale writer's checkpoint there could not be told apart",
                self.unattributed
            ));
        }
        self.report.flagged = self.flagged;
        self.report
    }

    /// The audit starts after the store was made (dhp-chaos installs it
    /// after the dispatch): a row first seen as the `old` of an UPDATE or
    /// DELETE is how it stood before the audit, and is taken as such.
    fn seed(&mut self, c: &Change) {
        let (Some(old), Some(hid)) = (&c.old, &c.hid) else {
            if let (Table::Leadership, Some(old), None) = (c.table, &c.old, &self.rows.leadership) {
                self.rows.leadership = Some(old.clone());
            }
            return;
        };
        let known = match c.table {
            Table::Handoffs => &mut self.rows.handoffs,
            Table::Ownership => &mut self.rows.ownership,
            _ => return,
        };
        if known.contains_key(hid) {
            return;
        }
        known.insert(hid.clone(), old.clone());
        if let Some(h) = self.held.get_mut(hid) {
            match c.table {
                Table::Handoffs if h.before.handoff.is_none() => h.before.handoff = Some(old.clone()),
                Table::Ownership if h.before.own.is_none() => h.before.own = Some(old.clone()),
                _ => {}
            }
        }
    }

    /// The end of a PostgreSQL transaction: its halves are whole operations
    /// now, or torn.
    fn end_txn(&mut self) {
        let Some((_, hids)) = self.txn.take() else { return };
        for hid in hids {
            if let Some(h) = self.held.remove(&hid) {
                self.report.indeterminate += h.changes.len();
            }
        }
    }

    /// A handoffs or ownership change: held as a first half, or judged
    /// (with the half it completes).
    fn owned(&mut self, c: &Change) {
        let hid = c.hid.clone().unwrap_or_default();
        let Some(mut held) = self.held.remove(&hid) else {
            let before = self.rows.pair(&hid);
            self.rows.apply(c);
            self.alone(&hid, before, c);
            return;
        };
        let mid = self.rows.pair(&hid);
        self.rows.apply(c);
        let after = self.rows.pair(&hid);
        held.changes.push(c.clone());
        let v = self.judge_owned(&hid, &held.before, &after, &held.changes);
        let same_table = held.changes.iter().all(|x| x.table == c.table);
        if matches!(v, Verdict::Illegal { .. }) && self.torn_then(&hid, &mid, c, same_table) {
            // Not one operation: the first half was torn (a crash between
            // the reference's two statements); the second stands alone.
            self.report.indeterminate += held.changes.len() - 1;
        } else {
            self.record(v, &held.changes, Some((held.before, after)));
        }
    }

    /// Whether `c`, from the rows `mid`, stands as its own operation (held
    /// as a new first half, or — after a half on the same table, which no
    /// operation writes twice — legal alone); if so it is taken as that.
    fn torn_then(&mut self, hid: &str, mid: &Pair, c: &Change, same_table: bool) -> bool {
        let after = self.rows.pair(hid);
        if !after.consistent() {
            self.held.insert(hid.to_string(), Held { before: mid.clone(), changes: vec![c.clone()] });
            return true;
        }
        if !same_table {
            return false;
        }
        let saved = (self.bumps.clone(), self.stale.clone(), self.unnamed_writes);
        let v = self.judge_owned(hid, mid, &after, std::slice::from_ref(c));
        if matches!(v, Verdict::Illegal { .. }) {
            (self.bumps, self.stale, self.unnamed_writes) = saved;
            // A recover's first statement after an orphan whose envelope
            // write has not come yet (the issue-11 interleaving of
            // docs/torn-states.md): it waits for its own envelope write.
            let recover_half =
                c.table == Table::Ownership && mid.tomb() && after.holder().is_some_and(|h| h != ORPHANED);
            if recover_half {
                self.held.insert(hid.to_string(), Held { before: mid.clone(), changes: vec![c.clone()] });
            }
            return recover_half;
        }
        self.record(v, std::slice::from_ref(c), Some((mid.clone(), after)));
        true
    }

    /// One change (already applied to the rows) with no half before it:
    /// held if it leaves the handoff inconsistent, else judged.
    fn alone(&mut self, hid: &str, before: Pair, c: &Change) {
        let after = self.rows.pair(hid);
        if !after.consistent() {
            self.held.insert(hid.to_string(), Held { before, changes: vec![c.clone()] });
            return;
        }
        let v = self.judge_owned(hid, &before, &after, std::slice::from_ref(c));
        self.record(v, std::slice::from_ref(c), Some((before, after)));
    }

    /// Count a verdict for the changes of one operation.
    fn record(&mut self, v: Verdict, changes: &[Change], rows: Option<(Pair, Pair)>) {
        let Some(last) = changes.last() else { return };
        let n = changes.len();
        match v {
            Verdict::Legal => self.report.legal += n,
            Verdict::Excused { rule, why } => {
                self.flagged += n;
                self.report.excused.push(Excuse { seq: last.seq, rule, why });
            }
            Verdict::Undecidable(why) => {
                self.flagged += n;
                self.report.undecidable.push(format!("audit seq {}: {why}", last.seq));
            }
            Verdict::Illegal { rule, closest, message } => {
                self.flagged += n;
                let (before, after) = match rows {
                    Some((b, a)) => (Some(pair_json(&b)), Some(pair_json(&a))),
                    None => (changes[0].old.clone(), last.new.clone()),
                };
                let seqs: Vec<String> = changes.iter().map(|c| c.seq.to_string()).collect();
                let message = format!("audit seq {}: {message}", seqs.join("+"));
                self.report.violations.push(Violation { rule, seq: last.seq, before, after, closest, message });
            }
        }
    }

    /// A stale write (a worker's write without a valid fence or lease):
    /// a violation of the strict model; in the check-then-write variant,
    /// excused when the writer could have checked before the bump.
    fn stale(&mut self, hid: &str, rule: &str, seq: i64, at: f64, bump: Bump, msg: String) -> Verdict {
        let key = (hid.to_string(), bump.holder.clone(), bump.fence);
        let earlier: Vec<i64> = self.stale.get(&key).cloned().unwrap_or_default();
        self.stale.entry(key).or_default().push(seq);
        if self.variant != Variant::CheckThenWrite {
            return Verdict::Illegal {
                rule: rule.to_string(),
                closest: vec![format!("{msg}; the strict model's ownership check is atomic with the write (§5.2)")],
                message: msg,
            };
        }
        match self.facts.could_check_before(hid, &bump, at, &earlier) {
            Ok(why) => Verdict::Excused { rule: rule.to_string(), why },
            Err(why) => Verdict::Illegal {
                rule: rule.to_string(),
                closest: vec![format!("check-then-write (§13.2) cannot explain it: {why}")],
                message: msg,
            },
        }
    }
}

/// Both rows of a pair, for a violation's before / after.
fn pair_json(p: &Pair) -> serde_json::Value {
    serde_json::json!({ "handoff": p.handoff, "ownership": p.own })
}

//! The judge on synthetic audit streams: the shapes dhp-core and the
//! reference write pass; each illegal step kind is reported with its rule.

use serde_json::{json, Value};

use super::*;
use crate::state::ORPHANED;

/// Builds audit changes the way the triggers record them.
struct Sim {
    rows: Rows,
    seq: i64,
    out: Vec<Change>,
    /// PostgreSQL: the transaction id and start given to the next changes.
    pg: Option<(i64, f64)>,
}

fn own(hid: &str, holder: &str, fence: i64, lease: f64) -> Value {
    json!({"hid": hid, "holder": holder, "fence": fence, "lease_expires_at": lease,
           "heartbeat_interval_s": 2.0, "max_missed": 3, "updated_at": 0.0})
}

fn ho(hid: &str, status: &str, exec: Value) -> Value {
    let mut e = json!({"status": status, "attempt": 0, "steps": 0, "spend_usd": 0.0});
    if let (Some(m), Some(x)) = (e.as_object_mut(), exec.as_object()) {
        for (k, v) in x {
            m.insert(k.clone(), v.clone());
        }
    }
    json!({"hid": hid, "status": status, "execution": e, "budget": {"max_attempts": 3, "max_steps": 100}, "updated_at": 0.0})
}

fn lead(holder: &str, exp: f64) -> Value {
    json!({"id": 1, "holder": holder, "expires_at": exp, "updated_at": 0.0})
}

impl Sim {
    fn new() -> Self {
        Sim { rows: Rows::default(), seq: 0, out: Vec::new(), pg: None }
    }
    fn put(&mut self, table: Table, op: RowOp, hid: Option<&str>, new: Option<Value>, at: f64) {
        self.seq += 1;
        let h = hid.unwrap_or_default();
        let old = match table {
            Table::Handoffs => self.rows.handoffs.get(h).cloned(),
            Table::Ownership => self.rows.ownership.get(h).cloned(),
            Table::Leadership => self.rows.leadership.clone(),
            Table::Checkpoints => None,
        };
        let old = if op == RowOp::Insert { None } else { old };
        let (txn, began_at) = (self.pg.map(|p| p.0), self.pg.map(|p| p.1));
        let c = Change { seq: self.seq, table, op, hid: hid.map(str::to_string), old, new, at, txn, began_at };
        self.rows.apply(&c);
        self.out.push(c);
    }
    fn h(&mut self, hid: &str, status: &str, exec: Value, at: f64) {
        let op = if self.rows.handoffs.contains_key(hid) { RowOp::Update } else { RowOp::Insert };
        self.put(Table::Handoffs, op, Some(hid), Some(ho(hid, status, exec)), at);
    }
    fn o(&mut self, hid: &str, holder: &str, fence: i64, lease: f64, at: f64) {
        let op = if self.rows.ownership.contains_key(hid) { RowOp::Update } else { RowOp::Insert };
        self.put(Table::Ownership, op, Some(hid), Some(own(hid, holder, fence, lease)), at);
    }
    fn o_del(&mut self, hid: &str, at: f64) {
        self.put(Table::Ownership, RowOp::Delete, Some(hid), None, at);
    }
    fn l(&mut self, holder: &str, exp: f64, at: f64) {
        let op = if self.rows.leadership.is_some() { RowOp::Update } else { RowOp::Insert };
        self.put(Table::Leadership, op, None, Some(lead(holder, exp)), at);
    }
    fn ck(&mut self, hid: &str, seq: i64, at: f64) {
        let new = json!({"hid": hid, "seq": seq, "state_json": "{}", "state_hash": format!("h{seq}"), "at": "t"});
        self.put(Table::Checkpoints, RowOp::Insert, Some(hid), Some(new), at);
    }
    fn judge(&self, v: Variant, facts: Vec<Fact>) -> Report {
        let r = Judge::new(v, Params::default()).run(self.out.clone(), facts);
        assert!(r.all_judged(), "every change judged: {r:?}");
        assert_eq!(r.consumed, self.out.len());
        r
    }
}

/// dispatch, claim, heartbeat, checkpoint, steps, lease expiry, orphan,
/// recover, checkpoint, complete, ack — `claim_first`/`complete_first`
/// choose the order of the two rows (dhp-core vs the reference).
fn lifecycle(s: &mut Sim, claim_first: bool, complete_first: bool) {
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    if claim_first {
        s.o("h", "w1", 0, 106.0, 100.1);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1}), 100.1);
    } else {
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1}), 100.1);
        s.o("h", "w1", 0, 106.0, 100.1);
    }
    s.o("h", "w1", 0, 107.0, 101.0);
    s.ck("h", 0, 101.5);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1, "steps": 1}), 101.6);
    s.l("s1", 108.0, 103.0);
    s.l("s1", 112.0, 107.0);
    s.o("h", ORPHANED, 1, 0.0, 108.0);
    s.h("h", "orphaned", json!({"runner_id": "w1", "fence": 0, "orphan_reason": "lease-expired", "steps": 1}), 108.0);
    s.o("h", "w2", 2, 114.5, 108.5);
    let run2 = json!({"runner_id": "w2", "fence": 2, "attempt": 1, "claimed_at": 108.5, "steps": 1});
    s.h("h", "running", run2, 108.5);
    s.ck("h", 1, 109.0);
    let done =
        json!({"runner_id": "w2", "fence": 2, "attempt": 1, "steps": 1, "completed_at": "2026-01-01T00:00:00+00:00"});
    if complete_first {
        s.o_del("h", 110.0);
        s.h("h", "completed", done.clone(), 110.0);
    } else {
        s.h("h", "completed", done.clone(), 110.0);
        s.o_del("h", 110.0);
    }
    s.h("h", "completed", done, 111.0); // ack: only updated_at and the outbox change
}

fn rules(r: &Report) -> Vec<&str> {
    r.violations.iter().map(|v| v.rule.as_str()).collect()
}

#[test]
fn legal_lifecycles_of_both_shapes_pass() {
    for (a, b) in [(true, true), (false, false), (true, false), (false, true)] {
        let mut s = Sim::new();
        lifecycle(&mut s, a, b);
        let r = s.judge(Variant::Strict, vec![]);
        assert!(r.violations.is_empty(), "claim_first {a} complete_first {b}: {:#?}", r.violations);
        assert_eq!(r.indeterminate, 0);
        assert_eq!(r.legal + r.flagged, s.out.len());
    }
}

/// The stream of `lifecycle` with one change replaced by `f`.
fn mutated(f: impl Fn(&mut Change)) -> Sim {
    let mut s = Sim::new();
    lifecycle(&mut s, true, true);
    s.out.iter_mut().for_each(f);
    s
}

#[test]
fn orphan_without_a_leader_term() {
    // The leader's last renewal is not written: its term ends at 108.0 − ε.
    let s = mutated(|c| {
        if c.seq == 9 {
            c.new = Some(lead("s1", 107.9));
        }
    });
    let r = s.judge(Variant::Strict, vec![]);
    assert!(rules(&r).iter().any(|x| x.starts_with("§7.1 an orphan needs a live leader term")), "{r:#?}");
    // The reference checks its term, then writes (§13.8): a live last
    // leader explains it; one the harness saw die before cannot have.
    let r = s.judge(Variant::CheckThenWrite, vec![]);
    assert!(r.violations.is_empty(), "{r:#?}");
    assert!(r.excused.iter().any(|e| e.rule.starts_with("§7.1 an orphan needs a live leader term")), "{r:#?}");
    let r = s.judge(Variant::CheckThenWrite, vec![Fact::Died { holder: "s1".into(), at: 107.95 }]);
    assert!(rules(&r).iter().any(|x| x.starts_with("§7.1 an orphan needs a live leader term")), "{r:#?}");
}

#[test]
fn orphan_of_a_live_lease_and_live_holder() {
    // The orphan commits at 106.0, inside w1's lease (until 107.0).
    let s = mutated(|c| {
        if c.seq == 10 || c.seq == 11 {
            c.at = 106.0;
        }
    });
    let r = s.judge(Variant::Strict, vec![]);
    assert!(rules(&r).iter().any(|x| x.starts_with("§7.2 an orphan needs an expired lease")), "{r:#?}");
    // ... unless the harness saw the holder die.
    let r = s.judge(Variant::Strict, vec![Fact::Died { holder: "w1".into(), at: 105.5 }]);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    // ... or cut its link then (its token may be gone; it lives on) ...
    let cut = |at: f64, until: f64| vec![Fact::TokenLost { holder: "w1".into(), at, until }];
    let r = s.judge(Variant::Strict, cut(105.5, 106.5));
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    // ... but not a link cut and retaken long before.
    let r = s.judge(Variant::Strict, cut(100.0, 103.0));
    assert!(rules(&r).iter().any(|x| x.starts_with("§7.2 an orphan needs an expired lease")), "{r:#?}");
}

#[test]
fn recover_with_fence_plus_two() {
    let s = mutated(|c| {
        if c.seq == 12 {
            c.new = Some(own("h", "w2", 3, 114.5));
        }
    });
    let r = s.judge(Variant::Strict, vec![]);
    assert!(rules(&r).iter().any(|x| x.starts_with("§5.4 recover")), "{r:#?}");
}

#[test]
fn second_completion() {
    let mut s = Sim::new();
    lifecycle(&mut s, true, true);
    let again =
        json!({"runner_id": "w2", "fence": 2, "attempt": 1, "steps": 1, "completed_at": "2026-01-01T00:00:09+00:00"});
    s.h("h", "completed", again, 112.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(rules(&r), vec!["§6.3 a completion is accepted once [idempotent-complete]"], "{r:#?}");
}

/// A handoff dead-lettered at max_attempts (attempt 3 of 3).
fn dlq(s: &mut Sim) {
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({"attempt": 3}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "attempt": 3}), 100.1);
    s.o("h", ORPHANED, 1, 0.0, 102.0);
    s.h(
        "h",
        "failed",
        json!({"runner_id": "w1", "attempt": 3, "error": "lease expired; max_attempts=3 exhausted → DLQ"}),
        102.0,
    );
}

#[test]
fn dlq_handoff_running_again() {
    let mut s = Sim::new();
    dlq(&mut s);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    s.o("h", "w2", 2, 109.0, 103.0);
    s.h("h", "running", json!({"runner_id": "w2", "fence": 2, "attempt": 4}), 103.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(rules(&r).contains(&"§4 a failed (DLQ) handoff never changes again [dead-letter-queue]"), "{r:#?}");
}

#[test]
fn orphan_instead_of_dlq_at_max_attempts() {
    let mut s = Sim::new();
    dlq(&mut s);
    s.out.last_mut().expect("a change").new =
        Some(ho("h", "orphaned", json!({"attempt": 3, "orphan_reason": "lease-expired"})));
    let r = s.judge(Variant::Strict, vec![]);
    assert!(rules(&r).iter().any(|x| x.contains("goes to the DLQ")), "{r:#?}");
}

#[test]
fn leader_take_inside_a_live_term_via_replace() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.put(Table::Leadership, RowOp::Replace, None, None, 100.05);
    s.put(Table::Leadership, RowOp::Insert, None, Some(lead("s2", 105.05)), 100.05);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(rules(&r), vec!["§7.1 a leader take needs an absent or expired term [leader-election]"], "{r:#?}");
    assert_eq!(r.flagged, 2, "the REPLACE and its INSERT are one take");
    // The same REPLACE after the term expired is a legal take.
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.put(Table::Leadership, RowOp::Replace, None, None, 105.5);
    s.put(Table::Leadership, RowOp::Insert, None, Some(lead("s2", 110.5)), 105.5);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(r.violations.is_empty() && r.legal == 3, "{r:#?}");
}

/// s1 dies (harness clock 101.0) inside its term; s2, whose faked clock
/// runs 3 s behind, takes the leadership at 99.0 on its clock — 102.0 on
/// the harness's. Judged on s2's own clock the take would come before the
/// death; with s2's clock known it comes after it.
#[test]
fn a_take_on_a_clock_behind_is_judged_on_the_harness_clock() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.put(Table::Leadership, RowOp::Replace, None, None, 99.0);
    s.put(Table::Leadership, RowOp::Insert, None, Some(lead("s2", 104.0)), 99.0);
    let died = || vec![Fact::Died { holder: "s1".into(), at: 101.0 }];
    let blind = Judge::new(Variant::Strict, Params::default()).run(s.out.clone(), died());
    assert_eq!(rules(&blind), vec!["§7.1 a leader take needs an absent or expired term [leader-election]"]);
    let mut p = Params::default();
    p.clocks.insert("s2".into(), ProcClock { started: 90.0, offset_s: -3.0, rate: 1.0 });
    let r = Judge::new(Variant::Strict, p).run(s.out.clone(), died());
    assert!(r.violations.is_empty(), "{r:#?}");
}

/// w1 is orphaned (fence 0 → tombstone 1), w2 recovers (fence 2), then w1's
/// stale checkpoint lands (the chunk log names w1 with fence 0).
fn stale_checkpoint(s: &mut Sim) {
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.ck("h", 0, 100.5);
    s.o("h", ORPHANED, 1, 0.0, 102.0);
    s.h("h", "orphaned", json!({"runner_id": "w1", "orphan_reason": "lease-expired"}), 102.0);
    s.o("h", "w2", 2, 108.0, 102.5);
    s.h("h", "running", json!({"runner_id": "w2", "fence": 2, "attempt": 1}), 102.5);
    s.ck("h", 1, 103.0);
}

fn served(holder: &str, fence: i64, at: f64) -> Fact {
    Fact::ChunkServed { holder: holder.into(), hid: "h".into(), fence, at }
}

#[test]
fn checkpoint_with_a_superseded_fence() {
    let mut s = Sim::new();
    stale_checkpoint(&mut s);
    // Served before the bump at 102.0: the check could have passed then.
    let facts = vec![served("w1", 0, 101.9)];
    let r = s.judge(Variant::Strict, facts.clone());
    assert_eq!(rules(&r), vec!["§5.2 a checkpoint with a superseded fence [fencing]"], "{r:#?}");
    let r = s.judge(Variant::CheckThenWrite, facts);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "{r:#?}");
    // Without the chunk log the writer is not known: w2 holds the row.
    let r = s.judge(Variant::Strict, vec![]);
    assert!(r.violations.is_empty(), "{r:#?}");
}

#[test]
fn check_then_write_excuses_only_what_it_can_explain() {
    let mut s = Sim::new();
    stale_checkpoint(&mut s);
    // 1. A chunk served to w1 with fence 0 after the bump.
    let r = s.judge(Variant::CheckThenWrite, vec![served("w1", 0, 102.8)]);
    assert!(r.violations.len() == 1 && r.violations[0].closest[0].contains("after the bump"), "{r:#?}");
    // 2. Stopped right after its chunk before the bump, continued after it.
    let facts = vec![
        served("w1", 0, 101.5),
        Fact::StoppedAtChunk { holder: "w1".into(), hid: "h".into(), fence: 0, at: 101.5 },
        Fact::Continued { holder: "w1".into(), at: 102.7 },
    ];
    let r = s.judge(Variant::CheckThenWrite, facts.clone());
    assert!(r.violations.len() == 1 && r.violations[0].closest[0].contains("stopped"), "{r:#?}");
    // ... continued before the bump: it could have checked.
    let mut early = facts;
    early[2] = Fact::Continued { holder: "w1".into(), at: 101.8 };
    let r = s.judge(Variant::CheckThenWrite, early);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "{r:#?}");
}

#[test]
fn a_stale_holder_writing_its_own_view_back_is_a_stale_write() {
    // w1 (fence 0, attempt 0), fenced out by the orphan at 102.0, writes its
    // whole envelope back over w2's (fence 2, attempt 1): the reference's
    // separate check and write under load (a fresh-clone CI round, seed 6161)
    let written_back = |runner: &str| {
        let mut s = Sim::new();
        s.l("s1", 105.0, 100.0);
        s.h("h", "pending", json!({}), 100.0);
        s.o("h", "w1", 0, 101.0, 100.1);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
        s.o("h", ORPHANED, 1, 0.0, 102.0);
        s.h("h", "orphaned", json!({"runner_id": "w1", "orphan_reason": "lease-expired"}), 102.0);
        s.o("h", "w2", 2, 108.0, 102.5);
        s.h("h", "running", json!({"runner_id": "w2", "fence": 2, "attempt": 1}), 102.5);
        s.h("h", "running", json!({"runner_id": runner, "fence": 0}), 103.5);
        s
    };
    let s = written_back("w1");
    let fencing = "§5.2 a worker writes only with the current fence and a live lease [fencing]";
    let r = s.judge(Variant::Strict, vec![served("w1", 0, 101.9)]);
    assert_eq!(rules(&r), vec![fencing], "{r:#?}");
    assert!(r.violations[0].message.contains("w1's view"), "{r:#?}");
    let r = s.judge(Variant::CheckThenWrite, vec![served("w1", 0, 101.9)]);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "{r:#?}");
    // served after the bump: its check came after it, nothing excuses the write
    let r = s.judge(Variant::CheckThenWrite, vec![served("w1", 0, 102.8)]);
    assert_eq!(rules(&r), vec![fencing], "{r:#?}");
    // a view no holder ever had is not a stale write: attempt and fence moved in place
    let r = written_back("w9").judge(Variant::CheckThenWrite, vec![]);
    assert_eq!(rules(&r), vec!["§5.3 only recover and resume add to attempt; only claim and recover set the fence"]);
}

#[test]
fn a_recover_over_a_stale_completion_is_check_then_write() {
    // w1 (fence 0) is orphaned; its stale completion lands over the
    // tombstone; w2's recover, whose status check saw orphaned, then writes
    // running over it (the reference under load: seed 31 of pinned.rs)
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", ORPHANED, 1, 0.0, 102.0);
    s.h("h", "orphaned", json!({"runner_id": "w1", "orphan_reason": "lease-expired"}), 102.0);
    let done = json!({"runner_id": "w1", "fence": 0, "completed_at": "2026-01-01T00:00:00+00:00"});
    s.h("h", "completed", done, 102.2);
    s.o("h", "w2", 2, 108.0, 102.5);
    s.h("h", "running", json!({"runner_id": "w2", "fence": 2, "attempt": 1}), 102.5);
    let facts = vec![served("w1", 0, 101.9)];
    let r = s.judge(Variant::CheckThenWrite, facts.clone());
    assert!(r.violations.is_empty(), "{r:#?}");
    assert!(r.excused.iter().any(|e| e.why.contains("stale write")), "{r:#?}");
    let r = s.judge(Variant::Strict, facts);
    assert!(rules(&r).contains(&"§4 completed is terminal [idempotent-complete]"), "{r:#?}");
}

#[test]
fn a_second_stale_write_is_not_excused() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", ORPHANED, 1, 0.0, 102.0);
    s.h("h", "orphaned", json!({"runner_id": "w1", "orphan_reason": "lease-expired"}), 102.0);
    s.ck("h", 0, 102.1);
    let r = s.judge(Variant::CheckThenWrite, vec![]);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "one stale write is the weakness: {r:#?}");
    s.ck("h", 1, 102.2);
    let r = s.judge(Variant::CheckThenWrite, vec![]);
    assert_eq!(r.excused.len(), 1, "{r:#?}");
    assert!(r.violations.len() == 1 && r.violations[0].closest[0].contains("second stale write"), "{r:#?}");
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(r.violations.len(), 2, "{r:#?}");
}

#[test]
fn a_torn_claim_is_indeterminate_and_its_repair_legal() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1); // the reference killed before its envelope write
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!((r.indeterminate, r.violations.len()), (1, 0), "{r:#?}");
    s.o("h", ORPHANED, 1, 0.0, 102.0); // R1
    s.h("h", "orphaned", json!({"orphan_reason": "lease-expired"}), 102.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!((r.indeterminate, r.violations.len(), r.legal), (1, 0, 4), "{r:#?}");
}

#[test]
fn budget_kill_needs_an_overrun() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 106.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1, "steps": 100}), 100.1);
    let kill =
        json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1, "steps": 100, "error": "budget exhausted: steps"});
    s.h("h", "failed", kill, 101.0);
    s.o_del("h", 101.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(
        rules(&r).iter().any(|x| x.starts_with("§7.3 only a handoff over budget")),
        "steps = max is within: {r:#?}"
    );
}

#[test]
fn unknown_names_are_typed_errors() {
    assert!("ownership".parse::<Table>().is_ok());
    assert!(matches!("owner".parse::<Table>(), Err(crate::Error::UnknownTable(_))));
    assert!(matches!("upsert".parse::<RowOp>(), Err(crate::Error::UnknownRowOp(_))));
}

#[test]
fn postgres_transactions_group_an_operation_and_a_lone_half_is_indeterminate() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", "w1", 0, 106.0, 100.1);
    for (i, c) in s.out.iter_mut().enumerate() {
        c.txn = Some([1, 2, 3, 3][i]);
    }
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!((r.legal, r.indeterminate, r.violations.len()), (4, 0, 0), "{r:#?}");
    // The same claim's halves in two transactions: the first is torn.
    s.out[3].txn = Some(4);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(r.indeterminate, 1, "{r:#?}");
}

#[test]
fn ownership_moved_without_an_orphan() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 106.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", "w2", 1, 106.5, 100.5);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(
        rules(&r),
        vec!["§5.4 ownership passes to another worker only through the orphan tombstone [fencing]"],
        "{r:#?}"
    );
}

#[test]
fn a_heartbeat_after_the_lease_ran_out() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", "w1", 0, 108.0, 102.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(rules(&r), vec!["§5.2 LeaseLost: a write needs a live lease [lease-expiry-lease-lost]"], "{r:#?}");
    // Under check-then-write the check may have passed before 101.0 ...
    let r = s.judge(Variant::CheckThenWrite, vec![]);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "{r:#?}");
    // ... unless the harness held w1 stopped from before the expiry to after it.
    let facts = vec![
        Fact::StoppedAtChunk { holder: "w1".into(), hid: "h".into(), fence: 0, at: 100.5 },
        Fact::Continued { holder: "w1".into(), at: 101.9 },
    ];
    let r = s.judge(Variant::CheckThenWrite, facts);
    assert_eq!(r.violations.len(), 1, "{r:#?}");
}

#[test]
fn a_replace_without_its_insert_is_indeterminate() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.put(Table::Leadership, RowOp::Replace, None, None, 100.05);
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!((r.legal, r.indeterminate), (1, 1), "{r:#?}");
}

#[test]
fn absurd_numbers_in_rows_are_judged_not_panicked_on() {
    let mut s = Sim::new();
    s.l("s1", f64::MAX, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    let mut row = own("h", "w1", 0, 1e300);
    row["heartbeat_interval_s"] = json!(1e300);
    s.put(Table::Ownership, RowOp::Insert, Some("h"), Some(row.clone()), 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": -1e300}), 100.1);
    s.put(Table::Ownership, RowOp::Update, Some("h"), Some(row), 101.0);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(!r.violations.is_empty(), "a term and a lease of 1e300 s are not legal: {r:#?}");
}

#[test]
fn a_recover_between_a_reference_orphans_two_statements() {
    // Issue 11: the reference's orphan writes the tombstone, then (later)
    // the envelope; a recover by another implementation lands in between.
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 101.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", ORPHANED, 1, 0.0, 102.0);
    s.o("h", "w2", 2, 108.0, 102.1);
    s.h("h", "running", json!({"runner_id": "w2", "fence": 2, "attempt": 1}), 102.1);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
    assert_eq!((r.indeterminate, r.legal), (1, 6), "the orphan's half is torn, the recover legal: {r:#?}");
}

#[test]
fn a_checkpoint_after_a_release_is_not_an_import() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.ck("h", 0, 100.05); // imported before anyone ran it here: legal
    s.o("h", "w1", 0, 106.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.h("h", "pending", json!({"fence": 0}), 100.5);
    s.o_del("h", 100.5);
    s.ck("h", 1, 100.7); // w1, after its release
    let r = s.judge(Variant::Strict, vec![]);
    assert_eq!(
        rules(&r),
        vec!["§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]"],
        "{r:#?}"
    );
}

#[test]
fn a_lease_that_ran_out_a_tenth_of_a_millisecond_before_its_orphan() {
    // From a reference round: lease until …04.1739, orphan committed at …04.174.
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 102.1739, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0}), 100.1);
    s.o("h", ORPHANED, 1, 0.0, 102.174);
    s.h("h", "orphaned", json!({"runner_id": "w1", "orphan_reason": "lease-expired"}), 102.174);
    let r = s.judge(Variant::Strict, vec![]);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
}

#[test]
fn a_chunk_served_to_a_dead_worker_names_no_writer() {
    // From a mixed round: the service answered w1 once more after the kill.
    let mut s = Sim::new();
    stale_checkpoint(&mut s); // its last change: checkpoint seq 1 at 103.0 under w2
    let facts = vec![served("w1", 0, 101.5), Fact::Died { holder: "w1".into(), at: 101.6 }, served("w1", 0, 101.7)];
    let r = s.judge(Variant::Strict, facts);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
}

#[test]
fn a_chunk_stamped_after_its_checkpoints_millisecond_counts() {
    // SQLite's `at` is in whole milliseconds: w2's chunk, served 0.1 ms
    // after the `at` of the checkpoint it became, is a candidate too.
    let mut s = Sim::new();
    stale_checkpoint(&mut s);
    let r = s.judge(Variant::Strict, vec![served("w1", 0, 101.5), served("w2", 2, 103.0001)]);
    assert!(r.violations.is_empty(), "{:#?}", r.violations);
}

/// A standby's store is audited after `dhp ingest` wrote checkpoints
/// 0..=14: its next checkpoint is 15 only when the judge is told so.
#[test]
fn checkpoints_before_the_audit_are_seeded() {
    let mut s = Sim::new();
    s.l("s1", 105.0, 100.0);
    s.h("h", "pending", json!({}), 100.0);
    s.o("h", "w1", 0, 106.0, 100.1);
    s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1}), 100.1);
    s.ck("h", 15, 101.0);
    let unseeded = s.judge(Variant::Strict, vec![]);
    assert_eq!(rules(&unseeded), vec!["§6.2 a checkpoint gets seq = max(seq) + 1 [no-lost-results]"], "{unseeded:#?}");
    let mut j = Judge::new(Variant::Strict, Params::default());
    j.seed_checkpoints("h", 14);
    let seeded = j.run(s.out.clone(), vec![]);
    assert!(seeded.violations.is_empty() && seeded.all_judged(), "{seeded:#?}");
    let mut j = Judge::new(Variant::Strict, Params::default());
    j.seed_checkpoints("h", 13);
    assert_eq!(rules(&j.run(s.out.clone(), vec![])).len(), 1, "a gap after the seeded prefix is still wrong");
}

/// A PostgreSQL checkpoint transaction (checkpoint, steps, lease renewal)
/// whose check ran under a live lease but whose commit (`at`, deferred
/// triggers) came after the lease's end: a loaded server held it between
/// the two. Judged at the transaction's start it is legal; without that
/// start, or with a start after the lease ended, it is a stale write.
#[test]
fn a_commit_after_the_lease_is_judged_at_the_transactions_start() {
    let run = |began: Option<f64>| {
        let mut s = Sim::new();
        s.l("s1", 105.0, 100.0);
        s.h("h", "pending", json!({}), 100.0);
        s.o("h", "w1", 0, 106.0, 100.1);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1}), 100.1);
        s.pg = began.map(|b| (7, b));
        s.ck("h", 0, 106.4);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1, "steps": 1}), 106.4);
        s.o("h", "w1", 0, 112.4, 106.4);
        s.pg = None;
        s.judge(Variant::Strict, vec![])
    };
    let r = run(Some(105.8));
    assert!(r.violations.is_empty(), "began under the lease: {r:#?}");
    for began in [None, Some(106.2)] {
        let r = run(began);
        assert!(
            rules(&r).contains(&"§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]"),
            "began {began:?}: {r:#?}"
        );
    }
}

/// The supervisor's side of the same delay: an orphan whose transaction
/// began inside its leader term (where its term check ran) and committed
/// after the term's end is the leader's; one that began after it is not.
#[test]
fn an_orphan_is_judged_under_the_term_its_transaction_began_in() {
    let run = |began: Option<f64>| {
        let mut s = Sim::new();
        s.l("s1", 105.0, 100.0);
        s.h("h", "pending", json!({}), 100.0);
        s.o("h", "w1", 0, 104.0, 100.1);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 0, "claimed_at": 100.1}), 100.1);
        s.pg = began.map(|b| (9, b));
        s.o("h", ORPHANED, 1, 0.0, 105.6);
        s.h("h", "orphaned", json!({"runner_id": "w1", "fence": 0, "orphan_reason": "lease-expired"}), 105.6);
        s.pg = None;
        s.judge(Variant::Strict, vec![])
    };
    let r = run(Some(104.9));
    assert!(r.violations.is_empty(), "began inside the term: {r:#?}");
    for began in [None, Some(105.2)] {
        let r = run(began);
        assert!(
            rules(&r).contains(&"§7.1 an orphan needs a live leader term [leader-election]"),
            "began {began:?}: {r:#?}"
        );
    }
}

/// A holder's checkpoint committed after its own lease ran out (no other
/// holder since), the chunk it carries served to that holder before the
/// expiry: the strict model calls it a write without a live lease, by that
/// holder; check-then-write (§13.2) excuses it (the check could have passed
/// before the expiry) — but not when the chunk came after the expiry.
#[test]
fn a_holders_checkpoint_after_its_lease_is_attributed_to_it() {
    let run = |v: Variant, served_at: f64| {
        let mut s = Sim::new();
        s.l("s1", 105.0, 100.0);
        s.h("h", "pending", json!({}), 100.0);
        s.o("h", "w0", 0, 100.6, 100.1);
        s.h("h", "running", json!({"runner_id": "w0", "fence": 0, "claimed_at": 100.1}), 100.1);
        s.o("h", ORPHANED, 1, 0.0, 101.0);
        s.h("h", "orphaned", json!({"runner_id": "w0", "fence": 0, "orphan_reason": "lease-expired"}), 101.0);
        s.o("h", "w1", 2, 103.0, 101.5);
        s.h("h", "running", json!({"runner_id": "w1", "fence": 2, "attempt": 1, "claimed_at": 101.5}), 101.5);
        s.ck("h", 0, 103.3);
        let carried = Fact::CarriedBy { holder: "w1".into(), hid: "h".into(), seq: 0, fence: 2, at: served_at };
        Judge::new(v, Params::default()).run(s.out.clone(), vec![served("w1", 2, served_at), carried])
    };
    let r = run(Variant::Strict, 102.5);
    assert_eq!(rules(&r), vec!["§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]"]);
    assert!(r.violations[0].message.contains("presumably w1's (fence 2)"), "{r:#?}");
    let r = run(Variant::CheckThenWrite, 102.5);
    assert!(r.violations.is_empty() && r.excused.len() == 1, "{r:#?}");
    let r = run(Variant::CheckThenWrite, 103.1);
    assert_eq!(
        rules(&r),
        vec!["§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]"],
        "{r:#?}"
    );
}

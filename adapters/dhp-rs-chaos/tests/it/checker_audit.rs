//! The checker's store-audit rules on small synthetic rounds: a store built
//! with dhp-core directly, the harness's audit installed right after the
//! dispatch (as a round does), and the history of the processes under test
//! switched off (`impl_history: false`) unless a test writes a lying line.
//! Each rule must fire on the commit order that breaks it, and a correct
//! run must hold from the audit alone.

use dhp_chaos::check::{check_round, RoundReport};
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::supervisor::Supervisor;
use dhp_core::transport::log as tlog;
use dhp_core::{Config, Runner, TaskContext};
use dhp_testkit::store as testing;
use dhp_workload::census;
use serde_json::{json, Value};
use std::path::PathBuf;

const LO: u64 = 1000;
const HI: u64 = 1500;
const CHUNK: u64 = 100;

struct Round {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    runner: Runner,
    hid: String,
    hist: crate::common::SplitHistory,
}

impl Round {
    /// A dispatched handoff (`max_attempts`), the audit installed or not.
    fn new(max_attempts: i64, audit: bool, allow_unchecked: &[&str]) -> Round {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        for d in ["store", "transport", "procs"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let runner = Runner::open(dir.join("store"), "chaos", Config::default()).unwrap();
        let budget = Budget { max_steps: 1000, max_spend_usd: 1.0, max_wallclock_s: 3600.0, max_attempts };
        let env = envelope::build(
            census::KIND,
            census::inputs(LO, HI, CHUNK),
            census::output_schema(),
            BuildOptions { budget: Some(budget.to_value()), ..Default::default() },
        )
        .unwrap();
        let hid = runner.dispatch(&env).unwrap();
        if audit {
            dhp_chaos::audit::install_sqlite(&dir.join("store").join("dhp.sqlite3")).unwrap();
        }
        let t0 = envelope::now();
        // the workers here are this file's own calls: no workload service served them
        let mut allow_unchecked = allow_unchecked.to_vec();
        allow_unchecked.push("served-work");
        let meta = json!({
            "config": {"seed": 1, "round": 0, "workers": {"kind": "builtin"}, "supervisors": {"kind": "builtin"},
                       "replay": "synthetic", "impl_history": false, "allow_unchecked": allow_unchecked,
                       "timing": {"leader_ttl_s": 5.0, "supervisor_scan_s": 1.0}},
            "hids": [hid], "t0": t0, "t_faults_end": t0, "t_end": t0,
        });
        std::fs::write(dir.join("round.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
        let hist = crate::common::SplitHistory::open(&dir);
        Round { _tmp: tmp, dir, runner, hid, hist }
    }

    /// A harness line (`process: chaos`): the only kind an impl-history-off round reads.
    fn harness(&mut self, op: &str, extra: Value) {
        let mut v = json!({"t": envelope::now(), "pid": 1, "process": "chaos", "op": op, "type": "event"});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.hist.write(&v);
    }

    fn spawn(&mut self, name: &str, role: &str) {
        let hid = self.hid.clone();
        self.harness("spawn", json!({"name": name, "role": role, "impl": "builtin", "hid": hid, "spawned_pid": 1}));
    }

    /// Checkpoint the chunks after `from` up to `upto`, each shipped to the transport log.
    fn work(&self, ctx: &TaskContext, from: u64, upto: u64) {
        let log = self.dir.join("transport").join(format!("{}.log", self.hid));
        if from == LO {
            tlog::ship_envelope(&log, &self.runner.envelope_bare(&self.hid).unwrap(), &Config::default()).unwrap();
        }
        let mut n = from;
        while n < upto {
            n += CHUNK;
            let (c, s) = census::chunk(LO, n);
            let st = json!({"next_n": n, "count": c, "total": s});
            let seq = ctx.checkpoint(&st).unwrap();
            tlog::ship_checkpoint(&log, seq, &st, &Config::default()).unwrap();
        }
    }

    fn sql(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) {
        let c = rusqlite::Connection::open(self.dir.join("store").join("dhp.sqlite3")).unwrap();
        c.execute(sql, params).unwrap();
    }

    /// Set the envelope's `execution.status` behind the runner's back.
    fn set_status(&self, status: &str) {
        self.sql(
            "UPDATE handoffs SET envelope_json = json_set(envelope_json, '$.execution.status', ?1) WHERE hid = ?2",
            &[&status, &self.hid],
        );
    }

    /// dhp-core's supervisor orphans the expired lease.
    fn orphan(&self) {
        testing::expire_lease(&self.runner, &self.hid).unwrap();
        Supervisor::open(self.dir.join("store"), "sup1", Config::default()).unwrap().scan().unwrap();
    }

    fn check(&self) -> RoundReport {
        check_round(&self.dir).unwrap()
    }
}

fn verdict<'r>(r: &'r RoundReport, inv: &str) -> &'r dhp_chaos::check::Verdict {
    r.invariants.iter().find(|i| i.name == inv).unwrap()
}

/// claim by w1 (3 chunks), orphaned by dhp-core's supervisor, recovered by w2, finished.
fn recovered(r: &mut Round) {
    r.spawn("w1", "worker");
    r.spawn("w2", "worker");
    r.spawn("sup1", "supervisor");
    let c1 = Runner::open(r.dir.join("store"), "w1", Config::default()).unwrap().claim(&r.hid).unwrap();
    r.work(&c1, LO, LO + 300);
    r.orphan();
    let mut c2 = Runner::open(r.dir.join("store"), "w2", Config::default()).unwrap().recover(&r.hid).unwrap();
    r.work(&c2, LO + 300, HI);
    c2.complete(&census::expected(LO, HI, CHUNK)).unwrap();
}

#[test]
fn a_correct_recovered_run_holds_from_the_audit_alone() {
    let mut r = Round::new(10, true, &[]);
    recovered(&mut r);
    let rep = r.check();
    assert!(rep.held, "{:#?}", rep.invariants);
    assert!(rep.audit_events.is_some_and(|n| n > 10), "{:?}", rep.audit_events);
    for inv in ["fencing", "exactly-once", "no-silent-budget-overrun"] {
        let v = verdict(&rep, inv);
        assert_eq!(v.status, "held", "{v:#?}");
        assert!(v.checked > 0 && v.sources.contains(&"store-audit".to_string()), "{v:#?}");
        assert!(!v.sources.contains(&"history".to_string()), "history is off: {v:#?}");
    }
    assert!(rep.unchecked.is_empty(), "{:?}", rep.unchecked);
    assert_eq!(rep.recoveries, 1, "the recover is counted from the store audit");
}

#[test]
fn an_orphan_that_does_not_bump_the_fence_is_caught_although_its_history_claims_the_bump() {
    let mut r = Round::new(10, true, &[]);
    r.spawn("w1", "worker");
    let c1 = Runner::open(r.dir.join("store"), "w1", Config::default()).unwrap().claim(&r.hid).unwrap();
    r.work(&c1, LO, LO + 200);
    // the mutant supervisor's orphan: ownership to the tombstone, fence unchanged
    r.sql("UPDATE ownership SET holder = '__orphaned__', lease_expires_at = 0 WHERE hid = ?1", &[&r.hid]);
    r.set_status("orphaned");
    let hid = r.hid.clone();
    // its history line claims the bump (read or not, it must not matter)
    let lie = json!({"t": envelope::now(), "pid": 2, "process": "sup1", "op": "supervise", "type": "ok", "hid": hid,
                     "action": "orphaned", "reason": "lease-expired", "previous_holder": "w1",
                     "previous_fence": 0, "fence": 1});
    r.hist.write(&lie);
    let rep = r.check();
    let v = verdict(&rep, "fencing");
    assert!(v.violations.iter().any(|m| m.contains("without bumping the fence")), "{v:#?}");
}

#[test]
fn a_second_recoverer_without_compare_and_set_is_caught() {
    let mut r = Round::new(10, true, &[]);
    r.spawn("w1", "worker");
    let c1 = Runner::open(r.dir.join("store"), "w1", Config::default()).unwrap().claim(&r.hid).unwrap();
    r.work(&c1, LO, LO + 200);
    r.orphan();
    Runner::open(r.dir.join("store"), "w2", Config::default()).unwrap().recover(&r.hid).unwrap();
    // w3 takes the handoff from w2 with no orphan in between
    r.sql("UPDATE ownership SET holder = 'w3', fence = fence + 1 WHERE hid = ?1", &[&r.hid]);
    let rep = r.check();
    let v = verdict(&rep, "fencing");
    assert!(v.violations.iter().any(|m| m.contains("without an orphan")), "{v:#?}");
}

#[test]
fn a_checkpoint_committed_while_orphaned_is_a_write_without_a_valid_fence() {
    let mut r = Round::new(10, true, &[]);
    r.spawn("w1", "worker");
    let c1 = Runner::open(r.dir.join("store"), "w1", Config::default()).unwrap().claim(&r.hid).unwrap();
    r.work(&c1, LO, LO + 200);
    r.orphan();
    let (c, s) = census::chunk(LO, LO + 300);
    let (text, hash) =
        dhp_core::json::state_text_and_hash(&json!({"next_n": LO + 300, "count": c, "total": s})).unwrap();
    r.sql(
        "INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, 2, ?2, ?3, 'x')",
        &[&r.hid, &text, &hash],
    );
    let rep = r.check();
    let v = verdict(&rep, "fencing");
    assert!(
        v.violations.iter().any(|m| m.contains("seq 2 committed while the store showed the handoff orphaned")),
        "{v:#?}"
    );
}

#[test]
fn two_live_supervisors_in_overlapping_terms_are_two_leaders() {
    for dead in [false, true] {
        let mut r = Round::new(10, true, &[]);
        r.spawn("sup1", "supervisor");
        r.spawn("sup2", "supervisor");
        let t = envelope::now();
        r.sql(
            "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, 'sup1', ?1, ?2)",
            &[&(t + 5.0), &t],
        );
        if dead {
            r.harness("exit", json!({"name": "sup1", "signal": 9}));
        }
        r.sql("UPDATE leadership SET holder = 'sup2', expires_at = ?1 WHERE id = 1", &[&(t + 5.0)]);
        let rep = r.check();
        let v = verdict(&rep, "one-leader");
        assert_eq!(v.checked, 2, "{v:#?}");
        if dead {
            assert!(v.violations.is_empty(), "a dead leader's term may be taken: {v:#?}");
            assert!(v.notes.iter().any(|n| n.contains("which had died")), "{v:#?}");
        } else {
            assert!(
                v.violations.iter().any(|m| m.contains("two leaders: sup2") && m.contains("sup1 was alive")),
                "{v:#?}"
            );
        }
    }
}

#[test]
fn an_orphan_past_max_attempts_and_a_dead_letter_that_comes_back_are_budget_overruns() {
    let mut r = Round::new(1, true, &[]);
    r.spawn("w1", "worker");
    let c1 = Runner::open(r.dir.join("store"), "w1", Config::default()).unwrap().claim(&r.hid).unwrap();
    r.work(&c1, LO, LO + 100);
    // a supervisor that orphans instead of dead-lettering at attempt 1 of 1
    r.sql(
        "UPDATE ownership SET holder = '__orphaned__', fence = fence + 1, lease_expires_at = 0 WHERE hid = ?1",
        &[&r.hid],
    );
    r.sql(
        "UPDATE handoffs SET envelope_json = json_set(envelope_json, '$.execution.status', 'orphaned', '$.execution.attempt', 1) WHERE hid = ?1",
        &[&r.hid],
    );
    r.set_status("failed");
    r.set_status("running");
    let rep = r.check();
    let v = verdict(&rep, "no-silent-budget-overrun");
    assert!(v.violations.iter().any(|m| m.contains("orphaned at attempt 1 of max_attempts 1")), "{v:#?}");
    assert!(v.violations.iter().any(|m| m.contains("came back from failed")), "{v:#?}");
}

#[test]
fn without_the_audit_the_audit_invariants_are_unchecked_never_held() {
    let mut r = Round::new(10, false, &[]);
    recovered(&mut r);
    let rep = r.check();
    assert!(rep.held, "no violation: {:#?}", rep.invariants);
    for inv in ["fencing", "one-leader", "no-silent-budget-overrun", "exactly-once"] {
        let v = verdict(&rep, inv);
        assert_eq!(v.status, "unchecked", "{v:#?}");
        assert!(v.missing.contains(&"store-audit".to_string()), "{v:#?}");
        assert!(v.unchecked.as_deref().is_some_and(|u| u.contains("store-audit")), "{v:#?}");
        assert!(rep.unchecked.contains(&inv.to_string()), "{:?}", rep.unchecked);
    }
    // --allow-unchecked (saved in round.json) moves them to the allowed list; `all` allows every one
    let mut r = Round::new(10, false, &["fencing", "one-leader"]);
    recovered(&mut r);
    let rep = r.check();
    assert!(rep.unchecked_allowed.contains(&"fencing".to_string()) && !rep.unchecked.contains(&"fencing".to_string()));
    assert!(rep.unchecked.contains(&"exactly-once".to_string()), "{:?}", rep.unchecked);
    let mut r = Round::new(10, false, &["all"]);
    recovered(&mut r);
    assert!(r.check().unchecked.is_empty());
}

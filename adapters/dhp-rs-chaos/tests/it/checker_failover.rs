//! `no-lost-commits-across-db-crash` on a failover under pg_auto_failover,
//! on synthetic rounds: the harness's record of both standbys at the loss
//! (`db-failover-snapshot`) must hold every acknowledgement before it. Each
//! rule fires on the record that breaks it (an acknowledged seq on neither
//! standby, a completion on neither, a standby that could not be read) and
//! stays quiet on the record that keeps it.
use crate::common::synth::*;
use dhp_chaos::check::RoundReport;
use serde_json::{json, Value};

const AUTO: &str = "pg_auto_failover (monitor + keepers, a network namespace per node)";
const INV: &str = "no-lost-commits-across-db-crash";

/// w1 claims and checkpoints three chunks (seqs 0..=2 acknowledged), and
/// completes when `complete`; then the primary is lost and both standbys
/// are read: `snapshot(hid)` gives the record's fields.
fn failover_after_acks(complete: bool, snapshot: impl Fn(&str) -> Value) -> RoundReport {
    let mut s = Synth::new();
    let mut c1 = s.claimed_by("w1", "builtin");
    if complete {
        s.work("w1", &c1, LO, HI);
        s.complete("w1", &mut c1);
    } else {
        s.work("w1", &c1, LO, LO + 300);
    }
    let fault = json!({"fault_id": 1, "kind": "db-failover", "signal": "FAILOVER", "victim": "n0", "role": "database",
                       "cause": "host-killed", "planned": false, "replication": "sync", "failover_manager": AUTO});
    s.line("chaos", "fault", "event", fault);
    s.line("chaos", "observe", "event", json!({"what": "db-primary-crashed", "fault_id": 1, "node": "n0"}));
    let mut snap = json!({"what": "db-failover-snapshot", "fault_id": 1, "node": "n1+n2"});
    snap.as_object_mut().unwrap().extend(snapshot(&s.hid).as_object().unwrap().clone());
    s.line("chaos", "observe", "event", snap);
    s.line(
        "chaos",
        "observe",
        "event",
        json!({"what": "db-promoted", "fault_id": 1, "node": "n1", "by": "pg_auto_failover"}),
    );
    s.line("chaos", "observe", "event", json!({"what": "db-up", "fault_id": 1}));
    s.check()
}

fn checked(r: &RoundReport) -> u64 {
    r.invariants.iter().find(|i| i.name == INV).map_or(0, |i| i.checked)
}

#[test]
fn every_acknowledgement_on_a_standby_holds() {
    let r = failover_after_acks(false, |hid| json!({"unread": [], "max_seq": {hid: 2}, "completed": []}));
    assert!(violations(&r, INV).is_empty(), "{:#?}", violations(&r, INV));
    assert_eq!(checked(&r), 3, "three acknowledged checkpoints judged");
}

#[test]
fn an_acknowledged_seq_on_neither_standby_is_named() {
    let r = failover_after_acks(false, |hid| json!({"unread": [], "max_seq": {hid: 1}, "completed": []}));
    let v = violations(&r, INV);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(v[0].contains("lost in failover 1"), "{v:#?}");
    assert!(v[0].contains("the standbys n1+n2, read at the loss, hold up to seq 1): 2 (next_n 1300"), "{v:#?}");
}

#[test]
fn an_acknowledged_completion_on_neither_standby_is_named() {
    let r = failover_after_acks(true, |hid| json!({"unread": [], "max_seq": {hid: 4}, "completed": []}));
    let v = violations(&r, INV);
    assert!(
        v.iter().any(|m| m.contains("was told its completion committed") && m.contains("neither standby (n1+n2)")),
        "{v:#?}"
    );
    let r = failover_after_acks(true, |hid| json!({"unread": [], "max_seq": {hid: 4}, "completed": [hid]}));
    assert!(violations(&r, INV).is_empty(), "{:#?}", violations(&r, INV));
}

#[test]
fn a_standby_not_read_leaves_the_failover_unjudged_never_held() {
    // the record holds every seq, but an acknowledgement could have been on n2 alone
    let r = failover_after_acks(
        false,
        |hid| json!({"unread": ["n2: connection refused"], "max_seq": {hid: 2}, "completed": []}),
    );
    let v = violations(&r, INV);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].contains("not every standby of the quorum could be read at the loss (n2: connection refused)"),
        "{v:#?}"
    );
    let r = failover_after_acks(false, |_| json!({"error": "n1: timeout; n2: timeout"}));
    assert!(violations(&r, INV).iter().any(|m| m.contains("could not be read")), "{:#?}", violations(&r, INV));
}

//! Issue 21 item 1: the scan finds expired leases, budget violations and
//! stalls through indexes and what changed, not by reading every running
//! handoff. Among many live leases one expired lease is orphaned; a budget
//! exceeded by a write after the first (full) pass, and a wallclock budget
//! that runs out with no write at all, are both caught by later passes.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::store::{with_tx, Mode};
use dhp_core::supervisor::ScanAction;
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;

fn cfg() -> Config {
    // Long leases: only the lease we expire by hand runs out.
    Config { lease_interval_s: 600.0, lease_max_missed: 3, ..Config::default() }
}

fn dispatch(r: &Runner, n: u64, budget: serde_json::Value) -> String {
    let opts = BuildOptions { budget: Some(budget), ..Default::default() };
    let env = envelope::build("scale", json!({"inline": {"n": n}}), json!({}), opts).unwrap();
    r.dispatch(&env).unwrap()
}

fn actions_for(acts: &[ScanAction], hid: &str) -> Vec<&'static str> {
    acts.iter().filter(|a| a.hid() == hid).map(|a| a.kind().as_str()).collect()
}

#[test]
fn expired_lease_among_many_live_ones_is_found_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w1", cfg()).unwrap();
    let hids: Vec<String> = (0..200).map(|i| dispatch(&r, i, json!({}))).collect();
    for h in &hids {
        r.claim(h).unwrap();
    }
    let sup = Supervisor::open(dir.path(), "sup", cfg()).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "nothing to do yet");
    dhp_testkit::store::expire_lease(&r, &hids[77]).unwrap();
    let acts = sup.scan().unwrap();
    assert_eq!(actions_for(&acts, &hids[77]), ["orphaned"], "{acts:?}");
    assert_eq!(acts.len(), 1, "only the expired lease: {acts:?}");

    // The query reads the partial lease index, not every ownership row.
    let c = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    let plan: Vec<String> = c
        .prepare(
            "EXPLAIN QUERY PLAN SELECT o.hid FROM ownership o CROSS JOIN handoffs h ON h.hid=o.hid \
             WHERE o.holder != '__orphaned__' AND o.lease_expires_at < 1.0 \
             AND (CASE WHEN json_valid(h.envelope_json) THEN json_extract(h.envelope_json, '$.execution.status') END)='running'",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(plan.iter().any(|p| p.contains("dhprs_ownership_lease")), "{plan:?}");
}

#[test]
fn budget_exceeded_after_the_first_pass_is_found_by_an_incremental_one() {
    let dir = tempfile::tempdir().unwrap();
    // Protocol time moves only when the test says so: the wallclock budget
    // runs out exactly when advanced past it, however slow the machine.
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..cfg() };
    let r = Runner::open(dir.path(), "w1", cfg.clone()).unwrap();
    let quiet: Vec<String> = (0..50).map(|i| dispatch(&r, i, json!({"max_steps": 100}))).collect();
    let steps = dispatch(&r, 1000, json!({"max_steps": 2}));
    let wall = dispatch(&r, 1001, json!({"max_wallclock_s": 4.0}));
    for h in quiet.iter().chain([&steps, &wall]) {
        r.claim(h).unwrap();
    }
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    // A write after the full pass: over the step budget.
    let fence = r.ownership(&steps).unwrap().unwrap().fence;
    let lease = dhp_core::Lease::presented(&steps, fence).unwrap();
    assert!(r.note_step(&lease, 3).is_err(), "over budget (the steps are recorded)");
    let acts = sup.scan().unwrap();
    assert_eq!(actions_for(&acts, &steps), ["budget-killed"], "{acts:?}");
    assert!(actions_for(&acts, &wall).is_empty(), "{acts:?}");
    // No write at all: just before the wallclock deadline nothing is due;
    // just after it, the handoff is killed.
    hand.advance(3.9);
    let acts = sup.scan().unwrap();
    assert!(acts.is_empty(), "within the wallclock budget: {acts:?}");
    hand.advance(0.2);
    let acts = sup.scan().unwrap();
    assert_eq!(actions_for(&acts, &wall), ["budget-killed"], "{acts:?}");
    assert_eq!(acts.len(), 1, "{acts:?}");
    let st = with_tx(r.store().as_ref(), Mode::Read, |tx| tx.status(&wall)).unwrap();
    assert_eq!(st.as_deref(), Some("failed"));
}

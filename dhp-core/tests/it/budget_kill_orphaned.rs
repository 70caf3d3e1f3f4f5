//! Budget kill of an ORPHANED handoff (docs/PROTOCOL.md §4, §7.3, §13): the
//! supervisor's budget kill accepts a running or an orphaned handoff, as
//! the reference's `kill_on_budget` does. A scan finds over-budget work
//! among the handoffs that were running when it read them, so a handoff
//! whose lease expired while over budget is orphaned and then failed in
//! the same pass (the reference's scan orphans it and leaves it orphaned).
//! An orphan that is not yet over budget is not watched: its budget is
//! checked again once recovered.
use crate::common::SCHEMA_X;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::supervisor::{OrphanReason, Supervisor};
use dhp_core::{Config, Error, Runner};
use dhp_testkit::store as testing;
use serde_json::json;

fn setup() -> (tempfile::TempDir, Runner, Supervisor, String) {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let budget = json!({"max_steps": 2, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 3});
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 1}}),
        serde_json::from_str(SCHEMA_X).unwrap(),
        BuildOptions { budget: Some(budget), ..Default::default() },
    )
    .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", Config::default()).unwrap();
    (dir, r, sup, hid)
}

fn status(r: &Runner, hid: &str) -> String {
    r.status(hid).unwrap()["status"].as_str().unwrap().to_string()
}

#[test]
fn an_expired_over_budget_handoff_is_orphaned_then_failed_in_one_scan() {
    let (_d, r, sup, hid) = setup();
    let ctx = r.claim(&hid).unwrap();
    // The steps are recorded although the call reports the overrun.
    assert!(matches!(ctx.note_step(3), Err(Error::BudgetExceeded { .. })));
    testing::expire_lease(&r, &hid).unwrap();
    let acts = sup.scan().unwrap();
    let actions: Vec<&str> = acts.iter().map(|a| a.kind().as_str()).collect();
    assert_eq!(actions, ["orphaned", "budget-killed"], "{acts:?}");
    assert_eq!(status(&r, &hid), "failed");
    assert!(r.ownership(&hid).unwrap().is_none(), "the tombstone is gone: nothing can recover it");
    assert!(r.with_id("w2").unwrap().recover(&hid).is_err());
}

#[test]
fn kill_on_budget_fails_an_orphaned_handoff_over_budget() {
    let (_d, r, sup, hid) = setup();
    let ctx = r.claim(&hid).unwrap();
    assert!(ctx.note_step(3).is_err());
    // Orphaned directly (not by a scan), so no budget kill ran yet.
    testing::expire_lease(&r, &hid).unwrap();
    assert_eq!(sup.orphan_action(&hid, OrphanReason::LeaseExpired, None).unwrap().kind().as_str(), "orphaned");
    assert_eq!(status(&r, &hid), "orphaned");
    let out = sup.kill_on_budget(&hid).unwrap();
    assert_eq!(out.kind().as_str(), "budget-killed", "{out}");
    assert_eq!(status(&r, &hid), "failed");
    let env = r.envelope_bare(&hid).unwrap();
    assert!(env["execution"]["error"].as_str().unwrap().starts_with("budget exhausted: steps 3 > 2"), "{env}");
}

#[test]
fn an_orphan_within_budget_is_left_to_recovery() {
    let (_d, r, sup, hid) = setup();
    let ctx = r.claim(&hid).unwrap();
    ctx.note_step(2).unwrap();
    testing::expire_lease(&r, &hid).unwrap();
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "orphaned");
    assert_eq!(sup.kill_on_budget(&hid).unwrap().kind().as_str(), "within-budget");
    assert_eq!(status(&r, &hid), "orphaned");
    let ctx2 = r.with_id("w2").unwrap().recover(&hid).unwrap();
    assert!(matches!(ctx2.note_step(1), Err(Error::BudgetExceeded { .. })));
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "budget-killed");
    assert_eq!(status(&r, &hid), "failed");
}

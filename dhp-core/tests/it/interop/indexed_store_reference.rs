//! Issue 21 item 1: the indexes dhp-rs adds to the reference's schema keep
//! the store the reference's. On a store created by dhp-rs (indexes
//! present), the reference's Runner3 dispatches, claims, checkpoints,
//! completes and counts steps, and its Supervisor3 orphans an expired lease
//! and kills a budget overrun; SQLite's integrity check then finds every
//! index consistent with the rows the reference wrote, and the dhp-rs
//! supervisor finds a lease the reference let expire, through its index,
//! in an incremental pass.
use crate::common::*;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Runner, Supervisor};
use serde_json::json;

const INDEXES: [&str; 8] = [
    "dhprs_ownership_lease",
    "dhprs_ownership_holder",
    "dhprs_ownership_updated",
    "dhprs_handoffs_updated",
    "dhprs_progress_repeats",
    "dhprs_checkpoints_first",
    "dhprs_approvals_pending",
    "dhprs_handoffs_status",
];

fn py_dispatch(root: &str, n: u32, budget: Option<&str>) -> String {
    let inputs = json!({"inline": {"n": n}}).to_string();
    let mut args = vec!["dispatch", root, "--kind", "ref", "--inputs", &inputs, "--schema", "{}"];
    if let Some(b) = budget {
        args.extend(["--budget", b]);
    }
    refctl_ok(&args, &[])["hid"].as_str().unwrap().to_string()
}

fn py_claim(root: &str, hid: &str) -> String {
    refctl_ok(&["claim", root, hid, "--runner", "py-w"], &[])["fence"].to_string()
}

#[test]
fn the_reference_works_a_store_with_the_extra_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let cfg = Config { lease_interval_s: 600.0, lease_max_missed: 3, ..Config::default() };
    let r = Runner::open(root, "rs-w", cfg.clone()).unwrap();
    let env = envelope::build("rs", json!({"inline": {"n": 0}}), json!({}), BuildOptions::default()).unwrap();
    let ours = r.dispatch(&env).unwrap();
    r.claim(&ours).unwrap();
    let c = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    for name in INDEXES {
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name=?1", [name], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "dhp-rs created {name}");
    }
    let sup = Supervisor::open(root, "rs-sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first, full pass");

    // The reference's whole life cycle on this store.
    let done = py_dispatch(root, 1, None);
    let f = py_claim(root, &done);
    refctl_ok(&["checkpoint", root, &done, "--runner", "py-w", "--fence", &f, "--state", r#"{"i": 1}"#], &[]);
    refctl_ok(&["complete", root, &done, "--runner", "py-w", "--fence", &f, "--result", r#"{"ok": true}"#], &[]);
    let lost = py_dispatch(root, 2, None);
    py_claim(root, &lost);
    refctl_ok(&["expire", root, &lost], &[]);
    let over = py_dispatch(
        root,
        3,
        Some(r#"{"max_steps": 1, "max_spend_usd": 10.0, "max_wallclock_s": 3600.0, "max_attempts": 3}"#),
    );
    let f = py_claim(root, &over);
    // The reference records the steps and raises BudgetExceeded.
    let (_, v) = refctl(&["note-step", root, &over, "--runner", "py-w", "--fence", &f, "--n", "2"], &[]);
    assert_eq!(v["error_kind"], "BudgetExceeded", "{v}");
    dhp_testkit::store::expire_leadership(&r).unwrap(); // the reference's supervisor leads now
    let v = refctl_ok(&["scan", root, "--sup", "py-sup"], &[]);
    let acts = v["actions"].as_array().unwrap();
    let action = |h: &str| acts.iter().find(|a| a["hid"] == h).map(|a| a["action"].as_str().unwrap().to_string());
    assert_eq!(action(&lost).as_deref(), Some("orphaned"), "{v}");
    assert_eq!(action(&over).as_deref(), Some("budget-killed"), "{v}");
    assert_eq!(refctl_ok(&["status", root, &done], &[])["status"], "completed");

    // Every index agrees with the rows the reference wrote.
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");

    // Our supervisor (a later, incremental pass; leadership handed back by
    // expiring the reference's) finds the lease the reference let expire.
    let late = py_dispatch(root, 4, None);
    py_claim(root, &late);
    refctl_ok(&["expire", root, &late], &[]);
    dhp_testkit::store::expire_leadership(&r).unwrap();
    let acts = sup.scan().unwrap();
    assert!(acts.iter().any(|a| a.hid() == late.as_str() && a.kind().as_str() == "orphaned"), "{acts:?}");
    assert_eq!(r.status(&ours).unwrap()["status"], "running", "our live lease is untouched");
}

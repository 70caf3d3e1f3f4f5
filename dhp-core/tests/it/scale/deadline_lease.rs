//! Issue 21: a lease that runs out with no write (the worker went silent)
//! is found by a pass long after the change window stopped showing its
//! rows: expired leases come from the partial lease index, every pass.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;

#[test]
fn a_lease_that_expires_with_no_write_is_orphaned() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // A 60 s lease (20 s × 3 missed).
    let cfg = Config { clock, lease_interval_s: 20.0, lease_max_missed: 3, ..Config::default() };
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let hids: Vec<String> = (0..10)
        .map(|n| {
            let env = envelope::build("t", json!({"inline": {"n": n}}), json!({}), BuildOptions::default()).unwrap();
            r.dispatch(&env).unwrap()
        })
        .collect();
    r.claim(&hids[3]).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    for _ in 0..5 {
        hand.advance(10.0);
        assert!(sup.scan().unwrap().is_empty(), "the lease has not run out");
    }
    hand.advance(11.0);
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].hid(), hids[3].as_str());
    assert_eq!(acts[0].to_json()["reason"], "lease-expired", "{acts:?}");
    assert_eq!(r.status(&hids[3]).unwrap()["status"], "orphaned");
}

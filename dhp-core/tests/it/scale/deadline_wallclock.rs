//! Issue 21: between full passes the scan reads only what was written and
//! what fell due. A wall-clock budget that runs out with no write at all
//! falls due through the tracker's deadlines (ordered by due time): passes
//! far beyond the change window (its slack is 5 s) find nothing, then the
//! pass after `claimed_at + max_wallclock_s` fails it closed.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;

#[test]
fn a_wallclock_budget_runs_out_with_no_write_and_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // Long leases: only the budget can fire.
    let cfg = Config { clock, lease_interval_s: 1000.0, ..Config::default() };
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let dispatch = |n: u64, budget| {
        let opts = BuildOptions { budget: Some(budget), ..Default::default() };
        r.dispatch(&envelope::build("t", json!({"inline": {"n": n}}), json!({}), opts).unwrap()).unwrap()
    };
    let quiet: Vec<String> = (0..20).map(|i| dispatch(i, json!({"max_steps": 100}))).collect();
    let wall = dispatch(99, json!({"max_wallclock_s": 60.0}));
    for h in quiet.iter().chain([&wall]) {
        r.claim(h).unwrap();
    }
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    for _ in 0..4 {
        hand.advance(10.0);
        assert!(sup.scan().unwrap().is_empty(), "nothing is due before the budget runs out");
    }
    hand.advance(21.0);
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!((acts[0].hid(), acts[0].kind().as_str()), (wall.as_str(), "budget-killed"));
    assert_eq!(r.status(&wall).unwrap()["status"], "failed");
}

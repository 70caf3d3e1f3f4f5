//! Issue 21: a stall — no checkpoint for `stall_timeout_s` — with no write
//! at all falls due through the tracker's deadlines
//! (`last_checkpoint_at + stall_timeout_s`), long after the change window
//! stopped showing the handoff's rows.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;

#[test]
fn a_stall_with_no_write_is_found_when_it_falls_due() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // Long leases (no heartbeat needed): only the stall can fire.
    let cfg = Config { clock, lease_interval_s: 1000.0, ..Config::default() };
    let timeout = cfg.stall_timeout_s;
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"s": 1})).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    let mut waited = 0.0;
    while waited + 10.0 < timeout {
        hand.advance(10.0);
        waited += 10.0;
        assert!(sup.scan().unwrap().is_empty(), "not stalled at {waited} s");
    }
    hand.advance(timeout - waited + 1.0);
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].kind().as_str(), "orphaned", "{acts:?}");
    assert_eq!(acts[0].to_json()["reason"], "stalled", "{acts:?}");
}

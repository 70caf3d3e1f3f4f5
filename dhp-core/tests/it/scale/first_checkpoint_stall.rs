//! Issue 21: a checkpoint no longer rewrites an index entry (the change
//! window reads progress rows only when their digest repeats, and first
//! checkpoints through a partial index of seq 0). A handoff whose first
//! checkpoint comes after the supervisor's full pass, with no other write,
//! must still get its stall deadline from that checkpoint and be found
//! stalled when it falls due; one that keeps checkpointing must never be.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;

#[test]
fn a_first_checkpoint_after_the_full_pass_starts_the_stall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // Long leases (no heartbeat needed): only the stall can fire.
    let cfg = Config { clock, lease_interval_s: 1000.0, ..Config::default() };
    let timeout = cfg.stall_timeout_s;
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let build = |n| envelope::build("t", json!({"inline": {"n": n}}), json!({}), BuildOptions::default()).unwrap();
    let (quiet, busy) = (r.dispatch(&build(1)).unwrap(), r.dispatch(&build(2)).unwrap());
    let (quiet_ctx, busy_ctx) = (r.claim(&quiet).unwrap(), r.claim(&busy).unwrap());
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    // Past the change window of the claims: only the checkpoints below
    // can tell the tracker that these handoffs have a stall clock.
    hand.advance(30.0);
    assert!(sup.scan().unwrap().is_empty());
    quiet_ctx.checkpoint(&json!({"s": 1})).unwrap();
    busy_ctx.checkpoint(&json!({"s": 1})).unwrap();
    let mut waited = 0.0;
    while waited + 10.0 < timeout {
        hand.advance(10.0);
        waited += 10.0;
        // The busy one checkpoints every 10 s: its deadline keeps moving.
        busy_ctx.checkpoint(&json!({"s": waited})).unwrap();
        assert!(sup.scan().unwrap().is_empty(), "not stalled at {waited} s");
    }
    hand.advance(timeout - waited + 1.0);
    busy_ctx.checkpoint(&json!({"s": "last"})).unwrap();
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].hid(), quiet.as_str(), "{acts:?}");
    assert_eq!(acts[0].to_json()["reason"], "stalled", "{acts:?}");
    // The busy handoff's early deadlines fell due and found no stall.
    for _ in 0..3 {
        hand.advance(timeout / 2.0);
        busy_ctx.checkpoint(&json!({"s": "more"})).unwrap();
        assert!(sup.scan().unwrap().is_empty(), "a checkpointing handoff is not stalled");
    }
}

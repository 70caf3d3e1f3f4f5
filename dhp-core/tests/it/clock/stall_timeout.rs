//! A worker that heartbeats but checkpoints nothing for `stall_timeout_s`
//! is orphaned as stalled: two minutes of protocol time on a manual clock.
use crate::common::*;
use dhp_core::supervisor::Supervisor;
use dhp_core::{envelope, Clock, Config, Runner};
use serde_json::json;

#[test]
fn a_live_worker_without_checkpoints_is_orphaned_after_the_stall_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..Config::default() };
    let timeout = cfg.stall_timeout_s;
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    let env =
        envelope::build("t", json!({"inline": {"n": 1}}), serde_json::from_str(SCHEMA_X).unwrap(), Default::default())
            .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"s": 1})).unwrap();

    // Heartbeats (every second; the lease is 6 s) keep the lease; only
    // checkpoints count as progress.
    let pass = |secs: f64| {
        for _ in 0..secs as usize {
            hand.advance(1.0);
            ctx.heartbeat().unwrap();
        }
    };
    pass(timeout - 1.0);
    assert!(sup.scan().unwrap().is_empty(), "not stalled before the timeout");
    // A checkpoint restarts the stall clock.
    ctx.checkpoint(&json!({"s": 2})).unwrap();
    pass(timeout - 1.0);
    assert!(sup.scan().unwrap().is_empty(), "the checkpoint reset the stall clock");
    pass(2.0);
    let acts = sup.scan().unwrap();
    assert_eq!(acts[0].kind().as_str(), "orphaned", "{acts:?}");
    assert_eq!(acts[0].to_json()["reason"], "stalled", "{acts:?}");
}

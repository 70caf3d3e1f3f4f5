//! A lease runs out when protocol time passes its end, not before: driven
//! by a manual clock, so the boundary is exact and nothing sleeps.
use crate::common::*;
use dhp_core::supervisor::Supervisor;
use dhp_core::{envelope, Clock, Config, Error, Runner};
use serde_json::json;

#[test]
fn a_lease_expires_exactly_at_its_end_and_the_supervisor_then_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..Config::default() };
    let ttl = cfg.lease_ttl_s();
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    let env =
        envelope::build("t", json!({"inline": {"n": 1}}), serde_json::from_str(SCHEMA_X).unwrap(), Default::default())
            .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    let claimed_at = hand.now();
    assert_eq!(r.ownership(&hid).unwrap().unwrap().lease_expires_at, claimed_at + ttl);

    // Up to its end the lease is live: writes pass, the scan leaves it.
    hand.advance(ttl);
    ctx.checkpoint(&json!({"s": 1})).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "a lease at its last instant is live");

    // Past its end the holder's writes are refused and nothing is written.
    hand.advance(0.5);
    assert!(matches!(ctx.checkpoint(&json!({"s": 2})), Err(Error::LeaseLost { .. })));
    assert!(matches!(ctx.heartbeat(), Err(Error::LeaseLost { .. })));
    assert_eq!(r.checkpoints(&hid).unwrap().len(), 1);
    let acts = sup.scan().unwrap();
    assert_eq!(acts[0].kind().as_str(), "orphaned", "{acts:?}");
    assert_eq!(r.envelope_bare(&hid).unwrap()["execution"]["orphaned_at"], json!(claimed_at + ttl + 0.5));

    // The checkpoint row carries the clock's time too.
    let at = &r.checkpoints(&hid).unwrap()[0].at;
    assert_eq!(at, &envelope::iso_of(claimed_at + ttl));
}

//! Leadership lasts `leader_ttl_s` of protocol time after the last renewal:
//! a follower cannot take over before, and can after, with nothing sleeping.

use dhp_core::supervisor::Supervisor;
use dhp_core::{Clock, Config, Runner};
use dhp_testkit::store as testing;

#[test]
fn a_follower_takes_over_only_once_the_leader_ttl_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..Config::default() };
    let ttl = cfg.leader_ttl_s;
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let s1 = Supervisor::open(dir.path(), "sup1", cfg.clone()).unwrap();
    let s2 = Supervisor::open(dir.path(), "sup2", cfg).unwrap();
    assert!(s1.ensure_leadership().unwrap());
    assert!(!s2.leader_gone().unwrap());

    // The leader renews within its TTL: it stays the leader however long.
    for _ in 0..10 {
        hand.advance(ttl * 0.9);
        assert!(s1.ensure_leadership().unwrap(), "a renewing leader keeps leading");
        assert!(!s2.ensure_leadership().unwrap(), "no takeover while the leader renews");
    }

    // The leader stops renewing: at its TTL it still leads, after it not.
    hand.advance(ttl);
    assert!(!s2.leader_gone().unwrap());
    assert!(!s2.ensure_leadership().unwrap());
    hand.advance(0.01);
    assert!(s2.leader_gone().unwrap());
    assert!(s2.ensure_leadership().unwrap());
    assert!(!s1.ensure_leadership().unwrap(), "the old leader is a follower now");
    assert_eq!(testing::leader(&r).unwrap().unwrap().holder, "sup2");
}

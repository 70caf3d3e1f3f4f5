//! A supervisor's own pass orphans only under its live leadership term,
//! checked inside the orphan's transaction (§7.1). Found by dhp-chaos's
//! `model` invariant: under load a leader whose pass outlived its term
//! orphaned 0.25 s after another supervisor had taken the term over.

use super::{OrphanReason, Supervisor};
use crate::envelope::{self, BuildOptions};
use crate::store::{with_tx, Mode};
use crate::{Clock, Config, Runner};
use serde_json::json;

fn setup() -> (tempfile::TempDir, Runner, Supervisor, Supervisor, std::sync::Arc<crate::clock::ManualClock>, String) {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..Config::default() };
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
    let env = envelope::build("t", json!({"inline": {"n": 1}}), schema, BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let s1 = Supervisor::open(dir.path(), "sup1", cfg.clone()).unwrap();
    let s2 = Supervisor::open(dir.path(), "sup2", cfg).unwrap();
    (dir, r, s1, s2, hand, hid)
}

#[test]
fn a_pass_that_outlived_its_term_does_not_orphan() {
    let (_d, r, s1, s2, hand, hid) = setup();
    let _ctx = r.claim(&hid).unwrap();
    assert!(s1.ensure_leadership().unwrap());
    // sup1's pass has decided to act; meanwhile its term runs out, the
    // lease too, and sup2 takes the leadership over.
    hand.advance(s1.cfg.leader_ttl_s.max(s1.cfg.lease_ttl_s()) + 1.0);
    assert!(s2.ensure_leadership().unwrap());
    let a = s1.orphan_led(&hid, OrphanReason::LeaseExpired).unwrap();
    assert_eq!(a.kind().as_str(), "not-leader", "{a:?}");
    assert_eq!(with_tx(r.store().as_ref(), Mode::Read, |tx| tx.leadership()).unwrap().unwrap().holder, "sup2");
    assert_ne!(r.ownership(&hid).unwrap().unwrap().holder, "__orphaned__", "nothing changed");
    // The live leader's orphan goes through.
    let a = s2.orphan_led(&hid, OrphanReason::LeaseExpired).unwrap();
    assert_eq!(a.kind().as_str(), "orphaned", "{a:?}");
}

#[test]
fn an_expired_term_alone_is_enough_to_refuse() {
    let (_d, r, s1, _s2, hand, hid) = setup();
    let _ctx = r.claim(&hid).unwrap();
    assert!(s1.ensure_leadership().unwrap());
    hand.advance(s1.cfg.leader_ttl_s.max(s1.cfg.lease_ttl_s()) + 1.0);
    assert_eq!(s1.orphan_led(&hid, OrphanReason::LeaseExpired).unwrap().kind().as_str(), "not-leader");
    // The direct API (adapters, benchmarks) is the caller's to lead.
    assert_eq!(s1.orphan_action(&hid, OrphanReason::LeaseExpired, None).unwrap().kind().as_str(), "orphaned");
}

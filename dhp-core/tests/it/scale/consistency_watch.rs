//! Issue 21: between full passes the consistency pass reads only the rows
//! written since its last run and the rows it left unsettled. A torn state
//! that must wait (a tombstone younger than a lease TTL: a reference
//! supervisor may be between its two writes) is repaired by a later pass
//! once it settled, although nothing was written in between and its own
//! write is out of the change window by then.

use dhp_core::envelope::{self, BuildOptions, ORPHANED_HOLDER};
use dhp_core::{Clock, Config, Runner, Supervisor};
use rusqlite::params;
use serde_json::json;

#[test]
fn a_waiting_torn_state_is_repaired_once_it_settles_with_no_write() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // Lease TTL 20 s: the consistency pass's cadence and the settle time.
    let cfg = Config { clock, lease_interval_s: 10.0, lease_max_missed: 2, ..Config::default() };
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    r.claim(&hid).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass: consistent");

    // An orphan that moved the row and has not written the envelope yet
    // (another implementation, between its two writes): stamped now.
    hand.advance(1.0);
    let c = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    c.execute(
        "UPDATE ownership SET holder=?1, fence=fence+1, lease_expires_at=0, updated_at=?2 WHERE hid=?3",
        params![ORPHANED_HOLDER, hand.now(), hid],
    )
    .unwrap();

    // Next consistency pass (a lease TTL later): the write is in its
    // window, the tombstone is 19.5 s old, so it waits.
    hand.advance(19.5);
    assert!(sup.scan().unwrap().is_empty(), "a fresh tombstone waits");
    assert_eq!(r.status(&hid).unwrap()["status"], "running");

    // A lease TTL later nothing was written; the write is 39.5 s old, out
    // of the window. The pass looks at it again because it was unsettled.
    hand.advance(20.0);
    let acts = sup.scan().unwrap();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0].to_json()["torn"], "torn-orphan-unwritten", "{acts:?}");
    assert_eq!(r.status(&hid).unwrap()["status"], "orphaned");
}

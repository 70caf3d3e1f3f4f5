//! Issue 21: a leader renews its term — a write transaction, a commit, an
//! fsync — only once less than half of the leader TTL is left, not on
//! every pass; the passes in between commit nothing, and neither do a
//! follower's while the leader's term is live. Commits are counted with
//! `PRAGMA data_version` on another connection (it moves whenever some
//! other connection commits).

use dhp_core::{Clock, Config, Runner, Supervisor};
use dhp_testkit::store as testing;

#[test]
fn a_leader_writes_only_when_its_term_needs_renewing() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    let cfg = Config { clock, ..Config::default() };
    let ttl = cfg.leader_ttl_s;
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg.clone()).unwrap();
    let probe = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    let commits = || probe.query_row("PRAGMA data_version", [], |row| row.get::<_, i64>(0)).unwrap();
    let expiry = || testing::leader(&r).unwrap().unwrap().expires_at;

    assert!(sup.scan().unwrap().is_empty(), "takes the leadership");
    let (v0, e0) = (commits(), expiry());
    // Four passes while more than half the term is left: reads only.
    for _ in 0..4 {
        hand.advance(ttl * 0.1);
        assert!(sup.scan().unwrap().is_empty());
        assert!(sup.is_leader());
    }
    assert_eq!(commits(), v0, "a pass with more than half the term left committed something");
    assert_eq!(expiry(), e0);

    // Less than half left: this pass renews (one commit), a full term on.
    hand.advance(ttl * 0.15);
    assert!(sup.scan().unwrap().is_empty());
    assert_ne!(commits(), v0, "not renewed with less than half the term left");
    assert!(expiry() > e0 + ttl * 0.5, "renewed a full term from now");

    // A follower's passes read the live term and write nothing.
    let follower = Supervisor::open(dir.path(), "sup2", cfg).unwrap();
    let v1 = commits();
    for _ in 0..3 {
        hand.advance(ttl * 0.1);
        assert!(follower.scan().unwrap().is_empty());
        assert!(!follower.is_leader());
    }
    assert_eq!(commits(), v1, "a follower committed something while the leader's term was live");
}

//! A standby waiting for orphaned work on PostgreSQL is woken by the
//! orphan's NOTIFY, not by its poll interval: with a 20 s poll it sees the
//! orphan within a fraction of a second.

use crate::pg_support;

use dhp_core::envelope;
use dhp_core::{supervisor::Supervisor, Config, Runner};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn standby_is_woken_by_notify_not_by_polling() {
    let url = pg_support::fresh_url("standby");
    let cfg = Config::default();
    let w1 = Runner::open(&url, "w1", cfg.clone()).unwrap();
    let env = envelope::build("t", json!({"n": 1}), json!({}), Default::default()).unwrap();
    let hid = w1.dispatch(&env).unwrap();
    drop(w1.claim(&hid).unwrap());

    let standby = Runner::open(&url, "standby", cfg.clone()).unwrap();
    let waiter = std::thread::spawn(move || {
        // Nothing orphaned yet: the first check finds nothing and waits.
        let found = standby.wait_for_orphaned(Duration::from_secs(30), Duration::from_secs(20)).unwrap();
        (found, Instant::now())
    });
    // Orphan only once the standby listens: an orphan before its first
    // check would be found without any wake-up, and the test pass
    // vacuously. Its LISTEN is visible, done, in pg_stat_activity.
    let schema = url.rsplit("schema=").next().unwrap();
    let listening = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle' AND query = 'LISTEN dhp_orphaned_{schema}'"
    );
    let end = Instant::now() + Duration::from_secs(30);
    while pg_support::sql(&url, &listening) != [Some("1".to_string())] {
        assert!(Instant::now() < end, "the standby did not start listening within 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    dhp_testkit::store::expire_lease(&w1, &hid).unwrap();
    let sup = Supervisor::open(&url, "sup", cfg).unwrap();
    let t0 = Instant::now();
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "orphaned");
    let (found, woke) = waiter.join().unwrap();
    assert_eq!(found.as_deref(), Some(hid.as_str()));
    let latency = woke.saturating_duration_since(t0);
    eprintln!("orphan → standby woken in {latency:?}");
    assert!(latency < Duration::from_secs(2), "woken by NOTIFY, not the 20 s poll: {latency:?}");
}

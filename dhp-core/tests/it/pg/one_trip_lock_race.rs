//! The one-round-trip checkpoint and heartbeat (server-side functions) are
//! a compare-and-set under the handoff's lock: a writer that holds the lock
//! and moves the fence makes a checkpoint or heartbeat that waited for the
//! lock fail with `StaleFence`, never write. (Reads taken before the lock
//! was granted — one SQL statement's snapshot — would let it through.) A
//! checkpoint with steps never overwrites an envelope changed meanwhile.

use crate::pg_support;

use dhp_core::store::postgres::advisory_keys;
use dhp_core::store::StoreLocation;
use dhp_core::{Config, Error, Lease, Runner};
use serde_json::json;
use std::time::{Duration, Instant};

fn raw_client(url: &str) -> (postgres::Client, String) {
    let StoreLocation::Postgres(loc) = StoreLocation::parse(url).unwrap() else { panic!("not postgres") };
    (postgres::Client::connect(&loc.url, postgres::NoTls).unwrap(), loc.schema)
}

/// Wait until a session is blocked on the advisory lock `(k1, k2)`: the
/// worker is waiting for the lock the test holds. (A fixed sleep could
/// end before the worker even asked, and the check that it has not
/// finished would then pass vacuously.)
fn wait_for_lock_waiter(url: &str, (k1, k2): (i32, i32)) {
    let (mut probe, _) = raw_client(url);
    let sql = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
               AND classid = $1::int4::oid AND objid = $2::int4::oid AND objsubid = 2";
    let end = Instant::now() + Duration::from_secs(30);
    while probe.query_one(sql, &[&k1, &k2]).unwrap().get::<_, i64>(0) == 0 {
        assert!(Instant::now() < end, "nobody waited for the handoff's lock within 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_fence_moved_while_waiting_for_the_lock_is_seen() {
    let url = pg_support::fresh_url("onetrip_race");
    let r = Runner::open(&url, "w1", Config::default()).unwrap();
    let env = dhp_core::envelope::build("t", json!({}), json!({}), Default::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    assert_eq!(ctx.checkpoint(&json!({"i": 0})).unwrap(), 0);

    for op in ["checkpoint", "heartbeat"] {
        let (mut c, schema) = raw_client(&url);
        let (k1, k2) = advisory_keys(&schema, &hid);
        let mut t = c.transaction().unwrap();
        t.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&k1, &k2]).unwrap();
        t.execute(&format!("UPDATE {schema}.ownership SET fence = fence + 1, holder = 'w2' WHERE hid = $1"), &[&hid])
            .unwrap();
        let worker = {
            let (r, hid) = (r.clone(), hid.clone());
            std::thread::spawn(move || match op {
                "checkpoint" => r.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 1})).map(|_| ()),
                _ => r.heartbeat(&Lease::presented(&hid, 0).unwrap()).map(|_| ()),
            })
        };
        wait_for_lock_waiter(&url, (k1, k2));
        assert!(!worker.is_finished(), "{op} did not wait for the handoff's lock");
        t.commit().unwrap();
        let res = worker.join().unwrap();
        assert!(matches!(res, Err(Error::StaleFence { current: Some(_), .. })), "{op}: {res:?}");
        // Put the fence back for the next operation.
        c.execute(&format!("UPDATE {schema}.ownership SET fence = 0, holder = 'w1' WHERE hid = $1"), &[&hid]).unwrap();
    }
    assert_eq!(r.checkpoints(&hid).unwrap().len(), 1, "nothing written by the refused checkpoint");

    // A checkpoint that counts steps made its new envelope from the text
    // it read before the lock; the envelope changed meanwhile (10 steps
    // noted), so it must not overwrite it: the transaction runs instead
    // and adds its steps to the 10.
    let (mut c, schema) = raw_client(&url);
    let (k1, k2) = advisory_keys(&schema, &hid);
    let mut t = c.transaction().unwrap();
    t.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&k1, &k2]).unwrap();
    let sql = format!(
        "UPDATE {schema}.handoffs SET envelope_json = replace(envelope_json, '\"steps\": 0', '\"steps\": 10') \
         WHERE hid = $1"
    );
    assert_eq!(t.execute(&sql, &[&hid]).unwrap(), 1);
    let worker = {
        let (r, hid) = (r.clone(), hid.clone());
        std::thread::spawn(move || r.checkpoint_step(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 2}), 3))
    };
    wait_for_lock_waiter(&url, (k1, k2));
    assert!(!worker.is_finished(), "checkpoint_step did not wait for the handoff's lock");
    t.commit().unwrap();
    assert_eq!(worker.join().unwrap().unwrap().seq(), 1);
    assert_eq!(r.status(&hid).unwrap()["steps"], 13, "no lost update of the envelope");
}

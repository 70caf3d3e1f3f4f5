//! `dhp_checkpoint_v2` (fewer statements, a named result type) against
//! `dhp_checkpoint_v1`, called directly with the same sequence of
//! arguments on two handoffs in the same state: every row the same
//! (accepted, refused for each reason, over the cap, the progress row
//! missing), and the same rows left in the tables.

use crate::pg_support::{self, sql};
use dhp_core::{Config, Runner};
use serde_json::json;

/// One call of `f`, its row as text (the lease as "expired or not": the
/// two handoffs' leases differ by the time between their claims).
fn call((url, schema): (&str, &str), f: &str, hid: &str, holder: &str, fence: i64, i: i64, max: i64) -> String {
    let q = format!(
        "SELECT ROW(r.o_holder, r.o_fence, r.o_lease < r.now_s, r.o_interval, r.o_max_missed, \
         r.h_exists, r.h_status, r.next_seq, r.inserted, r.now_s > 0)::text \
         FROM \"{schema}\".{f}(7, 9, '{hid}', '{holder}', {fence}, '{{\"i\": {i}}}', 'hash{i}', 'at{i}', {max}) r"
    );
    sql(url, &q).into_iter().next().flatten().unwrap_or_default()
}

/// The sequence, on `hid` (claimed by w1, fence 0) and `idle` (never
/// claimed), with `f`; the rows, then what the tables hold.
fn sequence(r: &Runner, url: &str, schema: &str, f: &str, hid: &str, idle: &str) -> Vec<String> {
    let s = |q: String| sql(url, &q).into_iter().map(Option::unwrap_or_default).collect::<Vec<String>>();
    let mut out = vec![
        call((url, schema), f, hid, "w1", 1, 0, 10),             // another fence
        call((url, schema), f, hid, "w2", 0, 0, 10),             // another holder
        call((url, schema), f, &"0".repeat(64), "w1", 0, 0, 10), // no such handoff
        call((url, schema), f, idle, "w1", 0, 0, 10),            // never claimed
        call((url, schema), f, hid, "w1", 0, 0, 10),
        call((url, schema), f, hid, "w1", 0, 1, 10),
        call((url, schema), f, hid, "w1", 0, 2, 2), // the cap
    ];
    // The progress row missing (a store written by another implementation).
    s(format!("DELETE FROM \"{schema}\".progress WHERE hid = '{hid}'; SELECT 1"));
    out.push(call((url, schema), f, hid, "w1", 0, 3, 10));
    s(format!("UPDATE \"{schema}\".progress SET digest_repeat_count = 5, last_digest = 'd' WHERE hid = '{hid}'"));
    out.push(call((url, schema), f, hid, "w1", 0, 4, 10));
    // An expired lease, then a handoff no longer running.
    s(format!("UPDATE \"{schema}\".ownership SET lease_expires_at = 1 WHERE hid = '{hid}'"));
    out.push(call((url, schema), f, hid, "w1", 0, 5, 10));
    s(format!("UPDATE \"{schema}\".ownership SET lease_expires_at = 1e12 WHERE hid = '{hid}'"));
    r.suspend(hid).unwrap();
    out.push(call((url, schema), f, hid, "w1", 0, 6, 10));
    out.extend(s(format!(
        "SELECT string_agg(concat_ws(':', seq, state_json, state_hash, at), ',' ORDER BY seq) \
         FROM \"{schema}\".checkpoints WHERE hid = '{hid}'"
    )));
    out.extend(s(format!(
        "SELECT concat_ws('|', last_checkpoint_at > 0, last_checkpoint_at = updated_at, last_digest, \
         digest_repeat_count) FROM \"{schema}\".progress WHERE hid = '{hid}'"
    )));
    out.extend(s(format!("SELECT count(*)::text FROM \"{schema}\".checkpoints WHERE hid = '{idle}'")));
    out
}

#[test]
fn v2_returns_and_writes_what_v1_does() {
    let url = pg_support::fresh_url("cpv2");
    let schema = url.rsplit_once("schema=").unwrap().1.to_string();
    let r = Runner::open(&url, "w1", Config::default()).unwrap();
    let hids: Vec<String> = (0..4)
        .map(|i| {
            let env = dhp_core::envelope::build("t", json!({"n": i}), json!({}), Default::default()).unwrap();
            r.dispatch(&env).unwrap()
        })
        .collect();
    r.claim(&hids[0]).unwrap();
    r.claim(&hids[1]).unwrap();
    let v1 = sequence(&r, &url, &schema, "dhp_checkpoint_v1", &hids[0], &hids[2]);
    let v2 = sequence(&r, &url, &schema, "dhp_checkpoint_v2", &hids[1], &hids[3]);
    assert_eq!(v1, v2);
    // What the sequence was meant to exercise, seen in v1's rows.
    assert_eq!(v1[0], "(w1,0,f,2,3,t,running,,f,t)", "another fence: refused, no seq");
    assert_eq!(v1[2], "(,,,,,f,,,f,t)", "no such handoff");
    assert_eq!(v1[3], "(,,,,,t,pending,,f,t)", "never claimed");
    assert_eq!(v1[4], "(w1,0,f,2,3,t,running,0,t,t)");
    assert_eq!(v1[6], "(w1,0,f,2,3,t,running,2,f,t)", "over the cap: seq read, nothing written");
    assert_eq!(v1[7], "(w1,0,f,2,3,t,running,2,t,t)", "progress row re-created");
    assert_eq!(v1[9], "(w1,0,t,2,3,t,running,,f,t)", "expired");
    assert_eq!(v1[10], "(w1,0,f,2,3,t,suspended,,f,t)", "not running");
    assert_eq!(v1[11], "0:{\"i\": 0}:hash0:at0,1:{\"i\": 1}:hash1:at1,2:{\"i\": 3}:hash3:at3,3:{\"i\": 4}:hash4:at4");
    assert_eq!(v1[12], "t|t|d|0", "the stall clock and the digest counter reset, the digest kept");
    assert_eq!(v1[13], "0");
}

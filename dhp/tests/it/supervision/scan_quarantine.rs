//! Issue 11 item 2: one bad row must not stop the scan. The reference
//! dispatches an envelope nested 500 levels (serde_json alone stops at
//! 128: `dhp status` failed and every scan with it); beside it sit an
//! unrelated expired handoff, a row whose envelope is not JSON and one
//! with an unknown status. One `dhp supervisor` run orphans both real
//! handoffs and reports the two bad rows as quarantined, once each.
use crate::common::*;
use dhp_core::envelope::{self, now, BuildOptions};
use dhp_core::{Config, Runner};
use rusqlite::{params, Connection};
use serde_json::{json, Value};

const SHORT_ENV: &[(&str, &str)] =
    &[("DHP_LEASE_INTERVAL_S", "0.1"), ("DHP_LEASE_MAX_MISSED", "2"), ("DHP_SUPERVISOR_SCAN_S", "0.1")];

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!([v]);
    }
    v
}

#[test]
fn deep_corrupt_and_unknown_rows_do_not_stop_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    // 1. Deep envelope through the reference: dispatch, claim, lease expired.
    let inputs = dir.path().join("inputs.json");
    std::fs::write(&inputs, json!({"deep": nested(500)}).to_string()).unwrap();
    let deep = refctl_ok(
        &["dispatch", root, "--kind", "deep", "--inputs", &format!("@{}", inputs.display()), "--schema", "{}"],
        SHORT_ENV,
    )["hid"]
        .as_str()
        .unwrap()
        .to_string();
    refctl_ok(&["claim", root, &deep, "--runner", "py-w"], SHORT_ENV);
    refctl_ok(&["expire", root, &deep], &[]);

    // 2. An unrelated handoff of ours whose lease ran out.
    let cfg = Config { lease_interval_s: 0.1, lease_max_missed: 2, ..Config::default() };
    let r = Runner::open(root, "rs-w", cfg).unwrap();
    let env = envelope::build("plain", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let plain = r.dispatch(&env).unwrap();
    r.claim(&plain).unwrap();
    dhp_testkit::store::expire_lease(&r, &plain).unwrap();

    // 3. Two bad rows, written directly: not JSON (and holding an expired
    // lease, so the expired-lease query meets it), and an unknown status.
    let corrupt = "c".repeat(64);
    let unknown = "d".repeat(64);
    let c = Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    c.execute("INSERT INTO handoffs VALUES (?1, '{\"execution\": {\"status\": \"runn', ?2)", params![corrupt, now()])
        .unwrap();
    c.execute("INSERT INTO ownership VALUES (?1, 'ghost', 0, ?2, 0.1, 2, ?2)", params![corrupt, now() - 10.0]).unwrap();
    let mut weird = env.clone();
    weird["execution"]["status"] = json!("paused-by-operator");
    c.execute("INSERT INTO handoffs VALUES (?1, ?2, ?3)", params![unknown, weird.to_string(), now()]).unwrap();

    let (code, out, err) = dhp(&["supervisor", root, "sup-q", "0.5"], SHORT_ENV);
    assert_eq!(code, 0, "{err}");
    let acts = out["actions"].as_array().unwrap();
    let about = |hid: &str| -> Vec<&Value> { acts.iter().filter(|a| a["hid"] == hid).collect() };
    assert_eq!(about(&deep).len(), 1, "{out}");
    assert_eq!(about(&deep)[0]["action"], "orphaned");
    assert_eq!(about(&plain)[0]["action"], "orphaned", "{out}");
    for (hid, why) in [(&corrupt, "bad JSON"), (&unknown, "paused-by-operator")] {
        let a = about(hid);
        assert_eq!(a.len(), 1, "reported once, not once per scan: {out}");
        assert_eq!(a[0]["action"], "quarantined");
        assert!(a[0]["reason"].as_str().unwrap().contains(why), "{a:?}");
    }
    assert_eq!(out["metrics"]["quarantined"], 2, "{out}");
    assert_eq!(out["metrics"]["errors"], 0, "{out}");
    assert!(out["metrics"]["scans"].as_u64().unwrap() > 1);

    // `dhp status` reads the deep envelope; the reference recovers it.
    let (code, st, err) = dhp(&["status", root, &deep], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(st["status"], "orphaned");
    assert_eq!(refctl_ok(&["recover", root, &deep, "--runner", "py-w2"], SHORT_ENV)["fence"], 2);
    // The quarantined rows were left exactly as they were.
    let text: String =
        c.query_row("SELECT envelope_json FROM handoffs WHERE hid=?1", [&corrupt], |r| r.get(0)).unwrap();
    assert!(text.ends_with("\"runn"));
}

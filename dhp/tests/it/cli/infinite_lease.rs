//! Every duration has an upper bound and a typed error past it: no float
//! reaches `Duration::from_secs_f64` unchecked (it panicked with exit 101),
//! and no lease expiry written to the store is Inf (issue 11, item 3).
use crate::cli_support::*;
use crate::common;

#[test]
fn huge_lease_interval_is_a_config_error_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    let before = common::dump(&root);
    for (k, v) in [
        ("DHP_LEASE_INTERVAL_S", "1e308"),
        ("DHP_LEASE_INTERVAL_S", "inf"),
        ("DHP_LEASE_INTERVAL_S", "86401"),
        ("DHP_LEASE_MAX_MISSED", "1001"),
        ("DHP_SUPERVISOR_SCAN_S", "1e20"),
        ("DHP_STALL_TIMEOUT_S", "1e20"),
    ] {
        let msg = failed(&run(&["work", r, "--runner", "w1", "claim", &hid], &[(k, v)]), 11, "ConfigError");
        assert!(msg.contains(k) && msg.len() < 200, "{k}={v}: {msg}");
        assert_eq!(before, common::dump(&root), "{k}={v} changed the store");
    }
}

#[test]
fn huge_duration_flags_are_usage_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    let before = common::dump(&root);
    let logdir = dir.path().join("logs");
    let cases: Vec<Vec<&str>> = vec![
        vec!["work", r, "--runner", "w1", "claim", &hid, "--pace", "1e20"],
        vec!["work", r, "--runner", "w1", "claim", &hid, "--pace=-1"],
        vec!["work", r, "--runner", "w1", "claim", &hid, "--ship-to", "127.0.0.1:9", "--ship-timeout", "1e20"],
        vec!["supervisor", r, "sup", "1e20"],
        vec!["supervisor", r, "sup", "NaN"],
        vec!["transport", logdir.to_str().unwrap(), "--idle-timeout", "1e20"],
    ];
    for args in cases {
        let msg = failed(&run(&args, &[]), 2, "UsageError");
        assert!(msg.contains("out of range"), "{args:?}: {msg}");
        assert_eq!(before, common::dump(&root), "{args:?} changed the store");
    }
    assert!(!logdir.exists(), "a refused transport created its log dir");
}

#[test]
fn the_longest_allowed_lease_is_finite_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let env = [("DHP_LEASE_INTERVAL_S", "86400"), ("DHP_LEASE_MAX_MISSED", "1000")];
    let w = run(&["work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid, "--stop-after", "1"], &env);
    assert_eq!(w.code, 3, "stopped after one checkpoint: {w:?}");
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let (exp, interval): (f64, f64) = c
        .query_row("SELECT lease_expires_at, heartbeat_interval_s FROM ownership WHERE hid=?1", [&hid], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(exp.is_finite() && interval == 86400.0, "{exp} {interval}");
}

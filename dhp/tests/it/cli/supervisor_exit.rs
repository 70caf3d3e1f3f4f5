//! `dhp supervisor` exits non-zero and says why when every scan failed
//! (a store that refuses writes: corrupt, disk full), and 0 when scans
//! worked (issue 11, item 8).
use crate::cli_support::*;

#[test]
fn every_scan_failing_is_an_error_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    // Healthy store: a short watch is a success.
    let ok = run(&["--json", "supervisor", r, "sup", "0.3"], &[]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(ok.json()["metrics"]["scans"].as_u64().unwrap_or(0) >= 1, "{ok:?}");
    // Every write to the leadership row now fails, like a full disk would:
    // no scan can even take leadership.
    {
        let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
        c.execute_batch(
            "CREATE TRIGGER full_i BEFORE INSERT ON leadership BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
             CREATE TRIGGER full_u BEFORE UPDATE ON leadership BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
        )
        .unwrap();
    }
    // Each failed scan is logged at ERROR; the run ends with the one line.
    let env = [("DHP_SUPERVISOR_SCAN_S", "0.1")];
    let logged = run(&["supervisor", r, "sup2", "0.3"], &env);
    assert_eq!(logged.code, 11, "{logged:?}");
    assert!(logged.stderr.lines().last().unwrap_or("").starts_with("dhp: StoreError: every scan failed"), "{logged:?}");
    let bad = run(&["--json", "--log", "off", "supervisor", r, "sup2", "0.3"], &env);
    let msg = failed_json(&bad, 11, "StoreError");
    assert!(msg.contains("every scan failed") && msg.contains("disk is full"), "{msg}");
}

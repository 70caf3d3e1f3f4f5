//! `dhp dashboard` never writes to the store: a session that reads every
//! endpoint (pages, details, the event stream, logins) leaves the store's
//! file byte for byte as it was and every row unchanged, and its
//! connection refuses a write.
use crate::common::*;
use crate::dashboard_support::*;
use dhp_core::store::dashboard_view::View;

#[test]
fn the_store_file_is_unchanged_and_writes_are_impossible() {
    let dir = tempfile::tempdir().unwrap();
    let by = fill(dir.path(), 300);
    let db = dir.path().join("dhp.sqlite3");
    let (bytes, rows) = (std::fs::read(&db).unwrap(), dump(dir.path()));
    let d = Dash::start(dir.path(), &[]);
    let r = d.request("GET", &format!("/login?token={TOKEN}"), &[], "");
    assert_eq!(r.status, 303);
    for status in ["", "running", "failed"] {
        assert_eq!(d.get(&format!("/api/handoffs?status={status}&limit=500")).status, 200);
    }
    for hids in by.values() {
        for h in hids.iter().take(20) {
            assert_eq!(d.get(&format!("/api/handoff/{h}")).status, 200);
        }
    }
    let head = events_until(d.port, &[("Authorization", &format!("Bearer {TOKEN}"))], "event: summary");
    assert!(head.contains("event: summary"), "{head}");
    std::thread::sleep(std::time::Duration::from_millis(500)); // polls ran
    let (code, _, err) = d.stop();
    assert_eq!(code, 0, "{err}");
    // the WAL first: a later reader's connection would fold it into the file
    let wal = dir.path().join("dhp.sqlite3-wal");
    assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0, "the dashboard wrote WAL frames");
    assert!(std::fs::read(&db).unwrap() == bytes, "the dashboard changed {}", db.display());
    assert_eq!(dump(dir.path()), rows);

    // the view's own connection cannot write, even when asked to
    let v = View::open(dir.path()).unwrap();
    let e = v.try_write().expect_err("a read-only connection wrote");
    assert!(e.to_string().contains("readonly") || e.to_string().contains("read-only"), "{e}");
    assert_eq!(dump(dir.path()), rows);
}

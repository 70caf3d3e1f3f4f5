//! Clock faults rest on libfaketime reaching our Rust binaries: preloaded,
//! it must move the wall clock `dhp` reads (`clock_gettime` through
//! std's SystemTime). A handoff dispatched an hour ahead says so.
use crate::common::*;

#[test]
fn a_preloaded_libfaketime_moves_dhps_clock() {
    let lib = dhp_chaos::clock::libfaketime().expect("libfaketime (Debian package faketime) must be installed");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let dhp = dhp_bin(); // built before the clock starts
    let before = chrono::Utc::now();
    let out = std::process::Command::new(dhp)
        .args(["--json", "dispatch", "--create"])
        .arg(&root)
        .args(["--census", "0,100,10"])
        .env("LD_PRELOAD", &lib)
        .env("FAKETIME", "+3600s")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let db = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let env: String = db.query_row("SELECT envelope_json FROM handoffs", [], |r| r.get(0)).unwrap();
    let env: serde_json::Value = serde_json::from_str(&env).unwrap();
    let created = env["provenance"]["created_at"].as_str().unwrap();
    let created = chrono::DateTime::parse_from_rfc3339(created).unwrap();
    let ahead = (created.with_timezone(&chrono::Utc) - before).num_seconds();
    assert!((3590..=3660).contains(&ahead), "created_at {created} is {ahead}s after the real start");
}

//! Issue 11 item 2, the listing: `dhp status ROOT` lists a row whose
//! envelope is not JSON as quarantined and still lists every other
//! handoff (it used to fail the whole listing). A store-wide failure still
//! fails the command.
use crate::common::*;
use dhp_core::envelope::{self, now, BuildOptions};
use dhp_core::{Config, Runner};
use rusqlite::{params, Connection};
use serde_json::json;

#[test]
fn one_corrupt_row_does_not_hide_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let r = Runner::open(root, "w1", Config::default()).unwrap();
    let env = envelope::build("plain", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let good = r.dispatch(&env).unwrap();
    let corrupt = "c".repeat(64);
    let c = Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    c.execute("INSERT INTO handoffs VALUES (?1, '{\"execution\": {\"status\": \"runn', ?2)", params![corrupt, now()])
        .unwrap();
    drop(c);

    let (code, v, err) = dhp(&["status", root], &[]);
    assert_eq!(code, 0, "{err}");
    let rows = v["handoffs"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let by_id = |id: &str| rows.iter().find(|r| r["handoff_id"] == id).unwrap_or_else(|| panic!("{id} missing: {v}"));
    assert_eq!(by_id(&good)["status"], "pending");
    assert_eq!(by_id(&corrupt)["status"], "quarantined");
    assert!(by_id(&corrupt)["error"].as_str().unwrap().contains("Error"), "{v}");

    // A store that is not a database at all is still an error, not a list.
    std::fs::write(dir.path().join("dhp.sqlite3"), vec![0x42u8; 8192]).unwrap();
    let _ = std::fs::remove_file(dir.path().join("dhp.sqlite3-wal"));
    let _ = std::fs::remove_file(dir.path().join("dhp.sqlite3-shm"));
    let (code, _, err) = dhp(&["status", root], &[]);
    assert_eq!(code, 11, "{err}");
}

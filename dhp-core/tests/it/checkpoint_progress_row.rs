//! A checkpoint restarts the stall clock and zeroes the digest counter in
//! one upsert (no read of the progress row first): the last digest stays,
//! and a handoff's first checkpoint makes the row.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Runner};
use serde_json::json;

type Row = (Option<f64>, Option<String>, i64);

fn row(root: &std::path::Path, hid: &str) -> Row {
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    c.query_row("SELECT last_checkpoint_at, last_digest, digest_repeat_count FROM progress WHERE hid=?1", [hid], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .unwrap()
}

#[test]
fn a_checkpoint_keeps_the_digest_and_zeroes_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let build = |n| envelope::build("t", json!({"inline": {"n": n}}), json!({}), BuildOptions::default()).unwrap();
    let (a, b) = (r.dispatch(&build(1)).unwrap(), r.dispatch(&build(2)).unwrap());
    let (ca, cb) = (r.claim(&a).unwrap(), r.claim(&b).unwrap());
    ca.checkpoint(&json!({"k": 0})).unwrap();
    let (at, digest, count) = row(dir.path(), a.as_str());
    assert!(at.is_some());
    assert_eq!((digest, count), (None, 0), "the first checkpoint makes the row");
    assert_eq!(cb.note_activity("d").unwrap(), 1);
    assert_eq!(cb.note_activity("d").unwrap(), 2);
    assert_eq!(row(dir.path(), b.as_str()), (None, Some("d".into()), 2));
    cb.checkpoint(&json!({"k": 1})).unwrap();
    let (at, digest, count) = row(dir.path(), b.as_str());
    assert!(at.is_some());
    assert_eq!((digest.as_deref(), count), (Some("d"), 0));
    // The kept digest repeats from 0.
    assert_eq!(cb.note_activity("d").unwrap(), 1);
}

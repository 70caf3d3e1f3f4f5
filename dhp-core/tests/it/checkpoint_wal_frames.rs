//! Issue 21: a checkpoint's commit writes the pages of the rows it changes
//! (the checkpoint row and its two indexes, the progress row) and no index
//! page of dhp-rs's: the WAL grows by about four frames per checkpoint,
//! not five. A store with the old full `dhprs_progress_updated` index
//! (older dhp-rs) loses it when dhp-rs opens it.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::store::SqliteStore;
use dhp_core::{Config, Runner};
use serde_json::json;

/// WAL frames so far (header 32 bytes, each frame 24 + a 4 KiB page).
fn wal_frames(root: &std::path::Path) -> u64 {
    let len = std::fs::metadata(root.join("dhp.sqlite3-wal")).unwrap().len();
    (len - 32) / (24 + 4096)
}

fn index_exists(root: &std::path::Path, name: &str) -> bool {
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    c.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name=?1", [name], |r| r.get::<_, i64>(0))
        .unwrap()
        == 1
}

#[test]
fn a_checkpoint_commits_no_dhprs_index_page() {
    let dir = tempfile::tempdir().unwrap();
    // A store as an older dhp-rs left it: the full progress index.
    drop(SqliteStore::open(dir.path()).unwrap());
    let c = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    c.execute_batch("CREATE INDEX IF NOT EXISTS dhprs_progress_updated ON progress(updated_at, hid)").unwrap();
    drop(c);
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    assert!(!index_exists(dir.path(), "dhprs_progress_updated"), "dropped on open");
    assert!(index_exists(dir.path(), "dhprs_checkpoints_first"));
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    // The first checkpoint creates the progress row and its seq-0 entry.
    ctx.checkpoint(&json!({"k": 0})).unwrap();
    let before = wal_frames(dir.path());
    let n = 40;
    for k in 1..=n {
        ctx.checkpoint(&json!({"k": k})).unwrap();
    }
    let per = (wal_frames(dir.path()) - before) as f64 / n as f64;
    // 4 pages each (checkpoints table, its primary key, idx_checkpoints_hid,
    // progress row), plus an occasional page split of the growing tables;
    // with the full progress index it was 5 and more.
    assert!(per < 4.5, "{per} WAL frames per checkpoint");
}

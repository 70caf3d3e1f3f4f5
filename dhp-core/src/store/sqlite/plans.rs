//! The query plans of what a supervisor pass runs with nothing to do: each
//! must read an index range (what expired, what changed, one hid), never a
//! whole table, or a no-op pass costs time per running handoff. SQLite's
//! plans are deterministic for a schema (no `ANALYZE` statistics are kept),
//! so they are asserted here with `EXPLAIN QUERY PLAN`.

use super::sql::{APPROVALS_TO_EXPIRE, CHANGED_SINCE, EXPIRED_LEASES, PAIRING_OF};
use super::{SqliteStore, EXTRA_INDEXES_SQL};
use crate::envelope::ORPHANED_HOLDER;

/// The plan's detail lines for `sql`, its parameters bound to NULL.
fn plan(store: &SqliteStore, sql: &str) -> Vec<String> {
    let c = store.conn.lock().unwrap();
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let n = st.parameter_count();
    let rows = st
        .query_map(rusqlite::params_from_iter(std::iter::repeat_n(rusqlite::types::Null, n)), |r| r.get::<_, String>(3))
        .unwrap();
    rows.map(|r| r.unwrap()).collect()
}

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    (dir, s)
}

/// Every table access is a SEARCH (an index range or key), none a SCAN.
fn no_scan(p: &[String]) {
    assert!(p.iter().all(|d| !d.starts_with("SCAN")), "a full scan in {p:#?}");
}

fn uses(p: &[String], needle: &str) {
    assert!(p.iter().any(|d| d.contains(needle)), "{needle:?} not in {p:#?}");
}

#[test]
fn expired_leases_read_the_partial_lease_index() {
    let (_d, s) = store();
    let p = plan(&s, EXPIRED_LEASES);
    no_scan(&p);
    uses(&p, "SEARCH o USING INDEX dhprs_ownership_lease (lease_expires_at<?)");
    // One lookup per expired lease (the status index holds status and hid).
    uses(&p, "SEARCH h USING INDEX dhprs_handoffs_status (<expr>=? AND hid=?)");
    // The index's WHERE is the query's holder test, spelled the same.
    assert_eq!(ORPHANED_HOLDER, "__orphaned__");
    assert!(EXTRA_INDEXES_SQL.contains("WHERE holder != '__orphaned__'"));
}

#[test]
fn changes_are_four_covering_index_ranges() {
    let (_d, s) = store();
    let p = plan(&s, CHANGED_SINCE);
    no_scan(&p);
    for t in ["handoffs", "ownership"] {
        uses(&p, &format!("USING COVERING INDEX dhprs_{t}_updated (updated_at>?)"));
    }
    // The partial indexes: their WHERE is the query's, spelled the same.
    uses(&p, "USING COVERING INDEX dhprs_progress_repeats (updated_at>?)");
    uses(&p, "USING COVERING INDEX dhprs_checkpoints_first (at>?)");
    assert!(EXTRA_INDEXES_SQL.contains("WHERE digest_repeat_count > 0"));
    assert!(EXTRA_INDEXES_SQL.contains("WHERE seq = 0"));
}

#[test]
fn approval_expiry_reads_the_pending_index() {
    let (_d, s) = store();
    let p = plan(&s, APPROVALS_TO_EXPIRE);
    no_scan(&p);
    uses(&p, "dhprs_approvals_pending (expires_at<?)");
}

#[test]
fn one_pairing_is_two_key_lookups() {
    let (_d, s) = store();
    let p = plan(&s, PAIRING_OF);
    no_scan(&p);
    uses(&p, "SEARCH h USING INDEX sqlite_autoindex_handoffs_1 (hid=?)");
    uses(&p, "SEARCH o USING INDEX sqlite_autoindex_ownership_1 (hid=?)");
}

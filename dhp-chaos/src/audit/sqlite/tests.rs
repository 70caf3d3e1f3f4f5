//! The SQLite audit records a replaced row as `REPLACE`, once, and nothing
//! for an insert that did not happen.

use super::{install, read, PENDING};
use rusqlite::Connection;

/// The reference's DDL as docs/PROTOCOL.md §3.1 gives it (the spec's text,
/// not an implementation's).
fn spec_ddl() -> &'static str {
    const DOC: &str = include_str!("../../../../docs/PROTOCOL.md");
    let s = &DOC[DOC.find("### 3.1 SQLite").expect("PROTOCOL.md §3.1")..];
    let a = s.find("```sql\n").expect("§3.1's sql block") + "```sql\n".len();
    &s[a..a + s[a..].find("```").expect("the block's end")]
}

/// A store with the reference's tables and the audit.
fn store() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().expect("tempdir");
    let db = d.path().join("dhp.sqlite3");
    let c = Connection::open(&db).expect("open");
    c.execute_batch(spec_ddl()).expect("schema");
    drop(c);
    install(&db).expect("install");
    (d, db)
}

fn ops(db: &std::path::Path) -> Vec<(String, String, Option<String>)> {
    read(db)
        .expect("read")
        .expect("audit present")
        .into_iter()
        .map(|e| (e.table, e.op, e.old.and_then(|o| o.get("holder").and_then(|h| h.as_str()).map(String::from))))
        .collect()
}

const TAKE: &str = "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, 1e10, 0)";

#[test]
fn insert_or_replace_and_replace_into_are_recorded_as_replace() {
    let (_d, db) = store();
    let c = Connection::open(&db).expect("open");
    c.execute(TAKE, ["sup-a"]).expect("take");
    c.execute(&TAKE.replace("INSERT", "INSERT OR REPLACE"), ["sup-b"]).expect("insert or replace");
    c.execute(&TAKE.replace("INSERT", "REPLACE"), ["sup-c"]).expect("replace into");
    let got = ops(&db);
    let want = [
        ("leadership", "INSERT", None),
        ("leadership", "REPLACE", Some("sup-a")),
        ("leadership", "INSERT", None),
        ("leadership", "REPLACE", Some("sup-b")),
        ("leadership", "INSERT", None),
    ];
    let want: Vec<_> = want.iter().map(|(t, o, h)| (t.to_string(), o.to_string(), h.map(String::from))).collect();
    assert_eq!(got, want);
}

#[test]
fn composite_key_replace_names_the_replaced_checkpoint_only() {
    let (_d, db) = store();
    let c = Connection::open(&db).expect("open");
    let put =
        "INSERT OR REPLACE INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES ('h', ?1, ?2, 'x', 't')";
    c.execute(put, rusqlite::params![0, "{}"]).expect("seq 0");
    c.execute(put, rusqlite::params![1, "{}"]).expect("seq 1");
    c.execute(put, rusqlite::params![0, "{\"again\":1}"]).expect("seq 0 again");
    let evs = read(&db).expect("read").expect("audit");
    let got: Vec<(String, Option<i64>)> =
        evs.iter().map(|e| (e.op.clone(), e.row().and_then(|r| r.get("seq")).and_then(|s| s.as_i64()))).collect();
    let want = [("INSERT", 0), ("INSERT", 1), ("REPLACE", 0), ("INSERT", 0)];
    assert_eq!(got, want.iter().map(|(o, s)| (o.to_string(), Some(*s))).collect::<Vec<_>>());
}

#[test]
fn ignored_inserts_upserts_and_failed_inserts_record_no_replace() {
    let (_d, db) = store();
    let c = Connection::open(&db).expect("open");
    c.execute(TAKE, ["sup-a"]).expect("take");
    c.execute(&TAKE.replace("INSERT", "INSERT OR IGNORE"), ["sup-b"]).expect("ignored");
    assert!(c.execute(TAKE, ["sup-b"]).is_err(), "a plain insert of a taken key fails");
    c.execute(&format!("{TAKE} ON CONFLICT(id) DO UPDATE SET holder = excluded.holder"), ["sup-b"]).expect("upsert");
    c.execute("DELETE FROM leadership", []).expect("resign");
    c.execute(TAKE, ["sup-c"]).expect("take again");
    let got: Vec<String> = ops(&db).into_iter().map(|(_, o, _)| o).collect();
    assert_eq!(got, ["INSERT", "UPDATE", "DELETE", "INSERT"]);
    let stale: i64 = c.query_row(&format!("SELECT count(*) FROM {PENDING}"), [], |r| r.get(0)).expect("pending");
    assert_eq!(stale, 0, "the DELETE dropped the stash the ignored insert left");
}

#[test]
fn recursive_triggers_record_the_replaced_row_once_as_delete() {
    let (_d, db) = store();
    let c = Connection::open(&db).expect("open");
    c.execute_batch("PRAGMA recursive_triggers = ON").expect("pragma");
    c.execute(TAKE, ["sup-a"]).expect("take");
    c.execute(&TAKE.replace("INSERT", "INSERT OR REPLACE"), ["sup-b"]).expect("replace");
    let got: Vec<(String, Option<String>)> = ops(&db).into_iter().map(|(_, o, h)| (o, h)).collect();
    assert_eq!(
        got,
        [("INSERT".to_string(), None), ("DELETE".to_string(), Some("sup-a".to_string())), ("INSERT".to_string(), None)]
    );
}

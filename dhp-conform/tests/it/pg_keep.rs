//! `--keep` keeps the PostgreSQL schemas of each assertion (for a look
//! afterwards); a base URL that already names a schema is refused.
use crate::common::*;
use crate::pg_common;

#[test]
fn keep_leaves_the_schemas() {
    let db = pg_common::FreshDb::new("keep");
    let run = conform(&["--store", &db.url, "--keep", "--exact", "no-crossed-inputs", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kept = db.runner_schemas();
    assert_eq!(kept.len(), 1, "one store, one schema kept: {kept:?}");
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    let n: i64 = c.query_one(&format!("SELECT COUNT(*) FROM \"{}\".handoffs", kept[0]), &[]).unwrap().get(0);
    assert!(n > 0, "the kept schema holds the assertion's handoffs");
}

#[test]
fn a_base_url_with_a_schema_is_a_usage_error() {
    let db = pg_common::FreshDb::new("badurl");
    let run = conform(&["--store", &format!("{}?schema=mine", db.url)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("without schema="), "{}", run.stderr);
    assert!(run.stderr.contains(":***@"), "the password is masked: {}", run.stderr);
}

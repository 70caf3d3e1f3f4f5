//! An implementation that cannot take a PostgreSQL store location (the
//! Python reference declares no `postgres-store`) is reported as
//! unsupported — skipped with the reason — never failed, and is not given
//! PostgreSQL locations at all.
use crate::common::*;
use crate::pg_common;

#[test]
fn reference_on_postgres_is_unsupported_not_failed() {
    let db = pg_common::FreshDb::new("reference");
    let run = conform(&["--impl", "reference", "--store", &db.url, "--level", "core", "--format", "json"]);
    let outcomes = run.outcomes();
    assert!(!outcomes.is_empty(), "{}", run.stderr);
    for ((_, a), (o, m)) in &outcomes {
        assert_eq!(o, "skipped", "{a}: {m}");
        assert!(m.contains("unsupported") && m.contains("postgres-store"), "{a}: {m}");
    }
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.runner_schemas(), Vec::<String>::new(), "no schema handed out to the reference");
}

#[test]
fn cross_store_into_postgres_is_unsupported_for_the_reference() {
    // ours@postgres writes a shared store the reference cannot open;
    // the log and bundle handoffs need no shared store and still run.
    let db = pg_common::FreshDb::new("refcross");
    let run = conform(&["--store", &db.url, "--cross", "reference", "--level", "cross", "--format", "json"]);
    let outcomes = run.outcomes();
    let (o, m) = &outcomes[&("ours->reference".to_string(), "cross-store".to_string())];
    assert_eq!(o, "skipped", "{m}");
    assert!(m.contains("postgres-store"), "{m}");
    for a in ["cross-log", "cross-bundle"] {
        for pair in ["ours->reference", "reference->ours"] {
            let (o, m) = &outcomes[&(pair.to_string(), a.to_string())];
            assert_eq!(o, "passed", "{a} {pair}: {m}\n{}", run.stderr);
        }
    }
}

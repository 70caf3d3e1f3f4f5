//! The cross level between ours on SQLite and ours on PostgreSQL: two
//! `--store` give two implementations under test (`ours@sqlite`,
//! `ours@postgres`), and each continues the other's store, transport log
//! and bundle.
use crate::common::*;
use crate::pg_common;

#[test]
fn ours_on_sqlite_and_ours_on_postgres_continue_each_other() {
    let db = pg_common::FreshDb::new("cross");
    let dir = tempfile::tempdir().unwrap();
    let run =
        conform(&["--store", dir.path().to_str().unwrap(), "--store", &db.url, "--level", "cross", "--format", "json"]);
    let outcomes = run.outcomes();
    let mut pairs: Vec<(String, String)> = outcomes.keys().cloned().collect();
    pairs.sort();
    let want: Vec<(String, String)> = ["cross-bundle", "cross-log", "cross-store"]
        .iter()
        .flat_map(|a| {
            ["ours@postgres->ours@sqlite", "ours@sqlite->ours@postgres"].map(|p| (p.to_string(), a.to_string()))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(pairs, want, "{}", run.stderr);
    let bad: Vec<_> = outcomes.iter().filter(|(_, (o, _))| o != "passed").collect();
    assert!(bad.is_empty(), "cross between engines: {bad:#?}\n{}", run.stderr);
    assert_eq!(run.code, 0);
    assert_eq!(db.runner_schemas(), Vec::<String>::new(), "schemas left behind");
}

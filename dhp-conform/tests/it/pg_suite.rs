//! The whole suite passes for ours on PostgreSQL (`--store postgres://…`):
//! every assertion runs, none is skipped, and every schema handed out is
//! dropped afterwards.
use crate::common::*;
use crate::pg_common;

#[test]
fn the_whole_suite_passes_for_ours_on_postgres() {
    let db = pg_common::FreshDb::new("suite");
    let run = conform(&["--store", &db.url, "--format", "json"]);
    let outcomes = run.outcomes();
    assert_eq!(outcomes.len(), assertion_names().len(), "every assertion ran: {outcomes:?}");
    let bad: Vec<_> = outcomes.iter().filter(|(_, (o, _))| o != "passed").collect();
    assert!(bad.is_empty(), "not passed on PostgreSQL: {bad:#?}\n{}", run.stderr);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("postgres-store") || run.stdout.contains("postgres-store"), "{}", run.stderr);
    assert_eq!(db.runner_schemas(), Vec::<String>::new(), "schemas left behind without --keep");
}

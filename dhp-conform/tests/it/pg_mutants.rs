//! Every assertion can fail on PostgreSQL too: for each mutant of our
//! adapter (one guarantee removed), the full suite run with
//! `--store postgres://…` fails exactly the assertion that guards that
//! guarantee, and nothing else fails, errors or is skipped.
use crate::common::mutants::assert_each_mutant_fails_exactly_its_assertion;
use crate::pg_common;

// About 40 full suites: the nightly workflow runs it (`--ignored`); the
// test command runs the whole suite on PostgreSQL once (pg_suite.rs).
#[test]
#[ignore = "nightly: every mutant on PostgreSQL (~40 suites); run with --ignored"]
fn each_mutant_fails_exactly_its_assertion_on_postgres() {
    let db = pg_common::FreshDb::new("mutants");
    assert_each_mutant_fails_exactly_its_assertion(&["--store", &db.url]);
}

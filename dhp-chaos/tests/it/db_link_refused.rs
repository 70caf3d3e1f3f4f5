//! `db-link` faults put a proxy between the workers and PostgreSQL: they are
//! refused, with a clear message and exit 2 before anything starts, on a
//! SQLite store and for a server URL the proxy cannot stand in for (a Unix
//! socket, a `host=` parameter). The password is never printed.
use crate::common::*;

fn refused(name: &str, args: &[&str]) -> Run {
    let r = run_chaos(name, args);
    assert_eq!(r.code, 2, "must be refused (exit 2)\n{}", r.dump());
    assert!(r.results.is_null(), "no round may run\n{}", r.dump());
    r
}

#[test]
fn db_link_faults_are_refused_where_there_is_no_database_link_to_cut() {
    let r = refused("dbl-sqlite", &["--faults", "kill-worker=1,db-link=1", "--handoffs", "1"]);
    assert!(r.stderr.contains("db-link") && r.stderr.contains("--store postgres"), "{}", r.dump());
    let r = refused("dbl-nemesis", &["--nemesis", "kill,db-link", "--handoffs", "1"]);
    assert!(r.stderr.contains("db-link") && r.stderr.contains("--store postgres"), "{}", r.dump());

    // no server is contacted: the URLs need not answer
    let r = refused(
        "dbl-socket",
        &["--store", "postgres://u:secret@%2Ftmp%2Fpgsock/dhp", "--faults", "db-link=1", "--handoffs", "1"],
    );
    assert!(r.stderr.contains("Unix socket"), "{}", r.dump());
    assert!(!r.stderr.contains("secret"), "the password must not be printed\n{}", r.dump());
    let r = refused(
        "dbl-hostparam",
        &["--store", "postgres://u:secret@127.0.0.1:9/dhp?host=/tmp", "--faults", "db-link=1", "--handoffs", "1"],
    );
    assert!(r.stderr.contains("host="), "{}", r.dump());
    assert!(!r.stderr.contains("secret"), "the password must not be printed\n{}", r.dump());
}

//! Database faults are refused, with a clear message and a non-zero exit,
//! where the harness cannot inflict them: on a SQLite store, and on an
//! existing server (`--store postgres://…`) without `--pg-data`, or with a
//! `--pg-data` that is not that server's cluster. Nothing is started.
use crate::common::*;

fn refused(name: &str, args: &[&str]) -> Run {
    let r = run_chaos(name, args);
    assert_eq!(r.code, 2, "must be refused (exit 2)\n{}", r.dump());
    assert!(r.results.is_null(), "no round may run\n{}", r.dump());
    r
}

#[test]
fn database_faults_are_refused_where_the_harness_cannot_inflict_them() {
    let r = refused("dbf-sqlite", &["--faults", "kill-worker=1,db-crash=1", "--handoffs", "1"]);
    assert!(r.stderr.contains("db-crash") && r.stderr.contains("need a PostgreSQL store"), "{}", r.dump());

    // no server is contacted: the URL need not answer
    let url = "postgres://u:secret@127.0.0.1:9/dhp";
    let r = refused("dbf-url", &["--store", url, "--faults", "db-stall=1,db-terminate-backend=2", "--handoffs", "1"]);
    assert!(
        r.stderr.contains("need --pg-data DIR") && r.stderr.contains("db-stall, db-terminate-backend"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("secret"), "the password must not be printed\n{}", r.dump());

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let r = refused("dbf-baddir", &["--store", url, "--pg-data", d, "--faults", "db-crash=1", "--handoffs", "1"]);
    assert!(r.stderr.contains("not a scripts/pg.sh cluster directory"), "{}", r.dump());

    // a cluster directory of another server (another port)
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/PG_VERSION"), "16\n").unwrap();
    std::fs::write(dir.path().join("port"), "5999\n").unwrap();
    let r = refused("dbf-port", &["--store", url, "--pg-data", d, "--faults", "db-crash=1", "--handoffs", "1"]);
    assert!(r.stderr.contains("port 5999") && r.stderr.contains("port 9"), "{}", r.dump());

    let r = refused("dbf-sqlite-data", &["--pg-data", d, "--handoffs", "1"]);
    assert!(r.stderr.contains("--pg-data"), "{}", r.dump());
}

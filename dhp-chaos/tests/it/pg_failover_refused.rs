//! `--pg-cluster` and `db-failover` are refused where they make no sense,
//! with a message and exit 2, before anything starts: `db-failover`
//! without a replicated cluster, `--pg-cluster` on SQLite or on a server
//! the run does not own, `db-crash` / `db-link` on the cluster, and
//! pg_auto_failover's faults or async replication without/with its manager.
use crate::common::*;

fn refused(name: &str, args: &[&str], says: &str) {
    let r = run_chaos(name, args);
    assert_eq!(r.code, 2, "must be refused (exit 2)\n{}", r.dump());
    assert!(r.results.is_null(), "no round may run\n{}", r.dump());
    assert!(r.stderr.contains(says), "{says:?} not said\n{}", r.dump());
    assert!(!r.stderr.contains("secret"), "the password must not be printed\n{}", r.dump());
}

#[test]
fn failover_flags_are_refused_where_they_make_no_sense() {
    let one = ["--handoffs", "1"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { extra.iter().chain(one.iter()).copied().collect() };
    refused(
        "pgf-nocluster",
        &with(&["--store", "postgres", "--faults", "db-failover=1"]),
        "db-failover and db-switchover need a replicated cluster",
    );
    refused(
        "pgf-sqlite",
        &with(&["--pg-cluster", "sync", "--faults", "kill-worker=1"]),
        "--pg-cluster starts a replicated cluster",
    );
    refused(
        "pgf-url",
        &with(&[
            "--store",
            "postgres://u:secret@127.0.0.1:9/dhp",
            "--pg-cluster",
            "async",
            "--faults",
            "kill-worker=1",
        ]),
        "it needs --store postgres",
    );
    refused(
        "pgf-crash",
        &with(&["--store", "postgres", "--pg-cluster", "sync", "--faults", "db-crash=1"]),
        "on the replicated cluster use db-failover",
    );
    refused(
        "pgf-link",
        &with(&["--store", "postgres", "--pg-cluster", "sync", "--faults", "db-link=1"]),
        "db-link proxies one server",
    );
    refused("pgf-value", &with(&["--store", "postgres", "--pg-cluster", "quorum"]), "quorum");
    // pg_auto_failover's faults need its cluster; it runs quorum-synchronous replication only
    refused(
        "pgf-auto-only",
        &with(&["--store", "postgres", "--pg-cluster", "sync", "--faults", "db-primary-partition=1"]),
        "db-primary-partition needs a cluster under a real failover manager",
    );
    refused(
        "pgf-auto-async",
        &with(&["--store", "postgres", "--pg-cluster", "async", "--failover-manager", "pg_auto_failover"]),
        "quorum-synchronous",
    );
    refused(
        "pgf-auto-nocluster",
        &with(&["--store", "postgres", "--failover-manager", "pg_auto_failover"]),
        "--pg-cluster",
    );
    refused(
        "pgf-auto-value",
        &with(&["--store", "postgres", "--pg-cluster", "sync", "--failover-manager", "patroni"]),
        "patroni",
    );
}

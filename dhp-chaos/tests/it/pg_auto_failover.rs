//! A seeded round on a cluster under a real failover manager
//! (`--failover-manager pg_auto_failover`, scripts/pg-auto.sh: a monitor and
//! three nodes with a keeper each, every one in its own network namespace;
//! quorum-synchronous replication). The harness only breaks things — a
//! primary's host SIGKILLed, the primary cut off from everyone or from the
//! monitor only, a standby's host lost, a planned switchover — and watches
//! the monitor promote. Every invariant holds, nothing acknowledged before a
//! primary was lost is missing from the standbys (recomputed from the
//! history as well), every promotion was pg_auto_failover's, and every
//! handoff completes once the formation is whole.
use crate::common::*;
use crate::pg_failover_support::*;

#[test]
fn pg_auto_failover_keeps_every_invariant_across_host_death_partitions_and_switchover() {
    let faults = "db-failover=1,db-primary-partition=1,db-monitor-partition=1,db-standby-lost=1,db-switchover=1";
    let mut args = failover_args("sync", "7", "70", faults);
    // faults do not overlap (none starts before the formation is whole), so draw them often
    let at = args.iter().position(|a| *a == "--fault-interval").expect("failover_args sets it");
    args[at + 1] = "1,2";
    // work for the whole fault phase: a failover pauses it for ~10 s
    let at = args.iter().position(|a| *a == "--chunks").expect("failover_args sets it");
    args[at + 1] = "1500";
    // a loaded CI machine checkpoints slowly through synchronous commits: the
    // drain gets time to finish what the fault phase left (it ends as soon as it has)
    args.extend(["--failover-manager", "pg_auto_failover", "--grace", "150"]);
    let r = run_chaos("pg-auto-failover", &args);
    assert_eq!(r.code, 0, "every invariant must hold under pg_auto_failover\n{}", r.dump());
    assert!(r.stdout.contains("failover-manager: pg_auto_failover"), "{}", r.dump());
    let round = r.out.join("round-0000");
    let h = history(&round);
    let faults: Vec<&serde_json::Value> = h.iter().filter(|e| e["op"] == "fault").collect();
    let causes: Vec<&str> = faults.iter().filter_map(|e| e["cause"].as_str()).collect();
    assert!(causes.len() >= 3, "at least three failovers in seventy seconds: {causes:?}\n{}", r.dump());
    // every failover the monitor carried out; the harness promoted none
    let promoted: Vec<&serde_json::Value> = h.iter().filter(|e| e["what"] == "db-promoted").collect();
    assert!(!promoted.is_empty(), "pg_auto_failover promoted no standby\n{}", r.dump());
    assert!(promoted.iter().all(|e| e["by"] == "pg_auto_failover"), "{promoted:?}");
    // a loss of the primary is judged against both standbys, read before promotion
    let crashes = h.iter().filter(|e| e["what"] == "db-primary-crashed").count();
    let snaps = h.iter().filter(|e| e["what"] == "db-failover-snapshot" && e["max_seq"].is_object()).count();
    assert!(crashes >= 1 && snaps == crashes, "{crashes} primaries lost, {snaps} standby snapshots\n{}", r.dump());
    assert!(lost_by_history(&round).is_empty(), "acknowledged checkpoints lost: {:?}", lost_by_history(&round));
    // every fault ended with the formation whole again
    let ups = h.iter().filter(|e| e["what"] == "db-up").count();
    assert_eq!(
        ups,
        faults.iter().filter(|e| e["kind"] == "db-failover" || e["kind"] == "db-standby-lost").count(),
        "{}",
        r.dump()
    );
    assert!(r.checked("no-lost-commits-across-db-crash") > 0, "{}", r.dump());
    assert_eq!(r.checked("outcome"), 3, "every handoff completes once the cluster is healthy\n{}", r.dump());
    for inv in ["fencing", "exactly-once", "checkpoints", "no-false-orphans", "one-leader"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}", r.violations(inv));
    }
}

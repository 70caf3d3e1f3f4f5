//! A seeded round on the replicated cluster (`--pg-cluster sync`: a
//! primary, a synchronous standby, an asynchronous one; failover-manager:
//! harness (pg_ctl promote)) whose faults are failovers: before each, the
//! synchronous standby stops receiving WAL for a lag window, then the
//! primary is crashed and fenced and the standby promoted; the clients
//! follow on their multi-host URL. Every invariant holds, nothing
//! acknowledged is lost (recomputed from the history too), and the false
//! orphans of the failovers are counted and within their bound. One of them
//! is a planned switchover (`db-switchover`: the primary stopped cleanly).
use crate::common::*;
use crate::pg_failover_support::*;

#[test]
fn synchronous_replication_survives_failovers_with_every_invariant() {
    // 24 s of faults, 2.5–3.5 s apart: a failover (lag window, crash,
    // promotion, clients following) takes several seconds of its own, and
    // under load (a pg_auto_failover round beside it) only one fitted in 16
    let mut args = failover_args("sync", "35", "24", "db-failover=2,db-switchover=1");
    // and the work lasts that long on a quiet machine too
    let chunks = args.iter().position(|a| *a == "--chunks").unwrap() + 1;
    args[chunks] = "600";
    let r = run_chaos("pg-failover-sync", &args);
    assert_eq!(r.code, 0, "every invariant must hold across failovers\n{}", r.dump());
    assert!(r.stdout.contains("failover-manager: harness (pg_ctl promote)"), "{}", r.dump());
    let round = r.out.join("round-0000");
    let meta = std::fs::read_to_string(round.join("round.json")).unwrap();
    assert!(meta.contains(r#""failover_manager": "harness (pg_ctl promote)""#), "{meta}");
    let (n, times) = failovers(&round);
    assert!(n >= 2, "at least two failovers in 24 seconds, got {n}\n{}", r.dump());
    assert_eq!(times.len(), n, "every failover promoted a standby");
    let p = planned(&round);
    assert!(p >= 1 && p < n, "seed 35 draws a switchover and crash failovers: {p} planned of {n}");
    assert!(lost_by_history(&round).is_empty(), "acknowledged checkpoints lost: {:?}", lost_by_history(&round));
    assert!(r.checked("no-lost-commits-across-db-crash") > 0, "{}", r.dump());
    assert_eq!(r.checked("outcome"), 3, "every handoff completes once the cluster is healthy\n{}", r.dump());
    assert_eq!(r.checked("no-stuck-after-db-restart"), 3, "{}", r.dump());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(round.join("round-report.json")).unwrap()).unwrap();
    let inv = report["invariants"].as_array().unwrap().iter().find(|v| v["name"] == "no-lost-commits-across-db-crash");
    let notes = inv.map(|v| v["notes"].to_string()).unwrap_or_default();
    assert!(notes.contains("failover-manager: harness (pg_ctl promote)"), "{notes}");
    // the false orphans of the failovers: counted, and each handoff at most once per failover
    let counted: usize = notes
        .split("worker-died orphan(s) of live holders caused")
        .next()
        .and_then(|head| head.rsplit(['"', ' ']).find(|w| !w.is_empty()))
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no false-orphan count in {notes}"));
    assert!(counted <= 3 * n, "{counted} false orphans in {n} failovers of 3 handoffs: {notes}");
    for inv in ["fencing", "exactly-once", "checkpoints", "no-false-orphans", "one-leader"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}", r.violations(inv));
    }
}

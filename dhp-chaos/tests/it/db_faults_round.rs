//! One short PostgreSQL round (`--store postgres`, a cluster the run owns)
//! whose schedule holds only database faults: the server crashes and comes
//! back, workers' and the leader's backends are terminated, workers are
//! stopped inside their checkpoint transactions. Each kind is injected and
//! recorded, and the database-fault invariants are checked and hold.
use crate::common::*;

#[test]
fn database_faults_are_injected_recorded_and_survived() {
    let r = run_chaos(
        "dbf-round",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--store",
            "postgres",
            "--seed",
            "515",
            "--handoffs",
            "4",
            "--dlq-handoffs",
            "0",
            // enough work that claims and recoveries (client-side
            // transactions, the only ones a db-stall can catch: checkpoints
            // are one statement) go on for the whole fault phase
            "--chunks",
            "300",
            "--fault-seconds",
            "15",
            "--fault-interval",
            "0.4,0.8",
            "--faults",
            "db-crash=1,db-terminate-backend=2,db-stall=6",
            "--failpoint-rate",
            "0",
            // faults start once work is under way, however loaded the machine
            "--faults-after-checkpoints",
            "20",
        ],
    );
    assert!(r.code == 0 || r.code == 1, "the round must run to its verdict\n{}", r.dump());
    let round = &r.results["rounds"][0];
    let by_kind = &round["faults_by_kind"];
    for k in ["db-crash", "db-terminate-backend", "db-stall"] {
        assert!(by_kind[k].as_u64().unwrap_or(0) >= 1, "no {k} injected: {by_kind:#}\n{}", r.dump());
    }
    let hist = crate::common::history_text(&r.out.join("round-0000/history.jsonl")).unwrap();
    assert!(hist.contains(r#""what":"db-up""#), "the crashed server's return is recorded");
    assert!(hist.contains(r#""in_transaction":true"#), "a db-stall caught a worker inside its transaction");
    for inv in ["no-lost-commits-across-db-crash", "no-stuck-after-db-restart", "no-false-orphans"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}\n{}", r.violations(inv), r.dump());
    }
    assert!(r.checked("no-lost-commits-across-db-crash") > 0, "acknowledgements before the crash were checked");
    assert_eq!(r.checked("no-stuck-after-db-restart"), 4, "{}", r.dump());
    assert!(r.violations("outcome").is_empty(), "{:#?}", r.violations("outcome"));
}

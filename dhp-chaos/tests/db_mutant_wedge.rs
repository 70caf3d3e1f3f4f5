//! A worker whose work loop dies on a database error while its heartbeat
//! thread keeps the lease (mutant-worker --mode wedge-on-db-error): once
//! the crashed database is back its handoff is stuck, and
//! no-stuck-after-db-restart must say so.

mod common;
use common::*;

// Ignored: on a quiet machine the wedged worker's heartbeat does not outlive
// the crash (its connection is gone), so its lease runs out and the handoff is
// recovered — the round holds and the mutant is not caught (seed 22, 2 of 2
// runs). It was caught only on a loaded machine. The mutant must keep its
// lease across the crash (reconnecting heartbeat) before this can run in CI.
#[test]
#[ignore = "the wedge mutant's heartbeat dies with the database connection: not caught on a quiet machine (issue 15)"]
fn a_worker_wedged_by_the_crash_leaves_its_handoff_stuck_and_is_caught() {
    let w = format!("{} --mode wedge-on-db-error", mutant_bin().display());
    let r = run_chaos(
        "dbm-wedge",
        &[
            "--store",
            "postgres",
            "--seed",
            "22",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "300",
            "--fault-seconds",
            "6",
            "--grace",
            "6",
            "--fault-interval",
            "2,3",
            "--faults",
            "db-crash=1",
            "--failpoint-rate",
            "0",
            // faults start once work is under way, however loaded the machine
            "--faults-after-checkpoints",
            "6",
            "--workers",
            &w,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    let v = r.violations("no-stuck-after-db-restart");
    assert!(!v.is_empty() && v.iter().any(|m| m.contains("still running")), "{v:#?}\n{}", r.dump());
}

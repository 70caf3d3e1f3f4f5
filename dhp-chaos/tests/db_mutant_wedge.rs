//! A worker whose work loop dies on a database error while its heartbeat
//! thread keeps the lease (mutant-worker --mode wedge-on-db-error): once
//! the crashed database is back its handoff is stuck, and
//! no-stuck-after-db-restart must say so.

mod common;
use common::*;

#[test]
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

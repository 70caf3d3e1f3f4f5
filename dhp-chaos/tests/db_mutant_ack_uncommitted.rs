//! A worker that reports checkpoints Ok without committing them
//! (mutant-worker --mode ack-uncommitted), in a PostgreSQL round whose
//! database crashes: no-lost-commits-across-db-crash must catch it.

mod common;
use common::*;

#[test]
fn acknowledged_but_uncommitted_checkpoints_are_caught_across_a_crash() {
    let w = format!("{} --mode ack-uncommitted", mutant_bin().display());
    let r = run_chaos(
        "dbm-ack",
        &[
            "--store",
            "postgres",
            "--seed",
            "21",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "80",
            "--fault-seconds",
            "6",
            "--fault-interval",
            "2,3",
            "--faults",
            "db-crash=1",
            "--failpoint-rate",
            "0",
            // faults start once work is under way, however loaded the machine
            "--faults-after-checkpoints",
            "10",
            "--workers",
            &w,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    let v = r.violations("no-lost-commits-across-db-crash");
    assert!(!v.is_empty() && v.iter().all(|m| m.contains("the store does not have it")), "{v:#?}\n{}", r.dump());
}

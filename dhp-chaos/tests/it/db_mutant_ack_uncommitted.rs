//! A worker that reports checkpoints Ok without committing them
//! (mutant-worker --mode ack-uncommitted), in a PostgreSQL round whose
//! database crashes: no-lost-commits-across-db-crash must catch it.
use crate::common::*;

#[test]
fn acknowledged_but_uncommitted_checkpoints_are_caught_across_a_crash() {
    let r = db_mutant_round(
        "dbm-ack",
        declared_mode("no-lost-commits-across-db-crash"),
        &["--seed", "21", "--chunks", "80", "--fault-seconds", "6", "--faults-after-checkpoints", "10"],
    );
    // The same lie breaks three more rules: fencing's "every acknowledged
    // write is in the store", checkpoints (the next state skips the unwritten
    // chunk), transport (the unwritten state was shipped at the seq the
    // next real checkpoint took) and served-work (the next row covers two
    // served chunks but carries one's stamp).
    declared_mutant_caught(&r, "no-lost-commits-across-db-crash");
    declared_mutant_caught(&r, "checkpoints");
    let v = assert_caught(
        &r,
        "no-lost-commits-across-db-crash",
        &["no-lost-commits-across-db-crash", "fencing", "checkpoints", "transport", "served-work"],
        &[],
    );
    assert!(v.iter().all(|m| m.contains("the store does not have it")), "{v:#?}\n{}", r.dump());
}

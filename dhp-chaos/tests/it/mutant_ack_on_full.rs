//! A worker that reports a checkpoint Ok when SQLite refused its commit
//! because the store's disk was full (mutant-worker --mode ack-on-full):
//! no-torn-after-store-full must catch it.
use crate::common::*;

#[test]
fn a_checkpoint_acknowledged_on_a_full_store_disk_is_caught() {
    let mutant = declared_mutant("no-torn-after-store-full");
    let r = run_chaos(
        "store-full-mutant",
        &[
            "--seed",
            "31",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "60",
            "--pace",
            "0.02",
            "--store-disk",
            "8m",
            "--faults",
            "store-full=1",
            "--fault-interval",
            "0.5,1",
            "--fault-seconds",
            "8",
            "--failpoint-rate",
            "0",
            "--workers",
            &mutant,
        ],
    );
    // The same lie breaks fencing's "every acknowledged write is in the
    // store" and transport (the unwritten state was shipped at a seq a real
    // checkpoint took later); checkpoints too when the mutant commits again
    // after its lie (its next state lands on the unwritten seq).
    declared_mutant_caught(&r, "no-torn-after-store-full");
    declared_mutant_caught(&r, "transport");
    let v = assert_caught(
        &r,
        "no-torn-after-store-full",
        &["no-torn-after-store-full", "fencing", "transport"],
        &["checkpoints", "served-work"],
    );
    assert!(v.iter().all(|m| m.contains("the store does not have it")), "{v:#?}\n{}", r.dump());
}

//! Pinned seeds that found bugs. Both are bugs of the Python reference
//! (dhp-protocol 1.3.0), found by this harness; dhp-core does each of these
//! steps in one transaction. The seed fixes the fault schedule; the pause
//! points make the interleaving that exposes the bug happen on every run.
use crate::common::*;

/// Seed 77: a reference worker SIGKILLed between the ownership INSERT and
/// the envelope save of its claim leaves the handoff `pending` with an
/// ownership row: claim loses the INSERT OR IGNORE, recover refuses a
/// pending handoff, the supervisor only orphans `running` ones — stuck.
#[test]
fn seed_77_reference_torn_claim_is_stuck_forever() {
    let py = python();
    let py = py.display().to_string();
    let r = run_chaos(
        "pinned-77",
        &[
            "--seed",
            "77",
            "--workers",
            "python",
            "--supervisors",
            "python",
            "--python",
            &py,
            "--base",
            "200000",
            "--chunks",
            "60",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--pause-points",
            "claim.after_ownership=1.0",
            "--faults",
            "kill-worker=1",
            "--fault-interval",
            "0.3,0.5",
            "--pause-max",
            "8",
            "--fault-seconds",
            "12",
            "--grace",
            "2",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    assert_eq!(r.totals()["unexplained"].as_u64(), Some(0), "{}", r.dump());
    let known = r.known("outcome");
    assert!(
        known.iter().any(|k| k.contains("stuck in \"pending\"") && k.contains("torn claim")),
        "expected a torn claim: {known:#?}\n{}",
        r.dump()
    );
}

/// Seed 31: a reference worker stopped between its ownership check and its
/// INSERT (separate autocommit statements, docs/PROTOCOL.md §13.2) is replaced, then
/// woken: its checkpoint lands after the successor's — split brain.
#[test]
fn seed_31_reference_check_then_write_split_brain() {
    let py = python();
    let py = py.display().to_string();
    let r = run_chaos(
        "pinned-31",
        &[
            "--seed",
            "31",
            "--workers",
            "python",
            "--supervisors",
            "python",
            "--python",
            &py,
            "--base",
            "200000",
            "--chunks",
            "80",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--pause-points",
            "checkpoint.after_check=0.05,complete.after_check=0.5",
            "--faults",
            "kill-follower=1",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    assert_eq!(r.totals()["unexplained"].as_u64(), Some(0), "{}", r.dump());
    let zombies = r.known("zombies");
    assert!(
        zombies.iter().any(|z| z.contains("committed after its replacement") && z.contains("check-then-write")),
        "expected a woken reference zombie's write after its replacement: {zombies:#?}\n{}",
        r.dump()
    );
}

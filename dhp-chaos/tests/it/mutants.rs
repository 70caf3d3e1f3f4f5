//! The checker is tested: rounds run with deliberately broken workers
//! (adapters/dhp-rs-chaos/src/bin/mutant-worker.rs, which writes straight into the SQLite store)
//! must be reported as violations, by the right invariant. Each takes its
//! mutant from the invariant's declaration (`declared_mutant`).
use crate::common::*;

#[test]
fn skip_fence_mutant_woken_after_replacement_is_split_brain() {
    // Only pauses: each paused mutant loses its lease, is replaced, and is
    // woken while its successor works; it keeps writing without a fence check.
    let w = declared_mutant("fencing");
    assert_eq!(declared("zombies").mutant, declared("fencing").mutant);
    let r = run_chaos(
        "skip-fence",
        &[
            "--seed",
            "3",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "100",
            "--workers",
            &w,
            "--faults",
            "pause=1",
            "--fault-interval",
            "0.3,0.6",
            "--failpoint-rate",
            "0",
        ],
    );
    assert_eq!(r.code, 1, "a fence-skipping worker must be a violation\n{}", r.dump());
    declared_mutant_caught(&r, "fencing");
    declared_mutant_caught(&r, "zombies");
    let fencing = r.violations("fencing");
    assert!(
        fencing.iter().any(|v| v.contains("went backwards") || v.contains("stale write accepted")),
        "expected split brain in commit order: {fencing:#?}\n{}",
        r.dump()
    );
    assert!(!r.violations("zombies").is_empty(), "the woken zombie wrote: {:#?}", r.results["rounds"][0]["invariants"]);
    assert!(r.known("fencing").is_empty(), "a Rust-side mutant is never a 'known reference weakness'");
    assert!(r.stdout.contains("replay: cargo run"), "a failing round prints its replay command\n{}", r.stdout);
}

#[test]
fn complete_twice_mutant_is_caught() {
    let w = declared_mutant("exactly-once");
    let r = run_chaos(
        "complete-twice",
        &[
            "--seed",
            "7",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "40",
            "--workers",
            &w,
            "--faults",
            "kill-follower=1",
            "--failpoint-rate",
            "0",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "exactly-once");
    let v = r.violations("exactly-once");
    // each of the 2 handoffs, from the mutant's own history and from the store audit
    let from_history = v.iter().filter(|m| m.contains("completed it 2 times")).count();
    let from_audit = v.iter().filter(|m| m.contains("its completion was committed again")).count();
    assert_eq!((from_history, from_audit, v.len()), (2, 2, 4), "each of the 2 handoffs was completed twice: {v:#?}");
}

#[test]
fn wrong_result_mutant_is_caught() {
    let w = declared_mutant("result");
    let r = run_chaos(
        "wrong-result",
        &[
            "--seed",
            "8",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "40",
            "--workers",
            &w,
            "--faults",
            "kill-follower=1",
            "--failpoint-rate",
            "0",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "result");
    let v = r.violations("result");
    assert!(v.iter().any(|m| m.contains("prime_count")), "{v:#?}");
    // everything else about these runs is fine
    assert!(r.violations("fencing").is_empty() && r.violations("checkpoints").is_empty(), "{}", r.dump());
}

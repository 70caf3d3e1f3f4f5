//! Mutants caught with the implementation's history switched off
//! (`--impl-history off`: workers and supervisors get /dev/null, the
//! checker reads only the harness's own lines): the verdicts rest on the
//! store audit, the workload service's record, the store and the harness's
//! process records. Each round is seeded and a few seconds long; no
//! invariant is allowed to be unchecked.
use crate::common::bins::{mutant_worker, run_small};
use crate::common::*;

fn mutant_supervisor(mode: &str) -> String {
    format!("{} --mode {mode}", mutant("mutant-supervisor").display())
}

/// A small round with history off, plus `extra`.
fn off(name: &str, seed: u64, chunks: u32, extra: &[&str]) -> Run {
    let mut a = vec!["--impl-history", "off", "--failpoint-rate", "0"];
    a.extend_from_slice(extra);
    run_small(name, seed, chunks, &a)
}

fn assert_caught(r: &Run, inv: &str, needle: &str) {
    assert_eq!(r.code, 1, "a violation must exit 1\n{}", r.dump());
    let v = r.violations(inv);
    assert!(v.iter().any(|m| m.contains(needle)), "[{inv}] expected {needle:?} in {v:#?}\n{}", r.dump());
    // the harness gave the processes no history file: none of their lines exist
    let h = std::fs::read_to_string(r.out.join("round-0000/history.jsonl")).unwrap();
    assert!(h.trim().is_empty(), "no process was given the history file: {h}");
    let own = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    assert!(own.lines().all(|l| l.contains(r#""process":"chaos""#)), "only harness lines in the harness's file");
}

#[test]
fn skip_fence_worker_is_caught_from_the_store() {
    let w = mutant_worker("skip-fence");
    let r = off("off-skip-fence", 3, 100, &["--workers", &w, "--faults", "pause=1", "--fault-interval", "0.3,0.6"]);
    assert_caught(&r, "zombies", "stale checkpoints were committed");
    assert!(!r.violations("checkpoints").is_empty() || !r.violations("fencing").is_empty(), "{}", r.dump());
}

#[test]
fn complete_twice_worker_is_caught_from_the_audit() {
    let w = mutant_worker("complete-twice");
    let r = off(
        "off-complete-twice",
        7,
        40,
        &["--workers", &w, "--faults", "kill-follower=1", "--allow-unchecked", "detection"],
    );
    assert_caught(&r, "exactly-once", "its completion was committed again");
}

#[test]
fn wrong_result_worker_is_caught_from_the_store() {
    let w = mutant_worker("wrong-result");
    let r = off(
        "off-wrong-result",
        8,
        40,
        &["--workers", &w, "--faults", "kill-follower=1", "--allow-unchecked", "detection"],
    );
    assert_caught(&r, "result", "prime_count");
}

#[test]
fn supervisor_that_orphans_without_bumping_the_fence_is_caught_although_its_history_claims_the_bump() {
    let s = mutant_supervisor("no-bump");
    let r = off("off-no-bump", 5, 60, &["--supervisors", &s, "--faults", "kill-worker=1"]);
    assert_caught(&r, "fencing", "without bumping the fence");
    // and with its lying history read, the audit still decides
    let r =
        run_small("on-no-bump", 5, 60, &["--supervisors", &s, "--faults", "kill-worker=1", "--failpoint-rate", "0"]);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(r.violations("fencing").iter().any(|m| m.contains("without bumping the fence")), "{}", r.dump());
    // without the audit the lie passes the history-based checks: what this test
    // guards against (fencing then is UNCHECKED, exit 3 — never held)
    let r = run_small(
        "noaudit-no-bump",
        5,
        60,
        &["--supervisors", &s, "--faults", "kill-worker=1", "--failpoint-rate", "0", "--no-audit"],
    );
    assert!(r.violations("fencing").is_empty(), "{}", r.dump());
    assert_eq!(r.code, 3, "{}", r.dump());
    let fencing = &r.results["totals"]["invariants"]["fencing"];
    assert_eq!(fencing["status"], "unchecked", "{fencing:#}");
}

#[test]
fn cas_less_recover_is_caught_as_a_second_grant() {
    let w = mutant_worker("cas-less-recover");
    let r = off("off-cas-less", 5, 60, &["--workers", &w, "--faults", "kill-worker=1", "--race-rate", "1"]);
    assert_caught(&r, "fencing", "without an orphan");
}

#[test]
fn two_supervisors_that_both_lead_are_caught() {
    let s = declared_mutant("one-leader");
    let r = off("off-two-leaders", 5, 60, &["--supervisors", &s, "--faults", "kill-worker=1"]);
    declared_mutant_caught(&r, "one-leader");
    assert_caught(&r, "one-leader", "two leaders");
}

#[test]
fn supervisor_that_never_dead_letters_is_caught() {
    let s = declared_mutant("no-silent-budget-overrun");
    let r = run_chaos(
        "off-no-dlq",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--seed",
            "5",
            "--handoffs",
            "2",
            "--chunks",
            "60",
            "--dlq-handoffs",
            "1",
            "--dlq-max-attempts",
            "2",
            "--supervisors",
            &s,
            "--faults",
            "kill-worker=1",
            "--failpoint-rate",
            "0",
            "--impl-history",
            "off",
        ],
    );
    declared_mutant_caught(&r, "no-silent-budget-overrun");
    assert_caught(&r, "no-silent-budget-overrun", "it must have gone to the DLQ");
}

#[test]
fn ours_with_history_off_holds_and_analyze_agrees() {
    let r = off("off-ours", 42, 100, &[]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for inv in ["fencing", "exactly-once", "no-false-orphans", "detection", "one-leader", "no-silent-budget-overrun"] {
        let t = &r.results["totals"]["invariants"][inv];
        assert!(t["status"] == "held" || t["status"] == "not-exercised", "{inv}: {t:#}");
        let src: Vec<&str> = t["sources"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
        assert!(!src.contains(&"history"), "{inv} used no history: {src:?}");
    }
    assert!(r.checked("fencing") > 0 && r.checked("one-leader") > 0, "{}", r.dump());
    // rework and served-work from the workload service's record
    for inv in ["rework", "served-work"] {
        let t = &r.results["totals"]["invariants"][inv];
        assert_eq!(t["status"], "held", "{inv}: {t:#}");
        assert!(t["sources"].as_array().unwrap().iter().any(|s| s == "workload"), "{inv}: {t:#}");
    }
    let (code, out) = analyze(&r.out);
    assert_eq!(code, r.code, "analyze gives the round's verdict\n{out}");
    // without the service's record the same saved round is unchecked: exit 3 from analyze
    std::fs::remove_file(r.out.join("round-0000/workload.jsonl")).unwrap();
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("[served-work] needs workload") && out.contains("[rework] needs history"), "{out}");
}

#[test]
fn a_worker_that_computes_its_chunks_itself_is_caught_by_the_workload_record() {
    let w = declared_mutant("served-work");
    let r = off("off-local-census", 9, 40, &["--workers", &w, "--faults", "kill-worker=1"]);
    declared_mutant_caught(&r, "served-work");
    assert_caught(&r, "served-work", "carries no stamp");
    // the results are right, only unserved
    assert!(r.violations("result").is_empty() && r.violations("checkpoints").is_empty(), "{}", r.dump());
}

#[test]
fn a_worker_that_throws_work_away_is_caught_as_rework() {
    let w = declared_mutant("rework");
    let r = off("off-throw-away", 10, 60, &["--workers", &w, "--faults", "kill-worker=1"]);
    declared_mutant_caught(&r, "rework");
    assert_caught(&r, "rework", "more than one chunk redone");
}

#[test]
fn a_fenced_out_writer_is_caught_by_the_fence_its_chunk_was_served_under() {
    let w = mutant_worker("skip-fence");
    let r =
        off("off-skip-fence-served", 3, 100, &["--workers", &w, "--faults", "pause=1", "--fault-interval", "0.3,0.6"]);
    assert_caught(&r, "served-work", "superseded or foreign fence");
}

#[test]
fn local_workload_leaves_served_work_and_rework_unchecked() {
    let r = off("off-local", 11, 40, &["--workload", "local", "--faults", "kill-worker=1"]);
    assert_eq!(r.code, 3, "{}", r.dump());
    for inv in ["served-work", "rework"] {
        assert_eq!(r.results["totals"]["invariants"][inv]["status"], "unchecked", "{inv}\n{}", r.dump());
    }
}

#[test]
fn supervisor_that_never_orphans_is_caught_by_detection() {
    let s = declared_mutant("detection");
    // the killed worker's handoff stays running: the round ends at its grace
    let r = off(
        "off-no-orphan",
        5,
        60,
        &["--supervisors", &s, "--faults", "kill-worker=1", "--fault-seconds", "3", "--grace", "3"],
    );
    declared_mutant_caught(&r, "detection");
    assert_caught(&r, "detection", "never orphaned and did not complete");
    assert!(!r.violations("outcome").is_empty(), "the dead worker's handoff ended running\n{}", r.dump());
}

//! `--lose-unsynced` in whole rounds: the durability mutant
//! (`mutant-worker --mode no-fsync`, checkpoints at `synchronous=OFF`) is
//! caught by `durable-acks` with the fault, is not caught without it (the
//! fault is what exposes it), and the correct worker holds with it. All
//! with `--impl-history off`: the verdict rests on the harness's records.

use crate::common::bins::mutant_worker;
use crate::common::*;

fn args<'a>(workers: &'a str, lose: bool, rounds: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "--seed",
        "2",
        "--rounds",
        rounds,
        "--handoffs",
        "2",
        "--dlq-handoffs",
        "0",
        "--chunks",
        "60",
        "--impl-history",
        "off",
        "--allow-uncovered",
        "all",
        "--failpoint-rate",
        "0",
    ];
    if !workers.is_empty() {
        a.extend(["--workers", workers]);
    }
    if lose {
        a.extend(["--lose-unsynced", "--faults", "kill-worker=3,lose-unsynced=1"]);
    } else {
        a.extend(["--faults", "kill-worker=3,kill-leader=1"]);
    }
    a
}

#[test]
fn the_no_fsync_mutant_is_caught_with_lost_writes() {
    let w = declared_mutant("durable-acks");
    let r = run_chaos("lose-unsynced-mutant", &args(&w, true, "2"));
    assert_eq!(r.code, 1, "a worker that acknowledges unsynced checkpoints must be a violation\n{}", r.dump());
    declared_mutant_caught(&r, "durable-acks");
    let v = r.violations("durable-acks");
    assert!(v.iter().any(|v| v.contains("an acknowledged write was not durable")), "{v:#?}\n{}", r.dump());
}

#[test]
fn the_no_fsync_mutant_is_not_caught_without_the_fault() {
    let w = mutant_worker("no-fsync");
    let r = run_chaos("lose-unsynced-mutant-off", &args(&w, false, "2"));
    assert_eq!(r.code, 0, "a SIGKILL of a process loses no page cache: nothing to see\n{}", r.dump());
    assert_eq!(r.checked("durable-acks"), 0);
}

#[test]
fn the_correct_worker_holds_with_lost_writes() {
    let r = run_chaos("lose-unsynced-builtin", &args("", true, "1"));
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.checked("durable-acks") > 0, "the crashes were judged\n{}", r.dump());
    let crashes = r.totals()["faults_by_kind"]["lose-unsynced"].as_u64().unwrap_or(0);
    assert!(crashes > 0, "{}", r.dump());
}

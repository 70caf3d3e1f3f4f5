//! A worker that lists itself in the PostgreSQL liveness table without
//! holding its advisory lock (mutant-worker --mode unheld-liveness): the
//! leader orphans it as dead while it works. no-false-orphans must catch
//! it, although the fenced mutant exits right after being orphaned.
use crate::common::*;

#[test]
fn liveness_listed_without_its_lock_gives_false_orphans_and_is_caught() {
    let w = declared_mutant("no-false-orphans");
    let r = run_chaos(
        "dbm-liveness",
        &[
            "--store",
            "postgres",
            "--seed",
            "23",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "60",
            "--fault-seconds",
            "5",
            "--grace",
            "5",
            "--fault-interval",
            "2,3",
            "--faults",
            "kill-follower=1",
            "--failpoint-rate",
            "0",
            "--workers",
            &w,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "no-false-orphans");
    let v = r.violations("no-false-orphans");
    assert!(!v.is_empty() && v.iter().all(|m| m.contains("recorded operations after the orphan") || m.contains("neither faulted nor exited")), "{v:#?}\n{}", r.dump());
}

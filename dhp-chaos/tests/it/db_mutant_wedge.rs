//! A worker whose work loop dies on a database error while its heartbeat
//! thread lives on, reconnects and renews the lease with its fence
//! (mutant-worker --mode wedge-on-db-error): once the crashed database is
//! back its handoff stays `running` and never moves again, and
//! no-stuck-after-db-restart must say so.
use crate::common::*;

#[test]
fn a_worker_wedged_by_the_crash_leaves_its_handoff_stuck_and_is_caught() {
    let r = db_mutant_round("dbm-wedge", declared_mode("no-stuck-after-db-restart"), &WEDGE_FLAGS);
    declared_mutant_caught(&r, "no-stuck-after-db-restart");
    declared_mutant_caught(&r, "outcome");
    // `outcome` too: the handoff ends the round running. And when the crash
    // cut a checkpoint whose COMMIT had reached the disk, the wedged worker
    // never ships it and no successor catches the log up: `transport` says
    // the store has a seq the log lacks.
    let v = assert_caught(&r, "no-stuck-after-db-restart", &["no-stuck-after-db-restart", "outcome"], &["transport"]);
    assert!(v.iter().all(|m| m.contains("still running")), "{v:#?}\n{}", r.dump());
    let t = r.violations("transport");
    assert!(t.iter().all(|m| m.contains("is in the store but not in the transport log")), "{t:#?}\n{}", r.dump());
}

//! The control of db_mutant_wedge.rs: the same round with the real worker
//! (`dhp work`) holds. A worker whose checkpoint fails because the database
//! went away exits; its lease runs out and a standby finishes the handoff,
//! so the wedge round's flags alone (a lease longer than the outage, no
//! liveness tokens) leave nothing stuck.
use crate::common::*;

#[test]
fn the_real_worker_in_the_wedge_round_leaves_nothing_stuck() {
    let r = db_crash_round("dbm-wedge-builtin", "builtin", &WEDGE_FLAGS);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(failed_invariants(&r).is_empty(), "{}", r.dump());
    // the crash happened and the rule looked at every handoff
    assert_eq!(r.checked("no-stuck-after-db-restart"), 2, "{}", r.dump());
}

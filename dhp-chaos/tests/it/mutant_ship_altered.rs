//! converge catches a peer log that differs from the store: the mutant
//! ships seq 2 with another state (its hash recomputed and chained, so the
//! transport server accepts it).
use crate::common::*;

#[test]
fn ship_altered_mutant_does_not_converge() {
    let w = declared_mutant("converge");
    let r = bins::run_small(
        "ship-altered",
        7,
        20,
        &["--ship", "tcp", "--workers", &w, "--faults", "kill-follower=1", "--failpoint-rate", "0"],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "converge");
    let v = r.violations("converge");
    assert_eq!(v.len(), 2, "one per handoff: {v:#?}\n{}", r.dump());
    assert!(v.iter().all(|m| m.contains("seq 2 has a different hash from the store's")), "{v:#?}");
    // it was acked all the same: the promise broken is convergence, not the ack
    assert!(r.violations("sync-ack").is_empty(), "{:#?}", r.violations("sync-ack"));
}

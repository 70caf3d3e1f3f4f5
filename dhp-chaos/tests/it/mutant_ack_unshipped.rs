//! sync-ack catches a shipper that acknowledges checkpoints the peer never
//! received: the mutant worker writes every line to its local buffer only
//! and goes on as if the peer had acked it (adapters/dhp-rs-chaos/src/bin/mutant-worker.rs).
use crate::common::*;

#[test]
fn ack_unshipped_mutant_violates_sync_ack() {
    let w = declared_mutant("sync-ack");
    // no worker kills: every checkpoint is followed by the next, so each is "acknowledged"
    let r = bins::run_small(
        "ack-unshipped",
        7,
        20,
        &["--ship", "tcp", "--workers", &w, "--faults", "kill-follower=1", "--failpoint-rate", "0"],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "sync-ack");
    let v = r.violations("sync-ack");
    assert!(!v.is_empty(), "acked-but-unshipped checkpoints must be sync-ack violations\n{}", r.dump());
    assert!(v.iter().all(|m| m.contains("acknowledged") && m.contains("not in the peer's log")), "{v:#?}");
    assert!(
        r.checked("sync-ack") >= 2 * 19,
        "each handoff's first 19 checkpoints were acked: {}",
        r.checked("sync-ack")
    );
    assert!(r.known("sync-ack").is_empty(), "a Rust-side mutant is never a known reference weakness");
}

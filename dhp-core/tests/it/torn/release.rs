//! Torn release: the reference's release writes `pending`, then deletes
//! its row WHERE holder and fence match; an orphan that moved the row in
//! between leaves `pending` with the tombstone: claim fails on the row,
//! recover refuses a pending handoff.
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;

#[test]
fn pending_with_a_tombstone_becomes_orphaned_once_settled() {
    let fx = Fx::new();
    fx.set_status("pending");
    // A tombstone written just now: a reference orphan may still be
    // about to write its envelope. Left alone.
    fx.tombstone(4, 0.0);
    assert!(fx.scan().is_empty());
    assert_eq!(fx.status(), "pending");

    fx.tombstone(4, 5.0);
    let acts = fx.scan();
    assert_eq!(acts[0]["torn"], "torn-release", "{acts:?}");
    // The tombstone already fences every holder out: the fence stays.
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 4)));
    assert_eq!(fx.status(), "orphaned");
    fx.recover_and_complete(4);
}

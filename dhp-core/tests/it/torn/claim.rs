//! Torn claim: the reference's claim inserts the ownership row, then writes
//! `running` in a second statement. A crash between leaves `pending` with a
//! held row: claim loses the insert ("claim race lost"), recover says
//! "never claimed", no supervisor orphans a pending handoff.
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;

#[test]
fn torn_claim_waits_for_the_lease_then_becomes_recoverable() {
    let fx = Fx::new();
    // The claimer may still be between its two writes: not touched.
    fx.live_row("py-claimer", 0);
    assert!(fx.scan().is_empty());
    assert_eq!(fx.row(), Some(("py-claimer".into(), 0)));
    assert_eq!(fx.status(), "pending");
    assert!(fx.r.claim(&fx.hid).is_err(), "stuck before the repair");

    // Its lease ran out: tombstone at fence+1, status orphaned.
    fx.expired_row("py-claimer", 0);
    let acts = fx.scan();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0]["action"], "repaired");
    assert_eq!(acts[0]["torn"], "torn-claim");
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 1)));
    assert_eq!(fx.status(), "orphaned");
    fx.recover_and_complete(1);
}

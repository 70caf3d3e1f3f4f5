//! Issue 11's stuck handoff, built directly: the reference's orphan moved
//! the row to the tombstone (fence N+1), a recover took it (N+2, holder R,
//! running), and the reference's late envelope write set `orphaned` again.
//! recover: "not orphaned"; claim: "status is orphaned"; no supervisor
//! acts. Ours waits for R's lease (R may be a recover between its two
//! writes), then tombstones at N+3 so recover continues.
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;
use dhp_core::Error;
use serde_json::json;

#[test]
fn torn_orphan_is_repaired_after_the_lease_and_never_unfences_the_holder() {
    let fx = Fx::new();
    fx.r.claim(&fx.hid).unwrap();
    // R recovered at fence 2 ...
    let r = fx.r.with_id("R").unwrap();
    fx.tombstone(1, 1.0);
    fx.set_status("orphaned");
    let ctx = r.recover(&fx.hid).unwrap();
    assert_eq!(ctx.fence().get(), 2);
    // ... and the late orphan write said "orphaned" again.
    fx.set_status("orphaned");
    assert!(matches!(r.recover(&fx.hid), Err(Error::OwnershipLost { .. })), "stuck: not orphaned");
    assert!(matches!(r.claim(&fx.hid), Err(Error::State { .. })), "stuck: status is orphaned");
    assert!(ctx.checkpoint(&json!({})).is_err(), "R cannot work either");

    // R's lease is live: it might be a recover between its writes.
    assert!(fx.scan().is_empty());
    assert_eq!(fx.row(), Some(("R".into(), 2)));

    fx.expired_row("R", 2);
    let acts = fx.scan();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0]["torn"], "torn-orphan");
    assert_eq!(acts[0]["fence_before"], 2);
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 3)));
    assert_eq!(fx.status(), "orphaned");
    assert!(matches!(ctx.checkpoint(&json!({})), Err(Error::StaleFence { .. })));
    fx.recover_and_complete(3);
}

//! `running` or `orphaned` with no ownership row: a fenced-out writer's
//! late envelope write after the row was deleted (a budget kill or
//! complete of the reference deletes the row in a separate statement).
//! No check_owner passes, expired_leases needs a row, recover needs the
//! tombstone: stuck. Repair: a tombstone above the envelope's fence.
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;
use serde_json::json;

#[test]
fn running_without_a_row_gets_a_tombstone_above_the_last_fence() {
    let fx = Fx::new();
    fx.r.claim(&fx.hid).unwrap();
    fx.set_exec("fence", json!(5));
    fx.drop_row();
    let acts = fx.scan();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0]["torn"], "lost-ownership-row");
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 6)));
    assert_eq!(fx.status(), "orphaned");
    fx.recover_and_complete(6);
}

#[test]
fn orphaned_without_a_row_keeps_its_envelope_and_gets_a_tombstone() {
    let fx = Fx::new();
    fx.r.claim(&fx.hid).unwrap();
    fx.set_status("orphaned");
    fx.drop_row();
    let before = fx.r.envelope_bare(&fx.hid).unwrap();
    let acts = fx.scan();
    assert_eq!(acts[0]["torn"], "lost-ownership-row", "{acts:?}");
    assert_eq!(fx.r.envelope_bare(&fx.hid).unwrap(), before, "only the row is repaired");
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 1)));
    fx.recover_and_complete(1);
}

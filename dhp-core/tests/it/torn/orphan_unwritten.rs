//! An orphan that moved the row to the tombstone and died before writing
//! its envelope: `running` with the tombstone. Nobody lists it as
//! orphaned, so nobody recovers it; our supervisor finishes the orphan.
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;
use serde_json::json;

#[test]
fn running_with_a_settled_tombstone_is_orphaned() {
    let fx = Fx::new();
    let ctx = fx.r.claim(&fx.hid).unwrap();
    fx.tombstone(1, 5.0);
    let acts = fx.scan();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert_eq!(acts[0]["torn"], "torn-orphan-unwritten");
    assert_eq!(fx.status(), "orphaned");
    assert_eq!(fx.row(), Some((ORPHANED_HOLDER.into(), 1)));
    assert!(ctx.checkpoint(&json!({"late": true})).is_err(), "the old holder stays fenced out");
    fx.recover_and_complete(1);
}

#[test]
fn at_max_attempts_it_goes_to_the_dead_letter_queue() {
    let fx = Fx::new();
    fx.r.claim(&fx.hid).unwrap();
    fx.set_exec("attempt", json!(3));
    fx.tombstone(1, 5.0);
    let acts = fx.scan();
    assert_eq!(acts[0]["status"], "failed", "{acts:?}");
    assert_eq!(fx.status(), "failed");
    // failed + tombstone is the DLQ state: nothing more to do.
    assert!(fx.scan().is_empty());
}

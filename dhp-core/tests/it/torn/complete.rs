//! Torn complete: the reference writes `completed` (or `failed`), then
//! deletes its row in a separate statement. The row is harmless to the
//! result but looks owned forever; it is deleted (terminal statuses have
//! no writer to fence).
use crate::torn_support::Fx;
use dhp_core::envelope::ORPHANED_HOLDER;
use serde_json::json;

#[test]
fn completed_or_failed_with_any_row_loses_the_row() {
    for (status, holder, live) in [
        ("completed", "w1", true),
        ("completed", "w1", false),
        ("completed", ORPHANED_HOLDER, false),
        ("failed", "w1", true),
        ("failed", "w1", false),
    ] {
        let fx = Fx::new();
        let mut ctx = fx.r.claim(&fx.hid).unwrap();
        ctx.complete(&json!({"x": 7})).unwrap();
        fx.set_status(status);
        if live {
            fx.live_row(holder, 0);
        } else {
            fx.set_row(holder, 1, 0.0, 5.0);
        }
        let acts = fx.scan();
        assert_eq!(acts.len(), 1, "{status} {holder}: {acts:?}");
        assert_eq!(acts[0]["torn"], "torn-complete");
        assert_eq!(fx.row(), None);
        assert_eq!(fx.status(), status, "the envelope is not touched");
        assert!(ctx.complete(&json!({"x": 7})).is_ok() || status == "failed");
    }
}

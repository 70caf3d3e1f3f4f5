//! Every combination that some operation leaves on purpose — or that may
//! be an operation between its two writes — is left exactly as it is.
use crate::torn_support::{dump, Fx};

#[test]
fn consistent_and_in_flight_combinations_are_not_touched() {
    type Setup = fn(&Fx);
    let cases: &[(&str, &str, Setup)] = &[
        ("pending", "none", |fx| fx.drop_row()),
        ("completed", "none", |fx| fx.drop_row()),
        ("failed", "none", |fx| fx.drop_row()),
        ("suspended", "none", |fx| fx.drop_row()),
        ("running", "live", |fx| fx.live_row("w1", 0)),
        ("orphaned", "tombstone", |fx| fx.tombstone(3, 60.0)),
        ("failed", "tombstone", |fx| fx.tombstone(3, 60.0)),
        ("suspended", "live", |fx| fx.live_row("w1", 0)),
        ("suspended", "expired", |fx| fx.expired_row("w1", 0)),
        ("suspended", "tombstone", |fx| fx.tombstone(3, 60.0)),
        // In flight: a claim or release between writes, a recover between
        // writes, an orphan that has not written its envelope yet.
        ("pending", "live", |fx| fx.live_row("w1", 0)),
        ("orphaned", "live", |fx| fx.live_row("w1", 4)),
        ("pending", "fresh tombstone", |fx| fx.tombstone(3, 0.0)),
        ("running", "fresh tombstone", |fx| fx.tombstone(3, 0.0)),
    ];
    for (status, row, setup) in cases {
        let fx = Fx::new();
        fx.set_status(status);
        setup(&fx);
        let before = dump(fx.root());
        let acts = fx.scan();
        assert!(acts.is_empty(), "{status} × {row}: {acts:?}");
        assert_eq!(dump(fx.root()), before, "{status} × {row} changed");
    }
}

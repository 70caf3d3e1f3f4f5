//! async-lag catches a worker whose shipper runs ahead of the bound it was
//! given (adapters/dhp-rs-chaos/src/bin/mutant-shipper.rs: `dhp work` with --ship-max-lag raised
//! to a million) while latency and blackhole toxics hold the acks back.
use crate::common::*;

#[test]
fn a_shipper_ignoring_its_lag_bound_is_caught_by_async_lag() {
    let w = format!("{} --dhp {}", declared_mutant("async-lag"), dhp_bin().display());
    let r = bins::run_small(
        "mutant-async-lag",
        5,
        60,
        &[
            "--pace",
            "0.01",
            "--ship",
            "tcp-async",
            "--ship-max-lag",
            "1",
            "--workers",
            &w,
            "--faults",
            "link=1",
            "--fault-interval",
            "0.1,0.2",
            "--failpoint-rate",
            "0",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "async-lag");
    let v = r.violations("async-lag");
    assert!(v.iter().any(|m| m.contains("unacknowledged by the peer (bound 1)")), "{v:#?}\n{}", r.dump());
}

//! detection's count of what it checked: a fault on a worker the harness's
//! monitor saw holding a lease, whose lease had already been orphaned
//! before the fault (a false orphan: skewed clocks, a loaded machine), is a
//! fault checked with nothing left to detect. It was counted as nothing
//! checked, so `clock_leader_probe` ended UNCHECKED (detection) now and
//! then under load: "checked 0 events although 1 fault(s) on lease-holding
//! workers".
use crate::common::synth::*;
use serde_json::json;

#[test]
fn a_fault_on_a_worker_orphaned_before_it_is_checked_not_unchecked() {
    let mut s = Synth::new();
    let c1 = s.claimed_by("w1", "builtin");
    s.work("w1", &c1, LO, LO + 300);
    // orphaned while still alive (its lease judged on a skewed clock) ...
    s.orphan();
    // ... then killed: the monitor had last seen it holding fence 0
    s.fault("w1", "kill-worker", "KILL", json!({"fault_id": 1, "lease_fence": c1.fence(), "leader": false}));
    s.finished_by("w2", "builtin", LO + 300);
    let r = s.check();
    let d = r.invariants.iter().find(|i| i.name == "detection").expect("detection verdict");
    assert_eq!(d.status, "held", "{d:#?}");
    assert_eq!(d.checked, 1, "{d:#?}");
    assert!(d.violations.is_empty(), "{d:#?}");
}

//! failover catches a shipper that lags two checkpoints behind in
//! synchronous mode: when its host dies, two or three committed chunks
//! never reached the peer and the standby redoes them (limit 1). Needs root.
use crate::common::*;

#[test]
fn ship_late_mutant_loses_two_chunks_on_host_death() {
    let w = declared_mutant("failover");
    let round = hosts::Hosts { hosts: 2, seed: 21, chunks: 80, nemesis: "host", fault_interval: "1.0,1.2" };
    let r = hosts::run_hosts("ship-late", &round, &["--workers", &w]);
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "failover");
    let v = r.violations("failover");
    assert_eq!(v.len(), 2, "one per handoff of the dead host: {v:#?}\n{}", r.dump());
    assert!(v.iter().all(|m| m.contains("checkpoints committed on the dead host never reached its peer")), "{v:#?}");
}

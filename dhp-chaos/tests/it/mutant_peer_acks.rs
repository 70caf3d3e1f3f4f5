//! peer-acks catches a transport server that acknowledges checkpoints it
//! never wrote (adapters/dhp-rs-chaos/src/bin/mutant-transport.rs: every seq 2 mod 4), behind the
//! link proxy, with link faults on.
use crate::common::*;

#[test]
fn a_server_acking_unwritten_lines_is_caught_by_peer_acks() {
    let t = declared_mutant("peer-acks");
    let t = t.as_str();
    let r = bins::run_small(
        "mutant-peer-acks",
        11,
        30,
        &["--ship", "tcp", "--transport", t, "--faults", "link=1,kill-worker=1", "--failpoint-rate", "0"],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    declared_mutant_caught(&r, "peer-acks");
    let v = r.violations("peer-acks");
    assert!(
        v.iter().any(|m| m.contains("seq 2 was acknowledged") && m.contains("not intact in the peer log")),
        "{v:#?}\n{}",
        r.dump()
    );
}
